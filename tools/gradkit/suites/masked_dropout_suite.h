// The common suite of the ops that apply a packed dropout mask to one input (aclnnDropoutV3Grad,
// aclnnDropoutDoMask, aclnnDropoutBackward): each op file describes its entry points, key names and golden, and
// registers a MaskedDropoutSuite. Gate: bit-exact with the op's golden (DECISIONS.md).
//
// Case keys (besides name, dtype, shape, seed; see harness/tensor_spec.h for the tensor keys):
//   <input>, <output>:  tensor specs ("gradY"/"gradX", "self"/"out", "gradOutput"/"out"); the output's dtype
//                       defaults to the case dtype, its values are ignored (its storage starts as a sentinel)
//   "mask":             tensor spec, default UINT8 [ceil(n/128)*16] with every byte pattern equally likely (a
//                       deterministic stream from the case seed; no dependency on the GenMask operators)
//   <attribute>:        the double argument ("scale" or "prob"): a number or "nan", "inf", "-inf", "-0"
//   "expect_status":    the status GetWorkspaceSize must return (default 0: success, then compare)
// Bench cases: contiguous input, output and mask; bytes = n * (input + output element size) + n / 8; the peer is
// a current PyTorch's native_dropout_backward(grad, bool_mask, scale) on the same data
// (tools/peers/dropout_v3_grad.py).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aclnn/aclnn_base.h"
#include "harness/suite.h"

namespace gradkit::cli {

/** What distinguishes one mask-applying op. */
struct MaskedDropoutOp {
  std::string name;          // the suite name: "dropout_v3_grad"
  std::string inputKey;      // "gradY"
  std::string outputKey;     // "gradX"
  std::string attributeKey;  // "scale"
  double attributeDefault = 0.0;
  /** aclnnXxxGetWorkspaceSize. */
  std::function<aclnnStatus(const aclTensor* input, const aclTensor* mask, double attribute, aclTensor* out,
                            uint64_t* workspaceSize, aclOpExecutor** executor)>
      plan;
  /** aclnnXxx. */
  std::function<aclnnStatus(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)> run;
  /** The golden on dense buffers (input of n elements, packed mask, output of n elements). */
  std::function<void(aclDataType inputDtype, aclDataType outputDtype, const void* input, const uint8_t* mask,
                     double attribute, void* out, int64_t n)>
      golden;
  /** The scale PyTorch's native_dropout_backward needs for the same result (the peer). */
  std::function<double(double attribute)> peerScale;
};

class MaskedDropoutSuite : public Suite {
 public:
  explicit MaskedDropoutSuite(MaskedDropoutOp op) : op_(std::move(op)) {}
  std::string name() const override { return op_.name; }
  std::vector<VerifyRow> verify(const nlohmann::json& testCase, const VerifyContext& context) const override;
  BenchRow bench(const nlohmann::json& benchCase, const BenchContext& context) const override;

 private:
  MaskedDropoutOp op_;
};

}  // namespace gradkit::cli
