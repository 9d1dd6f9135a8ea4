// Runs one aclnn operator through its two phases on the default stream and waits for it, with the GIL released
// (so other Python threads run meanwhile). Failures throw AclnnFailure.
#pragma once

#include <cstdint>
#include <string>

#include "aclnn/aclnn_base.h"

namespace gradkit::python {

/** The second phase of an aclnn operator: aclnnXxx(workspace, workspaceSize, executor, stream). */
using AclnnRun = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

/**
 * A 64-byte aligned buffer of at least `bytes` bytes for the calling thread's next operator. Reused from call to
 * call (grown when too small), so steady-state calls neither allocate nor touch fresh pages.
 */
void* threadWorkspace(uint64_t bytes);

/** Waits for the default stream; throws AclnnFailure naming `api` when the enqueued work failed. */
void synchronizeDefaultStream(const std::string& api);

/**
 * `plan(&workspaceSize, &executor)` (the GetWorkspaceSize call with its arguments bound), then `run` on the
 * default stream, then a synchronize. Call with the GIL released; the descriptors must outlive the call.
 */
template <class Plan>
void runTwoPhase(const std::string& api, Plan&& plan, AclnnRun run);

}  // namespace gradkit::python

#include "two_phase_inl.h"
