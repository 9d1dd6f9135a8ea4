// The CompressorGrad suite: cases/compressor_grad.json through aclnnCompressorGrad, judged by the double benchmark
// (DECISIONS.md: matmul ops) against golden/compressor's fp64 backward, with the same formulas in plain fp32 as the
// naive computation. softmaxScore and kv are what a forward would have emitted for the case's x, wkv, wgate: the fp64
// golden forward on them, an APE drawn from the case seed and (where start_pos reaches back) a random state-cache
// history, rounded to fp32; padding rows zero as our forward writes them (or NaN with "padding_rows": "nan", which
// the backward must never read). dCmpKv is random in x's dtype, padding rows included. The upstream two-way
// criterion of spec 6.2 is reported beside the gate (the "extra" column). The bench prints the roofline ratio (FLOPs
// 8*T*coff*D*H: dX's two matmuls and dW's two, on the GEMM peak of x's dtype) and PyTorch's forward + backward time.
// Case keys: suites/compressor_suite_common.h.
#include <limits>
#include <string>
#include <vector>

#include "aclnnop/aclnn_compressor_grad.h"
#include "core/tile_path.h"
#include "golden/compressor.h"
#include "harness/case_values.h"
#include "harness/fill.h"
#include "harness/op_suite.h"
#include "suites/compressor_suite_common.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"x",  "wkv",       "wgate",           "dCmpKv",  "softmaxScore",
                                          "kv", "cuSeqlens", "sequsedOptional", "startPos"};
const std::vector<std::string> kOutputs = {"dX", "dWkv", "dWgate", "dApe"};

// softmaxScore and kv as the forward would have written them for the case's x, wkv and wgate.
void writeForwardContext(OpCase& c, const CompressorCase& cc) {
  const golden::CompressorLayout& l = cc.layout;
  const int64_t channels = cc.channels();
  SplitMix64 random(c.info().seed ^ 0x6170652d67726164ull);
  std::vector<double> ape(static_cast<size_t>(l.cmpRatio * channels));
  for (double& value : ape) value = static_cast<float>(random.uniform() - 0.5);
  const std::vector<double> x = denseValues(c, "x"), wkv = denseValues(c, "wkv"), wgate = denseValues(c, "wgate");
  golden::CompressorInputs<double> in;
  in.layout = l;
  in.x = x.data();
  in.wkv = wkv.data();
  in.wgate = wgate.data();
  in.ape = ape.data();
  in.history = randomHistory(c.info().seed ^ 0x686973746f7279ull, channels);
  golden::CompressorOutputs<double> out = golden::compressor(in);
  if (cc.nanPaddingRows) {
    const std::vector<char> owned = ownedRows(l);
    const size_t block = static_cast<size_t>(l.coff * l.cmpRatio * l.headDim);
    for (size_t row = 0; row < owned.size(); ++row) {
      if (owned[row] != 0) continue;
      std::fill_n(out.softmaxScore.begin() + static_cast<std::ptrdiff_t>(row * block), block,
                  std::numeric_limits<double>::quiet_NaN());
      std::fill_n(out.kv.begin() + static_cast<std::ptrdiff_t>(row * block), block,
                  std::numeric_limits<double>::quiet_NaN());
    }
  }
  writeView(c, "softmaxScore", out.softmaxScore);
  writeView(c, "kv", out.kv);
}

/** The op takes the native-bf16 path (core/tile_path.h): A rounded to bf16 before its GEMMs. */
bool nativeBf16(OpCase& c) {
  return c.spec("x").dtype == ACL_BF16 && chooseTilePath(ACL_BF16, ProductEngine::Gemm).path == TilePath::NativeBf16;
}

template <class Real>
void runGolden(OpCase& c, const CompressorCase& cc, bool roundRouted) {
  const std::vector<Real> x = as<Real>(denseValues(c, "x")), wkv = as<Real>(denseValues(c, "wkv")),
                          wgate = as<Real>(denseValues(c, "wgate")), dCmpKv = as<Real>(denseValues(c, "dCmpKv")),
                          softmaxScore = as<Real>(denseValues(c, "softmaxScore")), kv = as<Real>(denseValues(c, "kv"));
  golden::CompressorGradInputs<Real> in;
  in.layout = cc.layout;
  in.x = x.data();
  in.wkv = wkv.data();
  in.wgate = wgate.data();
  in.dCmpKv = dCmpKv.data();
  in.softmaxScore = softmaxScore.data();
  in.kv = kv.data();
  in.roundRoutedToBf16 = roundRouted;
  const golden::CompressorGradOutputs<Real> out = golden::compressorGrad(in);
  storeGolden(c, "dX", out.dX);
  storeGolden(c, "dWkv", out.dWkv);
  storeGolden(c, "dWgate", out.dWgate);
  storeGolden(c, "dApe", out.dApe);
}

OpDescriptor compressorGrad() {
  OpDescriptor d;
  d.name = "compressor_grad";
  d.api = "aclnnCompressorGrad";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, compressorDefaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, compressorDefaults(key)));
  d.bind = [](OpCase& c) {
    const CompressorCase cc = parseCompressorCase(c.json(), c.info().seed);
    writeIndexTensors(c, cc, /*forward=*/false);
    if (c.json().value("expect_status", 0) == 0) writeForwardContext(c, cc);
    OpCall call;
    call.plan = [&c, cc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnCompressorGradGetWorkspaceSize(
          c.acl("x"), c.acl("wkv"), c.acl("wgate"), c.acl("dCmpKv"), c.acl("softmaxScore"), c.acl("kv"),
          optionalTensor(c, "cuSeqlens", cc.passCuSeqlens), optionalTensor(c, "sequsedOptional", cc.passSeqused),
          optionalTensor(c, "startPos", cc.passStartPos), cc.layout.cmpRatio, cc.layout.coff, c.acl("dX"),
          c.acl("dWkv"), c.acl("dWgate"), c.acl("dApe"), workspaceSize, executor);
    };
    // The naive benchmark runs the op's own chain: on the native-bf16 path it rounds A as the op does (upstream's
    // "two" golden in fp32). The golden stays the unrounded fp64 one.
    call.golden = [&c, cc] { runGolden<double>(c, cc, false); };
    call.naive = [&c, cc] { runGolden<float>(c, cc, nativeBf16(c)); };
    call.report = [&c, cc](VerifyRow& row) {
      const aclDataType io = c.spec("dX").dtype;
      const bool native = nativeBf16(c);
      std::vector<std::vector<unsigned char>> unrounded;  // kept for --dump, which writes the unrounded golden
      if (native) {                                       // upstream's two-way check compares with a rounded-A golden
        for (const std::string& key : kOutputs) unrounded.push_back(c.golden(key));
        runGolden<double>(c, cc, true);
      }
      row.extra = upstreamTwoWay(
          c,
          {{"dX", io, {}, false}, {"dWkv", io, {}, false}, {"dWgate", io, {}, false}, {"dApe", ACL_FLOAT, {}, false}});
      if (native) {
        row.extra += " vs the rounded-A golden";
        for (size_t i = 0; i < kOutputs.size(); ++i) c.golden(kOutputs[i]) = std::move(unrounded[i]);
      }
    };
    call.work = [&c, cc] {
      double bytes = 0.0;
      for (const char* key : {"x", "wkv", "wgate", "dCmpKv", "softmaxScore", "kv"}) {
        bytes += static_cast<double>(c.bytes(key));
      }
      for (const std::string& key : kOutputs) bytes += static_cast<double>(c.bytes(key));
      const double flops = 8.0 * static_cast<double>(cc.tokens()) * static_cast<double>(cc.channels()) *
                           static_cast<double>(cc.layout.hidden);
      return Work{bytes, flops, c.spec("x").dtype == ACL_BF16};
    };
    call.peer = compressorTorchPeer(cc, c.info().dtypeText, /*backward=*/true);
    return call;
  };
  d.run = aclnnCompressorGrad;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(compressorGrad)
}  // namespace gradkit::cli
