// The argument rules the forward and backward mHC checks share: the platform profile's limits (DECISIONS.md),
// the V2 entry gate and the emptiness rule (the rank / shape / format wording and gradkit's memory rules, which
// every operator shares, are in opapi/tensor_rules.h). Every helper returns ACLNN_SUCCESS or records "<api>: argument
// '<name>': expected ..., given
// ..." and returns the code.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"

namespace gradkit::ops {

/** What the emulated SoC allows mHC (DECISIONS.md, spec mhc.md 2.7 / 3.5). */
struct MhcProfile {
  const char* name;         // "Ascend950", "Ascend910B", "Ascend910_93"
  bool hasV2;               // the V2 entry points exist (Ascend950 only)
  bool factorialResidual;   // the N! residual block is accepted (A2/A3 only)
  int64_t hiddenAlignment;  // D % hiddenAlignment == 0
  int64_t hiddenMin;        // hiddenMin <= D <= hiddenMax
  int64_t hiddenMax;
  /** True when N streams are supported: {4, 6, 8} on Ascend950, {4} on A2/A3. */
  bool allowsStreams(int64_t n) const;
  /** "{4, 6, 8}" or "{4}", for messages. */
  const char* streamsText() const;
};

/** The profile of rt::currentSoc(). */
MhcProfile currentMhcProfile();

/**
 * The gate of the V2 entry points, run before every other rule (spec mhc.md 11.1 and the hicann UT): 161002 when
 * the profile has no V2 entry point, then 161002 when opImplMode is not 0 (fp32) or 1 (HF32). V1 passes.
 */
aclnnStatus checkMhcV2Entry(std::string_view api, bool isV2, int64_t opImplMode);

/** `code` (161002 unless upstream answers otherwise) naming `name` (x) when N (dim -2) breaks the profile's limit. */
aclnnStatus checkMhcStreams(std::string_view api, std::string_view name, const aclTensor& x, const MhcProfile& profile,
                            aclnnStatus code = ACLNN_ERR_PARAM_INVALID);

/** `code` naming `name` (x) when D (the last dim) breaks the profile's alignment and range. */
aclnnStatus checkMhcHidden(std::string_view api, std::string_view name, const aclTensor& x, const MhcProfile& profile,
                           aclnnStatus code = ACLNN_ERR_PARAM_INVALID);

/** checkMhcStreams, then checkMhcHidden, with 161002. */
aclnnStatus checkMhcStreamsAndHidden(std::string_view api, std::string_view name, const aclTensor& x,
                                     const MhcProfile& profile);

/** 161002 when the tensor has no elements (mHC supports no empty tensor). */
aclnnStatus checkNotEmpty(std::string_view api, std::string_view name, const aclTensor& tensor);

/** Tokens T of a per-token tensor [B, S, ..] or [T, ..] with two trailing dims: the product of the dims before them. */
int64_t mhcTokensOf(const aclTensor& t);

/** "B, S" or "T": what the leading dims are called, for messages. */
const char* mhcLeadNames(const std::vector<int64_t>& lead);

}  // namespace gradkit::ops
