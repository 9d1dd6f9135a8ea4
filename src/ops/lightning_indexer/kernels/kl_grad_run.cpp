// The SparseLightningIndexerKLLossGrad run (kl_grad_kernel.h): the dk tasks over the query rows, each row's gather,
// products, softmax and gradients, then dk as the task-ordered sum of the partials, then the rows no batch uses.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/int_math.h"
#include "core/parallel.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/lightning_indexer/kernels/kl_grad_kernel.h"
#include "ops/lightning_indexer/kernels/li_visibility.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kD = kKlHeadDim;
constexpr int64_t kBlock = kKlSlotBlock;
/** A dk task takes at least this many rows (fewer rows per task would only multiply the partials). */
constexpr int64_t kMinTaskRows = 16;
/** At most this many dk tasks (partials) per batch. */
constexpr int64_t kMaxChunks = 16;
/** The partials of a call stay under this many bytes where the shape allows (at least one per batch). */
constexpr int64_t kPartialBudgetBytes = int64_t{256} << 20;
/** Key rows per task of the dk reduction. */
constexpr int64_t kReduceRows = 64;

/** Bytes of one product operand element: BF16 bits stay 16-bit, FLOAT16 is widened to fp32. */
size_t operandBytes(aclDataType dtype) { return dtype == ACL_BF16 ? 2 : 4; }

/** A worker's scratch, carved from its slot (with a null base: only measured). */
struct RowScratch {
  int32_t* slot;      // [slots] the slot position of each valid entry
  int32_t* key;       // [slots] its key (0-based in the batch)
  void* keys;         // [slots, 128] gathered keys (operand type)
  float* query;       // [N1, 128] the row's q widened (FLOAT16 only)
  float* scores;      // [N1, slots] S, then R
  float* logits;      // [slots] I, then y
  float* gradLogits;  // [slots] dI
  void* gradScores;   // [N1, slots] dS (operand type)
  float* dq;          // [N1, 128]
  float* keyGrad;     // [kBlock, 128]
  void* gemm;         // the largest product's scratch
};

template <class Arena>
RowScratch carve(Arena& arena, const KlGradProblem& p, const KlGradSchedule& s) {
  const size_t op = operandBytes(p.dtype);
  const int64_t n1 = p.heads, slots = s.slots;
  size_t gemmBytes = 0;
  for (const TileGemm* g : {&s.scores, &s.weightGrad, &s.queryGrad, &s.keyGrad}) {
    gemmBytes = std::max(gemmBytes, g->scratchBytes());
  }
  RowScratch r{};
  r.slot = arena.template take<int32_t>(slots);
  r.key = arena.template take<int32_t>(slots);
  r.keys = arena.template take<char>(static_cast<int64_t>(static_cast<size_t>(slots * kD) * op));
  r.query = arena.template take<float>(p.dtype == ACL_BF16 ? 0 : n1 * kD);
  r.scores = arena.template take<float>(n1 * slots);
  r.logits = arena.template take<float>(slots);
  r.gradLogits = arena.template take<float>(slots);
  r.gradScores = arena.template take<char>(static_cast<int64_t>(static_cast<size_t>(n1 * slots) * op));
  r.dq = arena.template take<float>(n1 * kD);
  r.keyGrad = arena.template take<float>(kBlock * kD);
  r.gemm = arena.template take<char>(static_cast<int64_t>(gemmBytes));
  return r;
}

const char* at(const void* base, int64_t element, size_t bytes) {
  return static_cast<const char*>(base) + static_cast<size_t>(element) * bytes;
}
char* at(void* base, int64_t element, size_t bytes) {
  return static_cast<char*>(base) + static_cast<size_t>(element) * bytes;
}

/** The row's valid entries (slot order) into r.slot / r.key; their count. */
int64_t validEntries(const KlGradProblem& p, const KlGradBatch& b, int64_t i, const int32_t* indices, RowScratch& r) {
  const int64_t visible = liVisibleKeys(p.maskMode, b.kRows, p.cmpRatio, b.residual, b.qRows, i);
  const int64_t limit = std::min(p.topk, visible);
  int64_t n = 0;
  for (int64_t j = 0; j < limit; ++j) {
    const int64_t idx = indices[j];
    if (idx >= 0 && idx < visible) {
      r.slot[n] = static_cast<int32_t>(j);
      r.key[n] = static_cast<int32_t>(idx);
      ++n;
    }
  }
  return n;
}

/**
 * y over the n entries into r.logits, dI into r.gradLogits (zeros up to `width`), y into softmaxOut. The two sums run
 * in double (the common factor 1 / s of a row's y would otherwise carry the sequential fp32 sum's error into every dw,
 * which cancels over the slots); y_j = fp32(e_j / s) and dI_j = fp32(y_j P - p_j) are each rounded once.
 */
void softmaxGrad(const float* target, int64_t n, int64_t width, RowScratch& r, float* softmaxOut) {
  float top = r.logits[0];
  for (int64_t j = 1; j < n; ++j) top = r.logits[j] > top ? r.logits[j] : top;
  double sum = 0.0, mass = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    r.logits[j] = std::exp(r.logits[j] - top);
    sum += r.logits[j];
  }
  for (int64_t j = 0; j < n; ++j) mass += target[r.slot[j]];
  for (int64_t j = 0; j < n; ++j) {
    const float y = static_cast<float>(static_cast<double>(r.logits[j]) / sum);
    softmaxOut[r.slot[j]] = y;
    r.gradLogits[j] = static_cast<float>(static_cast<double>(y) * mass - static_cast<double>(target[r.slot[j]]));
  }
  std::fill(r.gradLogits + n, r.gradLogits + width, 0.0f);
}

/** Row i of batch b: dq, dw, softmaxOut of the row; its dk contributions added into `partial` ([kRows, 128]). */
void gradRow(const KlGradProblem& p, const KlGradSchedule& s, const KlGradIo& io, const KlGradBatch& b, int64_t i,
             RowScratch& r, float* partial) {
  const KlGradKernels& k = *s.kernels;
  const int64_t t = b.qRow0 + i, n1 = p.heads, slots = s.slots;
  const size_t op = operandBytes(p.dtype);
  float* softmaxOut = io.softmaxOut + t * p.topk;
  float* dw = io.dw + t * n1;
  void* dq = at(io.dq, t * n1 * kD, 2);
  std::fill(softmaxOut, softmaxOut + p.topk, 0.0f);
  const int64_t n = validEntries(p, b, i, io.indices + t * p.topk, r);
  if (n == 0) {
    std::fill(dw, dw + n1, 0.0f);
    std::memset(dq, 0, static_cast<size_t>(n1 * kD) * 2);
    return;
  }
  const int64_t blocks = ceilDiv(n, kBlock), width = blocks * kBlock;
  for (int64_t j = 0; j < n; ++j) {  // the keys, widened for FLOAT16
    const void* key = at(io.k, (b.kRow0 + r.key[j]) * kD, 2);
    if (p.dtype == ACL_BF16) {
      std::memcpy(at(r.keys, j * kD, 2), key, kD * 2);
    } else {
      k.widen(p.dtype, key, kD, reinterpret_cast<float*>(r.keys) + j * kD);
    }
  }
  std::memset(at(r.keys, n * kD, op), 0, static_cast<size_t>((width - n) * kD) * op);
  const void* query = at(io.q, t * n1 * kD, 2);
  if (p.dtype != ACL_BF16) {
    k.widen(p.dtype, query, n1 * kD, r.query);
    query = r.query;
  }
  const float* w = io.w + t * n1;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    k.gemm(s.scores, query, at(r.keys, blk * kBlock * kD, op), r.scores + blk * kBlock, r.gemm);
  }
  k.relu(r.scores, n1, width, slots);
  k.logits(w, r.scores, n1, n, slots, r.logits);
  softmaxGrad(io.target + t * p.topk, n, width, r, softmaxOut);
  std::fill(dw, dw + n1, 0.0f);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    k.gemm(s.weightGrad, r.gradLogits + blk * kBlock, r.scores + blk * kBlock, dw, r.gemm);
  }
  k.gradScores(p.dtype, r.scores, w, r.gradLogits, n1, width, slots, r.gradScores);
  std::fill(r.dq, r.dq + n1 * kD, 0.0f);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    k.gemm(s.queryGrad, at(r.gradScores, blk * kBlock, op), at(r.keys, blk * kBlock * kD, op), r.dq, r.gemm);
  }
  k.narrow(p.dtype, r.dq, n1 * kD, dq);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    k.gemm(s.keyGrad, at(r.gradScores, blk * kBlock, op), query, r.keyGrad, r.gemm);
    const int64_t end = std::min(n, (blk + 1) * kBlock);
    for (int64_t j = blk * kBlock; j < end; ++j) {
      k.add(r.keyGrad + (j - blk * kBlock) * kD, kD, partial + static_cast<int64_t>(r.key[j]) * kD);
    }
  }
}

TileGemm product(int64_t m, int64_t n, int64_t k, bool transA, bool transB, int64_t lda, int64_t ldb, int64_t ldc,
                 aclDataType input, GemmSums sums, float beta) {
  TileGemmShape shape;
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.transA = transA;
  shape.transB = transB;
  shape.lda = lda;
  shape.ldb = ldb;
  shape.ldc = ldc;
  shape.inputType = input;
  shape.sums = input == ACL_BF16 ? sums : GemmSums::Sequential;
  shape.beta = beta;
  return TileGemm(shape);
}

void zeroRows(const KlGradProblem& p, const KlGradIo& io) {
  const int64_t n1 = p.heads;
  for (const auto& [begin, end] : p.idleQueryRows) {
    std::memset(at(io.dq, begin * n1 * kD, 2), 0, static_cast<size_t>((end - begin) * n1 * kD) * 2);
    std::fill(io.dw + begin * n1, io.dw + end * n1, 0.0f);
    std::fill(io.softmaxOut + begin * p.topk, io.softmaxOut + end * p.topk, 0.0f);
  }
  for (const auto& [begin, end] : p.idleKeyRows) {
    std::memset(at(io.dk, begin * kD, 2), 0, static_cast<size_t>((end - begin) * kD) * 2);
  }
}

}  // namespace

int64_t klGradAssignPartials(KlGradProblem& p) {
  int64_t keyRows = 0;
  for (const KlGradBatch& b : p.batches) keyRows += b.qRows > 0 ? b.kRows : 0;
  const int64_t rowBytes = kD * static_cast<int64_t>(sizeof(float));
  const int64_t cap =
      keyRows == 0 ? kMaxChunks : std::clamp<int64_t>(kPartialBudgetBytes / (keyRows * rowBytes), 1, kMaxChunks);
  int64_t floats = 0;
  for (KlGradBatch& b : p.batches) {
    b.chunks = b.qRows > 0 && b.kRows > 0 ? std::min(cap, ceilDiv(b.qRows, kMinTaskRows)) : 0;
    b.partial0 = floats;
    floats += b.chunks * b.kRows * kD;
  }
  return floats;
}

int64_t klGradPartialFloats(const KlGradProblem& p) {
  int64_t floats = 0;
  for (const KlGradBatch& b : p.batches) floats += b.chunks * b.kRows * kD;
  return floats;
}

KlGradSchedule klGradSchedule(const KlGradProblem& p, const KlGradKernels& kernels, int threads) {
  KlGradSchedule s;
  s.kernels = &kernels;
  s.slots = roundUp(std::max<int64_t>(p.topk, 1), kBlock);
  s.workers = std::max(1, threads);
  const aclDataType input = p.dtype == ACL_BF16 ? ACL_BF16 : ACL_FLOAT;
  const int64_t n1 = p.heads, slots = s.slots;
  // S block [N1, 64] (ld slots) = q [N1, 128] . keys block^T (stored [64, 128])
  s.scores = product(n1, kBlock, kD, false, true, kD, kD, slots, input, p.sums, 0.0f);
  // dw [1, N1] += dI block [1, 64] . R block^T (R stored [N1, 64], ld slots)
  s.weightGrad = product(1, n1, kBlock, false, true, kBlock, slots, n1, ACL_FLOAT, GemmSums::Sequential, 1.0f);
  // dq [N1, 128] += dS block [N1, 64] (ld slots) . keys block [64, 128]
  s.queryGrad = product(n1, kD, kBlock, false, false, slots, kD, kD, input, p.sums, 1.0f);
  // c [64, 128] = dS block^T (dS stored [N1, 64], ld slots) . q [N1, 128]
  s.keyGrad = product(kBlock, kD, n1, true, false, slots, kD, kD, input, p.sums, 0.0f);
  FaArena measure(nullptr);
  carve(measure, p, s);
  s.slotBytes = measure.used();
  for (size_t b = 0; b < p.batches.size(); ++b) {
    for (int64_t c = 0; c < p.batches[b].chunks; ++c) s.tasks.push_back({static_cast<int64_t>(b), c});
  }
  // Costliest first (rows times the slots a row can use), so that no worker starts a long task at the end.
  const auto cost = [&](const KlGradTask& task) {
    const KlGradBatch& b = p.batches[static_cast<size_t>(task.batch)];
    return ceilDiv(b.qRows - task.chunk, b.chunks) * std::min(p.topk, b.kRows);
  };
  std::stable_sort(s.tasks.begin(), s.tasks.end(),
                   [&](const KlGradTask& x, const KlGradTask& y) { return cost(x) > cost(y); });
  return s;
}

void klGradRun(const KlGradProblem& p, const KlGradSchedule& s, const KlGradIo& io) {
  const int64_t count = static_cast<int64_t>(s.tasks.size());
  std::atomic<int64_t> next{0};
  parallelFor(s.workers, 1, [&](int64_t begin, int64_t end) {
    for (int64_t worker = begin; worker < end; ++worker) {
      FaArena arena(static_cast<char*>(io.scratch) + static_cast<size_t>(worker) * s.slotBytes);
      RowScratch r = carve(arena, p, s);
      for (int64_t t = next.fetch_add(1); t < count; t = next.fetch_add(1)) {
        const KlGradTask& task = s.tasks[static_cast<size_t>(t)];
        const KlGradBatch& b = p.batches[static_cast<size_t>(task.batch)];
        float* partial = io.partials + b.partial0 + task.chunk * b.kRows * kD;
        std::fill(partial, partial + b.kRows * kD, 0.0f);
        for (int64_t i = task.chunk; i < b.qRows; i += b.chunks) gradRow(p, s, io, b, i, r, partial);
      }
    }
  });
  // Batches with used queries but no used keys still own their query rows: zeros (no valid slot).
  for (const KlGradBatch& b : p.batches) {
    if (b.chunks > 0 || b.qRows == 0) continue;
    const int64_t n1 = p.heads;
    std::memset(at(io.dq, b.qRow0 * n1 * kD, 2), 0, static_cast<size_t>(b.qRows * n1 * kD) * 2);
    std::fill(io.dw + b.qRow0 * n1, io.dw + (b.qRow0 + b.qRows) * n1, 0.0f);
    std::fill(io.softmaxOut + b.qRow0 * p.topk, io.softmaxOut + (b.qRow0 + b.qRows) * p.topk, 0.0f);
  }
  // dk: each used key row the task-ordered sum of its batch's partials (zeros for a batch without tasks).
  struct Range {
    int64_t batch, first, end;
  };
  std::vector<Range> ranges;
  for (size_t b = 0; b < p.batches.size(); ++b) {
    for (int64_t first = 0; first < p.batches[b].kRows; first += kReduceRows) {
      ranges.push_back({static_cast<int64_t>(b), first, std::min(p.batches[b].kRows, first + kReduceRows)});
    }
  }
  parallelFor(static_cast<int64_t>(ranges.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const Range& range = ranges[static_cast<size_t>(r)];
      const KlGradBatch& b = p.batches[static_cast<size_t>(range.batch)];
      void* out = at(io.dk, (b.kRow0 + range.first) * kD, 2);
      const int64_t rows = range.end - range.first;
      if (b.chunks == 0) {
        std::memset(out, 0, static_cast<size_t>(rows * kD) * 2);
      } else {
        s.kernels->sumNarrow(p.dtype, io.partials + b.partial0 + range.first * kD, b.chunks, b.kRows * kD, rows * kD,
                             out);
      }
    }
  });
  zeroRows(p, io);
}

}  // namespace gradkit::kernels
