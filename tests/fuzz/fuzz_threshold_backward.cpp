// libFuzzer target: aclnnThresholdBackward (tests/fuzz/README.md). gradOutput, self and out with hostile
// descriptors (shapes that broadcast or not, strides, offsets, aliasing), a threshold scalar of any dtype.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "aclnnop/aclnn_threshold_backward.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;

  static constexpr int kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32, ACL_INT64};
  const int dtype = kDtypes[in.u8() % (sizeof kDtypes / sizeof kDtypes[0])];
  std::vector<int64_t> shape(in.u8() % 5);
  for (int64_t& d : shape) d = in.u8() % 6;
  // self: the same shape or one that broadcasts to it (leading dims dropped, some dims 1).
  std::vector<int64_t> selfShape = shape;
  if (in.oneIn(3)) {
    const size_t drop = selfShape.empty() ? 0 : in.u8() % (selfShape.size() + 1);
    selfShape.erase(selfShape.begin(), selfShape.begin() + static_cast<std::ptrdiff_t>(drop));
    for (int64_t& d : selfShape) {
      if (in.oneIn(2)) d = 1;
    }
  }
  const bool swap = in.oneIn(4);  // gradOutput is the broadcast one instead

  fuzz::View gradView, selfView, outView;
  aclTensor* gradOutput = world.tensor(in, dtype, swap ? selfShape : shape, &gradView);
  aclTensor* self = world.tensor(in, dtype, swap ? shape : selfShape, &selfView);
  aclScalar* threshold = world.scalar(in, in.oneIn(2) ? ACL_FLOAT : ACL_DOUBLE);
  // out: a new tensor, or exactly gradOutput / self (in place).
  aclTensor* out = nullptr;
  const uint8_t outMode = in.u8();
  if (outMode < 20 && gradOutput != nullptr) {
    out = gradOutput;
    outView = gradView;
  } else if (outMode < 40 && self != nullptr) {
    out = self;
    outView = selfView;
  } else {
    out = world.tensor(in, dtype, shape, &outView);
  }

  bool mustFail = gradOutput == nullptr || self == nullptr || threshold == nullptr || out == nullptr;
  if (gradOutput != nullptr && gradView.dims.size() > 8) mustFail = true;
  if (self != nullptr && selfView.dims.size() > 8) mustFail = true;
  if (out != nullptr && outView.dims.size() > 8) mustFail = true;

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  const bool nullSize = nulls == 0xF1, nullExecutor = nulls == 0xF2;
  mustFail = mustFail || nullSize || nullExecutor;
  world.snapshot();
  const aclnnStatus status = aclnnThresholdBackwardGetWorkspaceSize(
      gradOutput, self, threshold, out, nullSize ? nullptr : &workspaceSize, nullExecutor ? nullptr : &executor);
  std::vector<fuzz::View> outputs;
  if (out != nullptr) outputs.push_back(outView);
  fuzz::finish(world, status, workspaceSize, executor, aclnnThresholdBackward, outputs, mustFail);
  return 0;
}
