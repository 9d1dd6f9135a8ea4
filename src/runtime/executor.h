// aclOpExecutor: the plan an op's GetWorkspaceSize made, run later by the op's second phase.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "acl/acl_base.h"
#include "aclnn/aclnn_base.h"

struct aclOpExecutor {
  std::string api;             // e.g. "aclnnThresholdBackward": names the op in messages
  uint64_t workspaceSize = 0;  // bytes the caller must pass to the second phase
  bool repeatable = false;     // set by aclSetAclOpExecutorRepeatable
  /** The planned work; empty when there is nothing to compute (empty tensors). Runs on the stream's worker. */
  std::function<aclnnStatus(void* workspace)> body;
};

namespace gradkit {

/** Allocates an executor for `api`; nullptr (after recording 561101) if allocation fails. */
aclOpExecutor* newExecutor(const char* api);

/**
 * The whole second phase of every op: checks executor and workspace, then enqueues `executor->body` on
 * `stream` (nullptr = the current context's default stream). A non-repeatable executor is freed after it ran.
 * Errors raised by the body are reported by aclrtSynchronizeStream. Returns 161001 / 161002 / 361001 or 0.
 */
aclnnStatus launch(const char* api, void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                   aclrtStream stream);

}  // namespace gradkit
