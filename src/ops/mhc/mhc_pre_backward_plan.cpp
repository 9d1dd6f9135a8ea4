#include "ops/mhc/mhc_pre_backward_plan.h"

#include <algorithm>
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
constexpr int64_t kTokenBlock = 64;
constexpr int64_t kMaxColumnBlock = 256;
constexpr int64_t kMinColumnBlock = 64;
constexpr int64_t kTargetColumnBlocks = 16;

int64_t roundUp(int64_t value, int64_t step) { return (value + step - 1) / step * step; }

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The per-slot scratch of pass 2, in floats from the slot's base; every piece starts on 64 bytes.
struct SlotLayout {
  int64_t phiBlock = 0;   // [F, Kc] phi's columns of the block (HF32-rounded in mode 1)
  int64_t xg = 0;         // [Tb, Kc] x * gamma of a token block
  int64_t dxg = 0;        // [Tb, Kc] dm . phi of a token block
  int64_t phiPart = 0;    // [F, Kc] dm^T . xg of a token block
  int64_t phiComp = 0;    // [F, Kc] Kahan compensation of grad_phi
  int64_t gammaPart = 0;  // [Kc] sum over a token block of x * dxg
  int64_t gammaComp = 0;  // [Kc] Kahan compensation of grad_gamma
  int64_t gemm = 0;       // the tile GEMMs' scratch
  int64_t floats = 0;     // the slot's size
};

SlotLayout slotLayout(int64_t fusion, int64_t tokenBlock, int64_t columnBlock, uint64_t gemmBytes) {
  SlotLayout s;
  int64_t at = 0;
  const auto take = [&at](int64_t floats) {
    const int64_t start = at;
    at += roundUp(floats, 16);
    return start;
  };
  s.phiBlock = take(fusion * columnBlock);
  s.xg = take(tokenBlock * columnBlock);
  s.dxg = take(tokenBlock * columnBlock);
  s.phiPart = take(fusion * columnBlock);
  s.phiComp = take(fusion * columnBlock);
  s.gammaPart = take(columnBlock);
  s.gammaComp = take(columnBlock);
  s.gemm = take(static_cast<int64_t>((gemmBytes + sizeof(float) - 1) / sizeof(float)));
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

// Pass 2 for the column block starting at c0 (width w), with the slot's scratch.
void columnBlockPass(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, const float* dm,
                     const float* coef, int64_t c0, float* scratch) {
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, k = d.width(), kc = plan.columnBlock, tb = plan.tokenBlock;
  const int64_t w = std::min(kc, k - c0);
  const size_t size = dtypeSize(plan.dtype);
  const SlotLayout s = slotLayout(f, tb, kc, plan.gemmScratchBytes);
  float* phiBlock = scratch + s.phiBlock;
  float* xg = scratch + s.xg;
  float* dxg = scratch + s.dxg;
  float* phiPart = scratch + s.phiPart;
  float* phiComp = scratch + s.phiComp;
  float* gammaPart = scratch + s.gammaPart;
  float* gammaComp = scratch + s.gammaComp;
  void* gemmScratch = scratch + s.gemm;

  for (int64_t row = 0; row < f; ++row) {
    const float* from = in.phi + row * k + c0;
    for (int64_t c = 0; c < w; ++c) phiBlock[row * kc + c] = plan.hf32 ? roundToHf32(from[c]) : from[c];
    std::fill_n(out.gradPhi + row * k + c0, w, 0.0f);
    std::fill_n(phiComp + row * kc, w, 0.0f);
  }
  float* gammaSum = out.gradGamma != nullptr ? out.gradGamma + c0 : nullptr;
  if (gammaSum != nullptr) {
    std::fill_n(gammaSum, w, 0.0f);
    std::fill_n(gammaComp, w, 0.0f);
  }
  const float* gamma = in.gamma != nullptr ? in.gamma + c0 : nullptr;
  const int wIndex = w != kc ? 1 : 0;

  for (int64_t t0 = 0; t0 < d.tokens; t0 += tb) {
    const int64_t h = std::min(tb, d.tokens - t0);
    const int hIndex = h != tb ? 1 : 0;
    plan.kernels->stageXg(plan.dtype, in.x + (t0 * k + c0) * size, k, gamma, h, w, plan.hf32, xg, kc);
    plan.dxgGemm[hIndex][wIndex]->run(dm + t0 * f, phiBlock, dxg, gemmScratch);
    if (gammaSum != nullptr) std::fill_n(gammaPart, w, 0.0f);
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
        row.rmsCoef = coef[t];
        row.dxg = dxg + r * kc + (col - c0);
        row.gamma = gamma != nullptr ? gamma + (col - c0) : nullptr;
        row.gradXPost = in.gradXPost != nullptr ? in.gradXPost + (t * k + col) * size : nullptr;
        row.gradX = out.gradX + (t * k + col) * size;
        row.gammaSum = gammaSum != nullptr ? gammaPart + (col - c0) : nullptr;
        plan.kernels->gradXRow(plan.dtype, row, len);
        col += len;
      }
    }
    if (gammaSum != nullptr) kahanAdd(gammaSum, gammaComp, gammaPart, w);
    plan.phiGemm[hIndex][wIndex]->run(dm + t0 * f, xg, phiPart, gemmScratch);
    for (int64_t row = 0; row < f; ++row) {
      kahanAdd(out.gradPhi + row * k + c0, phiComp + row * kc, phiPart + row * kc, w);
    }
  }
  for (int64_t row = 0; row < f; ++row) kahanFinish(out.gradPhi + row * k + c0, phiComp + row * kc, w);
  if (gammaSum != nullptr) kahanFinish(gammaSum, gammaComp, w);
}

void passTwo(const MhcPreBackwardPlan& plan, const Inputs& in, const Outputs& out, void* memory) {
  const float* dm = plan.dm.in<float>(memory);
  const float* coef = plan.rmsCoef.in<float>(memory);
  const int64_t blocks = ceilDiv(plan.dims.width(), plan.columnBlock);
  float* scratch = plan.slotScratch.in<float>(memory);
  const int64_t slotFloats = static_cast<int64_t>(plan.slotBytes / sizeof(float));
  // Slot s owns a fixed range of column blocks; each block's result depends on nothing but its columns.
  parallelFor(plan.slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot) {
      for (int64_t b = slot * blocks / plan.slots; b < (slot + 1) * blocks / plan.slots; ++b) {
        columnBlockPass(plan, in, out, dm, coef, b * plan.columnBlock, scratch + slot * slotFloats);
      }
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
  const int64_t lastRows = d.tokens - (ceilDiv(d.tokens, plan.tokenBlock) - 1) * plan.tokenBlock;
  const int64_t lastCols = k - (ceilDiv(k, plan.columnBlock) - 1) * plan.columnBlock;
  for (int hi = 0; hi < 2; ++hi) {
    const int64_t rows = hi == 0 ? plan.tokenBlock : lastRows;
    if (hi == 1 && rows == plan.tokenBlock) continue;
    for (int wi = 0; wi < 2; ++wi) {
      const int64_t cols = wi == 0 ? plan.columnBlock : lastCols;
      if (wi == 1 && cols == plan.columnBlock) continue;
      TileGemmShape mm1;  // dxg [rows, cols] = dm [rows, F] . phiBlock [F, cols]
      mm1.m = rows, mm1.n = cols, mm1.k = f;
      mm1.lda = f, mm1.ldb = plan.columnBlock, mm1.ldc = plan.columnBlock;
      TileGemmShape mm2;  // phiPart [F, cols] = dm^T [F, rows] . xg [rows, cols]
      mm2.m = f, mm2.n = cols, mm2.k = rows;
      mm2.transA = true;
      mm2.lda = f, mm2.ldb = plan.columnBlock, mm2.ldc = plan.columnBlock;
      plan.dxgGemm[hi][wi].emplace(mm1);
      plan.phiGemm[hi][wi].emplace(mm2);
      plan.gemmScratchBytes = std::max<uint64_t>(
          {plan.gemmScratchBytes, plan.dxgGemm[hi][wi]->scratchBytes(), plan.phiGemm[hi][wi]->scratchBytes()});
    }
  }
  const int64_t blocks = ceilDiv(k, plan.columnBlock);
  plan.slots = std::max<int64_t>(1, std::min<int64_t>(threadCount(), blocks));
  const SlotLayout layout = slotLayout(f, plan.tokenBlock, plan.columnBlock, plan.gemmScratchBytes);
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
