// Argument validation of aclnnDropoutGenMask[V2]GetWorkspaceSize, in upstream's order (spec 1.2.1).
#pragma once

#include <cstdint>
#include <optional>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutGenMaskApi = "aclnnDropoutGenMask";
inline constexpr const char* kDropoutGenMaskV2Api = "aclnnDropoutGenMaskV2";
inline constexpr const char* kDropoutGenMaskV2TensorApi = "aclnnDropoutGenMaskV2Tensor";

/** The arguments of one aclnnDropoutGenMask call, as the caller gave them. */
struct DropoutGenMaskArgs {
  const aclIntArray* shape;
  double prob;
  int64_t seed;
  int64_t offset;
  aclTensor* out;
};

/** The arguments of one aclnnDropoutGenMaskV2 call, as the caller gave them. */
struct DropoutGenMaskV2Args {
  const aclIntArray* shape;
  double prob;
  int64_t seed;
  int64_t offset;
  int probDataType;  // the caller's aclDataType as an int: an unknown value is never loaded as the enum
  aclTensor* out;
};

/** The arguments of one aclnnDropoutGenMaskV2Tensor call, as the caller gave them. */
struct DropoutGenMaskV2TensorArgs {
  const aclIntArray* shape;
  double prob;
  const aclTensor* seedTensor;
  const aclTensor* offsetTensor;
  int64_t offset;
  int probDataType;  // the caller's aclDataType as an int: an unknown value is never loaded as the enum
  aclTensor* out;
};

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded): shape/out null
 * (161001); workspaceSize/executor null (161001); a negative dim or an element count beyond int64 (161002);
 * out not UINT8; prob outside [0, 1] or NaN; numel(out) != ceil(n / 128) * 16 (161002).
 */
aclnnStatus checkDropoutGenMask(const DropoutGenMaskArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor);

/** aclnnDropoutGenMaskV2: the rules of checkDropoutGenMask, and probDataType (after prob) FLOAT, FLOAT16 or BFLOAT16.
 */
aclnnStatus checkDropoutGenMaskV2(const DropoutGenMaskV2Args& args, const uint64_t* workspaceSize,
                                  aclOpExecutor* const* executor);

/**
 * aclnnDropoutGenMaskV2Tensor: seedTensor / offsetTensor null (161001), then every rule of checkDropoutGenMaskV2,
 * then (161002) seedTensor not INT32 or INT64, seedTensor not exactly one element, offsetTensor not INT64,
 * offsetTensor not exactly one element (any rank <= 8 holding one element, 0-d included).
 */
aclnnStatus checkDropoutGenMaskV2Tensor(const DropoutGenMaskV2TensorArgs& args, const uint64_t* workspaceSize,
                                        aclOpExecutor* const* executor);

/** The element count of a checked shape (1 for []). */
int64_t dropoutShapeNumel(const aclIntArray& shape);

}  // namespace gradkit::ops
