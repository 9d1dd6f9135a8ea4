// Strided <-> dense copies. The view is first simplified (size-1 dims dropped, row-major-adjacent
// dims merged), then copied by the cheapest loop that fits:
//  - one dense block: memcpy in parallel chunks;
//  - long unit-stride rows: memcpy per row;
//  - anything else: 2-D tiles over the innermost dim and a second dim (the one with the smallest
//    view stride, which makes transposes cache-friendly, else the next-inner dim), with typed
//    element copies. Work is split over the pool in chunks of about kChunkBytes.
#include "core/strided.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/parallel.h"

namespace gradkit {
namespace {

// Bytes per parallel chunk: large enough that scheduling costs nothing, small enough that a few
// MiB already use every thread. Anything smaller than one chunk runs inline.
constexpr int64_t kChunkBytes = int64_t{256} << 10;
// Rows shorter than this are copied by the tiled element loop rather than one memcpy each.
constexpr int64_t kMinMemcpyRowBytes = 256;
// Tile of the 2-D path: at most kTileCols columns of the innermost dim. When the view steps over
// memory along the columns (a transpose), tiles are kTileCols square, so that the lines a tile
// touches on the strided side stay few enough for the L1 ways even at power-of-two strides;
// otherwise a tile is a band of rows of about kTileElements elements.
constexpr int64_t kTileCols = 16;
constexpr int64_t kTileElements = 4096;

/** A view reduced to its essential dims: no size-1 dims, no two dims that could be one. */
struct SimpleView {
  std::vector<int64_t> dims;     // outermost first
  std::vector<int64_t> strides;  // in elements
};

SimpleView simplify(const StridedView& view) {
  SimpleView out;
  for (size_t d = 0; d < view.dims.size(); ++d) {
    const int64_t size = view.dims[d];
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

/** Byte steps of a 2-D block copy: element (i, j) goes from from + i*fromRow + j*fromCol to to + i*toRow + j*toCol. */
struct BlockSteps {
  int64_t fromRow, fromCol, toRow, toCol;
};

template <class Element>
void copyBlockTyped(const char* from, char* to, const BlockSteps& s, int64_t rows, int64_t cols) {
  for (int64_t j0 = 0; j0 < cols; j0 += kTileCols) {
    const int64_t j1 = std::min(cols, j0 + kTileCols);
    for (int64_t i = 0; i < rows; ++i) {
      const char* source = from + i * s.fromRow;
      char* target = to + i * s.toRow;
      for (int64_t j = j0; j < j1; ++j) {
        Element value;
        std::memcpy(&value, source + j * s.fromCol, sizeof(Element));
        std::memcpy(target + j * s.toCol, &value, sizeof(Element));
      }
    }
  }
}

void copyBlock(const char* from, char* to, const BlockSteps& s, int64_t rows, int64_t cols, int64_t elementSize) {
  if (s.fromCol == elementSize && s.toCol == elementSize) {  // short dense rows on both sides
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(to + i * s.toRow, from + i * s.fromRow, static_cast<size_t>(cols * elementSize));
    }
    return;
  }
  switch (elementSize) {
    case 1:
      copyBlockTyped<uint8_t>(from, to, s, rows, cols);
      break;
    case 2:
      copyBlockTyped<uint16_t>(from, to, s, rows, cols);
      break;
    case 4:
      copyBlockTyped<uint32_t>(from, to, s, rows, cols);
      break;
    case 8:
      copyBlockTyped<uint64_t>(from, to, s, rows, cols);
      break;
    default:
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          std::memcpy(to + i * s.toRow + j * s.toCol, from + i * s.fromRow + j * s.fromCol,
                      static_cast<size_t>(elementSize));
        }
      }
  }
}

/**
 * Walks the "outer" dims (all but the ones a kernel handles itself) as an odometer, keeping the
 * element offsets on the view side and the dense side in step.
 */
class OuterWalk {
 public:
  OuterWalk(std::vector<int64_t> dims, std::vector<int64_t> viewStrides, std::vector<int64_t> denseStrides)
      : dims_(std::move(dims)), viewStrides_(std::move(viewStrides)), denseStrides_(std::move(denseStrides)) {}

  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  /** Positions the walk at linear outer index `linear`. */
  void seek(int64_t linear) {
    index_.assign(dims_.size(), 0);
    viewOffset = denseOffset = 0;
    for (size_t d = dims_.size(); d-- > 0;) {
      index_[d] = linear % dims_[d];
      linear /= dims_[d];
      viewOffset += index_[d] * viewStrides_[d];
      denseOffset += index_[d] * denseStrides_[d];
    }
  }
  /** Steps to the next outer index in row-major order. */
  void next() {
    for (size_t d = dims_.size(); d-- > 0;) {
      if (++index_[d] < dims_[d]) {
        viewOffset += viewStrides_[d];
        denseOffset += denseStrides_[d];
        return;
      }
      viewOffset -= viewStrides_[d] * (dims_[d] - 1);
      denseOffset -= denseStrides_[d] * (dims_[d] - 1);
      index_[d] = 0;
    }
  }

  int64_t viewOffset = 0;   // elements
  int64_t denseOffset = 0;  // elements

 private:
  std::vector<int64_t> dims_, viewStrides_, denseStrides_;
  std::vector<int64_t> index_;
};

/** Row-major strides of the dense buffer for the simplified dims. */
std::vector<int64_t> denseStridesOf(const SimpleView& simple) {
  std::vector<int64_t> strides(simple.dims.size());
  int64_t step = 1;
  for (size_t d = simple.dims.size(); d-- > 0;) {
    strides[d] = step;
    step *= simple.dims[d];
  }
  return strides;
}

/** Chooses the second dim of the 2-D path: smallest nonzero view stride below the inner one, else the next-inner dim.
 */
size_t chooseRowDim(const SimpleView& simple) {
  const size_t inner = simple.dims.size() - 1;
  size_t best = inner - 1;
  int64_t bestStride = simple.strides[inner];
  for (size_t d = 0; d < inner; ++d) {
    const int64_t stride = simple.strides[d];
    if (stride != 0 && (bestStride == 0 || stride < bestStride)) {
      best = d;
      bestStride = stride;
    }
  }
  return best;
}

/**
 * The one copy routine for both directions: dense row-major buffer <-> strided view starting at
 * `viewBase`. `toDense` picks the direction. `serial` forces one thread (a view that writes one
 * element several times must do so in a fixed order).
 */
void copyStrided(const StridedView& view, char* viewBase, char* dense, bool toDense, bool serial) {
  const int64_t numel = view.numel();
  if (numel == 0) return;
  const int64_t elementSize = static_cast<int64_t>(view.elementSize);
  if (elementSize != 1 && elementSize != 2 && elementSize != 4 && elementSize != 8) {
    throw std::invalid_argument("gradkit strided copy: element size " + std::to_string(elementSize) +
                                " (expected 1, 2, 4 or 8 bytes)");
  }
  const auto run = [serial](int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (serial) {
      fn(0, n);
    } else {
      parallelFor(n, grain, fn);
    }
  };
  SimpleView simple = simplify(view);

  // Whole view is one dense block (or a single element).
  if (simple.dims.empty() || (simple.dims.size() == 1 && simple.strides[0] == 1)) {
    run(numel * elementSize, kChunkBytes, [&](int64_t begin, int64_t end) {
      char* target = toDense ? dense + begin : viewBase + begin;
      const char* source = toDense ? viewBase + begin : dense + begin;
      std::memcpy(target, source, static_cast<size_t>(end - begin));
    });
    return;
  }
  if (simple.dims.size() == 1) {  // one strided dim: a single row of the 2-D path
    simple.dims.insert(simple.dims.begin(), 1);
    simple.strides.insert(simple.strides.begin(), 0);
  }
  const std::vector<int64_t> denseStrides = denseStridesOf(simple);
  const size_t inner = simple.dims.size() - 1;
  const int64_t cols = simple.dims[inner];

  // Long unit-stride rows: one memcpy per row, the rest of the dims walked outside.
  if (simple.strides[inner] == 1 && cols * elementSize >= kMinMemcpyRowBytes) {
    const int64_t rowBytes = cols * elementSize;
    OuterWalk outer({simple.dims.begin(), simple.dims.end() - 1}, {simple.strides.begin(), simple.strides.end() - 1},
                    {denseStrides.begin(), denseStrides.end() - 1});
    run(outer.count(), std::max<int64_t>(1, kChunkBytes / rowBytes), [&](int64_t begin, int64_t end) {
      OuterWalk walk = outer;
      walk.seek(begin);
      for (int64_t row = begin; row < end; ++row, walk.next()) {
        char* viewRow = viewBase + walk.viewOffset * elementSize;
        char* denseRow = dense + walk.denseOffset * elementSize;
        std::memcpy(toDense ? denseRow : viewRow, toDense ? viewRow : denseRow, static_cast<size_t>(rowBytes));
      }
    });
    return;
  }

  // Broadcast writes: plain row-major order, one row at a time, so the last write wins.
  if (serial) {
    OuterWalk walk({simple.dims.begin(), simple.dims.end() - 1}, {simple.strides.begin(), simple.strides.end() - 1},
                   {denseStrides.begin(), denseStrides.end() - 1});
    const int64_t viewColStep = simple.strides[inner] * elementSize;
    const BlockSteps steps =
        toDense ? BlockSteps{0, viewColStep, 0, elementSize} : BlockSteps{0, elementSize, 0, viewColStep};
    const int64_t count = walk.count();
    walk.seek(0);
    for (int64_t row = 0; row < count; ++row, walk.next()) {
      char* viewRow = viewBase + walk.viewOffset * elementSize;
      char* denseRow = dense + walk.denseOffset * elementSize;
      copyBlock(toDense ? viewRow : denseRow, toDense ? denseRow : viewRow, steps, 1, cols, elementSize);
    }
    return;
  }

  // 2-D tiles over (rowDim, inner); the other dims are walked outside.
  const size_t rowDim = chooseRowDim(simple);
  const int64_t rows = simple.dims[rowDim];
  std::vector<int64_t> outerDims, outerView, outerDense;
  for (size_t d = 0; d < inner; ++d) {
    if (d == rowDim) continue;
    outerDims.push_back(simple.dims[d]);
    outerView.push_back(simple.strides[d]);
    outerDense.push_back(denseStrides[d]);
  }
  const OuterWalk outer(outerDims, outerView, outerDense);
  const bool transposing = simple.strides[inner] != 1;
  const int64_t tileRows = transposing ? kTileCols : std::max<int64_t>(1, kTileElements / std::min(cols, kTileCols));
  const int64_t rowBlocks = (rows + tileRows - 1) / tileRows;
  const int64_t viewRowStep = simple.strides[rowDim] * elementSize;
  const int64_t viewColStep = simple.strides[inner] * elementSize;
  const int64_t denseRowStep = denseStrides[rowDim] * elementSize;
  const BlockSteps steps = toDense ? BlockSteps{viewRowStep, viewColStep, denseRowStep, elementSize}
                                   : BlockSteps{denseRowStep, elementSize, viewRowStep, viewColStep};
  const int64_t itemBytes = std::min(rows, tileRows) * cols * elementSize;
  run(outer.count() * rowBlocks, std::max<int64_t>(1, kChunkBytes / itemBytes), [&](int64_t begin, int64_t end) {
    OuterWalk walk = outer;
    walk.seek(begin / rowBlocks);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t block = item % rowBlocks;
      if (item != begin && block == 0) walk.next();
      const int64_t row0 = block * tileRows;
      const int64_t blockRows = std::min(tileRows, rows - row0);
      char* viewStart = viewBase + walk.viewOffset * elementSize + row0 * viewRowStep;
      char* denseStart = dense + walk.denseOffset * elementSize + row0 * denseRowStep;
      copyBlock(toDense ? viewStart : denseStart, toDense ? denseStart : viewStart, steps, blockRows, cols,
                elementSize);
    }
  });
}

/** True when two elements of the view share an address through a zero stride. */
bool hasZeroStride(const StridedView& view) {
  for (size_t d = 0; d < view.dims.size(); ++d) {
    if (view.dims[d] > 1 && view.strides[d] == 0) return true;
  }
  return false;
}

}  // namespace

int64_t StridedView::numel() const {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

void copyToContiguous(const StridedView& src, void* dst) {
  copyStrided(src, static_cast<char*>(src.first), static_cast<char*>(dst), true, false);
}

void copyFromContiguous(const void* src, const StridedView& dst) {
  // A zero-stride (broadcast) destination receives several values per element: write in row-major
  // order on one thread so the last one wins deterministically.
  copyStrided(dst, static_cast<char*>(dst.first), static_cast<char*>(const_cast<void*>(src)), false,
              hasZeroStride(dst));
}

}  // namespace gradkit
