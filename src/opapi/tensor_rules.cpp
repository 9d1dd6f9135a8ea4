#include "opapi/tensor_rules.h"

#include <cstddef>
#include <string>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "runtime/memory.h"
#include "runtime/registry.h"
#include "runtime/runtime.h"

namespace gradkit {
namespace {

// NPU-internal layouts upstream rejects (spec mhc.md 2.8 step 10, 3.6 step 7); nullptr for the public ones.
const char* privateFormatName(aclFormat format) {
  switch (format) {
    case ACL_FORMAT_NC1HWC0:
      return "NC1HWC0";
    case ACL_FORMAT_FRACTAL_Z:
      return "FRACTAL_Z";
    case ACL_FORMAT_NC1HWC0_C04:
      return "NC1HWC0_C04";
    case ACL_FORMAT_FRACTAL_NZ:
      return "FRACTAL_NZ";
    case ACL_FORMAT_NDC1HWC0:
      return "NDC1HWC0";
    case ACL_FRACTAL_Z_3D:
      return "FRACTAL_Z_3D";
    default:
      return nullptr;
  }
}

std::string rankText(const aclTensor& tensor) { return std::to_string(tensor.dim()) + " dims " + tensor.shapeString(); }

// aclCreateTensor's tracked-memory rules, asked again at call time: the memory may have been freed since.
aclnnStatus checkFitsAllocation(std::string_view api, std::string_view name, const aclTensor& tensor) {
  if (tensor.isEmpty() || tensor.data == nullptr) return ACLNN_SUCCESS;
  if (const auto freed = rt::findFreedAllocation(tensor.data)) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, name, "data in live memory",
                rt::pointerString(tensor.data) + ", inside the " + std::to_string(freed->size) + "-byte block at " +
                    rt::pointerString(freed->base) + " that was freed");
  }
  const auto allocation = rt::findAllocation(tensor.data);
  if (!allocation) return ACLNN_SUCCESS;  // untracked host memory: the caller vouches for it
  uint64_t elements = 1;
  for (int64_t dim : tensor.storageDims) elements *= static_cast<uint64_t>(dim);  // fit in int64 at creation
  const uint64_t bytes = elements * dtypeSize(tensor.dtype);
  const auto room =
      static_cast<uint64_t>(allocation->base + allocation->size - static_cast<const unsigned char*>(tensor.data));
  if (bytes <= room) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name,
              "a storage that fits in the live allocation behind its data (" + std::to_string(room) +
                  " bytes left in the " + std::to_string(allocation->size) + "-byte allocation at " +
                  rt::pointerString(allocation->base) + ")",
              "storage " + dimsString(tensor.storageDims) + " of " + dtypeName(tensor.dtype) + " = " +
                  std::to_string(bytes) + " bytes");
}

// `b` (an output) may not share a byte with `a` (`what`: "the output" or "the input"), not even as the same view.
aclnnStatus checkDisjoint(std::string_view api, const NamedTensor& a, const char* what, const NamedTensor& b) {
  if (a.tensor->isEmpty() || b.tensor->isEmpty()) return ACLNN_SUCCESS;
  const auto [aFirst, aLast] = viewByteRange(*a.tensor);
  const auto [bFirst, bLast] = viewByteRange(*b.tensor);
  if (aLast < bFirst || bLast < aFirst) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, b.name,
              std::string("memory that does not overlap ") + what + " " + std::string(a.name),
              "bytes overlapping " + std::string(a.name) + " (" + std::string(b.name) + " " + b.tensor->shapeString() +
                  " strides " + dimsString(b.tensor->strides) + ", " + std::string(a.name) + " " +
                  a.tensor->shapeString() + " strides " + dimsString(a.tensor->strides) + ")");
}

}  // namespace

aclnnStatus checkRankIn(std::string_view api, std::string_view name, const aclTensor& tensor,
                        std::initializer_list<int64_t> ranks, std::string_view why) {
  std::string expected;
  for (int64_t rank : ranks) {
    if (tensor.dim() == rank) return ACLNN_SUCCESS;
    if (!expected.empty()) expected += " or ";
    expected += std::to_string(rank);
  }
  expected += " dims";
  if (!why.empty()) expected.append(" (").append(why).append(")");
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, rankText(tensor));
}

aclnnStatus checkShapeIs(std::string_view api, std::string_view name, const aclTensor& tensor,
                         const std::vector<int64_t>& expected, std::string_view why) {
  if (tensor.viewDims == expected) return ACLNN_SUCCESS;
  std::string text = "shape " + dimsString(expected);
  if (!why.empty()) text.append(" (").append(why).append(")");
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, text, "shape " + tensor.shapeString());
}

aclnnStatus checkNotPrivateFormat(std::string_view api, std::string_view name, const aclTensor& tensor) {
  const char* format = privateFormatName(tensor.format);
  if (format == nullptr) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, "a public format (ND, NCHW, ...; private NPU formats are rejected)",
              std::string("format ") + format);
}

aclnnStatus checkEachNotNull(std::string_view api, const std::vector<NamedTensor>& tensors) {
  for (const NamedTensor& t : tensors) GRADKIT_RETURN_IF_ERROR(checkNotNull(api, t.name, t.tensor));
  return ACLNN_SUCCESS;
}

aclnnStatus checkEachDtypeIn(std::string_view api, const std::vector<NamedTensor>& tensors,
                             std::initializer_list<aclDataType> allowed) {
  for (const NamedTensor& t : tensors) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, t.name, *t.tensor, allowed));
  return ACLNN_SUCCESS;
}

aclnnStatus checkEachHasData(std::string_view api, const std::vector<NamedTensor>& tensors) {
  for (const NamedTensor& t : tensors) {
    if (t.tensor == nullptr || t.tensor->isEmpty() || t.tensor->data != nullptr) continue;
    return fail(ACLNN_ERR_PARAM_INVALID, api, t.name, "a non-null data pointer (the tensor has elements)",
                "nullptr data with shape " + t.tensor->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkNotPrivateFormats(std::string_view api, const std::vector<NamedTensor>& tensors) {
  for (const NamedTensor& t : tensors) {
    if (t.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(api, t.name, *t.tensor));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkMemoryRules(std::string_view api, const std::vector<NamedTensor>& inputs,
                             const std::vector<NamedTensor>& outputs) {
  for (const auto* list : {&inputs, &outputs}) {
    for (const NamedTensor& named : *list) {
      if (named.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkFitsAllocation(api, named.name, *named.tensor));
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    const NamedTensor& out = outputs[o];
    if (out.tensor == nullptr) continue;
    GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(api, out.name, *out.tensor));
    for (const NamedTensor& in : inputs) {
      if (in.tensor == nullptr) continue;
      if (!out.inPlaceWith.empty() && out.inPlaceWith == in.name) {
        GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(api, out.name, *out.tensor, in.name, *in.tensor));
      } else {
        GRADKIT_RETURN_IF_ERROR(checkDisjoint(api, in, "the input", out));
      }
    }
    for (size_t p = 0; p < o; ++p) {
      if (outputs[p].tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkDisjoint(api, outputs[p], "the output", out));
    }
  }
  return ACLNN_SUCCESS;
}

std::vector<int64_t> shapeWithTail(const std::vector<int64_t>& lead, const std::vector<int64_t>& tail) {
  std::vector<int64_t> shape = lead;
  shape.insert(shape.end(), tail.begin(), tail.end());
  return shape;
}

}  // namespace gradkit
