// aclnnCompressorGradGetWorkspaceSize: the profile (CompressorGrad exists only on Ascend950), then spec compressor.md
// 5.4 in upstream's order (null pointers, the layout's cu_seqlens rule, empty tensors, each argument's dtype and rank
// and the attributes, the features D and H, the shapes that must agree, dtype and rank consistency), then what
// upstream leaves unchecked (spec 9 #5, DECISIONS.md "Check early and clearly"): B >= 1, the block-count dims of
// dCmpKv, softmaxScore and kv, the exact output shapes, the formats, gradkit's memory rules, and last the values of
// cu_seqlens, seqused and start_pos (read from host memory once the memory rules have passed). Null required tensors
// are 161001, every other rule 161002, each with "<api>: argument '<name>': expected ..., given ...".
#include "ops/compressor/compressor_grad_check.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/compressor/compressor_grad_check_values.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kCompressorGradApi;
constexpr int64_t kMinHidden = 1024, kMaxHidden = 10240, kHiddenAlignment = 512;
constexpr int64_t kMinCmpRatio = 2, kMaxCmpRatio = 128;

// Upstream registers CompressorGrad for Ascend950 only (spec 5.1).
aclnnStatus checkAvailable() {
  const rt::Soc soc = rt::currentSoc();
  if (soc == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  return failText(ACLNN_ERR_PARAM_INVALID, kApi,
                  std::string("the operator is unavailable in the ") + rt::socName(soc) +
                      " profile: it exists only on Ascend950 (GRADKIT_SOC)");
}

std::vector<NamedTensor> requiredOf(const CompressorGradArgs& a) {
  return {{"x", a.x},   {"wkv", a.wkv},  {"wgate", a.wgate},  {"dCmpKv", a.dCmpKv},    {"softmaxScore", a.softmaxScore},
          {"kv", a.kv}, {"dXOut", a.dX}, {"dWkvOut", a.dWkv}, {"dWgateOut", a.dWgate}, {"dApeOut", a.dApe}};
}

std::vector<NamedTensor> inputsOf(const CompressorGradArgs& a) {
  return {{"x", a.x},
          {"wkv", a.wkv},
          {"wgate", a.wgate},
          {"dCmpKv", a.dCmpKv},
          {"softmaxScore", a.softmaxScore},
          {"kv", a.kv},
          {"cuSeqlensOptional", a.cuSeqlens},
          {"sequsedOptional", a.seqused},
          {"startPosOptional", a.startPos}};
}

std::vector<NamedTensor> outputsOf(const CompressorGradArgs& a) {
  return {{"dXOut", a.dX}, {"dWkvOut", a.dWkv}, {"dWgateOut", a.dWgate}, {"dApeOut", a.dApe}};
}

aclnnStatus checkNulls(const CompressorGradArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  for (const NamedTensor& named : requiredOf(a)) GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, named.name, named.tensor));
  return ACLNN_SUCCESS;
}

// x's rank decides the layout (2: TH, anything else: BSH, whose rank rule then rejects it); cu_seqlens comes with TH
// and only with TH.
aclnnStatus checkLayout(const CompressorGradArgs& a) {
  if (a.x->dim() == 2 && a.cuSeqlens == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, kApi, "cuSeqlensOptional", "a non-null pointer (x is TH [T, H])", "nullptr");
  }
  if (a.x->dim() != 2 && a.cuSeqlens != nullptr) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional",
                "nullptr (x is not 2-D, so the layout is BSH [B, S, H], which takes no cu_seqlens; x has shape " +
                    a.x->shapeString() + ")",
                "a tensor of shape " + a.cuSeqlens->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkNotEmpty(const NamedTensor& named) {
  if (named.tensor == nullptr || !named.tensor->isEmpty()) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, named.name, "a non-empty tensor (CompressorGrad supports no empty tensor)",
              "empty shape " + named.tensor->shapeString());
}

aclnnStatus checkDtypeAndRank(const char* name, const aclTensor* tensor, std::initializer_list<aclDataType> dtypes,
                              std::initializer_list<int64_t> ranks, const char* why) {
  if (tensor == nullptr) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, name, *tensor, dtypes));
  return checkRankIn(kApi, name, *tensor, ranks, why);
}

// Spec 5.4 step 4 (with kv beside softmaxScore: upstream constrains kv's dtype only through its op definition).
aclnnStatus checkEachArgument(const CompressorGradArgs& a) {
  const auto io = {ACL_BF16, ACL_FLOAT16};
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("x", a.x, io, {2, 3}, "TH [T, H] or BSH [B, S, H]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("wkv", a.wkv, io, {2}, "[coff*D, H]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("wgate", a.wgate, io, {2}, "[coff*D, H]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("dCmpKv", a.dCmpKv, io, {2, 3}, "TH [R, D] or BSH [B, ceil(S/cr), D]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("softmaxScore", a.softmaxScore, {ACL_FLOAT}, {3, 4},
                                            "TH [R, coff*cr, D] or BSH [B, ceil(S/cr), coff*cr, D]"));
  GRADKIT_RETURN_IF_ERROR(
      checkDtypeAndRank("kv", a.kv, {ACL_FLOAT}, {3, 4}, "TH [R, coff*cr, D] or BSH [B, ceil(S/cr), coff*cr, D]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("cuSeqlensOptional", a.cuSeqlens, {ACL_INT32}, {1}, "[B+1]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("sequsedOptional", a.seqused, {ACL_INT32}, {1}, "[B]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("startPosOptional", a.startPos, {ACL_INT32}, {1}, "[B]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("dXOut", a.dX, io, {2, 3}, "the shape of x"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("dWkvOut", a.dWkv, io, {2}, "[coff*D, H]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("dWgateOut", a.dWgate, io, {2}, "[coff*D, H]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeAndRank("dApeOut", a.dApe, {ACL_FLOAT}, {2}, "[cmpRatio, coff*D]"));
  if (a.cmpRatio < kMinCmpRatio || a.cmpRatio > kMaxCmpRatio) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cmpRatio", "an integer in [2, 128]", std::to_string(a.cmpRatio));
  }
  if (a.coff != 1 && a.coff != 2) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "coff", "1 or 2", std::to_string(a.coff));
  }
  return ACLNN_SUCCESS;
}

// The sizes every later rule compares against (spec 5.4 step 5).
struct Sizes {
  bool th = false;
  int64_t batch = 0, seqLen = 0, tokens = 0, hidden = 0, headDim = 0;
};

Sizes sizesOf(const CompressorGradArgs& a) {
  Sizes s;
  s.th = a.x->dim() == 2;
  if (s.th) {
    s.batch = a.cuSeqlens->viewDims[0] - 1;
    s.tokens = a.x->viewDims[0];
  } else {
    s.batch = a.x->viewDims[0];
    s.seqLen = a.x->viewDims[1];
    s.tokens = s.batch * s.seqLen;
  }
  s.hidden = a.x->viewDims[a.x->dim() - 1];
  s.headDim = a.wkv->viewDims[0] / a.coff;
  return s;
}

// Spec 5.4 steps 5-6 and gradkit's B >= 1.
aclnnStatus checkFeatures(const CompressorGradArgs& a, const Sizes& s) {
  if (s.th && s.batch < 1) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional",
                "at least 2 values (B + 1 with B >= 1; CompressorGrad supports no empty batch)",
                "shape " + a.cuSeqlens->shapeString());
  }
  if (s.batch > kCompressorMaxBatch) {  // TH only: a BSH x of more batches does not fit in memory
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional",
                "at most " + std::to_string(kCompressorMaxBatch) + " batches (gradkit's limit)",
                "B = " + std::to_string(s.batch) + " (shape " + a.cuSeqlens->shapeString() + ")");
  }
  if (s.headDim != 128 && s.headDim != 512) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "wkv",
                "dim 0 = coff*D with D (head dim) 128 or 512 (coff = " + std::to_string(a.coff) + ")",
                "dim 0 = " + std::to_string(a.wkv->viewDims[0]) + ", D = " + std::to_string(s.headDim) + " (shape " +
                    a.wkv->shapeString() + ")");
  }
  if (s.hidden < kMinHidden || s.hidden > kMaxHidden || s.hidden % kHiddenAlignment != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "x", "H (last dim, the hidden size) a multiple of 512 in [1024, 10240]",
                "H = " + std::to_string(s.hidden) + " (shape " + a.x->shapeString() + ")");
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkDim(std::string_view name, const aclTensor& tensor, int64_t dim, int64_t expected,
                     const std::string& what) {
  if (tensor.viewDims[static_cast<size_t>(dim)] == expected) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name,
              "dim " + std::to_string(dim) + " = " + std::to_string(expected) + " (" + what + ")",
              "dim " + std::to_string(dim) + " = " + std::to_string(tensor.viewDims[static_cast<size_t>(dim)]) +
                  " (shape " + tensor.shapeString() + ")");
}

// Spec 5.4 step 7. The dims of dCmpKv, softmaxScore and kv are compared only when the tensor has the layout's rank
// (step 9 rejects any other rank).
aclnnStatus checkCrossShapes(const CompressorGradArgs& a, const Sizes& s) {
  const std::string b = "B = " + std::to_string(s.batch), d = "D = " + std::to_string(s.headDim);
  const int64_t n = a.coff * a.cmpRatio;
  const std::string rows = "coff*cmpRatio = " + std::to_string(n);
  if (a.seqused != nullptr) GRADKIT_RETURN_IF_ERROR(checkDim("sequsedOptional", *a.seqused, 0, s.batch, b));
  if (a.startPos != nullptr) GRADKIT_RETURN_IF_ERROR(checkDim("startPosOptional", *a.startPos, 0, s.batch, b));
  const std::string h = "H = " + std::to_string(s.hidden) + " of x";
  const std::string c = "coff*D = " + std::to_string(a.coff * s.headDim);
  GRADKIT_RETURN_IF_ERROR(checkDim("wkv", *a.wkv, 1, s.hidden, h));
  GRADKIT_RETURN_IF_ERROR(checkDim("wgate", *a.wgate, 1, s.hidden, h));
  GRADKIT_RETURN_IF_ERROR(checkDim("wkv", *a.wkv, 0, a.coff * s.headDim, c));
  GRADKIT_RETURN_IF_ERROR(checkDim("wgate", *a.wgate, 0, a.coff * s.headDim, c));
  const int64_t lead = s.th ? 0 : 1;  // BSH has B in front
  if (a.dCmpKv->dim() == 2 + lead) {
    if (!s.th) GRADKIT_RETURN_IF_ERROR(checkDim("dCmpKv", *a.dCmpKv, 0, s.batch, b));
    GRADKIT_RETURN_IF_ERROR(checkDim("dCmpKv", *a.dCmpKv, 1 + lead, s.headDim, d));
  }
  for (const NamedTensor& named : {NamedTensor{"softmaxScore", a.softmaxScore}, NamedTensor{"kv", a.kv}}) {
    const aclTensor& t = *named.tensor;
    const std::string_view name = named.name;
    if (t.dim() != 3 + lead) continue;
    if (!s.th) GRADKIT_RETURN_IF_ERROR(checkDim(name, t, 0, s.batch, b));
    GRADKIT_RETURN_IF_ERROR(checkDim(name, t, 1 + lead, n, rows));
    GRADKIT_RETURN_IF_ERROR(checkDim(name, t, 2 + lead, s.headDim, d));
  }
  return ACLNN_SUCCESS;
}

// Spec 5.4 steps 8-9.
aclnnStatus checkConsistency(const CompressorGradArgs& a) {
  for (const NamedTensor& named :
       {NamedTensor{"wkv", a.wkv}, NamedTensor{"wgate", a.wgate}, NamedTensor{"dCmpKv", a.dCmpKv},
        NamedTensor{"dXOut", a.dX}, NamedTensor{"dWkvOut", a.dWkv}, NamedTensor{"dWgateOut", a.dWgate}}) {
    GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, named.name, *named.tensor, "x", *a.x));
  }
  const int64_t rank = a.x->dim();
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "dXOut", *a.dX, {rank}, "the rank of x"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "dCmpKv", *a.dCmpKv, {rank}, "the rank of x"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "softmaxScore", *a.softmaxScore, {rank + 1}, "the rank of x + 1"));
  return checkRankIn(kApi, "kv", *a.kv, {rank + 1}, "the rank of x + 1");
}

// What upstream leaves unchecked: the block-count dims (BSH ceil(S/cr), TH min(T, T/cr + B)) and the output shapes.
aclnnStatus checkExactShapes(const CompressorGradArgs& a, const Sizes& s) {
  const int64_t cr = a.cmpRatio, n = a.coff * cr, d = s.headDim, c = a.coff * d;
  const std::vector<int64_t> lead = compressorOutputLead(s.th, s.batch, s.th ? s.tokens : s.seqLen, cr);
  const std::string leadText = s.th ? "R = min(T, T/cmpRatio + B) = " + std::to_string(lead[0]) + " compressed rows"
                                    : "B, ceil(S/cmpRatio) = " + std::to_string(lead[1]) + " compressed rows";
  std::vector<int64_t> block = lead;
  block.push_back(d);
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "dCmpKv", *a.dCmpKv, block, leadText + ", D"));
  block.back() = n;
  block.push_back(d);
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "softmaxScore", *a.softmaxScore, block, leadText + ", coff*cmpRatio, D"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "kv", *a.kv, block, leadText + ", coff*cmpRatio, D"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "dXOut", *a.dX, a.x->viewDims, "the shape of x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "dWkvOut", *a.dWkv, {c, s.hidden}, "[coff*D, H]"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "dWgateOut", *a.dWgate, {c, s.hidden}, "[coff*D, H]"));
  return checkShapeIs(kApi, "dApeOut", *a.dApe, {cr, c}, "[cmpRatio, coff*D]");
}

}  // namespace

aclnnStatus checkCompressorGrad(const CompressorGradArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkAvailable());
  GRADKIT_RETURN_IF_ERROR(checkNulls(args, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkLayout(args));
  const std::vector<NamedTensor> inputs = inputsOf(args), outputs = outputsOf(args);
  for (const auto* list : {&inputs, &outputs}) {
    for (const NamedTensor& named : *list) GRADKIT_RETURN_IF_ERROR(checkNotEmpty(named));
  }
  GRADKIT_RETURN_IF_ERROR(checkEachArgument(args));
  const Sizes sizes = sizesOf(args);
  GRADKIT_RETURN_IF_ERROR(checkFeatures(args, sizes));
  GRADKIT_RETURN_IF_ERROR(checkCrossShapes(args, sizes));
  GRADKIT_RETURN_IF_ERROR(checkConsistency(args));
  GRADKIT_RETURN_IF_ERROR(checkExactShapes(args, sizes));
  for (const auto* list : {&inputs, &outputs}) {
    for (const NamedTensor& named : *list) {
      if (named.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(kApi, named.name, *named.tensor));
    }
  }
  GRADKIT_RETURN_IF_ERROR(checkMemoryRules(kApi, inputs, outputs));
  return checkCompressorGradValues(args, sizes.tokens);
}

}  // namespace gradkit::ops
