// The DropoutV3Grad suite: cases/dropout_v3_grad.json through aclnnDropoutV3Grad, compared bit for bit with
// golden/dropout_v3_grad (keys: suites/masked_dropout_suite.h; input "gradY", output "gradX", attribute "scale").
#include "golden/dropout_v3_grad.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "suites/masked_dropout_suite.h"

namespace gradkit::cli {
namespace {

MaskedDropoutOp dropoutV3GradOp() {
  MaskedDropoutOp op;
  op.name = "dropout_v3_grad";
  op.inputKey = "gradY";
  op.outputKey = "gradX";
  op.attributeKey = "scale";
  op.attributeDefault = 1.0 / (1.0 - 0.1);
  op.plan = aclnnDropoutV3GradGetWorkspaceSize;
  op.run = aclnnDropoutV3Grad;
  op.golden = golden::dropoutV3Grad;
  op.peerScale = [](double scale) { return scale; };
  return op;
}

class DropoutV3GradSuite : public MaskedDropoutSuite {
 public:
  DropoutV3GradSuite() : MaskedDropoutSuite(dropoutV3GradOp()) {}
};

}  // namespace
GRADKIT_REGISTER_SUITE(DropoutV3GradSuite)
}  // namespace gradkit::cli
