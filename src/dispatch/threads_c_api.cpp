// gradkitSetNumThreads / gradkitGetNumThreads (include/gradkit/gradkit.h): the kernels' thread count from a caller
// (the Python module follows torch.get_num_threads() with it).
#include "core/parallel.h"
#include "gradkit/gradkit.h"

extern "C" aclError gradkitSetNumThreads(int32_t threads) {
  if (threads < 0) return ACL_ERROR_INVALID_PARAM;
  gradkit::setThreadCount(threads);
  return ACL_SUCCESS;
}

extern "C" int32_t gradkitGetNumThreads(void) { return gradkit::threadCount(); }
