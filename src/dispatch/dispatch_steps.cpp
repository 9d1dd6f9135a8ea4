#include "dispatch/dispatch_steps.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "acl/acl_rt.h"
#include "base/dtype.h"
#include "base/error.h"
#include "opapi/tensor_copy.h"
#include "runtime/registry.h"
#include "runtime/runtime.h"

namespace gradkit::dispatch {
namespace {

size_t viewBytes(const aclTensor& view) { return static_cast<size_t>(view.numel()) * dtypeSize(view.dtype); }

bool sameView(const aclTensor& a, const aclTensor& b) {
  return a.firstElement() == b.firstElement() && a.viewDims == b.viewDims && a.strides == b.strides &&
         a.dtype == b.dtype;
}

/** Enqueues `task`; a runtime refusal becomes 361001 with a message naming the stream. */
aclnnStatus enqueueTask(const char* api, aclrtStream stream, rt::Task task) {
  aclError status = ACL_SUCCESS;
  try {
    status = rt::enqueue(stream, std::move(task), api);
  } catch (const std::bad_alloc&) {
    status = ACL_ERROR_BAD_ALLOC;
  }
  if (status == ACL_SUCCESS) return ACLNN_SUCCESS;
  return failText(
      ACLNN_ERR_RUNTIME_ERROR, api,
      "cannot enqueue work on stream " + rt::pointerString(stream) + " (runtime error " + std::to_string(status) + ")");
}

}  // namespace

aclnnStatus enqueueCopy(const char* api, const aclTensor& src, const aclTensor& dst, aclrtStream stream) {
  if (sameView(src, dst)) return ACLNN_SUCCESS;  // an in-place clone: nothing to move
  return enqueueTask(api, stream, [src, dst]() -> aclError {
    if (dst.isContiguous()) {
      copyToContiguous(src, dst.firstElement());
    } else if (src.isContiguous()) {
      copyFromContiguous(src.firstElement(), dst);
    } else {  // both strided: through a dense staging buffer
      std::vector<unsigned char> staging(viewBytes(src));
      copyToContiguous(src, staging.data());
      copyFromContiguous(staging.data(), dst);
    }
    return ACL_SUCCESS;
  });
}

aclnnStatus enqueueFill(const char* api, const aclTensor& dst, unsigned char byte, aclrtStream stream) {
  return enqueueTask(api, stream, [dst, byte]() -> aclError {
    if (dst.isContiguous()) {
      std::memset(dst.firstElement(), byte, viewBytes(dst));
    } else {
      const std::vector<unsigned char> filled(viewBytes(dst), byte);
      copyFromContiguous(filled.data(), dst);
    }
    return ACL_SUCCESS;
  });
}

aclnnStatus runOp(const char* api, const PlanStep& plan, LaunchStep launch, aclrtStream stream) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  if (const aclnnStatus status = plan(&workspaceSize, &executor); status != ACLNN_SUCCESS) return status;
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    if (const aclError status = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        status != ACL_SUCCESS) {
      aclDestroyAclOpExecutor(executor);
      return failText(ACLNN_ERR_RUNTIME_ERROR, api,
                      "cannot allocate the " + std::to_string(workspaceSize) + " byte workspace (aclrtMalloc error " +
                          std::to_string(status) + ")");
    }
  }
  if (const aclnnStatus status = launch(workspace, workspaceSize, executor, stream); status != ACLNN_SUCCESS) {
    aclDestroyAclOpExecutor(executor);
    if (workspace != nullptr) aclrtFree(workspace);
    return status;
  }
  if (workspace == nullptr) return ACLNN_SUCCESS;
  // The stream runs in order, so the workspace is released right after the op, without waiting here.
  const aclnnStatus status = enqueueTask(api, stream, [workspace]() -> aclError { return aclrtFree(workspace); });
  if (status != ACLNN_SUCCESS) {
    aclrtSynchronizeStream(stream);  // cannot queue the release: wait for the op, then free
    aclrtFree(workspace);
  }
  return status;
}

}  // namespace gradkit::dispatch
