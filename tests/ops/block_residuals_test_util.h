// Helpers of the BlockAttentionResiduals values tests: one problem's tensors as raw bytes of their dtype, the kernels'
// views of them, the fp64 golden of the same inputs, and both entry points through the public API (dense, or every
// tensor a view with all strides doubled).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_block_attention_residuals.h"
#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "golden/block_attention_residuals.h"
#include "gradkit/float_convert.h"
#include "ops/mhc/kernels/block_residuals_kernel.h"
#include "ops/op_test_util.h"

namespace gradkit::test::block_residuals {

/** Elements of one dtype (FLOAT16 / BF16 bits or floats) as raw bytes. */
struct Buffer {
  aclDataType dtype = ACL_FLOAT;
  std::vector<unsigned char> bytes;

  Buffer() = default;
  Buffer(aclDataType type, int64_t count, unsigned char fill = 0)
      : dtype(type), bytes(static_cast<size_t>(count) * aclDataTypeSize(type), fill) {}

  int64_t size() const { return static_cast<int64_t>(bytes.size() / aclDataTypeSize(dtype)); }
  void* data() { return bytes.data(); }
  float get(int64_t i) const {
    if (dtype == ACL_FLOAT) {
      float v;
      std::memcpy(&v, bytes.data() + i * 4, 4);
      return v;
    }
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + i * 2, 2);
    return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
  }
  /** Stores `value` rounded to the dtype (nearest even). */
  void set(int64_t i, float value) {
    if (dtype == ACL_FLOAT) {
      std::memcpy(bytes.data() + i * 4, &value, 4);
      return;
    }
    const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
    std::memcpy(bytes.data() + i * 2, &bits, 2);
  }
  std::vector<double> widened() const {
    std::vector<double> out(static_cast<size_t>(size()));
    for (int64_t i = 0; i < size(); ++i) out[static_cast<size_t>(i)] = get(i);
    return out;
  }
  bool operator==(const Buffer& other) const { return dtype == other.dtype && bytes == other.bytes; }
};

struct Sizes {
  int64_t tokens, blocks, hidden;
  aclDataType dtype = ACL_FLOAT;
  float eps = 1e-6f;
};

/** Random inputs of one problem and room for every output (outputs start as 0xFF bytes). */
struct Data {
  Sizes s;
  Buffer partialBlock, blockRes, projWeight, normWeight, gradHidden;  // inputs, the main dtype
  Buffer hidden, invNorm, probs;                                      // forward outputs (invNorm, probs FLOAT)
  Buffer gradPartialBlock, gradBlockRes, gradProjWeight, gradNormWeight;
  std::vector<float> weight, weightSum;  // the kernels' [Hp] score weight and weight sum

  explicit Data(const Sizes& sizes, uint32_t seed = 5) : s(sizes) {
    const int64_t t = s.tokens, n = s.blocks, h = s.hidden, values = n + 1;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> wide(-2.0f, 2.0f), unit(-1.0f, 1.0f), scale(0.5f, 1.5f);
    const auto fill = [&](Buffer& b, int64_t count, auto& dist, float factor) {
      b = Buffer(s.dtype, count);
      for (int64_t i = 0; i < count; ++i) b.set(i, dist(rng) * factor);
    };
    fill(partialBlock, t * h, wide, 1.0f);
    fill(blockRes, t * n * h, wide, 1.0f);
    fill(projWeight, h, unit, 2.0f / std::sqrt(static_cast<float>(h)));  // scores of order 1
    fill(normWeight, h, scale, 1.0f);
    fill(gradHidden, t * h, unit, 1.0f);
    hidden = Buffer(s.dtype, t * h, 0xFF);
    invNorm = Buffer(ACL_FLOAT, t * values, 0xFF);
    probs = Buffer(ACL_FLOAT, t * values, 0xFF);
    gradPartialBlock = Buffer(s.dtype, t * h, 0xFF);
    gradBlockRes = Buffer(s.dtype, t * n * h, 0xFF);
    gradProjWeight = Buffer(s.dtype, h, 0xFF);
    gradNormWeight = Buffer(s.dtype, h, 0xFF);
    weight.assign(static_cast<size_t>(kernels::blockResidualsPaddedHidden(h)), 0.0f);
    weightSum.assign(weight.size(), 0.0f);
  }

  kernels::BlockResidualsProblem forward() {
    kernels::blockResidualsScoreWeight(s.dtype, normWeight.data(), projWeight.data(), s.hidden, weight.data());
    kernels::BlockResidualsProblem p;
    p.tokens = s.tokens;
    p.blocks = s.blocks;
    p.hidden = s.hidden;
    p.dtype = s.dtype;
    p.normEps = s.eps;
    p.partialBlock = partialBlock.data();
    p.blockRes = blockRes.data();
    p.weight = weight.data();
    p.hiddenStates = hidden.data();
    p.invNorm = reinterpret_cast<float*>(invNorm.data());
    p.probs = reinterpret_cast<float*>(probs.data());
    return p;
  }
  kernels::BlockResidualsGradProblem backward() {
    kernels::blockResidualsScoreWeight(s.dtype, normWeight.data(), projWeight.data(), s.hidden, weight.data());
    kernels::BlockResidualsGradProblem p;
    p.tokens = s.tokens;
    p.blocks = s.blocks;
    p.hidden = s.hidden;
    p.dtype = s.dtype;
    p.partialBlock = partialBlock.data();
    p.blockRes = blockRes.data();
    p.weight = weight.data();
    p.gradHidden = gradHidden.data();
    p.invNorm = reinterpret_cast<const float*>(invNorm.data());
    p.probs = reinterpret_cast<const float*>(probs.data());
    p.gradPartialBlock = gradPartialBlock.data();
    p.gradBlockRes = gradBlockRes.data();
    return p;
  }
  /** Both kernels over every token, the backward's weight sum into weightSum (no chunks: one partial). */
  void runKernels(const kernels::BlockResidualsKernels& k) {
    k.forward(forward(), 0, s.tokens);
    std::fill(weightSum.begin(), weightSum.end(), 0.0f);
    k.backward(backward(), 0, s.tokens, weightSum.data());
  }

  golden::BlockResidualSizes goldenSizes() const { return {s.tokens, s.blocks, s.hidden}; }
  golden::BlockResidualOutputs<double> goldenForward() const {
    const std::vector<double> pb = partialBlock.widened(), br = blockRes.widened(), pw = projWeight.widened(),
                              nw = normWeight.widened();
    return golden::blockAttentionResiduals<double>(goldenSizes(), pb.data(), br.data(), pw.data(), nw.data(),
                                                   static_cast<double>(s.eps));
  }
  /** The golden gradient from this data's (the kernels') invNorm and probs. */
  golden::BlockResidualGradients<double> goldenGrad() const {
    const std::vector<double> pb = partialBlock.widened(), br = blockRes.widened(), pw = projWeight.widened(),
                              nw = normWeight.widened(), g = gradHidden.widened(), inv = invNorm.widened(),
                              p = probs.widened();
    return golden::blockAttentionResidualsGrad<double>(goldenSizes(), pb.data(), br.data(), pw.data(), nw.data(),
                                                       g.data(), inv.data(), p.data());
  }
};

/** A view of `shape` over `b`: dense, or (strided) over a wide copy with every stride doubled (element i at 2 i). */
class ApiTensors {
 public:
  explicit ApiTensors(bool strided) : strided_(strided) {}

  aclTensor* input(Buffer& b, const std::vector<int64_t>& shape) { return make(b, shape, false); }
  aclTensor* output(Buffer& b, const std::vector<int64_t>& shape) { return make(b, shape, true); }

  /** Copies the strided outputs back into their dense buffers (element i from 2 i). */
  void collect() {
    for (Wide& w : wide_) {
      if (!w.output) continue;
      const size_t size = aclDataTypeSize(w.dense->dtype);
      for (int64_t i = 0; i < w.dense->size(); ++i) {
        std::memcpy(w.dense->bytes.data() + i * size, w.bytes.data() + 2 * i * size, size);
      }
    }
  }

 private:
  struct Wide {
    Buffer* dense;
    std::vector<unsigned char> bytes;
    bool output;
  };

  aclTensor* make(Buffer& b, const std::vector<int64_t>& shape, bool isOutput) {
    if (!strided_) return keep(makeView(b.data(), b.dtype, shape));
    const size_t size = aclDataTypeSize(b.dtype);
    Wide& w = wide_.emplace_back(Wide{&b, std::vector<unsigned char>(b.bytes.size() * 2 + size, 0xEE), isOutput});
    for (int64_t i = 0; i < b.size(); ++i) std::memcpy(w.bytes.data() + 2 * i * size, b.bytes.data() + i * size, size);
    std::vector<int64_t> strides = rowMajorStrides(shape);
    for (int64_t& stride : strides) stride *= 2;
    return keep(makeView(w.bytes.data(), b.dtype, shape, strides, 0, 2 * b.size() + 1));
  }
  aclTensor* keep(TensorPtr t) {
    EXPECT_NE(t, nullptr) << aclGetRecentErrMsg();
    tensors_.push_back(std::move(t));
    return tensors_.back().get();
  }

  bool strided_;
  std::deque<Wide> wide_;
  std::vector<TensorPtr> tensors_;
};

/** aclnnBlockAttentionResiduals on `d` through the API: the status of the first phase (ran and synchronized). */
inline aclnnStatus runForwardApi(Data& d, bool strided = false, bool needBackward = true, bool proj2d = false) {
  const int64_t t = d.s.tokens, n = d.s.blocks, h = d.s.hidden;
  ApiTensors api(strided);
  aclTensor* pb = api.input(d.partialBlock, {t, h});
  aclTensor* br = api.input(d.blockRes, {t, n, h});
  aclTensor* pw = api.input(d.projWeight, proj2d ? std::vector<int64_t>{1, h} : std::vector<int64_t>{h});
  aclTensor* nw = api.input(d.normWeight, {h});
  aclTensor* hs = api.output(d.hidden, {t, h});
  aclTensor* inv = api.output(d.invNorm, {t, n + 1});
  aclTensor* pr = api.output(d.probs, {t, n + 1});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = aclnnBlockAttentionResidualsGetWorkspaceSize(
      pb, br, pw, nw, -1, static_cast<double>(d.s.eps), needBackward, hs, inv, pr, &size, &executor);
  if (status != ACLNN_SUCCESS) return status;
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(aclnnBlockAttentionResiduals(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
  api.collect();
  return status;
}

/** aclnnBlockAttentionResidualsGrad on `d` (its invNorm and probs as the saved tensors) through the API. */
inline aclnnStatus runGradApi(Data& d, bool strided = false) {
  const int64_t t = d.s.tokens, n = d.s.blocks, h = d.s.hidden;
  ApiTensors api(strided);
  aclTensor* pb = api.input(d.partialBlock, {t, h});
  aclTensor* br = api.input(d.blockRes, {t, n, h});
  aclTensor* pw = api.input(d.projWeight, {1, h});
  aclTensor* nw = api.input(d.normWeight, {h});
  aclTensor* g = api.input(d.gradHidden, {t, h});
  aclTensor* inv = api.input(d.invNorm, {t, n + 1});
  aclTensor* pr = api.input(d.probs, {t, n + 1});
  aclTensor* gpb = api.output(d.gradPartialBlock, {t, h});
  aclTensor* gbr = api.output(d.gradBlockRes, {t, n, h});
  aclTensor* gpw = api.output(d.gradProjWeight, {1, h});
  aclTensor* gnw = api.output(d.gradNormWeight, {h});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = aclnnBlockAttentionResidualsGradGetWorkspaceSize(pb, br, pw, nw, g, inv, pr, -1, gpb, gbr,
                                                                              gpw, gnw, &size, &executor);
  if (status != ACLNN_SUCCESS) return status;
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(aclnnBlockAttentionResidualsGrad(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
  api.collect();
  return status;
}

/** The normwise relative error ||got - golden|| / ||golden|| of a whole output. */
inline double normwiseError(const std::vector<double>& got, const std::vector<double>& golden) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    error += (got[i] - golden[i]) * (got[i] - golden[i]);
    norm += golden[i] * golden[i];
  }
  return norm == 0 ? std::sqrt(error) : std::sqrt(error / norm);
}

/** The largest |got - golden| over the largest |golden|: the max-norm relative error of a whole output. */
inline double maxNormError(const std::vector<double>& got, const std::vector<double>& golden) {
  double worst = 0, top = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - golden[i]));
    top = std::max(top, std::fabs(golden[i]));
  }
  return top == 0 ? worst : worst / top;
}

/** The largest elementwise |got - golden| / max(|golden|, floor). */
inline double maxRelativeError(const std::vector<double>& got, const std::vector<double>& golden, double floor) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - golden[i]) / std::max(std::fabs(golden[i]), floor));
  }
  return worst;
}

}  // namespace gradkit::test::block_residuals
