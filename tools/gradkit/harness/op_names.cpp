#include "harness/op_names.h"

#include <algorithm>
#include <cctype>

namespace gradkit::cli {

std::string aclnnToSnake(std::string_view aclnnName) {
  std::string_view name = aclnnName;
  if (name.substr(0, 5) == "aclnn") name.remove_prefix(5);
  std::string snake;
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c)) {
      // A word starts at an upper-case letter that follows a lower-case letter or a digit ("V3Grad").
      if (i > 0 && (std::islower(static_cast<unsigned char>(name[i - 1])) ||
                    std::isdigit(static_cast<unsigned char>(name[i - 1])))) {
        snake += '_';
      }
      snake += static_cast<char>(std::tolower(c));
    } else {
      snake += static_cast<char>(c);
    }
  }
  return snake;
}

OpSelection selectOps(const std::vector<std::string>& known, std::string_view query) {
  OpSelection selection;
  if (query.empty()) {
    selection.names = known;
    return selection;
  }
  const std::string wanted = query.substr(0, 5) == "aclnn" ? aclnnToSnake(query) : std::string(query);
  if (std::find(known.begin(), known.end(), wanted) != known.end()) {
    selection.names = {wanted};
    return selection;
  }
  for (const std::string& name : known) {
    if (name.compare(0, wanted.size(), wanted) == 0) selection.names.push_back(name);
  }
  if (selection.names.empty()) {
    selection.error = "unknown operator '" + std::string(query) + "'; known operators:";
    for (const std::string& name : known) selection.error += " " + name;
    if (known.empty()) selection.error += " (none)";
  }
  return selection;
}

}  // namespace gradkit::cli
