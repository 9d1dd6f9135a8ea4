#include "golden/dropout_v3_grad.h"

#include <cstring>
#include <stdexcept>

#include "gradkit/float_convert.h"

namespace gradkit::golden {
namespace {

double widen(aclDataType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case ACL_FLOAT: {
      float v;
      std::memcpy(&v, static_cast<const unsigned char*>(base) + 4 * i, 4);
      return v;
    }
    case ACL_FLOAT16:
    case ACL_BF16: {
      uint16_t b;
      std::memcpy(&b, static_cast<const unsigned char*>(base) + 2 * i, 2);
      return dtype == ACL_FLOAT16 ? halfToFloat(b) : bf16ToFloat(b);
    }
    default:
      throw std::invalid_argument("golden::dropoutV3Grad: unsupported dtype");
  }
}

void store(aclDataType dtype, void* base, int64_t i, float value) {
  auto* at = static_cast<unsigned char*>(base);
  if (dtype == ACL_FLOAT) {
    std::memcpy(at + 4 * i, &value, 4);
    return;
  }
  if (dtype != ACL_FLOAT16 && dtype != ACL_BF16)
    throw std::invalid_argument("golden::dropoutV3Grad: unsupported dtype");
  const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(at + 2 * i, &bits, 2);
}

}  // namespace

void dropoutV3Grad(aclDataType gradDtype, aclDataType outDtype, const void* gradY, const uint8_t* mask, double scale,
                   void* gradX, int64_t n) {
  const double scaleF = static_cast<float>(scale);  // RN32(scale), as the host narrows it
  for (int64_t i = 0; i < n; ++i) {
    const double m = static_cast<double>((mask[i / 8] >> (i % 8)) & 1);
    // Each product of two floats is exact in double, so one conversion to float is the fp32 multiply's rounding.
    const auto kept = static_cast<float>(widen(gradDtype, gradY, i) * m);
    const auto scaled = static_cast<float>(static_cast<double>(kept) * scaleF);
    store(outDtype, gradX, i, scaled);
  }
}

}  // namespace gradkit::golden
