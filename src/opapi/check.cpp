#include "opapi/check.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"

namespace gradkit {

aclnnStatus checkNotNull(std::string_view api, std::string_view name, const void* pointer) {
  if (pointer != nullptr) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_NULLPTR, api, name, "a non-null pointer", "nullptr");
}

aclnnStatus checkDtypeIn(std::string_view api, std::string_view name, const aclTensor& tensor,
                         std::initializer_list<aclDataType> allowed) {
  for (aclDataType dtype : allowed) {
    if (tensor.dtype == dtype) return ACLNN_SUCCESS;
  }
  std::string expected = "dtype in {";
  const char* separator = "";
  for (aclDataType dtype : allowed) {
    expected.append(separator).append(dtypeName(dtype));
    separator = ", ";
  }
  expected += "}";
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, "dtype " + dtypeName(tensor.dtype));
}

aclnnStatus checkSameDtype(std::string_view api, std::string_view name, const aclTensor& tensor,
                           std::string_view referenceName, const aclTensor& reference) {
  if (tensor.dtype == reference.dtype) return ACLNN_SUCCESS;
  std::string expected = "dtype " + dtypeName(reference.dtype) + " (the dtype of " + std::string(referenceName) + ")";
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, "dtype " + dtypeName(tensor.dtype));
}

aclnnStatus checkMaxRank(std::string_view api, std::string_view name, const aclTensor& tensor, int64_t maxRank) {
  if (tensor.dim() <= maxRank) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, "at most " + std::to_string(maxRank) + " dims",
              std::to_string(tensor.dim()) + " dims " + tensor.shapeString());
}

aclnnStatus checkSameShape(std::string_view api, std::string_view name, const aclTensor& tensor,
                           std::string_view referenceName, const aclTensor& reference) {
  if (tensor.viewDims == reference.viewDims) return ACLNN_SUCCESS;
  std::string expected = "shape " + reference.shapeString() + " (the shape of " + std::string(referenceName) + ")";
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, "shape " + tensor.shapeString());
}

// Strides are >= 0: aclCreateTensor enforces it.
std::pair<uintptr_t, uintptr_t> viewByteRange(const aclTensor& view) {
  const auto first = reinterpret_cast<uintptr_t>(view.firstElement());
  uintptr_t span = 0;
  for (int64_t d = 0; d < view.dim(); ++d) {
    span += static_cast<uintptr_t>(view.viewDims[d] - 1) * static_cast<uintptr_t>(view.strides[d]);
  }
  const uintptr_t size = dtypeSize(view.dtype);
  return {first, first + span * size + size - 1};
}

aclnnStatus checkNoInternalOverlap(std::string_view api, std::string_view name, const aclTensor& out) {
  if (out.isEmpty()) return ACLNN_SUCCESS;
  // Sorted by stride, each dim must step over everything the smaller ones span (the dense-or-gapped layouts);
  // anything else may place two elements on one address.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
  for (int64_t d = 0; d < out.dim(); ++d) {
    if (out.viewDims[d] > 1) dims.emplace_back(out.strides[d], out.viewDims[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t spanned = 0;  // elements reached by the smaller dims
  for (const auto& [stride, size] : dims) {
    if (stride <= spanned) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, name,
                  "an output whose elements are all at different addresses (no zero or overlapping strides)",
                  "shape " + out.shapeString() + " with strides " + dimsString(out.strides));
    }
    spanned = stride * (size - 1) + spanned;  // cannot overflow: the view fits its storage
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkNoPartialOverlap(std::string_view api, std::string_view outName, const aclTensor& out,
                                  std::string_view inputName, const aclTensor& input) {
  if (out.isEmpty() || input.isEmpty()) return ACLNN_SUCCESS;
  const bool sameView = out.firstElement() == input.firstElement() && out.dtype == input.dtype &&
                        out.viewDims == input.viewDims && out.strides == input.strides;
  if (sameView) return ACLNN_SUCCESS;
  const auto [outFirst, outLast] = viewByteRange(out);
  const auto [inFirst, inLast] = viewByteRange(input);
  if (outLast < inFirst || inLast < outFirst) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, outName,
              std::string("memory that does not overlap ") + std::string(inputName) +
                  " (or is exactly the same view, for an in-place call)",
              "bytes overlapping " + std::string(inputName) + " (" + std::string(outName) + " " + out.shapeString() +
                  " strides " + dimsString(out.strides) + ", " + std::string(inputName) + " " + input.shapeString() +
                  " strides " + dimsString(input.strides) + ")");
}

}  // namespace gradkit
