// Strided <-> dense copies of aclTensor views: the aclTensor side of core/strided.h.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/strided.h"
#include "opapi/tensor.h"

namespace gradkit {

/** The raw view of a tensor; throws std::invalid_argument for a dtype without a byte size. */
StridedView stridedView(const aclTensor& tensor);

/** Copies the view `src` into the dense row-major buffer `dst` (numel * element size bytes). Parallel. */
inline void copyToContiguous(const aclTensor& src, void* dst) { copyToContiguous(stridedView(src), dst); }

/** Copies the dense row-major buffer `src` into the view `dst` (see core/strided.h for zero strides). */
inline void copyFromContiguous(const void* src, const aclTensor& dst) { copyFromContiguous(src, stridedView(dst)); }

/** forEachOffset (core/strided.h) over a tensor's view: element offsets from `data`, in row-major order. */
template <class Fn>
void forEachOffset(const aclTensor& view, Fn&& fn) {
  forEachOffset(view.viewDims, view.strides, view.offset, std::forward<Fn>(fn));
}

/**
 * The values of an INT32 tensor's view (any rank, strides and offset) in row-major order, widened to int64; empty for
 * a null tensor. For the int32 inputs the first phase reads (cu_seqlens, seqused, ...): gradkit's device memory is
 * host memory, and the check has already accepted the tensor's dtype and memory.
 */
std::vector<int64_t> readInt32Values(const aclTensor* tensor);

}  // namespace gradkit
