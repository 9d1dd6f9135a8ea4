// The SparseFlashMlaSoftmaxL1Norm suite: cases/sparse_flash_mla_softmax_l1_norm.json through
// aclnnSparseFlashMlaSoftmaxL1Norm, judged by the double benchmark (DECISIONS.md, matmul ops; level L2) against
// golden::sparseFlashMlaSoftmaxL1Norm (fp64, the Cmp part of the case's logical problem), the naive computation being
// the same formula in plain fp32. Besides the gate: every element the golden has exactly 0 (slots no key fills, rows
// that see nothing, rows no batch computes) must be +0.
// The cases are the SparseFlashMla suite's (suites/sparse_flash_mla_suite.h: its case keys and builders) with no ori
// rows ("ori_lens" 0, "ori_mask_mode" 0 by default) and the op's tensors under the forward's keys: "q", "cmpKv" (k),
// "cmpSparseIndices", "cuSeqlensQ", "cuSeqlensCmpKv", "sequsedQ", "sequsedCmpKv", "cmpResidualKv", "cmpTopkLength",
// "metadata" ([64]), "softmaxLse" (input) and "softmaxL1Norm". "cmp_mask_mode" is the op's maskMode. Own keys:
//   "lse": "forward" (default: the fp64 forward's lse of the case's problem without sinks, so every row sums to 1) or
//          a number (every lse element; bench rows, where the fp64 forward would cost minutes)
//   "max_seqlen_k": maxSeqlenK (default: the longest batch's keys); "check": false skips the golden (bench rows)
// Bench: FLOPs 2 * N1 * D per visible key of every computed row (Q.K), bytes every passed tensor once, the roofline on
// the GEMM peak of the products' type, tools/peers/sparse_flash_mla_softmax_l1_norm.py (pure torch) as the peer.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "core/tile_path.h"
#include "harness/case_values.h"
#include "harness/compare.h"
#include "harness/elements.h"
#include "harness/metrics.h"
#include "harness/peer.h"
#include "harness/view_checks.h"
#include "suites/sparse_flash_mla_suite.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

const std::vector<std::string> kInputs = {
    "q",        "cmpKv",        "softmaxLse",    "cmpSparseIndices", "cuSeqlensQ", "cuSeqlensCmpKv",
    "sequsedQ", "sequsedCmpKv", "cmpResidualKv", "cmpTopkLength",    "metadata"};

size_t at(int64_t i) { return static_cast<size_t>(i); }

/** The case as the forward suite reads it: no ori rows unless it says otherwise. */
json forwardJson(const json& t) {
  json f = t;
  if (!f.contains("ori_lens")) f["ori_lens"] = 0;
  if (!f.contains("ori_mask_mode")) f["ori_mask_mode"] = 0;
  return f;
}

SmlaSuiteCase parseL1Case(const json& t, uint64_t seed) {
  SmlaSuiteCase sc = parseSmlaCase(forwardJson(t), seed);
  std::set<std::string> passed;
  for (const std::string& key : sc.passed) {
    if (std::find(kInputs.begin(), kInputs.end(), key) != kInputs.end()) passed.insert(key);
  }
  passed.insert("softmaxLse");
  passed.insert("softmaxL1Norm");
  for (const std::string& key : t.value("omit", std::vector<std::string>{})) passed.erase(key);
  sc.passed = passed;
  return sc;
}

/** Columns of an output row: K (sparse), S2 (BSND dense) or maxSeqlenK (TND dense). */
int64_t widthOf(const SmlaSuiteCase& sc, const json& t) {
  if (sc.cmpList.k > 0) return sc.cmpList.k;
  if (sc.layoutQ == "BSND") return sc.cmp.perBatch;
  int64_t longest = 0;
  for (int64_t len : sc.cmp.lens) longest = std::max(longest, len);
  return t.value("max_seqlen_k", longest);
}

std::function<TensorDefaults(const CaseInfo&)> l1Defaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const json f = forwardJson(info.json);
    CaseInfo forward(f);
    forward.name = info.name, forward.dtypeText = info.dtypeText, forward.dtype = info.dtype;
    forward.shape = info.shape, forward.numel = info.numel, forward.seed = info.seed;
    const SmlaSuiteCase sc = parseL1Case(info.json, info.seed);
    if (key == "metadata") return TensorDefaults{ACL_INT32, {64}, info.seed, uniformValues(0, 0)};
    if (key == "softmaxL1Norm") {
      std::vector<int64_t> shape = sc.perToken();
      shape.push_back(widthOf(sc, info.json));
      return TensorDefaults{ACL_FLOAT, shape, info.seed, uniformValues(0, 0)};
    }
    TensorDefaults t = smlaDefaults(key)(forward);
    if (key == "softmaxLse") t.values = uniformValues(0, 0);
    return t;
  };
}

bool bf16Products(OpCase& c) {
  return c.spec("q").dtype == ACL_BF16 && chooseTilePath(ACL_BF16).path == TilePath::NativeBf16;
}

struct Logical {
  std::vector<double> q, cmp, lse;  // [qRows][n1][d], [cmpRows][d], [qRows][n1]
};

Logical logicalInputs(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp) {
  Logical l;
  l.q = golden::smlaGatherRows(denseValues(c, "q").data(), sp.rows.q, sc.n1 * sc.d);
  l.cmp = golden::smlaGatherRows(denseValues(c, "cmpKv").data(), sp.rows.cmp, sc.d);
  return l;
}

/** softmaxLse: the fp64 forward's lse without sinks, or the case's constant. */
void writeLse(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp) {
  const json& t = c.json();
  std::vector<double> dense(at(c.spec("softmaxLse").numel()), 0.0);
  if (t.contains("lse") && t["lse"].is_number()) {
    std::fill(dense.begin(), dense.end(), t["lse"].get<double>());
  } else {
    const Logical l = logicalInputs(c, sc, sp);
    golden::SparseFlashMlaProblem p = sp.problem;
    p.sinks.clear();
    const std::vector<double> none;
    const auto fwd =
        golden::sparseFlashMlaForward(p, golden::SparseFlashMlaInputs<double>{l.q.data(), none.data(), l.cmp.data()});
    dense = golden::smlaScatterRows(fwd.lse, sp.rows.q, sc.n1, sc.tokens);
    for (double& v : dense) v = static_cast<double>(static_cast<float>(v));
  }
  writeView(c, "softmaxLse", dense);
}

template <class Real>
std::vector<Real> l1Golden(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp, int64_t width) {
  const Logical l = logicalInputs(c, sc, sp);
  const std::vector<Real> q = as<Real>(l.q), cmp = as<Real>(l.cmp);
  const std::vector<Real> lse = as<Real>(golden::smlaGatherRows(denseValues(c, "softmaxLse").data(), sp.rows.q, sc.n1));
  const std::vector<Real> none;
  return golden::sparseFlashMlaSoftmaxL1Norm(sp.problem, golden::SmlaPart::Cmp,
                                             golden::SparseFlashMlaInputs<Real>{q.data(), none.data(), cmp.data()},
                                             lse.data(), sc.cmpList.k > 0 ? 0 : width);
}

void judge(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp, int64_t width,
           const std::vector<double>& exact, VerifyRow& row) {
  if (!c.json().value("check", true)) {
    row.passed = true;
    return appendNote(row, "not checked against the golden (check false)");
  }
  const std::vector<double> want = golden::smlaScatterRows(exact, sp.rows.q, width, sc.tokens);
  const std::vector<float> naive =
      golden::smlaScatterRows(l1Golden<float>(c, sc, sp, width), sp.rows.q, width, sc.tokens);
  const std::vector<unsigned char> dense = c.tensor("softmaxL1Norm").dense();
  std::vector<double> ours, golden, naiveKept;
  int64_t notZero = 0;
  bool bitExact = true;
  for (size_t e = 0; e < want.size(); ++e) {
    const double a = loadAsDouble(ACL_FLOAT, dense.data(), static_cast<int64_t>(e));
    if (want[e] == 0.0) {
      uint32_t bits;
      std::memcpy(&bits, dense.data() + 4 * e, 4);
      notZero += bits != 0 ? 1 : 0;
      continue;
    }
    const double g = roundToDtype(ACL_FLOAT, want[e]);
    const ElementError error = elementError(a, g);
    row.maxAbsErr = std::max(row.maxAbsErr, error.abs);
    row.maxRelErr = std::max(row.maxRelErr, error.rel);
    bitExact = bitExact && a == g;
    ours.push_back(a);
    golden.push_back(g);
    naiveKept.push_back(naive[e]);
  }
  const DoubleBenchmark verdict = doubleBenchmark(ours.data(), naiveKept.data(), golden.data(),
                                                  static_cast<int64_t>(ours.size()), ACL_FLOAT, kLevelL2);
  row.passed = verdict.passed && notZero == 0;
  row.bitExact = bitExact;
  if (!verdict.passed) {
    appendNote(row, "softmaxL1Norm: " + verdict.reason + " (ours MARE " + formatNumber(verdict.ours.mare) + " RMSE " +
                        formatNumber(verdict.ours.rmse) + ", naive MARE " + formatNumber(verdict.naive.mare) +
                        " RMSE " + formatNumber(verdict.naive.rmse) + ")");
  }
  if (notZero > 0) appendNote(row, std::to_string(notZero) + " elements that must be +0 are not");
}

OpCall::Peer torchPeer(const SmlaSuiteCase& sc, const std::string& dtypeText, int64_t width) {
  OpCall::Peer peer;
  peer.script = "sparse_flash_mla_softmax_l1_norm.py";
  for (const std::string& key : kInputs) {
    if (sc.passed.count(key) != 0 && key != "metadata") peer.files.push_back({key, key});
  }
  peer.args = {"--dtype",     dtypeText,
               "--layout",    sc.layoutQ,
               "--scale",     formatNumberAs("%.17g", sc.scale),
               "--cmp-ratio", std::to_string(sc.ratio),
               "--mask-mode", std::to_string(sc.cmpMode),
               "--width",     std::to_string(width)};
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

OpDescriptor softmaxL1Norm() {
  OpDescriptor d;
  d.name = "sparse_flash_mla_softmax_l1_norm";
  d.api = "aclnnSparseFlashMlaSoftmaxL1Norm";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, l1Defaults(key)));
  d.tensors.push_back(outputRule("softmaxL1Norm", l1Defaults("softmaxL1Norm")));
  d.bind = [](OpCase& c) {
    const SmlaSuiteCase sc = parseL1Case(c.json(), c.info().seed);
    const int64_t width = widthOf(sc, c.json());
    const int64_t maxSeqlenK = c.json().value("max_seqlen_k", width);
    const std::shared_ptr<const SmlaSuiteProblem> sp = writeSmlaInts(c, sc);
    if (sp && sc.passed.count("softmaxLse") != 0) writeLse(c, sc, *sp);
    OpCall call;
    call.plan = [&c, sc, maxSeqlenK](uint64_t* workspaceSize, aclOpExecutor** executor) {
      std::string layout = sc.layoutQ;
      const auto t = [&c, &sc](const char* key) { return smlaTensor(c, sc, key); };
      return aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
          t("q"), t("cmpKv"), t("softmaxLse"), t("cmpSparseIndices"), t("cuSeqlensQ"), t("cuSeqlensCmpKv"),
          t("sequsedQ"), t("sequsedCmpKv"), t("cmpResidualKv"), t("cmpTopkLength"), t("metadata"), sc.scale, maxSeqlenK,
          sc.ratio, sc.cmpMode, layout.data(), layout.data(), t("softmaxL1Norm"), workspaceSize, executor);
    };
    auto exact = std::make_shared<std::vector<double>>();
    call.golden = [&c, sc, sp, exact, width] {
      if (!sp || !c.json().value("check", true)) return;
      *exact = l1Golden<double>(c, sc, *sp, width);
      storeGolden(c, "softmaxL1Norm", golden::smlaScatterRows(*exact, sp->rows.q, width, sc.tokens));
    };
    call.judge = [&c, sc, sp, exact, width](VerifyRow& row) { judge(c, sc, *sp, width, *exact, row); };
    if (c.bench()) {
      call.work = [&c, sc, sp] {
        double bytes = 0.0;
        for (const std::string& key : sc.passed) bytes += static_cast<double>(c.bytes(key));
        const double flops =
            2.0 * static_cast<double>(sc.n1) * static_cast<double>(sc.d) * (sp ? sp->visibleKeys : 0.0);
        return Work{bytes, flops, bf16Products(c)};
      };
      call.peer = torchPeer(sc, c.info().dtypeText, width);
      const double keys = sp ? sp->visibleKeys : 0.0, rows = sp ? static_cast<double>(sp->rows.q.size()) : 0.0;
      call.benchNote = [keys, rows](double, const BenchContext&, BenchRow& row) {
        row.note += (row.note.empty() ? "" : "; ") + formatNumber(rows > 0 ? keys / rows : 0.0) + " keys per row";
      };
    }
    return call;
  };
  d.run = aclnnSparseFlashMlaSoftmaxL1Norm;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(softmaxL1Norm)
}  // namespace gradkit::cli
