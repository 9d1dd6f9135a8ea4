#include "golden/threshold_backward.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "gradkit/float_convert.h"

namespace gradkit::golden {
namespace {

// Widens one element to double: the golden decides in fp64, independent of the kernels' fp32 path.
double widen(aclDataType dtype, const unsigned char* p) {
  switch (dtype) {
    case ACL_FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ACL_FLOAT16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return halfToFloat(b);
    }
    case ACL_BF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16ToFloat(b);
    }
    case ACL_INT8:
      return static_cast<int8_t>(*p);
    case ACL_UINT8:
      return *p;
    case ACL_INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ACL_INT64: {
      int64_t v;  // sign is all the predicate needs, so the rounding of large values is harmless
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    default:
      throw std::invalid_argument("golden::thresholdBackward: unsupported dtype");
  }
}

size_t elementSize(aclDataType dtype) {
  switch (dtype) {
    case ACL_INT8:
    case ACL_UINT8:
      return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_FLOAT:
    case ACL_INT32:
      return 4;
    case ACL_INT64:
      return 8;
    default:
      throw std::invalid_argument("golden::thresholdBackward: unsupported dtype");
  }
}

}  // namespace

void thresholdBackward(aclDataType dtype, const void* gradOutput, const void* self, void* out, int64_t n) {
  const size_t size = elementSize(dtype);
  const bool floating = dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_BF16;
  const auto* grad = static_cast<const unsigned char*>(gradOutput);
  const auto* features = static_cast<const unsigned char*>(self);
  auto* result = static_cast<unsigned char*>(out);
  for (int64_t i = 0; i < n; ++i) {
    const double s = widen(dtype, features + i * size);
    const bool keep = s > 0.0 || (floating && std::isnan(s));
    if (keep) {
      std::memcpy(result + i * size, grad + i * size, size);
    } else {
      std::memset(result + i * size, 0, size);  // +0 in every supported dtype
    }
  }
}

}  // namespace gradkit::golden
