// The two-phase call every verify suite makes: GetWorkspaceSize, then (unless it was rejected or a rejection is
// expected) the second phase on the case's stream with an aclrtMalloc'd workspace, then synchronize.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "harness/host_tensor.h"
#include "harness/rows.h"

namespace gradkit::cli {

/** An output tensor with its storage bytes as uploaded, to tell whether a rejected call wrote it. */
struct WatchedOutput {
  HostTensor* tensor;
  const std::vector<unsigned char>* before;
};

/** The first phase: the op's GetWorkspaceSize with every argument but the last two bound. */
using PlanCall = std::function<aclnnStatus(uint64_t* workspaceSize, aclOpExecutor** executor)>;

/** The second phase: aclnnXxx(workspace, workspaceSize, executor, stream). */
using RunCall =
    std::function<aclnnStatus(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)>;

/**
 * Runs the op as a case prescribes and returns true when it computed, so the caller compares its outputs.
 * Returns false with `row` decided otherwise: when GetWorkspaceSize fails or `expectStatus` is non-zero, the case
 * passes iff the status equals `expectStatus` and no output changed; when the second phase or the synchronization
 * fails, the case fails with the codes and the recent error text in its note. `api` names the op in notes.
 * Throws HarnessError when the workspace cannot be allocated.
 */
bool runTwoPhase(const std::string& api, const PlanCall& plan, const RunCall& run, aclrtStream stream, int expectStatus,
                 const std::vector<WatchedOutput>& outputs, VerifyRow& row);

}  // namespace gradkit::cli
