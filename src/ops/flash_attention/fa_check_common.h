// The argument rules the flash attention forward and backward checks share (spec fag.md 2.4-2.15): the call, layouts
// and sizes (read through the size model fa_layout.h, judged here), TND sequence arrays, softmax statistics shapes,
// dtypes, dropout, rope and the data pointers; masking and pse rules are in fa_check_masking.h. Each helper returns
// ACLNN_SUCCESS or records "<api>: argument
// '<name>': expected ..., given ..." and returns the code (161001 for a required null pointer, else 161002).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/flash_attention/fa_args.h"
#include "ops/flash_attention/fa_layout.h"

namespace gradkit::ops {

inline constexpr int64_t kFaMaxHeadDim = 768;  // D limit of the forward aclnn check and the V1 grad docs
inline constexpr int64_t kFaMaxHeads = 256;    // N1 range 1..256
inline constexpr int64_t kFaRope950HeadDim = 128, kFaRope950RopeDim = 64;

/**
 * The arguments both directions share, with the argument names of the entry point that was called: what the checks
 * judge and what the plan builds the problem from (faCallOf below; 0-d optional tensors arrive as null, the entry
 * points' opapi absentIfScalar).
 */
struct FaCall {
  const char* api = "";
  FaEntry entry = FaEntry::Padded;
  const aclTensor* query = nullptr;
  const aclTensor* key = nullptr;
  const aclTensor* value = nullptr;
  const aclTensor* queryRope = nullptr;
  const aclTensor* keyRope = nullptr;
  const aclTensor* pse = nullptr;
  const aclTensor* dropMask = nullptr;
  const aclTensor* attenMask = nullptr;
  const aclIntArray* prefix = nullptr;
  const aclIntArray* actualSeqQLen = nullptr;
  const aclIntArray* actualSeqKvLen = nullptr;
  const aclIntArray* qStartIdx = nullptr;
  const aclIntArray* kvStartIdx = nullptr;
  double keepProb = 1.0;
  int64_t preTokens = 0, nextTokens = 0, headNum = 0;
  const char* inputLayout = nullptr;
  int64_t innerPrecise = 0, sparseMode = 0, pseType = 1;
  bool philoxDropout = false;
  int64_t seed = 0, offset = 0;
  double scaleValue = 1.0;
  bool statsSameAsInput = false;     // softmax*Layout "same_as_input" (TND): a true [T, N1, 8] tensor
  FaLayout layout = FaLayout::BNSD;  // parsed by the check (parseFaLayout); the plan parses it again
  // GradV4 FP8 (query FLOAT8_E5M2 / FLOAT8_E4M3FN): query, key, value are fp8 and a pse table takes the out dtype
  // (FLOAT16 or BFLOAT16, outDtype); ACL_DT_UNDEFINED for every other call.
  aclDataType fp8OutDtype = ACL_DT_UNDEFINED;
  const char* keyName = "key";                // "keyIn" for the backward
  const char* pseName = "realShiftOptional";  // "pseShiftOptional" for the backward
  const char* queryRopeName = "queryRope";
  const char* keyRopeName = "keyRope";
};

/** The call's shared arguments (layout not yet parsed). */
FaCall faCallOf(const FaArgs& args);
FaCall faCallOf(const FagArgs& args);

/** The fields FaArgs and FagArgs name alike; faCallOf adds the pse, the statistics layout and the names. */
template <class Args>
FaCall faSharedCallOf(const Args& a) {
  FaCall v;
  v.api = a.api;
  v.entry = a.entry;
  v.query = a.query, v.key = a.key, v.value = a.value, v.queryRope = a.queryRope, v.keyRope = a.keyRope;
  v.dropMask = a.dropMask, v.attenMask = a.attenMask;
  v.prefix = a.prefix, v.actualSeqQLen = a.actualSeqQLen, v.actualSeqKvLen = a.actualSeqKvLen;
  v.qStartIdx = a.qStartIdx, v.kvStartIdx = a.kvStartIdx;
  v.keepProb = a.keepProb, v.preTokens = a.preTokens, v.nextTokens = a.nextTokens, v.headNum = a.headNum;
  v.inputLayout = a.inputLayout, v.innerPrecise = a.innerPrecise, v.sparseMode = a.sparseMode, v.pseType = a.pseType;
  v.philoxDropout = a.philoxDropout, v.seed = a.seed, v.offset = a.offset;
  v.scaleValue = a.scaleValue;
  v.queryRopeName = a.entry == FaEntry::Merged950 ? "queryRopeOptional" : "queryRope";
  return v;
}

/** softmax*Layout "same_as_input". */
inline bool faSameAsInput(const char* layout) {
  return layout != nullptr && std::string_view(layout) == "same_as_input";
}

/** 161001 for a null pointer among `named` (names as the entry point spells them). */
aclnnStatus checkFaRequired(std::string_view api, const std::vector<NamedTensor>& named);

/** Parses inputLayout (null: 161001) and checks that the entry family accepts it. */
aclnnStatus parseFaLayout(const FaCall& v, FaLayout* layout);

/** headNum > 0, ranks, and B / N1 / N2 / S1 / S2 / D / D_V from query, key and value for `layout` (spec 2.4, 2.5). */
aclnnStatus deriveFaSizes(const FaCall& v, FaLayout layout, FaSizes* sizes);

/** TND: the cumulative sequence arrays (spec 2.5); fills s->b, s->seqQ, s->seqKv, s->s1, s->s2. */
aclnnStatus checkFaSequenceArrays(const FaCall& v, FaSizes* s);

/** softmaxIn/OutLayout: null, "" or "same_as_input". */
aclnnStatus checkFaSoftmaxLayout(std::string_view api, std::string_view name, const char* layout);

/** FP32 statistics [B, N1, S1, 8] (padded) or [T1, N1, 8] (TND). */
aclnnStatus checkFaStatistics(std::string_view api, std::string_view name, const aclTensor& t, const FaSizes& s);

/** The dtype of query (fp16 / bf16 / fp32; FP8 calls: fp8_e5m2 / fp8_e4m3fn) and key, value the same (spec 2.3). */
aclnnStatus checkFaInputDtypes(const FaCall& v);

/** keepProb, dropMask (spec 2.11), offset for the Philox stream. */
aclnnStatus checkFaDropout(const FaCall& v, const FaSizes& s);

/** queryRope / keyRope (spec 2.4, 2.14); fills s->dRope. */
aclnnStatus checkFaRope(const FaCall& v, FaSizes* s);

/** 161002 naming `name` when a feature gradkit does not implement yet is requested (`what`, `when`). */
aclnnStatus rejectFaNotSupported(std::string_view api, std::string_view name, const aclTensor& given,
                                 std::string_view what);

/** 161002 unless the entry point exists in the current profile (Merged950: Ascend950 only). */
aclnnStatus checkFaProfile(std::string_view api, FaEntry entry);

}  // namespace gradkit::ops
