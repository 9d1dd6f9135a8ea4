// Argument checks shared by every op's GetWorkspaceSize. Each returns ACLNN_SUCCESS or records a message
// ("<api>: argument '<name>': expected ..., given ...") and returns the aclnn code.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit {

/** 161001 when `pointer` is null. */
aclnnStatus checkNotNull(std::string_view api, std::string_view name, const void* pointer);

/** 161002 when the tensor's dtype is not one of `allowed`. */
aclnnStatus checkDtypeIn(std::string_view api, std::string_view name, const aclTensor& tensor,
                         std::initializer_list<aclDataType> allowed);

/** 161002 when `tensor` does not have the dtype of `reference` (named `referenceName`). */
aclnnStatus checkSameDtype(std::string_view api, std::string_view name, const aclTensor& tensor,
                           std::string_view referenceName, const aclTensor& reference);

/** 161002 when the tensor has more than `maxRank` dims. */
aclnnStatus checkMaxRank(std::string_view api, std::string_view name, const aclTensor& tensor, int64_t maxRank);

/** 161002 when `tensor`'s view shape differs from `reference`'s. */
aclnnStatus checkSameShape(std::string_view api, std::string_view name, const aclTensor& tensor,
                           std::string_view referenceName, const aclTensor& reference);

/**
 * The overlap rule of every operator (docs/reliability.md), so that results never depend on the thread count:
 * 161002 when `out` may write one memory location twice (a zero stride, or strides that let two elements meet),
 * naming `name`. Empty views pass.
 */
aclnnStatus checkNoInternalOverlap(std::string_view api, std::string_view name, const aclTensor& out);

/**
 * 161002 naming both tensors when the bytes `out` writes and the bytes `input` reads overlap, unless the two are
 * exactly the same view (same first element, dtype, dims and strides: an in-place call). Empty views pass.
 */
aclnnStatus checkNoPartialOverlap(std::string_view api, std::string_view outName, const aclTensor& out,
                                  std::string_view inputName, const aclTensor& input);

/** The [first, last] byte addresses a non-empty view touches (its first element's first byte to its last's last). */
std::pair<uintptr_t, uintptr_t> viewByteRange(const aclTensor& view);

/** Returns from the enclosing function when a check fails. */
#define GRADKIT_RETURN_IF_ERROR(expr)        \
  do {                                       \
    const aclnnStatus gradkitStatus_ = expr; \
    if (gradkitStatus_ != ACLNN_SUCCESS) {   \
      return gradkitStatus_;                 \
    }                                        \
  } while (0)

}  // namespace gradkit
