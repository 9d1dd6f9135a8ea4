// The BlockAttentionResiduals suite: cases/block_attention_residuals.json through aclnnBlockAttentionResiduals,
// judged by the double benchmark (level L2, as the other mHC suites: DECISIONS.md "Precision gates") against
// golden/block_attention_residuals in fp64, the naive computation being the same formulas in plain fp32 (sequential
// sums). Compared: hiddenStates and, with needBackward, invNorm and probs (FLOAT [T, N + 1]); without it those two
// must keep their bytes (or are nullptr with "caches" false). T = 0 computes nothing (success, outputs untouched).
// The bench prints the copy-bandwidth roofline ratio (the op is memory-bound; bytes: partialBlock, blockRes, the two
// weights and hiddenStates, plus invNorm and probs with needBackward, each once; FLOPs 6 T (N + 1) H: the squares,
// the scores and the weighted sum) and PyTorch's time for the same formulas in fp32 on the case's dtype
// (tools/peers/block_attention_residuals.py; autograd recording its graph when needBackward).
//
// Case keys: suites/block_attention_residuals_suite.h ("T", "N", "H", "validBlockNum", "normEps", "needBackward",
// "caches", "projShape", "soc", tensor specs).
#include <string>
#include <vector>

#include "aclnnop/aclnn_block_attention_residuals.h"
#include "golden/block_attention_residuals.h"
#include "harness/case_values.h"
#include "harness/op_suite.h"
#include "suites/block_attention_residuals_suite.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"partialBlock", "blockRes", "projWeight", "normWeight"};
const std::vector<std::string> kOutputs = {"hiddenStates", "invNorm", "probs"};

template <class Real>
void runGolden(OpCase& c, const BlockResidualsCase& b) {
  const golden::BlockResidualOutputs<Real> out = blockResidualsForward<Real>(c, b);
  storeGolden(c, "hiddenStates", out.hidden);
  if (!b.needBackward) return;  // invNorm and probs keep their bytes
  storeGolden(c, "invNorm", out.invNorm);
  storeGolden(c, "probs", out.probs);
}

OpDescriptor blockAttentionResiduals() {
  OpDescriptor d;
  d.name = "block_attention_residuals";
  d.api = "aclnnBlockAttentionResiduals";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, blockResidualsDefaults(key, false)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, blockResidualsDefaults(key, false)));
  d.bind = [](OpCase& c) {
    const BlockResidualsCase b = parseBlockResidualsCase(c.json(), false);
    OpCall call;
    call.plan = [&c, b](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnBlockAttentionResidualsGetWorkspaceSize(
          c.acl("partialBlock"), c.acl("blockRes"), c.acl("projWeight"), c.acl("normWeight"), b.validBlockNum,
          b.normEps, b.needBackward, c.acl("hiddenStates"), b.caches ? c.acl("invNorm") : nullptr,
          b.caches ? c.acl("probs") : nullptr, workspaceSize, executor);
    };
    call.golden = [&c, b] { runGolden<double>(c, b); };
    call.naive = [&c, b] { runGolden<float>(c, b); };
    call.computesNothing = b.tokens == 0;  // upstream accepts an empty call
    call.work = [&c, b] {
      std::vector<std::string> keys = kInputs;
      keys.push_back("hiddenStates");
      if (b.needBackward) keys.insert(keys.end(), {"invNorm", "probs"});
      const double flops =
          6.0 * static_cast<double>(b.tokens) * static_cast<double>(b.values()) * static_cast<double>(b.hidden);
      return Work{blockResidualsBytes(c, keys), flops, false};
    };
    call.peer = blockResidualsPeer(b, c.info().dtypeText, false);
    return call;
  };
  d.run = aclnnBlockAttentionResiduals;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(blockAttentionResiduals)
}  // namespace gradkit::cli
