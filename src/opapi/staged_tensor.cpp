#include "opapi/staged_tensor.h"

#include <algorithm>

#include "base/dtype.h"
#include "opapi/tensor_copy.h"

namespace gradkit {

StagedTensor StagedTensor::plan(const aclTensor& view, bool stage, std::string_view name, WorkspaceBooking& booking) {
  StagedTensor tensor{view, {}};
  if (stage) tensor.staging = booking.bookArray(name, static_cast<uint64_t>(view.numel()), dtypeSize(view.dtype));
  return tensor;
}

StagedTensor StagedTensor::planLeading(const aclTensor& view, int64_t count, std::string_view name,
                                       WorkspaceBooking& booking) {
  aclTensor leading = view;
  // Drop leading dims while the first `count` elements lie in their index 0; then cut dim 0 to the rows that hold
  // them. The cut keeps more than `count` only when count > inner, by fewer than inner elements: < 2 * count.
  while (leading.dim() > 1) {
    int64_t inner = 1;
    for (int64_t d = 1; d < leading.dim(); ++d) inner *= leading.viewDims[d];
    if (count > inner) {
      leading.viewDims[0] = count / inner + (count % inner != 0 ? 1 : 0);
      break;
    }
    leading.viewDims.erase(leading.viewDims.begin());
    leading.strides.erase(leading.strides.begin());
  }
  if (leading.dim() == 1) leading.viewDims[0] = std::min(leading.viewDims[0], count);
  return planUnlessDense(leading, name, booking);
}

StagedTensor StagedTensor::planUnlessDense(const aclTensor& view, std::string_view name, WorkspaceBooking& booking) {
  return plan(view, !view.isContiguous(), name, booking);
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
