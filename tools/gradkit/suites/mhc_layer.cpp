// The MhcLayer suite: a whole mHC layer's training step with F = identity, cases/mhc_layer.json. One call is the six
// public two-phase calls a bf16 training step makes, both phases of each:
//   forward   aclnnMhcPre (x -> hIn, hPost, hRes logits and the caches) -> aclnnMhcSinkhorn (hRes -> hResDs, saving
//             its steps) -> F = identity (hOut = hIn) -> aclnnMhcPost (x, hResDs, hIn, hPost -> out)
//   backward  aclnnMhcPostBackward (gradOut -> gradXPost, gradHResDs, gradHIn, gradHPost) -> aclnnMhcSinkhornBackward
//             (gradHResDs -> gradHRes) -> aclnnMhcPreBackward (gradXPostOptional = gradXPost -> gradX, gradPhi,
//             gradAlpha, gradBias, gradGamma)
// Each call has its own workspace (kept across calls); all six are enqueued on the default stream and synchronised
// once, as a training step would. The other intermediates are the suite's own tensors, made once per case; the timed
// call is both phases of all six, as the per-op benches time both phases of theirs.
//
// Gate: the double benchmark of out and the five gradients against the same chain of fp64 goldens (golden/mhc_pre,
// mhc_sinkhorn, mhc_post), the naive computation being that chain in plain fp32. Both round the fp32 intermediates
// to fp32 and go on from the ops' own invRms and 16-bit intermediates (hIn, gradXPost, gradHIn), which are gated as
// outputs too (runGolden says why). The bench's work is the six per-op benches' work added up (bytes of each call's
// tensors once, their FLOPs), so the roofline ratio is the chain's; the peer (tools/peers/mhc_layer.py) is the PyTorch
// reference of the same chain with autograd.
//
// Case keys: suites/mhc_suite_common.h's layout, tokens / batch, seq, N, D, gammaOptional, normEps, hcEps (residual
// N*N, caches and gradXPostOptional always given, V1 entry points); "iters" (default 20) and "eps" (default 1e-6):
// the Sinkhorn's; "soc".
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "golden/mhc_post.h"
#include "golden/mhc_pre.h"
#include "golden/mhc_sinkhorn.h"
#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/op_suite.h"
#include "harness/peer.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

using kernels::kSinkhornColumns;

const std::vector<std::string> kInputs = {"x", "phi", "alpha", "bias", "gamma", "gradOut"};
const std::vector<std::string> kOutputs = {"out", "gradX", "gradPhi", "gradAlpha", "gradBias", "gradGamma"};
// The intermediates the goldens take from the ops: case tensors, gated as outputs too (runGolden says why).
const std::vector<std::string> kFromOps = {"invRms", "hIn", "gradXPost", "gradHIn"};

struct LayerCase : MhcCase {
  int64_t iters = 20;
  double eps = 1e-6;
  int64_t normElements() const { return 2 * iters * tokens * streams * kSinkhornColumns; }
  int64_t sumElements() const { return 2 * iters * tokens * kSinkhornColumns; }
};

LayerCase parseLayerCase(const nlohmann::json& json) {
  for (const char* fixed : {"residual", "caches", "gradXPostOptional", "opImplMode"}) {
    if (json.contains(fixed)) throw HarnessError(std::string("mhc_layer: '") + fixed + "' is fixed in a layer case");
  }
  LayerCase l;
  static_cast<MhcCase&>(l) = parseMhcCase(json);
  l.iters = integerKeyAtLeast(json, "iters", 20, 1);
  l.eps = json.value("eps", 1e-6);
  return l;
}

// out and gradOut are shaped as x, with values in [-1, 1]; the rest as the MhcPre pair's tensors of that name.
std::function<TensorDefaults(const CaseInfo&)> layerDefaults(const std::string& key) {
  return mhcDefaults(key == "out" || key == "gradOut" ? "gradXPost" : key);
}

// The six calls' workspaces and the intermediates that are not case tensors (kFromOps are), made once per case and
// zeroed (pages faulted in before timing).
class Chain {
 public:
  Chain(OpCase& c, const LayerCase& l) : c_(c), l_(l) {
    // name -> the MhcPre pair's tensor of that shape and dtype
    const std::vector<std::pair<std::string, std::string>> shaped = {
        {"hPost", "hPost"}, {"hRes", "hRes"},           {"hMix", "hMix"},           {"hPre", "hPre"},
        {"hResDs", "hRes"}, {"gradHPost", "gradHPost"}, {"gradHResDs", "gradHRes"}, {"gradHRes", "gradHRes"}};
    for (const auto& [name, like] : shaped) add(name, mhcDefaults(like)(c.info()));
    add("normOut", TensorDefaults{ACL_FLOAT, {l.normElements()}, 0, {}});
    add("sumOut", TensorDefaults{ACL_FLOAT, {l.sumElements()}, 0, {}});
  }
  ~Chain() {
    for (void* workspace : workspaces_) {
      if (workspace != nullptr) aclrtFree(workspace);
    }
  }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  /** The case's tensor or the chain's of that name; nullptr for gamma when the case has none. */
  aclTensor* acl(const std::string& key) {
    if (key == "gamma" && !l_.gamma) return nullptr;
    const auto found = buffers_.find(key);
    return found != buffers_.end() ? found->second.acl.get() : c_.acl(key);
  }

  /** Bytes of the named tensors' views, each once. */
  double bytes(const std::vector<std::string>& keys) {
    double total = 0;
    for (const std::string& key : keys) {
      const HostTensor& t = tensor(key);
      total += static_cast<double>(t.spec().numel()) * static_cast<double>(t.elementSize());
    }
    return total;
  }

  /** The six two-phase calls on the default stream, then one synchronisation; throws HarnessError on a failure. */
  void run() {
    const auto hcEps = static_cast<float>(l_.hcEps);  // the backward's attribute is a float
    call(0, "aclnnMhcPre", aclnnMhcPre, [&](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPreGetWorkspaceSize(acl("x"), acl("phi"), acl("alpha"), acl("bias"), acl("gamma"), l_.normEps,
                                         l_.hcEps, acl("hIn"), acl("hPost"), acl("hRes"), acl("invRms"), acl("hMix"),
                                         acl("hPre"), size, executor);
    });
    call(1, "aclnnMhcSinkhorn", aclnnMhcSinkhorn, [&](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcSinkhornGetWorkspaceSize(acl("hRes"), static_cast<float>(l_.eps), l_.iters, acl("hResDs"),
                                              acl("normOut"), acl("sumOut"), size, executor);
    });
    call(2, "aclnnMhcPost", aclnnMhcPost, [&](uint64_t* size, aclOpExecutor** executor) {  // hOut = hIn: F = identity
      return aclnnMhcPostGetWorkspaceSize(acl("x"), acl("hResDs"), acl("hIn"), acl("hPost"), acl("out"), size,
                                          executor);
    });
    call(3, "aclnnMhcPostBackward", aclnnMhcPostBackward, [&](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPostBackwardGetWorkspaceSize(acl("gradOut"), acl("x"), acl("hResDs"), acl("hIn"), acl("hPost"),
                                                  acl("gradXPost"), acl("gradHResDs"), acl("gradHIn"), acl("gradHPost"),
                                                  size, executor);
    });
    call(4, "aclnnMhcSinkhornBackward", aclnnMhcSinkhornBackward, [&](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcSinkhornBackwardGetWorkspaceSize(acl("gradHResDs"), acl("normOut"), acl("sumOut"), acl("gradHRes"),
                                                      size, executor);
    });
    call(5, "aclnnMhcPreBackward", aclnnMhcPreBackward, [&](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPreBackwardGetWorkspaceSize(acl("x"), acl("phi"), acl("alpha"), acl("gradHIn"), acl("gradHPost"),
                                                 acl("gradHRes"), acl("invRms"), acl("hMix"), acl("hPre"), acl("hPost"),
                                                 acl("gamma"), acl("gradXPost"), hcEps, acl("gradX"), acl("gradPhi"),
                                                 acl("gradAlpha"), acl("gradBias"), acl("gradGamma"), size, executor);
    });
    const aclError sync = aclrtSynchronizeStream(nullptr);
    if (sync != ACL_SUCCESS) {
      throw HarnessError("mhc_layer: synchronize returned " + std::to_string(sync) + ": " + recentErrorText());
    }
  }

 private:
  struct Buffer {
    std::unique_ptr<HostTensor> tensor;
    AclTensorPtr acl;
  };

  HostTensor& tensor(const std::string& key) {
    const auto found = buffers_.find(key);
    return found != buffers_.end() ? *found->second.tensor : c_.tensor(key);
  }

  void add(const std::string& name, const TensorDefaults& defaults) {
    Buffer& b = buffers_[name];
    b.tensor = std::make_unique<HostTensor>(parseTensorSpec(nlohmann::json(), name, defaults), /*fill=*/false);
    b.tensor->fillBytes(0);
    b.acl = b.tensor->makeAclTensor();
  }

  void call(size_t slot, const std::string& api, const RunCall& run, const PlanCall& plan) {
    const auto fail = [](const std::string& text) {
      const std::string message = text + ": " + recentErrorText();
      aclrtSynchronizeStream(nullptr);  // the calls enqueued before may use their workspaces until then
      throw HarnessError(message);
    };
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus status = plan(&size, &executor);
    if (status != ACLNN_SUCCESS) fail(api + "GetWorkspaceSize returned " + std::to_string(status));
    if (size > capacities_[slot]) {
      if (workspaces_[slot] != nullptr) aclrtFree(workspaces_[slot]);
      workspaces_[slot] = nullptr;
      capacities_[slot] = 0;
      if (aclrtMalloc(&workspaces_[slot], size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        aclDestroyAclOpExecutor(executor);
        fail(api + ": aclrtMalloc of a " + std::to_string(size) + "-byte workspace failed");
      }
      capacities_[slot] = size;
    }
    status = run(workspaces_[slot], size, executor, nullptr);
    if (status != ACLNN_SUCCESS) fail(api + " returned " + std::to_string(status));
  }

  OpCase& c_;
  LayerCase l_;
  std::map<std::string, Buffer> buffers_;
  void* workspaces_[6] = {};
  uint64_t capacities_[6] = {};
};

/** `values` as a tensor of `dtype` holds them: what the chain stores. */
template <class Real>
std::vector<Real> stored(aclDataType dtype, std::vector<Real> values) {
  for (Real& v : values) v = static_cast<Real>(roundToDtype(dtype, static_cast<double>(v)));
  return values;
}

/**
 * The chain's outputs by the goldens in Real (double: the golden, float: the naive computation). The fp32
 * intermediates are the goldens' own, rounded to fp32, but for invRms; there and at the 16-bit ones (hIn, gradXPost,
 * gradHIn) the chain goes on with the op's stored values, gated themselves as their per-op suites gate them:
 * - where an exact 16-bit value lies near a rounding boundary the op and the golden may round it to neighbours, and
 *   that one ulp (2^-8 relative in bf16), carried on through the backward's matmuls and sums, would fail a correct
 *   chain on chance;
 * - MhcPre sums the squares in 8 fp32 partials, which lose 4e-6 of the sum at K = 10240 in every token (RNE of many
 *   positive terms), so invRms is 2e-6 high throughout: within the fp32 floor of its own gate, but gradPhi and
 *   gradGamma sum it coherently over the tokens (RMSE 1.4x the naive chain's at T = 129, D = 2560).
 */
template <class Real>
void runGolden(OpCase& c, const LayerCase& l) {
  const CaseInputs<Real> input(c, kInputs);
  const auto asReal = [](double value) { return static_cast<Real>(static_cast<float>(value)); };  // float attributes
  const golden::MhcSizes sizes{l.tokens, l.streams, l.hidden, l.fusion()};
  const int64_t t = l.tokens, n = l.streams;

  golden::MhcPreInputs<Real> pre;
  pre.sizes = sizes;
  pre.x = input("x");
  pre.phi = input("phi");
  pre.alpha = input("alpha");
  pre.bias = input("bias");
  pre.gamma = l.gamma ? input("gamma") : nullptr;
  pre.normEps = asReal(l.normEps);
  pre.hcEps = asReal(l.hcEps);
  golden::MhcPreOutputs<Real> h = golden::mhcPre(pre);
  storeGolden(c, "hIn", h.hIn);
  storeGolden(c, "invRms", h.invRms);
  const std::vector<Real> hIn = as<Real>(writtenValues(c, "hIn")), hPost = stored(ACL_FLOAT, h.hPost),
                          invRms = as<Real>(writtenValues(c, "invRms")), hMix = stored(ACL_FLOAT, h.hMix),
                          hPre = stored(ACL_FLOAT, h.hPre), hRes = stored(ACL_FLOAT, h.hRes);

  golden::SinkhornSteps<Real> steps = golden::mhcSinkhorn(hRes.data(), t, n, l.iters, asReal(l.eps));
  const std::vector<Real> hResDs = stored(ACL_FLOAT, steps.output);
  steps.norm = stored(ACL_FLOAT, steps.norm);  // normOut and sumOut, as the backward reads them
  steps.sum = stored(ACL_FLOAT, steps.sum);

  golden::MhcPostInputs<Real> post;
  post.tokens = t;
  post.streams = n;
  post.hidden = l.hidden;
  post.x = input("x");
  post.hRes = hResDs.data();
  post.hOut = hIn.data();  // F = identity
  post.hPost = hPost.data();
  storeGolden(c, "out", golden::mhcPost(post));

  const golden::MhcPostGradients<Real> g = golden::mhcPostBackward(post, input("gradOut"));
  storeGolden(c, "gradXPost", g.gradX);
  storeGolden(c, "gradHIn", g.gradHOut);
  const std::vector<Real> gradXPost = as<Real>(writtenValues(c, "gradXPost")),
                          gradHIn = as<Real>(writtenValues(c, "gradHIn")), gradHPost = stored(ACL_FLOAT, g.gradHPost);
  const std::vector<Real> gradHRes =
      stored(ACL_FLOAT, golden::mhcSinkhornBackward(steps, stored(ACL_FLOAT, g.gradHRes).data(), t, n, l.iters));

  golden::MhcPreBackwardInputs<Real> back;
  back.sizes = sizes;
  back.x = input("x");
  back.phi = input("phi");
  back.alpha = input("alpha");
  back.gradHIn = gradHIn.data();
  back.gradHPost = gradHPost.data();
  back.gradHRes = gradHRes.data();
  back.invRms = invRms.data();
  back.hMix = hMix.data();
  back.hPre = hPre.data();
  back.hPost = hPost.data();
  back.gamma = pre.gamma;
  back.gradXPost = gradXPost.data();
  back.hcEps = asReal(l.hcEps);
  const golden::MhcPreBackwardOutputs<Real> grads = golden::mhcPreBackward(back);
  storeGolden(c, "gradX", grads.gradX);
  storeGolden(c, "gradPhi", grads.gradPhi);
  storeGolden(c, "gradAlpha", grads.gradAlpha);
  storeGolden(c, "gradBias", grads.gradBias);
  if (l.gamma) storeGolden(c, "gradGamma", grads.gradGamma);  // else it must keep its bytes
}

/** The six per-op benches' work added up: each call's tensors once (as each suite counts them) and its FLOPs. */
Work layerWork(Chain& chain, const LayerCase& l) {
  std::vector<std::string> preBackward = {"x",         "phi",    "alpha",   "gradHIn",   "gradHPost",
                                          "gradHRes",  "invRms", "hMix",    "hPre",      "hPost",
                                          "gradXPost", "gradX",  "gradPhi", "gradAlpha", "gradBias"};
  if (l.gamma) preBackward.insert(preBackward.end(), {"gamma", "gradGamma"});
  const double bytes = chain.bytes({"x", "phi", "hIn", "hPost", "hRes", "invRms", "hMix", "hPre"}) +  // MhcPre
                       chain.bytes({"hRes", "hResDs", "normOut", "sumOut"}) +                         // MhcSinkhorn
                       chain.bytes({"x", "hResDs", "hIn", "hPost", "out"}) +                          // MhcPost
                       chain.bytes({"gradOut", "x", "hIn", "hPost", "gradXPost", "gradHResDs", "gradHIn", "gradHPost",
                                    "hResDs"}) +  // MhcPostBackward
                       chain.bytes({"gradHResDs", "normOut", "sumOut", "gradHRes"}) +
                       chain.bytes(preBackward);  // the last two
  const double flops = mhcPreFlops(l, false) + mhcSinkhornFlops(l.tokens, l.streams, l.iters, false) +
                       mhcPostFlops(l, false) + mhcPostFlops(l, true) +
                       mhcSinkhornFlops(l.tokens, l.streams, l.iters, true) + mhcPreFlops(l, true);
  return Work{bytes, flops, false};
}

OpCall::Peer layerPeer(const OpCase& c, const LayerCase& l) {
  OpCall::Peer peer;
  peer.script = "mhc_layer.py";
  for (const std::string& key : kInputs) {
    if (key != "gamma" || l.gamma) peer.files.push_back({key, key});
  }
  peer.args = {"--dtype",  c.info().dtypeText,      "--norm-eps", std::to_string(l.normEps),
               "--hc-eps", std::to_string(l.hcEps), "--iters",    std::to_string(l.iters),
               "--eps",    std::to_string(l.eps)};
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

OpDescriptor mhcLayer() {
  OpDescriptor d;
  d.name = "mhc_layer";
  d.api = "aclnnMhcPre + MhcSinkhorn + MhcPost (+ their backwards)";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, layerDefaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, layerDefaults(key)));
  for (const std::string& key : kFromOps) {
    d.tensors.push_back(outputRule(key, layerDefaults(key)));
    d.tensors.back().reportErrors = false;  // the row's max errors are the layer's outputs'
  }
  d.bind = [](OpCase& c) {
    const LayerCase l = parseLayerCase(c.json());
    auto chain = std::make_shared<Chain>(c, l);
    OpCall call;
    call.direct = [chain] { chain->run(); };
    call.golden = [&c, l] { runGolden<double>(c, l); };
    call.naive = [&c, l] { runGolden<float>(c, l); };
    call.work = [chain, l] { return layerWork(*chain, l); };
    call.peer = layerPeer(c, l);
    return call;
  };
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcLayer)
}  // namespace gradkit::cli
