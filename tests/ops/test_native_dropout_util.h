// Helpers for the host-dispatch tests: the reference formulas (written here from spec 1.3-1.7, independent of the
// kernels), element conversion, packed masks, and a fixture that pins the profile and GRADKIT_DISABLE_OPS.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "acl/acl.h"
#include "api/api_test_util.h"
#include "gradkit/float_convert.h"
#include "ops/op_test_util.h"
#include "runtime/runtime.h"

namespace gradkit::test {

inline const aclDataType kDropoutDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

/** Element `i` of a dense buffer of `dtype`, widened to float (exact). */
inline float loadElement(aclDataType dtype, const std::vector<unsigned char>& bytes, int64_t i) {
  if (dtype == ACL_FLOAT) {
    float value;
    std::memcpy(&value, bytes.data() + i * 4, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes.data() + i * 2, 2);
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

/** `value` rounded to `dtype` (RNE) and stored as element `i`. */
inline void storeElement(aclDataType dtype, float value, std::vector<unsigned char>& bytes, int64_t i) {
  if (dtype == ACL_FLOAT) {
    std::memcpy(bytes.data() + i * 4, &value, 4);
    return;
  }
  const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(bytes.data() + i * 2, &bits, 2);
}

/** `value` rounded to `dtype` and widened back. */
inline float roundTo(aclDataType dtype, float value) {
  std::vector<unsigned char> one(4);
  storeElement(dtype, value, one, 0);
  return loadElement(dtype, one, 0);
}

/** A random packed mask for n elements with keep probability `keep`; padding bits random too. */
inline std::vector<uint8_t> randomMask(int64_t n, double keep, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution bit(keep);
  std::vector<uint8_t> mask(static_cast<size_t>((n + 127) / 128 * 16));
  for (size_t i = 0; i < mask.size() * 8; ++i) {
    const bool set = static_cast<int64_t>(i) < n ? bit(rng) : (rng() & 1) != 0;
    if (set) mask[i >> 3] = static_cast<uint8_t>(mask[i >> 3] | (1u << (i & 7)));
  }
  return mask;
}

inline bool keepBit(const std::vector<uint8_t>& mask, int64_t i) { return (mask[i >> 3] >> (i & 7)) & 1; }

/** PyTorch's native_dropout_backward (= aclnnDropoutV3Grad): T(RN32(RN32(g * m) * RN32(scale))). */
inline std::vector<unsigned char> torchBackward(aclDataType dtype, const std::vector<unsigned char>& grad,
                                                const std::vector<uint8_t>& mask, double scale) {
  const int64_t n = static_cast<int64_t>(grad.size() / aclDataTypeSize(dtype));
  std::vector<unsigned char> out(grad.size());
  const float scaleF = static_cast<float>(scale);
  for (int64_t i = 0; i < n; ++i) {
    const float masked = loadElement(dtype, grad, i) * (keepBit(mask, i) ? 1.0f : 0.0f);
    storeElement(dtype, masked * scaleF, out, i);
  }
  return out;
}

/**
 * The legacy aclnnDropoutDoMask(x, mask, p): keep = float(1 - p) rounded to the dtype, r = RN32(1 / keep), out = bit ?
 * T(RN32(x * r)) : +0.
 */
inline std::vector<unsigned char> legacyDoMask(aclDataType dtype, const std::vector<unsigned char>& x,
                                               const std::vector<uint8_t>& mask, double p) {
  const int64_t n = static_cast<int64_t>(x.size() / aclDataTypeSize(dtype));
  std::vector<unsigned char> out(x.size());
  const float keep = roundTo(dtype, static_cast<float>(1.0 - p));
  const float reciprocal = 1.0f / keep;
  for (int64_t i = 0; i < n; ++i) {
    storeElement(dtype, keepBit(mask, i) ? loadElement(dtype, x, i) * reciprocal : 0.0f, out, i);
  }
  return out;
}

/** aclnnDropoutV3's output for a given mask: T(RN32(RN32(x * m) * scaleF)), scaleF = 1.0f / float(1 - p). */
inline std::vector<unsigned char> v3Forward(aclDataType dtype, const std::vector<unsigned char>& x,
                                            const std::vector<uint8_t>& mask, double p) {
  const int64_t n = static_cast<int64_t>(x.size() / aclDataTypeSize(dtype));
  std::vector<unsigned char> out(x.size());
  const float scaleF = 1.0f / static_cast<float>(1.0 - p);
  for (int64_t i = 0; i < n; ++i) {
    const float masked = loadElement(dtype, x, i) * (keepBit(mask, i) ? 1.0f : 0.0f);
    storeElement(dtype, masked * scaleF, out, i);
  }
  return out;
}

/** Dense row-major copy of a strided view over `storage` (element bytes). */
inline std::vector<unsigned char> gatherView(aclDataType dtype, const std::vector<unsigned char>& storage,
                                             const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                                             int64_t offset) {
  const size_t size = aclDataTypeSize(dtype);
  std::vector<unsigned char> dense;
  std::vector<int64_t> index(shape.size(), 0);
  const int64_t n = product(shape);
  for (int64_t k = 0; k < n; ++k) {
    int64_t at = offset;
    for (size_t d = 0; d < shape.size(); ++d) at += index[d] * strides[d];
    dense.insert(dense.end(), storage.begin() + at * size, storage.begin() + (at + 1) * size);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return dense;
}

/**
 * Every dispatch test starts from the default profile (Ascend950, no override, GRADKIT_SOC unset) with nothing in
 * GRADKIT_DISABLE_OPS, whatever the environment of the test run says.
 */
class DispatchFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    rt::clearSocOverride();
    recentError();
  }
  void TearDown() override { rt::clearSocOverride(); }

  gradkit_test::ScopedEnv soc_{"GRADKIT_SOC", nullptr};
  gradkit_test::ScopedEnv disabled_{"GRADKIT_DISABLE_OPS", nullptr};
};

/** Switches the emulated SoC (through GRADKIT_SOC) for a scope. */
class ScopedSoc {
 public:
  explicit ScopedSoc(const char* name) : env_("GRADKIT_SOC", name) { rt::clearSocOverride(); }

 private:
  gradkit_test::ScopedEnv env_;
};

}  // namespace gradkit::test
