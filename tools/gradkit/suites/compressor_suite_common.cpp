#include "suites/compressor_suite_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "base/dtype.h"
#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/peer.h"
#include "harness/rows.h"
#include "ops/compressor/compressor_layout.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

// `count` values: the list itself, or {"random": [lo, hi]} drawn uniformly (integers, both ends included).
std::vector<int64_t> drawValues(const json& spec, int64_t count, SplitMix64& random, const char* key) {
  if (spec.is_array()) return spec.get<std::vector<int64_t>>();
  if (!spec.is_object() || !spec.contains("random") || !spec["random"].is_array() || spec["random"].size() != 2) {
    throw HarnessError(std::string("'") + key + "' must be a list or {\"random\": [lo, hi]}");
  }
  const int64_t lo = spec["random"][0].get<int64_t>(), hi = spec["random"][1].get<int64_t>();
  if (hi < lo) throw HarnessError(std::string("'") + key + "': random range [lo, hi] with hi < lo");
  std::vector<int64_t> values(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (int64_t& value : values) value = lo + static_cast<int64_t>(random.next() % static_cast<uint64_t>(hi - lo + 1));
  return values;
}

// The values 1..count in a seeded random order.
std::vector<int64_t> shuffledBlocks(int64_t count, SplitMix64& random) {
  std::vector<int64_t> blocks(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) blocks[static_cast<size_t>(i)] = i + 1;
  for (int64_t i = count - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(random.next() % static_cast<uint64_t>(i + 1));
    std::swap(blocks[static_cast<size_t>(i)], blocks[static_cast<size_t>(j)]);
  }
  return blocks;
}

void parseCache(const json& testCase, SplitMix64& random, CompressorCase& cc) {
  const golden::CompressorLayout& l = cc.layout;
  cc.cacheMode = testCase.value("cache_mode", int64_t{1});
  int64_t maxPosition = 1, maxLength = 1;
  for (int64_t b = 0; b < l.batch; ++b) {
    maxPosition = std::max(maxPosition, l.start(b) + l.length(b));
    maxLength = std::max(maxLength, l.length(b));
  }
  if (cc.cacheMode == 2) {
    cc.blockSize = testCase.value("block_size", std::max<int64_t>(1, l.coff * l.cmpRatio + maxLength - 1));
    if (cc.blockSize < 1) throw HarnessError("'block_size' must be >= 1");
    cc.tableColumns = 1;
    cc.blockNum = testCase.value("block_num", l.batch + 1);
    cc.blockTable = shuffledBlocks(l.batch, random);
  } else {
    cc.blockSize = testCase.value("block_size", int64_t{16});
    if (cc.blockSize < 1) throw HarnessError("'block_size' must be >= 1");
    cc.tableColumns = testCase.value("table_columns", (maxPosition + cc.blockSize - 1) / cc.blockSize);
    cc.blockNum = testCase.value("block_num", 1 + l.batch * cc.tableColumns);
    cc.blockTable = shuffledBlocks(l.batch * cc.tableColumns, random);
    for (const json& entry : testCase.value("zero_table_entries", json::array())) {
      const int64_t b = entry.at(0).get<int64_t>(), column = entry.at(1).get<int64_t>();
      if (b < 0 || b >= l.batch || column < 0 || column >= cc.tableColumns) {
        throw HarnessError("'zero_table_entries': [" + std::to_string(b) + ", " + std::to_string(column) +
                           "] is outside the table");
      }
      cc.blockTable[static_cast<size_t>(b * cc.tableColumns + column)] = 0;
    }
  }
  if (cc.blockNum < 0) throw HarnessError("'block_num' must be >= 0");
  cc.passBlockTable = testCase.value("pass_block_table", true);
  cc.stateCacheStrideDim0 = testCase.value("state_cache_stride_dim0", int64_t{0});
  cc.gradEnabled = testCase.value("grad_enabled", true);
  const std::string intermediates = testCase.value("intermediates", std::string("tensor"));
  if (intermediates != "tensor" && intermediates != "null") {
    throw HarnessError("'intermediates' must be \"tensor\" or \"null\"");
  }
  cc.nullIntermediates = intermediates == "null";
}

// The tolerance row of spec 6.2 for `row`.
struct Tolerance {
  double rtol;
  double atol;
};
Tolerance tolerance(aclDataType row) { return row == ACL_BF16 ? Tolerance{0.0078125, 1e-4} : Tolerance{0.005, 2.5e-5}; }

// numpy.isclose(a, g, rtol, atol, equal_nan=True).
bool isClose(double a, double g, const Tolerance& t) {
  if (std::isnan(a) || std::isnan(g)) return std::isnan(a) && std::isnan(g);
  if (std::isinf(a) || std::isinf(g)) return a == g;
  return std::fabs(a - g) <= t.atol + t.rtol * std::fabs(g);
}

// Spec 6.2's relative error of a failing element: |a - g| / (max(|a|, |g|, 2^-14 / 0.005) + 1e-9 + 1e-9).
double failingRelativeError(double a, double g) {
  const double diff = std::fabs(a - g);
  if (!std::isfinite(diff)) return std::numeric_limits<double>::infinity();
  const double scale = std::max({std::fabs(a), std::fabs(g), 0x1.0p-14 / 0.005});
  return diff / (scale + 1e-9 + 1e-9);
}

std::string percent(double value) {
  std::ostringstream text;
  text.precision(value >= 99.995 && value < 100.0 ? 6 : 4);
  text << value << "%";
  return text.str();
}

}  // namespace

std::vector<int64_t> CompressorCase::xShape() const {
  if (layout.th) return {layout.tokens, layout.hidden};
  return {layout.batch, layout.seqLen, layout.hidden};
}

std::vector<int64_t> CompressorCase::rowsShape(const std::vector<int64_t>& tail) const {
  const int64_t cr = std::max<int64_t>(layout.cmpRatio, 1);  // a rejection case's 0 still gets shapes
  std::vector<int64_t> dims =
      ops::compressorOutputLead(layout.th, layout.batch, layout.th ? layout.tokens : layout.seqLen, cr);
  dims.insert(dims.end(), tail.begin(), tail.end());
  return dims;
}

int64_t CompressorCase::cacheRow(int64_t b, int64_t p) const {
  const int64_t block = cacheMode == 2 ? blockTable[static_cast<size_t>(b)]
                                       : blockTable[static_cast<size_t>(b * tableColumns + p / blockSize)];
  return block * blockSize + p % blockSize;
}

CompressorCase parseCompressorCase(const json& testCase, uint64_t seed) {
  CompressorCase cc;
  golden::CompressorLayout& l = cc.layout;
  SplitMix64 random(seed ^ 0x636f6d7072657373ull);
  const std::string layout = testCase.value("layout", std::string("BSH"));
  if (layout != "BSH" && layout != "TH") throw HarnessError("'layout' must be \"BSH\" or \"TH\"");
  l.th = layout == "TH";
  l.hidden = testCase.value("hidden", int64_t{1024});
  l.headDim = testCase.value("head_dim", int64_t{128});
  l.coff = testCase.value("coff", int64_t{1});
  l.cmpRatio = testCase.value("cmp_ratio", int64_t{4});
  if (l.th) {
    if (testCase.contains("cu_seqlens")) {
      cc.cuSeqlens = testCase["cu_seqlens"].get<std::vector<int64_t>>();
    } else if (testCase.contains("seq_lens")) {
      const std::vector<int64_t> lengths =
          drawValues(testCase["seq_lens"], integerKeyAtLeast(testCase, "batch", 1, 0), random, "seq_lens");
      cc.cuSeqlens = {0};
      for (int64_t length : lengths) cc.cuSeqlens.push_back(cc.cuSeqlens.back() + length);
    } else {
      throw HarnessError("a TH case needs 'cu_seqlens' or 'seq_lens'");
    }
    if (cc.cuSeqlens.empty()) throw HarnessError("'cu_seqlens' needs B + 1 >= 1 values");
    l.batch = static_cast<int64_t>(cc.cuSeqlens.size()) - 1;
    l.tokens = integerKeyAtLeast(
        testCase, "tokens",
        std::max<int64_t>(cc.cuSeqlens.back(), 0) + integerKeyAtLeast(testCase, "extra_tokens", 0, 0), 0);
    l.cuSeqlens = cc.cuSeqlens;
  } else {
    l.batch = integerKeyAtLeast(testCase, "batch", 1, 0);
    l.seqLen = integerKeyAtLeast(testCase, "seq", 1, 0);
    if (testCase.contains("cu_seqlens")) {
      cc.cuSeqlens = testCase["cu_seqlens"].get<std::vector<int64_t>>();
    } else {
      for (int64_t b = 0; b <= l.batch; ++b) cc.cuSeqlens.push_back(b * l.seqLen);
    }
  }
  if (testCase.contains("seqused")) {
    const bool drawn = testCase["seqused"].is_object();
    l.seqused = drawValues(testCase["seqused"], l.batch, random, "seqused");
    for (int64_t b = 0; drawn && b < l.batch; ++b) {
      l.seqused[static_cast<size_t>(b)] = std::clamp<int64_t>(l.seqused[static_cast<size_t>(b)], 0, l.length(b));
    }
    cc.passSeqused = true;
  }
  if (testCase.contains("start_pos")) {
    l.startPos = drawValues(testCase["start_pos"], l.batch, random, "start_pos");
    cc.passStartPos = true;
  }
  cc.passCuSeqlens = testCase.value("pass_cu_seqlens", l.th);
  parseCache(testCase, random, cc);
  const std::string padding = testCase.value("padding_rows", std::string("zero"));
  if (padding != "zero" && padding != "nan") throw HarnessError("'padding_rows' must be \"zero\" or \"nan\"");
  cc.nanPaddingRows = padding == "nan";
  return cc;
}

std::function<TensorDefaults(const CaseInfo&)> compressorDefaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const CompressorCase cc = parseCompressorCase(info.json, info.seed);
    const golden::CompressorLayout& l = cc.layout;
    const int64_t channels = cc.channels(), n = l.coff * l.cmpRatio;
    // Weights with variance 1/H give projections of variance 1/3 from x uniform in [-1, 1]: softmax weights that
    // neither saturate nor flatten.
    const double weightBound = std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(l.hidden, 1)));
    TensorDefaults t{ACL_FLOAT, {}, info.seed, uniformValues(-1.0, 1.0)};
    if (key == "x" || key == "dX") {
      t.dtype = info.dtype;
      t.shape = cc.xShape();
    } else if (key == "wkv" || key == "wgate" || key == "dWkv" || key == "dWgate") {
      t.dtype = info.dtype;
      t.shape = {channels, l.hidden};
      t.values = uniformValues(-weightBound, weightBound);
    } else if (key == "ape" || key == "dApe") {
      t.shape = {l.cmpRatio, channels};
      t.values = uniformValues(-0.5, 0.5);
    } else if (key == "stateCache") {
      t.shape = {cc.blockNum, cc.blockSize, 2 * channels};
    } else if (key == "stateBlockTable") {
      t.dtype = ACL_INT32;
      t.shape = cc.cacheMode == 2 ? std::vector<int64_t>{l.batch} : std::vector<int64_t>{l.batch, cc.tableColumns};
    } else if (key == "cuSeqlens") {
      t.dtype = ACL_INT32;
      t.shape = {static_cast<int64_t>(cc.cuSeqlens.size())};
    } else if (key == "sequsedOptional" || key == "startPos") {
      t.dtype = ACL_INT32;
      t.shape = {l.batch};
    } else if (key == "cmpKv" || key == "dCmpKv") {
      t.dtype = info.dtype;
      t.shape = cc.rowsShape({l.headDim});
    } else if (key == "softmaxScore" || key == "kv") {
      t.shape = cc.rowsShape({n, l.headDim});
    } else {
      throw HarnessError("Compressor suites: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

void writeIndexTensors(OpCase& c, const CompressorCase& cc, bool forward) {
  writeInts(c, "cuSeqlens", cc.cuSeqlens);
  writeInts(c, "sequsedOptional", cc.layout.seqused);
  writeInts(c, "startPos", cc.layout.startPos);
  if (forward) writeInts(c, "stateBlockTable", cc.blockTable);
}

aclTensor* optionalTensor(OpCase& c, const std::string& key, bool passed) { return passed ? c.acl(key) : nullptr; }

golden::CompressorHistory<double> randomHistory(uint64_t seed, int64_t channels) {
  return [seed, channels](int64_t b, int64_t p, double* kvState, double* scoreState) {
    SplitMix64 random(seed ^ (static_cast<uint64_t>(b) * 0x9e3779b97f4a7c15ull) ^
                      (static_cast<uint64_t>(p) * 0xc2b2ae3d27d4eb4full));
    for (int64_t c = 0; c < channels; ++c) {
      kvState[c] = static_cast<float>(2.0 * random.uniform() - 1.0);
      scoreState[c] = static_cast<float>(2.0 * random.uniform() - 1.0);
    }
  };
}

std::vector<char> ownedRows(const golden::CompressorLayout& layout) {
  const std::vector<golden::CompressorRow> map = golden::compressorRowMap(layout);
  std::vector<char> owned(map.size());
  for (size_t i = 0; i < map.size(); ++i) owned[i] = map[i].batch >= 0 ? 1 : 0;
  return owned;
}

std::string upstreamTwoWay(OpCase& c, const std::vector<TwoWayOutput>& outputs) {
  bool allPassed = true;
  double worstPercent = 100.0, worstError = 0.0;
  std::string worstKey;
  int64_t changedOutside = 0;
  for (const TwoWayOutput& output : outputs) {
    const aclDataType dtype = c.spec(output.key).dtype;
    const size_t size = dtypeSize(dtype);
    const std::vector<unsigned char> ours = c.tensor(output.key).dense();
    const std::vector<unsigned char>& golden = c.golden(output.key);
    const auto n = static_cast<int64_t>(ours.size() / size);
    if (golden.size() != ours.size() || (!output.mask.empty() && static_cast<int64_t>(output.mask.size()) != n)) {
      return "6.2 size mismatch in " + output.key;
    }
    const Tolerance t = tolerance(output.row);
    int64_t compared = 0, failed = 0;
    double maxError = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      if (!output.mask.empty() && output.mask[static_cast<size_t>(i)] == 0) {
        const size_t at = static_cast<size_t>(i) * size;
        if (output.exactOutsideMask && std::memcmp(ours.data() + at, golden.data() + at, size) != 0) ++changedOutside;
        continue;
      }
      ++compared;
      const double a = loadAsDouble(dtype, ours.data(), i), g = loadAsDouble(dtype, golden.data(), i);
      if (isClose(a, g, t)) continue;
      ++failed;
      maxError = std::max(maxError, failingRelativeError(a, g));
    }
    const double passPercent =
        compared > 0 ? 100.0 * static_cast<double>(compared - failed) / static_cast<double>(compared) : 100.0;
    allPassed = allPassed && passPercent >= 99.5 && maxError < 10.0;
    if (passPercent < worstPercent) {
      worstPercent = passPercent;
      worstKey = output.key;
    }
    worstError = std::max(worstError, maxError);
  }
  allPassed = allPassed && changedOutside == 0;
  std::string text = std::string("6.2 ") + (allPassed ? "PASS" : "FAIL") + " min " + percent(worstPercent);
  if (!worstKey.empty()) text += " (" + worstKey + ")";
  text += " re " + formatNumber(worstError);
  if (changedOutside > 0) text += ", " + std::to_string(changedOutside) + " untouched elements changed";
  return text;
}

OpCall::Peer compressorTorchPeer(const CompressorCase& cc, const std::string& dtypeText, bool backward) {
  OpCall::Peer peer;
  peer.script = "compressor.py";
  peer.files = {{"x", "x"}, {"wkv", "wkv"}, {"wgate", "wgate"}};
  if (backward) {
    peer.files.push_back({"dCmpKv", "d_cmp_kv"});
  } else {
    peer.files.insert(peer.files.end(),
                      {{"ape", "ape"}, {"stateCache", "state_cache"}, {"stateBlockTable", "block_table"}});
  }
  if (cc.passCuSeqlens) peer.files.push_back({"cuSeqlens", "cu_seqlens"});
  if (cc.passSeqused) peer.files.push_back({"sequsedOptional", "seqused"});
  if (cc.passStartPos) peer.files.push_back({"startPos", "start_pos"});
  peer.args = {"--dtype",      dtypeText,
               "--mode",       backward ? "backward" : "forward",
               "--cmp-ratio",  std::to_string(cc.layout.cmpRatio),
               "--coff",       std::to_string(cc.layout.coff),
               "--cache-mode", std::to_string(cc.cacheMode)};
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

}  // namespace gradkit::cli
