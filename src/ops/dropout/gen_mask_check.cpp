#include "ops/dropout/gen_mask_check.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/kernels/mask_format.h"
#include "ops/dropout/masked_dropout_check.h"

namespace gradkit::ops {
namespace {

// Every dim >= 0, and at most 2^62 elements (so the mask size and the block counters cannot overflow).
aclnnStatus checkShape(const char* api, const aclIntArray& shape) {
  constexpr int64_t kMaxNumel = int64_t{1} << 62;
  bool hasZero = false;
  for (int64_t dim : shape.values) {
    if (dim < 0) return fail(ACLNN_ERR_PARAM_INVALID, api, "shape", "dims >= 0", "shape " + dimsString(shape.values));
    hasZero = hasZero || dim == 0;
  }
  if (hasZero) return ACLNN_SUCCESS;
  int64_t numel = 1;
  for (int64_t dim : shape.values) {
    if (numel > kMaxNumel / dim) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "shape", "at most 2^62 elements", "shape " + dimsString(shape.values));
    }
    numel *= dim;
  }
  return ACLNN_SUCCESS;
}

// NaN is rejected too (upstream's `prob > 1 || prob < 0` lets it through; DECISIONS.md "check early").
aclnnStatus checkProbability(const char* api, const char* name, double prob) {
  if (prob >= 0.0 && prob <= 1.0) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, "a drop probability in [0, 1]", exactNumberText(prob));
}

// A device scalar argument: exactly one element, rank <= 8.
aclnnStatus checkOneElement(const char* api, const char* name, const aclTensor& tensor) {
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, name, tensor, 8));
  if (tensor.numel() == 1) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, "exactly one element (shape [1])",
              std::to_string(tensor.numel()) + " elements, shape " + tensor.shapeString());
}

// The rules of GenMask and GenMaskV2 (probDataType given), in upstream's order; `api` names the entry point.
aclnnStatus checkGenMaskArguments(const char* api, const aclIntArray* shape, double prob,
                                  std::optional<int> probDataType, const aclTensor* out, const uint64_t* workspaceSize,
                                  aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "shape", shape));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkShape(api, *shape));

  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "out", *out, {ACL_UINT8}));
  GRADKIT_RETURN_IF_ERROR(checkProbability(api, "prob", prob));
  if (probDataType && *probDataType != ACL_FLOAT && *probDataType != ACL_FLOAT16 && *probDataType != ACL_BF16) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "probDataType", "one of {FLOAT, FLOAT16, BFLOAT16}",
                rawDtypeName(*probDataType));
  }

  GRADKIT_RETURN_IF_ERROR(checkProducedMaskSize(api, "out", *out, dropoutShapeNumel(*shape)));
  return checkNoInternalOverlap(api, "out", *out);
}

}  // namespace

int64_t dropoutShapeNumel(const aclIntArray& shape) {
  // A 0 anywhere makes the product 0, and the dims before it may be too large to multiply (checkShape bounds the
  // product only of shapes without a 0).
  for (int64_t dim : shape.values) {
    if (dim == 0) return 0;
  }
  int64_t numel = 1;
  for (int64_t dim : shape.values) numel *= dim;
  return numel;
}

aclnnStatus checkDropoutGenMask(const DropoutGenMaskArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor) {
  return checkGenMaskArguments(kDropoutGenMaskApi, args.shape, args.prob, std::nullopt, args.out, workspaceSize,
                               executor);
}

aclnnStatus checkDropoutGenMaskV2(const DropoutGenMaskV2Args& args, const uint64_t* workspaceSize,
                                  aclOpExecutor* const* executor) {
  return checkGenMaskArguments(kDropoutGenMaskV2Api, args.shape, args.prob, args.probDataType, args.out, workspaceSize,
                               executor);
}

aclnnStatus checkDropoutGenMaskV2Tensor(const DropoutGenMaskV2TensorArgs& args, const uint64_t* workspaceSize,
                                        aclOpExecutor* const* executor) {
  const char* api = kDropoutGenMaskV2TensorApi;
  const auto& [shape, prob, seedTensor, offsetTensor, offset, probDataType, out] = args;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "shape", shape));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "seedTensor", seedTensor));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "offsetTensor", offsetTensor));
  GRADKIT_RETURN_IF_ERROR(checkGenMaskArguments(api, shape, prob, probDataType, out, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "seedTensor", *seedTensor, {ACL_INT32, ACL_INT64}));
  GRADKIT_RETURN_IF_ERROR(checkOneElement(api, "seedTensor", *seedTensor));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "offsetTensor", *offsetTensor, {ACL_INT64}));
  GRADKIT_RETURN_IF_ERROR(checkOneElement(api, "offsetTensor", *offsetTensor));
  GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(api, "out", *out, "seedTensor", *seedTensor));
  return checkNoPartialOverlap(api, "out", *out, "offsetTensor", *offsetTensor);
}

}  // namespace gradkit::ops
