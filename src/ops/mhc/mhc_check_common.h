// The argument rules the forward and backward mHC checks share: the platform profile's limits (DECISIONS.md),
// the V2 entry gate, the rank / shape / emptiness / format wording, and gradkit's memory rules (overlaps,
// allocation fit). Every helper returns ACLNN_SUCCESS or records "<api>: argument '<name>': expected ..., given
// ..." and returns the code.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

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

/** 161002 naming `name` (x) when N or D break the profile's limits. */
aclnnStatus checkMhcStreamsAndHidden(std::string_view api, std::string_view name, const aclTensor& x,
                                     const MhcProfile& profile);

/** 161002 when the tensor has no elements (mHC supports no empty tensor). */
aclnnStatus checkNotEmpty(std::string_view api, std::string_view name, const aclTensor& tensor);

/** 161002 unless the tensor has one of `ranks` dims; `why` explains the rule ("rank of x - 1"). */
aclnnStatus checkRankIn(std::string_view api, std::string_view name, const aclTensor& tensor,
                        std::initializer_list<int64_t> ranks, std::string_view why);

/** 161002 unless the view shape is exactly `expected`; `why` says where the dims come from. */
aclnnStatus checkShapeIs(std::string_view api, std::string_view name, const aclTensor& tensor,
                         const std::vector<int64_t>& expected, std::string_view why);

/** 161002 for a private (NPU-internal) format: NC1HWC0, FRACTAL_Z, NC1HWC0_C04, FRACTAL_NZ, NDC1HWC0, FRACTAL_Z_3D. */
aclnnStatus checkNotPrivateFormat(std::string_view api, std::string_view name, const aclTensor& tensor);

/** One argument for the memory rules; `tensor` null means absent (skipped). */
struct NamedTensor {
  std::string_view name;
  const aclTensor* tensor;
  /** For an output: the one input it may be exactly the same view of (an in-place call); empty for none. */
  std::string_view inPlaceWith = {};
};

/**
 * gradkit's memory rules after upstream's (docs/reliability.md): every tensor's data is not in a freed block and
 * its storage fits in the tracked allocation behind it (aclCreateTensor's rules, asked again because the memory may
 * have been freed since the descriptor was made), no output writes an address twice, no output shares a byte with an
 * input (the kernels read inputs across tokens while they write) except exactly the same view of its `inPlaceWith`
 * input, and no two outputs share a byte. 161002 naming the tensors.
 */
aclnnStatus checkMhcMemoryRules(std::string_view api, const std::vector<NamedTensor>& inputs,
                                const std::vector<NamedTensor>& outputs);

/** `lead` followed by `tail`: the expected shape of a per-token tensor. */
std::vector<int64_t> mhcShape(const std::vector<int64_t>& lead, std::initializer_list<int64_t> tail);

/** "B, S" or "T": what the leading dims are called, for messages. */
const char* mhcLeadNames(const std::vector<int64_t>& lead);

}  // namespace gradkit::ops
