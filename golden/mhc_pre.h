// Golden MhcPre and MhcPreBackward, written from the formulas of spec mhc.md 2.2 and 3.4 (RMS over raw x,
// gamma only on the matmul input; DECISIONS.md), never from the kernels. Templated on the arithmetic type:
// double is the fp64 golden; float is the naive same-dtype computation that the double-benchmark precision gate
// compares against (plain sequential sums, one operation at a time).
//
// All tensors are dense row-major over tokens (BSND is TND with T = B*S). Inputs come already widened: a BF16/FP16
// x is passed as its exact values. Outputs are unrounded; the caller rounds hIn / gradX to x's dtype.
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

/** The sizes of one mHC problem. fusion F = 2N + residual; residual = N*N, N!, or 0 (alpha of 2, forward only). */
struct MhcSizes {
  int64_t tokens = 0;                                 // T
  int64_t streams = 0;                                // N
  int64_t hidden = 0;                                 // D
  int64_t fusion = 0;                                 // F
  int64_t width() const { return streams * hidden; }  // K = N*D
};

/**
 * Rounds an fp32 value to HF32 (opImplMode 1, spec mhc.md 6): 11 explicit mantissa bits, fp32's exponent range,
 * round to nearest with ties away from zero. Inf and NaN pass through; a value that rounds past FLT_MAX becomes Inf.
 */
float roundToHf32(float value);

template <class Real>
struct MhcPreInputs {
  MhcSizes sizes;
  const Real* x = nullptr;      // [T, K]
  const Real* phi = nullptr;    // [F, K]
  const Real* alpha = nullptr;  // [alphaLength]
  int alphaLength = 3;          // 3, or 2 (no residual block: F = 2N, hRes empty, hPost gets + hcEps)
  const Real* bias = nullptr;   // [F]
  const Real* gamma = nullptr;  // [K] or null (ones)
  Real normEps = 0;
  Real hcEps = 0;
  bool hf32 = false;  // opImplMode 1: both matmul operands (x*gamma and phi) pass through roundToHf32 first
};

template <class Real>
struct MhcPreOutputs {
  std::vector<Real> hIn;     // [T, D]
  std::vector<Real> hPost;   // [T, N]
  std::vector<Real> hRes;    // [T, F - 2N] (empty for alpha of 2)
  std::vector<Real> invRms;  // [T]
  std::vector<Real> hMix;    // [T, F]
  std::vector<Real> hPre;    // [T, N], includes hcEps
};

/** MhcPre (spec mhc.md 2.2, 2.4). */
template <class Real>
MhcPreOutputs<Real> mhcPre(const MhcPreInputs<Real>& in);

template <class Real>
struct MhcPreBackwardInputs {
  MhcSizes sizes;
  const Real* x = nullptr;          // [T, K]
  const Real* phi = nullptr;        // [F, K]
  const Real* alpha = nullptr;      // [3]
  const Real* gradHIn = nullptr;    // [T, D]
  const Real* gradHPost = nullptr;  // [T, N]
  const Real* gradHRes = nullptr;   // [T, F - 2N]
  const Real* invRms = nullptr;     // [T]
  const Real* hMix = nullptr;       // [T, F]
  const Real* hPre = nullptr;       // [T, N] (includes hcEps)
  const Real* hPost = nullptr;      // [T, N]
  const Real* gamma = nullptr;      // [K] or null
  const Real* gradXPost = nullptr;  // [T, K] or null
  Real hcEps = 0;
  bool hf32 = false;  // opImplMode 1: the operands of dm.phi and dm^T.(x*gamma) pass through roundToHf32 first
};

template <class Real>
struct MhcPreBackwardOutputs {
  std::vector<Real> gradX;      // [T, K], unrounded
  std::vector<Real> gradPhi;    // [F, K]
  std::vector<Real> gradAlpha;  // [3]
  std::vector<Real> gradBias;   // [F]
  std::vector<Real> gradGamma;  // [K]; empty when gamma is null
};

/** MhcPreBackward (spec mhc.md 3.4): sigmoid derivatives from the saved hPre - hcEps and hPost / 2. */
template <class Real>
MhcPreBackwardOutputs<Real> mhcPreBackward(const MhcPreBackwardInputs<Real>& in);

extern template MhcPreOutputs<double> mhcPre(const MhcPreInputs<double>&);
extern template MhcPreOutputs<float> mhcPre(const MhcPreInputs<float>&);
extern template MhcPreBackwardOutputs<double> mhcPreBackward(const MhcPreBackwardInputs<double>&);
extern template MhcPreBackwardOutputs<float> mhcPreBackward(const MhcPreBackwardInputs<float>&);

}  // namespace gradkit::golden
