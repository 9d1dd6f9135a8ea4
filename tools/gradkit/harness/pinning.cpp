#include "harness/pinning.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>

namespace gradkit::cli {

void ensureThreadPinning(char** argv) {
  if (getenv("OMP_PROC_BIND") != nullptr || getenv("OMP_PLACES") != nullptr) return;
  if (getenv("GRADKIT_PINNING_REEXEC") != nullptr) return;  // never loop
  setenv("OMP_PROC_BIND", "close", 1);
  setenv("OMP_PLACES", "cores", 1);
  setenv("GRADKIT_PINNING_REEXEC", "1", 1);
  std::fflush(stdout);
  std::fflush(stderr);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "gradkit: could not re-execute with pinned threads; timing unpinned\n");
}

std::string threadBinding() {
  const char* bind = getenv("OMP_PROC_BIND");
  const char* places = getenv("OMP_PLACES");
  return std::string("OMP_PROC_BIND=") + (bind != nullptr ? bind : "unset") +
         " OMP_PLACES=" + (places != nullptr ? places : "unset");
}

}  // namespace gradkit::cli
