// The flash attention golden's forward and backward (spec fag.md 1.2, 1.3, 2.12). Every sum is a plain sequential
// loop in a fixed natural order (head dim ascending, then the rope dims; keys ascending; query rows ascending, query
// heads of a group ascending), one operation per statement, so that the float instantiation is an honest naive fp32
// computation.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "golden/flash_attention.h"

#include "gradkit/float_convert.h"

namespace gradkit::golden {

namespace {

/** x rounded to bf16 when the problem multiplies bf16 operands (bf16ProductOperands), else x. */
template <class Real>
Real productOperand(const FlashAttentionProblem& p, Real x) {
  return p.bf16ProductOperands ? static_cast<Real>(bf16ToFloat(doubleToBf16(x))) : x;
}

// The per-(batch, head) facts one row loop needs: masked and keep flags of the [S1_b][S2_b] block.
struct HeadBlock {
  std::vector<uint8_t> masked;
  std::vector<uint8_t> kept;
};

HeadBlock headBlock(const FlashAttentionProblem& p, int64_t b, int64_t n1) {
  const int64_t s1 = p.s1[b], s2 = p.s2[b];
  HeadBlock block;
  block.masked.assign(static_cast<size_t>(s1 * s2), 0);
  block.kept.assign(static_cast<size_t>(s1 * s2), 1);
  const bool philox = p.keepProb < 1.0f && p.dropMask == nullptr;
  const uint32_t threshold = flashAttentionDropThreshold(p.keepProb);
  for (int64_t i = 0; i < s1; ++i) {
    std::vector<uint8_t> stream;
    if (philox && s2 > 0)  // a row starts on a 16-byte block: fetch it whole
      stream = flashAttentionPhiloxBytes(p.seed, p.offset, static_cast<uint64_t>(p.dropStreamIndex(b, n1, i, 0)),
                                         static_cast<uint64_t>(s2));
    for (int64_t j = 0; j < s2; ++j) {
      block.masked[i * s2 + j] = flashAttentionMasked(p, b, n1, i, j) ? 1 : 0;
      if (philox)
        block.kept[i * s2 + j] = stream[j] <= threshold ? 1 : 0;
      else
        block.kept[i * s2 + j] = flashAttentionKept(p, b, n1, i, j) ? 1 : 0;
    }
  }
  return block;
}

// The score s(i, j) of an unmasked element: X = q.k + qRope.kRope, then bias and scale in pseType's order.
template <class Real>
Real score(const FlashAttentionProblem& p, const FlashAttentionInputs<Real>& in, int64_t b, int64_t n1, int64_t i,
           int64_t j, int64_t qRow, int64_t kvRow) {
  Real x = 0;
  for (int64_t d = 0; d < p.d; ++d) {
    const Real product = in.q[qRow * p.d + d] * in.k[kvRow * p.d + d];
    x = x + product;
  }
  for (int64_t d = 0; d < p.dRope; ++d) {
    const Real product = in.qRope[qRow * p.dRope + d] * in.kRope[kvRow * p.dRope + d];
    x = x + product;
  }
  const auto scale = static_cast<Real>(p.scale);
  const Real bias = flashAttentionBias<Real>(p, b, n1, i, j);
  if (p.hasPse && p.pseType == 1) {
    const Real shifted = x + bias;
    return shifted * scale;
  }
  const Real scaled = x * scale;
  return scaled + bias;
}

template <class Real>
void checkInputs(const FlashAttentionProblem& p, const FlashAttentionInputs<Real>& in) {
  checkFlashAttentionProblem(p);
  const bool empty = p.qRows() == 0 || p.kvRows() == 0;
  if (!empty && ((p.d > 0 && (!in.q || !in.k)) || (p.dv > 0 && !in.v)))
    throw std::invalid_argument("golden::flashAttention: q, k and v are required");
  if (!empty && p.dRope > 0 && (!in.qRope || !in.kRope))
    throw std::invalid_argument("golden::flashAttention: dRope > 0 needs qRope and kRope");
}

}  // namespace

template <class Real>
FlashAttentionForwardOutputs<Real> flashAttentionForward(const FlashAttentionProblem& p,
                                                         const FlashAttentionInputs<Real>& in) {
  checkInputs(p, in);
  const int64_t G = p.groups(), DV = p.dv;
  const Real keepScale = Real(1) / static_cast<Real>(p.keepProb);
  FlashAttentionForwardOutputs<Real> out;
  out.out.assign(static_cast<size_t>(p.qRows() * DV), Real(0));
  out.softmaxMax.assign(static_cast<size_t>(p.qRows()), Real(0));
  out.softmaxSum.assign(static_cast<size_t>(p.qRows()), Real(0));
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t s2 = p.s2[b];
    std::vector<Real> s(static_cast<size_t>(s2)), e(static_cast<size_t>(s2));
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      const HeadBlock block = headBlock(p, b, n1);
      const int64_t q0 = p.qRow(b, n1, 0), kv0 = p.kvRow(b, n1 / G, 0);  // rows are contiguous per (b, head)
      for (int64_t i = 0; i < p.s1[b]; ++i) {
        const int64_t row = q0 + i;
        bool valid = false;
        Real top = -std::numeric_limits<Real>::infinity();
        for (int64_t j = 0; j < s2; ++j) {
          if (block.masked[i * s2 + j]) continue;
          s[j] = score(p, in, b, n1, i, j, row, kv0 + j);
          top = valid ? std::max(top, s[j]) : s[j];
          valid = true;
        }
        if (!valid) {  // fully masked row (spec 2.12): out stays 0
          out.softmaxMax[row] = static_cast<Real>(-FLT_MAX);
          out.softmaxSum[row] = static_cast<Real>(FLT_MAX);
          continue;
        }
        Real sum = 0;
        for (int64_t j = 0; j < s2; ++j) {
          if (block.masked[i * s2 + j]) continue;
          const Real shifted = s[j] - top;
          e[j] = std::exp(shifted);
          sum = sum + e[j];
        }
        out.softmaxMax[row] = top;
        out.softmaxSum[row] = sum;
        Real* o = out.out.data() + row * DV;
        for (int64_t j = 0; j < s2; ++j) {
          if (block.masked[i * s2 + j] || !block.kept[i * s2 + j]) continue;
          // The bf16 chain multiplies the unnormalised exp (as tiled kernels do) and divides the sum by l at the end.
          const Real dropped = p.bf16ProductOperands ? productOperand(p, e[j] * keepScale) : e[j] / sum * keepScale;
          const Real* vRow = in.v + (kv0 + j) * DV;
          for (int64_t c = 0; c < DV; ++c) {
            const Real product = dropped * vRow[c];
            o[c] = o[c] + product;
          }
        }
        if (p.bf16ProductOperands) {
          for (int64_t c = 0; c < DV; ++c) o[c] = o[c] / sum;
        }
      }
    }
  }
  return out;
}

template <class Real>
FlashAttentionGradOutputs<Real> flashAttentionBackward(const FlashAttentionProblem& p,
                                                       const FlashAttentionGradInputs<Real>& in) {
  const FlashAttentionInputs<Real>& t = in.tensors;
  checkInputs(p, t);
  if (p.qRows() > 0 && (!in.dy || !in.attentionIn || !in.softmaxMax || !in.softmaxSum))
    throw std::invalid_argument("golden::flashAttention: dy, attentionIn and the statistics are required");
  const int64_t G = p.groups(), D = p.d, DV = p.dv, DR = p.dRope;
  const Real keepScale = Real(1) / static_cast<Real>(p.keepProb);
  const auto scale = static_cast<Real>(p.scale);
  FlashAttentionGradOutputs<Real> out;
  out.dq.assign(static_cast<size_t>(p.qRows() * D), Real(0));
  out.dk.assign(static_cast<size_t>(p.kvRows() * D), Real(0));
  out.dv.assign(static_cast<size_t>(p.kvRows() * DV), Real(0));
  out.dqRope.assign(static_cast<size_t>(p.qRows() * DR), Real(0));
  out.dkRope.assign(static_cast<size_t>(p.kvRows() * DR), Real(0));
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t s2 = p.s2[b];
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      const HeadBlock block = headBlock(p, b, n1);
      const int64_t q0 = p.qRow(b, n1, 0), kv0 = p.kvRow(b, n1 / G, 0);  // rows are contiguous per (b, head)
      for (int64_t i = 0; i < p.s1[b]; ++i) {
        const int64_t row = q0 + i;
        const Real* dy = in.dy + row * DV;
        Real dRow = 0;  // Drow_i = sum_c dy * attentionIn
        for (int64_t c = 0; c < DV; ++c) {
          const Real product = dy[c] * in.attentionIn[row * DV + c];
          dRow = dRow + product;
        }
        for (int64_t j = 0; j < s2; ++j) {
          if (block.masked[i * s2 + j]) continue;  // P = 0: no contribution
          const int64_t kvRow = kv0 + j;
          const Real shifted = score(p, t, b, n1, i, j, row, kvRow) - in.softmaxMax[row];
          const Real probability = std::exp(shifted) / in.softmaxSum[row];
          const Real keep = block.kept[i * s2 + j] ? keepScale : Real(0);
          const Real dropped = productOperand(p, probability * keep);
          Real dP = 0;
          for (int64_t c = 0; c < DV; ++c) {
            const Real product = dy[c] * t.v[kvRow * DV + c];
            dP = dP + product;
          }
          const Real dPDropped = dP * keep;
          const Real centered = dPDropped - dRow;
          // The bf16 chain rounds dS * scale (the operand the tiled kernels multiply); fp32 and fp64 scale the sums.
          const Real dS =
              p.bf16ProductOperands ? productOperand(p, probability * centered * scale) : probability * centered;
          for (int64_t c = 0; c < DV; ++c) {
            const Real product = dropped * dy[c];
            out.dv[kvRow * DV + c] = out.dv[kvRow * DV + c] + product;
          }
          for (int64_t d = 0; d < D; ++d) {
            const Real toQ = dS * t.k[kvRow * D + d];
            out.dq[row * D + d] = out.dq[row * D + d] + toQ;
            const Real toK = dS * t.q[row * D + d];
            out.dk[kvRow * D + d] = out.dk[kvRow * D + d] + toK;
          }
          for (int64_t d = 0; d < DR; ++d) {
            const Real toQ = dS * t.kRope[kvRow * DR + d];
            out.dqRope[row * DR + d] = out.dqRope[row * DR + d] + toQ;
            const Real toK = dS * t.qRope[row * DR + d];
            out.dkRope[kvRow * DR + d] = out.dkRope[kvRow * DR + d] + toK;
          }
        }
      }
    }
  }
  // dq = (dS K) * scale, dk = (dS^T Q) * scale: the scale applied once to each finished sum.
  if (!p.bf16ProductOperands) {
    for (std::vector<Real>* grad : {&out.dq, &out.dk, &out.dqRope, &out.dkRope})
      for (Real& value : *grad) value = value * scale;
  }
  return out;
}

template FlashAttentionForwardOutputs<double> flashAttentionForward(const FlashAttentionProblem&,
                                                                    const FlashAttentionInputs<double>&);
template FlashAttentionForwardOutputs<float> flashAttentionForward(const FlashAttentionProblem&,
                                                                   const FlashAttentionInputs<float>&);
template FlashAttentionGradOutputs<double> flashAttentionBackward(const FlashAttentionProblem&,
                                                                  const FlashAttentionGradInputs<double>&);
template FlashAttentionGradOutputs<float> flashAttentionBackward(const FlashAttentionProblem&,
                                                                 const FlashAttentionGradInputs<float>&);

}  // namespace gradkit::golden
