// What the BlockAttentionResiduals and BlockAttentionResidualsGrad suites share: the case keys, the tensors' default
// shapes and values, the fp64 golden forward (the grad's invNorm and probs), the bench's work and the PyTorch peer.
//
// Case keys (besides name, dtype "bf16" | "fp16" | "fp32"):
//   "T", "N", "H":    tokens, blocks (blockRes dim 1; the values per token are N + 1) and hidden size
//                     (defaults 8, 4, 64; T may be 0, N may be 0 for the grad's rows, H must be >= 1)
//   "validBlockNum":  the attribute (default -1)
//   "normEps":        the forward's attribute (default 1e-6); the grad's invNorm and probs are computed with it
//   "needBackward":   forward: true (default) | false (invNorm and probs then must keep their bytes)
//   "caches":         forward: true (default) | false (invNorm, probs = nullptr; needs "needBackward" false)
//   "projShape":      forward: "[H]" (default) or "[1,H]"; the grad's projWeight is always [1, H]
//   "soc":            the profile the case runs under (default: the process's; both ops exist in every profile)
// and a tensor spec per tensor key (the API's argument names: "partialBlock", "blockRes", "projWeight", "normWeight",
// "hiddenStates", "invNorm", "probs", "gradHiddenStates", "gradPartialBlock", "gradBlockRes", "gradProjWeight",
// "gradNormWeight"), e.g. "blockRes": {"permute": [1, 0, 2]}, to override a view or values.
//
// Default values: partialBlock and blockRes uniform in [-2, 2], normWeight in [0.5, 1.5], projWeight in
// [-1/sqrt(H), 1/sqrt(H)] (so that the scores are of order one and the softmax is neither flat nor one-hot),
// gradHiddenStates in [-1, 1].
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/block_attention_residuals.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** The sizes and attributes of one case. */
struct BlockResidualsCase {
  int64_t tokens = 8, blocks = 4, hidden = 64;  // T, N, H
  int64_t validBlockNum = -1;
  double normEps = 1e-6;
  bool needBackward = true, caches = true;
  bool projRow = false;  // projWeight [1, H] (the grad's always)
  int64_t values() const { return blocks + 1; }
  golden::BlockResidualSizes sizes() const { return {tokens, blocks, hidden}; }
};

/** Parses the keys above; throws HarnessError naming a bad key. `grad`: the grad's rows (projWeight [1, H]). */
BlockResidualsCase parseBlockResidualsCase(const nlohmann::json& testCase, bool grad);

/** Default view and values of the tensor `key` (`grad`: of the grad's suite). */
std::function<TensorDefaults(const CaseInfo&)> blockResidualsDefaults(const std::string& key, bool grad);

/** golden::blockAttentionResiduals of the case's inputs as `Real` (eps: the fp32 of normEps, as the kernels). */
template <class Real>
golden::BlockResidualOutputs<Real> blockResidualsForward(OpCase& c, const BlockResidualsCase& b);

/** Bytes of the named tensors, each once. */
double blockResidualsBytes(OpCase& c, const std::vector<std::string>& keys);

/** tools/peers/block_attention_residuals.py on the case's inputs; `grad`: forward + autograd backward. */
OpCall::Peer blockResidualsPeer(const BlockResidualsCase& b, const std::string& dtypeText, bool grad);

}  // namespace gradkit::cli
