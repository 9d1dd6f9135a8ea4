#include "golden/dropout_do_mask.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "gradkit/float_convert.h"

namespace gradkit::golden {
namespace {

size_t sizeOf(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return 4;
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    default:
      throw std::invalid_argument("golden::dropoutDoMask: unsupported dtype");
  }
}

double widen(aclDataType dtype, const void* base, int64_t i) {
  const unsigned char* at = static_cast<const unsigned char*>(base) + sizeOf(dtype) * static_cast<size_t>(i);
  if (dtype == ACL_FLOAT) {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  uint16_t b;
  std::memcpy(&b, at, 2);
  return dtype == ACL_FLOAT16 ? halfToFloat(b) : bf16ToFloat(b);
}

// `value` is exactly representable in float here (a widened element or an fp32 result).
void store(aclDataType dtype, void* base, int64_t i, double value) {
  unsigned char* at = static_cast<unsigned char*>(base) + sizeOf(dtype) * static_cast<size_t>(i);
  const auto f = static_cast<float>(value);
  if (dtype == ACL_FLOAT) {
    std::memcpy(at, &f, 4);
    return;
  }
  const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(f) : floatToBf16(f);
  std::memcpy(at, &bits, 2);
}

// The keep probability stored in x's dtype, as the kernel reads it back.
double storedKeep(aclDataType xDtype, double prob) {
  const auto keep = static_cast<float>(1.0 - prob);
  if (xDtype == ACL_FLOAT16) return halfToFloat(floatToHalf(keep));
  if (xDtype == ACL_BF16) return bf16ToFloat(floatToBf16(keep));
  return keep;
}

void copy(aclDataType xDtype, aclDataType outDtype, const void* x, void* out, int64_t n) {
  if (xDtype == outDtype) {
    std::memcpy(out, x, sizeOf(xDtype) * static_cast<size_t>(n));  // the bits as they are (NaN payloads too)
    return;
  }
  for (int64_t i = 0; i < n; ++i) store(outDtype, out, i, widen(xDtype, x, i));
}

void zeros(aclDataType outDtype, void* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store(outDtype, out, i, 0.0);
}

}  // namespace

double dropoutBackwardProb(double scale) { return std::fabs(scale) <= DBL_EPSILON ? 1.0 : 1.0 - 1.0 / scale; }

void dropoutDoMask(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, double prob, void* out,
                   int64_t n) {
  sizeOf(xDtype);
  sizeOf(outDtype);
  if (std::fabs(prob) <= DBL_EPSILON) return copy(xDtype, outDtype, x, out, n);
  if (std::fabs(prob - 1.0) <= DBL_EPSILON) return zeros(outDtype, out, n);
  const double k = storedKeep(xDtype, prob);
  const double eps = static_cast<float>(DBL_EPSILON);
  if (std::fabs(k) <= eps) return zeros(outDtype, out, n);
  if (std::fabs(k - 1.0) <= eps) return copy(xDtype, outDtype, x, out, n);
  // A quotient or product of floats computed in double and rounded once to float is the correctly rounded fp32
  // result (53 >= 2 * 24 + 2), so these are the kernel's fp32 roundings.
  const double r = static_cast<float>(1.0 / k);
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = ((mask[i / 8] >> (i % 8)) & 1) != 0;
    store(outDtype, out, i, keep ? static_cast<double>(static_cast<float>(widen(xDtype, x, i) * r)) : 0.0);
  }
}

}  // namespace gradkit::golden
