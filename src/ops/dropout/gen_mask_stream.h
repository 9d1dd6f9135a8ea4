// The mask stream of GenMask, GenMaskV2 and DropoutV3 from the user's (prob, seed, offset), as the Ascend950
// stateless kernel takes it (spec dropout_threshold.md 1.2.1, 1.2.2).
#pragma once

#include <cstdint>

#include "core/philox.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"

namespace gradkit::ops {

/** keepF = float32(1 - p): the difference in double, rounded once to float (as the host code does). */
inline float dropoutKeepProbability(double p) { return static_cast<float>(1.0 - p); }

/**
 * The stream for drop probability `p` (not 0 or 1: those are fills): key = the seed's two words, counter
 * words 2 and 3 = the offset's two words (the offset picks the upper 64 counter bits, a curand-style
 * subsequence), keep threshold from keepF.
 */
inline kernels::MaskStream makeMaskStream(double p, int64_t seed, int64_t offset) {
  kernels::MaskStream stream;
  stream.key = philox::keyFromSeed(seed);
  const auto offsetBits = static_cast<uint64_t>(offset);
  stream.counterHigh = {static_cast<uint32_t>(offsetBits), static_cast<uint32_t>(offsetBits >> 32)};
  stream.keepBelow = philox::countUniformBelow(dropoutKeepProbability(p));
  return stream;
}

}  // namespace gradkit::ops
