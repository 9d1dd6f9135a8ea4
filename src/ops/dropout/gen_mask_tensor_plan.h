// The plan of one DropoutGenMaskV2Tensor call: a GenMaskV2 plan whose Philox key and counter are read from the
// seed / offset device tensors when the executor runs (stream order), not when it is planned.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/op_definition.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/dropout/gen_mask_check.h"
#include "ops/dropout/gen_mask_plan.h"

namespace gradkit::ops {

struct GenMaskTensorPlan {
  WorkspaceBooking workspace;
  GenMaskPlan genMask;  // the fill, or the stream's keep threshold, and out; the stream is replaced at run time
  WorkspaceRegion genMaskRegion;
  aclTensor seedTensor, offsetTensor;  // copies of the caller's views (one element each)
  int64_t offset = 0;                  // added to offsetTensor's value
  double prob = 0.5;

  /** Reads seed and offset (unless the mask is a fill), then writes the mask. */
  aclnnStatus run(void* memory) const;
};

/** The seed a checked seedTensor holds now: its INT64 value, or its INT32 value sign-extended. */
int64_t readSeedTensor(const aclTensor& seedTensor);

/** offsetTensor's INT64 value + offset, wrapping modulo 2^64 (the device's int64 Add). */
int64_t readOffsetTensor(const aclTensor& offsetTensor, int64_t offset);

/** Plans a checked call whose out is not empty. */
GenMaskTensorPlan planDropoutGenMaskV2Tensor(const DropoutGenMaskV2TensorArgs& args);

/** aclnnDropoutGenMaskV2Tensor's first phase (opapi/op_definition.h). */
extern const OpDefinition<DropoutGenMaskV2TensorArgs, GenMaskTensorPlan> kDropoutGenMaskV2Tensor;

}  // namespace gradkit::ops
