#include "opapi/int32_values.h"

namespace gradkit {

std::vector<int64_t> readInt32Values(const aclTensor* tensor) {
  std::vector<int64_t> values;
  if (tensor == nullptr) return values;
  const int64_t count = tensor->numel();
  const auto* first = static_cast<const int32_t*>(tensor->firstElement());
  const int64_t stride = tensor->dim() == 0 ? 1 : tensor->strides[0];
  values.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values.push_back(first[i * stride]);
  return values;
}

std::vector<int64_t> readInt32Matrix(const aclTensor& tensor, int64_t rows, int64_t cols) {
  std::vector<int64_t> values;
  const auto* first = static_cast<const int32_t*>(tensor.firstElement());
  values.reserve(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) values.push_back(first[r * tensor.strides[0] + c * tensor.strides[1]]);
  }
  return values;
}

}  // namespace gradkit
