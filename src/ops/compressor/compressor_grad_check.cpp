// SKELETON (replaced by the real rules): every call is refused until the operator lands.
#include "ops/compressor/compressor_grad_check.h"

#include "base/error.h"

namespace gradkit::ops {

aclnnStatus checkCompressorGrad(const CompressorGradArgs&, const uint64_t*, aclOpExecutor* const*) {
  return failText(ACLNN_ERR_INNER, kCompressorGradApi, "not implemented yet");
}

}  // namespace gradkit::ops
