// libFuzzer target: aclnnMhcPreSinkhorn and aclnnMhcPreSinkhornBackward (tests/fuzz/README.md). The first byte picks
// the direction, the next ones the emulated SoC (mostly Ascend910B, where c may be small; Ascend950 with its c of
// 4096; Ascend910_93), the layout (BSND / TND), the tokens, n (mostly 4), c (mostly 128, sometimes 4096, 64, 0),
// needBackward and the eps values; then every tensor gets a hostile descriptor (fuzz_common.h) and an output may be
// an input itself. The target's own model of the rules (docs/mhc_pre_sinkhorn.md), computed from the descriptors
// aclCreateTensor accepted, says when a call must fail; fuzz::finish checks what any call must keep: no crash, no
// write outside an output's view, inputs untouched.
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "fuzz_common.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace {

using gradkit::rt::Soc;

constexpr int64_t kIters = 20;

Soc pickSoc(fuzz::Input& in) {
  const uint8_t m = in.u8();
  return m < 170 ? Soc::Ascend910B : (m < 230 ? Soc::Ascend950 : Soc::Ascend910_93);
}

int64_t pickStreams(fuzz::Input& in) {
  static constexpr int64_t kNs[] = {4, 4, 4, 4, 4, 2, 8, 9};
  return kNs[in.u8() % 8];
}

int64_t pickHidden(fuzz::Input& in, Soc soc) {
  const uint8_t m = in.u8();
  if (m < 200) return soc == Soc::Ascend950 ? 4096 : 128;
  static constexpr int64_t kOthers[] = {64, 0, 256, 192, 4096, 7168, 1, 100096};
  return kOthers[m % 8];
}

/** One decoded tensor and what the model expects of it. */
struct Arg {
  aclTensor* tensor = nullptr;
  fuzz::View view;
  std::vector<int64_t> shape;
  size_t elemSize = 4;
};

struct Call {
  fuzz::World& world;
  fuzz::Input& in;
  std::vector<Arg> args;
  bool mustFail = false;  // a rule is broken (or a required tensor is null)
  bool anyNull = false;   // a required tensor is null

  aclTensor* add(int dtype, std::vector<int64_t> shape, bool required = true) {
    Arg a;
    a.shape = std::move(shape);
    a.elemSize = dtype == ACL_FLOAT ? 4 : 2;
    a.tensor = world.tensor(in, dtype, a.shape, &a.view);
    if (required && a.tensor == nullptr) anyNull = true;
    if (required && (a.tensor == nullptr || a.view.dims != a.shape || a.view.elemSize != a.elemSize)) mustFail = true;
    args.push_back(a);
    return a.tensor;
  }
  const fuzz::View& view(size_t i) const { return args[i].view; }
};

std::vector<int64_t> withLead(const std::vector<int64_t>& lead, std::vector<int64_t> tail, int64_t steps = 0) {
  std::vector<int64_t> shape;
  if (steps > 0) shape.push_back(steps);
  shape.insert(shape.end(), lead.begin(), lead.end());
  shape.insert(shape.end(), tail.begin(), tail.end());
  return shape;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;
  const bool backward = in.u8() % 2 == 1;
  const Soc soc = pickSoc(in);
  gradkit::rt::setSocOverride(soc);
  const bool tnd = in.oneIn(3);
  const int64_t batch = 1 + in.u8() % 2, seq = in.u8() % 4;  // seq 0: empty tensors
  const int64_t n = pickStreams(in), c = pickHidden(in, soc), f = n * n + 2 * n;
  const std::vector<int64_t> lead = tnd ? std::vector<int64_t>{batch * seq} : std::vector<int64_t>{batch, seq};
  const bool empty = batch * seq == 0 || c == 0 || n == 0;  // the forward's x (its shape is checked before)
  const int dtype = in.oneIn(2) ? ACL_FLOAT16 : ACL_BF16;
  Call call{world, in, {}, false};
  call.mustFail = (tnd && soc != Soc::Ascend950);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  const bool nullSize = nulls == 0xF1, nullExecutor = nulls == 0xF2;
  aclnnStatus status;
  fuzz::RunFn run;
  std::vector<fuzz::View> outputs;
  if (!backward) {
    const bool needBackward = !in.oneIn(4);
    const int64_t hcMult = in.oneIn(16) ? 6 : 4, iters = in.oneIn(16) ? 10 : kIters;
    aclTensor* x = call.add(dtype, withLead(lead, {n, c}));
    aclTensor* phi = call.add(ACL_FLOAT, {f, n * c});
    aclTensor* alpha = call.add(ACL_FLOAT, {3});
    aclTensor* bias = call.add(ACL_FLOAT, {f});
    aclTensor* hin = call.add(dtype, withLead(lead, {c}));
    aclTensor* hPost = call.add(ACL_FLOAT, withLead(lead, {n}));
    aclTensor* hRes = call.add(ACL_FLOAT, withLead(lead, {n * n}));
    aclTensor* hPre = call.add(ACL_FLOAT, withLead(lead, {n}), needBackward);
    aclTensor* mix = call.add(ACL_FLOAT, withLead(lead, {f}), needBackward);
    aclTensor* inv = call.add(ACL_FLOAT, withLead(lead, {1}), needBackward);
    aclTensor* sums = call.add(ACL_FLOAT, withLead(lead, {n}, 2 * iters), needBackward);
    aclTensor* norms = call.add(ACL_FLOAT, withLead(lead, {n, n}, 2 * iters), needBackward);
    const bool wrongC = soc == Soc::Ascend950 ? (c != 4096 && c != 7168) : (c % 128 != 0 || c > 100000);
    call.mustFail = call.mustFail || n != 4 || hcMult != 4 || iters != kIters || (!empty && wrongC);
    for (size_t i = 4; i < (needBackward ? 12u : 7u); ++i) outputs.push_back(call.view(i));
    world.snapshot();
    status = aclnnMhcPreSinkhornGetWorkspaceSize(
        x, phi, alpha, bias, hcMult, iters, 1e-6, 1e-6, needBackward, hin, hPost, hRes, hPre, mix, inv, sums, norms,
        nullSize ? nullptr : &workspaceSize, nullExecutor ? nullptr : &executor);
    run = aclnnMhcPreSinkhorn;
  } else {
    const bool flatRes = in.oneIn(2);
    aclTensor* gHin = call.add(dtype, withLead(lead, {c}));
    aclTensor* gPost = call.add(ACL_FLOAT, withLead(lead, {n}));
    aclTensor* gRes = call.add(ACL_FLOAT, flatRes ? withLead(lead, {n * n}) : withLead(lead, {n, n}));
    aclTensor* x = call.add(dtype, withLead(lead, {n, c}));
    aclTensor* phi = call.add(ACL_FLOAT, {f, n * c});
    aclTensor* alpha = call.add(ACL_FLOAT, {3});
    aclTensor* bias = call.add(ACL_FLOAT, {f});
    aclTensor* hPre = call.add(ACL_FLOAT, withLead(lead, {n}));
    aclTensor* mix = call.add(ACL_FLOAT, withLead(lead, {f}));
    aclTensor* inv = call.add(ACL_FLOAT, withLead(lead, {1}));
    aclTensor* sums = call.add(ACL_FLOAT, withLead(lead, {n}, 2 * kIters));
    aclTensor* norms = call.add(ACL_FLOAT, withLead(lead, {n, n}, 2 * kIters));
    aclTensor* gx = call.add(dtype, withLead(lead, {n, c}));
    aclTensor* gPhi = call.add(ACL_FLOAT, {f, n * c});
    aclTensor* gAlpha = call.add(ACL_FLOAT, {3});
    aclTensor* gBias = call.add(ACL_FLOAT, {f});
    const bool wrongN = soc == Soc::Ascend950 ? (n < 1 || n > 8) : n != 4;
    const bool wrongC = c <= 0 || c >= 100000 || c % 128 != 0;
    // Upstream returns success when one of these inputs is empty, after the null checks and before its other rules.
    bool emptyInput = false;
    for (size_t i : {0, 1, 2, 3, 7, 8, 9, 10, 11})
      emptyInput = emptyInput || (call.args[i].tensor != nullptr && call.view(i).numel == 0);
    call.mustFail = call.anyNull || (!emptyInput && (call.mustFail || wrongN || wrongC));
    for (size_t i = 12; i < 16; ++i) outputs.push_back(call.view(i));
    world.snapshot();
    status = aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
        gHin, gPost, gRes, x, phi, alpha, bias, hPre, mix, inv, sums, norms, 1e-6, gx, gPhi, gAlpha, gBias,
        nullSize ? nullptr : &workspaceSize, nullExecutor ? nullptr : &executor);
    run = aclnnMhcPreSinkhornBackward;
  }
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, call.mustFail || nullSize || nullExecutor);
  return 0;
}
