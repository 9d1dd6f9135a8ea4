// A kernel-layer probe (tests/layers/CMakeLists.txt): compiled with gradkit_ops_kernels' include roots, once per
// GRADKIT_PROBE_* macro. `allowed` includes what a kernel may see and must compile; each other probe includes one
// header a kernel must not see and must fail to compile with "No such file".
#include "acl/acl_base.h"
#include "base/saturating.h"
#include "core/parallel.h"
#include "gradkit/float_convert.h"
#include "ops/flash_attention/kernels/fa_kernel.h"

#if defined(GRADKIT_PROBE_opapi)
#include "opapi/tensor.h"
#elif defined(GRADKIT_PROBE_acl_meta)
#include "aclnn/acl_meta.h"
#elif defined(GRADKIT_PROBE_op_check)
#include "ops/flash_attention/fa_check.h"
#endif

int gradkitKernelProbe() { return 0; }
