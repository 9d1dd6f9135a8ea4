// Operator names in the CLI: aclnn names in snake_case without the prefix, selected by name or prefix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gradkit::cli {

/** "aclnnDropoutV3Grad" -> "dropout_v3_grad"; a name without the "aclnn" prefix is converted the same way. */
std::string aclnnToSnake(std::string_view aclnnName);

/** The operators `--op` picked, or an error naming the known ones. */
struct OpSelection {
  std::vector<std::string> names;  // in the order of `known`
  std::string error;               // non-empty when nothing matched
};

/**
 * Selects from `known` (snake_case names): an empty query selects all; an exact name selects only itself;
 * otherwise every name that starts with the query. A query in aclnn form ("aclnnThresholdBackward") is
 * converted first.
 */
OpSelection selectOps(const std::vector<std::string>& known, std::string_view query);

}  // namespace gradkit::cli
