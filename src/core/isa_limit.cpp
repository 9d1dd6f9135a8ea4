#include "core/isa_limit.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hwy/targets.h"

namespace gradkit {
namespace {

/** GRADKIT_ISA as read once: its name ("" for no limit) and the best Highway target it allows (0: any). */
struct Limit {
  const char* name = "";
  int64_t bestTarget = 0;
};

const Limit& requested() {
  static const Limit limit = [] {
    const char* value = std::getenv("GRADKIT_ISA");
    if (value != nullptr && std::strcmp(value, "avx2") == 0) return Limit{"avx2", HWY_AVX2};
    if (value != nullptr && std::strcmp(value, "avx3") == 0) return Limit{"avx3", HWY_AVX3};
    return Limit{};
  }();
  return limit;
}

}  // namespace

void applyIsaLimit() {
  static const bool applied = [] {
    const int64_t best = requested().bestTarget;
    const int64_t supported = hwy::SupportedTargets();
    if ((supported & best) == 0) return false;  // no limit, or one the CPU cannot run: no change
    // Highway numbers better targets with lower bits: keep the requested target and every lesser one.
    hwy::SetSupportedTargetsForTest(supported & ~(best - 1));
    return true;
  }();
  (void)applied;
}

bool isaLimitedBelowAvx512() { return requested().bestTarget == HWY_AVX2; }

const char* isaLimitName() { return requested().name; }

}  // namespace gradkit
