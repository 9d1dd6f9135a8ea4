// Template definition of runTwoPhase (two_phase.h).
#pragma once

#include "acl_error.h"

namespace gradkit::python {

template <class Plan>
void runTwoPhase(const std::string& api, Plan&& plan, AclnnRun run) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  throwIfFailed(api + "GetWorkspaceSize", plan(&workspaceSize, &executor));
  void* workspace = workspaceSize > 0 ? threadWorkspace(workspaceSize) : nullptr;
  throwIfFailed(api, run(workspace, workspaceSize, executor, nullptr));
  synchronizeDefaultStream(api);
}

}  // namespace gradkit::python
