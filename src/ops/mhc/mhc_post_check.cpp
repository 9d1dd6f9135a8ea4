// aclnnMhcPost[Backward]: upstream's order of rules (null pointers, dtypes, ranks, shapes, then the profile's N and D
// limits), every tensor described by its role, so both directions share one rule book:
//   streams  [lead, N, D]  x, out; gradOutput, x, gradX   (BF16 / FP16, the first one's dtype)
//   square   [lead, N, N]  hRes; gradHRes                  (FP32)
//   hidden   [lead, D]     hOut; gradHOut                  (the streams' dtype)
//   weights  [lead, N]     hPost; gradHPost                (FP32)
// lead = [B, S] or [T], from the first streams tensor. Then the empty-tensor rule, formats and gradkit's memory
// rules. hRes is optional in the Ascend950 profile only (upstream: A2/A3 need it).
#include "ops/mhc/mhc_post_check.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/mhc/mhc_check_common.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

enum class Role { Streams, Square, Hidden, Weights };

struct Argument {
  const char* name;
  const aclTensor* tensor;  // null: absent (only hRes may be)
  Role role;
  bool output;
};

/** Every tensor of one call, inputs first, in upstream's order; the first is the streams tensor that sets lead. */
struct PostCall {
  const char* api;
  std::vector<Argument> arguments;
  bool backward;
};

PostCall forwardCall(const MhcPostArgs& a) {
  return {kMhcPostApi,
          {{"x", a.x, Role::Streams, false},
           {"hRes", a.hRes, Role::Square, false},
           {"hOut", a.hOut, Role::Hidden, false},
           {"hPost", a.hPost, Role::Weights, false},
           {"out", a.out, Role::Streams, true}},
          false};
}

PostCall backwardCall(const MhcPostBackwardArgs& a) {
  return {kMhcPostBackwardApi,
          {{"gradOutput", a.gradOutput, Role::Streams, false},
           {"x", a.x, Role::Streams, false},
           {"hRes", a.hRes, Role::Square, false},
           {"hOut", a.hOut, Role::Hidden, false},
           {"hPost", a.hPost, Role::Weights, false},
           {"gradX", a.gradX, Role::Streams, true},
           {"gradHRes", a.gradHRes, Role::Square, true},
           {"gradHOut", a.gradHOut, Role::Hidden, true},
           {"gradHPost", a.gradHPost, Role::Weights, true}},
          true};
}

bool isHRes(const Argument& argument) { return std::string_view(argument.name) == "hRes"; }

/** The Ascend950 profile takes hRes = nullptr (a plain residual); A2/A3 need it. */
bool hResOptional() { return rt::currentSoc() == rt::Soc::Ascend950; }

aclnnStatus checkNulls(const PostCall& call, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(call.api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(call.api, "executor", executor));
  for (const Argument& argument : call.arguments) {
    if (argument.tensor != nullptr) continue;
    if (isHRes(argument)) {
      if (hResOptional()) continue;
      return fail(ACLNN_ERR_PARAM_NULLPTR, call.api, "hRes",
                  std::string("a tensor: hRes may be nullptr only in the Ascend950 profile, this is the ") +
                      rt::socName(rt::currentSoc()) + " profile (GRADKIT_SOC)",
                  "nullptr");
    }
    GRADKIT_RETURN_IF_ERROR(checkNotNull(call.api, argument.name, argument.tensor));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkDtypes(const PostCall& call) {
  const Argument& first = call.arguments.front();
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(call.api, first.name, *first.tensor, {ACL_BF16, ACL_FLOAT16}));
  for (const Argument& argument : call.arguments) {
    if (argument.tensor == nullptr || &argument == &first) continue;
    if (argument.role == Role::Square || argument.role == Role::Weights) {
      GRADKIT_RETURN_IF_ERROR(checkDtypeIn(call.api, argument.name, *argument.tensor, {ACL_FLOAT}));
    } else {
      GRADKIT_RETURN_IF_ERROR(checkSameDtype(call.api, argument.name, *argument.tensor, first.name, *first.tensor));
    }
  }
  return ACLNN_SUCCESS;
}

/** The shape a tensor of `role` must have, from the lead dims, N and D of the first streams tensor. */
std::vector<int64_t> expectedShape(Role role, const std::vector<int64_t>& lead, int64_t n, int64_t d) {
  switch (role) {
    case Role::Streams:
      return shapeWithTail(lead, {n, d});
    case Role::Square:
      return shapeWithTail(lead, {n, n});
    case Role::Hidden:
      return shapeWithTail(lead, {d});
    case Role::Weights:
      return shapeWithTail(lead, {n});
  }
  return {};
}

std::string roleText(Role role, const std::string& lead) {
  switch (role) {
    case Role::Streams:
      return "[" + lead + ", N, D]";
    case Role::Square:
      return "[" + lead + ", N, N]";
    case Role::Hidden:
      return "[" + lead + ", D]";
    case Role::Weights:
      return "[" + lead + ", N]";
  }
  return {};
}

aclnnStatus checkShapes(const PostCall& call) {
  const Argument& first = call.arguments.front();
  GRADKIT_RETURN_IF_ERROR(
      checkRankIn(call.api, first.name, *first.tensor, {3, 4}, "TND [T, N, D] or BSND [B, S, N, D]"));
  const int64_t rank = first.tensor->dim();
  const std::vector<int64_t> lead(first.tensor->viewDims.begin(), first.tensor->viewDims.end() - 2);
  const int64_t n = first.tensor->viewDims[rank - 2];
  const int64_t d = first.tensor->viewDims[rank - 1];
  const std::string leadText = mhcLeadNames(lead);
  for (const Argument& argument : call.arguments) {
    if (argument.tensor == nullptr || &argument == &first) continue;
    const int64_t expectedRank = argument.role == Role::Streams || argument.role == Role::Square ? rank : rank - 1;
    GRADKIT_RETURN_IF_ERROR(checkRankIn(call.api, argument.name, *argument.tensor, {expectedRank},
                                        roleText(argument.role, leadText) + " of " + first.name));
  }
  for (const Argument& argument : call.arguments) {
    if (argument.tensor == nullptr || &argument == &first) continue;
    GRADKIT_RETURN_IF_ERROR(
        checkShapeIs(call.api, argument.name, *argument.tensor, expectedShape(argument.role, lead, n, d),
                     roleText(argument.role, leadText) + " with " + leadText + ", N, D of " + first.name));
  }
  return ACLNN_SUCCESS;
}

/**
 * N and D against the mHC profile (mhc_check_common.h: N in {4, 6, 8} on Ascend950, N = 4 and D a multiple of 128 in
 * [128, 99968] on A2/A3), except that MhcPost limits no D on Ascend950. Outside Ascend950 the forward answers with
 * upstream's 561103 (its tiling rejects them), the backward with 161002.
 */
aclnnStatus checkProfileLimits(const PostCall& call) {
  const Argument& x = call.arguments.front();
  const MhcProfile profile = currentMhcProfile();
  const bool ascend950 = rt::currentSoc() == rt::Soc::Ascend950;
  const aclnnStatus code = ascend950 || call.backward ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_INNER_NULLPTR;
  GRADKIT_RETURN_IF_ERROR(checkMhcStreams(call.api, x.name, *x.tensor, profile, code));
  return ascend950 ? ACLNN_SUCCESS : checkMhcHidden(call.api, x.name, *x.tensor, profile, code);
}

aclnnStatus checkNoEmptyAndFormats(const PostCall& call) {
  for (const Argument& argument : call.arguments) {
    if (argument.tensor == nullptr) continue;
    GRADKIT_RETURN_IF_ERROR(checkNotEmpty(call.api, argument.name, *argument.tensor));
    GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(call.api, argument.name, *argument.tensor));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkMemory(const PostCall& call) {
  std::vector<NamedTensor> inputs, outputs;
  for (const Argument& argument : call.arguments) {
    (argument.output ? outputs : inputs).push_back({argument.name, argument.tensor});
  }
  return checkMemoryRules(call.api, inputs, outputs);
}

aclnnStatus checkPostCall(const PostCall& call, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNulls(call, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkDtypes(call));
  GRADKIT_RETURN_IF_ERROR(checkShapes(call));
  GRADKIT_RETURN_IF_ERROR(checkNoEmptyAndFormats(call));
  GRADKIT_RETURN_IF_ERROR(checkProfileLimits(call));
  return checkMemory(call);
}

}  // namespace

MhcPostDims mhcPostDimsOf(const aclTensor& x) {
  const int64_t rank = x.dim();
  MhcPostDims dims;
  dims.streams = x.viewDims[rank - 2];
  dims.hidden = x.viewDims[rank - 1];
  dims.tokens = mhcTokensOf(x);
  return dims;
}

aclnnStatus checkMhcPost(const MhcPostArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  return checkPostCall(forwardCall(args), workspaceSize, executor);
}

aclnnStatus checkMhcPostBackward(const MhcPostBackwardArgs& args, const uint64_t* workspaceSize,
                                 aclOpExecutor* const* executor) {
  return checkPostCall(backwardCall(args), workspaceSize, executor);
}

}  // namespace gradkit::ops
