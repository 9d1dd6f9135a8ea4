// The SparseFlashMla suite: cases/sparse_flash_mla.json through aclnnSparseFlashMla, judged by the double benchmark
// (DECISIONS.md, matmul ops; level L2) against golden/sparse_flash_mla's fp64 forward of the case's logical problem
// (golden/sparse_flash_mla_layouts.h maps the layout-form tensors to it), the naive computation being the same formulas
// in plain fp32 with P rounded to bf16 where this process runs bf16 on the native tile path (core/tile_path.h, as the
// op). Besides the gate: every row that sees no key and every row no batch computes must be exactly +0 in attnOut and
// softmaxLse, and a softmaxLse placeholder passed with returnSoftmaxLse false must keep its bytes. Bench rows check
// "check_heads" of the heads against the golden (the golden is plain sequential code).
// Bench: FLOPs 4 * N1 * D per visible key of every computed row (Q.K and P.V), bytes every passed tensor once, the
// roofline on the GEMM peak of the products' type (bf16 on the native path), the peak RSS of the timed runs, and
// tools/peers/sparse_flash_mla.py (the same attention in pure torch, bf16 as a user would run it) as the peer. Cases
// with "torch_check" also run that script as a check of our attnOut (upstream's criterion, stated in the script; the
// "extra" column). Case keys: suites/sparse_flash_mla_suite.h.
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "core/tile_path.h"
#include "harness/case_values.h"
#include "harness/compare.h"
#include "harness/elements.h"
#include "harness/metrics.h"
#include "harness/npy.h"
#include "harness/peer.h"
#include "harness/process_memory.h"
#include "harness/rows.h"
#include "harness/view_checks.h"
#include "suites/sparse_flash_mla_suite.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"q",
                                          "oriKv",
                                          "cmpKv",
                                          "oriSparseIndices",
                                          "cmpSparseIndices",
                                          "oriBlockTable",
                                          "cmpBlockTable",
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

size_t at(int64_t i) { return static_cast<size_t>(i); }

bool bf16Products(OpCase& c) {
  return c.spec("q").dtype == ACL_BF16 && chooseTilePath(ACL_BF16).path == TilePath::NativeBf16;
}

/** The forward of the checked heads, as Real, on the case's inputs. */
template <class Real>
golden::SparseFlashMlaOutputs<Real> forward(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp,
                                            golden::SmlaIoRounding io) {
  const int64_t heads = sc.checkHeads, width = sc.n1 * sc.d;
  golden::SparseFlashMlaProblem p = sp.problem;
  p.heads = heads;
  p.io = io;
  const std::vector<double> sinks = denseValues(c, "sinks");
  p.sinks.assign(sinks.begin(), sinks.begin() + heads);
  std::vector<Real> q;
  {
    const std::vector<double> all = denseValues(c, "q");
    q.reserve(sp.rows.q.size() * at(heads * sc.d));
    for (int64_t row : sp.rows.q)
      q.insert(q.end(), all.begin() + row * width, all.begin() + row * width + heads * sc.d);
  }
  const std::vector<Real> ori = as<Real>(golden::smlaGatherRows(denseValues(c, "oriKv").data(), sp.rows.ori, sc.d));
  std::vector<Real> cmp;
  if (sc.cmp.present) cmp = as<Real>(golden::smlaGatherRows(denseValues(c, "cmpKv").data(), sp.rows.cmp, sc.d));
  return golden::sparseFlashMlaForward(p, golden::SparseFlashMlaInputs<Real>{q.data(), ori.data(), cmp.data()});
}

/** Our values, the golden's and the naive computation's of the checked heads of the rows that see a key. */
struct Compared {
  std::vector<double> ours, golden, naive;
};

/** One output ([T][n1][width] per row): the compared values, and the rows that see nothing checked for +0. */
template <class G, class N>
Compared compare(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp, const std::string& key, int64_t inner,
                 const std::vector<G>& golden, const std::vector<N>& naive, int64_t& notZero, VerifyRow& row,
                 bool& bitExact) {
  const aclDataType dtype = c.spec(key).dtype;
  const std::vector<unsigned char> dense = c.tensor(key).dense();
  const size_t size = dtype == ACL_FLOAT ? 4 : 2;
  const int64_t perRow = sc.n1 * inner, checked = sc.checkHeads * inner;
  for (int64_t t = 0; t < sc.tokens; ++t) {
    if (sp.sees[at(t)]) continue;
    for (int64_t e = t * perRow * static_cast<int64_t>(size); e < (t + 1) * perRow * static_cast<int64_t>(size); ++e)
      notZero += dense[at(e)] != 0 ? 1 : 0;
  }
  Compared out;
  for (size_t logical = 0; logical < sp.rows.q.size(); ++logical) {
    const int64_t t = sp.rows.q[logical];
    if (!sp.sees[at(t)]) continue;
    for (int64_t e = 0; e < checked; ++e) {
      const double a = loadAsDouble(dtype, dense.data(), t * perRow + e);
      const double g = roundToDtype(dtype, golden[logical * at(checked) + at(e)]);
      const ElementError error = elementError(a, g);
      row.maxAbsErr = std::max(row.maxAbsErr, error.abs);
      row.maxRelErr = std::max(row.maxRelErr, error.rel);
      bitExact = bitExact && a == g;
      out.ours.push_back(a);
      out.golden.push_back(g);
      out.naive.push_back(roundToDtype(dtype, naive[logical * at(checked) + at(e)]));
    }
  }
  return out;
}

void judge(OpCase& c, const SmlaSuiteCase& sc, const SmlaSuiteProblem& sp,
           const golden::SparseFlashMlaOutputs<double>& exact, VerifyRow& row) {
  if (sc.checkHeads == 0) {
    row.passed = true;
    return appendNote(row, "not checked against the golden (check_heads 0)");
  }
  const auto naive =
      forward<float>(c, sc, sp, bf16Products(c) ? golden::SmlaIoRounding::Bf16 : golden::SmlaIoRounding::None);
  bool passed = true, bitExact = true;
  const auto gate = [&](const std::string& key, const Compared& v) {
    const DoubleBenchmark verdict = doubleBenchmark(v.ours.data(), v.naive.data(), v.golden.data(),
                                                    static_cast<int64_t>(v.ours.size()), c.spec(key).dtype, kLevelL2);
    if (verdict.passed) return;
    passed = false;
    appendNote(row, key + ": " + verdict.reason + " (ours MARE " + formatNumber(verdict.ours.mare) + " RMSE " +
                        formatNumber(verdict.ours.rmse) + ", naive MARE " + formatNumber(verdict.naive.mare) +
                        " RMSE " + formatNumber(verdict.naive.rmse) + ")");
  };
  int64_t notZero = 0;
  gate("attnOut", compare(c, sc, sp, "attnOut", sc.d, exact.out, naive.out, notZero, row, bitExact));
  if (sc.returnLse)
    gate("softmaxLse", compare(c, sc, sp, "softmaxLse", 1, exact.lse, naive.lse, notZero, row, bitExact));
  if (notZero > 0) {
    passed = false;
    appendNote(row, std::to_string(notZero) + " bytes of rows that see no key are not +0");
  }
  if (!sc.returnLse && sc.passed.count("softmaxLse") != 0 && c.tensor("softmaxLse").dense() != c.dense("softmaxLse")) {
    passed = false;
    appendNote(row, "softmaxLse was written with returnSoftmaxLse false");
  }
  if (sc.checkHeads < sc.n1) {
    appendNote(row, "golden-checked on " + std::to_string(sc.checkHeads) + " of " + std::to_string(sc.n1) + " heads");
  }
  row.passed = passed;
  row.bitExact = bitExact;
}

OpCall::Peer torchPeer(const SmlaSuiteCase& sc, const std::string& dtypeText) {
  std::vector<std::string> keys;
  for (const std::string& key : kInputs) {
    if (key != "metadata") keys.push_back(key);
  }
  return smlaTorchPeer(sc, dtypeText, "sparse_flash_mla.py", keys);
}

/**
 * The torch reference (tools/peers/sparse_flash_mla.py --check) on the case's inputs and our attnOut: upstream's
 * criterion (stated in the script) against torch in fp32 (P rounded tile by tile as the op where it runs bf16 on the
 * native path), reported beside the gate.
 */
void torchCheck(OpCase& c, const SmlaSuiteCase& sc, VerifyRow& row) {
  TempDir dir;
  const OpCall::Peer peer = torchPeer(sc, c.info().dtypeText);
  std::string keys;
  for (const auto& [key, stem] : peer.files) {
    writeNpy(dir.path() / (stem + ".npy"), c.spec(key).dtype, c.spec(key).shape, c.dense(key).data());
    keys += (keys.empty() ? "" : ",") + stem;
  }
  const std::vector<unsigned char> ours = c.tensor("attnOut").dense();
  writeNpy(dir.path() / "ours_attnOut.npy", c.spec("attnOut").dtype, c.spec("attnOut").shape, ours.data());
  std::vector<std::string> args{"--dir",          dir.path().string(),
                                "--tensors",      keys,
                                "--check",        (dir.path() / "ours_attnOut.npy").string(),
                                "--check-report", (dir.path() / "check.txt").string()};
  args.insert(args.end(), peer.args.begin(), peer.args.end());
  if (bf16Products(c)) args.push_back("--round-p");
  std::string error;
  runPeer(peerScript(peer.script), args, error, peer.torch);
  std::ifstream report(dir.path() / "check.txt");
  std::string line;
  std::getline(report, line);
  row.extra = "torch check: " + (line.empty() ? error : line);
}

void addBench(OpCase& c, const SmlaSuiteCase& sc, const std::shared_ptr<const SmlaSuiteProblem>& sp, OpCall& call) {
  call.work = [&c, sc, sp] {
    double bytes = 0.0;
    for (const std::string& key : sc.passed) bytes += static_cast<double>(c.bytes(key));
    const double flops = 4.0 * static_cast<double>(sc.n1) * static_cast<double>(sc.d) * (sp ? sp->visibleKeys : 0.0);
    return Work{bytes, flops, bf16Products(c)};
  };
  call.peer = torchPeer(sc, c.info().dtypeText);
  const double keys = sp ? sp->visibleKeys : 0.0, rows = sp ? static_cast<double>(sp->rows.q.size()) : 0.0;
  auto rss = std::make_shared<RssWindow>();  // the last thing bind does: the window covers the timed runs
  call.benchNote = [rss, keys, rows, sc](double, const BenchContext&, BenchRow& row) {
    std::string note = formatNumber(rows > 0 ? keys / rows : 0.0) + " keys per row";
    if (sc.checkHeads < sc.n1) {
      note += "; golden-checked on " + std::to_string(sc.checkHeads) + " of " + std::to_string(sc.n1) + " heads";
    }
    if (const std::string memory = rss->note(); !memory.empty()) note += "; " + memory;
    row.note += (row.note.empty() ? "" : "; ") + note;
  };
}

OpDescriptor sparseFlashMla() {
  OpDescriptor d;
  d.name = "sparse_flash_mla";
  d.api = "aclnnSparseFlashMla";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, smlaDefaults(key)));
  d.tensors.push_back(outputRule("attnOut", smlaDefaults("attnOut")));
  d.tensors.push_back(outputRule("softmaxLse", smlaDefaults("softmaxLse")));
  d.bind = [](OpCase& c) {
    const SmlaSuiteCase sc = parseSmlaCase(c.json(), c.info().seed);
    const std::shared_ptr<const SmlaSuiteProblem> sp = writeSmlaInts(c, sc);
    OpCall call;
    call.plan = [&c, sc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      std::string layoutQ = sc.layoutQ, layoutKv = sc.layoutKv;
      const auto t = [&c, &sc](const char* key) { return smlaTensor(c, sc, key); };
      return aclnnSparseFlashMlaGetWorkspaceSize(
          t("q"), t("oriKv"), t("cmpKv"), t("oriSparseIndices"), t("cmpSparseIndices"), t("oriBlockTable"),
          t("cmpBlockTable"), t("cuSeqlensQ"), t("cuSeqlensOriKv"), t("cuSeqlensCmpKv"), t("sequsedQ"),
          t("sequsedOriKv"), t("sequsedCmpKv"), t("cmpResidualKv"), t("oriTopkLength"), t("cmpTopkLength"), t("sinks"),
          t("metadata"), sc.scale, sc.ratio, sc.oriMode, sc.cmpMode, sc.winLeft, sc.winRight, layoutQ.data(),
          layoutKv.data(), sc.topkValueMode, sc.returnLse, t("attnOut"), t("softmaxLse"), workspaceSize, executor);
    };
    auto exact = std::make_shared<golden::SparseFlashMlaOutputs<double>>();
    call.golden = [&c, sc, sp, exact] {
      if (!sp || sc.checkHeads == 0) return;
      *exact = forward<double>(c, sc, *sp, golden::SmlaIoRounding::None);
      if (sc.checkHeads < sc.n1) return;
      storeGolden(c, "attnOut", golden::smlaScatterRows(exact->out, sp->rows.q, sc.n1 * sc.d, sc.tokens));
      if (sc.returnLse) storeGolden(c, "softmaxLse", golden::smlaScatterRows(exact->lse, sp->rows.q, sc.n1, sc.tokens));
    };
    call.judge = [&c, sc, sp, exact](VerifyRow& row) { judge(c, sc, *sp, *exact, row); };
    if (sc.torchCheck) call.report = [&c, sc](VerifyRow& row) { torchCheck(c, sc, row); };
    if (c.bench()) addBench(c, sc, sp, call);
    return call;
  };
  d.run = aclnnSparseFlashMla;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(sparseFlashMla)
}  // namespace gradkit::cli
