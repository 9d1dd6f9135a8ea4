// Executors: the plans of the first phase, launched on a stream by the second phase.
//
// A table of live executors lets launch() and the destroy call reject unknown, finished or destroyed
// executors with a message instead of touching freed memory, and defers the deletion of an executor that
// still has runs queued on a stream.
#include "runtime/executor.h"

#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "base/error.h"
#include "runtime/registry.h"
#include "runtime/runtime.h"

namespace gradkit {
namespace {

struct ExecutorState {
  bool launched = false;          // a one-shot executor runs once
  int queuedRuns = 0;             // runs enqueued and not finished yet
  bool destroyRequested = false;  // aclDestroyAclOpExecutor came while runs were queued
};

struct ExecutorTable {
  std::mutex mutex;
  std::unordered_map<aclOpExecutor*, ExecutorState> live;
};

ExecutorTable& table() {
  static ExecutorTable* const instance = new ExecutorTable();  // never deleted: stream workers may outlive statics
  return *instance;
}

/** Called on the worker when a run ends (also when the body threw): frees the executor if it is done for. */
void finishRun(aclOpExecutor* executor) {
  ExecutorTable& executors = table();
  bool release = false;
  {
    std::lock_guard<std::mutex> lock(executors.mutex);
    auto found = executors.live.find(executor);
    if (found == executors.live.end()) return;
    ExecutorState& state = found->second;
    --state.queuedRuns;
    release = state.queuedRuns == 0 && (!executor->repeatable || state.destroyRequested);
    if (release) executors.live.erase(found);
  }
  if (release) delete executor;
}

/** Runs finishRun() when the task ends, however it ends. */
struct FinishGuard {
  aclOpExecutor* executor;
  ~FinishGuard() { finishRun(executor); }
};

std::string executorString(const aclOpExecutor* executor) { return rt::pointerString(executor); }

}  // namespace

aclOpExecutor* newExecutor(const char* api) {
  auto* executor = new (std::nothrow) aclOpExecutor();
  if (executor == nullptr) {
    failText(ACLNN_ERR_INNER_CREATE_EXECUTOR, api, "out of memory while creating the executor");
    return nullptr;
  }
  try {
    executor->api = api;
    ExecutorTable& executors = table();
    std::lock_guard<std::mutex> lock(executors.mutex);
    executors.live[executor] = ExecutorState{};  // assignment: a stale entry at a reused address is replaced
  } catch (const std::bad_alloc&) {
    delete executor;
    failText(ACLNN_ERR_INNER_CREATE_EXECUTOR, api, "out of memory while creating the executor");
    return nullptr;
  }
  return executor;
}

aclnnStatus launch(const char* api, void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                   aclrtStream stream) {
  if (executor == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, api, "executor", std::string("the executor from ") + api + "GetWorkspaceSize",
                "nullptr");
  }
  ExecutorTable& executors = table();
  bool hasBody = false;
  {
    std::lock_guard<std::mutex> lock(executors.mutex);
    auto found = executors.live.find(executor);
    if (found == executors.live.end() || found->second.destroyRequested) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "executor", "a live executor",
                  executorString(executor) + " (unknown, already run, or destroyed)");
    }
    ExecutorState& state = found->second;
    if (!executor->repeatable && state.launched) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "executor",
                  "an executor that has not run yet (or one made repeatable by aclSetAclOpExecutorRepeatable)",
                  executorString(executor) + " (already launched once)");
    }
    if (workspaceSize < executor->workspaceSize) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "workspaceSize",
                  ">= " + std::to_string(executor->workspaceSize) + " bytes (as GetWorkspaceSize returned)",
                  std::to_string(workspaceSize));
    }
    if (workspace == nullptr && executor->workspaceSize > 0) {
      return fail(ACLNN_ERR_PARAM_NULLPTR, api, "workspace",
                  "non-null (" + std::to_string(executor->workspaceSize) + " bytes are needed)", "nullptr");
    }
    if (workspace != nullptr && executor->workspaceSize > 0) {
      // Tracked workspace memory must hold what the plan needs from the given address on.
      if (const auto allocation = rt::findAllocation(workspace)) {
        const uint64_t used = static_cast<uint64_t>(static_cast<unsigned char*>(workspace) - allocation->base);
        const uint64_t room = allocation->size - used;
        if (room < executor->workspaceSize) {
          return fail(
              ACLNN_ERR_PARAM_INVALID, api, "workspace",
              std::to_string(executor->workspaceSize) + " bytes of memory from its address on",
              rt::pointerString(workspace) + ", with " + std::to_string(room) + " bytes left in its allocation");
        }
      }
    }
    hasBody = static_cast<bool>(executor->body);
    if (!hasBody && executor->repeatable) return ACLNN_SUCCESS;  // nothing to run and nothing to release
    state.launched = true;
    ++state.queuedRuns;
  }
  aclError status = ACL_SUCCESS;
  try {
    status = rt::enqueue(
        stream,
        [executor, workspace, hasBody]() -> aclError {
          FinishGuard guard{executor};
          return hasBody ? executor->body(workspace) : ACLNN_SUCCESS;
        },
        api);
  } catch (const std::bad_alloc&) {  // building the task itself ran out of memory
    status = failText(ACL_ERROR_BAD_ALLOC, api, "out of memory while enqueuing work");
  }
  if (status != ACL_SUCCESS) {
    // Not queued: the executor stays as it was, so the caller can retry or destroy it.
    bool release = false;
    {
      std::lock_guard<std::mutex> lock(executors.mutex);
      auto found = executors.live.find(executor);
      if (found != executors.live.end()) {
        found->second.launched = false;
        release = --found->second.queuedRuns == 0 && found->second.destroyRequested;
        if (release) executors.live.erase(found);
      }
    }
    if (release) delete executor;
    return failText(ACLNN_ERR_RUNTIME_ERROR, api,
                    "cannot enqueue the work on stream " + rt::pointerString(stream) + " (runtime error " +
                        std::to_string(status) + ")");
  }
  return ACLNN_SUCCESS;
}

}  // namespace gradkit

using gradkit::fail;

extern "C" aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  constexpr const char* kApi = "aclSetAclOpExecutorRepeatable";
  if (executor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, kApi, "executor", "non-null", "nullptr");
  gradkit::ExecutorTable& executors = gradkit::table();
  std::lock_guard<std::mutex> lock(executors.mutex);
  auto found = executors.live.find(executor);
  if (found == executors.live.end() || found->second.destroyRequested) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "executor", "a live executor",
                gradkit::executorString(executor) + " (unknown, already run, or destroyed)");
  }
  if (!executor->repeatable && found->second.launched) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "executor", "an executor that has not been launched yet",
                gradkit::executorString(executor) + " (already launched once)");
  }
  executor->repeatable = true;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  if (executor == nullptr) return ACLNN_SUCCESS;
  gradkit::ExecutorTable& executors = gradkit::table();
  {
    std::lock_guard<std::mutex> lock(executors.mutex);
    auto found = executors.live.find(executor);
    if (found == executors.live.end() || found->second.destroyRequested) {
      return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor", "executor", "a live executor",
                  gradkit::executorString(executor) + " (unknown, already run, or destroyed)");
    }
    if (found->second.queuedRuns > 0) {
      found->second.destroyRequested = true;  // the last queued run frees it
      return ACLNN_SUCCESS;
    }
    executors.live.erase(found);
  }
  delete executor;
  return ACLNN_SUCCESS;
}
