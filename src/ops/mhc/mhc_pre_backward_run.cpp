// The run of an aclnnMhcPreBackward[V2] plan (mhc_pre_backward_plan.h): the two passes over the tokens, one group
// at a time, on the workspace the plan booked; the kernels do the per-element work.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "core/compensated.h"
#include "core/hf32.h"
#include "core/int_math.h"
#include "core/parallel.h"
#include "ops/mhc/mhc_pre_backward_plan.h"

namespace gradkit::ops {
namespace {

using Inputs = MhcPreBackwardIn;
using Outputs = MhcPreBackwardOut;

/**
 * Pass 1 for token t (spec mhc.md 3.4 steps 1-7, 11): dz [F], the token's grad_alpha terms [3], dm [F] (rounded to
 * HF32 in mode 1) and the RMS coefficient -g_r * r^3 / K.
 */
void tokenTerms(const MhcPreBackwardPasses& plan, const Inputs& in, int64_t t, float* gPre, float* dz, float* alphaTerm,
                float* dmRow, float& rmsCoef) {
  const MhcDims& d = plan.dims;
  const int64_t n = d.streams, f = d.fusion, k = d.width();
  const size_t size = dtypeSize(plan.dtype);
  plan.kernels->streamDots(plan.dtype, in.x + t * k * size, in.gradHIn + t * d.hidden * size, n, d.hidden, gPre);
  const float r = in.invRms[t];
  const float* m = in.hMix + t * f;
  for (int64_t i = 0; i < n; ++i) {
    const float s = in.hPre[t * n + i] - plan.hcEps;  // sigmoid(z_pre) from the saved h_pre
    dz[i] = gPre[i] * (s * (1.0f - s));
  }
  for (int64_t i = 0; i < n; ++i) {
    const float h = in.hPost[t * n + i];  // h_post = 2 sigmoid(z_post): derivative h (1 - h/2)
    dz[n + i] = in.gradHPost[t * n + i] * (h * (1.0f - h * 0.5f));
  }
  for (int64_t j = 0; j < d.residual; ++j) dz[2 * n + j] = in.gradHRes[t * d.residual + j];

  alphaTerm[0] = alphaTerm[1] = alphaTerm[2] = 0.0f;
  float gR = 0.0f;
  for (int64_t row = 0; row < f; ++row) {
    const int block = row < n ? 0 : row < 2 * n ? 1 : 2;
    alphaTerm[block] += dz[row] * (m[row] * r);
    const float dw = dz[row] * in.alpha[block];
    gR += dw * m[row];
    const float dmValue = dw * r;
    dmRow[row] = plan.hf32 ? roundToHf32(dmValue) : dmValue;
  }
  rmsCoef = -(gR * (r * r * r)) / static_cast<float>(k);
}

// Pass 1 for the group of tokens [g0, g1) (whole chunks from g0): dm and the RMS coefficients of the group (rows
// from g0), each chunk's compensated sums, then those added to `totals` in chunk order: the same sequence of adds
// for any thread count and any grouping.
void passOneGroup(const MhcPreBackwardPasses& plan, const Inputs& in, void* memory, int64_t g0, int64_t g1,
                  std::vector<NeumaierSum<float>>& totals) {
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, terms = f + 3;
  float* dm = plan.dm.in<float>(memory);
  float* dmTiles = plan.dmTiles.in<float>(memory);
  float* coef = plan.rmsCoef.in<float>(memory);
  float* sums = plan.chunkSums.in<float>(memory);
  const int64_t chunks = ceilDiv(g1 - g0, plan.tokenChunk);
  parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> gPre(static_cast<size_t>(d.streams)), dz(static_cast<size_t>(f));
    std::vector<NeumaierSum<float>> acc(static_cast<size_t>(terms));
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      std::fill(acc.begin(), acc.end(), NeumaierSum<float>());
      const int64_t first = g0 + chunk * plan.tokenChunk, last = std::min(g1, first + plan.tokenChunk);
      for (int64_t t = first; t < last; ++t) {
        float alphaTerm[3];
        const int64_t token = t - g0;
        tokenTerms(plan, in, t, gPre.data(), dz.data(), alphaTerm, dm + token * f, coef[token]);
        for (int64_t j = 0; j < f; ++j) dmTiles[kernels::mhcDmTileIndex(token, j, f)] = dm[token * f + j];
        for (int64_t row = 0; row < f; ++row) acc[row].add(dz[row]);
        for (int64_t b = 0; b < 3; ++b) acc[f + b].add(alphaTerm[b]);
      }
      for (int64_t j = 0; j < terms; ++j) sums[chunk * terms + j] = acc[j].value();
    }
  });
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int64_t j = 0; j < terms; ++j) totals[static_cast<size_t>(j)].add(sums[chunk * terms + j]);
  }
}

// grad_bias and grad_alpha from the totals of every chunk.
void passOneTotals(const MhcPreBackwardPasses& plan, const Outputs& out,
                   const std::vector<NeumaierSum<float>>& totals) {
  const int64_t f = plan.dims.fusion;
  for (int64_t j = 0; j < f + 3; ++j) {
    const float total = totals[static_cast<size_t>(j)].value();
    if (j < f) {
      out.gradBias[j] = total;
    } else {
      out.gradAlpha[j - f] = total;
    }
  }
}

// The matmul operands and accumulators of pass 2, resolved against the workspace.
struct PassTwoData {
  const float* dm;       // [group, F] from token firstToken
  const float* dmTiles;  // the same in tiles of kMhcDmTileRows tokens
  const float* rmsCoef;  // [group] from token firstToken
  int64_t firstToken;    // the group's first token
  float* phiPack;        // [blocks, F, ldPack] phi by column block (HF32-rounded in mode 1)
  float* phiSum;         // [blocks, F, ldPack] grad_phi running sums
  float* phiComp;        // [blocks, F, ldPack] their Kahan compensations
  float* gammaComp;      // [K] Kahan compensation of grad_gamma (null without gamma)
};

// Pass 2 for one block: tokens [t0, t0 + Tb) x columns [c0, c0 + Kc) (clipped), with a slot's scratch: one
// segment per stream the block's columns touch.
void passTwoBlock(const MhcPreBackwardPasses& plan, const Inputs& in, const Outputs& out, const PassTwoData& data,
                  int64_t t0, int64_t c0, const kernels::MhcPrefetchRows& next, float* scratch) {
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, k = d.width(), kc = plan.columnBlock, tb = plan.tokenBlock;
  const int64_t w = std::min(kc, k - c0), h = std::min(tb, d.tokens - t0);
  const size_t size = dtypeSize(plan.dtype);
  float* gammaPart = out.gradGamma != nullptr && !plan.gammaFactored ? scratch + plan.slotGammaPart : nullptr;
  const int64_t packAt = c0 / kc * f * plan.ldPack;
  if (gammaPart != nullptr) std::fill_n(gammaPart, w, 0.0f);
  for (int64_t col = c0; col < c0 + w;) {
    const int64_t stream = col / d.hidden, d0 = col - stream * d.hidden;
    const int64_t len = std::min(d.hidden - d0, c0 + w - col);
    kernels::MhcColumnSegment sg;
    sg.rows = h, sg.cols = len, sg.fusion = f;
    sg.dm = data.dm + (t0 - data.firstToken) * f;
    sg.dmTiles = data.dmTiles + (t0 - data.firstToken) * f;  // token blocks start tiles
    sg.rmsCoef = data.rmsCoef + (t0 - data.firstToken);
    sg.hPre = in.hPre + t0 * d.streams + stream, sg.ldHPre = d.streams;
    sg.phi = data.phiPack + packAt + (col - c0), sg.ldPhi = plan.ldPack;
    sg.x = in.x + (t0 * k + col) * size, sg.ldx = k;
    sg.gin = in.gradHIn + (t0 * d.hidden + d0) * size, sg.ldGin = d.hidden;
    sg.gamma = in.gamma != nullptr && !plan.gammaFactored ? in.gamma + col : nullptr;
    sg.gradXPost = in.gradXPost != nullptr ? in.gradXPost + (t0 * k + col) * size : nullptr;
    sg.gradX = out.gradX + (t0 * k + col) * size;
    sg.gammaSum = gammaPart != nullptr ? gammaPart + (col - c0) : nullptr;
    sg.phiSum = data.phiSum + packAt + (col - c0);
    sg.phiComp = data.phiComp + packAt + (col - c0);
    sg.xgStrip = scratch + plan.slotXgStrip;
    sg.hf32 = plan.hf32;
    if (col + len == c0 + w) sg.next = next;  // the block's last segment prefetches the next block
    plan.kernels->segment(plan.dtype, sg);
    col += len;
  }
  if (gammaPart != nullptr) kahanAddEach(out.gradGamma + c0, data.gammaComp + c0, gammaPart, w);
}

// The rows of x, gradHIn, gradXPost (read) and gradX (written) of block (t0, c0).
kernels::MhcPrefetchRows blockRows(const MhcPreBackwardPasses& plan, const Inputs& in, const Outputs& out, int64_t t0,
                                   int64_t c0) {
  const MhcDims& d = plan.dims;
  const int64_t k = d.width();
  const int64_t w = std::min(plan.columnBlock, k - c0);
  const auto size = static_cast<int64_t>(dtypeSize(plan.dtype));
  const int64_t stream = c0 / d.hidden, d0 = c0 - stream * d.hidden;
  kernels::MhcPrefetchRows rows;
  rows.rows = std::min(plan.tokenBlock, d.tokens - t0);
  const auto region = [&](int i, const unsigned char* base, int64_t ld, int64_t first, int64_t bytes, bool write) {
    if (base == nullptr) return;
    rows.at[i] = base + (t0 * ld + first) * size;
    rows.ld[i] = ld * size;
    rows.bytes[i] = bytes * size;
    rows.write[i] = write;
  };
  region(0, in.x, k, c0, w, false);
  region(1, in.gradHIn, d.hidden, d0, std::min(w, d.hidden - d0), false);
  region(2, in.gradXPost, k, c0, w, false);
  region(3, out.gradX, k, c0, w, true);
  return rows;
}

// Slot columns [c0, c1) before the first token block: phi's columns packed by block (its rows lie K apart, which
// would share L1 sets; gamma folded in when factored), the sums zeroed.
void slotStart(const MhcPreBackwardPasses& plan, const Inputs& in, const Outputs& out, const PassTwoData& data,
               int64_t c0, int64_t c1) {
  const int64_t f = plan.dims.fusion, k = plan.dims.width(), kc = plan.columnBlock, ld = plan.ldPack;
  for (int64_t b0 = c0; b0 < c1; b0 += kc) {
    const int64_t bw = std::min(kc, c1 - b0), at = b0 / kc * f * ld;
    for (int64_t row = 0; row < f; ++row) {
      const float* from = in.phi + row * k + b0;
      float* to = data.phiPack + at + row * ld;
      if (plan.hf32) {
        for (int64_t c = 0; c < bw; ++c) to[c] = roundToHf32(from[c]);
      } else if (plan.gammaFactored) {
        for (int64_t c = 0; c < bw; ++c) to[c] = in.gamma[b0 + c] * from[c];
      } else {
        std::copy_n(from, bw, to);
      }
    }
    std::fill_n(data.phiSum + at, f * ld, 0.0f);
    std::fill_n(data.phiComp + at, f * ld, 0.0f);
  }
  if (out.gradGamma != nullptr && !plan.gammaFactored) {
    std::fill_n(out.gradGamma + c0, c1 - c0, 0.0f);
    std::fill_n(data.gammaComp + c0, c1 - c0, 0.0f);
  }
}

// Slot columns [c0, c1) of token block t0: the column blocks in order.
void slotTokenBlock(const MhcPreBackwardPasses& plan, const Inputs& in, const Outputs& out, const PassTwoData& data,
                    int64_t c0, int64_t c1, int64_t t0, float* scratch) {
  const int64_t kc = plan.columnBlock;
  for (int64_t b0 = c0; b0 < c1; b0 += kc) {
    // The next block of this slot: the next columns, or the first columns of the next token block.
    const bool lastColumns = b0 + kc >= c1;
    kernels::MhcPrefetchRows next;
    if (!lastColumns || t0 + plan.tokenBlock < plan.dims.tokens) {
      next = blockRows(plan, in, out, lastColumns ? t0 + plan.tokenBlock : t0, lastColumns ? c0 : b0 + kc);
    }
    passTwoBlock(plan, in, out, data, t0, b0, next, scratch);
  }
}

// Slot columns [c0, c1) after the last token block: the compensated sums into grad_phi and grad_gamma. Factored,
// the sums P = sum_t dm^T x make grad_phi = gamma * P and grad_gamma = sum_f phi * P (in double, F terms).
void slotFinish(const MhcPreBackwardPasses& plan, const Inputs& in, const Outputs& out, const PassTwoData& data,
                int64_t c0, int64_t c1) {
  const int64_t f = plan.dims.fusion, k = plan.dims.width(), kc = plan.columnBlock, ld = plan.ldPack;
  std::vector<double> gammaTotal(static_cast<size_t>(kc));
  for (int64_t b0 = c0; b0 < c1; b0 += kc) {
    const int64_t bw = std::min(kc, c1 - b0), at = b0 / kc * f * ld;
    std::fill(gammaTotal.begin(), gammaTotal.end(), 0.0);
    for (int64_t row = 0; row < f; ++row) {
      const float* sum = data.phiSum + at + row * ld;
      const float* comp = data.phiComp + at + row * ld;
      float* to = out.gradPhi + row * k + b0;
      if (!plan.gammaFactored) {
        kahanTotalEach(to, sum, comp, bw);
        continue;
      }
      const float* phi = in.phi + row * k + b0;
      for (int64_t c = 0; c < bw; ++c) {
        const double p = static_cast<double>(sum[c]) - static_cast<double>(comp[c]);
        to[c] = static_cast<float>(static_cast<double>(in.gamma[b0 + c]) * p);
        gammaTotal[static_cast<size_t>(c)] += static_cast<double>(phi[c]) * p;
      }
    }
    if (plan.gammaFactored) {
      for (int64_t c = 0; c < bw; ++c) out.gradGamma[b0 + c] = static_cast<float>(gammaTotal[static_cast<size_t>(c)]);
    }
  }
  if (out.gradGamma != nullptr && !plan.gammaFactored)
    kahanTotalEach(out.gradGamma + c0, out.gradGamma + c0, data.gammaComp + c0, c1 - c0);
}

// Both passes, one group of tokens at a time. Slot s of pass 2 owns a fixed range of whole column blocks; every
// column's sums run over the token blocks in order, so no result depends on which slot (or thread) computed it.
}  // namespace

void runMhcPreBackwardPasses(const MhcPreBackwardPasses& plan, const Inputs& in, const Outputs& out, void* memory) {
  PassTwoData data;
  data.dm = plan.dm.in<float>(memory);
  data.dmTiles = plan.dmTiles.in<float>(memory);
  data.rmsCoef = plan.rmsCoef.in<float>(memory);
  data.firstToken = 0;
  data.phiPack = plan.phiPack.in<float>(memory);
  data.phiSum = plan.phiSum.in<float>(memory);
  data.phiComp = plan.phiComp.in<float>(memory);
  data.gammaComp = out.gradGamma != nullptr && !plan.gammaFactored ? plan.gammaComp.in<float>(memory) : nullptr;
  const MhcDims& d = plan.dims;
  const int64_t k = d.width(), blocks = ceilDiv(k, plan.columnBlock);
  float* scratch = plan.slotScratch.in<float>(memory);
  const int64_t slotFloats = static_cast<int64_t>(plan.slotBytes / sizeof(float));
  const auto columns = [&](int64_t slot) {
    return std::pair<int64_t, int64_t>{slot * blocks / plan.slots * plan.columnBlock,
                                       std::min(k, (slot + 1) * blocks / plan.slots * plan.columnBlock)};
  };
  std::vector<NeumaierSum<float>> totals(static_cast<size_t>(d.fusion + 3));
  for (int64_t g0 = 0; g0 < d.tokens; g0 += plan.groupTokens) {
    const int64_t g1 = std::min(d.tokens, g0 + plan.groupTokens);
    passOneGroup(plan, in, memory, g0, g1, totals);
    data.firstToken = g0;
    parallelFor(plan.slots, 1, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot) {
        const auto [c0, c1] = columns(slot);
        if (g0 == 0) slotStart(plan, in, out, data, c0, c1);
        for (int64_t t0 = g0; t0 < g1; t0 += plan.tokenBlock) {
          slotTokenBlock(plan, in, out, data, c0, c1, t0, scratch + slot * slotFloats);
        }
        if (g1 == d.tokens) slotFinish(plan, in, out, data, c0, c1);
      }
    });
  }
  passOneTotals(plan, out, totals);
}

aclnnStatus MhcPreBackwardPlan::run(void* memory) const {
  Inputs in{};
  in.x = static_cast<const unsigned char*>(x.read(memory));
  in.phi = static_cast<const float*>(phi.read(memory));
  in.alpha = static_cast<const float*>(alpha.read(memory));
  in.gradHIn = static_cast<const unsigned char*>(gradHIn.read(memory));
  in.gradHPost = static_cast<const float*>(gradHPost.read(memory));
  in.gradHRes = static_cast<const float*>(gradHRes.read(memory));
  in.invRms = static_cast<const float*>(invRms.read(memory));
  in.hMix = static_cast<const float*>(hMix.read(memory));
  in.hPre = static_cast<const float*>(hPre.read(memory));
  in.hPost = static_cast<const float*>(hPost.read(memory));
  in.gamma = gamma ? static_cast<const float*>(gamma->read(memory)) : nullptr;
  in.gradXPost = gradXPost ? static_cast<const unsigned char*>(gradXPost->read(memory)) : nullptr;

  Outputs out{};
  out.gradX = static_cast<unsigned char*>(gradX.target(memory));
  out.gradPhi = static_cast<float*>(gradPhi.target(memory));
  out.gradAlpha = static_cast<float*>(gradAlpha.target(memory));
  out.gradBias = static_cast<float*>(gradBias.target(memory));
  out.gradGamma = gradGamma ? static_cast<float*>(gradGamma->target(memory)) : nullptr;

  runMhcPreBackwardPasses(passes, in, out, memory);

  gradX.writeBack(memory);
  gradPhi.writeBack(memory);
  gradAlpha.writeBack(memory);
  gradBias.writeBack(memory);
  if (gradGamma) gradGamma->writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
