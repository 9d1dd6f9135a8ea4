// Strided <-> dense copies. The view is first simplified (size-1 dims dropped, row-major-adjacent
// dims merged), then copied by the cheapest loop that fits: one memcpy, memcpy per row, or an
// element loop over the innermost dim; rows are split over the pool in chunks of ~kChunkBytes.
#include "core/strided.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/parallel.h"

namespace gradkit {
namespace {

// Bytes per parallel chunk: large enough that scheduling costs nothing, small enough that a few
// MiB already use every thread. Anything smaller than one chunk runs inline.
constexpr int64_t kChunkBytes = int64_t{256} << 10;

/** A view reduced to its essential dims: no size-1 dims, no two dims that could be one. */
struct SimpleView {
  std::vector<int64_t> dims;     // outermost first
  std::vector<int64_t> strides;  // in elements
};

SimpleView simplify(const aclTensor& view) {
  SimpleView out;
  for (int64_t d = 0; d < view.dim(); ++d) {
    const int64_t size = view.viewDims[d];
    const int64_t stride = view.strides[d];
    if (size == 1) continue;
    if (!out.dims.empty() && out.strides.back() == stride * size) {
      // The previous (outer) dim steps exactly over this one: fold it in.
      out.dims.back() *= size;
      out.strides.back() = stride;
      continue;
    }
    out.dims.push_back(size);
    out.strides.push_back(stride);
  }
  return out;
}

/** Copies `count` elements of `size` bytes between a strided side and a dense side. */
template <class Element>
void copyElements(const char* from, int64_t fromStep, char* to, int64_t toStep, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    Element value;
    std::memcpy(&value, from + i * fromStep, sizeof(Element));
    std::memcpy(to + i * toStep, &value, sizeof(Element));
  }
}

void copyRun(const char* from, int64_t fromStep, char* to, int64_t toStep, int64_t count, int64_t elementSize) {
  switch (elementSize) {
    case 1:
      copyElements<uint8_t>(from, fromStep, to, toStep, count);
      break;
    case 2:
      copyElements<uint16_t>(from, fromStep, to, toStep, count);
      break;
    case 4:
      copyElements<uint32_t>(from, fromStep, to, toStep, count);
      break;
    case 8:
      copyElements<uint64_t>(from, fromStep, to, toStep, count);
      break;
    default:
      for (int64_t i = 0; i < count; ++i) std::memcpy(to + i * toStep, from + i * fromStep, elementSize);
  }
}

/**
 * The one copy routine for both directions: dense row-major buffer <-> strided view starting at
 * `viewBase`. `toDense` picks the direction. `serial` forces one thread (a view that writes one
 * element several times must do so in a fixed order).
 */
void copyStrided(const aclTensor& view, char* viewBase, char* dense, bool toDense, bool serial) {
  const int64_t numel = view.numel();
  if (numel == 0) return;
  const int64_t elementSize = static_cast<int64_t>(dtypeSize(view.dtype));
  if (elementSize == 0) {
    throw std::invalid_argument("gradkit strided copy: dtype " + dtypeName(view.dtype) +
                                " has no byte size (expected a type of 1, 2, 4 or 8 bytes)");
  }
  const SimpleView simple = simplify(view);
  const int64_t rank = static_cast<int64_t>(simple.dims.size());

  // Whole view is one dense block (or a single element).
  if (rank == 0 || (rank == 1 && simple.strides[0] == 1)) {
    const int64_t bytes = numel * elementSize;
    const auto copyBytes = [&](int64_t begin, int64_t end) {
      char* target = toDense ? dense + begin : viewBase + begin;
      const char* source = toDense ? viewBase + begin : dense + begin;
      std::memcpy(target, source, static_cast<size_t>(end - begin));
    };
    if (serial) {
      copyBytes(0, bytes);
    } else {
      parallelFor(bytes, kChunkBytes, copyBytes);
    }
    return;
  }

  // Rows = the innermost simplified dim; the outer dims are walked as an odometer.
  const int64_t rowLength = simple.dims[rank - 1];
  const int64_t rowStride = simple.strides[rank - 1];
  const int64_t rowBytes = rowLength * elementSize;
  const int64_t rows = numel / rowLength;
  const int64_t outerRank = rank - 1;

  const auto copyRows = [&](int64_t begin, int64_t end) {
    // Decompose the first row index into outer coordinates and the matching view offset.
    std::vector<int64_t> index(static_cast<size_t>(outerRank), 0);
    int64_t offset = 0;
    int64_t rest = begin;
    for (int64_t d = outerRank - 1; d >= 0; --d) {
      index[d] = rest % simple.dims[d];
      rest /= simple.dims[d];
      offset += index[d] * simple.strides[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      char* viewRow = viewBase + offset * elementSize;
      char* denseRow = dense + row * rowBytes;
      if (rowStride == 1) {
        std::memcpy(toDense ? denseRow : viewRow, toDense ? viewRow : denseRow, static_cast<size_t>(rowBytes));
      } else if (toDense) {
        copyRun(viewRow, rowStride * elementSize, denseRow, elementSize, rowLength, elementSize);
      } else {
        copyRun(denseRow, elementSize, viewRow, rowStride * elementSize, rowLength, elementSize);
      }
      for (int64_t d = outerRank - 1; d >= 0; --d) {
        if (++index[d] < simple.dims[d]) {
          offset += simple.strides[d];
          break;
        }
        offset -= simple.strides[d] * (simple.dims[d] - 1);
        index[d] = 0;
      }
    }
  };
  if (serial) {
    copyRows(0, rows);
  } else {
    parallelFor(rows, std::max<int64_t>(1, kChunkBytes / rowBytes), copyRows);
  }
}

/** True when two elements of the view share an address through a zero stride. */
bool hasZeroStride(const aclTensor& view) {
  for (int64_t d = 0; d < view.dim(); ++d) {
    if (view.viewDims[d] > 1 && view.strides[d] == 0) return true;
  }
  return false;
}

}  // namespace

void copyToContiguous(const aclTensor& src, void* dst) {
  copyStrided(src, static_cast<char*>(src.firstElement()), static_cast<char*>(dst), true, false);
}

void copyFromContiguous(const void* src, const aclTensor& dst) {
  // A zero-stride (broadcast) destination receives several values per element: write in row-major
  // order on one thread so the last one wins deterministically.
  copyStrided(dst, static_cast<char*>(dst.firstElement()), static_cast<char*>(const_cast<void*>(src)), false,
              hasZeroStride(dst));
}

}  // namespace gradkit
