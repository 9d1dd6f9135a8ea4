#include "suites/flash_attention_seed_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/case_file.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/host_tensor.h"
#include "harness/two_phase.h"
#include "suites/flash_attention_seed_compare.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

/** One operator tensor: its host / device storage and aclTensor (nullptr when absent). */
struct OpTensor {
  std::unique_ptr<HostTensor> host;
  AclTensorPtr acl;
  aclTensor* get() const { return acl.get(); }
};

// A contiguous tensor holding `values` (dense, row-major), or the 0xA5 sentinel when `values` is null (outputs).
OpTensor makeTensor(const std::string& name, aclDataType dtype, const std::vector<int64_t>& shape,
                    const std::vector<double>* values) {
  TensorSpec spec;
  spec.name = name;
  spec.dtype = dtype;
  spec.shape = shape;
  spec.strides = contiguousStrides(shape);
  OpTensor t;
  t.host = std::make_unique<HostTensor>(spec, false);
  if (values == nullptr) {
    t.host->fillBytes(0xA5);
  } else {
    if (static_cast<int64_t>(values->size()) != spec.numel()) throw HarnessError(name + ": value count mismatch");
    for (size_t e = 0; e < values->size(); ++e) storeFromDouble(dtype, t.host->host().data(), e, (*values)[e]);
    t.host->upload();
  }
  t.acl = t.host->makeAclTensor();
  return t;
}

std::vector<double> readDense(HostTensor& tensor) {
  tensor.download();
  std::vector<double> values(static_cast<size_t>(tensor.spec().numel()));
  for (size_t e = 0; e < values.size(); ++e) {
    values[e] = loadAsDouble(tensor.spec().dtype, tensor.host().data(), static_cast<int64_t>(e));
  }
  return values;
}

std::vector<double> fromLayout(const FaCase& fc, const std::vector<double>& dense, bool querySide, int64_t heads,
                               int64_t dim) {
  const std::vector<int64_t> index = canonicalIndex(fc, querySide, heads, dim);
  std::vector<double> values(index.size());
  for (size_t k = 0; k < index.size(); ++k) values[k] = dense[static_cast<size_t>(index[k])];
  return values;
}

struct IntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;

IntArrayPtr intArray(const std::vector<int64_t>& values) {
  IntArrayPtr array(aclCreateIntArray(values.data(), values.size()));
  if (!array) throw HarnessError("aclCreateIntArray failed: " + recentErrorText());
  return array;
}

/** Every tensor and array one mode hands to the operator. */
struct OpTensors {
  OpTensor q, k, v, dy, qRope, kRope, pse, mask;
  OpTensor attentionIn, softmaxMax, softmaxSum;
  OpTensor dScaleQ, dScaleK, dScaleV, dScaleDy, dScaleO;  // FP8 only
  OpTensor dq, dk, dv, dqRope, dkRope;
  IntArrayPtr actualQ, actualKv;
  std::string layout, statsLayout;
};

OpTensors makeTensors(const SeedContext& c) {
  const SeedCase& sc = c.sc;
  const FaCase& fc = c.fc;
  const int64_t dqk = sc.dQk(), dRope = sc.dRope();
  OpTensors t;
  const auto layoutTensor = [&](const char* name, const std::vector<double>* canonical, bool querySide, int64_t heads,
                                int64_t dim, aclDataType dtype) {
    if (canonical == nullptr) return makeTensor(name, dtype, fc.shape(querySide, heads, dim), nullptr);
    const std::vector<double> dense = toLayout(fc, *canonical, querySide, heads, dim);
    return makeTensor(name, dtype, fc.shape(querySide, heads, dim), &dense);
  };
  if (sc.fp8()) {
    // The quantised values (exact in the fp8 format) and the de-quant scales [B][N][blocks] as [B, N, blocks, 1].
    const auto values = [](const golden::Fp8Quantized& x) {
      return std::vector<double>(x.values.begin(), x.values.end());
    };
    const std::vector<double> q = values(c.fp8Q), k = values(c.fp8K), v = values(c.fp8V), dy = values(c.fp8Dy);
    t.q = layoutTensor("query", &q, true, sc.n1, dqk, sc.dtype);
    t.k = layoutTensor("key", &k, false, sc.n2, dqk, sc.dtype);
    t.v = layoutTensor("value", &v, false, sc.n2, sc.dv, sc.dtype);
    t.dy = layoutTensor("dy", &dy, true, sc.n1, sc.dv, sc.dtype);
    const auto scales = [&sc](const char* name, const golden::Fp8Quantized& x, int64_t heads) {
      const std::vector<double> dense(x.dScale.begin(), x.dScale.end());
      const int64_t blocks = static_cast<int64_t>(dense.size()) / (sc.batch * heads);
      return makeTensor(name, ACL_FLOAT, {sc.batch, heads, blocks, 1}, &dense);
    };
    t.dScaleQ = scales("dScaleQ", c.fp8Q, sc.n1);
    t.dScaleK = scales("dScaleK", c.fp8K, sc.n2);
    t.dScaleV = scales("dScaleV", c.fp8V, sc.n2);
    t.dScaleDy = scales("dScaleDy", c.fp8Dy, sc.n1);
    t.dScaleO = scales("dScaleO", c.fp8Q, sc.n1);  // as upstream: dScaleO = dScaleQ (not read)
  } else {
    t.q = layoutTensor("query", &c.q, true, sc.n1, dqk, sc.dtype);
    t.k = layoutTensor("key", &c.k, false, sc.n2, dqk, sc.dtype);
    t.v = layoutTensor("value", &c.v, false, sc.n2, sc.dv, sc.dtype);
    t.dy = layoutTensor("dy", &c.dy, true, sc.n1, sc.dv, sc.dtype);
  }
  if (sc.rope) {
    t.qRope = layoutTensor("queryRope", &c.qRope, true, sc.n1, dRope, sc.dtype);
    t.kRope = layoutTensor("keyRope", &c.kRope, false, sc.n2, dRope, sc.dtype);
    t.dqRope = layoutTensor("dqRope", nullptr, true, sc.n1, dRope, sc.outDtype);
    t.dkRope = layoutTensor("dkRope", nullptr, false, sc.n2, dRope, sc.outDtype);
  }
  if (!c.pse.shape.empty()) t.pse = makeTensor("pse", c.pse.dtype, c.pse.shape, &c.pse.values);
  if (!c.attenMask.shape.empty())
    t.mask = makeTensor("attenMask", c.attenMask.dtype, c.attenMask.shape, &c.attenMask.values);
  t.attentionIn = layoutTensor("attentionIn", nullptr, true, sc.n1, sc.dv, sc.fp8() ? sc.outDtype : sc.dtype);
  t.softmaxMax = makeTensor("softmaxMax", ACL_FLOAT, fc.statsShape(), nullptr);
  t.softmaxSum = makeTensor("softmaxSum", ACL_FLOAT, fc.statsShape(), nullptr);
  t.dq = layoutTensor("dq", nullptr, true, sc.n1, dqk, sc.outDtype);
  t.dk = layoutTensor("dk", nullptr, false, sc.n2, dqk, sc.outDtype);
  t.dv = layoutTensor("dv", nullptr, false, sc.n2, sc.dv, sc.outDtype);
  if (sc.tnd()) {
    t.actualQ = intArray(fc.cumQ);
    t.actualKv = intArray(fc.cumKv);
  }
  t.layout = sc.layout;
  return t;
}

// grad_only: the fp64 golden forward's out and statistics, rounded as the op takes them (io dtype, fp32).
void writeGoldenForward(const SeedContext& c, OpTensors& t) {
  const std::vector<double> out = toLayout(c.fc, c.forward.out, true, c.sc.n1, c.sc.dv);
  const std::vector<double> max = statsToLayout(c.fc, c.forward.softmaxMax);
  const std::vector<double> sum = statsToLayout(c.fc, c.forward.softmaxSum);
  for (const auto& [tensor, values] :
       {std::pair<HostTensor*, const std::vector<double>*>{t.attentionIn.host.get(), &out},
        {t.softmaxMax.host.get(), &max},
        {t.softmaxSum.host.get(), &sum}}) {
    for (size_t e = 0; e < values->size(); ++e)
      storeFromDouble(tensor->spec().dtype, tensor->host().data(), e, (*values)[e]);
    tensor->upload();
  }
}

// auto_grad: our forward (aclnnFlashAttentionScoreV4, the same Philox stream from seed / offset) writes them.
bool runOurForward(const SeedContext& c, OpTensors& t, aclrtStream stream, VerifyRow& row) {
  const SeedCase& sc = c.sc;
  const PlanCall plan = [&t, &sc](uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFlashAttentionScoreV4GetWorkspaceSize(
        t.q.get(), t.k.get(), t.v.get(), t.pse.get(), nullptr, nullptr, t.mask.get(), t.qRope.get(), t.kRope.get(),
        nullptr, nullptr, nullptr, nullptr, nullptr, t.actualQ.get(), t.actualKv.get(), nullptr, nullptr, sc.scale(),
        sc.keepProb, sc.preTokens, sc.nextTokens, sc.n1, t.layout.data(), 0, sc.sparseMode, 0, sc.pseType,
        t.statsLayout.data(), sc.seed, sc.offset, t.softmaxMax.get(), t.softmaxSum.get(), nullptr, t.attentionIn.get(),
        ws, ex);
  };
  if (!runTwoPhase("aclnnFlashAttentionScoreV4", plan, aclnnFlashAttentionScoreV4, stream, 0, {}, row)) return false;
  for (OpTensor* tensor : {&t.attentionIn, &t.softmaxMax, &t.softmaxSum}) tensor->host->download();
  return true;
}

bool runOurBackward(const SeedContext& c, OpTensors& t, aclrtStream stream, VerifyRow& row) {
  const SeedCase& sc = c.sc;
  // outDtype: FP8 outputs FLOAT16 (0) or BFLOAT16 (1); ignored otherwise.
  const int64_t outDtype = sc.fp8() && sc.outDtype == ACL_BF16 ? 1 : 0;
  const PlanCall plan = [&t, &sc, outDtype](uint64_t* ws, aclOpExecutor** ex) {
    return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
        t.q.get(), t.k.get(), t.v.get(), t.dy.get(), t.pse.get(), nullptr, nullptr, t.mask.get(), t.softmaxMax.get(),
        t.softmaxSum.get(), nullptr, t.attentionIn.get(), nullptr, t.qRope.get(), t.kRope.get(), t.dScaleQ.get(),
        t.dScaleK.get(), t.dScaleV.get(), t.dScaleDy.get(), t.dScaleO.get(), nullptr, t.actualQ.get(), t.actualKv.get(),
        nullptr, nullptr, sc.scale(), sc.keepProb, sc.preTokens, sc.nextTokens, sc.n1, t.layout.data(),
        t.statsLayout.data(), 0, sc.sparseMode, sc.pseType, sc.seed, sc.offset, outDtype, t.dq.get(), t.dk.get(),
        t.dv.get(), t.dqRope.get(), t.dkRope.get(), nullptr, nullptr, ws, ex);
  };
  return runTwoPhase("aclnnFlashAttentionScoreGradV4", plan, aclnnFlashAttentionScoreGradV4, stream, 0, {}, row);
}

// The golden as the seed compares it (spec 5.8): padded layouts keep fp32 goldens, TND ones are cast to the dtype.
std::vector<double> comparedGolden(const SeedContext& c, const std::vector<double>& golden) {
  std::vector<double> values(golden.size());
  const aclDataType dtype = c.sc.tnd() ? c.sc.outDtype : ACL_FLOAT;
  for (size_t e = 0; e < golden.size(); ++e) values[e] = roundToDtype(dtype, golden[e]);
  return values;
}

std::string timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f %%", 100.0 * fraction);
  return text;
}

std::string fixed8(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.8f", value);
  return text;
}

// The dropout check a case may carry: the stream's keep bits of row (0, 0, 0) against the expected ones.
bool checkKeepBits(const SeedContext& c, SeedRunLog& log, std::string& note) {
  const std::string& expected = c.sc.expectFirstKeepBits;
  if (expected.empty()) return true;
  const std::string bits = seedFirstKeepBits(c, static_cast<int64_t>(expected.size()));
  const bool same = bits == expected;
  log.line(c.sc.name + " dropout (seed " + std::to_string(c.sc.seed) + ", offset " + std::to_string(c.sc.offset) +
           ", keep " + std::to_string(c.sc.keepProb).substr(0, 4) + "): keep bits of batch 0 head 0 row 0 = " + bits +
           (same ? " (as expected)" : " (expected " + expected + ")"));
  if (!same) note = "the dropout keep bits of the first row differ from expect_first_keep_bits";
  return same;
}

}  // namespace

std::filesystem::path seedRunLogPath(const VerifyContext& context) {
  if (const char* path = std::getenv("GRADKIT_SEED_LOG"); path != nullptr && *path != '\0') return path;
  if (context.dumpDir) return *context.dumpDir / "run_log.txt";
  return std::filesystem::temp_directory_path() / "gradkit_flash_attention_run_log.txt";
}

SeedRunLog::SeedRunLog(const std::filesystem::path& path) : path_(path) {
  std::error_code ignored;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ignored);
  out_.open(path, std::ios::app);
  if (!out_) throw HarnessError("cannot append to the run log " + path.string());
}

void SeedRunLog::line(const std::string& text) {
  out_ << "[" << timestamp() << "] " << text << "\n";
  out_.flush();
}

VerifyRow runSeedCase(SeedContext& c, const std::string& mode, aclrtStream stream, SeedRunLog& log) {
  const SeedCase& sc = c.sc;
  const std::string what = sc.name + " " + mode;
  VerifyRow row;
  row.op = "flash_attention_score_grad";
  row.caseName = "seed_" + sc.name + "_" + mode;
  row.dtype = sc.dtypeText;
  const auto pendingMode = sc.pendingModes.find(mode);
  const std::string pending = !sc.pending.empty()                    ? sc.pending
                              : pendingMode != sc.pendingModes.end() ? pendingMode->second
                                                                     : "";
  if (!pending.empty()) {
    row.skipped = true;  // not run: never counted as passed
    row.extra = "PENDING, not run: " + pending;
    log.line(what + ": PENDING (not run): " + pending);
    return row;
  }
  const std::shared_ptr<void> soc = applyCaseSoc(nlohmann::json{{"soc", "Ascend950"}});
  OpTensors t = makeTensors(c);
  bool ran = false;
  if (mode == "auto_grad") {
    ran = runOurForward(c, t, stream, row) && runOurBackward(c, t, stream, row);
  } else {
    writeGoldenForward(c, t);
    ran = runOurBackward(c, t, stream, row);
  }
  if (!ran) {
    row.passed = false;
    log.line(what + ": FAIL (the operator did not run: " + row.note + ")");
    return row;
  }

  struct Output {
    const char* name;
    OpTensor* tensor;
    const std::vector<double>* golden;
    const std::vector<double>* chain;  // upstream's unrounded chain (informational)
    bool querySide;
    int64_t heads, dim;
  };
  std::vector<Output> outputs;
  // auto_grad also judges our forward's out: the backward's golden took the golden out, rounded.
  if (mode == "auto_grad")
    outputs.push_back({"out", &t.attentionIn, &c.forward.out, &c.forward.out, true, sc.n1, sc.dv});
  outputs.push_back({"dq", &t.dq, &c.grads.dq, &c.chainGrads.dq, true, sc.n1, sc.dQk()});
  outputs.push_back({"dk", &t.dk, &c.grads.dk, &c.chainGrads.dk, false, sc.n2, sc.dQk()});
  outputs.push_back({"dv", &t.dv, &c.grads.dv, &c.chainGrads.dv, false, sc.n2, sc.dv});
  if (sc.rope) {
    outputs.push_back({"dq_rope", &t.dqRope, &c.grads.dqRope, &c.chainGrads.dqRope, true, sc.n1, sc.dRope()});
    outputs.push_back({"dk_rope", &t.dkRope, &c.grads.dkRope, &c.chainGrads.dkRope, false, sc.n2, sc.dRope()});
  }
  bool passed = true;
  double worstRatio = 0.0, worstChainRatio = 0.0;
  std::string worstChainOutput;
  uint64_t digest = 0xcbf29ce484222325ull;
  std::string failing;
  for (const Output& o : outputs) {
    const std::vector<double> ours = fromLayout(c.fc, readDense(*o.tensor->host), o.querySide, o.heads, o.dim);
    for (const unsigned char byte : o.tensor->host->host()) digest = (digest ^ byte) * 0x100000001b3ull;
    const SeedComparison cmp = compareSeedOutput(ours, comparedGolden(c, *o.golden));
    log.line(seedComparisonLine(what + " " + o.name, cmp));
    const SeedComparison chain = compareSeedOutput(ours, comparedGolden(c, *o.chain));
    if (o.chain != o.golden && (worstChainOutput.empty() || chain.ratio() > worstChainRatio)) {
      worstChainRatio = chain.ratio();
      worstChainOutput = o.name;
    }
    passed = passed && cmp.passed();
    if (!cmp.passed()) failing += std::string(failing.empty() ? "" : ", ") + o.name;
    row.maxAbsErr = std::isnan(cmp.diffMax) ? cmp.diffMax : std::max(row.maxAbsErr, cmp.diffMax);
    row.maxRelErr = std::max(row.maxRelErr, cmp.maxRelative);
    worstRatio = std::max(worstRatio, cmp.ratio());
  }
  std::string keepNote;
  passed = checkKeepBits(c, log, keepNote) && passed;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
  row.outputDigest = hex;
  row.passed = passed;
  row.extra = "seed rule: diff_max " + fixed8(row.maxAbsErr) + ", worst over " + percent(worstRatio);
  if (!failing.empty()) row.note = "seed rule broken by " + failing + " (diff_max > 0.1 or over > 0.5 %)";
  if (!keepNote.empty()) row.note += (row.note.empty() ? "" : "; ") + keepNote;
  log.line(what + " against the golden chain without rounding attention_in (not asserted): worst over " +
           percent(worstChainRatio) + " (" + worstChainOutput + ")");
  log.line(what + ": " + (passed ? "PASS" : "FAIL") + " (" + std::to_string(outputs.size()) + " outputs, diff_max " +
           fixed8(row.maxAbsErr) + ", worst over " + percent(worstRatio) + "; limits 0.1 and 0.5 %)");
  return row;
}

std::vector<VerifyRow> runSeedCaseFile(const std::filesystem::path& file, const VerifyContext& context) {
  const CaseFile cases = loadCaseFile(file);
  SeedRunLog log(seedRunLogPath(context));
  std::cout << "flash attention seed cases (" << file.filename().string() << "): run log " << log.path().string()
            << std::endl;
  log.line("seed cases of " + file.string() + ": " + std::to_string(cases.cases.size()) + " cases");
  std::vector<VerifyRow> rows;
  for (const nlohmann::json& testCase : cases.cases) {
    const SeedCase sc = parseSeedCase(testCase);
    std::unique_ptr<SeedContext> c;
    if (sc.pending.empty()) {
      c = std::make_unique<SeedContext>(makeSeedContext(sc));
      runSeedGolden(*c);
    } else {
      c = std::make_unique<SeedContext>();
      c->sc = sc;
      std::cout << "flash attention seed case " << sc.name << " PENDING (not run): " << sc.pending << std::endl;
    }
    for (const std::string& mode : sc.modes) rows.push_back(runSeedCase(*c, mode, context.stream, log));
  }
  return rows;
}

}  // namespace gradkit::cli
