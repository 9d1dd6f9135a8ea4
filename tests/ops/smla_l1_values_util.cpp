// The helpers of smla_l1_values_util.h.
#include "ops/smla_l1_values_util.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "ops/compressor_test_util.h"
#include "ops/sparse_attention/smla_l1_plan.h"

namespace gradkit::test::smla {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

constexpr uint32_t kL1Sentinel = 0xFFC05678u;

/** The spec with no ori rows (mask 0 there), so the golden problem is the op's. */
Spec withoutOri(Spec s) {
  s.oriRows.assign(s.qRows.size(), 0);
  s.oriUsed.clear();
  s.oriMode = 0;
  s.winLeft = s.winRight = -1;
  s.oriK = 0;
  s.layoutKv = s.layoutQ;
  s.returnLse = false;
  return s;
}

std::vector<int32_t> int32s(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

/** The call's tensors over the data's storage (the output reset to its sentinel) and its first phase. */
struct L1Call {
  ops::SmlaL1Args args{};
  std::string layout;

  explicit L1Call(L1Data& x) : layout(x.d.s.layoutQ) {
    Data& d = x.d;
    const Spec& s = d.s;
    TensorPool& pool = d.pool;
    const auto view = [&pool](auto& stored, aclDataType dtype) -> aclTensor* {
      return pool.view(stored.storage.data(), dtype, stored.shape, stored.strides, stored.offset,
                       static_cast<int64_t>(stored.storage.size()));
    };
    const bool strided = s.stridedSmall;
    const auto ints = [&pool, strided](const std::vector<int64_t>& shape, const std::vector<int32_t>& v) -> aclTensor* {
      if (v.empty()) return nullptr;
      return int32Tensor(pool, shape, v, strided);
    };
    const int64_t B = s.batch(), T = d.tokens;
    x.l1.place(std::vector<float>(at(x.l1.numel()), 0.0f), 0.0f);
    for (float& v : x.l1.storage) std::memcpy(&v, &kL1Sentinel, 4);
    const std::vector<int64_t> perToken = s.bsndQ() ? std::vector<int64_t>{B, d.s1, 1} : std::vector<int64_t>{T, 1};
    std::vector<int64_t> listShape = perToken;
    listShape.push_back(s.cmpK);
    args.q = view(d.q, s.dtype);
    args.k = view(d.cmp, s.dtype);
    args.softmaxLse = view(x.lse, ACL_FLOAT);
    args.sparseIndices = ints(listShape, d.cmpIdx);
    args.cuSeqlensQ = ints({B + 1}, d.cuQ);
    args.cuSeqlensK = ints({B + 1}, d.cuCmp);
    args.sequsedQ = ints({B}, int32s(s.qUsed));
    args.sequsedK = ints({B}, int32s(s.cmpUsed));
    args.cmpResidualK = ints({B}, int32s(s.residual));
    args.topkLength = ints(perToken, d.cmpLen);
    args.metadata = pool.make(ACL_INT32, {64});
    args.softmaxScale = s.scale;
    args.maxSeqlenK = x.spec.maxSeqlenK > 0 ? x.spec.maxSeqlenK : x.width;
    args.cmpRatio = s.ratio;
    args.maskMode = s.cmpMode;
    args.layoutQ = layout.c_str();
    args.layoutK = layout.c_str();
    args.softmaxL1Norm = view(x.l1, ACL_FLOAT);
  }

  aclnnStatus plan(uint64_t* workspaceSize, aclOpExecutor** executor) {
    const ops::SmlaL1Args& a = args;
    return aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
        a.q, a.k, a.softmaxLse, a.sparseIndices, a.cuSeqlensQ, a.cuSeqlensK, a.sequsedQ, a.sequsedK, a.cmpResidualK,
        a.topkLength, a.metadata, a.softmaxScale, a.maxSeqlenK, a.cmpRatio, a.maskMode, layout.data(), layout.data(),
        a.softmaxL1Norm, workspaceSize, executor);
  }
};

void collect(const L1Data& x, L1Result& r) {
  const std::vector<float> values = x.l1.dense();
  r.bits.resize(values.size());
  std::memcpy(r.bits.data(), values.data(), values.size() * 4);
  float sentinel;
  std::memcpy(&sentinel, &kL1Sentinel, 4);
  std::vector<char> inView(x.l1.storage.size(), 0);
  for (int64_t e = 0; e < x.l1.numel(); ++e) inView[at(x.l1.at(e))] = 1;
  r.gapsKept = true;
  for (size_t i = 0; i < inView.size(); ++i) {
    if (!inView[i] && std::memcmp(&x.l1.storage[i], &kL1Sentinel, 4) != 0) r.gapsKept = false;
  }
}

}  // namespace

L1Data::L1Data(const L1Spec& in) : spec(in), d(withoutOri(in.s)) {
  const Spec& s = d.s;
  const int64_t B = s.batch(), T = d.tokens, n1 = s.n1;
  if (s.cmpK > 0) {
    width = s.cmpK;
  } else if (s.bsndQ()) {
    width = s.cmpRows[0];
  } else {
    width = spec.maxSeqlenK;
    for (const golden::SmlaBatch& b : d.problem.batches) width = std::max(width, b.cmp);
  }
  golden::SparseFlashMlaProblem forward = d.problem;  // the op's lse: the forward over the same keys, no sink
  forward.sinks.clear();
  const auto fwd = golden::sparseFlashMlaForward(
      forward, golden::SparseFlashMlaInputs<double>{d.qLogical.data(), d.oriLogical.data(), d.cmpLogical.data()});
  lseLogical.assign(fwd.lse.begin(), fwd.lse.end());
  const std::vector<float> lseRows = golden::smlaScatterRows(lseLogical, d.rows.q, n1, T);
  lse.shape = s.bsndQ() ? std::vector<int64_t>{B, 1, d.s1, n1} : std::vector<int64_t>{1, T, n1};
  lse.strides = rowMajorStrides(lse.shape);
  if (spec.stridedLse) {
    for (int64_t& stride : lse.strides) stride *= 2;
  }
  lse.place(lseRows, 0.0f);
  l1.shape = s.bsndQ() ? std::vector<int64_t>{B, d.s1, 1, width} : std::vector<int64_t>{T, 1, width};
  l1.strides = paddedStrides(l1.shape, spec.stridedL1 ? 7 : 0);
  l1.offset = spec.stridedL1 ? 3 : 0;
}

L1Result runL1Api(L1Data& x) {
  L1Call call(x);
  L1Result r;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  r.status = call.plan(&size, &executor);
  if (r.status != ACLNN_SUCCESS) {
    r.message = aclGetRecentErrMsg();
    return r;
  }
  const auto workspace = alignedBuffer(size);
  EXPECT_EQ(aclnnSparseFlashMlaSoftmaxL1Norm(workspace.get(), size, executor, nullptr), ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
  collect(x, r);
  return r;
}

L1Result runL1Plan(L1Data& x, TilePath path, GemmSums sums, const kernels::FaKernelTable& table, int threads) {
  L1Call call(x);
  L1Result r;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  r.status = call.plan(&size, &executor);
  if (r.status != ACLNN_SUCCESS) {
    r.message = aclGetRecentErrMsg();
    return r;
  }
  aclDestroyAclOpExecutor(executor);
  ops::SmlaL1Plan plan = ops::planSparseFlashMlaSoftmaxL1Norm(ops::smlaL1WithEmptyOptionalsAbsent(call.args));
  plan.problem.tilePath = path;
  plan.problem.tileSums = sums;
  plan.schedule = kernels::smlaL1Schedule(plan.problem, threads);
  plan.schedule.kernels = &table;
  plan.scratch = plan.workspace.book("test scratch", kernels::smlaScratchBytes(plan.schedule));
  const auto workspace = alignedBuffer(plan.workspace.totalBytes());
  EXPECT_EQ(plan.run(workspace.get()), ACLNN_SUCCESS);
  collect(x, r);
  return r;
}

::testing::AssertionResult l1MatchesGolden(const L1Data& x, const L1Result& r) {
  if (r.status != ACLNN_SUCCESS) return ::testing::AssertionFailure() << "status " << r.status << ": " << r.message;
  if (!r.gapsKept) return ::testing::AssertionFailure() << "softmaxL1Norm: bytes outside the view were written";
  const Data& d = x.d;
  const golden::SparseFlashMlaInputs<double> in{d.qLogical.data(), d.oriLogical.data(), d.cmpLogical.data()};
  const std::vector<double> lseExact(x.lseLogical.begin(), x.lseLogical.end());
  const std::vector<float> qf(d.qLogical.begin(), d.qLogical.end()), of(d.oriLogical.begin(), d.oriLogical.end()),
      cf(d.cmpLogical.begin(), d.cmpLogical.end());
  const int64_t denseWidth = d.s.cmpK > 0 ? 0 : x.width;
  const auto exact =
      golden::sparseFlashMlaSoftmaxL1Norm(d.problem, golden::SmlaPart::Cmp, in, lseExact.data(), denseWidth);
  const auto naive = golden::sparseFlashMlaSoftmaxL1Norm(
      d.problem, golden::SmlaPart::Cmp, golden::SparseFlashMlaInputs<float>{qf.data(), of.data(), cf.data()},
      x.lseLogical.data(), denseWidth);
  const std::vector<double> want = golden::smlaScatterRows(exact, d.rows.q, x.width, d.tokens);
  const std::vector<float> naiveRows = golden::smlaScatterRows(naive, d.rows.q, x.width, d.tokens);
  std::vector<double> ours, wanted, naiveKept;
  int64_t zeros = 0;
  for (size_t e = 0; e < want.size(); ++e) {
    if (want[e] == 0.0) {
      if (r.bits[e] != 0) {
        return ::testing::AssertionFailure() << "softmaxL1Norm element " << e << " (row " << e / at(x.width)
                                             << ") must be +0, is 0x" << std::hex << r.bits[e];
      }
      ++zeros;
      continue;
    }
    float v;
    std::memcpy(&v, &r.bits[e], 4);
    ours.push_back(v);
    wanted.push_back(want[e]);
    naiveKept.push_back(naiveRows[e]);
  }
  double top = 0;
  for (double w : wanted) top = std::max(top, std::fabs(w));
  const auto oursErr = compressor::errorsOf(ours, wanted), naiveErr = compressor::errorsOf(naiveKept, wanted);
  const ::testing::AssertionResult ok = compressor::withinBenchmark(oursErr, naiveErr, 2.0, 1e-6 * top + 1e-12);
  if (!ok) return ::testing::AssertionFailure() << "softmaxL1Norm: " << ok.message();
  return ::testing::AssertionSuccess() << ours.size() << " values, " << zeros << " zeros; rms " << oursErr.rms
                                       << " max " << oursErr.maxAbs << " (naive " << naiveErr.rms << ", "
                                       << naiveErr.maxAbs << ")";
}

}  // namespace gradkit::test::smla
