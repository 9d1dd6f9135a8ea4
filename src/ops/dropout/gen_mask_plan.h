// The plan of one DropoutGenMask / DropoutGenMaskV2 call, and the parallel mask writer DropoutV3 shares.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"

namespace gradkit::ops {

/** Mask bytes per parallel chunk: fixed, so the work split never depends on the thread count. */
inline constexpr int64_t kMaskChunkBytes = 8192;

/**
 * Writes the `maskBytes` bytes of the mask of `n` elements (bits past n are 0), in parallel chunks of
 * kMaskChunkBytes; `scalarKernel` selects the plain kernel instead of the SIMD one.
 */
void writeDropoutMask(const kernels::MaskStream& stream, int64_t n, int64_t maskBytes, uint8_t* mask,
                      bool scalarKernel);

/** Sets `bytes` bytes of `mask` to `value`, in parallel chunks. */
void fillDropoutMask(uint8_t* mask, int64_t bytes, uint8_t value);

struct GenMaskPlan {
  aclTensor out;  // copy of the caller's view (UINT8, maskBytes elements, any strides)
  int64_t n = 0;
  int64_t maskBytes = 0;
  bool fill = false;  // prob within DBL_EPSILON of 0 or 1: every byte is fillByte
  uint8_t fillByte = 0;
  kernels::MaskStream stream;
  bool stageOut = false;  // a non-contiguous out is written densely in the workspace, then copied
  uint64_t workspaceBytes = 0;
  bool scalarKernel = false;

  /** Runs the op with `workspace` (at least workspaceBytes). */
  aclnnStatus run(void* workspace) const { return runWith(workspace, stream); }

  /**
   * Runs the op with `maskStream` instead of the planned stream (GenMaskV2Tensor, whose seed and offset are only
   * known at run time); a fill ignores it.
   */
  aclnnStatus runWith(void* workspace, const kernels::MaskStream& maskStream) const;
};

/**
 * Plans a checked call whose out is not empty. `epsilonFills`: a prob within DBL_EPSILON of 0 or 1 fills the mask
 * (GenMask's rule); aclnnDropout, which only skips the generator for p exactly 0 or 1, passes false and gets the
 * Philox stream for every other p.
 */
GenMaskPlan planDropoutGenMask(int64_t n, double prob, int64_t seed, int64_t offset, const aclTensor& out,
                               bool epsilonFills = true);

}  // namespace gradkit::ops
