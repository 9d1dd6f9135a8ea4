#include "opapi/tensor_copy.h"

#include <stdexcept>

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

}  // namespace gradkit
