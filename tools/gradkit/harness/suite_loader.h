// Picks the suites `--op` names and loads their case files.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "harness/case_file.h"
#include "harness/suite.h"

namespace gradkit::cli {

/** A selected suite with its expanded case file. */
struct LoadedSuite {
  const Suite* suite = nullptr;
  CaseFile cases;
};

/** The repository's cases/ directory (compiled in). */
std::filesystem::path defaultCasesDir();

/**
 * The registered suites that `query` selects (see selectOps), each with <casesDir>/<name>.json loaded.
 * Throws HarnessError for an unknown operator (listing the known ones), a missing or malformed case file, or
 * a case file whose "op" is not the suite's name.
 */
std::vector<LoadedSuite> loadSuites(std::string_view query, const std::filesystem::path& casesDir);

}  // namespace gradkit::cli
