// The SparseLightningIndexerKLLossGrad suite: cases/sparse_lightning_indexer_kl_loss_grad.json through
// aclnnSparseLightningIndexerKLLossGrad, judged by the double benchmark (DECISIONS.md: matmul ops, level L2) against
// golden/sparse_lightning_indexer_kl_loss_grad in fp64 for dq, dk, dw and softmaxOut; the naive computation is the
// same formulas in plain fp32 with dS rounded to the io dtype (as upstream's pytest golden). sparseIndices are what
// LightningIndexerV2 would hand over for some scores: per row a random order of its visible keys in the first
// min(K, c_t) slots, -1 after ("junk": every fifth valid slot -1 or c_t, and p 0.5 in the slots past the count); p
// (attnSoftmaxL1Norm) is positive, normalised over the valid slots and scaled by "p_scale" (upstream's pytest uses
// 0.37-0.55). The metadata tensor is INT32 [64] zeros (its content is ignored). The bench prints the roofline ratio
// (FLOPs: 6 N1 128 per valid slot for the three products, bytes: every tensor once) and PyTorch's autograd of the
// same loss in the io dtype (tools/peers/sparse_lightning_indexer_kl_loss_grad.py).
//
// Case keys (besides name, dtype "bf16" | "fp16", seed, expect_status, expect_message, soc):
//   "layout":   "TND" (default) or "BSND"
//   "q_lens", "kv_lens": TND per-batch rows and compressed keys (default [16], [4]); "extra_q_rows", "extra_kv_rows":
//               TND rows past cu_seqlens[B] (default 0)
//   "B", "S1", "S2": BSND sizes (default 2, 16, 8)
//   "N1", "K":  heads (default 8) and top-k (default 64); "mask_mode" (3), "cmp_ratio" (1)
//   "residual", "seqused_q", "seqused_k": per-batch lists (absent: nullptr)
//   "p_scale":  (default 1); "junk": (default false); "pass_metadata": (default true)
//   tensor specs: "q", "k", "w", "sparseIndices", "attnSoftmaxL1Norm", "cuSeqLensQ", "cuSeqLensK", "seqUsedQ",
//   "seqUsedK", "cmpResidualK", "metadata", "dq", "dk", "dw", "softmaxOut". Default values: q, k uniform in [-1, 1],
//   w in [0, 0.1] (logits of order one at N1 64).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "golden/sparse_lightning_indexer_kl_loss_grad.h"
#include "gradkit/float_convert.h"
#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/op_suite.h"
#include "harness/peer.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"q", "k", "w", "sparseIndices", "attnSoftmaxL1Norm"};
const std::vector<std::string> kOptionals = {"cuSeqLensQ", "cuSeqLensK",   "seqUsedQ",
                                             "seqUsedK",   "cmpResidualK", "metadata"};
const std::vector<std::string> kOutputs = {"dq", "dk", "dw", "softmaxOut"};

std::vector<int64_t> intList(const nlohmann::json& j, const char* key, std::vector<int64_t> fallback) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_array()) throw HarnessError(std::string("'") + key + "' must be a list of integers");
  return j.at(key).get<std::vector<int64_t>>();
}

struct KlCase {
  bool tnd = true;
  std::vector<int64_t> qLens, kLens;  // TND lengths; BSND: B entries of S1 / S2
  int64_t extraQ = 0, extraK = 0, b = 0, s1 = 0, s2 = 0;
  int64_t heads = 8, topk = 64, maskMode = 3, cmpRatio = 1;
  std::vector<int64_t> residual, usedQ, usedK;
  double pScale = 1.0;
  bool junk = false, passMetadata = true;

  int64_t queryRows() const { return tnd ? std::accumulate(qLens.begin(), qLens.end(), int64_t{0}) + extraQ : b * s1; }
  int64_t keyRows() const { return tnd ? std::accumulate(kLens.begin(), kLens.end(), int64_t{0}) + extraK : b * s2; }
  std::vector<int64_t> lead(bool query) const {
    return tnd ? std::vector<int64_t>{query ? queryRows() : keyRows()} : std::vector<int64_t>{b, query ? s1 : s2};
  }
  std::vector<int64_t> cu(bool query) const {
    std::vector<int64_t> out = {0};
    for (int64_t len : query ? qLens : kLens) out.push_back(out.back() + len);
    return out;
  }
  golden::KlProblem problem() const {
    golden::KlProblem p;
    p.heads = heads, p.topk = topk, p.qTotal = queryRows(), p.kTotal = keyRows();
    p.maskMode = maskMode, p.cmpRatio = cmpRatio;
    const std::vector<int64_t> cq = cu(true), ck = cu(false);
    for (int64_t i = 0; i < b; ++i) {
      const size_t at = static_cast<size_t>(i);
      golden::KlBatch batch;
      batch.qRow0 = tnd ? cq[at] : i * s1;
      batch.kRow0 = tnd ? ck[at] : i * s2;
      batch.qRows = usedQ.empty() ? (tnd ? qLens[at] : s1) : usedQ[at];
      batch.kRows = usedK.empty() ? (tnd ? kLens[at] : s2) : usedK[at];
      batch.residual = residual.empty() ? 0 : residual[at];
      p.batches.push_back(batch);
    }
    return p;
  }
};

KlCase parseCase(const nlohmann::json& j) {
  KlCase c;
  c.tnd = stringKeyOneOf(j, "layout", "TND", {"TND", "BSND"}, " must be \"TND\" or \"BSND\"") == "TND";
  if (c.tnd) {
    c.qLens = intList(j, "q_lens", {16});
    c.kLens = intList(j, "kv_lens", {4});
    if (c.qLens.size() != c.kLens.size()) throw HarnessError("'q_lens' and 'kv_lens' must have one entry per batch");
    c.b = static_cast<int64_t>(c.qLens.size());
    c.extraQ = integerKeyAtLeast(j, "extra_q_rows", 0, 0);
    c.extraK = integerKeyAtLeast(j, "extra_kv_rows", 0, 0);
  } else {
    c.b = integerKeyAtLeast(j, "B", 2, 0);
    c.s1 = integerKeyAtLeast(j, "S1", 16, 0);
    c.s2 = integerKeyAtLeast(j, "S2", 8, 0);
  }
  c.heads = integerKeyAtLeast(j, "N1", 8, 0);
  c.topk = integerKeyAtLeast(j, "K", 64, 0);
  c.maskMode = j.value("mask_mode", int64_t{3});
  c.cmpRatio = j.value("cmp_ratio", int64_t{1});
  c.residual = intList(j, "residual", {});
  c.usedQ = intList(j, "seqused_q", {});
  c.usedK = intList(j, "seqused_k", {});
  c.pScale = j.value("p_scale", 1.0);
  c.junk = j.value("junk", false);
  c.passMetadata = j.value("pass_metadata", true);
  return c;
}

std::function<TensorDefaults(const CaseInfo&)> defaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const KlCase c = parseCase(info.json);
    TensorDefaults d{info.dtype, {}, info.seed, uniformValues(-1.0, 1.0)};
    const auto with = [](std::vector<int64_t> v, std::initializer_list<int64_t> tail) {
      v.insert(v.end(), tail);
      return v;
    };
    if (key == "q" || key == "dq") {
      d.shape = with(c.lead(true), {c.heads, 128});
    } else if (key == "k" || key == "dk") {
      d.shape = with(c.lead(false), {1, 128});
    } else if (key == "w" || key == "dw") {
      d.dtype = ACL_FLOAT, d.shape = with(c.lead(true), {c.heads}), d.values = uniformValues(0.0, 0.1);
    } else if (key == "sparseIndices" || key == "attnSoftmaxL1Norm" || key == "softmaxOut") {
      d.dtype = key == "sparseIndices" ? ACL_INT32 : ACL_FLOAT, d.shape = with(c.lead(true), {1, c.topk});
      d.values = uniformValues(0.0, 0.0);
    } else {
      d.dtype = ACL_INT32, d.values = uniformValues(0.0, 0.0);
      if (key == "cuSeqLensQ" || key == "cuSeqLensK") d.shape = {c.tnd ? c.b + 1 : 0};
      if (key == "seqUsedQ") d.shape = {static_cast<int64_t>(c.usedQ.size())};
      if (key == "seqUsedK") d.shape = {static_cast<int64_t>(c.usedK.size())};
      if (key == "cmpResidualK") d.shape = {static_cast<int64_t>(c.residual.size())};
      if (key == "metadata") d.shape = {64};
      if (d.shape.empty()) throw HarnessError("sparse lightning indexer suite: no defaults for tensor '" + key + "'");
    }
    return d;
  };
}

/** The selection and the target of every used row (seeded by the case), into sparseIndices and attnSoftmaxL1Norm. */
void writeSelection(OpCase& c, const KlCase& kc) {
  const golden::KlProblem p = kc.problem();
  const int64_t k = kc.topk;
  std::vector<double> idx(static_cast<size_t>(p.qTotal * k), -1.0), target(idx.size(), 0.0);
  SplitMix64 random(c.info().seed ^ 0x6b6c2d73656c6563ull);
  for (const golden::KlBatch& b : p.batches) {
    for (int64_t i = 0; i < b.qRows; ++i) {
      const int64_t visible = golden::klVisibleKeys(p, b, i), n = std::min(k, visible), t = b.qRow0 + i;
      std::vector<int64_t> order(static_cast<size_t>(visible));
      std::iota(order.begin(), order.end(), int64_t{0});
      for (int64_t j = 0; j < n; ++j) {  // a partial Fisher-Yates shuffle: the first n of a random order
        const int64_t pick = j + static_cast<int64_t>(random.next() % static_cast<uint64_t>(visible - j));
        std::swap(order[static_cast<size_t>(j)], order[static_cast<size_t>(pick)]);
      }
      double mass = 0;
      for (int64_t j = 0; j < n; ++j) {
        const size_t at = static_cast<size_t>(t * k + j);
        idx[at] = static_cast<double>(order[static_cast<size_t>(j)]);
        if (kc.junk && j % 5 == 3) idx[at] = j % 2 == 0 ? -1.0 : static_cast<double>(visible);
        mass += target[at] = random.uniform() + 0.01;
      }
      for (int64_t j = 0; j < n; ++j) target[static_cast<size_t>(t * k + j)] *= kc.pScale / mass;
      if (kc.junk) {
        for (int64_t j = n; j < k; ++j) target[static_cast<size_t>(t * k + j)] = 0.5;
      }
    }
  }
  writeView(c, "sparseIndices", idx);
  writeView(c, "attnSoftmaxL1Norm", target);
}

float roundBf16(float x) { return bf16ToFloat(floatToBf16(x)); }
float roundHalf(float x) { return halfToFloat(floatToHalf(x)); }

template <class Real>
void runGolden(OpCase& c, const KlCase& kc) {
  const CaseInputs<Real> in(c, {"q", "k", "w", "attnSoftmaxL1Norm"});
  const std::vector<double> idxValues = denseValues(c, "sparseIndices");
  const std::vector<int32_t> idx(idxValues.begin(), idxValues.end());
  Real (*round)(Real) = nullptr;
  if constexpr (std::is_same_v<Real, float>) round = c.spec("q").dtype == ACL_BF16 ? roundBf16 : roundHalf;
  const golden::KlGradients<Real> g =
      golden::klLossGrad(kc.problem(), in("q"), in("k"), in("w"), idx.data(), in("attnSoftmaxL1Norm"), round);
  storeGolden(c, "dq", g.dq);
  storeGolden(c, "dk", g.dk);
  storeGolden(c, "dw", g.dw);
  storeGolden(c, "softmaxOut", g.softmaxOut);
}

/** Valid slots of every row: the products' FLOPs are 6 N1 128 per valid slot (plus 4 N1 for I and dw). */
double validSlots(OpCase& c, const KlCase& kc) {
  const golden::KlProblem p = kc.problem();
  const std::vector<double> idx = denseValues(c, "sparseIndices");
  double slots = 0;
  for (const golden::KlBatch& b : p.batches) {
    for (int64_t i = 0; i < b.qRows; ++i) {
      for (int64_t j = 0; j < kc.topk; ++j) {
        const double v = idx[static_cast<size_t>((b.qRow0 + i) * kc.topk + j)];
        slots += golden::klSlotValid(p, b, i, j, static_cast<int32_t>(v)) ? 1 : 0;
      }
    }
  }
  return slots;
}

aclTensor* optional(OpCase& c, const std::string& key, bool passed) { return passed ? c.acl(key) : nullptr; }

OpDescriptor klLossGrad() {
  OpDescriptor d;
  d.name = "sparse_lightning_indexer_kl_loss_grad";
  d.api = "aclnnSparseLightningIndexerKLLossGrad";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, defaults(key)));
  for (const std::string& key : kOptionals) d.tensors.push_back(inputRule(key, defaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, defaults(key)));
  d.bind = [](OpCase& c) {
    const KlCase kc = parseCase(c.json());
    if (kc.tnd) {
      writeInts(c, "cuSeqLensQ", kc.cu(true));
      writeInts(c, "cuSeqLensK", kc.cu(false));
    }
    writeInts(c, "seqUsedQ", kc.usedQ);
    writeInts(c, "seqUsedK", kc.usedK);
    writeInts(c, "cmpResidualK", kc.residual);
    if (c.json().value("expect_status", 0) == 0) writeSelection(c, kc);
    OpCall call;
    call.plan = [&c, kc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      std::string layout = kc.tnd ? "TND" : "BSND";
      return aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
          c.acl("q"), c.acl("k"), c.acl("w"), c.acl("sparseIndices"), c.acl("attnSoftmaxL1Norm"),
          optional(c, "cuSeqLensQ", kc.tnd), optional(c, "cuSeqLensK", kc.tnd),
          optional(c, "seqUsedQ", !kc.usedQ.empty()), optional(c, "seqUsedK", !kc.usedK.empty()),
          optional(c, "cmpResidualK", !kc.residual.empty()), optional(c, "metadata", kc.passMetadata), layout.data(),
          layout.data(), kc.maskMode, kc.cmpRatio, c.acl("dq"), c.acl("dk"), c.acl("dw"), c.acl("softmaxOut"),
          workspaceSize, executor);
    };
    call.golden = [&c, kc] { runGolden<double>(c, kc); };
    call.naive = [&c, kc] { runGolden<float>(c, kc); };
    call.work = [&c, kc] {
      double bytes = 0.0;
      for (const auto* keys : {&kInputs, &kOutputs}) {
        for (const std::string& key : *keys) bytes += static_cast<double>(c.bytes(key));
      }
      const double slots = validSlots(c, kc), heads = static_cast<double>(kc.heads);
      return Work{bytes, slots * heads * (6.0 * 128 + 4.0), c.spec("q").dtype == ACL_BF16};
    };
    OpCall::Peer peer;
    peer.script = "sparse_lightning_indexer_kl_loss_grad.py";
    peer.files = {{"q", "q"}, {"k", "k"}, {"w", "w"}, {"sparseIndices", "sparse_indices"}, {"attnSoftmaxL1Norm", "p"}};
    if (kc.tnd) peer.files.insert(peer.files.end(), {{"cuSeqLensQ", "cu_q"}, {"cuSeqLensK", "cu_k"}});
    if (!kc.residual.empty()) peer.files.push_back({"cmpResidualK", "residual"});
    if (!kc.usedQ.empty()) peer.files.push_back({"seqUsedQ", "seqused_q"});
    if (!kc.usedK.empty()) peer.files.push_back({"seqUsedK", "seqused_k"});
    peer.args = {"--dtype",     c.info().dtypeText,          "--layout",    kc.tnd ? "TND" : "BSND",
                 "--mask-mode", std::to_string(kc.maskMode), "--cmp-ratio", std::to_string(kc.cmpRatio)};
    peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
    call.peer = peer;
    return call;
  };
  d.run = aclnnSparseLightningIndexerKLLossGrad;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(klLossGrad)
}  // namespace gradkit::cli
