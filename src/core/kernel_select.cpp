#include "core/kernel_select.h"

#include <cstdlib>
#include <cstring>

#include "core/isa_limit.h"

namespace gradkit {

bool scalarKernelsForced() {
  static const bool forced = [] {
    applyIsaLimit();  // every plan chooses its kernels here first: GRADKIT_ISA takes effect before any dispatch
    const char* value = std::getenv("GRADKIT_FORCE_SCALAR");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
  }();
  return forced;
}

}  // namespace gradkit
