// The mask-stream piece of the dropout family: what fills a packed mask of n elements (a constant byte, or the
// Philox stream of (prob, seed, offset)) and the kernels that write it. GenMask writes it into its out, Dropout into
// maskOut, DropoutV3 chunk by chunk interleaved with its elementwise pass.
#pragma once

#include <cstdint>

#include "ops/dropout/kernels/gen_mask_kernel.h"

namespace gradkit::ops {

/** Mask bytes per parallel chunk: fixed, so the work split never depends on the thread count. */
inline constexpr int64_t kMaskChunkBytes = 8192;

/** Sets `bytes` bytes of `mask` to `value`, in parallel chunks. */
void fillDropoutMask(uint8_t* mask, int64_t bytes, uint8_t value);

struct DropoutMask {
  int64_t n = 0;          // elements
  int64_t maskBytes = 0;  // ceil(n / 128) * 16
  bool fill = false;      // every byte is fillByte (the stream is not used)
  uint8_t fillByte = 0;
  kernels::MaskStream stream;
  const kernels::GenMaskKernels* kernels = nullptr;  // chosen once when planned

  /**
   * Writes mask bytes [begin, end) to to[0 .. end - begin) with `maskStream` (a fill ignores it); single-threaded,
   * the caller splits the range.
   */
  void writeBytes(int64_t begin, int64_t end, uint8_t* to, const kernels::MaskStream& maskStream) const;

  /**
   * Writes the whole mask (maskBytes bytes, dense) in parallel chunks, with `maskStream` instead of the planned
   * stream (GenMaskV2Tensor, whose seed and offset are only known at run time); a fill ignores it.
   */
  void write(uint8_t* mask, const kernels::MaskStream& maskStream) const;
  void write(uint8_t* mask) const { write(mask, stream); }
};

/**
 * The mask of `n` elements for drop probability `prob`. `epsilonFills`: a prob within DBL_EPSILON of 0 or 1 fills
 * the mask (GenMask's rule, 0xFF or 0x00, padding bits included); aclnnDropout, which only skips the generator for
 * p exactly 0 or 1, passes false and gets the Philox stream for every other p.
 */
DropoutMask planDropoutMask(int64_t n, double prob, int64_t seed, int64_t offset, bool epsilonFills = true);

}  // namespace gradkit::ops
