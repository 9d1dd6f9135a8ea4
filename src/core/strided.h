// Copies between strided views and dense buffers, for ops that compute on contiguous data. Raw memory only:
// opapi/tensor_copy.h makes a StridedView from an aclTensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradkit {

/** A strided view over raw memory. */
struct StridedView {
  void* first = nullptr;         // address of logical element 0
  std::vector<int64_t> dims;     // outermost first
  std::vector<int64_t> strides;  // in elements, one per dim (any sign, 0 for broadcast)
  size_t elementSize = 0;        // bytes: 1, 2, 4 or 8

  /** Product of the dims (1 for 0 dims, 0 when any dim is 0). */
  int64_t numel() const;
};

/** Copies the view `src` into the dense row-major buffer `dst` (numel * elementSize bytes). Parallel. */
void copyToContiguous(const StridedView& src, void* dst);

/**
 * Copies the dense row-major buffer `src` into the view `dst`. Parallel, except that a view with a zero stride
 * (several logical elements on one address) is written in row-major order on one thread, so the last write wins.
 */
void copyFromContiguous(const void* src, const StridedView& dst);

/**
 * Calls fn(elementOffset) for every element of a view in row-major order, where elementOffset is
 * offset + sum(index_d * stride_d) (in elements). Sequential; for golden code and tests.
 */
template <class Fn>
void forEachOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t offset, Fn&& fn) {
  int64_t n = 1;
  for (int64_t dim : dims) n *= dim;
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (n == 0) return;
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t at = offset;
  for (int64_t k = 0; k < n; ++k) {
    fn(at);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) {
        at += strides[d];
        break;
      }
      at -= strides[d] * (dims[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace gradkit
