// The helpers of smla_values_util.h.
#include "ops/smla_values_util.h"

#include <algorithm>
#include <cstdlib>

#include "core/tile_path.h"
#include "ops/compressor_test_util.h"
#include "ops/sparse_attention/kernels/smla_grad_ops.h"
#include "ops/sparse_attention/smla_plan.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::test::smla {
namespace {

using golden::SmlaLayout;
using golden::SmlaSide;

size_t at(int64_t i) { return static_cast<size_t>(i); }

std::vector<int32_t> int32s(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

std::vector<int32_t> prefixSums(const std::vector<int64_t>& rows) {
  std::vector<int32_t> cu{0};
  for (int64_t r : rows) cu.push_back(cu.back() + static_cast<int32_t>(r));
  return cu;
}

/** A KV side: its golden description, its stored view and (paged) its block table. */
SmlaSide kvSide(const Spec& s, const std::vector<int64_t>& rows, const std::vector<int64_t>& used,
                std::vector<int32_t>& cu, std::vector<int32_t>& table, int64_t& cols, int64_t& blocks,
                Stored<uint16_t>& stored, std::mt19937& rng) {
  SmlaSide side;
  side.batch = s.batch();
  side.seqUsed = int32s(used);
  if (s.paged()) {
    side.layout = SmlaLayout::PA_BBND;
    side.tokens = s.blockSize;
    for (int64_t r : rows) cols = std::max(cols, (r + s.blockSize - 1) / s.blockSize);
    cols = std::max<int64_t>(cols, 1);
    blocks = s.batch() * cols + s.spareBlocks;
    std::vector<int32_t> ids(at(blocks));
    for (int64_t k = 0; k < blocks; ++k) ids[at(k)] = static_cast<int32_t>(k);
    std::shuffle(ids.begin(), ids.end(), rng);
    table.assign(ids.begin(), ids.begin() + s.batch() * cols);
    side.blockTable = table;
    side.blockTableCols = cols;
    stored.shape = {blocks, s.blockSize, 1, kD};
    stored.strides = rowMajorStrides(stored.shape);
    if (s.blockStrideRows > 0) stored.strides[0] = s.blockStrideRows * kD;
    if (s.kvElementStride) {
      for (int64_t& stride : stored.strides) stride *= 2;
    }
  } else if (s.layoutKv == "BSND") {
    side.layout = SmlaLayout::BSND;
    side.tokens = rows[0];
    stored.shape = {s.batch(), rows[0], 1, kD};
    stored.strides = paddedStrides(stored.shape, s.stridedKv ? 32 : 0);
    if (s.kvElementStride) {
      for (int64_t& stride : stored.strides) stride *= 2;
    }
  } else {
    side.layout = SmlaLayout::TND;
    cu = prefixSums(rows);
    side.cuSeqlens = cu;
    side.tokens = cu.back();
    stored.shape = {side.tokens, 1, kD};
    stored.strides = paddedStrides(stored.shape, s.stridedKv ? 32 : 0);
    if (s.kvElementStride) {
      for (int64_t& stride : stored.strides) stride *= 2;
    }
  }
  return side;
}

std::vector<uint16_t> randomValues(aclDataType dtype, int64_t count, double amplitude, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-amplitude, amplitude);
  std::vector<uint16_t> v(at(count));
  for (uint16_t& x : v) x = compressor::ioBits(dtype, u(rng));
  return v;
}

std::vector<double> widened(aclDataType dtype, const std::vector<uint16_t>& bits) {
  std::vector<double> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = compressor::ioValue(dtype, bits[i]);
  return v;
}

/** The first k slots of one row's list over the window [lo, hi) of a batch of `length` rows. */
void drawList(IndexKind kind, int64_t k, int64_t lo, int64_t hi, int64_t length, std::mt19937& rng, int32_t* list) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto pick = [&rng](int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b - 1)(rng); };
  if (kind == IndexKind::Valid) {
    std::vector<int32_t> window;
    for (int64_t j = lo; j < hi; ++j) window.push_back(static_cast<int32_t>(j));
    std::shuffle(window.begin(), window.end(), rng);
    for (int64_t slot = 0; slot < k; ++slot)
      list[slot] = slot < static_cast<int64_t>(window.size()) ? window[at(slot)] : -1;
    return;
  }
  for (int64_t slot = 0; slot < k; ++slot) {
    if (kind == IndexKind::Uniform) {
      list[slot] = length > 0 ? static_cast<int32_t>(pick(0, length)) : -1;
      continue;
    }
    const double r = u(rng);
    int64_t v = hi > lo ? pick(lo, hi) : hi + 1;
    if (r < 0.15 && slot > 0) {
      const int32_t earlier = list[pick(0, slot)];
      if (earlier >= 0) v = earlier;  // a duplicate
    } else if (r < 0.30) {
      v = lo > 0 && u(rng) < 0.5 ? pick(0, lo) : hi + pick(0, length + 4);  // outside the window
    } else if (r < 0.34) {
      v = u(rng) < 0.5 ? -1 : -5;  // ends the list
    }
    list[slot] = static_cast<int32_t>(v);
  }
}

}  // namespace

Data::Data(const Spec& spec) : s(spec) {
  std::mt19937 rng(s.seed);
  const int64_t B = s.batch(), D = kD, rowWidth = s.n1 * kD;
  SmlaSide qSide;
  qSide.batch = B;
  qSide.seqUsed = int32s(s.qUsed);
  if (s.bsndQ()) {
    s1 = s.qRows[0];
    tokens = B * s1;
    qSide.layout = SmlaLayout::BSND;
    qSide.tokens = s1;
    q.shape = {B, s1, s.n1, D};
  } else {
    cuQ = prefixSums(s.qRows);
    tokens = cuQ.back() + s.extraQRows;
    qSide.layout = SmlaLayout::TND;
    qSide.cuSeqlens = cuQ;
    qSide.tokens = tokens;
    q.shape = {tokens, s.n1, D};
  }
  q.strides = paddedStrides(q.shape, s.stridedQ ? 64 : 0);
  q.offset = s.stridedQ ? 5 : 0;
  out.shape = q.shape;
  out.strides = rowMajorStrides(out.shape);
  if (s.stridedOut) {  // heads outermost after the batch: [B][n1][S1][D] or [n1][T][D]
    const int64_t rowsPerBatch = s.bsndQ() ? s1 : tokens;
    if (s.bsndQ()) out.strides = {s.n1 * s1 * D, D, s1 * D, 1};
    if (!s.bsndQ()) out.strides = {D, rowsPerBatch * D, 1};
    out.offset = 3;
  }
  const SmlaSide oriSide = kvSide(s, s.oriRows, s.oriUsed, cuOri, oriTable, oriCols, oriBlocks, ori, rng);
  SmlaSide cmpSide;
  if (s.hasCmp()) cmpSide = kvSide(s, s.cmpRows, s.cmpUsed, cuCmp, cmpTable, cmpCols, cmpBlocks, cmp, rng);

  const std::vector<uint16_t> qDense = randomValues(s.dtype, q.numel(), s.qAmplitude, rng);
  const std::vector<uint16_t> oriDense = randomValues(s.dtype, ori.numel(), 1.0, rng);
  const std::vector<uint16_t> cmpDense =
      s.hasCmp() ? randomValues(s.dtype, cmp.numel(), 1.0, rng) : std::vector<uint16_t>{};
  q.place(qDense, kNan16);
  ori.place(oriDense, kNan16);
  if (s.hasCmp()) cmp.place(cmpDense, kNan16);
  sinks = s.sinks;
  if (sinks.empty()) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t n = 0; n < s.n1; ++n) sinks.push_back(u(rng));
  }

  rows = golden::smlaLayoutRows(qSide, oriSide, s.hasCmp() ? &cmpSide : nullptr, int32s(s.residual));
  golden::SparseFlashMlaProblem& p = problem;
  p.heads = s.n1;
  p.dim = D;
  p.batches = rows.batches;
  p.scale = static_cast<float>(s.scale);
  p.sinks.assign(sinks.begin(), sinks.end());
  p.cmpRatio = s.ratio;
  p.oriMaskMode = s.oriMode;
  p.oriWinLeft = s.winLeft;
  p.oriWinRight = s.winRight;
  p.cmpMaskMode = s.cmpMode;

  // Index lists and lengths of every computed row; the rows no batch computes hold junk that must not matter.
  if (s.oriK > 0) oriIdx.assign(at(tokens * s.oriK), 3);
  if (s.cmpK > 0) cmpIdx.assign(at(tokens * s.cmpK), 1);
  if (s.oriLengths) oriLen.assign(at(tokens), 1 << 20);
  if (s.cmpLengths) cmpLen.assign(at(tokens), 1 << 20);
  for (int64_t b = 0, logical = 0; b < B; ++b) {
    for (int64_t i = 0; i < p.batches[at(b)].s1; ++i, ++logical) {
      const int64_t t = rows.q[at(logical)];
      const golden::SmlaWindow w = golden::smlaOriWindow(p, b, i);
      if (s.oriK > 0) {
        drawList(s.oriKind, s.oriK, w.lo, w.hi, p.batches[at(b)].s2, rng, oriIdx.data() + t * s.oriK);
        const int64_t most = std::min(s.oriK, w.hi - w.lo);
        if (s.oriLengths) oriLen[at(t)] = static_cast<int32_t>(rng() % 3 == 0 ? most : rng() % (most + 1));
        if (!s.oriList.empty()) std::copy_n(s.oriList.begin() + logical * s.oriK, s.oriK, oriIdx.begin() + t * s.oriK);
        if (!s.oriLengthList.empty()) oriLen[at(t)] = s.oriLengthList[at(logical)];
      }
      const int64_t thr = s.hasCmp() ? golden::smlaCmpThreshold(p, b, i) : 0;
      if (s.cmpK > 0) {
        drawList(s.cmpKind, s.cmpK, 0, thr, p.batches[at(b)].cmp, rng, cmpIdx.data() + t * s.cmpK);
        const int64_t most = std::min(s.cmpK, thr);
        if (s.cmpLengths) cmpLen[at(t)] = static_cast<int32_t>(rng() % 3 == 0 ? most : rng() % (most + 1));
        if (!s.cmpList.empty()) std::copy_n(s.cmpList.begin() + logical * s.cmpK, s.cmpK, cmpIdx.begin() + t * s.cmpK);
        if (!s.cmpLengthList.empty()) cmpLen[at(t)] = s.cmpLengthList[at(logical)];
      }
    }
  }
  p.oriTopk = s.oriK;
  p.cmpTopk = s.cmpK;
  if (s.oriK > 0) p.oriIndices = golden::smlaGatherRows(oriIdx.data(), rows.q, s.oriK);
  if (s.cmpK > 0) p.cmpIndices = golden::smlaGatherRows(cmpIdx.data(), rows.q, s.cmpK);
  if (s.oriLengths) p.oriTopkLength = golden::smlaGatherRows(oriLen.data(), rows.q, 1);
  if (s.cmpLengths) p.cmpTopkLength = golden::smlaGatherRows(cmpLen.data(), rows.q, 1);
  const std::vector<double> qWide = widened(s.dtype, qDense), oriWide = widened(s.dtype, oriDense),
                            cmpWide = widened(s.dtype, cmpDense);
  qLogical = golden::smlaGatherRows(qWide.data(), rows.q, rowWidth);
  oriLogical = golden::smlaGatherRows(oriWide.data(), rows.ori, D);
  if (s.hasCmp()) cmpLogical = golden::smlaGatherRows(cmpWide.data(), rows.cmp, D);

  if (s.returnLse || s.lsePlaceholder) {
    lse.shape = s.returnLse ? (s.bsndQ() ? std::vector<int64_t>{B, 1, s1, s.n1} : std::vector<int64_t>{1, tokens, s.n1})
                            : std::vector<int64_t>{tokens, s.n1, 1};
    lse.strides = rowMajorStrides(lse.shape);
    if (s.stridedOut) {
      for (int64_t& stride : lse.strides) stride *= 2;
    }
  }
}

std::vector<char> Data::rowSeesKeys() const {
  std::vector<char> sees(at(tokens), 0);
  for (int64_t b = 0, logical = 0; b < problem.batchCount(); ++b) {
    for (int64_t i = 0; i < problem.batches[at(b)].s1; ++i, ++logical) {
      sees[at(rows.q[at(logical)])] = golden::sparseFlashMlaVisibleKeys(problem, b, i).empty() ? 0 : 1;
    }
  }
  return sees;
}

namespace {

/** The call's tensors over the data's storage (outputs reset to their sentinels) and its first phase. */
struct Call {
  ops::SmlaArgs args{};
  std::string layoutQ, layoutKv;

  explicit Call(Data& d) : layoutQ(d.s.layoutQ), layoutKv(d.s.layoutKv) {
    const Spec& s = d.s;
    TensorPool& pool = d.pool;
    const auto view = [&pool](auto& stored, aclDataType dtype) -> aclTensor* {
      if (stored.shape.empty()) return nullptr;
      return pool.view(stored.storage.data(), dtype, stored.shape, stored.strides, stored.offset,
                       static_cast<int64_t>(stored.storage.size()));
    };
    const bool strided = s.stridedSmall;
    const auto ints = [&pool, strided](const std::vector<int64_t>& shape, const std::vector<int32_t>& v) -> aclTensor* {
      if (v.empty()) return nullptr;
      if (!strided) return int32Tensor(pool, shape, v);
      aclTensor* t = pool.makeStrided(ACL_INT32, shape);
      for (size_t e = 0; e < v.size(); ++e) static_cast<int32_t*>(t->firstElement())[2 * e] = v[e];
      return t;
    };
    const int64_t B = s.batch(), T = d.tokens;
    d.out.place(std::vector<uint16_t>(at(d.out.numel()), kOutSentinel), kOutSentinel);
    if (!d.lse.shape.empty()) d.lse.place(std::vector<uint32_t>(at(d.lse.numel()), kLseSentinel), kLseSentinel);
    const std::vector<int64_t> perToken = s.bsndQ() ? std::vector<int64_t>{B, d.s1, 1} : std::vector<int64_t>{T, 1};
    const auto listShape = [&perToken](int64_t k) {
      std::vector<int64_t> shape = perToken;
      shape.push_back(k);
      return shape;
    };
    args.q = view(d.q, s.dtype);
    args.oriKv = view(d.ori, s.dtype);
    args.cmpKv = s.hasCmp() ? view(d.cmp, s.dtype) : nullptr;
    args.oriSparseIndices = ints(listShape(s.oriK), d.oriIdx);
    args.cmpSparseIndices = ints(listShape(s.cmpK), d.cmpIdx);
    args.oriBlockTable = ints({B, d.oriCols}, d.oriTable);
    args.cmpBlockTable = ints({B, d.cmpCols}, d.cmpTable);
    args.cuSeqlensQ = ints({B + 1}, d.cuQ);
    args.cuSeqlensOriKv = ints({B + 1}, d.cuOri);
    args.cuSeqlensCmpKv = ints({B + 1}, d.cuCmp);
    args.sequsedQ = ints({B}, int32s(s.qUsed));
    args.sequsedOriKv = ints({B}, int32s(s.oriUsed));
    args.sequsedCmpKv = ints({B}, int32s(s.cmpUsed));
    args.cmpResidualKv = ints({B}, int32s(s.residual));
    args.oriTopkLength = ints(perToken, d.oriLen);
    args.cmpTopkLength = ints(perToken, d.cmpLen);
    args.sinks = strided ? pool.makeStrided(ACL_FLOAT, {s.n1}) : pool.make(ACL_FLOAT, {s.n1});
    for (int64_t n = 0; n < s.n1; ++n)
      static_cast<float*>(args.sinks->firstElement())[(strided ? 2 : 1) * n] = d.sinks[at(n)];
    args.metadata = pool.make(ACL_INT32, {1024});
    args.softmaxScale = s.scale;
    args.cmpRatio = s.ratio;
    args.oriMaskMode = s.oriMode;
    args.cmpMaskMode = s.cmpMode;
    args.oriWinLeft = s.winLeft;
    args.oriWinRight = s.winRight;
    args.layoutQ = layoutQ.c_str();
    args.layoutKv = layoutKv.c_str();
    args.topkValueMode = 1;
    args.returnSoftmaxLse = s.returnLse;
    args.attnOut = view(d.out, s.dtype);
    args.softmaxLse = view(d.lse, ACL_FLOAT);
  }

  aclnnStatus plan(uint64_t* workspaceSize, aclOpExecutor** executor) {
    const ops::SmlaArgs& a = args;
    return aclnnSparseFlashMlaGetWorkspaceSize(
        a.q, a.oriKv, a.cmpKv, a.oriSparseIndices, a.cmpSparseIndices, a.oriBlockTable, a.cmpBlockTable, a.cuSeqlensQ,
        a.cuSeqlensOriKv, a.cuSeqlensCmpKv, a.sequsedQ, a.sequsedOriKv, a.sequsedCmpKv, a.cmpResidualKv,
        a.oriTopkLength, a.cmpTopkLength, a.sinks, a.metadata, a.softmaxScale, a.cmpRatio, a.oriMaskMode, a.cmpMaskMode,
        a.oriWinLeft, a.oriWinRight, layoutQ.data(), layoutKv.data(), a.topkValueMode, a.returnSoftmaxLse, a.attnOut,
        a.softmaxLse, workspaceSize, executor);
  }
};

void collect(const Data& d, Result& r) {
  r.outBits = d.out.dense();
  r.outGapsKept = d.out.gapsHold(kOutSentinel);
  if (d.lse.shape.empty()) {
    r.lseKept = true;
  } else if (d.s.returnLse) {
    r.lseBits = d.lse.dense();
    r.lseKept = d.lse.gapsHold(kLseSentinel);
  } else {
    r.lseKept = std::all_of(d.lse.storage.begin(), d.lse.storage.end(), [](uint32_t v) { return v == kLseSentinel; });
  }
}

}  // namespace

ops::SmlaArgs forwardArgsOf(Data& d) {
  ops::SmlaArgs args = Call(d).args;
  args.layoutQ = d.s.layoutQ.c_str();
  args.layoutKv = d.s.layoutKv.c_str();
  return args;
}

Result runApi(Data& d) {
  Call call(d);
  Result r;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  r.status = call.plan(&size, &executor);
  if (r.status != ACLNN_SUCCESS) {
    r.message = aclGetRecentErrMsg();
    return r;
  }
  const auto workspace = alignedBuffer(size);
  EXPECT_EQ(aclnnSparseFlashMla(workspace.get(), size, executor, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
  collect(d, r);
  return r;
}

Result runPlan(Data& d, TilePath path, GemmSums sums, const kernels::FaKernelTable& table, int threads) {
  Call call(d);
  Result r;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  r.status = call.plan(&size, &executor);
  if (r.status != ACLNN_SUCCESS) {
    r.message = aclGetRecentErrMsg();
    return r;
  }
  aclDestroyAclOpExecutor(executor);
  ops::SmlaPlan plan = ops::planSparseFlashMla(ops::smlaWithEmptyOptionalsAbsent(call.args));
  plan.problem.tilePath = path;
  plan.problem.tileSums = sums;
  plan.schedule = kernels::smlaForwardSchedule(plan.problem, threads);
  plan.schedule.kernels = &table;
  plan.schedule.steps =
      &table == &kernels::kFaScalarKernels ? &kernels::kSmlaGradScalarOps : &kernels::kSmlaGradSimdOps;
  plan.scratch = plan.workspace.book("test scratch", kernels::smlaScratchBytes(plan.schedule));
  const auto workspace = alignedBuffer(plan.workspace.totalBytes());
  EXPECT_EQ(plan.run(workspace.get()), ACLNN_SUCCESS);
  collect(d, r);
  return r;
}

bool nativeBf16Process() { return chooseTilePath(ACL_BF16).path == TilePath::NativeBf16; }

::testing::AssertionResult matchesGolden(const Data& d, const Result& r, bool bf16P) {
  if (r.status != ACLNN_SUCCESS) return ::testing::AssertionFailure() << "status " << r.status << ": " << r.message;
  if (!r.outGapsKept) return ::testing::AssertionFailure() << "attnOut: bytes outside the view were written";
  if (!r.lseKept) return ::testing::AssertionFailure() << "softmaxLse: bytes it must keep were written";
  golden::SparseFlashMlaProblem naiveProblem = d.problem;
  naiveProblem.io = bf16P ? golden::SmlaIoRounding::Bf16 : golden::SmlaIoRounding::None;
  const golden::SparseFlashMlaInputs<double> in{d.qLogical.data(), d.oriLogical.data(), d.cmpLogical.data()};
  const std::vector<float> qf(d.qLogical.begin(), d.qLogical.end()), of(d.oriLogical.begin(), d.oriLogical.end()),
      cf(d.cmpLogical.begin(), d.cmpLogical.end());
  const auto exact = golden::sparseFlashMlaForward(d.problem, in);
  const auto naive =
      golden::sparseFlashMlaForward(naiveProblem, golden::SparseFlashMlaInputs<float>{qf.data(), of.data(), cf.data()});
  const int64_t width = d.s.n1 * kD, T = d.tokens;
  const std::vector<double> outGolden = golden::smlaScatterRows(exact.out, d.rows.q, width, T),
                            lseGolden = golden::smlaScatterRows(exact.lse, d.rows.q, d.s.n1, T);
  const std::vector<float> outNaive = golden::smlaScatterRows(naive.out, d.rows.q, width, T),
                           lseNaive = golden::smlaScatterRows(naive.lse, d.rows.q, d.s.n1, T);
  const std::vector<char> sees = d.rowSeesKeys();
  std::vector<double> ours, want, naiveRounded, oursLse, wantLse, naiveLse;
  int64_t zeroRows = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = t * width; e < (t + 1) * width; ++e) {
      if (!sees[at(t)]) {
        if (r.outBits[at(e)] != 0)
          return ::testing::AssertionFailure() << "attnOut row " << t << " sees no key but element " << e - t * width
                                               << " is 0x" << std::hex << r.outBits[at(e)] << ", not +0";
        continue;
      }
      ours.push_back(compressor::ioValue(d.s.dtype, r.outBits[at(e)]));
      want.push_back(outGolden[at(e)]);
      naiveRounded.push_back(compressor::ioValue(d.s.dtype, compressor::ioBits(d.s.dtype, outNaive[at(e)])));
    }
    zeroRows += sees[at(t)] ? 0 : 1;
    for (int64_t n = 0; d.s.returnLse && n < d.s.n1; ++n) {
      const uint32_t bits = r.lseBits[at(t * d.s.n1 + n)];
      if (!sees[at(t)]) {
        if (bits != 0) return ::testing::AssertionFailure() << "softmaxLse row " << t << " sees no key but is not +0";
        continue;
      }
      float value;
      std::memcpy(&value, &bits, 4);
      oursLse.push_back(value);
      wantLse.push_back(lseGolden[at(t * d.s.n1 + n)]);
      naiveLse.push_back(lseNaive[at(t * d.s.n1 + n)]);
    }
  }
  double top = 0;
  for (double x : want) top = std::max(top, std::fabs(x));
  const ::testing::AssertionResult outOk = compressor::withinBenchmark(
      compressor::errorsOf(ours, want), compressor::errorsOf(naiveRounded, want), 2.0, 1e-6 * top + 1e-12);
  if (!outOk) return ::testing::AssertionFailure() << "attnOut: " << outOk.message();
  double topLse = 0;
  for (double x : wantLse) topLse = std::max(topLse, std::fabs(x));
  const ::testing::AssertionResult lseOk = compressor::withinBenchmark(
      compressor::errorsOf(oursLse, wantLse), compressor::errorsOf(naiveLse, wantLse), 2.0, 1e-6 * topLse + 1e-12);
  if (!lseOk) return ::testing::AssertionFailure() << "softmaxLse: " << lseOk.message();
  const auto outErrors = compressor::errorsOf(ours, want), naiveErrors = compressor::errorsOf(naiveRounded, want);
  return ::testing::AssertionSuccess() << ours.size() << " out elements (" << zeroRows << " zero rows), rms "
                                       << outErrors.rms << " max " << outErrors.maxAbs << " (naive " << naiveErrors.rms
                                       << ", " << naiveErrors.maxAbs << ")";
}

}  // namespace gradkit::test::smla
