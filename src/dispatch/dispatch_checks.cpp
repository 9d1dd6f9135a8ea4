#include "dispatch/dispatch_checks.h"

#include <charconv>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "ops/dropout/kernels/mask_format.h"

namespace gradkit::dispatch {

std::string doubleText(double value) {
  char text[32];
  const auto written = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, written.ptr);
}

aclnnStatus checkDataTensor(std::string_view api, std::string_view name, const aclTensor& tensor) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, name, tensor, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}));
  return checkMaxRank(api, name, tensor, 8);
}

aclnnStatus checkLike(std::string_view api, std::string_view name, const aclTensor& tensor,
                      std::string_view referenceName, const aclTensor& reference) {
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, name, tensor, referenceName, reference));
  return checkSameDtype(api, name, tensor, referenceName, reference);
}

aclnnStatus checkPackedMask(std::string_view api, std::string_view name, const aclTensor* mask, int64_t numel) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, name, mask));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, name, *mask, {ACL_UINT8}));
  const int64_t bytes = ops::dropoutMaskBytes(numel);
  if (mask->numel() == bytes) return ACLNN_SUCCESS;
  return fail(
      ACLNN_ERR_PARAM_INVALID, api, name,
      std::to_string(bytes) + " elements (the packed mask of " + std::to_string(numel) + " elements: ceil(n/128)*16)",
      std::to_string(mask->numel()) + " elements, shape " + mask->shapeString());
}

aclnnStatus checkNotHolding(std::string_view api, std::string_view name, const DeviceTensor& holder,
                            std::initializer_list<const aclTensor*> inputs) {
  if (holder.data() == nullptr || holder.bytes() == 0) return ACLNN_SUCCESS;
  const auto begin = reinterpret_cast<uintptr_t>(holder.data());
  const uintptr_t last = begin + holder.bytes() - 1;
  for (const aclTensor* input : inputs) {
    if (input == nullptr || input->isEmpty()) continue;
    // The bytes the input's view reads, wherever its data pointer is (an offset may lead into the holder).
    const auto [first, final] = viewByteRange(*input);
    if (first <= last && begin <= final) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, name, "a DeviceTensor that does not hold the memory of an input",
                  "one that holds the memory viewed by an input (it would be released before being read)");
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::dispatch
