#include "harness/two_phase.h"

#include "harness/error.h"

namespace gradkit::cli {
namespace {

// Downloads every watched output and tells whether all kept their bytes.
bool outputsUntouched(const std::vector<WatchedOutput>& outputs) {
  bool untouched = true;
  for (const WatchedOutput& output : outputs) {
    output.tensor->download();
    untouched = untouched && output.tensor->host() == *output.before;
  }
  return untouched;
}

}  // namespace

bool runTwoPhase(const std::string& api, const PlanCall& plan, const RunCall& run, aclrtStream stream, int expectStatus,
                 const std::vector<WatchedOutput>& outputs, VerifyRow& row) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = plan(&workspaceSize, &executor);
  if (status != ACLNN_SUCCESS || expectStatus != 0) {
    const std::string message = status != ACLNN_SUCCESS ? recentErrorText() : "";
    const bool untouched = outputsUntouched(outputs);
    row.passed = status == expectStatus && untouched;
    row.bitExact = row.passed;
    row.note = "GetWorkspaceSize returned " + std::to_string(status) + " (expected " + std::to_string(expectStatus) +
               ")" + (message.empty() ? "" : ": " + message) +
               (untouched ? "" : "; an output was written by a rejected call");
    if (status == ACLNN_SUCCESS && executor != nullptr) aclDestroyAclOpExecutor(executor);
    return false;
  }

  void* workspace = nullptr;
  if (workspaceSize > 0 && aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    aclDestroyAclOpExecutor(executor);
    throw HarnessError("aclrtMalloc of a " + std::to_string(workspaceSize) + "-byte workspace failed");
  }
  const aclnnStatus runStatus = run(workspace, workspaceSize, executor, stream);
  const aclError syncStatus = aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  if (runStatus != ACLNN_SUCCESS || syncStatus != ACL_SUCCESS) {
    row.note = api + " returned " + std::to_string(runStatus) + ", aclrtSynchronizeStream " +
               std::to_string(syncStatus) + ": " + recentErrorText();
    return false;
  }
  return true;
}

}  // namespace gradkit::cli
