// The common descriptor of the ops that apply a packed dropout mask to one input (aclnnDropoutV3Grad,
// aclnnDropoutDoMask, aclnnDropoutBackward): each op file names its entry points, keys and golden. Gate: bit-exact
// with the op's golden (DECISIONS.md).
//
// Case keys (besides the generic ones of harness/op_suite.h):
//   <input>, <output>:  tensor specs ("gradY"/"gradX", "self"/"out", "gradOutput"/"out")
//   "mask":             tensor spec, default UINT8 [ceil(n/128)*16] with every byte pattern equally likely (a
//                       deterministic stream from the case seed; no dependency on the GenMask operators)
//   <attribute>:        the double argument ("scale" or "prob"): a number or "nan", "inf", "-inf", "-0"
// An empty input or an empty mask (DoMask's upstream quirk) computes nothing: the output must stay untouched.
// Bench cases: bytes = n * (input + output element size) + n / 8; the peer is a current PyTorch's
// native_dropout_backward(grad, bool_mask, scale) on the same data (tools/peers/dropout_v3_grad.py).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "harness/op_suite.h"

namespace gradkit::cli {

/** What distinguishes one mask-applying op. */
struct MaskedDropoutOp {
  std::string name, api;     // "dropout_v3_grad", "aclnnDropoutV3Grad"
  std::string inputKey;      // "gradY"
  std::string outputKey;     // "gradX"
  std::string attributeKey;  // "scale"
  double attributeDefault = 0.0;
  /** aclnnXxxGetWorkspaceSize. */
  std::function<aclnnStatus(const aclTensor* input, const aclTensor* mask, double attribute, aclTensor* out,
                            uint64_t* workspaceSize, aclOpExecutor** executor)>
      plan;
  RunCall run;  // aclnnXxx
  /** The golden on dense buffers (input of n elements, packed mask, output of n elements). */
  std::function<void(aclDataType inputDtype, aclDataType outputDtype, const void* input, const uint8_t* mask,
                     double attribute, void* out, int64_t n)>
      golden;
  /** The scale PyTorch's native_dropout_backward needs for the same result (the peer). */
  std::function<double(double attribute)> peerScale;
};

/** The op's suite descriptor. */
OpDescriptor maskedDropoutDescriptor(MaskedDropoutOp op);

}  // namespace gradkit::cli
