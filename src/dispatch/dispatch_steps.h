// The steps the host dispatch (gradkit/native_dropout.h) puts on a stream: a strided copy, a byte fill, and a
// whole two-phase aclnn call with its workspace. Each returns an aclnn status and records a message on failure.
#pragma once

#include <cstdint>
#include <functional>

#include "acl/acl_base.h"
#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit::dispatch {

/** Enqueues a copy of the view `src` into the view `dst` (same shape and dtype, any strides). */
aclnnStatus enqueueCopy(const char* api, const aclTensor& src, const aclTensor& dst, aclrtStream stream);

/** Enqueues writing `byte` into every byte of every element of the view `dst` (0 gives +0.0 for floats). */
aclnnStatus enqueueFill(const char* api, const aclTensor& dst, unsigned char byte, aclrtStream stream);

/** The first phase of an aclnn op, its tensors and attributes bound: (workspaceSize, executor) -> status. */
using PlanStep = std::function<aclnnStatus(uint64_t* workspaceSize, aclOpExecutor** executor)>;

/** The second phase of an aclnn op, e.g. aclnnDropoutV3Grad. */
using LaunchStep = aclnnStatus (*)(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream);

/**
 * Plans, allocates the workspace (aclrtMalloc), launches on `stream`, and enqueues the release of the workspace
 * behind the op, so nothing waits. Returns the first failing status (the op's own message stays recorded).
 */
aclnnStatus runOp(const char* api, const PlanStep& plan, LaunchStep launch, aclrtStream stream);

}  // namespace gradkit::dispatch
