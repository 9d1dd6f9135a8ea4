#include "golden/dropout_v3.h"

#include <cstring>
#include <stdexcept>

#include "golden/dropout_gen_mask.h"
#include "gradkit/float_convert.h"

namespace gradkit::golden {
namespace {

size_t elementSize(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return 4;
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    default:
      throw std::invalid_argument("golden::dropoutV3: unsupported dtype");
  }
}

double load(aclDataType dtype, const unsigned char* at) {
  if (dtype == ACL_FLOAT) {
    float value;
    std::memcpy(&value, at, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, at, 2);
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

void store(aclDataType dtype, unsigned char* at, float value) {
  if (dtype == ACL_FLOAT) {
    std::memcpy(at, &value, 4);
    return;
  }
  const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(at, &bits, 2);
}

}  // namespace

std::vector<uint8_t> dropoutV3(aclDataType dtype, const void* input, int64_t n, double p, int64_t seed, int64_t offset,
                               void* out) {
  const size_t size = elementSize(dtype);
  const auto* x = static_cast<const unsigned char*>(input);
  auto* y = static_cast<unsigned char*>(out);
  std::vector<uint8_t> mask = dropoutGenMask(n, p, seed, offset);
  if (p == 0.0) {
    std::memcpy(y, x, static_cast<size_t>(n) * size);
    return mask;
  }
  if (p == 1.0) {
    std::memset(y, 0, static_cast<size_t>(n) * size);  // +0 in every dtype
    return mask;
  }
  const auto keep = static_cast<float>(1.0 - p);
  const double scale = static_cast<float>(1.0 / static_cast<double>(keep));  // the quotient rounded once
  for (int64_t i = 0; i < n; ++i) {
    const double m = (mask[static_cast<size_t>(i >> 3)] >> (i & 7)) & 1;
    const auto kept = static_cast<float>(load(dtype, x + i * size) * m);
    store(dtype, y + i * size, static_cast<float>(static_cast<double>(kept) * scale));
  }
  return mask;
}

}  // namespace gradkit::golden
