// Executors: the plans of the first phase, launched on a stream by the second phase.
//
// A table of live executors, keyed by handle, lets launch() and the destroy call reject unknown, finished,
// destroyed or foreign executors with a message instead of touching freed memory, and defers the deletion of an
// executor that still has runs queued on a stream.
#include "runtime/executor.h"

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "runtime/fault_injection.h"
#include "runtime/memory.h"
#include "runtime/registry.h"
#include "runtime/runtime.h"

namespace gradkit {
namespace {

struct Executor {
  std::string api;                // e.g. "aclnnThresholdBackward": names the op in messages
  uint64_t workspaceSize = 0;     // bytes the caller must pass to the second phase
  bool repeatable = false;        // set by aclSetAclOpExecutorRepeatable
  ExecutorBody body;              // empty when there is nothing to compute
  bool launched = false;          // a one-shot executor runs once
  int queuedRuns = 0;             // runs enqueued and not finished yet
  bool destroyRequested = false;  // aclDestroyAclOpExecutor came while runs were queued
};

struct ExecutorTable {
  std::mutex mutex;
  uint64_t lastSerial = 0;
  // Handle -> executor. A unique_ptr keeps each object at one address while the map rehashes.
  std::unordered_map<uintptr_t, std::unique_ptr<Executor>> live;
};

ExecutorTable& table() {
  static ExecutorTable* const instance = new ExecutorTable();  // never deleted: stream workers may outlive statics
  return *instance;
}

// Handles are serial numbers shifted left and tagged with a low bit: odd values are never the address of an
// object, so a pointer that was not handed out by newExecutor is never mistaken for a handle.
uintptr_t handleValue(const aclOpExecutor* handle) { return reinterpret_cast<uintptr_t>(handle); }
aclOpExecutor* makeHandle(uint64_t serial) { return reinterpret_cast<aclOpExecutor*>((serial << 1) | 1); }

/** The live executor behind `handle` (mutex held by the caller), or nullptr. */
Executor* findLocked(ExecutorTable& executors, const aclOpExecutor* handle) {
  auto found = executors.live.find(handleValue(handle));
  if (found == executors.live.end() || found->second->destroyRequested) return nullptr;
  return found->second.get();
}

/** Called on the worker when a run ends (also when the body threw): frees the executor if it is done for. */
void finishRun(aclOpExecutor* handle) {
  ExecutorTable& executors = table();
  std::unique_ptr<Executor> released;
  std::lock_guard<std::mutex> lock(executors.mutex);
  auto found = executors.live.find(handleValue(handle));
  if (found == executors.live.end()) return;
  Executor& executor = *found->second;
  --executor.queuedRuns;
  if (executor.queuedRuns == 0 && (!executor.repeatable || executor.destroyRequested)) {
    released = std::move(found->second);
    executors.live.erase(found);
  }
}

/** Runs finishRun() when the task ends, however it ends. */
struct FinishGuard {
  aclOpExecutor* handle;
  ~FinishGuard() { finishRun(handle); }
};

std::string executorString(const aclOpExecutor* handle) { return rt::pointerString(handle); }

constexpr const char* kNotLive = " (unknown, already run, or destroyed)";

}  // namespace

aclOpExecutor* newExecutor(const char* api, uint64_t workspaceSize, ExecutorBody body) {
  try {
    if (rt::allocationFailureInjected(rt::FaultSite::ExecutorCreation)) throw std::bad_alloc();
    auto executor = std::make_unique<Executor>();
    executor->api = api;
    executor->workspaceSize = workspaceSize;
    executor->body = std::move(body);
    ExecutorTable& executors = table();
    std::lock_guard<std::mutex> lock(executors.mutex);
    aclOpExecutor* handle = makeHandle(++executors.lastSerial);
    executors.live.emplace(handleValue(handle), std::move(executor));
    return handle;
  } catch (const std::bad_alloc&) {
    failText(ACLNN_ERR_INNER_CREATE_EXECUTOR, api, "out of memory while creating the executor");
    return nullptr;
  }
}

size_t liveExecutorCount() {
  ExecutorTable& executors = table();
  std::lock_guard<std::mutex> lock(executors.mutex);
  return executors.live.size();
}

std::optional<ExecutorInfo> describeExecutor(const aclOpExecutor* handle) {
  ExecutorTable& executors = table();
  std::lock_guard<std::mutex> lock(executors.mutex);
  const Executor* executor = findLocked(executors, handle);
  if (executor == nullptr) return std::nullopt;
  return ExecutorInfo{executor->api, executor->workspaceSize, executor->repeatable, static_cast<bool>(executor->body)};
}

aclnnStatus launch(const char* api, void* workspace, uint64_t workspaceSize, aclOpExecutor* handle,
                   aclrtStream stream) {
  if (handle == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, api, "executor", std::string("the executor from ") + api + "GetWorkspaceSize",
                "nullptr");
  }
  ExecutorTable& executors = table();
  Executor* executor = nullptr;
  {
    std::lock_guard<std::mutex> lock(executors.mutex);
    executor = findLocked(executors, handle);
    if (executor == nullptr) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "executor", "a live executor", executorString(handle) + kNotLive);
    }
    if (executor->api != api) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "executor", std::string("an executor from ") + api + "GetWorkspaceSize",
                  executorString(handle) + ", made by " + executor->api + "GetWorkspaceSize");
    }
    if (!executor->repeatable && executor->launched) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "executor",
                  "an executor that has not run yet (or one made repeatable by aclSetAclOpExecutorRepeatable)",
                  executorString(handle) + " (already launched once)");
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
      if (const auto freed = rt::findFreedAllocation(workspace)) {
        return fail(ACLNN_ERR_PARAM_INVALID, api, "workspace", "live memory",
                    rt::pointerString(workspace) + ", inside a block of " + std::to_string(freed->size) + " bytes at " +
                        rt::pointerString(freed->base) + " that was freed");
      }
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
    if (!executor->body && executor->repeatable) return ACLNN_SUCCESS;  // nothing to run and nothing to release
    executor->launched = true;
    ++executor->queuedRuns;
  }
  aclError status = ACL_SUCCESS;
  try {
    // The executor stays in the table (and so alive) until its last queued run has finished.
    status = rt::enqueue(
        stream,
        [handle, executor, workspace]() -> aclError {
          FinishGuard guard{handle};
          return executor->body ? executor->body(workspace) : ACLNN_SUCCESS;
        },
        api);
  } catch (const std::bad_alloc&) {  // building the task itself ran out of memory
    status = failText(ACL_ERROR_BAD_ALLOC, api, "out of memory while enqueuing work");
  }
  if (status != ACL_SUCCESS) {
    // Not queued: the executor stays as it was, so the caller can retry or destroy it.
    std::unique_ptr<Executor> released;
    {
      std::lock_guard<std::mutex> lock(executors.mutex);
      auto found = executors.live.find(handleValue(handle));
      if (found != executors.live.end()) {
        found->second->launched = false;
        if (--found->second->queuedRuns == 0 && found->second->destroyRequested) {
          released = std::move(found->second);
          executors.live.erase(found);
        }
      }
    }
    return failText(ACLNN_ERR_RUNTIME_ERROR, api,
                    "cannot enqueue the work on stream " + rt::pointerString(stream) + " (runtime error " +
                        std::to_string(status) + ")");
  }
  return ACLNN_SUCCESS;
}

}  // namespace gradkit

using gradkit::fail;

extern "C" aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* handle) {
  constexpr const char* kApi = "aclSetAclOpExecutorRepeatable";
  if (handle == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, kApi, "executor", "non-null", "nullptr");
  gradkit::ExecutorTable& executors = gradkit::table();
  std::lock_guard<std::mutex> lock(executors.mutex);
  gradkit::Executor* executor = gradkit::findLocked(executors, handle);
  if (executor == nullptr) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "executor", "a live executor",
                gradkit::executorString(handle) + gradkit::kNotLive);
  }
  if (!executor->repeatable && executor->launched) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "executor", "an executor that has not been launched yet",
                gradkit::executorString(handle) + " (already launched once)");
  }
  executor->repeatable = true;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* handle) {
  if (handle == nullptr) return ACLNN_SUCCESS;
  gradkit::ExecutorTable& executors = gradkit::table();
  std::unique_ptr<gradkit::Executor> released;
  std::lock_guard<std::mutex> lock(executors.mutex);
  gradkit::Executor* executor = gradkit::findLocked(executors, handle);
  if (executor == nullptr) {
    return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor", "executor", "a live executor",
                gradkit::executorString(handle) + gradkit::kNotLive);
  }
  if (executor->queuedRuns > 0) {
    executor->destroyRequested = true;  // the last queued run frees it
    return ACLNN_SUCCESS;
  }
  auto found = executors.live.find(gradkit::handleValue(handle));
  released = std::move(found->second);
  executors.live.erase(found);
  return ACLNN_SUCCESS;
}
