// Storage addressing of the sparse flash MLA golden (see the header).
#include "golden/sparse_flash_mla_layouts.h"

#include <stdexcept>

namespace gradkit::golden {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("golden::sparseFlashMla layouts: " + what);
}

size_t at(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

SmlaLayout smlaLayoutOf(const std::string& name) {
  if (name == "BSND") return SmlaLayout::BSND;
  if (name == "TND") return SmlaLayout::TND;
  if (name == "PA_BBND") return SmlaLayout::PA_BBND;
  throw std::invalid_argument("golden::sparseFlashMla layouts: unknown layout '" + name + "'");
}

int64_t smlaBatchCount(const SmlaSide& side) {
  if (side.layout == SmlaLayout::TND)
    return side.cuSeqlens.empty() ? 0 : static_cast<int64_t>(side.cuSeqlens.size()) - 1;
  return side.batch;
}

int64_t smlaUsedLength(const SmlaSide& side, int64_t b) {
  int64_t capacity = side.tokens;  // BSND
  if (side.layout == SmlaLayout::TND) {
    require(b + 1 < static_cast<int64_t>(side.cuSeqlens.size()), "TND cuSeqlens has no entry for the batch");
    const int64_t start = side.cuSeqlens[at(b)], end = side.cuSeqlens[at(b + 1)];
    require(start >= 0 && start <= end && end <= side.tokens, "TND cuSeqlens must be non-decreasing within T");
    capacity = end - start;
  } else if (side.layout == SmlaLayout::PA_BBND) {
    capacity = side.blockTableCols * side.tokens;
  }
  if (side.seqUsed.empty()) return capacity;
  require(b < static_cast<int64_t>(side.seqUsed.size()), "seqUsed has no entry for the batch");
  const int64_t used = side.seqUsed[at(b)];
  require(used >= 0 && used <= capacity, "seqUsed must be in [0, the batch's length]");
  return used;
}

std::vector<int64_t> smlaRowMap(const SmlaSide& side, int64_t batch) {
  std::vector<int64_t> rows;
  const int64_t stride = side.blockStride > 0 ? side.blockStride : side.tokens;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t used = smlaUsedLength(side, b);
    for (int64_t j = 0; j < used; ++j) {
      if (side.layout == SmlaLayout::BSND) {
        rows.push_back(b * side.tokens + j);
      } else if (side.layout == SmlaLayout::TND) {
        rows.push_back(side.cuSeqlens[at(b)] + j);
      } else {
        const int64_t entry = b * side.blockTableCols + j / side.tokens;
        require(entry < static_cast<int64_t>(side.blockTable.size()), "the block table is too small");
        const int64_t block = side.blockTable[at(entry)];
        require(block >= 0, "a used block id is negative");
        rows.push_back(block * stride + j % side.tokens);
      }
    }
  }
  return rows;
}

SmlaLayoutRows smlaLayoutRows(const SmlaSide& q, const SmlaSide& ori, const SmlaSide* cmp,
                              const std::vector<int32_t>& residual) {
  const int64_t batch = smlaBatchCount(q);
  require(residual.empty() || static_cast<int64_t>(residual.size()) == batch, "residual must be empty or [B]");
  SmlaLayoutRows r;
  r.batches.resize(at(batch));
  for (int64_t b = 0; b < batch; ++b) {
    SmlaBatch& s = r.batches[at(b)];
    s.s1 = smlaUsedLength(q, b);
    s.s2 = smlaUsedLength(ori, b);
    s.cmp = cmp ? smlaUsedLength(*cmp, b) : 0;
    s.residual = residual.empty() ? 0 : residual[at(b)];
  }
  r.q = smlaRowMap(q, batch);
  r.ori = smlaRowMap(ori, batch);
  if (cmp) r.cmp = smlaRowMap(*cmp, batch);
  return r;
}

template <class T>
std::vector<T> smlaGatherRows(const T* layout, const std::vector<int64_t>& rows, int64_t width) {
  std::vector<T> logical(rows.size() * at(width));
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t e = 0; e < width; ++e) logical[r * at(width) + at(e)] = layout[rows[r] * width + e];
  return logical;
}

template <class T>
std::vector<T> smlaScatterRows(const std::vector<T>& logical, const std::vector<int64_t>& rows, int64_t width,
                               int64_t layoutRows) {
  require(logical.size() == rows.size() * at(width), "logical rows do not match the row map");
  std::vector<T> layout(at(layoutRows * width), T(0));
  for (size_t r = 0; r < rows.size(); ++r) {
    require(rows[r] >= 0 && rows[r] < layoutRows, "a row lies outside the layout tensor");
    for (int64_t e = 0; e < width; ++e) layout[at(rows[r] * width + e)] += logical[r * at(width) + at(e)];
  }
  return layout;
}

template std::vector<double> smlaGatherRows(const double*, const std::vector<int64_t>&, int64_t);
template std::vector<float> smlaGatherRows(const float*, const std::vector<int64_t>&, int64_t);
template std::vector<int32_t> smlaGatherRows(const int32_t*, const std::vector<int64_t>&, int64_t);
template std::vector<double> smlaScatterRows(const std::vector<double>&, const std::vector<int64_t>&, int64_t, int64_t);
template std::vector<float> smlaScatterRows(const std::vector<float>&, const std::vector<int64_t>&, int64_t, int64_t);

}  // namespace gradkit::golden
