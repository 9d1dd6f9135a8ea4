// The SparseFlashMlaGrad suite: cases/sparse_flash_mla_grad.json through aclnnSparseFlashMlaGrad. Each case is a
// forward case of the SparseFlashMla suite (its keys: suites/sparse_flash_mla_suite.h; BSND / TND only, the grad has no
// paged KV) plus a random dOut: bind runs our aclnnSparseFlashMla on the case's inputs for out and lse (a case that
// leaves sinks out runs the forward with -inf sinks, the same softmax), then the gradient. Verdict: the double
// benchmark (level L2) of dQueryOut, dOriKvOutOptional, dCmpKvOutOptional, dSinksOutOptional and the softmax L1 norms
// against golden/sparse_flash_mla's fp64 backward fed the same out and lse, the naive computation being the same
// formulas in plain fp32 rounding P and dS to bf16 where the process runs bf16 on the native tile path; rows that see
// no key and rows no batch computes must leave dq exactly +0, and KV rows no query reaches exactly +0. Bench rows with
// "check_heads" below N1 check dq and dSinks of those heads only (the KV gradients and L1 norms sum every head).
// Bench: FLOPs 10 * N1 * D per visible key of every computed row (S, dP, dq and the K = V product over 2 N1), bytes
// every passed tensor once, the roofline on the GEMM peak of the products' type, and tools/peers/
// sparse_flash_mla_grad.py (gather + attention in torch, autograd backward, bf16 as a user would run it) as the peer.
// Grad-only keys: "omit" / "include" also take the grad's tensors (dOut, out, lse, dQuery, dOriKv, dCmpKv, dSinks,
// oriSoftmaxL1Norm, cmpSoftmaxL1Norm; by default every output the call can have is passed).
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "core/tile_path.h"
#include "harness/case_values.h"
#include "harness/compare.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/metrics.h"
#include "harness/process_memory.h"
#include "harness/rows.h"
#include "harness/two_phase.h"
#include "harness/view_checks.h"
#include "suites/sparse_flash_mla_suite.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"q",
                                          "dOut",
                                          "out",
                                          "lse",
                                          "oriKv",
                                          "cmpKv",
                                          "oriSparseIndices",
                                          "cmpSparseIndices",
                                          "cuSeqlensQ",
                                          "cuSeqlensOriKv",
                                          "cuSeqlensCmpKv",
                                          "sequsedQ",
                                          "sequsedOriKv",
                                          "sequsedCmpKv",
                                          "cmpResidualKv",
                                          "oriTopkLength",
                                          "cmpTopkLength",
                                          "sinks",
                                          "metadata"};
const std::vector<std::string> kOutputs = {"dQuery", "dOriKv",           "dCmpKv",
                                           "dSinks", "oriSoftmaxL1Norm", "cmpSoftmaxL1Norm"};

size_t at(int64_t i) { return static_cast<size_t>(i); }

bool bf16Products(OpCase& c) {
  return c.spec("q").dtype == ACL_BF16 && chooseTilePath(ACL_BF16).path == TilePath::NativeBf16;
}

/** The grad's tensors: the forward case's minus its outputs and block tables, plus the grad's. */
SmlaSuiteCase parseGradCase(const nlohmann::json& t, uint64_t seed) {
  SmlaSuiteCase sc = parseSmlaCase(t, seed);
  if (sc.paged() && !sc.expectsRejection) throw HarnessError("aclnnSparseFlashMlaGrad has no paged KV (PA_BBND)");
  std::set<std::string>& p = sc.passed;
  for (const char* key : {"attnOut", "softmaxLse", "oriBlockTable", "cmpBlockTable"}) p.erase(key);
  p.insert({"dOut", "out", "lse", "dQuery", "dOriKv"});
  if (sc.cmp.present) p.insert("dCmpKv");
  if (p.count("sinks") != 0) p.insert("dSinks");
  if (p.count("oriSparseIndices") != 0) p.insert("oriSoftmaxL1Norm");
  if (p.count("cmpSparseIndices") != 0) p.insert("cmpSoftmaxL1Norm");
  for (const std::string& key : t.value("omit", std::vector<std::string>{})) p.erase(key);
  for (const std::string& key : t.value("include", std::vector<std::string>{})) p.insert(key);
  return sc;
}

std::function<TensorDefaults(const CaseInfo&)> gradDefaults(const std::string& key) {
  const std::string like = key == "dOut" || key == "out" || key == "dQuery" ? "q"
                           : key == "lse"                                   ? "softmaxLse"
                           : key == "dOriKv"                                ? "oriKv"
                           : key == "dCmpKv"                                ? "cmpKv"
                           : key == "dSinks"                                ? "sinks"
                           : key == "oriSoftmaxL1Norm"                      ? "oriSparseIndices"
                           : key == "cmpSoftmaxL1Norm"                      ? "cmpSparseIndices"
                                                                            : key;
  const auto forward = smlaDefaults(like);
  return [forward, key](const CaseInfo& info) {
    TensorDefaults t = forward(info);
    if (key == "oriSoftmaxL1Norm" || key == "cmpSoftmaxL1Norm") t.dtype = ACL_FLOAT;
    if (key == "dOut") t.values = uniformValues(-1.0, 1.0);
    return t;
  };
}

/** Our aclnnSparseFlashMla on the case's inputs into out and lse (the grad's inputs). */
void writeOurForward(OpCase& c, const SmlaSuiteCase& sc) {
  if (sc.passed.count("sinks") == 0) {
    writeView(c, "sinks", std::vector<double>(at(sc.n1), -std::numeric_limits<double>::infinity()));
  }
  const PlanCall plan = [&c, &sc](uint64_t* workspaceSize, aclOpExecutor** executor) {
    std::string layoutQ = sc.layoutQ, layoutKv = sc.layoutKv;
    const auto t = [&c, &sc](const char* key) { return smlaTensor(c, sc, key); };
    return aclnnSparseFlashMlaGetWorkspaceSize(
        c.acl("q"), c.acl("oriKv"), t("cmpKv"), t("oriSparseIndices"), t("cmpSparseIndices"), nullptr, nullptr,
        t("cuSeqlensQ"), t("cuSeqlensOriKv"), t("cuSeqlensCmpKv"), t("sequsedQ"), t("sequsedOriKv"), t("sequsedCmpKv"),
        t("cmpResidualKv"), t("oriTopkLength"), t("cmpTopkLength"), c.acl("sinks"), c.acl("metadata"), sc.scale,
        sc.ratio, sc.oriMode, sc.cmpMode, sc.winLeft, sc.winRight, layoutQ.data(), layoutKv.data(), sc.topkValueMode,
        true, c.acl("out"), c.acl("lse"), workspaceSize, executor);
  };
  VerifyRow row;
  if (!runTwoPhase("forward aclnnSparseFlashMla", plan, aclnnSparseFlashMla, nullptr, 0, {}, row)) {
    throw HarnessError("our forward for the case failed: " + row.note);
  }
  for (const char* key : {"out", "lse"}) c.tensor(key).download();
}

/** The first `heads` heads of each logical row of a [layout rows][n1][inner] tensor. */
template <class Real>
std::vector<Real> logicalHeads(OpCase& c, const std::string& key, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp,
                               int64_t inner, int64_t heads) {
  const std::vector<double> all = denseValues(c, key);
  std::vector<Real> rows;
  rows.reserve(sp.rows.q.size() * at(heads * inner));
  for (int64_t row : sp.rows.q) {
    const auto first = all.begin() + row * sc.n1 * inner;
    rows.insert(rows.end(), first, first + heads * inner);
  }
  return rows;
}

/** The backward of the checked heads, as Real, from the case's inputs and our forward's out and lse. */
template <class Real>
golden::SparseFlashMlaGradOutputs<Real> backward(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp,
                                                 golden::SmlaIoRounding io) {
  const int64_t heads = sc.checkHeads;
  golden::SparseFlashMlaProblem p = sp.problem;
  p.heads = heads;
  p.io = io;
  if (sc.passed.count("sinks") != 0) {
    const std::vector<double> sinks = denseValues(c, "sinks");
    p.sinks.assign(sinks.begin(), sinks.begin() + heads);
  }
  const std::vector<Real> q = logicalHeads<Real>(c, "q", sc, sp, sc.d, heads),
                          dOut = logicalHeads<Real>(c, "dOut", sc, sp, sc.d, heads),
                          out = logicalHeads<Real>(c, "out", sc, sp, sc.d, heads),
                          lse = logicalHeads<Real>(c, "lse", sc, sp, 1, heads);
  const std::vector<Real> ori = as<Real>(golden::smlaGatherRows(denseValues(c, "oriKv").data(), sp.rows.ori, sc.d));
  std::vector<Real> cmp;
  if (sc.cmp.present) cmp = as<Real>(golden::smlaGatherRows(denseValues(c, "cmpKv").data(), sp.rows.cmp, sc.d));
  golden::SparseFlashMlaGradInputs<Real> in;
  in.tensors = {q.data(), ori.data(), cmp.data()};
  in.dOut = dOut.data();
  in.out = out.data();
  in.lse = lse.data();
  return golden::sparseFlashMlaBackward(p, in);
}

/** One output's compared values (ours, golden, naive) and the bytes that had to be +0 but are not. */
struct Compared {
  std::vector<double> ours, golden, naive;
  int64_t notZero = 0;
};

/** dq of the checked heads: rows that see no key (or that no batch computes) must be +0 in every head. */
template <class G, class N>
Compared compareDq(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp, const std::vector<G>& golden,
                   const std::vector<N>& naive, VerifyRow& row) {
  const aclDataType dtype = c.spec("dQuery").dtype;
  const std::vector<unsigned char> dense = c.tensor("dQuery").dense();
  const int64_t perRow = sc.n1 * sc.d, checked = sc.checkHeads * sc.d;
  Compared out;
  for (int64_t t = 0; t < sc.tokens; ++t) {
    if (sp.sees[at(t)]) continue;
    for (int64_t e = t * perRow * 2; e < (t + 1) * perRow * 2; ++e) out.notZero += dense[at(e)] != 0 ? 1 : 0;
  }
  for (size_t logical = 0; logical < sp.rows.q.size(); ++logical) {
    const int64_t t = sp.rows.q[logical];
    if (!sp.sees[at(t)]) continue;
    for (int64_t e = 0; e < checked; ++e) {
      const double ours = loadAsDouble(dtype, dense.data(), t * perRow + e);
      const double g = golden[logical * at(checked) + at(e)];
      const ElementError error = elementError(ours, roundToDtype(dtype, g));
      row.maxAbsErr = std::max(row.maxAbsErr, error.abs);
      row.maxRelErr = std::max(row.maxRelErr, error.rel);
      out.ours.push_back(ours);
      out.golden.push_back(g);
      out.naive.push_back(roundToDtype(dtype, naive[logical * at(checked) + at(e)]));
    }
  }
  return out;
}

/**
 * A whole output against layout-form golden / naive values: elements both leave exactly 0 (KV rows no query reaches,
 * L1 slots no key fills) must be +0; the others are compared.
 */
template <class G, class N>
Compared compareLayout(OpCase& c, const std::string& key, const std::vector<G>& golden, const std::vector<N>& naive,
                       VerifyRow& row) {
  const aclDataType dtype = c.spec(key).dtype;
  const std::vector<unsigned char> dense = c.tensor(key).dense();
  const size_t size = dtype == ACL_FLOAT ? 4 : 2;
  Compared out;
  for (size_t e = 0; e < golden.size(); ++e) {
    if (golden[e] == 0 && naive[e] == 0) {
      for (size_t b = e * size; b < (e + 1) * size; ++b) out.notZero += dense[b] != 0 ? 1 : 0;
      continue;
    }
    const double ours = loadAsDouble(dtype, dense.data(), static_cast<int64_t>(e));
    const ElementError error = elementError(ours, roundToDtype(dtype, golden[e]));
    row.maxAbsErr = std::max(row.maxAbsErr, error.abs);
    row.maxRelErr = std::max(row.maxRelErr, error.rel);
    out.ours.push_back(ours);
    out.golden.push_back(golden[e]);
    out.naive.push_back(roundToDtype(dtype, naive[e]));
  }
  return out;
}

void judge(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp,
           const golden::SparseFlashMlaGradOutputs<double>& exact, VerifyRow& row) {
  if (sc.checkHeads == 0) {
    row.passed = true;
    return appendNote(row, "not checked against the golden (check_heads 0)");
  }
  const auto naive =
      backward<float>(c, sc, sp, bf16Products(c) ? golden::SmlaIoRounding::Bf16 : golden::SmlaIoRounding::None);
  bool passed = true;
  const auto gate = [&](const std::string& key, const Compared& v) {
    if (v.notZero > 0) {
      passed = false;
      appendNote(row, key + ": " + std::to_string(v.notZero) + " bytes that must be +0 are not");
    }
    if (v.ours.empty()) return;
    const DoubleBenchmark verdict = doubleBenchmark(v.ours.data(), v.naive.data(), v.golden.data(),
                                                    static_cast<int64_t>(v.ours.size()), c.spec(key).dtype, kLevelL2);
    if (verdict.passed) return;
    passed = false;
    appendNote(row, key + ": " + verdict.reason + " (ours MARE " + formatNumber(verdict.ours.mare) + " RMSE " +
                        formatNumber(verdict.ours.rmse) + ", naive MARE " + formatNumber(verdict.naive.mare) +
                        " RMSE " + formatNumber(verdict.naive.rmse) + ")");
  };
  gate("dQuery", compareDq(c, sc, sp, exact.dq, naive.dq, row));
  if (sc.passed.count("dSinks") != 0) gate("dSinks", compareLayout(c, "dSinks", exact.dSinks, naive.dSinks, row));
  if (sc.checkHeads == sc.n1) {
    const auto kv = [&](const std::string& key, const std::vector<double>& e, const std::vector<float>& n,
                        const std::vector<int64_t>& rows) {
      const int64_t layoutRows = c.spec(key).numel() / sc.d;
      gate(key, compareLayout(c, key, golden::smlaScatterRows(e, rows, sc.d, layoutRows),
                              golden::smlaScatterRows(n, rows, sc.d, layoutRows), row));
    };
    if (sc.passed.count("dOriKv") != 0) kv("dOriKv", exact.dOri, naive.dOri, sp.rows.ori);
    if (sc.passed.count("dCmpKv") != 0) kv("dCmpKv", exact.dCmp, naive.dCmp, sp.rows.cmp);
    const auto l1 = [&](const std::string& key, const std::vector<double>& e, const std::vector<float>& n, int64_t k) {
      gate(key, compareLayout(c, key, golden::smlaScatterRows(e, sp.rows.q, k, sc.tokens),
                              golden::smlaScatterRows(n, sp.rows.q, k, sc.tokens), row));
    };
    if (sc.passed.count("oriSoftmaxL1Norm") != 0) l1("oriSoftmaxL1Norm", exact.oriL1, naive.oriL1, sc.oriList.k);
    if (sc.passed.count("cmpSoftmaxL1Norm") != 0) l1("cmpSoftmaxL1Norm", exact.cmpL1, naive.cmpL1, sc.cmpList.k);
  } else {
    appendNote(row, "golden-checked: dq and dSinks of " + std::to_string(sc.checkHeads) + " of " +
                        std::to_string(sc.n1) + " heads");
  }
  row.passed = passed;
}

OpCall::Peer torchPeer(const SmlaSuiteCase& sc, const std::string& dtypeText) {
  std::vector<std::string> keys;
  for (const std::string& key : kInputs) {
    if (key != "metadata" && key != "out" && key != "lse") keys.push_back(key);
  }
  return smlaTorchPeer(sc, dtypeText, "sparse_flash_mla_grad.py", keys);
}

void addBench(OpCase& c, const SmlaSuiteCase& sc, const std::shared_ptr<const SmlaSuiteProblem>& sp, OpCall& call) {
  call.work = [&c, sc, sp] {
    double bytes = 0.0;
    for (const std::string& key : sc.passed) bytes += static_cast<double>(c.bytes(key));
    const double flops = 10.0 * static_cast<double>(sc.n1) * static_cast<double>(sc.d) * (sp ? sp->visibleKeys : 0.0);
    return Work{bytes, flops, bf16Products(c)};
  };
  call.peer = torchPeer(sc, c.info().dtypeText);
  const double keys = sp ? sp->visibleKeys : 0.0, rows = sp ? static_cast<double>(sp->rows.q.size()) : 0.0;
  auto rss = std::make_shared<RssWindow>();  // the last thing bind does: the window covers the timed runs
  call.benchNote = [rss, keys, rows](double, const BenchContext&, BenchRow& row) {
    std::string note = formatNumber(rows > 0 ? keys / rows : 0.0) + " keys per row";
    if (const std::string memory = rss->note(); !memory.empty()) note += "; " + memory;
    row.note += (row.note.empty() ? "" : "; ") + note;
  };
}

OpDescriptor sparseFlashMlaGrad() {
  OpDescriptor d;
  d.name = "sparse_flash_mla_grad";
  d.api = "aclnnSparseFlashMlaGrad";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, gradDefaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, gradDefaults(key)));
  d.bind = [](OpCase& c) {
    const SmlaSuiteCase sc = parseGradCase(c.json(), c.info().seed);
    const std::shared_ptr<const SmlaSuiteProblem> sp = writeSmlaInts(c, sc);
    if (!sc.expectsRejection) writeOurForward(c, sc);
    OpCall call;
    call.plan = [&c, sc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      std::string layoutQ = sc.layoutQ, layoutKv = sc.layoutKv;
      const auto t = [&c, &sc](const char* key) { return smlaTensor(c, sc, key); };
      return aclnnSparseFlashMlaGradGetWorkspaceSize(
          t("q"), t("dOut"), t("out"), t("lse"), t("oriKv"), t("cmpKv"), t("oriSparseIndices"), t("cmpSparseIndices"),
          t("cuSeqlensQ"), t("cuSeqlensOriKv"), t("cuSeqlensCmpKv"), t("sequsedQ"), t("sequsedOriKv"),
          t("sequsedCmpKv"), t("cmpResidualKv"), t("oriTopkLength"), t("cmpTopkLength"), t("sinks"), t("metadata"),
          sc.scale, sc.ratio, sc.oriMode, sc.cmpMode, sc.winLeft, sc.winRight, layoutQ.data(), layoutKv.data(),
          t("dQuery"), t("dOriKv"), t("dCmpKv"), t("dSinks"), t("oriSoftmaxL1Norm"), t("cmpSoftmaxL1Norm"),
          workspaceSize, executor);
    };
    auto exact = std::make_shared<golden::SparseFlashMlaGradOutputs<double>>();
    call.golden = [&c, sc, sp, exact] {
      if (sp && sc.checkHeads > 0) *exact = backward<double>(c, sc, *sp, golden::SmlaIoRounding::None);
    };
    call.judge = [&c, sc, sp, exact](VerifyRow& row) { judge(c, sc, *sp, *exact, row); };
    if (c.bench()) addBench(c, sc, sp, call);
    return call;
  };
  d.run = aclnnSparseFlashMlaGrad;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(sparseFlashMlaGrad)
}  // namespace gradkit::cli
