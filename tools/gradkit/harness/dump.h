// `gradkit verify --dump DIR`: each case's inputs, golden outputs and our outputs as .npy files, so that
// another implementation (an NPU, a GPU port) can be checked against gradkit's golden data.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acl/acl_base.h"

namespace gradkit::cli {

/** One dense tensor to dump. */
struct DumpTensor {
  std::string name;  // file stem: "self", "golden_out", "ours_out"
  aclDataType dtype = ACL_FLOAT;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

/** Writes DIR/<op>/<case>/<name>.npy for every tensor, and DIR/<op>/<case>/case.json with the case. */
void dumpCase(const std::filesystem::path& dir, const std::string& op, const std::string& caseName,
              const nlohmann::json& testCase, const std::vector<DumpTensor>& tensors);

/** Writes DIR/README.txt: the layout, the file names, and how bf16 is stored. */
void writeDumpReadme(const std::filesystem::path& dir);

}  // namespace gradkit::cli
