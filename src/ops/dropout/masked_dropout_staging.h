// Dense staging shared by the ops that consume a packed dropout mask (DoMask, DropoutBackward, V3Grad): views that
// are not contiguous go through dense copies in booked workspace regions, and the run walks the elements in parallel
// chunks of whole mask bytes.
#pragma once

#include <cstdint>
#include <functional>

#include "opapi/staged_tensor.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"

namespace gradkit::ops {

struct MaskedStaging {
  StagedTensor input, mask, out;
  bool readInput = true, readMask = true;
  bool streamStores = false;  // the output is written directly and is large: non-temporal stores

  /** Dense, row-major views of the three tensors for one run. */
  struct Dense {
    const void* input = nullptr;    // null when !readInput
    const uint8_t* mask = nullptr;  // null when !readMask
    void* out = nullptr;
  };

  /** Stages the inputs that are read and not contiguous into the caller's workspace memory; the dense views. */
  Dense prepare(void* memory) const;

  /** Copies a staged output back into out's view (nothing when out was written directly). */
  void finish(void* memory) const { out.writeBack(memory); }
};

/**
 * Plans the staging of a checked, non-empty call into `booking` (input, mask, out, in that order). `readInput` /
 * `readMask`: whether the run reads that tensor (a result of zeros reads neither, a copy reads no mask), so that
 * nothing unneeded is staged.
 */
MaskedStaging planMaskedStaging(const aclTensor& input, const aclTensor& mask, const aclTensor& out, bool readInput,
                                bool readMask, WorkspaceBooking& booking);

/**
 * Calls fn(begin, end) over [0, n) in parallel. Chunk bounds are multiples of 128 elements, so every chunk starts
 * on a whole mask byte (and a 16-byte boundary of the mask), and depend only on n.
 */
void forEachMaskChunk(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace gradkit::ops
