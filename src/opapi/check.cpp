#include "opapi/check.h"

#include <string>

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

}  // namespace gradkit
