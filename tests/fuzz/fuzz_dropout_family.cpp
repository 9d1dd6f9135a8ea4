// libFuzzer target: the eight dropout entry points (tests/fuzz/README.md). The first byte picks the entry point;
// the rest decodes its tensors (data, packed uint8 masks), probabilities, seeds, offsets and shape arrays.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_dropout.h"
#include "aclnnop/aclnn_dropout_backward.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "fuzz_common.h"

namespace {

int64_t numelOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t maskBytes(int64_t numel) { return (numel + 127) / 128 * 16; }

bool rankAbove8(const aclTensor* t, const fuzz::View& v) { return t != nullptr && v.dims.size() > 8; }

bool validProb(double p) { return p >= 0.0 && p <= 1.0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;

  const uint8_t op = in.u8() % 8;
  static constexpr int kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  const int dtype = kDtypes[in.u8() % 3];
  std::vector<int64_t> shape(in.u8() % 5);
  for (int64_t& d : shape) d = in.u8() % 9 + (in.oneIn(8) ? 120 : 0);
  const std::vector<int64_t> maskShape{maskBytes(numelOf(shape))};

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  uint64_t* sizeArg = nulls == 0xF1 ? nullptr : &workspaceSize;
  aclOpExecutor** executorArg = nulls == 0xF2 ? nullptr : &executor;
  bool mustFail = sizeArg == nullptr || executorArg == nullptr;
  std::vector<fuzz::View> outputs;
  aclnnStatus status = ACLNN_SUCCESS;
  fuzz::RunFn run = nullptr;

  switch (op) {
    case 0: {  // aclnnDropout
      fuzz::View vi, vo, vm;
      aclTensor* input = world.tensor(in, dtype, shape, &vi);
      aclTensor* out = world.tensor(in, dtype, shape, &vo);
      aclTensor* maskOut = world.tensor(in, ACL_UINT8, maskShape, &vm);
      const double p = in.prob();
      const bool train = in.u8() & 1;
      const int64_t seed = in.anyInt64(), offset = in.anyInt64();
      mustFail = mustFail || !input || !out || !maskOut || std::isnan(p) || rankAbove8(input, vi);
      world.snapshot();
      status = aclnnDropoutGetWorkspaceSize(input, p, train, seed, offset, out, maskOut, sizeArg, executorArg);
      if (out) outputs.push_back(vo);
      if (maskOut) outputs.push_back(vm);
      run = aclnnDropout;
      break;
    }
    case 1:    // aclnnDropoutGenMask
    case 2:    // aclnnDropoutGenMaskV2
    case 3: {  // aclnnDropoutGenMaskV2Tensor
      std::vector<int64_t> shapeValues;
      aclIntArray* shapeArray = world.intArray(in, shape, &shapeValues);
      fuzz::View vo, vs, vf;
      aclTensor* out = world.tensor(in, ACL_UINT8, maskShape, &vo);
      const double prob = in.prob();
      const int64_t seed = in.anyInt64(), offset = in.anyInt64();
      int probDataType = in.oneIn(4) ? static_cast<int>(in.u32()) : kDtypes[in.u8() % 3];
      aclDataType pdt;
      std::memcpy(&pdt, &probDataType, sizeof pdt);
      mustFail = mustFail || !shapeArray || !out || !validProb(prob);
      if (op != 1 && probDataType != ACL_FLOAT && probDataType != ACL_FLOAT16 && probDataType != ACL_BF16) {
        mustFail = true;
      }
      if (op == 1) {
        world.snapshot();
        status = aclnnDropoutGenMaskGetWorkspaceSize(shapeArray, prob, seed, offset, out, sizeArg, executorArg);
        run = aclnnDropoutGenMask;
      } else if (op == 2) {
        world.snapshot();
        status = aclnnDropoutGenMaskV2GetWorkspaceSize(shapeArray, prob, seed, offset, pdt, out, sizeArg, executorArg);
        run = aclnnDropoutGenMaskV2;
      } else {
        aclTensor* seedTensor = world.tensor(in, ACL_INT64, {1}, &vs);
        aclTensor* offsetTensor = world.tensor(in, ACL_INT64, {1}, &vf);
        mustFail =
            mustFail || !seedTensor || !offsetTensor || rankAbove8(seedTensor, vs) || rankAbove8(offsetTensor, vf);
        world.snapshot();
        status = aclnnDropoutGenMaskV2TensorGetWorkspaceSize(shapeArray, prob, seedTensor, offsetTensor, offset, pdt,
                                                             out, sizeArg, executorArg);
        run = aclnnDropoutGenMaskV2Tensor;
      }
      if (out) outputs.push_back(vo);
      break;
    }
    case 4: {  // aclnnDropoutV3
      fuzz::View vi, vo, vm, vn;
      aclTensor* input = world.tensor(in, dtype, shape, &vi);
      aclTensor* noise = in.oneIn(8) ? world.tensor(in, ACL_INT64, {static_cast<int64_t>(shape.size())}, &vn) : nullptr;
      aclTensor* out = world.tensor(in, dtype, shape, &vo);
      aclTensor* maskOut = world.tensor(in, ACL_UINT8, maskShape, &vm);
      const double p = in.prob();
      const int64_t seed = in.anyInt64();
      const int64_t offset = in.oneIn(2) ? 4 * static_cast<int64_t>(in.u8()) : in.anyInt64();
      mustFail = mustFail || !input || !out || !maskOut || noise != nullptr || !validProb(p) || offset % 4 != 0 ||
                 rankAbove8(input, vi) || rankAbove8(out, vo);
      world.snapshot();
      status = aclnnDropoutV3GetWorkspaceSize(input, noise, p, seed, offset, out, maskOut, sizeArg, executorArg);
      if (out) outputs.push_back(vo);
      if (maskOut) outputs.push_back(vm);
      run = aclnnDropoutV3;
      break;
    }
    default: {  // 5 DoMask, 6 DropoutBackward, 7 V3Grad: (input, mask, double, out)
      fuzz::View vi, vm, vo;
      aclTensor* input = world.tensor(in, dtype, shape, &vi);
      aclTensor* mask = world.tensor(in, ACL_UINT8, maskShape, &vm);
      aclTensor* out = nullptr;
      if (in.oneIn(6) && input != nullptr) {  // in place
        out = input;
        vo = vi;
      } else {
        out = world.tensor(in, dtype, shape, &vo);
      }
      const double value = in.oneIn(3) ? 1.0 / (1.0 - in.u8() / 256.0) : in.prob();
      mustFail = mustFail || !input || !mask || !out || rankAbove8(input, vi);
      world.snapshot();
      if (op == 5) {
        mustFail = mustFail || !validProb(value);
        status = aclnnDropoutDoMaskGetWorkspaceSize(input, mask, value, out, sizeArg, executorArg);
        run = aclnnDropoutDoMask;
      } else if (op == 6) {
        mustFail = mustFail || std::isnan(value);
        status = aclnnDropoutBackwardGetWorkspaceSize(input, mask, value, out, sizeArg, executorArg);
        run = aclnnDropoutBackward;
      } else {
        status = aclnnDropoutV3GradGetWorkspaceSize(input, mask, value, out, sizeArg, executorArg);
        run = aclnnDropoutV3Grad;
      }
      if (out) outputs.push_back(vo);
      break;
    }
  }
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, mustFail);
  return 0;
}
