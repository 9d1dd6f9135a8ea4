// The plain scalar BlockAttentionResiduals kernels, in the orders of block_residuals_kernel.h, and the per-call
// weight steps both implementations share.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gradkit/float_convert.h"
#include "ops/mhc/kernels/block_residuals_kernel.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kLanes = kBlockResidualsLanes;

/** Element `i` of a tensor of `dtype`, widened to fp32 (exact). */
float load(aclDataType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case ACL_FLOAT16:
      return halfToFloat(static_cast<const uint16_t*>(base)[i]);
    case ACL_BF16:
      return bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
    default:
      return static_cast<const float*>(base)[i];
  }
}

/** `value` stored as element `i` of a tensor of `dtype` (16-bit: rounded to nearest even). */
void store(aclDataType dtype, void* base, int64_t i, float value) {
  switch (dtype) {
    case ACL_FLOAT16:
      static_cast<uint16_t*>(base)[i] = floatToHalf(value);
      return;
    case ACL_BF16:
      static_cast<uint16_t*>(base)[i] = floatToBf16(value);
      return;
    default:
      static_cast<float*>(base)[i] = value;
  }
}

size_t elementSize(aclDataType dtype) { return dtype == ACL_FLOAT ? 4 : 2; }

/** The address of element `i` of a tensor of `dtype`. */
const void* advance(aclDataType dtype, const void* base, int64_t i) {
  return static_cast<const unsigned char*>(base) + static_cast<size_t>(i) * elementSize(dtype);
}

/** Value i of token t: blockRes[t, i, :] for i < N, partialBlock[t, :] for i = N. */
template <class Problem>
const void* valueOf(const Problem& p, int64_t t, int64_t i) {
  return i < p.blocks ? advance(p.dtype, p.blockRes, (t * p.blocks + i) * p.hidden)
                      : advance(p.dtype, p.partialBlock, t * p.hidden);
}

/** The two lane sums over h < Hp of v[h] * a[h] and v[h] * b[h] (elements past H are 0 in v; a, b padded). */
struct LaneSums {
  float first, second;
};

/** Lane sums of v * x and v * weight, x either v itself (xIsV) or another tensor of the dtype. */
LaneSums laneSums(aclDataType dtype, const void* v, const void* x, bool xIsV, const float* weight, int64_t hidden) {
  float first[kLanes] = {}, second[kLanes] = {};
  const int64_t padded = blockResidualsPaddedHidden(hidden);
  for (int64_t h = 0; h < padded; ++h) {
    const float value = h < hidden ? load(dtype, v, h) : 0.0f;
    const float other = xIsV ? value : (h < hidden ? load(dtype, x, h) : 0.0f);
    first[h % kLanes] = std::fma(value, other, first[h % kLanes]);
    second[h % kLanes] = std::fma(value, weight[h], second[h % kLanes]);
  }
  return {mhcPostCombineLanes(first), mhcPostCombineLanes(second)};
}

void forwardScalar(const BlockResidualsProblem& p, int64_t first, int64_t count) {
  const int64_t values = p.blocks + 1, hidden = p.hidden;
  float probs[kBlockResidualsMaxValues], inv[kBlockResidualsMaxValues];
  for (int64_t t = first; t < first + count; ++t) {
    for (int64_t i = 0; i < values; ++i) {
      const LaneSums sums = laneSums(p.dtype, valueOf(p, t, i), nullptr, true, p.weight, hidden);
      inv[i] = blockResidualsInvNorm(sums.first, hidden, p.normEps);
      probs[i] = sums.second * inv[i];
    }
    blockResidualsSoftmax(probs, values);
    if (p.invNorm != nullptr) {
      for (int64_t i = 0; i < values; ++i) {
        p.invNorm[t * values + i] = inv[i];
        p.probs[t * values + i] = probs[i];
      }
    }
    for (int64_t h = 0; h < hidden; ++h) {
      float acc = probs[0] * load(p.dtype, valueOf(p, t, 0), h);
      for (int64_t i = 1; i < values; ++i) acc = std::fma(probs[i], load(p.dtype, valueOf(p, t, i), h), acc);
      store(p.dtype, p.hiddenStates, t * hidden + h, acc);
    }
  }
}

void backwardScalar(const BlockResidualsGradProblem& p, int64_t first, int64_t count, float* weightSum) {
  const int64_t values = p.blocks + 1, hidden = p.hidden;
  float d[kBlockResidualsMaxValues], dot[kBlockResidualsMaxValues];
  float a[kBlockResidualsMaxValues], c[kBlockResidualsMaxValues];
  for (int64_t t = first; t < first + count; ++t) {
    const void* g = advance(p.dtype, p.gradHidden, t * hidden);
    const float* probs = p.probs + t * values;
    const float* inv = p.invNorm + t * values;
    for (int64_t i = 0; i < values; ++i) {
      const LaneSums sums = laneSums(p.dtype, valueOf(p, t, i), g, false, p.weight, hidden);
      d[i] = sums.first;
      dot[i] = sums.second;
    }
    blockResidualsGradCoefficients(d, dot, probs, inv, values, hidden, a, c);
    for (int64_t h = 0; h < hidden; ++h) {
      const float gh = load(p.dtype, g, h), w = p.weight[h];
      float s = weightSum[h];
      for (int64_t i = 0; i < values; ++i) {
        const float v = load(p.dtype, valueOf(p, t, i), h);
        const float grad = std::fma(-c[i], v, std::fma(a[i], w, gh * probs[i]));
        if (i < p.blocks) {
          store(p.dtype, p.gradBlockRes, (t * p.blocks + i) * hidden + h, grad);
        } else {
          store(p.dtype, p.gradPartialBlock, t * hidden + h, grad);
        }
        s = std::fma(a[i], v, s);
      }
      weightSum[h] = s;
    }
  }
}

}  // namespace

const BlockResidualsKernels kBlockResidualsScalarKernels{forwardScalar, backwardScalar};

void blockResidualsScoreWeight(aclDataType dtype, const void* normWeight, const void* projWeight, int64_t hidden,
                               float* weight) {
  const int64_t padded = blockResidualsPaddedHidden(hidden);
  for (int64_t h = 0; h < padded; ++h) {
    weight[h] = h < hidden ? load(dtype, normWeight, h) * load(dtype, projWeight, h) : 0.0f;
  }
}

void blockResidualsAddPartials(const float* partials, int64_t count, int64_t hidden, float* total) {
  const int64_t padded = blockResidualsPaddedHidden(hidden);
  for (int64_t c = 0; c < count; ++c) {
    for (int64_t h = 0; h < hidden; ++h) total[h] += partials[c * padded + h];
  }
}

void blockResidualsWeightGrads(aclDataType dtype, const float* weightSum, const void* projWeight,
                               const void* normWeight, int64_t hidden, void* gradProjWeight, void* gradNormWeight) {
  for (int64_t h = 0; h < hidden; ++h) {
    store(dtype, gradNormWeight, h, weightSum[h] * load(dtype, projWeight, h));
    store(dtype, gradProjWeight, h, weightSum[h] * load(dtype, normWeight, h));
  }
}

}  // namespace gradkit::kernels
