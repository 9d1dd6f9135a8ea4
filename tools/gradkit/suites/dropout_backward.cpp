// The DropoutBackward suite: cases/dropout_backward.json through aclnnDropoutBackward, compared bit for bit with
// the legacy golden (golden/dropout_do_mask with p = 1 - 1/scale) (keys: suites/masked_dropout_suite.h; input
// "gradOutput", output "out", attribute "scale").
#include "aclnnop/aclnn_dropout_backward.h"
#include "golden/dropout_do_mask.h"
#include "suites/masked_dropout_suite.h"

namespace gradkit::cli {
namespace {

OpDescriptor dropoutBackwardOp() {
  MaskedDropoutOp op;
  op.name = "dropout_backward";
  op.api = "aclnnDropoutBackward";
  op.inputKey = "gradOutput";
  op.outputKey = "out";
  op.attributeKey = "scale";
  op.attributeDefault = 1.0 / (1.0 - 0.1);
  op.plan = aclnnDropoutBackwardGetWorkspaceSize;
  op.run = aclnnDropoutBackward;
  op.golden = [](aclDataType inputDtype, aclDataType outputDtype, const void* input, const uint8_t* mask, double scale,
                 void* out, int64_t n) {
    golden::dropoutDoMask(inputDtype, outputDtype, input, mask, golden::dropoutBackwardProb(scale), out, n);
  };
  op.peerScale = [](double scale) { return scale; };
  return maskedDropoutDescriptor(op);
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(dropoutBackwardOp)
}  // namespace gradkit::cli
