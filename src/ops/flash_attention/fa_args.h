// The arguments of every flash attention entry point, packed once. Each upstream version (V1, V2, VarLen, V4 ...)
// fills the one struct of its direction with what it has and the IR defaults for the rest (spec fag.md 2.2, 2.3),
// and names itself in `api`, so the checks and the plan serve every version alike.
// Spec: ../shared/spec/fag.md; decisions: ../shared/spec/DECISIONS.md.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

/** Which family of entry points a call came through: decides the layouts and arrays it may use. */
enum class FaEntry {
  Padded,    // aclnnFlashAttentionScore(V2) / aclnnFlashAttentionScoreGrad(V2, V3): BNSD, BSND, BSH, SBH
  VarLen,    // aclnnFlashAttentionVarLenScore* / aclnnFlashAttentionUnpaddingScoreGrad*: TND only
  Merged950  // aclnnFlashAttentionScoreGradV4: padded layouts and TND (Ascend950 profile)
};

/** The IR default of preTokens / nextTokens (spec 2.2). */
inline constexpr int64_t kFaDefaultTokens = 2147483647;

/** One forward call (aclnnFlashAttentionScore*, aclnnFlashAttentionVarLenScore*). */
struct FaArgs {
  const char* api = "aclnnFlashAttentionScore";  // the entry point, for messages
  FaEntry entry = FaEntry::Padded;
  const aclTensor* query = nullptr;
  const aclTensor* queryRope = nullptr;  // VarLenV3 only
  const aclTensor* key = nullptr;
  const aclTensor* keyRope = nullptr;  // VarLenV3 only
  const aclTensor* value = nullptr;
  const aclTensor* realShift = nullptr;         // pse (optional)
  const aclTensor* dropMask = nullptr;          // optional
  const aclTensor* paddingMask = nullptr;       // reserved
  const aclTensor* attenMask = nullptr;         // optional
  const aclIntArray* prefix = nullptr;          // optional
  const aclIntArray* actualSeqQLen = nullptr;   // VarLen: cumulative, no leading 0
  const aclIntArray* actualSeqKvLen = nullptr;  // VarLen
  const aclIntArray* qStartIdx = nullptr;       // V2+: optional
  const aclIntArray* kvStartIdx = nullptr;      // V2+: optional
  double scaleValue = 1.0;
  double keepProb = 1.0;
  int64_t preTokens = kFaDefaultTokens;
  int64_t nextTokens = kFaDefaultTokens;
  int64_t headNum = 0;
  const char* inputLayout = nullptr;
  int64_t innerPrecise = 0;
  int64_t sparseMode = 0;
  int64_t pseType = 1;                     // V1 APIs: always 1
  const char* softmaxOutLayout = nullptr;  // VarLenV4: "" or "same_as_input"; null = ""
  // No upstream forward entry point draws its own mask; gradkit's Python layer does (spec 3, as GradV4).
  bool philoxDropout = false;
  int64_t seed = 0;
  int64_t offset = 0;
  const aclTensor* softmaxMaxOut = nullptr;
  const aclTensor* softmaxSumOut = nullptr;
  const aclTensor* softmaxOutOut = nullptr;  // reserved
  const aclTensor* attentionOutOut = nullptr;
};

/** One backward call (aclnnFlashAttentionScoreGrad*, aclnnFlashAttentionUnpaddingScoreGrad*). */
struct FagArgs {
  const char* api = "aclnnFlashAttentionScoreGrad";
  FaEntry entry = FaEntry::Padded;
  const aclTensor* query = nullptr;
  const aclTensor* queryRope = nullptr;  // UnpaddingV3, GradV4
  const aclTensor* key = nullptr;
  const aclTensor* keyRope = nullptr;  // UnpaddingV3, GradV4
  const aclTensor* value = nullptr;
  const aclTensor* dy = nullptr;
  const aclTensor* pseShift = nullptr;     // optional
  const aclTensor* dropMask = nullptr;     // optional
  const aclTensor* paddingMask = nullptr;  // reserved
  const aclTensor* attenMask = nullptr;    // optional
  const aclTensor* softmaxMax = nullptr;
  const aclTensor* softmaxSum = nullptr;
  const aclTensor* softmaxIn = nullptr;  // reserved
  const aclTensor* attentionIn = nullptr;
  const aclTensor* sinkIn = nullptr;   // GradV3, GradV4: optional
  const aclTensor* dScaleQ = nullptr;  // GradV4 FP8 (issue 13): optional
  const aclTensor* dScaleK = nullptr;
  const aclTensor* dScaleV = nullptr;
  const aclTensor* dScaleDy = nullptr;
  const aclTensor* dScaleO = nullptr;
  const aclIntArray* prefix = nullptr;
  const aclIntArray* actualSeqQLen = nullptr;
  const aclIntArray* actualSeqKvLen = nullptr;
  const aclIntArray* qStartIdx = nullptr;
  const aclIntArray* kvStartIdx = nullptr;
  double scaleValue = 1.0;
  double keepProb = 1.0;
  int64_t preTokens = kFaDefaultTokens;
  int64_t nextTokens = kFaDefaultTokens;
  int64_t headNum = 0;
  const char* inputLayout = nullptr;
  const char* softmaxInLayout = nullptr;  // UnpaddingV4, GradV4: "" or "same_as_input"; null = ""
  int64_t innerPrecise = 0;
  int64_t sparseMode = 0;
  int64_t pseType = 1;
  int64_t seed = 0;            // GradV4: the Philox stream (spec 3) when keepProb < 1 and no dropMask
  int64_t offset = 0;          // GradV4
  int64_t outDtype = 0;        // GradV4 FP8 only
  bool philoxDropout = false;  // GradV4: draw the mask from seed/offset when none is given
  const aclTensor* dqOut = nullptr;
  const aclTensor* dqRopeOut = nullptr;
  const aclTensor* dkOut = nullptr;
  const aclTensor* dkRopeOut = nullptr;
  const aclTensor* dvOut = nullptr;
  const aclTensor* dpseOut = nullptr;   // unused by upstream: never written
  const aclTensor* dsinkOut = nullptr;  // GradV3, GradV4
};

}  // namespace gradkit::ops
