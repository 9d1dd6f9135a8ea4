#include "golden/threshold_backward.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

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
      int64_t v;  // INT64 only runs with threshold 0: the sign is all the predicate needs
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

bool isIntegerDtype(aclDataType dtype) {
  switch (dtype) {
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_BOOL:
      return true;
    default:
      return false;
  }
}

// Dense row-major strides of `shape` over `outShape` (right-aligned), 0 where `shape` broadcasts.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& outShape) {
  std::vector<int64_t> strides(outShape.size(), 0);
  int64_t stride = 1;
  for (size_t j = shape.size(); j-- > 0;) {
    const size_t k = j + outShape.size() - shape.size();
    if (shape[j] != 1) strides[k] = stride;
    stride *= shape[j];
  }
  return strides;
}

}  // namespace

void thresholdBackward(aclDataType dtype, const void* gradOutput, const std::vector<int64_t>& gradShape,
                       const void* self, const std::vector<int64_t>& selfShape, aclDataType thresholdDtype,
                       double threshold, void* out, const std::vector<int64_t>& outShape) {
  if (gradShape.size() > outShape.size() || selfShape.size() > outShape.size()) {
    throw std::invalid_argument("golden::thresholdBackward: an input has more dims than out");
  }
  const size_t size = elementSize(dtype);
  const bool floating = dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_BF16;
  // The predicate keep(s) = s > t, with t as the tensor dtype reads the threshold.
  bool keepAll = false;
  double t = 0.0;
  if (floating) {
    t = static_cast<double>(static_cast<float>(threshold));  // fp32, round to nearest even
    keepAll = std::isnan(t);
  } else if (isIntegerDtype(thresholdDtype)) {
    t = threshold;
    if (dtype == ACL_UINT8 && t >= -255 && t <= -1) t += 256;  // PyTorch reads it as two's complement
  } else {
    keepAll = std::isnan(threshold);
    t = std::trunc(threshold);
  }

  const std::vector<int64_t> gradStrides = broadcastStrides(gradShape, outShape);
  const std::vector<int64_t> selfStrides = broadcastStrides(selfShape, outShape);
  int64_t n = 1;
  for (int64_t d : outShape) n *= d;
  const auto* grad = static_cast<const unsigned char*>(gradOutput);
  const auto* features = static_cast<const unsigned char*>(self);
  auto* result = static_cast<unsigned char*>(out);
  std::vector<int64_t> index(outShape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t gradAt = 0, selfAt = 0;
    for (size_t k = 0; k < outShape.size(); ++k) {
      gradAt += index[k] * gradStrides[k];
      selfAt += index[k] * selfStrides[k];
    }
    const double s = widen(dtype, features + selfAt * size);
    const bool keep = keepAll || !(s <= t);  // NaN self: kept
    if (keep) {
      std::memcpy(result + i * size, grad + gradAt * size, size);
    } else {
      std::memset(result + i * size, 0, size);  // +0 in every supported dtype
    }
    for (size_t k = outShape.size(); k-- > 0;) {
      if (++index[k] < outShape[k]) break;
      index[k] = 0;
    }
  }
}

}  // namespace gradkit::golden
