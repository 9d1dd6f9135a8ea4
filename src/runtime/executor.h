// Executors: the plan an op's GetWorkspaceSize made, run later by the op's second phase.
//
// The aclOpExecutor* a caller holds is a handle, not the address of the object: each executor gets a serial
// number that is never reused, so a stale handle (an executor already run or destroyed) is recognised even when
// the memory of the old object now holds a new one, and never runs someone else's plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "acl/acl_base.h"
#include "aclnn/aclnn_base.h"

namespace gradkit {

/** The planned work of one executor; runs on the stream's worker with the caller's workspace. */
using ExecutorBody = std::function<aclnnStatus(void* workspace)>;

/**
 * Registers an executor of `api` ("aclnnThresholdBackward") that needs `workspaceSize` bytes and runs `body`
 * (empty: nothing to compute, e.g. empty tensors) and returns its handle; nullptr (after recording 561101) if
 * memory runs out (or a test injected that: FaultSite::ExecutorCreation, runtime/fault_injection.h).
 */
aclOpExecutor* newExecutor(const char* api, uint64_t workspaceSize, ExecutorBody body);

/** What a live executor holds, for tests and tools: nullopt for an unknown, finished or destroyed handle. */
struct ExecutorInfo {
  std::string api;
  uint64_t workspaceSize = 0;
  bool repeatable = false;
  bool hasBody = false;
};
std::optional<ExecutorInfo> describeExecutor(const aclOpExecutor* handle);

/** How many executors are live (made and not yet freed): tests check that failed calls leave none behind. */
size_t liveExecutorCount();

/**
 * The whole second phase of every op: checks that the executor is live and was made by `api`'s first phase, and
 * the workspace, then enqueues its body on `stream` (nullptr = the current context's default stream). A
 * non-repeatable executor is freed after it ran. Errors raised by the body are reported by aclrtSynchronizeStream.
 * Returns 161001 / 161002 / 361001 or 0.
 */
aclnnStatus launch(const char* api, void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                   aclrtStream stream);

}  // namespace gradkit
