// Case files (cases/<op>.json) and their expansion into concrete cases.
//
//   {"op": "threshold_backward",
//    "cases": [ {"name": "...", "dtype": "fp32" | ["fp32", "fp16"], "sweep": {...}, ...op-specific keys} ],
//    "bench": [ {"name": "...", "dtype": ..., ...} ]}
//
// Expansion (for "cases" and "bench" alike):
//   "dtype": [a, b]  one case per dtype; "{dtype}" in the name is replaced, else "_<dtype>" is appended.
//   "sweep": {"var": "n", "from": 1, "to": 64} or {"var": "n", "values": [3, 5]}
//                    one case per value; every JSON string equal to "$n" becomes the integer, "{n}" in the
//                    name is replaced, else "_<value>" is appended.
// Names must be unique after expansion.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradkit::cli {

/** A loaded, expanded case file. */
struct CaseFile {
  std::string op;
  std::vector<nlohmann::json> cases;
  std::vector<nlohmann::json> bench;
};

/** Expands one list of case objects; throws HarnessError for a malformed case or a duplicate name. */
std::vector<nlohmann::json> expandCases(const nlohmann::json& cases);

/** Parses and expands a case file's JSON; `source` names it in messages. */
CaseFile parseCaseFile(const nlohmann::json& file, const std::string& source);

/** Reads, parses and expands `path`; throws HarnessError naming the file on any problem. */
CaseFile loadCaseFile(const std::filesystem::path& path);

}  // namespace gradkit::cli
