// The LightningIndexerV2 suites' shared parts (lightning_indexer_v2_suite.h).
#include "suites/lightning_indexer_v2_suite.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "harness/case_values.h"
#include "harness/compare.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/metrics.h"
#include "harness/view_checks.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr int64_t kDim = 128;

std::vector<int64_t> intList(const json& t, const char* key) {
  std::vector<int64_t> values;
  if (!t.contains(key)) return values;
  if (!t.at(key).is_array()) throw HarnessError(std::string("'") + key + "' must be a list of integers");
  for (const json& v : t.at(key)) values.push_back(v.get<int64_t>());
  return values;
}

// "a" ranks above "b" in the selection order: NaN first, then larger, then +0 above -0.
bool ranksAbove(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && !std::isnan(b);
  if (a != b) return a > b;
  return !std::signbit(a) && std::signbit(b);
}
bool sameRank(double a, double b) { return !ranksAbove(a, b) && !ranksAbove(b, a); }

}  // namespace

std::vector<int64_t> LiV2Case::rowLead() const {
  return tndQ() ? std::vector<int64_t>{tokensQ} : std::vector<int64_t>{batch, s1};
}

std::vector<int64_t> LiV2Case::qShape() const {
  return tndQ() ? std::vector<int64_t>{tokensQ, heads, kDim} : std::vector<int64_t>{batch, s1, heads, kDim};
}

std::vector<int64_t> LiV2Case::kShape() const {
  if (layoutK == "TND") return {tokensK, 1, kDim};
  if (paged()) return {blockNum, blockSize, 1, kDim};
  return {batch, s2, 1, kDim};
}

int64_t LiV2Case::keyRow(int64_t b, int64_t s) const {
  if (layoutK == "TND") return cuK[static_cast<size_t>(b)] + s;
  if (paged()) return blockTable[static_cast<size_t>(b * tableColumns + s / blockSize)] * blockSize + s % blockSize;
  return b * s2 + s;
}

golden::LightningIndexerV2Problem LiV2Case::problem() const {
  golden::LightningIndexerV2Problem p;
  p.heads = heads;
  p.dim = kDim;
  p.topk = topk;
  p.cmpRatio = cmpRatio;
  p.maskMode = maskMode;
  p.rows = queryRows();
  for (int64_t b = 0; b < batch; ++b) {
    golden::LightningIndexerV2Batch x;
    const auto ub = static_cast<size_t>(b);
    x.firstRow = tndQ() ? cuQ[ub] : b * s1;
    const int64_t rows = tndQ() ? cuQ[ub + 1] - cuQ[ub] : s1;
    const int64_t keys = layoutK == "TND" ? cuK[ub + 1] - cuK[ub] : paged() ? tableColumns * blockSize : s2;
    x.usedRows = passSequsedQ ? sequsedQ[ub] : rows;
    x.usedKeys = passSequsedK ? sequsedK[ub] : keys;
    x.residual = passResidual ? residual[ub] : 0;
    p.batches.push_back(x);
  }
  return p;
}

LiV2Case parseLiV2Case(const json& t, uint64_t seed) {
  LiV2Case lc;
  lc.layoutQ = t.value("layout_q", std::string("BSND"));
  lc.layoutK = t.value("layout_k", lc.layoutQ);
  if (lc.layoutQ != "BSND" && lc.layoutQ != "TND") throw HarnessError("'layout_q' must be \"BSND\" or \"TND\"");
  if (lc.layoutK != "BSND" && lc.layoutK != "TND" && lc.layoutK != "PA_BBND") {
    throw HarnessError("'layout_k' must be \"BSND\", \"TND\" or \"PA_BBND\"");
  }
  lc.layoutQText = t.value("layout_q_text", lc.layoutQ);
  lc.layoutKText = t.value("layout_k_text", lc.layoutK);
  lc.heads = t.value("heads", int64_t{8});
  lc.topk = t.value("topk", int64_t{16});
  lc.maskMode = t.value("mask_mode", int64_t{0});
  lc.cmpRatio = t.value("cmp_ratio", int64_t{1});
  lc.returnValue = t.value("return_value", int64_t{1});
  lc.maxSeqlenQ = t.value("max_seqlen_q", int64_t{-1});
  if (lc.tndQ()) {
    lc.cuQ = intList(t, "cu_seqlens_q");
    if (lc.cuQ.empty()) throw HarnessError("TND q needs 'cu_seqlens_q'");
    lc.batch = static_cast<int64_t>(lc.cuQ.size()) - 1;
    lc.tokensQ = t.value("tokens_q", lc.cuQ.back());
  } else {
    lc.batch = t.value("batch", int64_t{1});
    lc.s1 = t.value("s1", int64_t{1});
  }
  lc.sequsedQ = intList(t, "seqused_q");
  lc.sequsedK = intList(t, "seqused_k");
  lc.residual = intList(t, "residual");
  lc.passSequsedQ = !lc.sequsedQ.empty();
  lc.passSequsedK = t.value("pass_seqused_k", !lc.sequsedK.empty());
  lc.passResidual = t.value("pass_residual", !lc.residual.empty());
  if (lc.passResidual && lc.residual.empty())
    lc.residual.assign(static_cast<size_t>(std::max<int64_t>(lc.batch, 0)), 0);
  if (lc.passSequsedK && lc.sequsedK.empty())
    lc.sequsedK.assign(static_cast<size_t>(std::max<int64_t>(lc.batch, 0)), 0);
  SplitMix64 random(seed ^ 0x5ee1u);
  if (lc.layoutK == "TND") {
    lc.cuK = intList(t, "cu_seqlens_k");
    if (lc.cuK.empty()) throw HarnessError("TND k needs 'cu_seqlens_k'");
    lc.tokensK = t.value("tokens_k", lc.cuK.back());
  } else if (lc.paged()) {
    lc.blockSize = t.value("block_size", int64_t{16});
    int64_t longest = 1;
    for (int64_t used : lc.sequsedK) longest = std::max(longest, used);
    lc.tableColumns = t.value("table_columns", (longest + lc.blockSize - 1) / lc.blockSize);
    lc.blockNum = t.value("block_num", lc.batch * lc.tableColumns + 1);
    // A seeded permutation of the blocks, handed out row by row (wrapping if the table has more entries).
    std::vector<int64_t> blocks(static_cast<size_t>(lc.blockNum));
    std::iota(blocks.begin(), blocks.end(), int64_t{0});
    for (size_t i = blocks.size(); i > 1; --i) std::swap(blocks[i - 1], blocks[random.next() % i]);
    for (int64_t e = 0; e < lc.batch * lc.tableColumns; ++e) {
      lc.blockTable.push_back(blocks[static_cast<size_t>(e % lc.blockNum)]);
    }
    if (t.contains("block_table")) lc.blockTable = intList(t, "block_table");
  } else {
    lc.s2 = t.value("s2", int64_t{1});
  }
  lc.passCuQ = t.value("pass_cu_seqlens_q", lc.tndQ());
  lc.passCuK = t.value("pass_cu_seqlens_k", lc.layoutK == "TND");
  lc.passTable = t.value("pass_block_table", lc.paged());
  lc.passMetadata = t.value("pass_metadata", true);
  if (t.contains("offsets")) {
    lc.passOffsets = true;
    if (t.at("offsets").is_string()) {
      if (t.at("offsets").get<std::string>() != "random") throw HarnessError("'offsets' must be \"random\" or a list");
      for (int64_t r = 0; r < lc.queryRows(); ++r) lc.offsets.push_back(static_cast<int64_t>(random.next() % 1001));
    } else {
      lc.offsets = intList(t, "offsets");
    }
  }
  return lc;
}

std::function<TensorDefaults(const CaseInfo&)> liv2Defaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const LiV2Case lc = parseLiV2Case(info.json, info.seed);
    TensorDefaults t{ACL_INT32, {}, info.seed, uniformValues(0.0, 0.0)};
    const std::vector<int64_t> lead = lc.rowLead();
    const auto withTail = [&lead](std::initializer_list<int64_t> tail) {
      std::vector<int64_t> shape = lead;
      shape.insert(shape.end(), tail);
      return shape;
    };
    const int64_t batch = std::max<int64_t>(lc.batch, 1);
    if (key == "q" || key == "k") {
      t.dtype = info.dtype;
      t.shape = key == "q" ? lc.qShape() : lc.kShape();
      t.values = uniformValues(-1.0, 1.0);
    } else if (key == "w") {
      t.dtype = ACL_FLOAT;
      t.shape = withTail({lc.heads});
      t.values = uniformValues(-1.0, 1.0);
    } else if (key == "cuSeqlensQ" || key == "cuSeqlensK") {
      const auto& cu = key == "cuSeqlensQ" ? lc.cuQ : lc.cuK;
      t.shape = {std::max<int64_t>(static_cast<int64_t>(cu.size()), 1)};
    } else if (key == "sequsedQ" || key == "sequsedK" || key == "cmpResidualK") {
      t.shape = {batch};
    } else if (key == "blockTable") {
      t.shape = {batch, std::max<int64_t>(lc.tableColumns, 1)};
    } else if (key == "outputIdxOffset") {
      t.shape = withTail({1});
    } else if (key == "metadata") {
      t.shape = {1024};
    } else if (key == "sparseIndices") {
      t.shape = withTail({1, lc.topk});
    } else if (key == "sparseValues") {
      t.dtype = ACL_FLOAT;
      t.shape = withTail({1, lc.topk});
    } else {
      throw HarnessError("LightningIndexerV2 suite: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

void writeLiV2Ints(OpCase& c, const LiV2Case& lc) {
  writeInts(c, "cuSeqlensQ", lc.cuQ);
  writeInts(c, "cuSeqlensK", lc.cuK);
  writeInts(c, "sequsedQ", lc.sequsedQ);
  writeInts(c, "sequsedK", lc.sequsedK);
  writeInts(c, "cmpResidualK", lc.residual);
  writeInts(c, "blockTable", lc.blockTable);
  writeInts(c, "outputIdxOffset", lc.offsets);
}

namespace {

template <class Real>
std::vector<std::vector<Real>> caseScores(OpCase& c, const LiV2Case& lc, const golden::LightningIndexerV2Problem& p) {
  const std::vector<Real> q = as<Real>(denseValues(c, "q")), k = as<Real>(denseValues(c, "k")),
                          w = as<Real>(denseValues(c, "w"));
  const golden::LightningIndexerV2Keys<Real> keys = [&lc, &k](int64_t b, int64_t s) {
    return k.data() + lc.keyRow(b, s) * kDim;
  };
  return golden::lightningIndexerV2Scores<Real>(p, q.data(), w.data(), keys);
}

}  // namespace

void runLiV2Golden(OpCase& c, const LiV2Case& lc, LiV2Golden& g) {
  g.problem = lc.problem();
  g.scores = caseScores<double>(c, lc, g.problem);
  g.selected.assign(g.scores.size(), {});
  const int64_t rows = lc.queryRows(), k = lc.topk;
  std::vector<double> indices(static_cast<size_t>(rows * k), -1.0);
  std::vector<double> values(static_cast<size_t>(rows * k), -std::numeric_limits<double>::infinity());
  for (int64_t row = 0; row < rows; ++row) {
    const auto r = static_cast<size_t>(row);
    g.selected[r] = golden::lightningIndexerV2Select(g.scores[r], k);
    const int64_t offset = lc.passOffsets ? lc.offsets[r] : 0;
    for (size_t j = 0; j < g.selected[r].size(); ++j) {
      indices[r * static_cast<size_t>(k) + j] = static_cast<double>(g.selected[r][j] + offset);
      values[r * static_cast<size_t>(k) + j] = g.scores[r][static_cast<size_t>(g.selected[r][j])];
    }
  }
  storeGolden(c, "sparseIndices", indices);
  if (lc.returnValue == 1) storeGolden(c, "sparseValues", values);
}

void judgeLiV2(OpCase& c, const LiV2Case& lc, const LiV2Golden& g, VerifyRow& row) {
  const std::vector<std::vector<float>> naive = caseScores<float>(c, lc, g.problem);
  const std::vector<double> indices = writtenValues(c, "sparseIndices");
  const bool withValues = lc.returnValue == 1;
  const std::vector<double> values = withValues ? writtenValues(c, "sparseValues") : std::vector<double>{};
  const int64_t k = lc.topk;
  int64_t slotErrors = 0, setErrors = 0, swaps = 0, orderErrors = 0;
  bool exact = true;
  std::vector<double> ours, golden, bench;
  for (int64_t rowIndex = 0; rowIndex < lc.queryRows(); ++rowIndex) {
    const auto r = static_cast<size_t>(rowIndex);
    const std::vector<double>& gs = g.scores[r];
    const std::vector<int64_t>& sel = g.selected[r];
    const auto count = static_cast<int64_t>(gs.size());
    const int64_t n = std::min(k, count), offset = lc.passOffsets ? lc.offsets[r] : 0;
    std::vector<int64_t> picks;
    for (int64_t j = 0; j < k; ++j) {
      const size_t at = r * static_cast<size_t>(k) + static_cast<size_t>(j);
      const double index = indices[at];
      if (j >= n) {
        if (index != -1.0 || (withValues && values[at] != -std::numeric_limits<double>::infinity())) ++slotErrors;
        continue;
      }
      const double key = index - static_cast<double>(offset);
      if (!(key >= 0.0 && key < static_cast<double>(count))) {
        ++slotErrors;
        continue;
      }
      picks.push_back(static_cast<int64_t>(key));
    }
    if (static_cast<int64_t>(picks.size()) != n) continue;  // counted above
    if (std::set<int64_t>(picks.begin(), picks.end()).size() != picks.size()) ++slotErrors;
    exact = exact && picks == sel;
    if (n == 0) continue;
    // How far fp32 rounding can move a score of this row: the naive computation's largest error.
    double naiveError = 0.0;
    for (int64_t s = 0; s < count; ++s) {
      const double e = std::fabs(static_cast<double>(naive[r][static_cast<size_t>(s)]) - gs[static_cast<size_t>(s)]);
      if (std::isfinite(e)) naiveError = std::max(naiveError, e);
    }
    const double last = gs[static_cast<size_t>(sel.back())];
    const double tolerance = std::max(1e-4 * std::fabs(last), 8.0 * naiveError);
    const std::set<int64_t> mine(picks.begin(), picks.end()), theirs(sel.begin(), sel.end());
    for (const std::set<int64_t>* side : {&mine, &theirs}) {
      const std::set<int64_t>& other = side == &mine ? theirs : mine;
      for (int64_t x : *side) {
        if (other.count(x) != 0) continue;
        if (std::fabs(gs[static_cast<size_t>(x)] - last) <= tolerance) {
          ++swaps;
        } else {
          ++setErrors;
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      const auto s = static_cast<size_t>(picks[static_cast<size_t>(j)]);
      if (j + 1 < n) {
        const auto next = static_cast<size_t>(picks[static_cast<size_t>(j + 1)]);
        if (gs[s] < gs[next] - tolerance) ++orderErrors;
        if (withValues) {
          const double a = values[r * static_cast<size_t>(k) + static_cast<size_t>(j)],
                       b = values[r * static_cast<size_t>(k) + static_cast<size_t>(j + 1)];
          if (ranksAbove(b, a) || (sameRank(a, b) && next < s)) ++orderErrors;
        }
      }
      if (withValues) {
        const double v = values[r * static_cast<size_t>(k) + static_cast<size_t>(j)];
        exact = exact && v == static_cast<double>(static_cast<float>(gs[s]));
        ours.push_back(v);
        golden.push_back(gs[s]);
        bench.push_back(static_cast<double>(naive[r][s]));
        const ElementError e = elementError(v, gs[s]);
        row.maxAbsErr = std::max(row.maxAbsErr, e.abs);
        row.maxRelErr = std::max(row.maxRelErr, e.rel);
      }
    }
  }
  bool passed = slotErrors == 0 && setErrors == 0 && orderErrors == 0;
  if (slotErrors > 0) appendNote(row, std::to_string(slotErrors) + " slots out of place (count, -1/-inf, range)");
  if (setErrors > 0)
    appendNote(row, std::to_string(setErrors) + " selected keys differ from the fp64 top-k beyond rounding");
  if (orderErrors > 0) appendNote(row, std::to_string(orderErrors) + " pairs out of order");
  if (withValues && !ours.empty()) {
    const DoubleBenchmark verdict = doubleBenchmark(ours.data(), bench.data(), golden.data(),
                                                    static_cast<int64_t>(ours.size()), ACL_FLOAT, kLevelL2);
    if (!verdict.passed) {
      passed = false;
      appendNote(row, "sparseValues: " + verdict.reason + " (ours MARE " + formatNumber(verdict.ours.mare) +
                          ", naive MARE " + formatNumber(verdict.naive.mare) + ")");
    }
  }
  if (!withValues) {
    for (OpCase::Entry& e : c.entries()) {
      if (e.rule.key == "sparseValues" && e.tensor->host() != e.before) {
        passed = false;
        appendNote(row, "sparseValues written although returnValue is 0");
      }
    }
  }
  row.passed = passed;
  row.bitExact = exact && passed;
  row.extra = "swaps " + std::to_string(swaps);
}

}  // namespace gradkit::cli
