// The first phase of every operator in one place. An op describes itself once (an OpDefinition: its aclnn name,
// its check, when there is nothing to compute, its plan) and its GetWorkspaceSize is one call:
//
//   extern "C" aclnnStatus aclnnXxxGetWorkspaceSize(const aclTensor* a, ..., uint64_t* workspaceSize,
//                                                    aclOpExecutor** executor) {
//     return gradkit::getWorkspaceSize(gradkit::ops::kXxx, XxxArgs{a, ...}, workspaceSize, executor);
//   }
//
// Args is the op's arguments packed once (pointers as the caller gave them); check, plan and tests take it.
// A Plan offers `WorkspaceBooking workspace` (its layout) and `aclnnStatus run(void* workspace) const`.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "aclnn/aclnn_base.h"
#include "base/error.h"
#include "runtime/executor.h"
#include "runtime/fault_injection.h"
#include "runtime/runtime.h"

namespace gradkit {

template <class Args, class Plan>
struct OpDefinition {
  const char* api;  // "aclnnXxx": names the op in messages and executors
  /** Every argument rule in upstream's order; the status of the first that fails (message recorded). */
  aclnnStatus (*check)(const Args& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);
  /** True when a checked call computes nothing (empty tensors): an executor without work, workspace 0. */
  bool (*nothingToCompute)(const Args& args);
  /** The plan of a checked call that computes something. */
  Plan (*plan)(const Args& args);
};

/** The first phase without its last safety net (getWorkspaceSize below). */
template <class Args, class Plan>
aclnnStatus planAndCreateExecutor(const OpDefinition<Args, Plan>& op, const Args& args, uint64_t* workspaceSize,
                                  aclOpExecutor** executor) {
  // GRADKIT_DISABLE_OPS emulates an older CANN without some operators: every entry point asks here first.
  if (rt::isOpDisabled(op.api)) {
    return failText(ACLNN_ERR_PARAM_INVALID, op.api,
                    "the operator is unavailable: it is listed in GRADKIT_DISABLE_OPS");
  }
  const aclnnStatus status = op.check(args, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  std::shared_ptr<const Plan> plan;
  try {  // deciding whether there is work is planning too: it may throw like the plan
    if (!op.nothingToCompute(args)) {
      if (rt::allocationFailureInjected(rt::FaultSite::Planning)) throw std::bad_alloc();  // tests only
      plan = std::make_shared<const Plan>(op.plan(args));
    }
  } catch (const std::bad_alloc&) {
    return failText(ACLNN_ERR_INNER, op.api, "out of host memory while planning");
  } catch (const std::exception& error) {
    return failText(ACLNN_ERR_INNER, op.api, std::string("planning failed: ") + error.what());
  }
  if (plan && plan->workspace.overflowed()) {
    return failText(ACLNN_ERR_PARAM_INVALID, op.api,
                    "the workspace this call needs does not fit in a 64-bit byte count (tensors too large)");
  }
  const uint64_t bytes = plan ? plan->workspace.totalBytes() : 0;
  ExecutorBody body;
  if (plan) body = [plan](void* memory) { return plan->run(memory); };
  aclOpExecutor* planned = newExecutor(op.api, bytes, std::move(body));
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  *workspaceSize = bytes;
  *executor = planned;
  return ACLNN_SUCCESS;
}

/**
 * availability (GRADKIT_DISABLE_OPS) -> check -> (nothing to compute | plan) -> executor -> workspace size, with
 * every failure a status + message. Host memory running out anywhere in the first phase (a check's message, the
 * plan) is 561000 and leaves no executor and no output written: nothing may throw through the C API.
 */
template <class Args, class Plan>
aclnnStatus getWorkspaceSize(const OpDefinition<Args, Plan>& op, const Args& args, uint64_t* workspaceSize,
                             aclOpExecutor** executor) {
  try {
    return planAndCreateExecutor(op, args, workspaceSize, executor);
  } catch (const std::bad_alloc&) {
    return failText(ACLNN_ERR_INNER, op.api, "out of host memory");
  }
}

}  // namespace gradkit
