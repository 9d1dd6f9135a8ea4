// A suite whose case file may name another case file: the entry {"<key>": "file.json"} (relative to the repository's
// cases/, or absolute) is verified by a runner of its own, which returns a row per case it runs; every other entry,
// and bench, go to the wrapped suite unchanged.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/suite.h"

namespace gradkit::cli {

using CaseFileRunner =
    std::function<std::vector<VerifyRow>(const std::filesystem::path& file, const VerifyContext& context)>;

/** `suite` with the entries holding `key` run by `runner` (name and bench unchanged). */
std::unique_ptr<Suite> withNestedCaseFiles(std::unique_ptr<Suite> suite, std::string key, CaseFileRunner runner);

}  // namespace gradkit::cli
