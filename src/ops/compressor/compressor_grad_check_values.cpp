#include "ops/compressor/compressor_grad_check_values.h"

#include <climits>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kCompressorGradApi;

std::string at(const char* what, size_t index, int64_t value) {
  return std::string(what) + "[" + std::to_string(index) + "] = " + std::to_string(value);
}

aclnnStatus checkCuSeqlens(const std::vector<int64_t>& cu, int64_t tokens) {
  const char* name = "cuSeqlensOptional";
  if (cu[0] != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "cu_seqlens[0] = 0 (prefix sums of the batch lengths)",
                at("cu_seqlens", 0, cu[0]));
  }
  for (size_t b = 1; b < cu.size(); ++b) {
    if (cu[b] < cu[b - 1]) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "non-decreasing values (prefix sums of the batch lengths)",
                  at("cu_seqlens", b, cu[b]) + " after " + at("cu_seqlens", b - 1, cu[b - 1]));
    }
  }
  if (cu.back() > tokens) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, name,
                "cu_seqlens[B] <= T = " + std::to_string(tokens) + " (the rows of x)",
                at("cu_seqlens", cu.size() - 1, cu.back()));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkCompressorGradValues(const CompressorGradArgs& args, int64_t tokens) {
  const bool th = args.x->dim() == 2;
  const std::vector<int64_t> cu = readInt32Values(args.cuSeqlens);
  if (th) GRADKIT_RETURN_IF_ERROR(checkCuSeqlens(cu, tokens));
  const int64_t batch = th ? static_cast<int64_t>(cu.size()) - 1 : args.x->viewDims[0];
  const auto length = [&](int64_t b) { return th ? cu[b + 1] - cu[b] : args.x->viewDims[1]; };
  const std::vector<int64_t> used = readInt32Values(args.seqused);
  for (int64_t b = 0; b < static_cast<int64_t>(used.size()); ++b) {
    if (used[b] < 0 || used[b] > length(b)) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "sequsedOptional",
                  "0 <= seqused[b] <= the batch's length (" +
                      std::string(th ? "cu_seqlens[b+1] - cu_seqlens[b]" : "S") + " = " + std::to_string(length(b)) +
                      " for b = " + std::to_string(b) + ")",
                  at("seqused", static_cast<size_t>(b), used[b]));
    }
  }
  const std::vector<int64_t> start = readInt32Values(args.startPos);
  for (int64_t b = 0; b < static_cast<int64_t>(start.size()) && b < batch; ++b) {
    if (start[b] < 0) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "startPosOptional", "start_pos[b] >= 0",
                  at("start_pos", static_cast<size_t>(b), start[b]));
    }
    if (start[b] + length(b) > INT32_MAX) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "startPosOptional",
                  "start_pos[b] + the batch's length <= 2147483647 (positions are int32; length " +
                      std::to_string(length(b)) + " for b = " + std::to_string(b) + ")",
                  at("start_pos", static_cast<size_t>(b), start[b]));
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
