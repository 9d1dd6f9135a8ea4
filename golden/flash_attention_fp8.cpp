// The FP8 flash attention golden (spec fag.md 5.9): block quantisation helpers, the FP8 forward and the FP8 backward,
// in double with correctly rounded fp8 casts. Sums are plain loops in natural order (head dim, then keys or query rows
// ascending inside a 128 block, blocks ascending); the masks, pse and dropout come from golden/flash_attention.h.
#include "golden/flash_attention_fp8.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "gradkit/float_convert.h"

namespace gradkit::golden {

float fp8Max(Fp8Format format) { return format == Fp8Format::E5M2 ? 57344.0f : 448.0f; }

uint8_t fp8Encode(Fp8Format format, float value) {
  return format == Fp8Format::E5M2 ? floatToFp8e5m2(value) : floatToFp8e4m3(value);
}

float fp8Decode(Fp8Format format, uint8_t bits) {
  return format == Fp8Format::E5M2 ? fp8e5m2ToFloat(bits) : fp8e4m3ToFloat(bits);
}

float fp8Round(Fp8Format format, float value) { return fp8Decode(format, fp8Encode(format, value)); }

double fp8RoundDouble(Fp8Format format, double value) {
  // Round to odd in float first: one more rounding to 2 or 3 mantissa bits is then the correct rounding of the double.
  return fp8Round(format, detail::doubleToFloatRoundToOdd(value));
}

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/** Quantises rows [0, rows) of x (row stride cols) in blocks into out (codes / values at the same offsets). */
void quantizeSlab(Fp8Format format, const float* x, int64_t rows, int64_t cols, int64_t blockRows, int64_t offset,
                  Fp8Quantized* out, float* dScale) {
  for (int64_t r0 = 0, blk = 0; r0 < rows; r0 += blockRows, ++blk) {
    const int64_t r1 = std::min(rows, r0 + blockRows);
    float top = 0.0f;
    for (int64_t e = r0 * cols; e < r1 * cols; ++e) top = std::max(top, std::fabs(x[e]));
    const float scale = top > 0.0f ? fp8Max(format) / top : 1.0f;
    for (int64_t e = r0 * cols; e < r1 * cols; ++e) {
      const float scaled = x[e] * scale;
      const uint8_t code = fp8Encode(format, scaled);
      out->codes[static_cast<size_t>(offset + e)] = code;
      out->values[static_cast<size_t>(offset + e)] = fp8Decode(format, code);
    }
    dScale[blk] = 1.0f / scale;
  }
}

/** Side quantisation: per (b, head) slab of rows[b] rows, dScale [B][heads][blocks]. */
Fp8Quantized quantizeSide(const FlashAttentionProblem& p, Fp8Format format, const float* x, int64_t dim, bool query) {
  const std::vector<int64_t>& rows = query ? p.s1 : p.s2;
  const int64_t heads = query ? p.n1 : p.n2;
  const int64_t blocks = fp8Blocks(rows);
  const int64_t total = query ? p.qRows() : p.kvRows();
  Fp8Quantized out;
  out.codes.assign(static_cast<size_t>(total * dim), 0);
  out.values.assign(static_cast<size_t>(total * dim), 0.0f);
  out.dScale.assign(static_cast<size_t>(p.batch * heads * blocks), 1.0f);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t n = 0; n < heads; ++n) {
      const int64_t row0 = query ? p.qRow(b, n, 0) : p.kvRow(b, n, 0);
      quantizeSlab(format, x + row0 * dim, rows[static_cast<size_t>(b)], dim, kFp8BlockRows, row0 * dim, &out,
                   out.dScale.data() + (b * heads + n) * blocks);
    }
  }
  return out;
}

/** What one (b, n1) needs: its row / column counts, first rows, and scale rows. */
struct Head {
  int64_t b, n1, n2, s1, s2, q0, kv0;
  const float* dsQ;  // [blocks1]
  const float* dsK;  // [blocks2]
  const float* dsV;  // [blocks2]
};

Head headOf(const FlashAttentionProblem& p, const FlashAttentionFp8Inputs& in, int64_t b, int64_t n1) {
  const int64_t n2 = n1 / p.groups();
  const int64_t blocks1 = fp8Blocks(p.s1), blocks2 = fp8Blocks(p.s2);
  return {b,
          n1,
          n2,
          p.s1[static_cast<size_t>(b)],
          p.s2[static_cast<size_t>(b)],
          p.qRow(b, n1, 0),
          p.kvRow(b, n2, 0),
          in.dScaleQ + (b * p.n1 + n1) * blocks1,
          in.dScaleK + (b * p.n2 + n2) * blocks2,
          in.dScaleV + (b * p.n2 + n2) * blocks2};
}

/** s(i, j) from the de-quantised scores into *s; false (nothing written) when (i, j) is masked. */
bool score(const FlashAttentionProblem& p, const FlashAttentionFp8Inputs& in, const Head& h, int64_t i, int64_t j,
           double* s) {
  if (flashAttentionMasked(p, h.b, h.n1, i, j)) return false;
  double x = 0;
  for (int64_t d = 0; d < p.d; ++d) {
    const double product = static_cast<double>(in.q[(h.q0 + i) * p.d + d]) * in.k[(h.kv0 + j) * p.d + d];
    x = x + product;
  }
  const double factor = static_cast<double>(h.dsQ[i / kFp8BlockRows]) * h.dsK[j / kFp8BlockRows];
  x = x * factor;
  const double scale = p.scale;
  const double bias = flashAttentionBias<double>(p, h.b, h.n1, i, j);
  *s = p.hasPse && p.pseType == 1 ? (x + bias) * scale : x * scale + bias;
  return true;
}

double keepFactor(const FlashAttentionProblem& p, const Head& h, int64_t i, int64_t j) {
  if (p.keepProb >= 1.0f) return 1.0;
  return flashAttentionKept(p, h.b, h.n1, i, j) ? 1.0 / static_cast<double>(p.keepProb) : 0.0;
}

void checkFp8Inputs(const FlashAttentionProblem& p, const FlashAttentionFp8Inputs& in) {
  checkFlashAttentionProblem(p);
  if (p.dRope != 0) throw std::invalid_argument("golden::flashAttentionFp8: rope is not part of the FP8 chain");
  if (p.qRows() > 0 && p.kvRows() > 0 && (!in.q || !in.k || !in.v || !in.dScaleQ || !in.dScaleK || !in.dScaleV))
    throw std::invalid_argument("golden::flashAttentionFp8: q, k, v and their scales are required");
}

}  // namespace

int64_t fp8Blocks(const std::vector<int64_t>& rowsPerBatch) {
  int64_t longest = 0;
  for (const int64_t rows : rowsPerBatch) longest = std::max(longest, rows);
  return ceilDiv(longest, kFp8BlockRows);
}

Fp8Quantized fp8QuantizeRowBlocks(Fp8Format format, const float* x, int64_t rows, int64_t cols, int64_t blockRows) {
  if (rows < 0 || cols < 0 || blockRows < 1) throw std::invalid_argument("fp8QuantizeRowBlocks: bad sizes");
  Fp8Quantized out;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.values.assign(static_cast<size_t>(rows * cols), 0.0f);
  out.dScale.assign(static_cast<size_t>(ceilDiv(rows, blockRows)), 1.0f);
  quantizeSlab(format, x, rows, cols, blockRows, 0, &out, out.dScale.data());
  return out;
}

Fp8Quantized fp8QuantizeQuerySide(const FlashAttentionProblem& problem, Fp8Format format, const float* x, int64_t dim) {
  return quantizeSide(problem, format, x, dim, true);
}

Fp8Quantized fp8QuantizeKeySide(const FlashAttentionProblem& problem, Fp8Format format, const float* x, int64_t dim) {
  return quantizeSide(problem, format, x, dim, false);
}

FlashAttentionForwardOutputs<double> flashAttentionFp8Forward(const FlashAttentionProblem& p,
                                                              const FlashAttentionFp8Inputs& in) {
  checkFp8Inputs(p, in);
  const int64_t DV = p.dv;
  FlashAttentionForwardOutputs<double> out;
  out.out.assign(static_cast<size_t>(p.qRows() * DV), 0.0);
  out.softmaxMax.assign(static_cast<size_t>(p.qRows()), 0.0);
  out.softmaxSum.assign(static_cast<size_t>(p.qRows()), 0.0);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      const Head h = headOf(p, in, b, n1);
      std::vector<double> s(static_cast<size_t>(h.s2));
      std::vector<uint8_t> valid(static_cast<size_t>(h.s2));
      for (int64_t i = 0; i < h.s1; ++i) {
        const int64_t row = h.q0 + i;
        bool any = false;
        double top = -INFINITY;
        for (int64_t j = 0; j < h.s2; ++j) {
          valid[j] = score(p, in, h, i, j, &s[j]) ? 1 : 0;
          if (!valid[j]) continue;
          top = any ? std::max(top, s[j]) : s[j];
          any = true;
        }
        if (!any) {  // fully masked row (spec 2.12)
          out.softmaxMax[row] = -FLT_MAX;
          out.softmaxSum[row] = FLT_MAX;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < h.s2; ++j) {
          if (!valid[j]) continue;
          s[j] = std::exp(s[j] - top);
          sum = sum + s[j];
        }
        out.softmaxMax[row] = top;
        out.softmaxSum[row] = sum;
        double* o = out.out.data() + row * DV;
        for (int64_t j0 = 0; j0 < h.s2; j0 += kFp8BlockRows) {
          std::vector<double> part(static_cast<size_t>(DV), 0.0);
          for (int64_t j = j0; j < std::min(h.s2, j0 + kFp8BlockRows); ++j) {
            if (!valid[j]) continue;
            const double pd = fp8RoundDouble(in.format, s[j] / sum * keepFactor(p, h, i, j));
            const float* vRow = in.v + (h.kv0 + j) * DV;
            for (int64_t c = 0; c < DV; ++c) part[c] = part[c] + pd * vRow[c];
          }
          const double dsV = h.dsV[j0 / kFp8BlockRows];
          for (int64_t c = 0; c < DV; ++c) o[c] = o[c] + part[c] * dsV;
        }
      }
    }
  }
  return out;
}

FlashAttentionGradOutputs<double> flashAttentionFp8Backward(const FlashAttentionProblem& p,
                                                            const FlashAttentionFp8GradInputs& in) {
  const FlashAttentionFp8Inputs& t = in.tensors;
  checkFp8Inputs(p, t);
  if (p.qRows() > 0 && (!in.dy || !in.dScaleDy || !in.attentionIn || !in.softmaxMax || !in.softmaxSum))
    throw std::invalid_argument("golden::flashAttentionFp8Backward: dy, its scales, attentionIn and the statistics");
  const int64_t D = p.d, DV = p.dv, B = kFp8BlockRows;
  const double fmax = fp8Max(t.format);
  const int64_t blocks1 = fp8Blocks(p.s1);
  FlashAttentionGradOutputs<double> out;
  out.dq.assign(static_cast<size_t>(p.qRows() * D), 0.0);
  out.dk.assign(static_cast<size_t>(p.kvRows() * D), 0.0);
  out.dv.assign(static_cast<size_t>(p.kvRows() * DV), 0.0);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      const Head h = headOf(p, t, b, n1);
      const float* dsDy = in.dScaleDy + (b * p.n1 + n1) * blocks1;
      const int64_t s1 = h.s1, s2 = h.s2;
      // P, P_d8 and dS of the whole head, then the quantised dS.
      std::vector<double> pd8(static_cast<size_t>(s1 * s2), 0.0), ds(pd8.size(), 0.0);
      for (int64_t i = 0; i < s1; ++i) {
        const int64_t row = h.q0 + i;
        const float* dy = in.dy + row * DV;
        const double dyScale = dsDy[i / B];
        double dRow = 0;
        for (int64_t c = 0; c < DV; ++c) dRow = dRow + in.attentionIn[row * DV + c] * (dy[c] * dyScale);
        for (int64_t j = 0; j < s2; ++j) {
          double s = 0;
          if (!score(p, t, h, i, j, &s)) continue;  // P = 0
          const double pr = std::exp(s - in.softmaxMax[row]) / in.softmaxSum[row];
          const double keep = keepFactor(p, h, i, j);
          double dp = 0;
          for (int64_t c = 0; c < DV; ++c) dp = dp + static_cast<double>(dy[c]) * t.v[(h.kv0 + j) * DV + c];
          dp = dp * dyScale * h.dsV[j / B];
          pd8[i * s2 + j] = fp8RoundDouble(t.format, pr * keep);
          ds[i * s2 + j] = (dp * keep - dRow) * pr;
        }
      }
      // dS quantised per 128 x 128 block; dsDeq per block.
      const int64_t rb = ceilDiv(s1, B), cb = ceilDiv(s2, B);
      std::vector<double> dsDeq(static_cast<size_t>(rb * cb), 0.0);
      for (int64_t bi = 0; bi < rb; ++bi) {
        for (int64_t bj = 0; bj < cb; ++bj) {
          double top = 0;
          for (int64_t i = bi * B; i < std::min(s1, bi * B + B); ++i)
            for (int64_t j = bj * B; j < std::min(s2, bj * B + B); ++j) top = std::max(top, std::fabs(ds[i * s2 + j]));
          const double scale = top < kFp8DsEpsilon ? 0.0 : fmax / top;
          dsDeq[bi * cb + bj] = scale == 0.0 ? 0.0 : 1.0 / scale;
          for (int64_t i = bi * B; i < std::min(s1, bi * B + B); ++i)
            for (int64_t j = bj * B; j < std::min(s2, bj * B + B); ++j)
              ds[i * s2 + j] = fp8RoundDouble(t.format, ds[i * s2 + j] * scale);
        }
      }
      // dv and dk of the kv head: per key row, blocks of query rows; dq: per query row, blocks of keys.
      for (int64_t j = 0; j < s2; ++j) {
        double* dvRow = out.dv.data() + (h.kv0 + j) * DV;
        double* dkRow = out.dk.data() + (h.kv0 + j) * D;
        for (int64_t bi = 0; bi < rb; ++bi) {
          std::vector<double> partV(static_cast<size_t>(DV), 0.0), partK(static_cast<size_t>(D), 0.0);
          for (int64_t i = bi * B; i < std::min(s1, bi * B + B); ++i) {
            const float* dy = in.dy + (h.q0 + i) * DV;
            const float* q = t.q + (h.q0 + i) * D;
            for (int64_t c = 0; c < DV; ++c) partV[c] = partV[c] + pd8[i * s2 + j] * dy[c];
            for (int64_t d = 0; d < D; ++d) partK[d] = partK[d] + ds[i * s2 + j] * q[d];
          }
          const double factorK = dsDeq[bi * cb + j / B] * h.dsQ[bi];
          for (int64_t c = 0; c < DV; ++c) dvRow[c] = dvRow[c] + partV[c] * dsDy[bi];
          for (int64_t d = 0; d < D; ++d) dkRow[d] = dkRow[d] + partK[d] * factorK;
        }
      }
      for (int64_t i = 0; i < s1; ++i) {
        double* dqRow = out.dq.data() + (h.q0 + i) * D;
        for (int64_t bj = 0; bj < cb; ++bj) {
          std::vector<double> part(static_cast<size_t>(D), 0.0);
          for (int64_t j = bj * B; j < std::min(s2, bj * B + B); ++j) {
            const float* k = t.k + (h.kv0 + j) * D;
            for (int64_t d = 0; d < D; ++d) part[d] = part[d] + ds[i * s2 + j] * k[d];
          }
          const double factor = dsDeq[(i / B) * cb + bj] * h.dsK[bj];
          for (int64_t d = 0; d < D; ++d) dqRow[d] = dqRow[d] + part[d] * factor;
        }
      }
    }
  }
  const double scale = p.scale;
  for (std::vector<double>* grad : {&out.dq, &out.dk})
    for (double& value : *grad) value = value * scale;
  return out;
}

}  // namespace gradkit::golden
