// Argument validation of aclnnDropoutGenMask[V2]GetWorkspaceSize, in upstream's order (spec 1.2.1).
#pragma once

#include <cstdint>
#include <optional>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutGenMaskApi = "aclnnDropoutGenMask";
inline constexpr const char* kDropoutGenMaskV2Api = "aclnnDropoutGenMaskV2";
inline constexpr const char* kDropoutGenMaskV2TensorApi = "aclnnDropoutGenMaskV2Tensor";

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded): shape/out null
 * (161001); workspaceSize/executor null (161001); a negative dim or an element count beyond int64 (161002);
 * out not UINT8; prob outside [0, 1] or NaN; probDataType (V2 only, when given) not FLOAT, FLOAT16 or
 * BFLOAT16; numel(out) != ceil(n / 128) * 16 (161002). `api` names the entry point in messages.
 */
aclnnStatus checkDropoutGenMask(const char* api, const aclIntArray* shape, double prob,
                                std::optional<aclDataType> probDataType, const aclTensor* out,
                                const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/**
 * aclnnDropoutGenMaskV2Tensor: seedTensor / offsetTensor null (161001), then every rule of checkDropoutGenMask
 * (V2), then (161002) seedTensor not INT32 or INT64, seedTensor not exactly one element, offsetTensor not INT64,
 * offsetTensor not exactly one element (any rank <= 8 holding one element, 0-d included).
 */
aclnnStatus checkDropoutGenMaskV2Tensor(const aclIntArray* shape, double prob, const aclTensor* seedTensor,
                                        const aclTensor* offsetTensor, aclDataType probDataType, const aclTensor* out,
                                        const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** The element count of a checked shape (1 for []). */
int64_t dropoutShapeNumel(const aclIntArray& shape);

}  // namespace gradkit::ops
