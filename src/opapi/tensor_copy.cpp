#include "opapi/tensor_copy.h"

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "base/dtype.h"

namespace gradkit {

StridedView stridedView(const aclTensor& tensor) {
  const size_t elementSize = dtypeSize(tensor.dtype);
  if (elementSize == 0) {
    throw std::invalid_argument("gradkit strided copy: dtype " + dtypeName(tensor.dtype) +
                                " has no byte size (expected a type of 1, 2, 4 or 8 bytes)");
  }
  return StridedView{tensor.firstElement(), tensor.viewDims, tensor.strides, elementSize};
}

std::vector<int64_t> readInt32Values(const aclTensor* tensor) {
  std::vector<int64_t> values;
  if (tensor == nullptr) return values;
  values.reserve(static_cast<size_t>(tensor->numel()));
  const auto* data = static_cast<const int32_t*>(tensor->data);
  forEachOffset(*tensor, [&](int64_t offset) { values.push_back(data[offset]); });
  return values;
}

}  // namespace gradkit
