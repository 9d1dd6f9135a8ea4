// What every field of FaProblem means, element by element: the definitions the tiled kernels implement (and the
// scalar kernel calls directly). Element (b, n1, i, j): batch b, query head n1, query row i < s1, key row j < s2.
//
//   masked(i, j)  = (maskTensor && mask(b, n1, maskRow0 + i, maskCol0 + j) != 0)
//                || (band && j >= prefix && (j < i - bandLeft || j > i + bandRight))
//   x(i, j)       = sum_d q(i, d) k(j, d) + sum_d qRope(i, d) kRope(j, d)          (fp32 accumulation)
//   s(i, j)       = pse.beforeScale ? (x + pse(i, j)) * scale : x * scale + pse(i, j);   masked: -FLT_MAX
//   forward       m_i = max_j s, l_i = sum_j exp(s - m_i), P = exp(s - m_i) / l_i
//                 fully masked row (every j masked, or s2 == 0): out row 0, m_i = -FLT_MAX, l_i = +FLT_MAX
//   dropout       keep(i, j) in {0, 1} (faKeep below), P_d = P * keep * dropout.scale
//   out(i, c)     = sum_j P_d(i, j) v(j, c)
//   backward      P(i, j) = masked ? 0 : exp(s - m_i) / l_i   from the given statistics (m_i, l_i)
//                 dV(j, c) += sum_i P_d(i, j) dy(i, c)          dP(i, j) = sum_c dy(i, c) v(j, c)
//                 D_i = sum_c dy(i, c) attentionIn(i, c)       dS = P * (dP * keep * dropout.scale - D_i)
//                 dQ = scale * dS K, dK += scale * dS^T Q (rope parts alike), dK and dV summed over the G query
//                 heads of their kv head.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/philox.h"
#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::kernels {

/** True when element (i, j) of batch `batch`, query head n1 is masked (the mask byte is read only when needed). */
inline bool faMasked(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t i, int64_t j) {
  if (problem.band && j >= batch.prefix && (j < i - batch.bandLeft || j > i + batch.bandRight)) return true;
  if (!problem.maskTensor) return false;
  const FaView& m = problem.mask;
  const auto* bytes = static_cast<const uint8_t*>(m.data);
  return bytes[b * m.strideBatch + n1 * m.strideHead + (batch.maskRow0 + i) * m.strideRow +
               (batch.maskCol0 + j) * m.strideCol] != 0;
}

/** The stream byte of element index e (spec 3.3/3.4): byte e % 16 of Philox4x32-7 block ceil(offset/16) + e / 16. */
inline uint8_t faPhiloxByte(const FaDropout& dropout, uint64_t e) {
  const philox::Counter counter = philox::addToCounter(
      {static_cast<uint32_t>(dropout.counterLow), static_cast<uint32_t>(dropout.counterLow >> 32), 0, 0}, e / 16);
  const philox::Counter words = philox::block<7>(counter, {dropout.key[0], dropout.key[1]});
  const uint64_t inBlock = e % 16;
  return static_cast<uint8_t>(words[inBlock / 4] >> (8 * (inBlock % 4)));
}

/** keep(i, j) of query head n1 (1 without dropout). */
inline bool faKeep(const FaDropout& dropout, const FaBatch& batch, int64_t n1, int64_t i, int64_t j) {
  if (dropout.kind == FaDropoutKind::None) return true;
  const uint64_t e = static_cast<uint64_t>(batch.dropBase + (n1 * batch.s1 + i) * batch.dropRowLength + j);
  if (dropout.kind == FaDropoutKind::Packed) return ((dropout.bits[e / 8] >> (e % 8)) & 1u) != 0;
  return faPhiloxByte(dropout, e) <= dropout.threshold;
}

/** pse(i, j) as a float (0 for FaPseKind::None). Table reads outside the table give 0. */
inline float faPse(const FaPse& pse, const FaBatch& batch, int64_t b, int64_t n1, int64_t i, int64_t j,
                   float (*load)(const void* data, aclDataType dtype, int64_t index)) {
  switch (pse.kind) {
    case FaPseKind::None:
      return 0.0f;
    case FaPseKind::Table: {
      int64_t row = batch.pseRow0 + i, col = batch.pseCol0 + j;
      // The 1024-row ALiBi form keeps the last 1024 rows; the bias is constant along diagonals (spec 2.9).
      if (pse.alibiRows && row < 0) {
        col -= row;
        row = 0;
      }
      if (row < 0 || row >= pse.tableRows || col < 0 || col >= pse.tableCols) return 0.0f;
      const FaView& t = pse.table;
      return load(t.data, t.dtype, b * t.strideBatch + n1 * t.strideHead + row * t.strideRow + col * t.strideCol);
    }
    case FaPseKind::Slope:
    case FaPseKind::SqrtSlope: {
      const FaView& t = pse.table;
      const float slope = static_cast<const float*>(t.data)[b * t.strideBatch + n1 * t.strideHead];
      const int64_t delta = (j + pse.kvStartIdx) - (i + pse.qStartIdx);
      const auto distance = static_cast<float>(delta < 0 ? -delta : delta);
      return -slope * (pse.kind == FaPseKind::Slope ? distance : std::sqrt(distance));
    }
  }
  return 0.0f;
}

}  // namespace gradkit::kernels
