// The LightningIndexerV2 suite: cases/lightning_indexer_v2.json through aclnnLightningIndexerV2 (with a metadata
// tensor of 1024 INT32 on Ascend950, whose contents the op does not read), judged against golden/lightning_indexer_v2's
// fp64 scores and selection (judgeLiV2: exact counts and placeholders, the selected set up to swaps within fp32
// rounding of the K-th score, sorted rows, values by the double benchmark against the naive fp32 scores). The bench
// prints the roofline ratio: FLOPs 2 * 128 * N1 per visible (row, key) pair on the GEMM peak of q's dtype (the dot
// products; the head sums and the selection are not counted), and the PyTorch reference's time (BSND rows; einsum,
// relu, weights, masked top-k in q's dtype). Case keys: suites/lightning_indexer_v2_suite.h.
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "harness/op_suite.h"
#include "suites/lightning_indexer_v2_suite.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"q",          "k",
                                          "w",          "cuSeqlensQ",
                                          "cuSeqlensK", "sequsedQ",
                                          "sequsedK",   "cmpResidualK",
                                          "blockTable", "outputIdxOffset",
                                          "metadata"};

double visiblePairs(const LiV2Case& lc) {
  const golden::LightningIndexerV2Problem p = lc.problem();
  double pairs = 0.0;
  for (const golden::LightningIndexerV2Batch& b : p.batches) {
    for (int64_t i = 0; i < b.usedRows; ++i) pairs += static_cast<double>(golden::lightningIndexerV2Visible(p, b, i));
  }
  return pairs;
}

OpDescriptor lightningIndexerV2() {
  OpDescriptor d;
  d.name = "lightning_indexer_v2";
  d.api = "aclnnLightningIndexerV2";
  d.needsShape = false;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, liv2Defaults(key)));
  d.tensors.push_back(outputRule("sparseIndices", liv2Defaults("sparseIndices")));
  d.tensors.push_back(outputRule("sparseValues", liv2Defaults("sparseValues")));
  d.bind = [](OpCase& c) {
    const LiV2Case lc = parseLiV2Case(c.json(), c.info().seed);
    writeLiV2Ints(c, lc);
    const auto golden = std::make_shared<LiV2Golden>();
    OpCall call;
    call.plan = [&c, lc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      std::string layoutQ = lc.layoutQText, layoutK = lc.layoutKText;
      return aclnnLightningIndexerV2GetWorkspaceSize(
          c.acl("q"), c.acl("k"), c.acl("w"), liv2Optional(c, "cuSeqlensQ", lc.passCuQ),
          liv2Optional(c, "cuSeqlensK", lc.passCuK), liv2Optional(c, "sequsedQ", lc.passSequsedQ),
          liv2Optional(c, "sequsedK", lc.passSequsedK), liv2Optional(c, "cmpResidualK", lc.passResidual),
          liv2Optional(c, "blockTable", lc.passTable), liv2Optional(c, "outputIdxOffset", lc.passOffsets),
          liv2Optional(c, "metadata", lc.passMetadata), lc.topk, lc.maxSeqlenQ, layoutQ.data(), layoutK.data(),
          lc.maskMode, lc.cmpRatio, lc.returnValue, c.acl("sparseIndices"), c.acl("sparseValues"), workspaceSize,
          executor);
    };
    call.golden = [&c, lc, golden] { runLiV2Golden(c, lc, *golden); };
    call.judge = [&c, lc, golden](VerifyRow& row) { judgeLiV2(c, lc, *golden, row); };
    call.work = [&c, lc] {
      double bytes = 0.0;
      for (const char* key : {"q", "k", "w", "sparseIndices"}) bytes += static_cast<double>(c.bytes(key));
      if (lc.returnValue == 1) bytes += static_cast<double>(c.bytes("sparseValues"));
      const double flops = 2.0 * 128.0 * static_cast<double>(lc.heads) * visiblePairs(lc);
      return Work{bytes, flops, c.spec("q").dtype == ACL_BF16};
    };
    if (lc.layoutQ == "BSND" && lc.layoutK == "BSND" && !lc.passSequsedQ && !lc.passSequsedK) {
      OpCall::Peer peer;
      peer.script = "lightning_indexer_v2.py";
      peer.files = {{"q", "q"}, {"k", "k"}, {"w", "w"}};
      const int64_t residual = lc.passResidual && !lc.residual.empty() ? lc.residual[0] : 0;
      peer.args = {"--dtype",     c.info().dtypeText,          "--topk",      std::to_string(lc.topk),
                   "--mask-mode", std::to_string(lc.maskMode), "--cmp-ratio", std::to_string(lc.cmpRatio),
                   "--residual",  std::to_string(residual)};
      peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
      call.peer = peer;
    }
    return call;
  };
  d.run = aclnnLightningIndexerV2;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(lightningIndexerV2)
}  // namespace gradkit::cli
