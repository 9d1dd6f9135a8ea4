#include "golden/mhc_pre.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

// Every sum is a plain sequential loop in natural order (token, then the reduced index ascending), one operation per
// statement, so that the float instantiation is an honest naive fp32 computation (no compensation, no wider type).

namespace gradkit::golden {

float roundToHf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t sign = bits & 0x80000000u;
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) return value;  // Inf, NaN
  // Keep 11 explicit mantissa bits: the top 31 - 12 magnitude bits, rounded by the 12 dropped ones; a dropped half
  // or more goes up (ties away from zero). A carry out of the mantissa bumps the exponent, up to Inf past FLT_MAX.
  uint32_t kept = magnitude >> 12;
  const uint32_t dropped = magnitude & 0xFFFu;
  if (dropped >= 0x800u) kept += 1;
  const uint32_t roundedBits = sign | (kept << 12);
  float rounded;
  std::memcpy(&rounded, &roundedBits, sizeof rounded);
  return rounded;
}

namespace {

void checkSizes(const MhcSizes& s, int alphaLength) {
  if (s.tokens < 1 || s.streams < 1 || s.hidden < 1)
    throw std::invalid_argument("golden::mhcPre: tokens, streams and hidden must be positive");
  const int64_t residual = s.fusion - 2 * s.streams;
  if (alphaLength == 2 ? residual != 0 : (alphaLength != 3 || residual < 1))
    throw std::invalid_argument("golden::mhcPre: fusion must be 2N for alpha of 2, more than 2N for alpha of 3");
}

// The matmul operand as the cube sees it: unchanged in fp32 mode; in HF32 mode narrowed to float, then to HF32.
template <class Real>
Real matmulOperand(Real value, bool hf32) {
  if (!hf32) return value;
  return static_cast<Real>(roundToHf32(static_cast<float>(value)));
}

template <class Real>
std::vector<Real> matmulOperands(const Real* values, int64_t count, bool hf32) {
  std::vector<Real> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[i] = matmulOperand(values[i], hf32);
  return out;
}

template <class Real>
Real sigmoid(Real z) {
  const Real negated = -z;
  const Real e = std::exp(negated);
  const Real denominator = Real(1) + e;
  return Real(1) / denominator;
}

// alpha's block of fusion row f: 0 = pre, 1 = post, 2 = res.
int blockOf(int64_t f, int64_t streams) {
  if (f < streams) return 0;
  if (f < 2 * streams) return 1;
  return 2;
}

}  // namespace

template <class Real>
MhcPreOutputs<Real> mhcPre(const MhcPreInputs<Real>& in) {
  const MhcSizes& s = in.sizes;
  checkSizes(s, in.alphaLength);
  const int64_t T = s.tokens, N = s.streams, D = s.hidden, F = s.fusion, K = s.width(), R = F - 2 * N;
  const bool residual = in.alphaLength == 3;

  MhcPreOutputs<Real> out;
  out.hIn.assign(static_cast<size_t>(T * D), Real(0));
  out.hPost.assign(static_cast<size_t>(T * N), Real(0));
  out.hRes.assign(static_cast<size_t>(T * R), Real(0));
  out.invRms.assign(static_cast<size_t>(T), Real(0));
  out.hMix.assign(static_cast<size_t>(T * F), Real(0));
  out.hPre.assign(static_cast<size_t>(T * N), Real(0));

  const std::vector<Real> phi = matmulOperands(in.phi, F * K, in.hf32);
  const Real inverseWidth = Real(1) / static_cast<Real>(K);
  std::vector<Real> xg(static_cast<size_t>(K));
  for (int64_t t = 0; t < T; ++t) {
    const Real* x = in.x + t * K;
    // RMS over the raw x (gamma is not used here).
    Real squares = 0;
    for (int64_t k = 0; k < K; ++k) {
      const Real square = x[k] * x[k];
      squares = squares + square;
    }
    const Real mean = squares * inverseWidth;
    const Real shifted = mean + in.normEps;
    const Real root = std::sqrt(shifted);
    const Real invRms = Real(1) / root;
    out.invRms[t] = invRms;

    for (int64_t k = 0; k < K; ++k) {
      const Real scaled = in.gamma ? x[k] * in.gamma[k] : x[k];
      xg[k] = matmulOperand(scaled, in.hf32);
    }
    Real* hMix = out.hMix.data() + t * F;
    for (int64_t f = 0; f < F; ++f) {
      Real sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        const Real product = xg[k] * phi[f * K + k];
        sum = sum + product;
      }
      hMix[f] = sum;
    }

    // Pre-activations: times inv_rms, then times alpha, then plus bias.
    for (int64_t f = 0; f < F; ++f) {
      const Real w = hMix[f] * invRms;
      const Real weighted = w * in.alpha[blockOf(f, N)];
      const Real z = weighted + in.bias[f];
      if (f < N) {
        const Real sig = sigmoid(z);
        out.hPre[t * N + f] = sig + in.hcEps;
      } else if (f < 2 * N) {
        const Real sig = sigmoid(z);
        const Real doubled = Real(2) * sig;
        out.hPost[t * N + (f - N)] = residual ? doubled : doubled + in.hcEps;
      } else {
        out.hRes[t * R + (f - 2 * N)] = z;
      }
    }

    // h_in from the eps-including h_pre, streams in order.
    for (int64_t d = 0; d < D; ++d) {
      Real sum = 0;
      for (int64_t i = 0; i < N; ++i) {
        const Real product = out.hPre[t * N + i] * x[i * D + d];
        sum = sum + product;
      }
      out.hIn[t * D + d] = sum;
    }
  }
  return out;
}

template <class Real>
MhcPreBackwardOutputs<Real> mhcPreBackward(const MhcPreBackwardInputs<Real>& in) {
  const MhcSizes& s = in.sizes;
  checkSizes(s, 3);
  const int64_t T = s.tokens, N = s.streams, D = s.hidden, F = s.fusion, K = s.width(), R = F - 2 * N;

  MhcPreBackwardOutputs<Real> out;
  out.gradX.assign(static_cast<size_t>(T * K), Real(0));
  out.gradPhi.assign(static_cast<size_t>(F * K), Real(0));
  out.gradAlpha.assign(3, Real(0));
  out.gradBias.assign(static_cast<size_t>(F), Real(0));
  if (in.gamma) out.gradGamma.assign(static_cast<size_t>(K), Real(0));

  const std::vector<Real> phi = matmulOperands(in.phi, F * K, in.hf32);
  const Real width = static_cast<Real>(K);
  std::vector<Real> dz(static_cast<size_t>(F)), dm(static_cast<size_t>(F)), dmOperand(static_cast<size_t>(F));
  std::vector<Real> xgOperand(static_cast<size_t>(K)), dxg(static_cast<size_t>(K));
  for (int64_t t = 0; t < T; ++t) {
    const Real* x = in.x + t * K;
    const Real* gin = in.gradHIn + t * D;
    const Real* hPre = in.hPre + t * N;
    const Real* hPost = in.hPost + t * N;
    const Real* hMix = in.hMix + t * F;
    const Real r = in.invRms[t];

    // dz: the gradient w.r.t. the pre-activations; sigmoid derivatives from the saved outputs.
    for (int64_t i = 0; i < N; ++i) {
      Real gPre = 0;  // gradient w.r.t. h_pre
      for (int64_t d = 0; d < D; ++d) {
        const Real product = gin[d] * x[i * D + d];
        gPre = gPre + product;
      }
      const Real sig = hPre[i] - in.hcEps;
      const Real complement = Real(1) - sig;
      const Real derivative = sig * complement;
      dz[i] = gPre * derivative;
    }
    for (int64_t i = 0; i < N; ++i) {
      const Real half = hPost[i] / Real(2);
      const Real complement = Real(1) - half;
      const Real derivative = hPost[i] * complement;  // 2 sigma (1 - sigma)
      dz[N + i] = in.gradHPost[t * N + i] * derivative;
    }
    for (int64_t j = 0; j < R; ++j) dz[2 * N + j] = in.gradHRes[t * R + j];

    Real gR = 0;  // gradient w.r.t. inv_rms
    for (int64_t f = 0; f < F; ++f) {
      out.gradBias[f] = out.gradBias[f] + dz[f];
      const int block = blockOf(f, N);
      const Real w = hMix[f] * r;
      const Real alphaPart = dz[f] * w;
      out.gradAlpha[block] = out.gradAlpha[block] + alphaPart;
      const Real dw = dz[f] * in.alpha[block];
      const Real rmsPart = dw * hMix[f];
      gR = gR + rmsPart;
      dm[f] = dw * r;
      dmOperand[f] = matmulOperand(dm[f], in.hf32);
    }

    // grad_phi += dm^T (x gamma): the matmul input, not the normalized x.
    for (int64_t k = 0; k < K; ++k) {
      const Real scaled = in.gamma ? x[k] * in.gamma[k] : x[k];
      xgOperand[k] = matmulOperand(scaled, in.hf32);
    }
    for (int64_t f = 0; f < F; ++f) {
      for (int64_t k = 0; k < K; ++k) {
        const Real product = dmOperand[f] * xgOperand[k];
        out.gradPhi[f * K + k] = out.gradPhi[f * K + k] + product;
      }
    }

    // dxg = dm . phi: the gradient w.r.t. x gamma.
    for (int64_t k = 0; k < K; ++k) {
      Real sum = 0;
      for (int64_t f = 0; f < F; ++f) {
        const Real product = dmOperand[f] * phi[f * K + k];
        sum = sum + product;
      }
      dxg[k] = sum;
    }
    if (in.gamma) {
      for (int64_t k = 0; k < K; ++k) {
        const Real product = x[k] * dxg[k];
        out.gradGamma[k] = out.gradGamma[k] + product;
      }
    }

    // grad_x = ((h_in term + rms term over the raw x) + gamma dxg) + grad_x_post.
    const Real r2 = r * r;
    const Real r3 = r2 * r;
    const Real scaledGr = gR * r3;
    const Real coefficient = -scaledGr / width;
    for (int64_t i = 0; i < N; ++i) {
      for (int64_t d = 0; d < D; ++d) {
        const int64_t k = i * D + d;
        const Real hinTerm = gin[d] * hPre[i];
        const Real rmsTerm = x[k] * coefficient;
        const Real gammaTerm = in.gamma ? in.gamma[k] * dxg[k] : dxg[k];
        const Real partial = hinTerm + rmsTerm;
        const Real total = partial + gammaTerm;
        out.gradX[t * K + k] = in.gradXPost ? total + in.gradXPost[t * K + k] : total;
      }
    }
  }
  return out;
}

template MhcPreOutputs<double> mhcPre(const MhcPreInputs<double>&);
template MhcPreOutputs<float> mhcPre(const MhcPreInputs<float>&);
template MhcPreBackwardOutputs<double> mhcPreBackward(const MhcPreBackwardInputs<double>&);
template MhcPreBackwardOutputs<float> mhcPreBackward(const MhcPreBackwardInputs<float>&);

}  // namespace gradkit::golden
