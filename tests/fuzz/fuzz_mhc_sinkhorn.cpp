// libFuzzer target: aclnnMhcSinkhorn and aclnnMhcSinkhornBackward (tests/fuzz/README.md). The first byte picks the
// direction, the next ones T, n (mostly 4 / 6 / 8), numIters (mostly 1..4, sometimes 0 or 101), whether the saved
// tensors are given, of one element or of a wrong size, in-place calls; every tensor then gets a hostile descriptor
// (dtype, shape, strides, offsets, formats, aliasing). The model asserts failure where a rule is broken and
// fuzz::finish checks what any call must keep: no crash, no write outside an output's view, inputs untouched.
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "fuzz_common.h"

namespace {

int64_t pickN(fuzz::Input& in) {
  static constexpr int64_t kNs[] = {4, 6, 8, 4, 6, 8, 5, 1};
  return kNs[in.u8() % 8];
}

int64_t pickIters(fuzz::Input& in) {
  const uint8_t m = in.u8();
  return m < 230 ? 1 + m % 4 : (m % 2 ? 0 : 101);
}

/** The saved tensors' element count: right, one element, or off by one. */
int64_t savedElements(fuzz::Input& in, int64_t right) {
  const uint8_t m = in.u8();
  return m < 200 ? right : (m < 230 ? 1 : right + 1);
}

/** True when the view is a FLOAT [T, n, n] / [B, S, n, n] of a valid n with T tokens (mustFail otherwise). */
bool validMatrices(const aclTensor* t, const fuzz::View& v, int64_t* tokens, int64_t* n) {
  if (t == nullptr || (v.dims.size() != 3 && v.dims.size() != 4) || v.elemSize != 4) return false;
  const size_t rank = v.dims.size();
  *n = v.dims[rank - 1];
  if (v.dims[rank - 2] != *n || (*n != 4 && *n != 6 && *n != 8)) return false;
  *tokens = 1;
  for (size_t i = 0; i + 2 < rank; ++i) *tokens *= v.dims[i];
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;
  const bool backward = in.u8() % 2 == 1;
  const bool bsnd = in.oneIn(3);
  const int64_t tokens = 1 + in.u8() % 12, n = pickN(in), iters = pickIters(in);
  const std::vector<int64_t> matrices =
      bsnd ? std::vector<int64_t>{1, tokens, n, n} : std::vector<int64_t>{tokens, n, n};
  const int64_t normRight = 2 * iters * tokens * n * 8, sumRight = 2 * iters * tokens * 8;

  fuzz::View mainView, outView, normView, sumView;
  aclTensor* main = world.tensor(in, ACL_FLOAT, matrices, &mainView);  // x or gradOutput
  aclTensor* normOut = world.tensor(in, ACL_FLOAT, {savedElements(in, normRight)}, &normView);
  aclTensor* sumOut = world.tensor(in, ACL_FLOAT, {savedElements(in, sumRight)}, &sumView);
  aclTensor* out = nullptr;
  if (in.oneIn(8) && main != nullptr) {  // in place
    out = main;
    outView = mainView;
  } else {
    out = world.tensor(in, ACL_FLOAT, matrices, &outView);
  }

  int64_t decodedTokens = 0, decodedN = 0;
  bool mustFail = !validMatrices(main, mainView, &decodedTokens, &decodedN) || out == nullptr ||
                  outView.dims != mainView.dims || outView.elemSize != 4;
  const bool normAbsent = normOut == nullptr || normView.numel == 1,
             sumAbsent = sumOut == nullptr || sumView.numel == 1;
  std::vector<fuzz::View> outputs;
  if (out != nullptr) outputs.push_back(outView);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  const bool nullSize = nulls == 0xF1, nullExecutor = nulls == 0xF2;
  mustFail = mustFail || nullSize || nullExecutor;
  aclnnStatus status;
  fuzz::RunFn run;
  world.snapshot();
  if (backward) {
    mustFail = mustFail || normOut == nullptr || sumOut == nullptr || normView.elemSize != 4 || sumView.elemSize != 4;
    status = aclnnMhcSinkhornBackwardGetWorkspaceSize(main, normOut, sumOut, out, nullSize ? nullptr : &workspaceSize,
                                                      nullExecutor ? nullptr : &executor);
    run = aclnnMhcSinkhornBackward;
  } else {
    mustFail = mustFail || normAbsent != sumAbsent || iters < 1 || iters > 100 || decodedTokens == 0;
    if (!normAbsent) {
      outputs.push_back(normView);
      mustFail = mustFail || normView.elemSize != 4 || normView.numel != 2 * iters * decodedTokens * decodedN * 8;
    }
    if (!sumAbsent) {
      outputs.push_back(sumView);
      mustFail = mustFail || sumView.elemSize != 4 || sumView.numel != 2 * iters * decodedTokens * 8;
    }
    status = aclnnMhcSinkhornGetWorkspaceSize(main, 1e-6f, iters, out, normOut, sumOut,
                                              nullSize ? nullptr : &workspaceSize, nullExecutor ? nullptr : &executor);
    run = aclnnMhcSinkhorn;
  }
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, mustFail);
  return 0;
}
