// One tensor of a plan as its kernels see it: dense row-major elements. A view the kernels cannot use in place
// is staged through a booked workspace region: an input is copied in before the run, an output copied out after.
#pragma once

#include <string_view>

#include "opapi/tensor.h"
#include "opapi/workspace.h"

namespace gradkit {

struct StagedTensor {
  aclTensor view;           // copy of the caller's view
  WorkspaceRegion staging;  // booked when the view is staged

  /** Plans `view`; when `stage`, books numel * element size bytes under `name`. */
  static StagedTensor plan(const aclTensor& view, bool stage, std::string_view name, WorkspaceBooking& booking);
  /** plan(view, stage = the view is not dense): the kernels read and write dense views in place. */
  static StagedTensor planUnlessDense(const aclTensor& view, std::string_view name, WorkspaceBooking& booking);
  /**
   * Plans the first `count` elements of `view` in row-major order (a kernel reads no further): a view of at least
   * `count` and fewer than 2 * count of them (its leading dims cut), staged when not dense. So a stride-0 or oversized
   * input costs the workspace what the kernel reads, not what its descriptor claims. 0 < count <= view.numel().
   */
  static StagedTensor planLeading(const aclTensor& view, int64_t count, std::string_view name,
                                  WorkspaceBooking& booking);

  bool staged() const { return staging.booked(); }
  /** An input's dense elements: the view's own memory, or its staged copy (made now). */
  const void* read(void* workspace) const;
  /** Where an output's dense elements are written: the view's own memory, or its staging region. */
  void* target(void* workspace) const;
  /** Copies a staged output from its region into the view (nothing when it was written in place). */
  void writeBack(void* workspace) const;
};

}  // namespace gradkit
