// The schedule and the run of LightningIndexerV2 (liv2_kernel.h). A task is a block of query rows of one batch: its
// products with every key the block's last row sees, tile by tile (TileGemm: [rows * N1, 128] x [128, keys]), the
// scores of each row (the table's `scores`), then each row's selection. A row's bits come from its own q, w and the
// keys alone, so the split into tasks and workers changes nothing.
#include <algorithm>
#include <atomic>

#include "core/parallel.h"
#include "core/tile_gemm.h"
#include "ops/lightning_indexer/kernels/li_visibility.h"
#include "ops/lightning_indexer/kernels/liv2_kernel.h"
#include "ops/lightning_indexer/kernels/liv2_topk.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kProductRows = 512;  // rows * N1 per product: a [512, 128] fp32 dot tile stays in L2
constexpr int64_t kMaxBlockRows = 64;
constexpr int64_t kKeyTile = 128;
constexpr size_t kAlign = 64;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

int64_t visibleKeys(const LiV2Problem& p, const LiV2KernelBatch& b, int64_t row) {
  return liVisibleKeys(p.maskMode, b.usedKeys, p.cmpRatio, b.residual, b.usedRows, row);
}

bool halfOperands(const LiV2Problem& p) { return p.dtype == ACL_FLOAT16; }

gradkit::GemmShape productShape(const LiV2Problem& p, int64_t m, int64_t n, int64_t ldc) {
  gradkit::GemmShape g;
  g.m = m;
  g.n = n;
  g.k = kLiV2Dim;
  g.transB = true;  // k rows [keys, 128]
  g.lda = kLiV2Dim;
  g.ldb = kLiV2Dim;
  g.ldc = ldc;
  g.inputType = halfOperands(p) ? ACL_FLOAT : ACL_BF16;
  g.sums = halfOperands(p) ? gradkit::GemmSums::Sequential : p.sums;
  return g;
}

int64_t scoreStride(const LiV2Schedule& s) { return std::max<int64_t>(16, (s.maxKeys + 15) / 16 * 16); }

// One worker's scratch, carved in a fixed order from its slot.
struct Slot {
  float* dots = nullptr;    // [blockRows * N1, keyTile]
  float* scores = nullptr;  // [blockRows, scoreStride]
  float* qWide = nullptr;   // FLOAT16: [blockRows * N1, 128]
  float* kWide = nullptr;   // FLOAT16: [keyTile, 128]
  void* gemm = nullptr;
  LiV2TopkScratch topk;
};

struct Carver {
  char* base;
  size_t used = 0;
  template <class T>
  T* take(size_t count) {
    T* at = base == nullptr ? nullptr : reinterpret_cast<T*>(base + used);
    used += aligned(count * sizeof(T));
    return at;
  }
};

Slot carve(const LiV2Problem& p, const LiV2Schedule& s, void* base, size_t* bytes) {
  Carver c{static_cast<char*>(base)};
  Slot slot;
  const auto products = static_cast<size_t>(s.blockRows * p.heads);
  slot.dots = c.take<float>(products * static_cast<size_t>(s.keyTile));
  slot.scores = c.take<float>(static_cast<size_t>(s.blockRows * scoreStride(s)));
  if (halfOperands(p)) {
    slot.qWide = c.take<float>(products * kLiV2Dim);
    slot.kWide = c.take<float>(static_cast<size_t>(s.keyTile * kLiV2Dim));
  }
  slot.gemm = c.take<unsigned char>(liv2GemmScratchBytes(productShape(p, s.blockRows * p.heads, s.keyTile, s.keyTile)));
  const auto keys = static_cast<size_t>(std::max<int64_t>(s.maxKeys, 1));
  slot.topk.items = c.take<uint64_t>(keys);
  slot.topk.spare = c.take<uint64_t>(keys);
  if (bytes != nullptr) *bytes = c.used;
  return slot;
}

void runTask(const LiV2Problem& p, const LiV2Schedule& s, const LiV2Task& task, const Slot& slot) {
  const LiV2Kernels& kernels = *s.kernels;
  const LiV2KernelBatch& b = p.batches[static_cast<size_t>(task.batch)];
  const int64_t firstRow = b.firstRow + task.firstRow;
  const int64_t m = task.rows * p.heads;
  const int64_t reach = visibleKeys(p, b, task.firstRow + task.rows - 1);  // the block's last row sees the most
  const int64_t lds = scoreStride(s);
  if (reach > 0) {
    const auto* q = static_cast<const uint16_t*>(p.q) + firstRow * p.heads * kLiV2Dim;
    const void* a = q;
    if (halfOperands(p)) {
      kernels.widenHalf(q, m * kLiV2Dim, slot.qWide);
      a = slot.qWide;
    }
    for (int64_t t0 = 0; t0 < reach; t0 += s.keyTile) {
      const int64_t keys = std::min(s.keyTile, reach - t0);
      const auto* k = static_cast<const uint16_t*>(p.k) + (b.firstKey + t0) * kLiV2Dim;
      const void* bOperand = k;
      if (halfOperands(p)) {
        kernels.widenHalf(k, keys * kLiV2Dim, slot.kWide);
        bOperand = slot.kWide;
      }
      kernels.gemm(productShape(p, m, keys, s.keyTile), a, bOperand, slot.dots, slot.gemm);
      kernels.scores(slot.dots, s.keyTile, p.w + firstRow * p.heads, task.rows, p.heads, keys, slot.scores + t0, lds);
    }
  }
  for (int64_t r = 0; r < task.rows; ++r) {
    const int64_t row = firstRow + r;
    const int64_t count = visibleKeys(p, b, task.firstRow + r);
    const int64_t offset = p.offsets != nullptr ? p.offsets[row] : 0;
    float* values = p.values != nullptr ? p.values + row * p.topk : nullptr;
    liv2SelectTopk(slot.scores + r * lds, count, p.topk, offset, p.indices + row * p.topk, values, slot.topk);
  }
}

}  // namespace

size_t liv2GemmScratchBytes(const gradkit::GemmShape& shape) { return gradkit::TileGemm(shape).scratchBytes(); }

LiV2Schedule liv2Schedule(const LiV2Problem& p, int threads, const LiV2Kernels& kernels) {
  LiV2Schedule s;
  s.kernels = &kernels;
  s.threads = std::max(1, threads);
  s.blockRows = std::clamp<int64_t>(kProductRows / p.heads, 1, kMaxBlockRows);
  s.keyTile = kKeyTile;
  int64_t cursor = 0;  // rows before it are owned by a batch or listed as empty
  for (size_t bi = 0; bi < p.batches.size(); ++bi) {
    const LiV2KernelBatch& b = p.batches[bi];
    if (b.firstRow > cursor) s.emptyRows.push_back({cursor, b.firstRow - cursor});
    cursor = std::max(cursor, b.firstRow + b.rows);
    if (b.rows > b.usedRows) s.emptyRows.push_back({b.firstRow + b.usedRows, b.rows - b.usedRows});
    for (int64_t r0 = 0; r0 < b.usedRows; r0 += s.blockRows) {
      const int64_t rows = std::min(s.blockRows, b.usedRows - r0);
      const int64_t reach = visibleKeys(p, b, r0 + rows - 1);
      s.maxKeys = std::max(s.maxKeys, reach);
      s.tasks.push_back({static_cast<int64_t>(bi), r0, rows, rows * (reach * (p.heads + 1) + 1)});
    }
  }
  if (p.queryRows > cursor) s.emptyRows.push_back({cursor, p.queryRows - cursor});
  // Costliest first, so that no worker starts a long task at the end; the order changes who runs a task, not its bits.
  std::stable_sort(s.tasks.begin(), s.tasks.end(),
                   [](const LiV2Task& x, const LiV2Task& y) { return x.cost > y.cost; });
  s.threads = static_cast<int>(std::min<int64_t>(s.threads, std::max<size_t>(s.tasks.size(), 1)));
  carve(p, s, nullptr, &s.slotBytes);
  return s;
}

size_t liv2ScratchBytes(const LiV2Schedule& s) {
  return s.tasks.empty() ? 0 : static_cast<size_t>(s.threads) * s.slotBytes;
}

void liv2Run(const LiV2Problem& p, const LiV2Schedule& s, void* scratch) {
  for (const LiV2RowRange& range : s.emptyRows) {
    for (int64_t row = range.first; row < range.first + range.count; ++row) {
      liv2WriteEmptyRow(p.topk, p.indices + row * p.topk, p.values != nullptr ? p.values + row * p.topk : nullptr);
    }
  }
  if (s.tasks.empty()) return;
  std::atomic<int64_t> next{0};
  const auto total = static_cast<int64_t>(s.tasks.size());
  parallelFor(s.threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t worker = begin; worker < end; ++worker) {
      const Slot slot = carve(p, s, static_cast<char*>(scratch) + static_cast<size_t>(worker) * s.slotBytes, nullptr);
      for (int64_t t = next.fetch_add(1); t < total; t = next.fetch_add(1)) {
        runTask(p, s, s.tasks[static_cast<size_t>(t)], slot);
      }
    }
  });
}

}  // namespace gradkit::kernels
