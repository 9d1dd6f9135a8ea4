#include "core/isa_limit.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hwy/targets.h"

namespace gradkit {
namespace {

enum class Limit { None, Avx2, Avx3 };

Limit requested() {
  static const Limit limit = [] {
    const char* value = std::getenv("GRADKIT_ISA");
    if (value == nullptr) return Limit::None;
    if (std::strcmp(value, "avx2") == 0) return Limit::Avx2;
    if (std::strcmp(value, "avx3") == 0) return Limit::Avx3;
    return Limit::None;
  }();
  return limit;
}

}  // namespace

void applyIsaLimit() {
  static const bool applied = [] {
#if HWY_ARCH_X86
    if (requested() == Limit::None) return false;
    // Highway numbers better targets with lower bits: keep the requested target and every lesser one.
    const int64_t best = requested() == Limit::Avx2 ? HWY_AVX2 : HWY_AVX3;
    const int64_t supported = hwy::SupportedTargets();
    if ((supported & best) == 0) return false;  // the CPU cannot run it: no change
    hwy::SetSupportedTargetsForTest(supported & ~(best - 1));
    return true;
#else
    return false;
#endif
  }();
  (void)applied;
}

bool isaLimitedBelowAvx512() { return requested() == Limit::Avx2; }

const char* isaLimitName() {
  switch (requested()) {
    case Limit::Avx2:
      return "avx2";
    case Limit::Avx3:
      return "avx3";
    case Limit::None:
      break;
  }
  return "";
}

}  // namespace gradkit
