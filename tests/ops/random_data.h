// Random element bytes for op tests: values in a range plus, for floating dtypes, NaN/Inf/-Inf/-0 sprinkled in.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "acl/acl_base.h"
#include "gradkit/float_convert.h"

namespace gradkit::test {

inline size_t elementBytes(aclDataType dtype) { return aclDataTypeSize(dtype); }

/** n elements of `dtype` as raw bytes, values uniform in [-20, 20] (uint8: [0, 20]) with ~10% specials. */
inline std::vector<unsigned char> randomElements(aclDataType dtype, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-20.0f, 20.0f);
  std::uniform_int_distribution<int> pick(0, 39);
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
  const size_t size = elementBytes(dtype);
  std::vector<unsigned char> bytes(static_cast<size_t>(n) * size);
  for (int64_t i = 0; i < n; ++i) {
    const int choice = pick(rng);
    const float value = choice < 5 ? specials[choice] : uniform(rng);
    unsigned char* at = bytes.data() + i * size;
    switch (dtype) {
      case ACL_FLOAT:
        std::memcpy(at, &value, 4);
        break;
      case ACL_FLOAT16: {
        const uint16_t bits = floatToHalf(value);
        std::memcpy(at, &bits, 2);
        break;
      }
      case ACL_BF16: {
        const uint16_t bits = floatToBf16(value);
        std::memcpy(at, &bits, 2);
        break;
      }
      default: {
        const int64_t integer = std::isfinite(value) ? static_cast<int64_t>(value) : (choice % 2 ? 0 : -1);
        const int64_t stored = dtype == ACL_UINT8 ? std::llabs(integer) : integer;
        // Little-endian truncation keeps the value for every integer width used here.
        std::memcpy(at, &stored, size);
        break;
      }
    }
  }
  return bytes;
}

}  // namespace gradkit::test
