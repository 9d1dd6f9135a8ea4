#include "ops/smla_grad_util.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>

#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "ops/compressor_test_util.h"
#include "ops/sparse_attention/smla_grad_plan.h"

namespace gradkit::test::smla {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

/** An output over a zeroed buffer, dense or with every stride doubled, its elements set to NaN bits first. */
template <class T>
aclTensor* output(TensorPool& pool, aclDataType dtype, const std::vector<int64_t>& shape, bool strided, T sentinel) {
  aclTensor* t = strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
  T* data = static_cast<T*>(t->firstElement());
  const int64_t step = strided ? 2 : 1;
  for (int64_t e = 0; e < t->numel(); ++e) data[e * step] = sentinel;
  return t;
}

template <class T>
std::vector<T> denseOf(const aclTensor* t, bool strided) {
  std::vector<T> values;
  if (t == nullptr) return values;
  const T* data = static_cast<const T*>(t->firstElement());
  const int64_t step = strided ? 2 : 1;
  for (int64_t e = 0; e < t->numel(); ++e) values.push_back(data[e * step]);
  return values;
}

/** The gradient call's tensors over the data's storage (the forward's out and lse restored). */
struct GradCall {
  ops::SmlaGradArgs a{};
  bool strided = false;

  GradCall(GradData& g, const GradWants& w) : strided(w.stridedOutputs) {
    Data& d = g.d;
    const ops::SmlaArgs f = forwardArgsOf(d);  // resets out and lse to sentinels: restore the forward's
    std::copy(g.outStorage.begin(), g.outStorage.end(), d.out.storage.begin());
    std::copy(g.lseStorage.begin(), g.lseStorage.end(), d.lse.storage.begin());
    TensorPool& pool = d.pool;
    const Spec& s = d.s;
    const std::vector<int64_t> qDims = f.q->viewDims;
    aclTensor* dOut = w.stridedDOut ? pool.makeStrided(s.dtype, qDims) : pool.make(s.dtype, qDims);
    for (size_t e = 0; e < g.dOut.size(); ++e) {
      static_cast<uint16_t*>(dOut->firstElement())[(w.stridedDOut ? 2 : 1) * e] = g.dOut[e];
    }
    a = ops::SmlaGradArgs{f.q,
                          dOut,
                          f.attnOut,
                          f.softmaxLse,
                          f.oriKv,
                          f.cmpKv,
                          f.oriSparseIndices,
                          f.cmpSparseIndices,
                          f.cuSeqlensQ,
                          f.cuSeqlensOriKv,
                          f.cuSeqlensCmpKv,
                          f.sequsedQ,
                          f.sequsedOriKv,
                          f.sequsedCmpKv,
                          f.cmpResidualKv,
                          f.oriTopkLength,
                          f.cmpTopkLength,
                          f.sinks,
                          f.metadata,
                          s.scale,
                          s.ratio,
                          s.oriMode,
                          s.cmpMode,
                          s.winLeft,
                          s.winRight,
                          f.layoutQ,
                          f.layoutKv,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};
    a.dQuery = output<uint16_t>(pool, s.dtype, qDims, strided, kOutSentinel);
    if (w.dOri) a.dOriKv = output<uint16_t>(pool, s.dtype, f.oriKv->viewDims, strided, kOutSentinel);
    if (w.dCmp && f.cmpKv != nullptr) {
      a.dCmpKv = output<uint16_t>(pool, s.dtype, f.cmpKv->viewDims, strided, kOutSentinel);
    }
    if (w.dSinks) a.dSinks = output<uint32_t>(pool, ACL_FLOAT, {s.n1}, false, kLseSentinel);
    if (w.oriL1 && f.oriSparseIndices != nullptr) {
      a.oriSoftmaxL1Norm = output<uint32_t>(pool, ACL_FLOAT, f.oriSparseIndices->viewDims, false, kLseSentinel);
    }
    if (f.cmpSparseIndices != nullptr) {
      a.cmpSoftmaxL1Norm = output<uint32_t>(pool, ACL_FLOAT, f.cmpSparseIndices->viewDims, false, kLseSentinel);
    }
  }

  aclnnStatus plan(uint64_t* size, aclOpExecutor** executor) {
    return aclnnSparseFlashMlaGradGetWorkspaceSize(
        a.query, a.dOut, a.out, a.lse, a.oriKv, a.cmpKv, a.oriSparseIndices, a.cmpSparseIndices, a.cuSeqlensQ,
        a.cuSeqlensOriKv, a.cuSeqlensCmpKv, a.sequsedQ, a.sequsedOriKv, a.sequsedCmpKv, a.cmpResidualKv,
        a.oriTopkLength, a.cmpTopkLength, a.sinks, a.metadata, a.scaleValue, a.cmpRatio, a.oriMaskMode, a.cmpMaskMode,
        a.oriWinLeft, a.oriWinRight, const_cast<char*>(a.layoutQ), const_cast<char*>(a.layoutKv), a.dQuery, a.dOriKv,
        a.dCmpKv, a.dSinks, a.oriSoftmaxL1Norm, a.cmpSoftmaxL1Norm, size, executor);
  }

  void collect(GradResult& r) const {
    r.dq = denseOf<uint16_t>(a.dQuery, strided);
    r.dOri = denseOf<uint16_t>(a.dOriKv, strided);
    r.dCmp = denseOf<uint16_t>(a.dCmpKv, strided);
    r.dSinks = denseOf<float>(a.dSinks, false);
    r.oriL1 = denseOf<float>(a.oriSoftmaxL1Norm, false);
    r.cmpL1 = denseOf<float>(a.cmpSoftmaxL1Norm, false);
  }
};

std::vector<double> widen(aclDataType dtype, const std::vector<uint16_t>& bits) {
  std::vector<double> v;
  for (uint16_t b : bits) v.push_back(compressor::ioValue(dtype, b));
  return v;
}

std::vector<double> widenFloats(const std::vector<uint32_t>& bits) {
  std::vector<double> v;
  for (uint32_t b : bits) {
    float f;
    std::memcpy(&f, &b, 4);
    v.push_back(f);
  }
  return v;
}

template <class T>
std::vector<float> toFloat(const std::vector<T>& v) {
  return std::vector<float>(v.begin(), v.end());
}

/** Our io-dtype values against the golden's and the naive's (rounded to the io dtype); exact zero where expected. */
::testing::AssertionResult compareIo(const char* name, aclDataType dtype, const std::vector<uint16_t>& ours,
                                     const std::vector<double>& exact, const std::vector<float>& naive,
                                     const std::vector<char>& mustBeZero) {
  std::vector<double> o, e, nv;
  for (size_t i = 0; i < exact.size(); ++i) {
    if (!mustBeZero.empty() && mustBeZero[i]) {
      if (ours[i] != 0) return ::testing::AssertionFailure() << name << " element " << i << " must be +0";
      continue;
    }
    o.push_back(compressor::ioValue(dtype, ours[i]));
    e.push_back(exact[i]);
    nv.push_back(compressor::ioValue(dtype, compressor::ioBits(dtype, naive[i])));
  }
  double top = 0;
  for (double x : e) top = std::max(top, std::fabs(x));
  const auto ok =
      compressor::withinBenchmark(compressor::errorsOf(o, e), compressor::errorsOf(nv, e), 2.0, 1e-6 * top + 1e-12);
  if (!ok) return ::testing::AssertionFailure() << name << ": " << ok.message();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult compareFloat(const char* name, const std::vector<float>& ours,
                                        const std::vector<double>& exact, const std::vector<float>& naive) {
  double top = 0;
  for (double x : exact) top = std::max(top, std::fabs(x));
  const auto ok = compressor::withinBenchmark(compressor::errorsOf(ours, exact), compressor::errorsOf(naive, exact),
                                              2.0, 1e-6 * top + 1e-12);
  if (!ok) return ::testing::AssertionFailure() << name << ": " << ok.message();
  return ::testing::AssertionSuccess();
}

}  // namespace

GradData::GradData(const Spec& spec) : d(spec) {
  const Result forward = runApi(d);
  EXPECT_EQ(forward.status, ACLNN_SUCCESS) << forward.message;
  outStorage = d.out.storage;
  lseStorage = d.lse.storage;
  std::mt19937 rng(spec.seed + 1000);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  dOut.resize(at(d.tokens * spec.n1 * kD));
  for (uint16_t& v : dOut) v = compressor::ioBits(spec.dtype, uniform(rng));
}

GradResult runGradApi(GradData& g, const GradWants& wants) {
  GradCall call(g, wants);
  GradResult r;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  r.status = call.plan(&size, &executor);
  if (r.status != ACLNN_SUCCESS) {
    r.message = aclGetRecentErrMsg();
    return r;
  }
  const auto workspace = alignedBuffer(size);
  EXPECT_EQ(aclnnSparseFlashMlaGrad(workspace.get(), size, executor, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
  call.collect(r);
  return r;
}

GradResult runGradPlan(GradData& g, const GradWants& wants, TilePath path, GemmSums sums,
                       const kernels::FaKernelTable& table, int threads) {
  GradCall call(g, wants);
  GradResult r;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  r.status = call.plan(&size, &executor);
  if (r.status != ACLNN_SUCCESS) {
    r.message = aclGetRecentErrMsg();
    return r;
  }
  aclDestroyAclOpExecutor(executor);
  ops::SmlaGradPlan plan = ops::planSparseFlashMlaGrad(ops::smlaGradWithEmptyOptionalsAbsent(call.a));
  plan.problem.tilePath = path;
  plan.problem.tileSums = sums;
  plan.schedule.kernels = &table;
  plan.schedule.gradOps =
      &table == &kernels::kFaScalarKernels ? &kernels::kSmlaGradScalarOps : &kernels::kSmlaGradSimdOps;
  plan.schedule.threads = std::clamp(threads, 1, static_cast<int>(plan.schedule.chunks.size()));
  plan.schedule.slotBytes = kernels::smlaGradSlotBytes(plan.problem);
  plan.scratch = plan.workspace.book("test scratch", kernels::smlaGradScratchBytes(plan.schedule));
  const auto workspace = alignedBuffer(plan.workspace.totalBytes());
  EXPECT_EQ(plan.run(workspace.get()), ACLNN_SUCCESS);
  call.collect(r);
  return r;
}

::testing::AssertionResult gradMatchesGolden(const GradData& g, const GradResult& r, const GradWants& wants,
                                             bool bf16Operands) {
  if (r.status != ACLNN_SUCCESS) return ::testing::AssertionFailure() << "status " << r.status << ": " << r.message;
  const Data& d = g.d;
  const Spec& s = d.s;
  const int64_t width = s.n1 * kD, T = d.tokens;
  const std::vector<double> dOutLayout = widen(s.dtype, g.dOut);
  std::vector<uint16_t> outDense(at(T * width));
  {
    Stored<uint16_t> out = d.out;
    out.storage = g.outStorage;
    outDense = out.dense();
  }
  Stored<uint32_t> lseStored = d.lse;
  lseStored.storage = g.lseStorage;
  const std::vector<double> outLayout = widen(s.dtype, outDense), lseLayout = widenFloats(lseStored.dense());
  const std::vector<double> dOutL = golden::smlaGatherRows(dOutLayout.data(), d.rows.q, width),
                            outL = golden::smlaGatherRows(outLayout.data(), d.rows.q, width),
                            lseL = golden::smlaGatherRows(lseLayout.data(), d.rows.q, s.n1);
  golden::SparseFlashMlaGradInputs<double> in;
  in.tensors = {d.qLogical.data(), d.oriLogical.data(), d.cmpLogical.data()};
  in.dOut = dOutL.data();
  in.out = outL.data();
  in.lse = lseL.data();
  const auto exact = golden::sparseFlashMlaBackward(d.problem, in);
  golden::SparseFlashMlaProblem naiveProblem = d.problem;
  naiveProblem.io = bf16Operands ? golden::SmlaIoRounding::Bf16 : golden::SmlaIoRounding::None;
  const std::vector<float> qf = toFloat(d.qLogical), of = toFloat(d.oriLogical), cf = toFloat(d.cmpLogical),
                           dOutF = toFloat(dOutL), outF = toFloat(outL), lseF = toFloat(lseL);
  golden::SparseFlashMlaGradInputs<float> inF;
  inF.tensors = {qf.data(), of.data(), cf.data()};
  inF.dOut = dOutF.data();
  inF.out = outF.data();
  inF.lse = lseF.data();
  const auto naive = golden::sparseFlashMlaBackward(naiveProblem, inF);

  std::vector<char> dqZero(at(T * width), 0);
  const std::vector<char> sees = d.rowSeesKeys();
  for (int64_t t = 0; t < T; ++t) {
    if (!sees[at(t)]) std::fill_n(dqZero.begin() + t * width, width, 1);
  }
  auto ok = compareIo("dQueryOut", s.dtype, r.dq, golden::smlaScatterRows(exact.dq, d.rows.q, width, T),
                      golden::smlaScatterRows(naive.dq, d.rows.q, width, T), dqZero);
  if (!ok) return ok;
  const auto kvCheck = [&](const char* name, const std::vector<uint16_t>& ours, const std::vector<double>& e,
                           const std::vector<float>& nv, const std::vector<int64_t>& rows) {
    const auto layoutRows = static_cast<int64_t>(ours.size()) / kD;
    const std::vector<double> exactLayout = golden::smlaScatterRows(e, rows, kD, layoutRows);
    const std::vector<float> naiveLayout = golden::smlaScatterRows(nv, rows, kD, layoutRows);
    std::vector<char> zero(exactLayout.size(), 0);
    for (size_t i = 0; i < zero.size(); ++i) zero[i] = exactLayout[i] == 0.0 && naiveLayout[i] == 0.0f;
    return compareIo(name, s.dtype, ours, exactLayout, naiveLayout, zero);
  };
  if (wants.dOri) {
    ok = kvCheck("dOriKvOutOptional", r.dOri, exact.dOri, naive.dOri, d.rows.ori);
    if (!ok) return ok;
  }
  if (wants.dCmp && s.hasCmp()) {
    ok = kvCheck("dCmpKvOutOptional", r.dCmp, exact.dCmp, naive.dCmp, d.rows.cmp);
    if (!ok) return ok;
  }
  if (wants.dSinks) {
    ok = compareFloat("dSinksOutOptional", r.dSinks, exact.dSinks, naive.dSinks);
    if (!ok) return ok;
  }
  if (s.cmpK > 0) {
    ok = compareFloat("cmpSoftmaxL1NormOptional", r.cmpL1, golden::smlaScatterRows(exact.cmpL1, d.rows.q, s.cmpK, T),
                      golden::smlaScatterRows(naive.cmpL1, d.rows.q, s.cmpK, T));
    if (!ok) return ok;
  }
  if (wants.oriL1 && s.oriK > 0) {
    ok = compareFloat("oriSoftmaxL1NormOptional", r.oriL1, golden::smlaScatterRows(exact.oriL1, d.rows.q, s.oriK, T),
                      golden::smlaScatterRows(naive.oriL1, d.rows.q, s.oriK, T));
    if (!ok) return ok;
  }
  return ::testing::AssertionSuccess();
}

bool sameBits(const GradResult& a, const GradResult& b) {
  const auto floatsSame = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * 4) == 0);
  };
  return a.status == b.status && a.dq == b.dq && a.dOri == b.dOri && a.dCmp == b.dCmp &&
         floatsSame(a.dSinks, b.dSinks) && floatsSame(a.oriL1, b.oriL1) && floatsSame(a.cmpL1, b.cmpL1);
}

}  // namespace gradkit::test::smla
