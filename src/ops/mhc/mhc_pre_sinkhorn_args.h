// The arguments of aclnnMhcPreSinkhorn and aclnnMhcPreSinkhornBackward, packed once, and the sizes every later step
// reads. Upstream: ops-transformer mhc/mhc_pre_sinkhorn, mhc/mhc_pre_sinkhorn_backward (docs/mhc_pre_sinkhorn.md).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/mhc/mhc_args.h"

namespace gradkit::ops {

inline constexpr const char* kMhcPreSinkhornApi = "aclnnMhcPreSinkhorn";
inline constexpr const char* kMhcPreSinkhornBackwardApi = "aclnnMhcPreSinkhornBackward";

/** One aclnnMhcPreSinkhorn call, as the caller gave it. */
struct MhcPreSinkhornArgs {
  const aclTensor* x;
  const aclTensor* phi;
  const aclTensor* alpha;
  const aclTensor* bias;
  int64_t hcMult;
  int64_t numIters;
  double hcEps;
  double normEps;
  bool needBackward;  // false: the five saved tensors are ignored
  aclTensor* hin;
  aclTensor* hPost;
  aclTensor* hRes;
  aclTensor* hPre;
  aclTensor* hcBeforeNorm;
  aclTensor* invRms;
  aclTensor* sumOut;
  aclTensor* normOut;
};

/** One aclnnMhcPreSinkhornBackward call, as the caller gave it. */
struct MhcPreSinkhornBackwardArgs {
  const aclTensor* gradHin;
  const aclTensor* gradHPost;
  const aclTensor* gradHRes;
  const aclTensor* x;
  const aclTensor* phi;
  const aclTensor* alpha;
  const aclTensor* bias;
  const aclTensor* hPre;
  const aclTensor* hcBeforeNorm;
  const aclTensor* invRms;
  const aclTensor* sumOut;
  const aclTensor* normOut;
  double hcEps;
  const aclTensor* gradX;
  const aclTensor* gradPhi;
  const aclTensor* gradAlpha;
  const aclTensor* gradBias;
};

/** The sizes of a checked call: mHC's dims (F = n*n + 2n) and the Sinkhorn iterations. */
struct MhcPreSinkhornDims {
  MhcDims mhc;
  int64_t iters = 0;
};

/** True when a backward call has no work: one of its inputs is empty (upstream returns before its checks). */
bool mhcPreSinkhornBackwardIsEmpty(const MhcPreSinkhornBackwardArgs& args);

}  // namespace gradkit::ops
