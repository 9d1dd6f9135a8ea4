// The BlockAttentionResidualsGrad suite: cases/block_attention_residuals_grad.json through
// aclnnBlockAttentionResidualsGrad, judged by the double benchmark (level L2, as the other mHC suites) against
// golden/block_attention_residuals' gradient in fp64, the naive computation being the same formulas in plain fp32.
// invNorm and probs hold what a forward saves: the fp64 golden forward of the case's partialBlock, blockRes,
// projWeight, normWeight (and "normEps") rounded to fp32, written before the run; the golden and the naive computation
// read those same fp32 values. All four gradients are compared (gradProjWeight [1, H], gradNormWeight [H]); T = 0
// must zero-fill the weight gradients. The bench prints the copy-bandwidth roofline ratio (bytes: the five inputs,
// invNorm, probs and the four outputs, each once; FLOPs 10 T (N + 1) H: two dot products, the gradient of each value,
// the weight sums) and PyTorch's time for the forward + autograd backward of the same formulas in fp32 on the case's
// dtype (tools/peers/block_attention_residuals.py --mode backward).
//
// Case keys: suites/block_attention_residuals_suite.h ("T", "N" (0 allowed), "H", "validBlockNum", "normEps" (of the
// saved forward), "soc", tensor specs).
#include <string>
#include <vector>

#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "golden/block_attention_residuals.h"
#include "harness/case_values.h"
#include "harness/op_suite.h"
#include "suites/block_attention_residuals_suite.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"partialBlock", "blockRes", "projWeight", "normWeight", "gradHiddenStates"};
const std::vector<std::string> kSaved = {"invNorm", "probs"};
const std::vector<std::string> kOutputs = {"gradPartialBlock", "gradBlockRes", "gradProjWeight", "gradNormWeight"};

/** True when every input has the view the case describes (a rejection case may give another; then nothing runs). */
bool describedShapes(OpCase& c, const BlockResidualsCase& b) {
  const int64_t t = b.tokens, n = b.blocks, h = b.hidden;
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"partialBlock", {t, h}}, {"blockRes", {t, n, h}}, {"projWeight", {1, h}},      {"normWeight", {h}},
      {"invNorm", {t, n + 1}},  {"probs", {t, n + 1}},   {"gradHiddenStates", {t, h}}};
  for (const auto& [key, shape] : expected) {
    if (c.spec(key).shape != shape) return false;
  }
  return c.spec("invNorm").dtype == ACL_FLOAT && c.spec("probs").dtype == ACL_FLOAT;
}

/** invNorm and probs as a forward of the case's inputs saves them (fp64, rounded to fp32 by writeView). */
void writeForwardCaches(OpCase& c, const BlockResidualsCase& b) {
  if (!describedShapes(c, b)) return;
  const golden::BlockResidualOutputs<double> forward = blockResidualsForward<double>(c, b);
  writeView(c, "invNorm", forward.invNorm);
  writeView(c, "probs", forward.probs);
}

template <class Real>
void runGolden(OpCase& c, const BlockResidualsCase& b) {
  std::vector<std::string> keys = kInputs;
  keys.insert(keys.end(), kSaved.begin(), kSaved.end());
  const CaseInputs<Real> input(c, keys);
  const golden::BlockResidualGradients<Real> grads = golden::blockAttentionResidualsGrad(
      b.sizes(), input("partialBlock"), input("blockRes"), input("projWeight"), input("normWeight"),
      input("gradHiddenStates"), input("invNorm"), input("probs"));
  storeGolden(c, "gradPartialBlock", grads.partialBlock);
  storeGolden(c, "gradBlockRes", grads.blockRes);
  storeGolden(c, "gradProjWeight", grads.projWeight);
  storeGolden(c, "gradNormWeight", grads.normWeight);
}

OpDescriptor blockAttentionResidualsGrad() {
  OpDescriptor d;
  d.name = "block_attention_residuals_grad";
  d.api = "aclnnBlockAttentionResidualsGrad";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, blockResidualsDefaults(key, true)));
  for (const std::string& key : kSaved) d.tensors.push_back(inputRule(key, blockResidualsDefaults(key, true)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, blockResidualsDefaults(key, true)));
  d.bind = [](OpCase& c) {
    const BlockResidualsCase b = parseBlockResidualsCase(c.json(), true);
    writeForwardCaches(c, b);
    OpCall call;
    call.plan = [&c, b](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnBlockAttentionResidualsGradGetWorkspaceSize(
          c.acl("partialBlock"), c.acl("blockRes"), c.acl("projWeight"), c.acl("normWeight"), c.acl("gradHiddenStates"),
          c.acl("invNorm"), c.acl("probs"), b.validBlockNum, c.acl("gradPartialBlock"), c.acl("gradBlockRes"),
          c.acl("gradProjWeight"), c.acl("gradNormWeight"), workspaceSize, executor);
    };
    call.golden = [&c, b] { runGolden<double>(c, b); };
    call.naive = [&c, b] { runGolden<float>(c, b); };
    call.work = [&c, b] {
      std::vector<std::string> keys = kInputs;
      keys.insert(keys.end(), kSaved.begin(), kSaved.end());
      keys.insert(keys.end(), kOutputs.begin(), kOutputs.end());
      const double flops =
          10.0 * static_cast<double>(b.tokens) * static_cast<double>(b.values()) * static_cast<double>(b.hidden);
      return Work{blockResidualsBytes(c, keys), flops, false};
    };
    call.peer = blockResidualsPeer(b, c.info().dtypeText, true);
    return call;
  };
  d.run = aclnnBlockAttentionResidualsGrad;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(blockAttentionResidualsGrad)
}  // namespace gradkit::cli
