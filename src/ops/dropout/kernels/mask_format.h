// The packed dropout mask shared by every dropout op (spec dropout_threshold.md 1.1): UINT8, 128-bit aligned,
// element i in byte i >> 3, bit i & 7 (LSB first), 1 = keep.
#pragma once

#include <cstdint>

namespace gradkit::ops {

/** Bytes of the mask of a tensor with `numel` elements: ceil(numel / 128) * 16. */
inline constexpr int64_t dropoutMaskBytes(int64_t numel) { return (numel + 127) / 128 * 16; }

/** The keep bit of element `index`. */
inline bool dropoutMaskBit(const uint8_t* mask, int64_t index) { return (mask[index >> 3] >> (index & 7)) & 1; }

}  // namespace gradkit::ops
