// Helpers of the SparseLightningIndexerKLLossGrad tests: one random problem (TND or BSND, per-batch lengths, seqused,
// residuals, indices as LightningIndexerV2 would select them plus optional junk, p normalised over the valid slots),
// the call through the public API (dense, or every tensor a view with all strides doubled), the kernels on their own
// with either table, and the fp64 golden of the same inputs. Buffer, ApiTensors and the error norms are the block
// residuals tests' (block_residuals_test_util.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"
#include "golden/sparse_lightning_indexer_kl_loss_grad.h"
#include "ops/block_residuals_test_util.h"
#include "ops/lightning_indexer/kernels/kl_grad_kernel.h"
#include "ops/lightning_indexer/kl_grad_layout.h"
#include "ops/op_test_util.h"

namespace gradkit::test::kl_grad {

using block_residuals::ApiTensors;
using block_residuals::Buffer;

/** One problem's description. */
struct KlCase {
  bool tnd = true;
  aclDataType dtype = ACL_BF16;
  int64_t heads = 8, topk = 16;
  int64_t maskMode = 3, cmpRatio = 1;
  std::vector<int64_t> qLens = {8}, kLens = {8};  // TND lengths; BSND: B = size, S1 / S2 = the first entry
  std::vector<int64_t> usedQ, usedK;              // seqused (empty: absent)
  std::vector<int64_t> residual;                  // cmpResidualK (empty: absent)
  int64_t extraQueryRows = 0, extraKeyRows = 0;   // TND rows past cu[B]
  bool junk = false;                              // -1 and out-of-range indices inside the valid range, p there
  uint32_t seed = 3;
};

inline int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

/** The inputs and outputs of one case as raw bytes (outputs start as 0xA5 bytes). */
struct KlData {
  KlCase c;
  ops::KlDims dims;
  ops::KlSequences seq;
  Buffer q, k, w, indices, target, cuQ, cuK, usedQ, usedK, residual, metadata;
  Buffer dq, dk, dw, softmaxOut;

  explicit KlData(const KlCase& kc) : c(kc) {
    dims.layout = c.tnd ? ops::KlLayout::TND : ops::KlLayout::BSND;
    dims.batch = static_cast<int64_t>(c.qLens.size());
    dims.s1 = c.tnd ? sum(c.qLens) + c.extraQueryRows : c.qLens[0];
    dims.s2 = c.tnd ? sum(c.kLens) + c.extraKeyRows : c.kLens[0];
    dims.n1 = c.heads, dims.n2 = 1, dims.dq = 128, dims.dk = 128, dims.topk = c.topk;
    if (c.tnd) {
      seq.cuQ = {0}, seq.cuK = {0};
      for (size_t b = 0; b < c.qLens.size(); ++b) {
        seq.cuQ.push_back(seq.cuQ.back() + c.qLens[b]);
        seq.cuK.push_back(seq.cuK.back() + c.kLens[b]);
      }
    }
    seq.usedQ = c.usedQ, seq.usedK = c.usedK, seq.residual = c.residual;
    const int64_t qRows = dims.queryRows(), kRows = dims.keyRows(), n1 = c.heads, kk = c.topk;
    std::mt19937 rng(c.seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f), sym(-1.0f, 1.0f);
    q = Buffer(c.dtype, qRows * n1 * 128);
    k = Buffer(c.dtype, kRows * 128);
    for (int64_t i = 0; i < q.size(); ++i) q.set(i, sym(rng));
    for (int64_t i = 0; i < k.size(); ++i) k.set(i, sym(rng));
    w = Buffer(ACL_FLOAT, qRows * n1);
    for (int64_t i = 0; i < w.size(); ++i) w.set(i, unit(rng) * 0.1f);  // logits of order one
    indices = Buffer(ACL_INT32, qRows * kk);
    target = Buffer(ACL_FLOAT, qRows * kk);
    std::vector<int32_t> idx(static_cast<size_t>(qRows * kk), -1);
    std::vector<float> p(static_cast<size_t>(qRows * kk), 0.0f);
    const kernels::KlGradProblem problem = ops::klProblemOf(dims, seq, c.maskMode, c.cmpRatio, c.dtype);
    for (const kernels::KlGradBatch& b : problem.batches) {
      for (int64_t i = 0; i < b.qRows; ++i) {
        const int64_t visible = golden::klVisibleKeys(goldenProblem(), goldenBatch(b), i);
        std::vector<int32_t> order(static_cast<size_t>(visible));
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        const int64_t t = b.qRow0 + i, n = std::min(kk, visible);
        float mass = 0;
        for (int64_t j = 0; j < n; ++j) {
          idx[static_cast<size_t>(t * kk + j)] = order[static_cast<size_t>(j)];
          if (c.junk && j % 5 == 3)
            idx[static_cast<size_t>(t * kk + j)] = j % 2 == 0 ? -1 : static_cast<int32_t>(visible);
          mass += p[static_cast<size_t>(t * kk + j)] = unit(rng) + 0.01f;
        }
        for (int64_t j = 0; j < n; ++j) p[static_cast<size_t>(t * kk + j)] /= mass;
        if (c.junk) {  // p in slots past the valid count: ignored by the op
          for (int64_t j = n; j < kk; ++j) p[static_cast<size_t>(t * kk + j)] = 0.5f;
        }
      }
    }
    std::memcpy(indices.data(), idx.data(), idx.size() * 4);
    std::memcpy(target.data(), p.data(), p.size() * 4);
    const auto ints = [](const std::vector<int64_t>& values) {
      Buffer b(ACL_INT32, static_cast<int64_t>(values.size()));
      for (size_t i = 0; i < values.size(); ++i) {
        const int32_t v = static_cast<int32_t>(values[i]);
        std::memcpy(b.bytes.data() + i * 4, &v, 4);
      }
      return b;
    };
    cuQ = ints(seq.cuQ), cuK = ints(seq.cuK), usedQ = ints(c.usedQ), usedK = ints(c.usedK);
    residual = ints(c.residual);
    metadata = Buffer(ACL_INT32, 64);
    dq = Buffer(c.dtype, qRows * n1 * 128, 0xA5);
    dk = Buffer(c.dtype, kRows * 128, 0xA5);
    dw = Buffer(ACL_FLOAT, qRows * n1, 0xA5);
    softmaxOut = Buffer(ACL_FLOAT, qRows * kk, 0xA5);
  }

  golden::KlProblem goldenProblem() const {
    golden::KlProblem g;
    g.heads = c.heads, g.topk = c.topk, g.qTotal = dims.queryRows(), g.kTotal = dims.keyRows();
    g.maskMode = c.maskMode, g.cmpRatio = c.cmpRatio;
    for (const kernels::KlGradBatch& b : ops::klProblemOf(dims, seq, c.maskMode, c.cmpRatio, c.dtype).batches) {
      g.batches.push_back(goldenBatch(b));
    }
    return g;
  }
  static golden::KlBatch goldenBatch(const kernels::KlGradBatch& b) {
    return {b.qRow0, b.qRows, b.kRow0, b.kRows, b.residual};
  }

  golden::KlGradients<double> golden() const {
    const std::vector<double> qd = q.widened(), kd = k.widened(), wd = w.widened(), pd = target.widened();
    return golden::klLossGrad(goldenProblem(), qd.data(), kd.data(), wd.data(),
                              reinterpret_cast<const int32_t*>(indices.bytes.data()), pd.data());
  }

  /** The call through the API; the status of the first phase (ran and synchronized on success). */
  aclnnStatus runApi(bool strided = false) {
    ApiTensors api(strided);
    const std::vector<int64_t> qs = ops::klQueryShape(dims), ks = ops::klKeyShape(dims), ws = ops::klWeightShape(dims),
                               ss = ops::klSparseShape(dims);
    aclTensor* tq = api.input(q, qs);
    aclTensor* tk = api.input(k, ks);
    aclTensor* tw = api.input(w, ws);
    aclTensor* ti = api.input(indices, ss);
    aclTensor* tp = api.input(target, ss);
    const auto optional = [&](Buffer& b) { return b.size() == 0 ? nullptr : api.input(b, {b.size()}); };
    aclTensor* cq = optional(cuQ);
    aclTensor* ck = optional(cuK);
    aclTensor* uq = optional(usedQ);
    aclTensor* uk = optional(usedK);
    aclTensor* res = optional(residual);
    aclTensor* meta = api.input(metadata, {64});
    aclTensor* tdq = api.output(dq, qs);
    aclTensor* tdk = api.output(dk, ks);
    aclTensor* tdw = api.output(dw, ws);
    aclTensor* tso = api.output(softmaxOut, ss);
    char layout[8];
    std::strcpy(layout, c.tnd ? "TND" : "BSND");
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
        tq, tk, tw, ti, tp, cq, ck, uq, uk, res, meta, layout, layout, c.maskMode, c.cmpRatio, tdq, tdk, tdw, tso,
        &size, &executor);
    if (status != ACLNN_SUCCESS) return status;
    std::vector<unsigned char> workspace(size);
    EXPECT_EQ(aclnnSparseLightningIndexerKLLossGrad(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
    api.collect();
    return status;
  }

  /** The kernels alone on the dense buffers with `table` and `sums`, `threads` workers. */
  void runKernels(const kernels::KlGradKernels& table, GemmSums sums = GemmSums::Sequential, int threads = 1) {
    kernels::KlGradProblem p = ops::klProblemOf(dims, seq, c.maskMode, c.cmpRatio, c.dtype);
    p.sums = sums;
    const kernels::KlGradSchedule s = kernels::klGradSchedule(p, table, threads);
    std::vector<float> partials(static_cast<size_t>(kernels::klGradPartialFloats(p)));
    std::vector<unsigned char> scratch(static_cast<size_t>(s.workers) * s.slotBytes + 64);
    kernels::KlGradIo io;
    io.q = q.data(), io.k = k.data(), io.w = reinterpret_cast<const float*>(w.data());
    io.indices = reinterpret_cast<const int32_t*>(indices.data());
    io.target = reinterpret_cast<const float*>(target.data());
    io.dq = dq.data(), io.dk = dk.data(), io.dw = reinterpret_cast<float*>(dw.data());
    io.softmaxOut = reinterpret_cast<float*>(softmaxOut.data());
    io.partials = partials.data();
    io.scratch = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    kernels::klGradRun(p, s, io);
  }
};

}  // namespace gradkit::test::kl_grad
