// Kernels of the packed dropout mask (spec dropout_threshold.md 1.1, 1.2.2) on raw byte ranges. They know
// nothing about aclTensor; the plan splits the mask into ranges of whole bytes and runs them in parallel.
#pragma once

#include <array>
#include <cstdint>

namespace gradkit::kernels {

/**
 * The Ascend950 stateless mask stream: element i takes word i % 4 of Philox4x32-10 block i / 4, whose
 * counter is [low32(i / 4), high32(i / 4), counterHigh[0], counterHigh[1]] under `key`; the element is kept
 * (bit 1) when that word x is below `keepBelow` (in [0, 2^32]), which is the same as uniform(x) < keepF.
 */
struct MaskStream {
  std::array<uint32_t, 2> key{};          // (low32(seed), high32(seed))
  std::array<uint32_t, 2> counterHigh{};  // (low32(offset), high32(offset))
  uint64_t keepBelow = 0;
};

/**
 * Writes mask bytes [firstByte, firstByte + byteCount) of the mask of `n` elements to out[0 .. byteCount):
 * bit b of byte k is element 8k + b, LSB first; elements at or after n get bit 0 (so bytes past the data
 * are 0). SIMD through Highway's dynamic dispatch; single-threaded, the caller splits the range.
 */
void genMaskBytesSimd(const MaskStream& stream, int64_t n, int64_t firstByte, int64_t byteCount, uint8_t* out);

/** The plain scalar path with the same contract (fallback, tail handler and cross-check of the SIMD path). */
void genMaskBytesScalar(const MaskStream& stream, int64_t n, int64_t firstByte, int64_t byteCount, uint8_t* out);

/** The mask kernel a plan runs with, chosen once (core/kernel_select.h): the SIMD or the scalar instance. */
struct GenMaskKernels {
  void (*bytes)(const MaskStream& stream, int64_t n, int64_t firstByte, int64_t byteCount, uint8_t* out);
};
extern const GenMaskKernels kGenMaskSimdKernels;
extern const GenMaskKernels kGenMaskScalarKernels;

}  // namespace gradkit::kernels
