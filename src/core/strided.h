// Copies between strided views and dense buffers, for ops that compute on contiguous data.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace gradkit {

/** Copies the view `src` into the dense row-major buffer `dst` (numel * element size bytes). Parallel. */
void copyToContiguous(const aclTensor& src, void* dst);

/** Copies the dense row-major buffer `src` into the view `dst`. Parallel. */
void copyFromContiguous(const void* src, const aclTensor& dst);

/**
 * Calls fn(elementOffset) for every element of a view in row-major order, where elementOffset is
 * offset + sum(index_d * stride_d) (in elements). Sequential; for golden code and tests.
 */
template <class Fn>
void forEachOffset(const aclTensor& view, Fn&& fn) {
  const int64_t n = view.numel();
  const int64_t rank = view.dim();
  if (n == 0) return;
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t at = view.offset;
  for (int64_t k = 0; k < n; ++k) {
    fn(at);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < view.viewDims[d]) {
        at += view.strides[d];
        break;
      }
      at -= view.strides[d] * (view.viewDims[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace gradkit
