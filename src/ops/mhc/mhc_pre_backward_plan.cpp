#include "ops/mhc/mhc_pre_backward_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "core/compensated.h"
#include "core/hf32.h"
#include "core/kernel_select.h"
#include "core/parallel.h"

namespace gradkit::ops {
namespace {

// Pass 1: tokens per chunk (one partial sum of grad_bias / grad_alpha per chunk).
constexpr int64_t kTokenChunk = 64;
// Pass 2: tokens per block (the K of the grad_phi tile product; its partial sums are added with compensation) and
// the widest column block (a multiple of every SIMD panel width). Narrower blocks when K is small, so that a small
// K still gives several blocks to share.
constexpr int64_t kTokenBlock = 128;
constexpr int64_t kMaxColumnBlock = 256;
constexpr int64_t kMinColumnBlock = 64;
constexpr int64_t kTargetColumnBlocks = 16;

int64_t roundUp(int64_t value, int64_t step) { return (value + step - 1) / step * step; }

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The per-slot scratch of pass 2, in floats from the slot's base; every piece starts on 64 bytes.
struct SlotLayout {
  int64_t ld = 0;         // leading dim of the [.., Kc] pieces: Kc + 16, so that rows do not share L1 sets
  int64_t phiBlock = 0;   // [F, Kc] phi's columns of the block (HF32-rounded in mode 1)
  int64_t xg = 0;         // [Tb, Kc] x * gamma of a block (HF32-rounded in mode 1)
  int64_t dxg = 0;        // [Tb, Kc] dm . phi of a block
  int64_t gammaPart = 0;  // [Kc] sum over a block's tokens of x * dxg
  int64_t floats = 0;     // the slot's size
};

SlotLayout slotLayout(int64_t fusion, int64_t tokenBlock, int64_t columnBlock) {
  SlotLayout s;
  s.ld = columnBlock + 16;
  int64_t at = 0;
  const auto take = [&at](int64_t floats) {
    const int64_t start = at;
    at += roundUp(floats, 16);
    return start;
  };
  s.phiBlock = take(fusion * s.ld);
  s.xg = take(tokenBlock * s.ld);
  s.dxg = take(tokenBlock * s.ld);
  s.gammaPart = take(columnBlock);
  s.floats = at;
  return s;
}

bool needsStaging(const aclTensor& tensor) { return !tensor.isContiguous(); }

// sum[i] += term[i] with Kahan compensation comp[i] (the negated low part; the total is sum - comp).
void kahanAdd(float* sum, float* comp, const float* term, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float y = term[i] - comp[i];
    const float t = sum[i] + y;
    comp[i] = (t - sum[i]) - y;
    sum[i] = t;
  }
}

void kahanFinish(float* sum, const float* comp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) sum[i] -= comp[i];
}

// The dense inputs of a run.
struct Inputs {
  const unsigned char* x;
  const float* phi;
  const float* alpha;
  const unsigned char* gradHIn;
  const float* gradHPost;
  const float* gradHRes;
  const float* invRms;
  const float* hMix;
  const float* hPre;
  const float* hPost;
  const float* gamma;              // null: ones
  const unsigned char* gradXPost;  // null: zeros
};

// The outputs as the kernels write them.
struct Outputs {
  unsigned char* gradX;
  float* gradPhi;
  float* gradAlpha;
  float* gradBias;
  float* gradGamma;  // null without gamma
};

/**
 * Pass 1 for token t (spec mhc.md 3.4 steps 1-7, 11): dz [F], the token's grad_alpha terms [3], dm [F] (rounded to
 * HF32 in mode 1) and the RMS coefficient -g_r * r^3 / K.
 */
void tokenTerms(const MhcPreBackwardPlan& plan, const Inputs& in, int64_t t, float* gPre, float* dz, float* alphaTerm,
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

void passOne(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, void* memory) {
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, terms = f + 3;
  float* dm = plan.dm.in<float>(memory);
  float* coef = plan.rmsCoef.in<float>(memory);
  float* sums = plan.chunkSums.in<float>(memory);
  const int64_t chunks = ceilDiv(d.tokens, plan.tokenChunk);
  parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> gPre(static_cast<size_t>(d.streams)), dz(static_cast<size_t>(f));
    std::vector<NeumaierSum<float>> acc(static_cast<size_t>(terms));
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      std::fill(acc.begin(), acc.end(), NeumaierSum<float>());
      const int64_t last = std::min(d.tokens, (chunk + 1) * plan.tokenChunk);
      for (int64_t t = chunk * plan.tokenChunk; t < last; ++t) {
        float alphaTerm[3];
        tokenTerms(plan, in, t, gPre.data(), dz.data(), alphaTerm, dm + t * f, coef[t]);
        for (int64_t row = 0; row < f; ++row) acc[row].add(dz[row]);
        for (int64_t b = 0; b < 3; ++b) acc[f + b].add(alphaTerm[b]);
      }
      for (int64_t j = 0; j < terms; ++j) sums[chunk * terms + j] = acc[j].value();
    }
  });
  // The chunks' sums in chunk order: the same bits for any thread count.
  for (int64_t j = 0; j < terms; ++j) {
    NeumaierSum<float> total;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) total.add(sums[chunk * terms + j]);
    if (j < f) {
      out.gradBias[j] = total.value();
    } else {
      out.gradAlpha[j - f] = total.value();
    }
  }
}

// The matmul operands and accumulators of pass 2, resolved against the workspace.
struct PassTwoData {
  const float* dm;       // [T, F]
  const float* rmsCoef;  // [T]
  float* phiComp;        // [F, K] Kahan compensation of grad_phi
  float* gammaComp;      // [K] Kahan compensation of grad_gamma (null without gamma)
};

// Pass 2 for one block: tokens [t0, t0 + Tb) x columns [c0, c0 + Kc) (clipped), with a slot's scratch.
void passTwoBlock(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, const PassTwoData& data,
                  int64_t t0, int64_t c0, float* scratch) {
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, k = d.width(), kc = plan.columnBlock, tb = plan.tokenBlock;
  const int64_t w = std::min(kc, k - c0), h = std::min(tb, d.tokens - t0);
  const size_t size = dtypeSize(plan.dtype);
  const SlotLayout s = slotLayout(f, tb, kc);
  const int64_t ld = s.ld;
  float* phiBlock = scratch + s.phiBlock;
  float* xg = scratch + s.xg;
  float* dxg = scratch + s.dxg;
  float* gammaPart = out.gradGamma != nullptr ? scratch + s.gammaPart : nullptr;
  const float* gamma = in.gamma != nullptr ? in.gamma + c0 : nullptr;

  for (int64_t row = 0; row < f; ++row) {  // a copy with a short leading dim (phi's rows lie K apart)
    const float* from = in.phi + row * k + c0;
    for (int64_t c = 0; c < w; ++c) phiBlock[row * ld + c] = plan.hf32 ? roundToHf32(from[c]) : from[c];
  }
  plan.kernels->stageXg(plan.dtype, in.x + (t0 * k + c0) * size, k, gamma, h, w, plan.hf32, xg, ld);
  plan.kernels->dxgBlock(data.dm + t0 * f, f, h, phiBlock, ld, w, dxg, ld);
  if (gammaPart != nullptr) std::fill_n(gammaPart, w, 0.0f);
  for (int64_t r = 0; r < h; ++r) {
    const int64_t t = t0 + r;
    // The block's columns of this token, one stream segment at a time (h_pre and gradHIn follow the stream).
    for (int64_t col = c0; col < c0 + w;) {
      const int64_t stream = col / d.hidden, d0 = col - stream * d.hidden;
      const int64_t len = std::min(d.hidden - d0, c0 + w - col);
      kernels::MhcGradXRow row{};
      row.x = in.x + (t * k + col) * size;
      row.gin = in.gradHIn + (t * d.hidden + d0) * size;
      row.hPre = in.hPre[t * d.streams + stream];
      row.rmsCoef = data.rmsCoef[t];
      row.dxg = dxg + r * ld + (col - c0);
      row.gamma = gamma != nullptr ? gamma + (col - c0) : nullptr;
      row.gradXPost = in.gradXPost != nullptr ? in.gradXPost + (t * k + col) * size : nullptr;
      row.gradX = out.gradX + (t * k + col) * size;
      row.gammaSum = gammaPart != nullptr ? gammaPart + (col - c0) : nullptr;
      plan.kernels->gradXRow(plan.dtype, row, len);
      col += len;
    }
  }
  if (gammaPart != nullptr) kahanAdd(out.gradGamma + c0, data.gammaComp + c0, gammaPart, w);
  plan.kernels->phiGradBlock(data.dm + t0 * f, f, h, xg, ld, w, out.gradPhi + c0, data.phiComp + c0, k);
}

// Asks for the next block's rows of x, gradHIn, gradXPost (read) and gradX (written) while this block computes: the
// rows of a block lie a whole token apart, a pattern the hardware prefetchers do not follow.
void prefetchBlock(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, int64_t t0, int64_t c0) {
  const MhcDims& d = plan.dims;
  const int64_t k = d.width();
  const int64_t w = std::min(plan.columnBlock, k - c0), h = std::min(plan.tokenBlock, d.tokens - t0);
  const auto size = static_cast<int64_t>(dtypeSize(plan.dtype));
  const int64_t bytes = w * size;
  const int64_t stream = c0 / d.hidden, d0 = c0 - stream * d.hidden;
  const int64_t ginBytes = std::min(w, d.hidden - d0) * size;
  constexpr int64_t kLine = 64;
  for (int64_t t = t0; t < t0 + h; ++t) {
    const int64_t at = (t * k + c0) * size;
    for (int64_t b = 0; b < bytes; b += kLine) {
      __builtin_prefetch(in.x + at + b, 0, 3);
      if (in.gradXPost != nullptr) __builtin_prefetch(in.gradXPost + at + b, 0, 0);
      __builtin_prefetch(out.gradX + at + b, 1, 0);
    }
    for (int64_t b = 0; b < ginBytes; b += kLine) __builtin_prefetch(in.gradHIn + (t * d.hidden + d0) * size + b, 0, 3);
  }
}

// Slot `slot`'s columns [c0, c1): every token block in order, each over the slot's column blocks in order.
void passTwoSlot(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, const PassTwoData& data,
                 int64_t c0, int64_t c1, float* scratch) {
  const MhcDims& d = plan.dims;
  const int64_t k = d.width(), w = c1 - c0;
  for (int64_t row = 0; row < d.fusion; ++row) {
    std::fill_n(out.gradPhi + row * k + c0, w, 0.0f);
    std::fill_n(data.phiComp + row * k + c0, w, 0.0f);
  }
  if (out.gradGamma != nullptr) {
    std::fill_n(out.gradGamma + c0, w, 0.0f);
    std::fill_n(data.gammaComp + c0, w, 0.0f);
  }
  for (int64_t t0 = 0; t0 < d.tokens; t0 += plan.tokenBlock) {
    for (int64_t b0 = c0; b0 < c1; b0 += plan.columnBlock) {
      // The next block of this slot: the next columns, or the first columns of the next token block.
      const bool lastColumns = b0 + plan.columnBlock >= c1;
      if (!lastColumns || t0 + plan.tokenBlock < d.tokens) {
        prefetchBlock(plan, in, out, lastColumns ? t0 + plan.tokenBlock : t0, lastColumns ? c0 : b0 + plan.columnBlock);
      }
      passTwoBlock(plan, in, out, data, t0, b0, scratch);
    }
  }
  for (int64_t row = 0; row < d.fusion; ++row) {
    kahanFinish(out.gradPhi + row * k + c0, data.phiComp + row * k + c0, w);
  }
  if (out.gradGamma != nullptr) kahanFinish(out.gradGamma + c0, data.gammaComp + c0, w);
}

void passTwo(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, void* memory) {
  PassTwoData data;
  data.dm = plan.dm.in<float>(memory);
  data.rmsCoef = plan.rmsCoef.in<float>(memory);
  data.phiComp = plan.phiComp.in<float>(memory);
  data.gammaComp = out.gradGamma != nullptr ? plan.gammaComp.in<float>(memory) : nullptr;
  const int64_t k = plan.dims.width(), blocks = ceilDiv(k, plan.columnBlock);
  float* scratch = plan.slotScratch.in<float>(memory);
  const int64_t slotFloats = static_cast<int64_t>(plan.slotBytes / sizeof(float));
  // Slot s owns a fixed range of whole column blocks; every column's sums run over the token blocks in order, so
  // no result depends on which slot (or thread) computed it.
  parallelFor(plan.slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot) {
      const int64_t c0 = slot * blocks / plan.slots * plan.columnBlock;
      const int64_t c1 = std::min(k, (slot + 1) * blocks / plan.slots * plan.columnBlock);
      passTwoSlot(plan, in, out, data, c0, c1, scratch + slot * slotFloats);
    }
  });
}

}  // namespace

MhcPreBackwardPlan planMhcPreBackward(const MhcPreBackwardArgs& args) {
  MhcPreBackwardPlan plan;
  plan.dims = mhcDimsOf(*args.x, *args.phi);
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, k = d.width();
  plan.dtype = args.x->dtype;
  plan.hcEps = args.hcEps;
  plan.hf32 = args.opImplMode == kMhcHf32Matmul;

  WorkspaceBooking& booking = plan.workspace;
  const auto stage = [&booking](const aclTensor& view, const char* name) {
    return StagedTensor::plan(view, needsStaging(view), name, booking);
  };
  plan.x = stage(*args.x, "x staging");
  plan.phi = stage(*args.phi, "phi staging");
  plan.alpha = stage(*args.alpha, "alpha staging");
  plan.gradHIn = stage(*args.gradHIn, "gradHIn staging");
  plan.gradHPost = stage(*args.gradHPost, "gradHPost staging");
  plan.gradHRes = stage(*args.gradHRes, "gradHRes staging");
  plan.invRms = stage(*args.invRms, "invRms staging");
  plan.hMix = stage(*args.hMix, "hMix staging");
  plan.hPre = stage(*args.hPre, "hPre staging");
  plan.hPost = stage(*args.hPost, "hPost staging");
  if (args.gamma != nullptr) plan.gamma = stage(*args.gamma, "gamma staging");
  if (args.gradXPost != nullptr) plan.gradXPost = stage(*args.gradXPost, "gradXPost staging");
  plan.gradX = stage(*args.gradX, "gradX staging");
  plan.gradPhi = stage(*args.gradPhi, "gradPhi staging");
  plan.gradAlpha = stage(*args.gradAlpha, "gradAlpha staging");
  plan.gradBias = stage(*args.gradBias, "gradBias staging");
  if (args.gamma != nullptr) plan.gradGamma = stage(*args.gradGamma, "gradGamma staging");

  plan.tokenChunk = kTokenChunk;
  const int64_t chunks = ceilDiv(d.tokens, plan.tokenChunk);
  plan.dm = booking.bookArray("dm", static_cast<uint64_t>(d.tokens * f), sizeof(float));
  plan.rmsCoef = booking.bookArray("rms coefficient", static_cast<uint64_t>(d.tokens), sizeof(float));
  plan.chunkSums = booking.bookArray("chunk sums", static_cast<uint64_t>(chunks * (f + 3)), sizeof(float));

  plan.tokenBlock = std::min(kTokenBlock, d.tokens);
  plan.columnBlock =
      std::min(k, std::clamp(roundUp(ceilDiv(k, kTargetColumnBlocks), 16), kMinColumnBlock, kMaxColumnBlock));
  plan.phiComp = booking.bookArray("grad_phi compensation", static_cast<uint64_t>(f * k), sizeof(float));
  if (args.gamma != nullptr)
    plan.gammaComp = booking.bookArray("grad_gamma compensation", static_cast<uint64_t>(k), sizeof(float));
  const int64_t blocks = ceilDiv(k, plan.columnBlock);
  plan.slots = std::max<int64_t>(1, std::min<int64_t>(threadCount(), blocks));
  const SlotLayout layout = slotLayout(f, plan.tokenBlock, plan.columnBlock);
  plan.slotBytes = static_cast<uint64_t>(layout.floats) * sizeof(float);
  plan.slotScratch = booking.bookArray("column block scratch", static_cast<uint64_t>(plan.slots), plan.slotBytes);
  plan.kernels = &chooseKernels(kernels::kMhcPreBackwardSimdKernels, kernels::kMhcPreBackwardScalarKernels);
  return plan;
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

  passOne(*this, in, out, memory);
  passTwo(*this, in, out, memory);

  gradX.writeBack(memory);
  gradPhi.writeBack(memory);
  gradAlpha.writeBack(memory);
  gradBias.writeBack(memory);
  if (gradGamma) gradGamma->writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
