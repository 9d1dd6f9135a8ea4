// The SparseFlashMla suite's case keys, tensor defaults and INT32 values (sparse_flash_mla_suite.h).
#include <algorithm>
#include <cmath>

#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/peer.h"
#include "harness/rows.h"
#include "suites/sparse_flash_mla_suite.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

size_t at(int64_t i) { return static_cast<size_t>(i); }

/** A per-batch list: a list of B values or one number for every batch; `fallback` when absent. */
std::vector<int64_t> perBatch(const json& testCase, const char* key, int64_t batch,
                              const std::vector<int64_t>& fallback) {
  if (!testCase.contains(key)) return fallback;
  const json& v = testCase[key];
  if (v.is_number_integer()) return std::vector<int64_t>(at(batch), v.get<int64_t>());
  if (!v.is_array()) throw HarnessError(std::string("'") + key + "' must be a list or a number");
  std::vector<int64_t> values = v.get<std::vector<int64_t>>();
  if (static_cast<int64_t>(values.size()) != batch)
    throw HarnessError(std::string("'") + key + "' needs B = " + std::to_string(batch) + " values");
  return values;
}

std::vector<int64_t> prefixSums(const std::vector<int64_t>& rows) {
  std::vector<int64_t> cu{0};
  for (int64_t r : rows) cu.push_back(cu.back() + r);
  return cu;
}

/** The KV side `prefix` ("ori" / "cmp") of a case. */
SmlaKvCase parseKv(const json& t, const SmlaSuiteCase& sc, const std::string& prefix, SplitMix64& random) {
  SmlaKvCase kv;
  const std::string lensKey = prefix + "_lens", rowsKey = prefix + "_rows";
  kv.present = t.contains(lensKey);
  if (!kv.present) return kv;
  kv.lens = perBatch(t, lensKey.c_str(), sc.batch, {});
  kv.rows = perBatch(t, rowsKey.c_str(), sc.batch, kv.lens);
  for (int64_t r : kv.rows) kv.perBatch = std::max(kv.perBatch, r);
  if (sc.paged()) {
    kv.cols = std::max<int64_t>(1, (kv.perBatch + sc.blockSize - 1) / sc.blockSize);
    kv.blocks = integerKeyAtLeast(t, (prefix + "_blocks").c_str(),
                                  sc.batch * kv.cols + integerKeyAtLeast(t, "spare_blocks", 1, 0), 1);
    std::vector<int64_t> ids(at(kv.blocks));
    for (int64_t k = 0; k < kv.blocks; ++k) ids[at(k)] = k;
    for (int64_t k = kv.blocks - 1; k > 0; --k)
      std::swap(ids[at(k)], ids[random.next() % static_cast<uint64_t>(k + 1)]);
    kv.table.assign(ids.begin(), ids.begin() + std::min(kv.blocks, sc.batch * kv.cols));
    kv.table.resize(at(sc.batch * kv.cols), 0);
  }
  if (sc.layoutKv == "TND") kv.cu = prefixSums(kv.rows);
  const bool differs =
      kv.rows != kv.lens || (sc.layoutKv == "BSND" &&
                             std::any_of(kv.lens.begin(), kv.lens.end(), [&](int64_t l) { return l != kv.perBatch; }));
  kv.passUsed = t.value("pass_seqused_" + prefix, sc.paged() || differs);
  return kv;
}

int64_t maskCount(const golden::SparseFlashMlaProblem& p, bool cmp, int64_t b, int64_t i) {
  if (cmp) return golden::smlaCmpThreshold(p, b, i);
  const golden::SmlaWindow w = golden::smlaOriWindow(p, b, i);
  return w.hi - w.lo;
}

/** The K slots of one computed row, drawn from [lo, hi) of a batch of `length` rows. */
void drawList(const std::string& kind, int64_t k, int64_t lo, int64_t hi, int64_t length, SplitMix64& random,
              double* list) {
  const auto pick = [&random](int64_t a, int64_t b) {
    return a + static_cast<int64_t>(random.next() % static_cast<uint64_t>(std::max<int64_t>(b - a, 1)));
  };
  if (kind == "valid" || kind == "arange") {
    std::vector<int64_t> window;
    for (int64_t j = lo; j < hi; ++j) window.push_back(j);
    for (int64_t j = static_cast<int64_t>(window.size()) - 1; kind == "valid" && j > 0; --j)
      std::swap(window[at(j)], window[at(pick(0, j + 1))]);
    for (int64_t s = 0; s < k; ++s) list[s] = s < static_cast<int64_t>(window.size()) ? double(window[at(s)]) : -1.0;
    return;
  }
  for (int64_t s = 0; s < k; ++s) {
    if (kind == "uniform") {
      list[s] = length > 0 ? double(pick(0, length)) : -1.0;
      continue;
    }
    const double r = random.uniform();
    double v = hi > lo ? double(pick(lo, hi)) : double(hi + 1);
    if (r < 0.15 && s > 0 && list[pick(0, s)] >= 0) {
      v = list[pick(0, s)];
      if (v < 0) v = double(hi > lo ? pick(lo, hi) : hi + 1);
    } else if (r < 0.30) {
      v = lo > 0 && random.uniform() < 0.5 ? double(pick(0, lo)) : double(hi + pick(0, length + 4));
    } else if (r < 0.33) {
      v = random.uniform() < 0.5 ? -1.0 : -3.0;
    }
    list[s] = v;
  }
}

/** The index list (and lengths) of one part for every computed row, into the tensors and the problem. */
void writeList(OpCase& c, const SmlaSuiteCase& sc, const SmlaListCase& l, bool cmp, SmlaSuiteProblem& sp,
               SplitMix64& random) {
  if (l.k == 0) return;
  golden::SparseFlashMlaProblem& p = sp.problem;
  const std::string key = cmp ? "cmpSparseIndices" : "oriSparseIndices";
  std::vector<double> values(at(sc.tokens * l.k), 0.0), lengths(at(sc.tokens), 0.0);
  const bool explicitList = l.kind.is_array();
  const std::vector<int64_t> given = explicitList ? l.kind.get<std::vector<int64_t>>() : std::vector<int64_t>{};
  const std::vector<int64_t> givenLengths =
      l.lengths.is_array() ? l.lengths.get<std::vector<int64_t>>() : std::vector<int64_t>{};
  if (explicitList && static_cast<int64_t>(given.size()) != p.qRows() * l.k)
    throw HarnessError("'" + std::string(cmp ? "cmp" : "ori") + "_indices' needs K entries per computed row");
  if (l.lengths.is_array() && static_cast<int64_t>(givenLengths.size()) != p.qRows())
    throw HarnessError("'" + std::string(cmp ? "cmp" : "ori") + "_topk_lengths' needs one entry per computed row");
  for (int64_t b = 0, logical = 0; b < p.batchCount(); ++b) {
    for (int64_t i = 0; i < p.batches[at(b)].s1; ++i, ++logical) {
      double* list = values.data() + sp.rows.q[at(logical)] * l.k;
      if (explicitList) {
        for (int64_t s = 0; s < l.k; ++s) list[s] = double(given[at(logical * l.k + s)]);
      } else {
        int64_t lo = 0, hi = golden::smlaCmpThreshold(p, b, i);
        if (!cmp) {
          const golden::SmlaWindow w = golden::smlaOriWindow(p, b, i);
          lo = w.lo, hi = w.hi;
        }
        const int64_t length = cmp ? p.batches[at(b)].cmp : p.batches[at(b)].s2;
        drawList(l.kind.get<std::string>(), l.k, lo, hi, length, random, list);
      }
      const int64_t most = std::min(l.k, maskCount(p, cmp, b, i));
      double& n = lengths[at(sp.rows.q[at(logical)])];
      if (l.lengths.is_array()) n = double(givenLengths[at(logical)]);
      if (l.lengths == "full") n = double(most);
      if (l.lengths == "random") n = double(random.next() % static_cast<uint64_t>(most + 1));
    }
  }
  writeView(c, key, values);
  std::vector<int32_t>& indices = cmp ? p.cmpIndices : p.oriIndices;
  for (int64_t logical = 0; logical < p.qRows(); ++logical)
    for (int64_t s = 0; s < l.k; ++s)
      indices.push_back(static_cast<int32_t>(values[at(sp.rows.q[at(logical)] * l.k + s)]));
  (cmp ? p.cmpTopk : p.oriTopk) = l.k;
  if (l.lengths.is_null()) return;
  writeView(c, cmp ? "cmpTopkLength" : "oriTopkLength", lengths);
  std::vector<int32_t>& counts = cmp ? p.cmpTopkLength : p.oriTopkLength;
  for (int64_t logical = 0; logical < p.qRows(); ++logical)
    counts.push_back(static_cast<int32_t>(lengths[at(sp.rows.q[at(logical)])]));
}

void writeInts(OpCase& c, const SmlaSuiteCase& sc, const std::string& key, const std::vector<int64_t>& values) {
  if (sc.passed.count(key) == 0) return;
  std::vector<double> dense(at(c.spec(key).numel()), 0.0);
  for (size_t i = 0; i < dense.size() && i < values.size(); ++i) dense[i] = double(values[i]);
  writeView(c, key, dense);
}

golden::SmlaSide side(const SmlaSuiteCase& sc, const SmlaKvCase& kv) {
  golden::SmlaSide s;
  s.layout = golden::smlaLayoutOf(sc.layoutKv);
  s.batch = sc.batch;
  s.tokens = sc.paged() ? sc.blockSize : sc.layoutKv == "BSND" ? kv.perBatch : kv.cu.back();
  s.cuSeqlens.assign(kv.cu.begin(), kv.cu.end());
  if (kv.passUsed) s.seqUsed.assign(kv.lens.begin(), kv.lens.end());
  s.blockTable.assign(kv.table.begin(), kv.table.end());
  s.blockTableCols = kv.cols;
  return s;
}

}  // namespace

std::vector<int64_t> SmlaSuiteCase::perToken() const {
  return tndQ() ? std::vector<int64_t>{tokens, 1} : std::vector<int64_t>{batch, s1, 1};
}

SmlaSuiteCase parseSmlaCase(const json& t, uint64_t seed) {
  SmlaSuiteCase sc;
  SplitMix64 random(seed ^ 0x736d6c61ull);
  sc.layoutQ = stringKeyOneOf(t, "layout_q", "TND", {"TND", "BSND"}, " must be \"TND\" or \"BSND\"");
  sc.layoutKv = stringKeyOneOf(t, "layout_kv", sc.layoutQ, {"TND", "BSND", "PA_BBND"}, " must be a KV layout");
  sc.n1 = integerKeyAtLeast(t, "N1", 16, 1);
  sc.d = integerKeyAtLeast(t, "D", 512, 1);
  if (sc.tndQ()) {
    if (!t.contains("q_lens")) throw HarnessError("a TND case needs 'q_lens'");
    sc.qRows = t["q_lens"].get<std::vector<int64_t>>();
    sc.batch = static_cast<int64_t>(sc.qRows.size());
    sc.cuQ = prefixSums(sc.qRows);
    sc.tokens = sc.cuQ.back() + integerKeyAtLeast(t, "extra_q_rows", 0, 0);
  } else {
    sc.batch = integerKeyAtLeast(t, "B", 1, 1);
    sc.s1 = integerKeyAtLeast(t, "S1", 1, 1);
    sc.qRows.assign(at(sc.batch), sc.s1);
    sc.tokens = sc.batch * sc.s1;
  }
  sc.qUsed = perBatch(t, "seqused_q", sc.batch, {});
  sc.blockSize = integerKeyAtLeast(t, "block_size", 128, 1);
  sc.ori = parseKv(t, sc, "ori", random);
  if (!sc.ori.present) throw HarnessError("a case needs 'ori_lens'");
  sc.cmp = parseKv(t, sc, "cmp", random);
  sc.ratio = t.value("cmp_ratio", int64_t{1});
  sc.oriMode = t.value("ori_mask_mode", int64_t{4});
  sc.winLeft = t.value("ori_win_left", sc.oriMode == 4 ? int64_t{127} : int64_t{-1});
  sc.winRight = t.value("ori_win_right", sc.oriMode == 4 ? int64_t{0} : int64_t{-1});
  sc.cmpMode = t.value("cmp_mask_mode", sc.cmp.present ? int64_t{3} : int64_t{0});
  sc.topkValueMode = t.value("topk_value_mode", int64_t{1});
  sc.scale = t.value("scale", 1.0 / std::sqrt(512.0));
  std::vector<int64_t> derived(at(sc.batch), 0);
  for (int64_t b = 0; sc.cmp.present && b < sc.batch; ++b) {
    derived[at(b)] = std::clamp<int64_t>(sc.ori.lens[at(b)] - sc.cmp.lens[at(b)] * sc.ratio, 0, sc.ratio - 1);
  }
  sc.residual = perBatch(t, "residual", sc.batch, derived);
  sc.passResidual = t.value("pass_residual", sc.cmp.present && sc.cmpMode == 3 && sc.ratio != 1);
  for (auto [list, prefix] : {std::pair{&sc.oriList, "ori"}, std::pair{&sc.cmpList, "cmp"}}) {
    list->k = integerKeyAtLeast(t, (std::string(prefix) + "_topk").c_str(), 0, 0);
    list->kind = t.value(std::string(prefix) + "_indices", json("valid"));
    const bool maskNone = (list == &sc.oriList ? sc.oriMode : sc.cmpMode) == 0;  // lengths only go with mask 0
    list->lengths = list->k > 0 && maskNone ? t.value(std::string(prefix) + "_topk_lengths", json("full")) : json();
  }
  sc.returnLse = t.value("return_lse", true);
  sc.lseShape = t.value("lse_shape", std::vector<int64_t>{});
  sc.checkHeads = std::min(sc.n1, integerKeyAtLeast(t, "check_heads", sc.n1, 0));
  sc.expectsRejection = t.value("expect_status", 0) != 0;
  sc.torchCheck = t.value("torch_check", false);

  std::set<std::string>& p = sc.passed;
  p = {"q", "oriKv", "sinks", "metadata", "attnOut"};
  if (sc.cmp.present) p.insert("cmpKv");
  if (sc.oriList.k > 0) p.insert("oriSparseIndices");
  if (sc.cmpList.k > 0) p.insert("cmpSparseIndices");
  if (!sc.oriList.lengths.is_null()) p.insert("oriTopkLength");
  if (!sc.cmpList.lengths.is_null()) p.insert("cmpTopkLength");
  if (sc.paged()) p.insert("oriBlockTable");
  if (sc.paged() && sc.cmp.present) p.insert("cmpBlockTable");
  if (sc.tndQ()) p.insert("cuSeqlensQ");
  if (sc.layoutKv == "TND") p.insert("cuSeqlensOriKv");
  if (sc.layoutKv == "TND" && sc.cmp.present) p.insert("cuSeqlensCmpKv");
  if (!sc.qUsed.empty()) p.insert("sequsedQ");
  if (sc.ori.passUsed) p.insert("sequsedOriKv");
  if (sc.cmp.passUsed) p.insert("sequsedCmpKv");
  if (sc.passResidual) p.insert("cmpResidualKv");
  if (sc.returnLse || !sc.lseShape.empty()) p.insert("softmaxLse");
  for (const std::string& key : t.value("omit", std::vector<std::string>{})) p.erase(key);
  for (const std::string& key : t.value("include", std::vector<std::string>{})) p.insert(key);
  return sc;
}

std::function<TensorDefaults(const CaseInfo&)> smlaDefaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const SmlaSuiteCase sc = parseSmlaCase(info.json, info.seed);
    TensorDefaults t{info.dtype, {1}, info.seed, uniformValues(-2.0, 2.0)};
    const auto kvShape = [&sc](const SmlaKvCase& kv) -> std::vector<int64_t> {
      if (!kv.present) return {1, 1, 1, sc.d};
      if (sc.paged()) return {kv.blocks, sc.blockSize, 1, sc.d};
      if (sc.layoutKv == "BSND") return {sc.batch, kv.perBatch, 1, sc.d};
      return {kv.cu.back(), 1, sc.d};
    };
    const auto ints = [&t](std::vector<int64_t> shape) {
      t.dtype = ACL_INT32;
      t.shape = std::move(shape);
      t.values = uniformValues(0, 0);
    };
    std::vector<int64_t> perToken = sc.perToken();
    if (key == "q" || key == "attnOut") {
      t.shape =
          sc.tndQ() ? std::vector<int64_t>{sc.tokens, sc.n1, sc.d} : std::vector<int64_t>{sc.batch, sc.s1, sc.n1, sc.d};
    } else if (key == "oriKv" || key == "cmpKv") {
      t.shape = kvShape(key == "oriKv" ? sc.ori : sc.cmp);
    } else if (key == "oriSparseIndices" || key == "cmpSparseIndices") {
      perToken.push_back(std::max<int64_t>(1, (key == "oriSparseIndices" ? sc.oriList : sc.cmpList).k));
      ints(perToken);
    } else if (key == "oriTopkLength" || key == "cmpTopkLength") {
      ints(perToken);
    } else if (key == "oriBlockTable" || key == "cmpBlockTable") {
      ints({sc.batch, std::max<int64_t>(1, (key == "oriBlockTable" ? sc.ori : sc.cmp).cols)});
    } else if (key == "cuSeqlensQ" || key == "cuSeqlensOriKv" || key == "cuSeqlensCmpKv") {
      ints({sc.batch + 1});
    } else if (key == "sequsedQ" || key == "sequsedOriKv" || key == "sequsedCmpKv" || key == "cmpResidualKv") {
      ints({sc.batch});
    } else if (key == "sinks") {
      t.dtype = ACL_FLOAT;
      t.shape = {sc.n1};
      t.values = uniformValues(-1.0, 1.0);
    } else if (key == "metadata") {
      ints({1024});
    } else if (key == "softmaxLse") {
      t.dtype = ACL_FLOAT;
      t.shape = !sc.returnLse && !sc.lseShape.empty() ? sc.lseShape
                : sc.tndQ()                           ? std::vector<int64_t>{1, sc.tokens, sc.n1}
                                                      : std::vector<int64_t>{sc.batch, 1, sc.s1, sc.n1};
    } else {
      throw HarnessError("sparse_flash_mla suite: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

OpCall::Peer smlaTorchPeer(const SmlaSuiteCase& sc, const std::string& dtypeText, const std::string& script,
                           const std::vector<std::string>& keys) {
  OpCall::Peer peer;
  peer.script = script;
  for (const std::string& key : keys) {
    if (sc.passed.count(key) != 0) peer.files.push_back({key, key});
  }
  peer.args = {"--dtype",         dtypeText,
               "--layout-q",      sc.layoutQ,
               "--layout-kv",     sc.layoutKv,
               "--scale",         formatNumberAs("%.17g", sc.scale),
               "--cmp-ratio",     std::to_string(sc.ratio),
               "--ori-mask-mode", std::to_string(sc.oriMode),
               "--cmp-mask-mode", std::to_string(sc.cmpMode),
               "--ori-win-left",  std::to_string(sc.winLeft),
               "--ori-win-right", std::to_string(sc.winRight)};
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

aclTensor* smlaTensor(OpCase& c, const SmlaSuiteCase& sc, const std::string& key) {
  return sc.passed.count(key) != 0 ? c.acl(key) : nullptr;
}

std::shared_ptr<const SmlaSuiteProblem> writeSmlaInts(OpCase& c, const SmlaSuiteCase& sc) {
  const json& t = c.json();
  writeInts(c, sc, "cuSeqlensQ", t.value("cu_seqlens_q", sc.cuQ));
  writeInts(c, sc, "cuSeqlensOriKv", t.value("cu_seqlens_ori", sc.ori.cu));
  writeInts(c, sc, "cuSeqlensCmpKv", sc.cmp.cu);
  writeInts(c, sc, "sequsedQ", sc.qUsed);
  writeInts(c, sc, "sequsedOriKv", t.value("seqused_ori", sc.ori.lens));
  writeInts(c, sc, "sequsedCmpKv", sc.cmp.lens);
  writeInts(c, sc, "cmpResidualKv", sc.residual);
  writeInts(c, sc, "oriBlockTable", t.value("ori_block_table", sc.ori.table));
  writeInts(c, sc, "cmpBlockTable", sc.cmp.table);
  if (sc.expectsRejection) return nullptr;

  auto sp = std::make_shared<SmlaSuiteProblem>();
  golden::SmlaSide q;
  q.layout = golden::smlaLayoutOf(sc.layoutQ);
  q.batch = sc.batch;
  q.tokens = sc.tndQ() ? sc.tokens : sc.s1;
  q.cuSeqlens.assign(sc.cuQ.begin(), sc.cuQ.end());
  q.seqUsed.assign(sc.qUsed.begin(), sc.qUsed.end());
  const golden::SmlaSide ori = side(sc, sc.ori), cmp = sc.cmp.present ? side(sc, sc.cmp) : golden::SmlaSide{};
  const std::vector<int32_t> residual =
      sc.passResidual ? std::vector<int32_t>(sc.residual.begin(), sc.residual.end()) : std::vector<int32_t>{};
  sp->rows = golden::smlaLayoutRows(q, ori, sc.cmp.present ? &cmp : nullptr, residual);
  golden::SparseFlashMlaProblem& p = sp->problem;
  p.heads = sc.n1;
  p.dim = sc.d;
  p.batches = sp->rows.batches;
  p.scale = static_cast<float>(sc.scale);
  p.cmpRatio = sc.ratio;
  p.oriMaskMode = sc.oriMode;
  p.oriWinLeft = sc.winLeft;
  p.oriWinRight = sc.winRight;
  p.cmpMaskMode = sc.cmpMode;
  SplitMix64 random(c.info().seed ^ 0x696e646963657321ull);
  writeList(c, sc, sc.oriList, false, *sp, random);
  writeList(c, sc, sc.cmpList, true, *sp, random);
  sp->sees.assign(at(sc.tokens), 0);
  for (int64_t b = 0, logical = 0; b < p.batchCount(); ++b) {
    for (int64_t i = 0; i < p.batches[at(b)].s1; ++i, ++logical) {
      const size_t keys = golden::sparseFlashMlaVisibleKeys(p, b, i).size();
      sp->sees[at(sp->rows.q[at(logical)])] = keys > 0 ? 1 : 0;
      sp->visibleKeys += static_cast<double>(keys);
    }
  }
  return sp;
}

}  // namespace gradkit::cli
