// Streams: creation, the queue the op layer feeds (rt::enqueue), synchronisation, asynchronous copies.
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "acl/acl.h"
#include "base/error.h"
#include "runtime/memory.h"
#include "runtime/registry.h"

using namespace gradkit;
using namespace gradkit::rt;

namespace {

/** The stream a handle names (nullptr = the effective context's default stream), or nullptr after a message. */
std::shared_ptr<Stream> resolveStream(const char* api, aclrtStream stream, aclError* status) {
  std::shared_ptr<Stream> found;
  if (stream == nullptr) {
    try {
      found = registry().defaultStream(effectiveContext());  // created on first use: may fail to start a thread
    } catch (const std::exception& e) {
      *status =
          failText(ACL_ERROR_RT_INTERNAL_ERROR, api, std::string("cannot create the default stream: ") + e.what());
      return nullptr;
    }
    if (!found) {
      *status = failText(ACL_ERROR_RT_CONTEXT_NULL, api, "the current context was destroyed while in use");
    }
    return found;
  }
  found = registry().findStream(idOf(stream));
  if (!found) {
    *status = fail(ACL_ERROR_RT_PARAM_INVALID, api, "stream", "a live stream handle, or nullptr for the default stream",
                   pointerString(stream) + " (unknown or destroyed)");
  }
  return found;
}

aclError waitingOnItself(const char* api) {
  return failText(ACL_ERROR_RT_PARAM_INVALID, api, "called from a task of the same stream; it would wait for itself");
}

/** Pushes `task` (the resolved `target` of `handle`); closed streams and exhausted memory become errors. */
aclError pushTask(const char* api, Stream& target, aclrtStream handle, Task task) {
  try {
    if (target.push(std::move(task))) return ACL_SUCCESS;
  } catch (const std::bad_alloc&) {
    return failText(ACL_ERROR_BAD_ALLOC, api, "out of memory while enqueuing work");
  }
  return fail(ACL_ERROR_RT_PARAM_INVALID, api, "stream", "a live stream handle",
              pointerString(handle) + " (destroyed while the work was being enqueued)");
}

/** Drains `stream` and hands its error text to this thread. */
aclError synchronize(Stream& stream) {
  std::string text;
  const aclError status = stream.drain(&text);
  if (status != ACL_SUCCESS && !text.empty()) recordError(text);
  return status;
}

}  // namespace

namespace gradkit::rt {

aclError enqueue(aclrtStream stream, Task task, const char* api) {
  aclError status = ACL_SUCCESS;
  std::shared_ptr<Stream> target = resolveStream(api, stream, &status);
  if (!target) return status;
  return pushTask(api, *target, stream, std::move(task));
}

}  // namespace gradkit::rt

extern "C" aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream", "non-null", "nullptr");
  *stream = nullptr;
  uint64_t id = 0;
  try {
    id = registry().createStream(effectiveContext());
  } catch (const std::bad_alloc&) {
    return failText(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream", "out of memory");
  } catch (const std::exception& e) {
    return failText(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtCreateStream",
                    std::string("cannot start the stream's worker thread: ") + e.what());
  }
  if (id == 0) return failText(ACL_ERROR_RT_CONTEXT_NULL, "aclrtCreateStream", "the current context was destroyed");
  *stream = handleOf(id);
  return ACL_SUCCESS;
}

extern "C" aclError aclrtDestroyStream(aclrtStream stream) {
  if (stream == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream", "stream", "a stream from aclrtCreateStream", "nullptr");
  }
  aclError status = ACL_SUCCESS;
  std::shared_ptr<Stream> found = resolveStream("aclrtDestroyStream", stream, &status);
  if (!found) return status;
  if (found->onWorkerThread()) return waitingOnItself("aclrtDestroyStream");
  if (!registry().removeStream(idOf(stream))) {
    return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyStream", "stream", "a stream from aclrtCreateStream",
                pointerString(stream) + " (destroyed concurrently)");
  }
  found->close();  // runs everything already queued, then stops the worker
  return ACL_SUCCESS;
}

extern "C" aclError aclrtSynchronizeStream(aclrtStream stream) {
  aclError status = ACL_SUCCESS;
  std::shared_ptr<Stream> found = resolveStream("aclrtSynchronizeStream", stream, &status);
  if (!found) return status;
  if (found->onWorkerThread()) return waitingOnItself("aclrtSynchronizeStream");
  return synchronize(*found);
}

extern "C" aclError aclrtSynchronizeDevice(void) {
  const auto bound = boundContext();
  const int32_t device = bound ? registry().contextDevice(*bound).value_or(0) : 0;
  aclError first = ACL_SUCCESS;
  for (const auto& stream : registry().deviceStreams(device)) {
    if (stream->onWorkerThread()) return waitingOnItself("aclrtSynchronizeDevice");
    const aclError status = synchronize(*stream);
    if (first == ACL_SUCCESS) first = status;
  }
  return first;
}

extern "C" aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                                     aclrtStream stream) {
  if (aclError status = checkMemcpy("aclrtMemcpyAsync", dst, destMax, src, count, kind); status != ACL_SUCCESS) {
    return status;
  }
  aclError status = ACL_SUCCESS;
  std::shared_ptr<Stream> target = resolveStream("aclrtMemcpyAsync", stream, &status);
  if (!target) return status;
  if (count == 0) return ACL_SUCCESS;
  return pushTask("aclrtMemcpyAsync", *target, stream, [dst, src, count] {
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
  });
}
