// The golden side of a flash attention case (suites/flash_attention_suite.h): golden/flash_attention's problem read
// back from the case's tensors, its forward and backward in double (the golden) and float (the naive computation of
// the double benchmark), and golden/flash_attention_fp8.h's chain for FP8 cases, in canonical order.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "core/tile_path.h"
#include "golden/flash_attention_fp8.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

// The canonical values of `key` on the first `heads` query heads (and their kv heads): with B = 1 they come first.
template <class Real>
std::vector<Real> headValues(OpCase& c, const FaCase& fc, const std::string& key, int64_t heads) {
  std::vector<double> values = canonicalValues(c, fc, key);
  const bool kvSide = key == "key" || key == "value" || key == "keyRope";
  const int64_t all = kvSide ? fc.n2 : fc.n1, kept = kvSide ? std::max<int64_t>(heads / fc.groups(), 1) : heads;
  if (kept < all) values.resize(values.size() / static_cast<size_t>(all) * static_cast<size_t>(kept));
  return as<Real>(values);
}

// The case's inputs on `heads` as the golden reads them (FP8: the quantised values and the de-quant scales, [B][N]
// [blocks]: with B = 1 the first heads' blocks come first).
template <class Real>
struct Inputs {
  std::vector<Real> q, k, v, dy, qRope, kRope;
  std::vector<float> dsQ, dsK, dsV, dsDy;
  Inputs(OpCase& c, const FaCase& fc, int64_t heads, bool backward) {
    const auto read = [&](const char* key) { return headValues<Real>(c, fc, key, heads); };
    q = read("query"), k = read("key"), v = read("value");
    if (backward) dy = read("dy");
    if (fc.dRope > 0) qRope = read("queryRope"), kRope = read("keyRope");
    if (!fc.fp8) return;
    dsQ = as<float>(denseValues(c, "dScaleQ")), dsK = as<float>(denseValues(c, "dScaleK"));
    dsV = as<float>(denseValues(c, "dScaleV")), dsDy = as<float>(denseValues(c, "dScaleDy"));
  }
  golden::FlashAttentionInputs<Real> view() const { return {q.data(), k.data(), v.data(), qRope.data(), kRope.data()}; }
  golden::FlashAttentionFp8Inputs fp8View(OpCase& c) const {
    const bool e5m2 = c.spec("query").dtype == ACL_FLOAT8_E5M2;
    const golden::Fp8Format format = e5m2 ? golden::Fp8Format::E5M2 : golden::Fp8Format::E4M3FN;
    return {format, q.data(), k.data(), v.data(), dsQ.data(), dsK.data(), dsV.data()};
  }
};

// The golden problem, its mask, pse and dropout read from the case's tensors as they were before the run; with
// `heads` > 0 (B = 1, N1 = N2 only) cut to the first `heads` heads.
golden::FlashAttentionProblem goldenProblem(OpCase& c, const FaCase& fc, int64_t heads = 0) {
  golden::FlashAttentionProblem p = faShapeProblem(fc);
  if (heads > 0 && heads < fc.n1) {
    if (fc.b != 1 || fc.n1 != fc.n2) throw HarnessError("check_heads needs B = 1 and N1 = N2");
    p.n1 = p.n2 = heads;
  }
  if (fc.hasMask()) {
    p.hasMask = true;
    p.sparseMode = fc.sparseMode, p.preTokens = fc.preTokens, p.nextTokens = fc.nextTokens, p.prefix = fc.prefix;
    if (fc.mask != "template") {  // bool and uint8: one byte each
      golden::setMaskTensor(p, std::make_shared<std::vector<uint8_t>>(c.dense("attenMask")), c.spec("attenMask").shape);
    }
  }
  if (fc.hasPse()) {
    p.hasPse = true;
    p.pseType = fc.pseType;
    auto values = std::make_shared<std::vector<double>>(denseValues(c, "pse"));
    if (fc.slopes()) {  // [N1] or [B, N1]
      for (int64_t b = 0; b < (fc.pse == "BN" ? fc.b : 1); ++b) {
        for (int64_t n = 0; n < p.n1; ++n) p.slopes.push_back(static_cast<float>((*values)[b * fc.n1 + n]));
      }
    } else {
      golden::setPseTensor(p, values, c.spec("pse").shape, fc.pse == "BNHS" || fc.pse == "1NHS");
    }
    if (!fc.qStartIdx.empty()) p.qStartIdx = fc.qStartIdx[0];
    if (!fc.kvStartIdx.empty()) p.kvStartIdx = fc.kvStartIdx[0];
  }
  if (fc.dropout == "mask") p.dropMask = c.dense("dropMask").data();  // dense() keeps the bytes for the case
  return p;
}

// The naive benchmark follows the path the op runs: on the native-bf16 tile path it multiplies bf16 P and dS too.
template <class Real>
golden::FlashAttentionProblem problemFor(OpCase& c, const FaCase& fc, int64_t heads) {
  golden::FlashAttentionProblem problem = goldenProblem(c, fc, heads);
  problem.bf16ProductOperands = std::is_same_v<Real, float> && c.spec("query").dtype == ACL_BF16 &&
                                chooseTilePath(ACL_BF16).path == TilePath::NativeBf16;
  return problem;
}

template <class Real>
golden::FlashAttentionForwardOutputs<Real> forwardOf(OpCase& c, const FaCase& fc, int64_t heads) {
  return golden::flashAttentionForward<Real>(problemFor<Real>(c, fc, heads), Inputs<Real>(c, fc, heads, false).view());
}

// The backward's attentionIn and statistics as the case's tensors hold them, on `heads`.
template <class Real>
golden::FlashAttentionForwardOutputs<Real> givenForward(OpCase& c, const FaCase& fc, int64_t heads) {
  return {headValues<Real>(c, fc, "attentionIn", heads), headValues<Real>(c, fc, "softmaxMax", heads),
          headValues<Real>(c, fc, "softmaxSum", heads)};
}

template <class Real>
golden::FlashAttentionGradOutputs<Real> backwardOf(OpCase& c, const FaCase& fc, int64_t heads) {
  const Inputs<Real> in(c, fc, heads, true);
  auto given = fc.autoForward ? forwardOf<Real>(c, fc, heads) : givenForward<Real>(c, fc, heads);
  if (fc.autoForward && std::is_same_v<Real, float>) {
    for (Real& value : given.out) value = static_cast<Real>(roundToDtype(c.spec("query").dtype, value));
  }
  return golden::flashAttentionBackward<Real>(
      problemFor<Real>(c, fc, heads),
      {in.view(), in.dy.data(), given.out.data(), given.softmaxMax.data(), given.softmaxSum.data()});
}

template <class Real>
std::vector<FaOutput> forwardOutputs(const FaCase& fc, const golden::FlashAttentionForwardOutputs<Real>& v) {
  return {faOutput(fc, "attentionOut", as<double>(v.out)), faOutput(fc, "softmaxMax", as<double>(v.softmaxMax)),
          faOutput(fc, "softmaxSum", as<double>(v.softmaxSum))};
}

template <class Real>
std::vector<FaOutput> backwardOutputs(const FaCase& fc, const golden::FlashAttentionGradOutputs<Real>& v) {
  std::vector<FaOutput> outputs{faOutput(fc, "dq", as<double>(v.dq)), faOutput(fc, "dk", as<double>(v.dk)),
                                faOutput(fc, "dv", as<double>(v.dv))};
  if (fc.dRope > 0) {
    outputs.insert(outputs.end(),
                   {faOutput(fc, "dqRope", as<double>(v.dqRope)), faOutput(fc, "dkRope", as<double>(v.dkRope))});
  }
  return outputs;
}

}  // namespace

golden::FlashAttentionProblem faShapeProblem(const FaCase& fc) {
  golden::FlashAttentionProblem p;
  p.batch = fc.b;
  p.n1 = std::max<int64_t>(fc.n1, 1), p.n2 = std::max<int64_t>(fc.n2, 1);
  p.d = fc.d, p.dv = fc.dv, p.dRope = fc.dRope;
  p.s1 = fc.seqQ, p.s2 = fc.seqKv;
  p.s2.resize(p.s1.size(), 0);
  p.scale = static_cast<float>(fc.scale), p.keepProb = static_cast<float>(fc.keepProb);
  p.seed = static_cast<uint64_t>(fc.dropSeed), p.offset = static_cast<uint64_t>(fc.dropOffset);
  return p;
}

FaForward faGoldenForward(OpCase& c, const FaCase& fc) {
  if (!fc.fp8) return forwardOf<double>(c, fc, fc.n1);
  const Inputs<float> in(c, fc, fc.n1, false);
  return golden::flashAttentionFp8Forward(goldenProblem(c, fc), in.fp8View(c));
}

FaGrads faGoldenBackward(OpCase& c, const FaCase& fc, int64_t heads) {
  if (!fc.fp8) return backwardOf<double>(c, fc, heads);
  const Inputs<float> in(c, fc, heads, true);
  const FaForward given = fc.autoForward ? faGoldenForward(c, fc) : givenForward<double>(c, fc, heads);
  return golden::flashAttentionFp8Backward(goldenProblem(c, fc, heads),
                                           {in.fp8View(c), in.dy.data(), in.dsDy.data(), given.out.data(),
                                            given.softmaxMax.data(), given.softmaxSum.data()});
}

std::vector<FaOutput> faCheckedOutputs(OpCase& c, const FaCase& fc, bool backward, bool naive) {
  const int64_t heads = fc.checkedHeads();
  if (!backward) {
    return naive ? forwardOutputs(fc, forwardOf<float>(c, fc, heads))
                 : forwardOutputs(fc, forwardOf<double>(c, fc, heads));
  }
  return naive ? backwardOutputs(fc, backwardOf<float>(c, fc, heads))
               : backwardOutputs(fc, faGoldenBackward(c, fc, heads));
}

void writeGoldenForward(OpCase& c, const FaCase& fc, const FaForward& forward) {
  writeCanonical(c, fc, "attentionIn", forward.out);
  writeCanonical(c, fc, "softmaxMax", forward.softmaxMax);
  writeCanonical(c, fc, "softmaxSum", forward.softmaxSum);
}

double faUnmaskedPairs(OpCase& c, const FaCase& fc) {
  const golden::FlashAttentionProblem p = goldenProblem(c, fc);
  const bool perHead = fc.mask == "BNSS";
  double pairs = 0.0;
  for (int64_t b = 0; b < fc.b; ++b) {
    for (int64_t n = 0; n < (perHead ? fc.n1 : 1); ++n) {
      double count = 0.0;
      for (int64_t i = 0; i < p.s1[static_cast<size_t>(b)]; ++i) {
        for (int64_t j = 0; j < p.s2[static_cast<size_t>(b)]; ++j)
          count += golden::flashAttentionMasked(p, b, n, i, j) ? 0 : 1;
      }
      pairs += perHead ? count : count * static_cast<double>(fc.n1);
    }
  }
  return pairs;
}

}  // namespace gradkit::cli
