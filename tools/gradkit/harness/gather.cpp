#include "harness/gather.h"

#include <cstring>

namespace gradkit::cli {

std::vector<unsigned char> gatherDense(const ViewGeometry& view, const unsigned char* storage, size_t elementSize) {
  int64_t n = 1;
  for (int64_t d : view.shape) n *= d;
  std::vector<unsigned char> dense(static_cast<size_t>(n) * elementSize);
  size_t at = 0;
  forEachStorageIndex(view, [&](int64_t index) {
    std::memcpy(dense.data() + at, storage + static_cast<size_t>(index) * elementSize, elementSize);
    at += elementSize;
  });
  return dense;
}

std::vector<bool> coveredElements(const ViewGeometry& view, int64_t storageElements) {
  std::vector<bool> covered(static_cast<size_t>(storageElements), false);
  forEachStorageIndex(view, [&](int64_t index) { covered[static_cast<size_t>(index)] = true; });
  return covered;
}

}  // namespace gradkit::cli
