// Helpers of the SparseFlashMla values tests: one problem described by a Spec (layouts, per-batch lengths, modes,
// index lists, views), its tensors in layout form (each a view over storage this file fills, the gaps between view
// elements holding NaN so that a read of them shows), the logical problem of golden/sparse_flash_mla.h built from the
// same storage through golden/sparse_flash_mla_layouts.h, and both phases through the C API or through the plan with
// a chosen tile path, kernel table and thread count.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/gemm_shape.h"
#include "core/tile_path.h"
#include "golden/sparse_flash_mla.h"
#include "golden/sparse_flash_mla_layouts.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/smla_test_util.h"
#include "ops/sparse_attention/smla_args.h"

namespace gradkit::test::smla {

/** How a row's index list is drawn (its first K slots; the window is the row's ori window or [0, cmpThr)). */
enum class IndexKind {
  Valid,    // min(K, window size) distinct entries of the window in random order, then -1
  Hostile,  // each slot: a window entry, a duplicate of an earlier slot, an entry outside the window (below it, past
            // it, past the batch's rows), or a negative entry that ends the list with valid-looking entries after it
  Uniform,  // uniform over [0, the batch's rows), as upstream's example draws them (entries past the window dropped)
};

/** One problem. Per-batch vectors have B entries (qRows decides B). */
struct Spec {
  aclDataType dtype = ACL_BF16;
  int64_t n1 = 4;
  std::string layoutQ = "TND", layoutKv = "TND";
  std::vector<int64_t> qRows = {3, 5};  // TND: rows per batch; BSND: all equal (S1)
  std::vector<int64_t> qUsed;           // seqused_q (empty: absent)
  int64_t extraQRows = 0;               // TND rows after cuSeqlensQ[B]
  std::vector<int64_t> oriRows = {9,
                                  12};  // rows per batch the tensor holds (BSND: all equal; paged: rounded to blocks)
  std::vector<int64_t> oriUsed;         // seqused_ori_kv (empty: absent)
  std::vector<int64_t> cmpRows;         // empty: no cmpKv
  std::vector<int64_t> cmpUsed;
  std::vector<int64_t> residual;                                // cmp_residual_kv (empty: absent)
  int64_t blockSize = 4, spareBlocks = 3, blockStrideRows = 0;  // paged KV; stride 0: dense blocks
  int64_t ratio = 1, oriMode = 4, winLeft = 127, winRight = 0, cmpMode = 0;
  int64_t oriK = 0, cmpK = 0;  // index lists (0: dense part)
  IndexKind oriKind = IndexKind::Valid, cmpKind = IndexKind::Valid;
  bool oriLengths = false, cmpLengths = false;  // topk lengths passed (random in [0, K], at most the mask's count)
  // Explicit lists and lengths instead of drawn ones: K (or 1) entries per computed row, rows in logical order.
  std::vector<int32_t> oriList, cmpList, oriLengthList, cmpLengthList;
  std::vector<float> sinks;             // [n1]; empty: uniform in [-1, 1]
  double scale = 0.044194173824159216;  // 1 / sqrt(512)
  bool returnLse = true;
  bool lsePlaceholder = false;  // returnLse false: pass a [T, n1, 1] tensor anyway (it must keep its bytes)
  bool stridedQ = false, stridedOut = false;  // q rows padded; out (and lse) in another order / every stride doubled
  bool stridedKv = false;                     // KV rows padded (read in place)
  bool kvElementStride = false;               // KV with every stride doubled (staged by the plan)
  bool stridedSmall = false;                  // every INT32 tensor and sinks with doubled strides (staged)
  double qAmplitude = 2.0;                    // q uniform in [-a, a], KV in [-1, 1]
  uint32_t seed = 1;

  int64_t batch() const { return static_cast<int64_t>(qRows.size()); }
  bool bsndQ() const { return layoutQ == "BSND"; }
  bool paged() const { return layoutKv == "PA_BBND"; }
  bool hasCmp() const { return !cmpRows.empty(); }
};

/** Elements of one view over its own storage: dense values, their storage offsets, the storage. */
template <class T>
struct Stored {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  std::vector<T> storage;

  /** Storage offset of dense element e. */
  int64_t at(int64_t e) const {
    int64_t o = offset;
    for (size_t k = shape.size(); k-- > 0;) {
      o += (e % shape[k]) * strides[k];
      e /= shape[k];
    }
    return o;
  }
  int64_t numel() const { return product(shape); }
  /** Fills the storage with `fill`, then places `dense` at the view's elements. */
  void place(const std::vector<T>& dense, T fill) {
    int64_t reach = offset + 1;
    for (size_t k = 0; k < shape.size(); ++k) reach += (shape[k] - 1) * strides[k];
    if (numel() == 0) reach = offset;  // an empty view (no ori rows) holds nothing
    storage.assign(static_cast<size_t>(reach), fill);
    for (int64_t e = 0; e < numel(); ++e) storage[static_cast<size_t>(at(e))] = dense[static_cast<size_t>(e)];
  }
  std::vector<T> dense() const {
    std::vector<T> values(static_cast<size_t>(numel()));
    for (int64_t e = 0; e < numel(); ++e) values[static_cast<size_t>(e)] = storage[static_cast<size_t>(at(e))];
    return values;
  }
  /** True when every storage element outside the view still holds `fill`. */
  bool gapsHold(T fill) const {
    std::vector<char> inView(storage.size(), 0);
    for (int64_t e = 0; e < numel(); ++e) inView[static_cast<size_t>(at(e))] = 1;
    for (size_t i = 0; i < storage.size(); ++i) {
      if (!inView[i] && std::memcmp(&storage[i], &fill, sizeof(T)) != 0) return false;
    }
    return true;
  }
};

/** Row-major strides with rows of `rowElements` (>= the dense row) for the dims before the last `innerDims`. */
inline std::vector<int64_t> paddedStrides(const std::vector<int64_t>& shape, int64_t pad) {
  std::vector<int64_t> strides = rowMajorStrides(shape);
  if (pad == 0 || shape.size() < 2) return strides;
  const size_t rowDim = shape.size() - 2;  // [..., rows, row] with the row padded by `pad`
  strides[rowDim] += pad;
  for (size_t k = rowDim; k-- > 0;) strides[k] = strides[k + 1] * shape[k + 1];
  return strides;
}

inline constexpr uint16_t kNan16 = 0x7FC1;        // the gaps of 16-bit inputs (NaN in FLOAT16 and BF16)
inline constexpr uint16_t kOutSentinel = 0xFFFF;  // outputs before the run (NaN)
inline constexpr uint32_t kLseSentinel = 0xFFC01234u;

/** One problem's tensors (layout form) and its logical golden problem. */
struct Data {
  Spec s;
  int64_t tokens = 0, s1 = 0;  // q's rows (BSND B * S1, TND T1) and BSND S1
  std::vector<int32_t> cuQ, cuOri, cuCmp, oriTable, cmpTable;
  int64_t oriCols = 0, cmpCols = 0, oriBlocks = 0, cmpBlocks = 0;
  Stored<uint16_t> q, ori, cmp, out;
  Stored<uint32_t> lse;
  std::vector<int32_t> oriIdx, cmpIdx, oriLen, cmpLen;  // dense [tokens][K] / [tokens]
  std::vector<float> sinks;
  golden::SmlaLayoutRows rows;
  golden::SparseFlashMlaProblem problem;  // io None; the naive computation sets its own
  std::vector<double> qLogical, oriLogical, cmpLogical;
  TensorPool pool;

  explicit Data(const Spec& spec);

  /** q's layout row of every logical query row, and whether that row sees a key. */
  std::vector<char> rowSeesKeys() const;
};

/** What a run left: out [tokens][n1][512] widened, its bits, lse [tokens][n1] (bits), and the untouched bytes. */
struct Result {
  aclnnStatus status = -1;
  std::string message;
  std::vector<uint16_t> outBits;
  std::vector<uint32_t> lseBits;
  bool outGapsKept = false, lseKept = false;
};

/**
 * The forward call's arguments over the data's storage, its outputs reset to their sentinels (the tensors live in
 * d.pool, the layout names in d.s).
 */
ops::SmlaArgs forwardArgsOf(Data& d);

/** Both phases through the C API on a copy of the data's outputs. */
Result runApi(Data& d);

/** The plan of the data's call run with `path` / `sums`, `table` and `threads` workers (the first phase checked). */
Result runPlan(Data& d, TilePath path, GemmSums sums, const kernels::FaKernelTable& table, int threads);

/**
 * The double benchmark (DECISIONS.md, matmul ops) of out and lse against the fp64 golden, the naive computation
 * rounding P to bf16 when `bf16P`; rows that see no key and rows no batch computes: out and lse exactly +0; with
 * returnLse false the lse storage keeps its bytes; output gaps keep theirs.
 */
::testing::AssertionResult matchesGolden(const Data& d, const Result& r, bool bf16P);

/** Whether this process's plans run bf16 on the native tile path (P rounded to bf16). */
bool nativeBf16Process();

}  // namespace gradkit::test::smla
