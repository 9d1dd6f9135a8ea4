// The arguments of the four mHC entry points (aclnnMhcPre[V2], aclnnMhcPreBackward[V2]), packed once, and the
// problem dimensions every later step reads from them. Spec: ../shared/spec/mhc.md; decisions: DECISIONS.md.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kMhcPreApi = "aclnnMhcPre";
inline constexpr const char* kMhcPreV2Api = "aclnnMhcPreV2";
inline constexpr const char* kMhcPreBackwardApi = "aclnnMhcPreBackward";
inline constexpr const char* kMhcPreBackwardV2Api = "aclnnMhcPreBackwardV2";

/** opImplMode values: the matmul operands in fp32, or rounded to HF32 (spec mhc.md 6). */
inline constexpr int64_t kMhcFp32Matmul = 0;
inline constexpr int64_t kMhcHf32Matmul = 1;

/** One aclnnMhcPre / aclnnMhcPreV2 call, as the caller gave it. */
struct MhcPreArgs {
  const char* api;  // kMhcPreApi or kMhcPreV2Api: the entry point, for messages and the V2 rules
  const aclTensor* x;
  const aclTensor* phi;
  const aclTensor* alpha;
  const aclTensor* bias;
  const aclTensor* gamma;  // optional
  double normEps;
  double hcEps;
  int64_t opImplMode;  // always kMhcFp32Matmul for V1
  aclTensor* hIn;
  aclTensor* hPost;
  aclTensor* hRes;    // may be null when alpha has 2 elements
  aclTensor* invRms;  // optional cache (all three caches or none)
  aclTensor* hMix;    // optional cache
  aclTensor* hPre;    // optional cache
  bool isV2() const;
};

/** One aclnnMhcPreBackward / aclnnMhcPreBackwardV2 call, as the caller gave it. */
struct MhcPreBackwardArgs {
  const char* api;  // kMhcPreBackwardApi or kMhcPreBackwardV2Api
  const aclTensor* x;
  const aclTensor* phi;
  const aclTensor* alpha;
  const aclTensor* gradHIn;
  const aclTensor* gradHPost;
  const aclTensor* gradHRes;
  const aclTensor* invRms;
  const aclTensor* hMix;
  const aclTensor* hPre;
  const aclTensor* hPost;
  const aclTensor* gamma;      // optional
  const aclTensor* gradXPost;  // optional
  float hcEps;
  int64_t opImplMode;  // always kMhcFp32Matmul for V1
  const aclTensor* gradX;
  const aclTensor* gradPhi;
  const aclTensor* gradAlpha;
  const aclTensor* gradBias;
  const aclTensor* gradGamma;  // required iff gamma is given; untouched when gamma is null
  bool isV2() const;
};

/**
 * The sizes of a checked call. All math is per token, so BSND [B,S,N,D] is TND with T = B*S; tokens run in
 * row-major order of the leading dims.
 */
struct MhcDims {
  int64_t tokens = 0;    // T
  int64_t streams = 0;   // N
  int64_t hidden = 0;    // D
  int64_t fusion = 0;    // F: rows of phi = 2N + residual
  int64_t residual = 0;  // R: N*N, N!, or 0 (alpha of 2 elements, forward only)
  bool bsnd = false;     // x has 4 dims
  /** K = N*D, the length of one token's flattened input (the matmul reduction length). */
  int64_t width() const { return streams * hidden; }
};

/** The sizes of a call whose x ([..,N,D]) and phi ([F, N*D]) passed their checks. */
MhcDims mhcDimsOf(const aclTensor& x, const aclTensor& phi);

}  // namespace gradkit::ops
