// The plain scalar MhcPre block kernel, the phi packing and the sizes both kernels share.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/hf32.h"
#include "gradkit/float_convert.h"
#include "ops/mhc/kernels/mhc_pre_kernel.h"
#include "ops/mhc/kernels/mhc_pre_token.h"

namespace gradkit::kernels {
namespace {

float loadX(const MhcPreProblem& p, int64_t index) {
  uint16_t bits;
  std::memcpy(&bits, static_cast<const uint16_t*>(p.x) + index, sizeof bits);
  return p.xDtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

void storeHIn(const MhcPreProblem& p, int64_t index, float value) {
  const uint16_t bits = p.xDtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(static_cast<uint16_t*>(p.hIn) + index, &bits, sizeof bits);
}

}  // namespace

int64_t MhcPreProblem::chunkWidth() const {
  const int64_t k = width();
  const int64_t padded = (k + kMhcPreLanes - 1) / kMhcPreLanes * kMhcPreLanes;
  return std::min(kMhcPreChunkWidth, padded);
}

int64_t mhcPrePackedPhiFloats(const MhcPreProblem& problem) {
  return problem.width() * problem.paddedFusion() * problem.phiCopies();
}

int64_t mhcPreScratchFloats(const MhcPreProblem& problem) { return mhc_pre::scratchLayout(problem).total; }

void mhcPrePackPhi(const MhcPreProblem& p, const float* phi, int64_t kBegin, int64_t kEnd, float* packed) {
  const int64_t k = p.width(), vectors = p.paddedFusion() / kMhcPreLanes;
  for (int64_t start = 0, w = 0; start < vectors; start += w) {
    w = mhcPrePanelVectors(vectors - start);
    const int64_t columns = w * kMhcPreLanes, firstRow = start * kMhcPreLanes;
    const int64_t copies = p.phiCopies();
    float* panel = packed + firstRow * k * copies;
    for (int64_t kk = kBegin; kk < kEnd; ++kk) {
      for (int64_t c = 0; c < columns; ++c) {
        const int64_t row = firstRow + c;
        float value = row < p.fusion ? phi[row * k + kk] : 0.0f;
        if (p.hf32) value = roundToHf32(value);
        for (int64_t copy = 0; copy < copies; ++copy) panel[(kk * columns + c) * copies + copy] = value;
      }
    }
  }
}

void mhcPreBlockScalar(const MhcPreProblem& p, int64_t first, int64_t count, float* scratch) {
  const mhc_pre::ScratchLayout layout = mhc_pre::scratchLayout(p);
  float* xg = scratch + layout.xg;
  float* mix = scratch + layout.mix;
  float* squares = scratch + layout.squares;
  float* gates = scratch + layout.gates;
  const int64_t k = p.width(), chunk = p.chunkWidth(), fp = p.paddedFusion(), vectors = fp / kMhcPreLanes;
  std::fill(squares, squares + count * 8, 0.0f);

  for (int64_t k0 = 0; k0 < k; k0 += chunk) {
    const int64_t kc = std::min(chunk, k - k0);
    for (int64_t t = 0; t < count; ++t) {  // stage xg; the chunk's sums of squares of raw x, added to the token's
      float chunkSquares[8] = {};
      for (int64_t kk = 0; kk < kc; ++kk) {
        const int64_t column = k0 + kk;
        const float value = loadX(p, (first + t) * k + column);
        float& partial = chunkSquares[column % 8];
        partial = std::fma(value, value, partial);
        float scaled = p.gamma != nullptr ? value * p.gamma[column] : value;
        if (p.hf32) scaled = roundToHf32(scaled);
        xg[t * chunk + kk] = scaled;
      }
      for (int64_t j = 0; j < 8; ++j) squares[t * 8 + j] += chunkSquares[j];
    }
    for (int64_t start = 0, w = 0; start < vectors; start += w) {  // h_mix += this chunk's products
      w = mhcPrePanelVectors(vectors - start);
      const int64_t columns = w * kMhcPreLanes;
      const int64_t copies = p.phiCopies();
      const float* panel = p.packedPhi + (start * kMhcPreLanes * k + k0 * columns) * copies;
      for (int64_t t = 0; t < count; ++t) {
        for (int64_t c = 0; c < columns; ++c) {
          float acc = 0.0f;
          for (int64_t kk = 0; kk < kc; ++kk)
            acc = std::fma(xg[t * chunk + kk], panel[(kk * columns + c) * copies], acc);
          float& out = mix[t * fp + start * kMhcPreLanes + c];
          out = k0 == 0 ? acc : out + acc;
        }
      }
    }
  }

  const int64_t n = p.streams, d = p.hidden;
  for (int64_t t = 0; t < count; ++t) {
    mhc_pre::tokenGates(p, first + t, mix + t * fp, squares + t * 8, gates + t * n);
    const float* h = gates + t * n;
    const int64_t row = (first + t) * k;
    for (int64_t j = 0; j < d; ++j) {
      float acc = loadX(p, row + j) * h[0];
      for (int64_t i = 1; i < n; ++i) acc = std::fma(loadX(p, row + i * d + j), h[i], acc);
      storeHIn(p, (first + t) * d + j, acc);
    }
  }
}

namespace {
bool unpairedPhi() { return false; }
}  // namespace

const MhcPreKernels kMhcPreScalarKernels{mhcPreBlockScalar, unpairedPhi};

}  // namespace gradkit::kernels
