// The DropoutV3Grad suite: cases/dropout_v3_grad.json through aclnnDropoutV3Grad, compared bit for bit with
// golden/dropout_v3_grad (keys: suites/masked_dropout_suite.h; input "gradY", output "gradX", attribute "scale").
#include "golden/dropout_v3_grad.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "suites/masked_dropout_suite.h"

namespace gradkit::cli {
namespace {

OpDescriptor dropoutV3GradOp() {
  MaskedDropoutOp op;
  op.name = "dropout_v3_grad";
  op.api = "aclnnDropoutV3Grad";
  op.inputKey = "gradY";
  op.outputKey = "gradX";
  op.attributeKey = "scale";
  op.attributeDefault = 1.0 / (1.0 - 0.1);
  op.plan = aclnnDropoutV3GradGetWorkspaceSize;
  op.run = aclnnDropoutV3Grad;
  op.golden = golden::dropoutV3Grad;
  op.peerScale = [](double scale) { return scale; };
  return maskedDropoutDescriptor(op);
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(dropoutV3GradOp)
}  // namespace gradkit::cli
