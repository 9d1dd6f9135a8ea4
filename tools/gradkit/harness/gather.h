// The harness's own strided-view walk (independent of src/core/strided): dense copies of views and the
// set of storage elements a view covers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradkit::cli {

/** A strided view's geometry, in elements. */
struct ViewGeometry {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/** Calls fn(storageIndex) for every element of the view, in row-major order of the view. */
template <class Fn>
void forEachStorageIndex(const ViewGeometry& view, Fn&& fn) {
  for (int64_t d : view.shape) {
    if (d == 0) return;
  }
  const size_t rank = view.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t at = view.offset;
  while (true) {
    fn(at);
    size_t d = rank;
    while (d > 0) {
      --d;
      if (++index[d] < view.shape[d]) {
        at += view.strides[d];
        break;
      }
      at -= view.strides[d] * (view.shape[d] - 1);
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 0) return;
  }
}

/** Copies the view's elements (each `elementSize` bytes) from `storage` into a dense row-major buffer. */
std::vector<unsigned char> gatherDense(const ViewGeometry& view, const unsigned char* storage, size_t elementSize);

/** For each of `storageElements` storage elements: whether the view reads or writes it. */
std::vector<bool> coveredElements(const ViewGeometry& view, int64_t storageElements);

}  // namespace gradkit::cli
