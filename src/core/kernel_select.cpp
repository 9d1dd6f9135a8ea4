#include "core/kernel_select.h"

#include <cstdlib>
#include <cstring>

namespace gradkit {

bool scalarKernelsForced() {
  static const bool forced = [] {
    const char* value = std::getenv("GRADKIT_FORCE_SCALAR");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
  }();
  return forced;
}

}  // namespace gradkit
