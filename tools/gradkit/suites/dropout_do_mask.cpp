// The DropoutDoMask suite: cases/dropout_do_mask.json through aclnnDropoutDoMask, compared bit for bit with the
// legacy golden/dropout_do_mask (keys: suites/masked_dropout_suite.h; input "self", output "out", attribute "prob").
// The bench peer is PyTorch's native_dropout_backward with scale 1 / (1 - prob).
#include "golden/dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "suites/masked_dropout_suite.h"

namespace gradkit::cli {
namespace {

OpDescriptor dropoutDoMaskOp() {
  MaskedDropoutOp op;
  op.name = "dropout_do_mask";
  op.api = "aclnnDropoutDoMask";
  op.inputKey = "self";
  op.outputKey = "out";
  op.attributeKey = "prob";
  op.attributeDefault = 0.1;
  op.plan = aclnnDropoutDoMaskGetWorkspaceSize;
  op.run = aclnnDropoutDoMask;
  op.golden = golden::dropoutDoMask;
  op.peerScale = [](double prob) { return prob == 1.0 ? 0.0 : 1.0 / (1.0 - prob); };
  return maskedDropoutDescriptor(op);
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(dropoutDoMaskOp)
}  // namespace gradkit::cli
