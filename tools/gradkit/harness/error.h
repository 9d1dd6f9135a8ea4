// The one exception type of the harness: bad case files, failed runtime calls. Commands catch it and turn it
// into a failing row or an error message; it never escapes main.
#pragma once

#include <stdexcept>
#include <string>

namespace gradkit::cli {

class HarnessError : public std::runtime_error {
 public:
  explicit HarnessError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace gradkit::cli
