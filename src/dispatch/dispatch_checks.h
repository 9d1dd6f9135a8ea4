// Argument checks of the host dispatch (gradkit/native_dropout.h), on top of opapi/check.h.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "aclnn/aclnn_base.h"
#include "gradkit/device_tensor.h"
#include "opapi/tensor.h"

namespace gradkit::dispatch {

/** The shortest text that reads back as `value` ("0.5", "1.1764705882352942", "nan", "-inf"), for messages. */
std::string doubleText(double value);

/** 161002 unless `tensor` is FLOAT, FLOAT16 or BFLOAT16 with at most 8 dims. */
aclnnStatus checkDataTensor(std::string_view api, std::string_view name, const aclTensor& tensor);

/** 161002 unless `tensor` has the shape and dtype of `reference`. */
aclnnStatus checkLike(std::string_view api, std::string_view name, const aclTensor& tensor,
                      std::string_view referenceName, const aclTensor& reference);

/** 161001 for a null mask; 161002 unless it is UINT8 with exactly ceil(numel/128)*16 elements. */
aclnnStatus checkPackedMask(std::string_view api, std::string_view name, const aclTensor* mask, int64_t numel);

/**
 * 161002 when `holder` (a DeviceTensor about to be released and refilled) owns the memory one of `inputs` (null
 * entries skipped) views: releasing it would pull the data from under the queued work.
 */
aclnnStatus checkNotHolding(std::string_view api, std::string_view name, const DeviceTensor& holder,
                            std::initializer_list<const aclTensor*> inputs);

}  // namespace gradkit::dispatch
