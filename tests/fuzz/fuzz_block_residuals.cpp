// libFuzzer target: aclnnBlockAttentionResiduals and aclnnBlockAttentionResidualsGrad (tests/fuzz/README.md). The
// first byte picks the direction, the next ones T (0 .. 5), N (mostly 1 .. 8; sometimes 0, 100, 101, 128, 129), H
// (mostly small; 0, 1, 37, 4096), the dtype, validBlockNum (-1, 0, N or another value), normEps (sometimes 0, NaN,
// negative), needBackward and projWeight's rank; then every tensor gets a hostile descriptor (fuzz_common.h) and an
// output may be an input itself. The target's own model of the rules (docs/block_attention_residuals.md) says when a
// call must fail; fuzz::finish checks what any call must keep: no crash, no write outside an output's view, inputs
// untouched.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_block_attention_residuals.h"
#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "fuzz_common.h"

namespace {

int64_t pickBlocks(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 220) return 1 + m % 8;
  static constexpr int64_t kOthers[] = {0, 100, 101, 128, 129, 2, 3, 4};
  return kOthers[m % 8];
}

int64_t pickHidden(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 200) return 1 + m % 48;
  static constexpr int64_t kOthers[] = {0, 1, 37, 4096, 16, 64, 3, 129};
  return kOthers[m % 8];
}

int pickDtype(fuzz::Input& in) {
  static constexpr int kDtypes[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT};
  return kDtypes[in.u8() % 3];
}

double pickEps(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 230) return 1e-6;
  static constexpr double kOthers[] = {0.0, -1e-6, std::numeric_limits<double>::quiet_NaN(), 1e30};
  return kOthers[m % 4];
}

/** One decoded tensor and whether it is what the model expects (shape and element size). */
struct Call {
  fuzz::World& world;
  fuzz::Input& in;
  std::vector<fuzz::View> views;
  bool mustFail = false;
  bool anyNull = false;

  aclTensor* add(int dtype, const std::vector<int64_t>& shape, size_t elemSize) {
    fuzz::View v;
    aclTensor* t = world.tensor(in, dtype, shape, &v);
    if (t == nullptr) anyNull = true;
    if (t == nullptr || v.dims != shape || v.elemSize != elemSize) mustFail = true;
    views.push_back(v);
    return t;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;
  const bool grad = in.u8() % 2 == 1;
  const int64_t t = in.u8() % 6, n = pickBlocks(in), h = pickHidden(in);
  const int dtype = pickDtype(in);
  const size_t elem = dtype == ACL_FLOAT ? 4 : 2;
  const uint8_t validPick = in.u8() % 4;
  const int64_t validBlockNum = validPick == 0 ? -1 : validPick == 1 ? 0 : validPick == 2 ? n : n + 1;
  Call call{world, in, {}, false, false};
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  const bool nullSize = nulls == 0xF1, nullExecutor = nulls == 0xF2;
  aclnnStatus status;
  fuzz::RunFn run;
  std::vector<fuzz::View> outputs;
  if (!grad) {
    const double eps = pickEps(in);
    const bool needBackward = !in.oneIn(4), flatProj = in.oneIn(2);
    aclTensor* partial = call.add(dtype, {t, h}, elem);
    aclTensor* blocks = call.add(dtype, {t, n, h}, elem);
    aclTensor* proj = call.add(dtype, flatProj ? std::vector<int64_t>{h} : std::vector<int64_t>{1, h}, elem);
    aclTensor* norm = call.add(dtype, {h}, elem);
    aclTensor* hidden = call.add(dtype, {t, h}, elem);
    aclTensor* invNorm = nullptr;
    aclTensor* probs = nullptr;
    if (needBackward) {
      invNorm = call.add(ACL_FLOAT, {t, n + 1}, 4);
      probs = call.add(ACL_FLOAT, {t, n + 1}, 4);
    }
    call.mustFail =
        call.mustFail || n < 1 || n > 100 || h < 1 || (validBlockNum != -1 && validBlockNum != n) || !(eps > 0);
    for (size_t i = 4; i < call.views.size(); ++i) outputs.push_back(call.views[i]);
    world.snapshot();
    status = aclnnBlockAttentionResidualsGetWorkspaceSize(partial, blocks, proj, norm, validBlockNum, eps, needBackward,
                                                          hidden, invNorm, probs, nullSize ? nullptr : &workspaceSize,
                                                          nullExecutor ? nullptr : &executor);
    run = aclnnBlockAttentionResiduals;
  } else {
    aclTensor* partial = call.add(dtype, {t, h}, elem);
    aclTensor* blocks = call.add(dtype, {t, n, h}, elem);
    aclTensor* proj = call.add(dtype, {1, h}, elem);
    aclTensor* norm = call.add(dtype, {h}, elem);
    aclTensor* gradHidden = call.add(dtype, {t, h}, elem);
    aclTensor* invNorm = call.add(ACL_FLOAT, {t, n + 1}, 4);
    aclTensor* probs = call.add(ACL_FLOAT, {t, n + 1}, 4);
    aclTensor* gradPartial = call.add(dtype, {t, h}, elem);
    aclTensor* gradBlocks = call.add(dtype, {t, n, h}, elem);
    aclTensor* gradProj = call.add(dtype, {1, h}, elem);
    aclTensor* gradNorm = call.add(dtype, {h}, elem);
    call.mustFail = call.mustFail || n > 128 || (validBlockNum != -1 && validBlockNum != 0 && validBlockNum != n);
    for (size_t i = 7; i < call.views.size(); ++i) outputs.push_back(call.views[i]);
    world.snapshot();
    status = aclnnBlockAttentionResidualsGradGetWorkspaceSize(
        partial, blocks, proj, norm, gradHidden, invNorm, probs, validBlockNum, gradPartial, gradBlocks, gradProj,
        gradNorm, nullSize ? nullptr : &workspaceSize, nullExecutor ? nullptr : &executor);
    run = aclnnBlockAttentionResidualsGrad;
  }
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, call.mustFail || nullSize || nullExecutor);
  return 0;
}
