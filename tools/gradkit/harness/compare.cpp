#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/dtype.h"
#include "harness/elements.h"

namespace gradkit::cli {

ElementError elementError(double ours, double golden) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool oursNan = std::isnan(ours);
  const bool goldenNan = std::isnan(golden);
  if (oursNan && goldenNan) return {};
  if (oursNan || goldenNan) return {kInf, kInf};
  if (ours == golden) return {};  // also equal Infs and +0 / -0
  if (std::isinf(ours) || std::isinf(golden)) return {kInf, kInf};
  const double abs = std::fabs(ours - golden);
  return {abs, abs / (std::fabs(golden) + 1e-7)};
}

Comparison compareElements(aclDataType dtype, const void* ours, const void* golden, int64_t n) {
  Comparison result;
  result.count = n;
  const size_t size = dtypeSize(dtype);
  const auto* a = static_cast<const unsigned char*>(ours);
  const auto* g = static_cast<const unsigned char*>(golden);
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(a + static_cast<size_t>(i) * size, g + static_cast<size_t>(i) * size, size) == 0) continue;
    if (result.mismatches++ == 0) result.firstMismatch = i;
    const ElementError error = elementError(loadAsDouble(dtype, ours, i), loadAsDouble(dtype, golden, i));
    result.maxAbsErr = std::max(result.maxAbsErr, error.abs);
    result.maxRelErr = std::max(result.maxRelErr, error.rel);
  }
  return result;
}

}  // namespace gradkit::cli
