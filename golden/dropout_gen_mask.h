// Golden of the packed dropout mask of DropoutGenMask / DropoutGenMaskV2 (spec dropout_threshold.md 1.1,
// 1.2.1, 1.2.2), written from the formulas with its own Philox4x32-10 (not src/core/philox.h).
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

/**
 * The ceil(n / 128) * 16 mask bytes for drop probability `prob`: |prob| <= DBL_EPSILON -> all 0xFF,
 * |prob - 1| <= DBL_EPSILON -> all 0x00; otherwise element i is kept (bit i, LSB first) when
 * u(x) < float(1 - prob), x = word i % 4 of Philox4x32-10 with key (low32(seed), high32(seed)) and counter
 * [0, 0, low32(offset), high32(offset)] + i / 4, u(x) = float(x) * 2^-32 + 2^-33 evaluated in double and
 * rounded once to float. Padding bits are 0.
 */
std::vector<uint8_t> dropoutGenMask(int64_t n, double prob, int64_t seed, int64_t offset);

/**
 * The same mask without the DBL_EPSILON fills: the Philox stream for any prob (what aclnnDropout writes for p not
 * exactly 0 or 1). prob exactly 0 keeps every element whose u(x) < 1.0f, which is not every element.
 */
std::vector<uint8_t> dropoutGenMaskStream(int64_t n, double prob, int64_t seed, int64_t offset);

/**
 * The (seed, offset) aclnnDropoutGenMaskV2Tensor uses: seed = the seed tensor's value (an INT32 one sign-extended),
 * offset = offsetTensorValue + offset modulo 2^64 (the device's int64 addition).
 */
int64_t dropoutGenMaskTensorOffset(int64_t offsetTensorValue, int64_t offset);

/** The four output words of Philox4x32-10 for one 128-bit counter and 64-bit key (for known-answer tests). */
void philox4x32x10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

}  // namespace gradkit::golden
