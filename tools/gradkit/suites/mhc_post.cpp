// The MhcPost and MhcPostBackward suites: cases/mhc_post.json and cases/mhc_post_backward.json, judged by the double
// benchmark against golden/mhc_post in fp64, the naive computation being the same formulas in plain fp32. The bench
// prints the copy-bandwidth roofline ratio (bytes: every tensor read or written once; FLOPs 2*T*N*D*(N+1) forward,
// 4*T*N*D*(N+1) backward) and PyTorch's time for the reference in the case's dtype (tools/peers/mhc_post.py).
//
// Case keys (besides name, dtype "bf16" | "fp16"): "layout" "TND" (default, "tokens") or "BSND" ("batch", "seq");
// "N", "D"; "plainResidual": false (default) | true (hRes = nullptr: a plain residual, the Ascend950 profile only);
// "soc".
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "golden/mhc_post.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/op_suite.h"
#include "harness/peer.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

struct PostCase {
  MhcCase sizes;  // layout, tokens, N, D (parseMhcCase's keys)
  bool hRes = true;
};

PostCase parsePostCase(const nlohmann::json& json) { return {parseMhcCase(json), !json.value("plainResidual", false)}; }

std::function<TensorDefaults(const CaseInfo&)> postDefaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const PostCase post = parsePostCase(info.json);
    const MhcCase& m = post.sizes;
    TensorDefaults t{ACL_FLOAT, {}, info.seed, uniformValues(-1.0, 1.0)};
    if (key == "x" || key == "out" || key == "gradOutput" || key == "gradX") {
      t.dtype = info.dtype;
      t.shape = m.shape({m.streams, m.hidden});
      if (key == "x") t.values = uniformValues(-2.0, 2.0);
    } else if (key == "hRes" || key == "gradHRes") {
      t.shape = m.shape({m.streams, m.streams});
      if (key == "hRes") t.values = uniformValues(0.0, 2.0 / static_cast<double>(m.streams));
    } else if (key == "hOut" || key == "gradHOut") {
      t.dtype = info.dtype;
      t.shape = m.shape({m.hidden});
    } else if (key == "hPost" || key == "gradHPost") {
      t.shape = m.shape({m.streams});
      if (key == "hPost") t.values = uniformValues(0.0, 2.0);
    } else {
      throw HarnessError("mHC post suites: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

template <class Real>
struct PostValues {
  std::vector<Real> x, hRes, hOut, hPost;
  golden::MhcPostInputs<Real> inputs(const PostCase& post) const {
    golden::MhcPostInputs<Real> in;
    in.tokens = post.sizes.tokens;
    in.streams = post.sizes.streams;
    in.hidden = post.sizes.hidden;
    in.x = x.data();
    in.hRes = post.hRes ? hRes.data() : nullptr;
    in.hOut = hOut.data();
    in.hPost = hPost.data();
    return in;
  }
};

template <class Real>
PostValues<Real> postValues(OpCase& c, const PostCase& post) {
  PostValues<Real> v{
      as<Real>(denseValues(c, "x")), {}, as<Real>(denseValues(c, "hOut")), as<Real>(denseValues(c, "hPost"))};
  if (post.hRes) v.hRes = as<Real>(denseValues(c, "hRes"));
  return v;
}

OpCall::Peer postPeer(const OpCase& c, const PostCase& post, const char* mode) {
  OpCall::Peer peer;
  peer.script = "mhc_post.py";
  peer.files = {{"x", "x"}, {"hOut", "hOut"}, {"hPost", "hPost"}};
  if (post.hRes) peer.files.push_back({"hRes", "hRes"});
  peer.args = {"--dtype", c.info().dtypeText, "--mode", mode};
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

OpDescriptor mhcPost() {
  OpDescriptor d;
  d.name = "mhc_post";
  d.api = "aclnnMhcPost";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const char* key : {"x", "hRes", "hOut", "hPost"}) d.tensors.push_back(inputRule(key, postDefaults(key)));
  d.tensors.push_back(outputRule("out", postDefaults("out")));
  d.bind = [](OpCase& c) {
    const PostCase post = parsePostCase(c.json());
    OpCall call;
    call.plan = [&c, post](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnMhcPostGetWorkspaceSize(c.acl("x"), post.hRes ? c.acl("hRes") : nullptr, c.acl("hOut"),
                                          c.acl("hPost"), c.acl("out"), workspaceSize, executor);
    };
    const auto golden = [&c, post](auto zero) {
      using Real = decltype(zero);
      storeGolden(c, "out", golden::mhcPost(postValues<Real>(c, post).inputs(post)));
    };
    call.golden = [golden] { golden(0.0); };
    call.naive = [golden] { golden(0.0f); };
    call.work = [&c, post] {
      return Work{bytesOf(c, post.hRes ? std::vector<std::string>{"x", "hRes", "hOut", "hPost", "out"}
                                       : std::vector<std::string>{"x", "hOut", "hPost", "out"}),
                  mhcPostFlops(post.sizes, false), false};
    };
    call.peer = postPeer(c, post, "forward");
    return call;
  };
  d.run = aclnnMhcPost;
  return d;
}

OpDescriptor mhcPostBackward() {
  OpDescriptor d;
  d.name = "mhc_post_backward";
  d.api = "aclnnMhcPostBackward";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const char* key : {"gradOutput", "x", "hRes", "hOut", "hPost"}) {
    d.tensors.push_back(inputRule(key, postDefaults(key)));
  }
  for (const char* key : {"gradX", "gradHRes", "gradHOut", "gradHPost"}) {
    d.tensors.push_back(outputRule(key, postDefaults(key)));
  }
  d.bind = [](OpCase& c) {
    const PostCase post = parsePostCase(c.json());
    OpCall call;
    call.plan = [&c, post](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnMhcPostBackwardGetWorkspaceSize(c.acl("gradOutput"), c.acl("x"), post.hRes ? c.acl("hRes") : nullptr,
                                                  c.acl("hOut"), c.acl("hPost"), c.acl("gradX"), c.acl("gradHRes"),
                                                  c.acl("gradHOut"), c.acl("gradHPost"), workspaceSize, executor);
    };
    const auto golden = [&c, post](auto zero) {
      using Real = decltype(zero);
      const PostValues<Real> values = postValues<Real>(c, post);
      const std::vector<Real> gradOutput = as<Real>(denseValues(c, "gradOutput"));
      const golden::MhcPostGradients<Real> grads = golden::mhcPostBackward(values.inputs(post), gradOutput.data());
      storeGolden(c, "gradX", grads.gradX);
      storeGolden(c, "gradHRes", grads.gradHRes);
      storeGolden(c, "gradHOut", grads.gradHOut);
      storeGolden(c, "gradHPost", grads.gradHPost);
    };
    call.golden = [golden] { golden(0.0); };
    call.naive = [golden] { golden(0.0f); };
    call.work = [&c, post] {
      std::vector<std::string> keys = {"gradOutput", "x",        "hOut",     "hPost",
                                       "gradX",      "gradHRes", "gradHOut", "gradHPost"};
      if (post.hRes) keys.push_back("hRes");
      return Work{bytesOf(c, keys), mhcPostFlops(post.sizes, true), false};
    };
    call.peer = postPeer(c, post, "backward");
    return call;
  };
  d.run = aclnnMhcPostBackward;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcPost)
GRADKIT_REGISTER_OP_SUITE(mhcPostBackward)
}  // namespace gradkit::cli
