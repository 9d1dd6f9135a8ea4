// The check of aclnnSparseFlashMlaGrad (see smla_grad_check.cpp for the phases).
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_grad_args.h"

namespace gradkit::ops {

/** Checks a call whose empty optional tensors were made absent (smlaGradWithEmptyOptionalsAbsent). */
aclnnStatus checkSparseFlashMlaGrad(const SmlaGradArgs& args, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor);

}  // namespace gradkit::ops
