#include "opapi/staged_tensor.h"

#include "base/dtype.h"
#include "opapi/tensor_copy.h"

namespace gradkit {

StagedTensor StagedTensor::plan(const aclTensor& view, bool stage, std::string_view name, WorkspaceBooking& booking) {
  StagedTensor tensor{view, {}};
  if (stage) tensor.staging = booking.bookArray(name, static_cast<uint64_t>(view.numel()), dtypeSize(view.dtype));
  return tensor;
}

const void* StagedTensor::read(void* workspace) const {
  if (!staged()) return view.firstElement();
  void* dense = staging.in(workspace);
  copyToContiguous(view, dense);
  return dense;
}

void* StagedTensor::target(void* workspace) const { return staged() ? staging.in(workspace) : view.firstElement(); }

void StagedTensor::writeBack(void* workspace) const {
  if (staged()) copyFromContiguous(staging.in(workspace), view);
}

}  // namespace gradkit
