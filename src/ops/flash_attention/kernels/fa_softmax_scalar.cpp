// The scalar softmax kernels of flash attention (fa_softmax.h): the reference the Highway kernels reproduce bit for
// bit, and the steps both share.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/kernel_select.h"
#include "core/philox.h"
#include "hwy/highway.h"
#include "ops/flash_attention/kernels/fa_exp-inl.h"
#include "ops/flash_attention/kernels/fa_run.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"

namespace gradkit::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/** fa_exp.h's operations on one float. */
struct ScalarOps {
  using V = float;
  V set(float value) const { return value; }
  V add(V a, V b) const { return a + b; }
  V sub(V a, V b) const { return a - b; }
  V mul(V a, V b) const { return a * b; }
  V fma(V a, V b, V c) const { return std::fma(a, b, c); }
  V clamp(V x, float lo, float hi) const { return x > hi ? hi : (x >= lo ? x : lo); }  // NaN -> lo
  V scaleByPow2(V y, V shifted) const {
    const int32_t n = static_cast<int32_t>(bitsOf(shifted)) - static_cast<int32_t>(bitsOf(kFaExpRoundMagic));
    const int32_t n1 = n >> 1;  // arithmetic shift: floor(n / 2)
    const int32_t n2 = n - n1;
    return (y * floatOf(static_cast<uint32_t>(n1 + 127) << 23)) * floatOf(static_cast<uint32_t>(n2 + 127) << 23);
  }
  V zeroBelow(V x, float limit, V y) const { return x < limit ? 0.0f : y; }
  V keepNaN(V x, V y) const { return std::isnan(x) ? x : y; }
};

void forwardRowsScalar(const FaForwardRows& t) {
  for (int64_t r = 0; r < t.rows; ++r) {
    float* s = t.s + r * t.ld;
    float part[kFaStripes];
    for (float& p : part) p = -kInf;
    fa_detail::scaleMaxTail(s, 0, t.cols, t.scale, part);
    const float m = fa_detail::newRowMax(t.rowMax[r], faReduceMax(part), &t.rowAlpha[r]);
    t.rowMax[r] = m;
    if (m == -kInf) {
      for (int64_t j = 0; j < t.cols; ++j) s[j] = 0.0f;
      continue;
    }
    for (float& p : part) p = 0.0f;
    fa_detail::expSumTail(s, 0, t.cols, m, part);
    t.rowSum[r] = t.rowSum[r] * t.rowAlpha[r] + faReduceSum(part);
  }
}

void backwardRowsScalar(const FaBackwardRows& t) {
  for (int64_t r = 0; r < t.rows; ++r) {
    fa_detail::backwardTail(t.s + r * t.ld, 0, t.cols, t.scale, t.rowMax[r], t.rowSum[r]);
  }
}

void expScalar(const float* x, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = faExpScalar(x[i]);
}

}  // namespace

float faExpScalar(float x) { return HWY_NAMESPACE::faExp(ScalarOps{}, x); }

void faPhiloxBytesScalar(const FaDropout& dropout, uint64_t firstBlock, int64_t blocks, uint8_t* out) {
  const philox::Counter base = {static_cast<uint32_t>(dropout.counterLow),
                                static_cast<uint32_t>(dropout.counterLow >> 32), 0, 0};
  const philox::Key key = {dropout.key[0], dropout.key[1]};
  for (int64_t t = 0; t < blocks; ++t) {
    const philox::Counter words =
        philox::block<7>(philox::addToCounter(base, firstBlock + static_cast<uint64_t>(t)), key);
    for (int w = 0; w < 4; ++w) {
      for (int k = 0; k < 4; ++k) out[16 * t + 4 * w + k] = static_cast<uint8_t>(words[w] >> (8 * k));
    }
  }
}

namespace fa_detail {

void scaleMaxTail(float* s, int64_t from, int64_t cols, float scale, float* part) {
  for (int64_t j = from; j < cols; ++j) {
    const float v = s[j] * scale;
    s[j] = v;
    part[j % kFaStripes] = faMaxStep(part[j % kFaStripes], v);
  }
}

void expSumTail(float* s, int64_t from, int64_t cols, float m, float* part) {
  for (int64_t j = from; j < cols; ++j) {
    const float e = faExpScalar(s[j] - m);
    s[j] = e;
    part[j % kFaStripes] += e;
  }
}

void backwardTail(float* s, int64_t from, int64_t cols, float scale, float m, float l) {
  if (m == -FLT_MAX) {
    for (int64_t j = from; j < cols; ++j) s[j] = 0.0f;
    return;
  }
  for (int64_t j = from; j < cols; ++j) s[j] = faFlushSubnormal(faExpScalar(s[j] * scale - m) / l);
}

float newRowMax(float m, float t, float* alpha) {
  const float next = faMaxStep(m, t);
  *alpha = next == -kInf ? 1.0f : faExpScalar(m - next);
  return next;
}

}  // namespace fa_detail

const FaKernelTable kFaScalarKernels{faRunGemmScalar, forwardRowsScalar,   backwardRowsScalar,
                                     expScalar,       faPhiloxBytesScalar, faRoundRowsToBf16};

const FaKernelTable& faKernels() { return chooseKernels(kFaSimdKernels, kFaScalarKernels); }

}  // namespace gradkit::kernels
