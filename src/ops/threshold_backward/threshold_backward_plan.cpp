#include "ops/threshold_backward/threshold_backward_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor_copy.h"

namespace gradkit::ops {
namespace {

// Elements per parallel chunk: large enough to amortise scheduling, a multiple of 64 so every chunk of a
// dense call starts at the same vector alignment.
constexpr int64_t kChunkElements = int64_t{1} << 16;

// PyTorch's integral scalar types, bool included.
bool isIntegerScalar(aclDataType dtype) { return isIntegerDtype(dtype) || dtype == ACL_BOOL; }

// An integer-typed scalar as a signed value, saturated to int64 (only UINT64 can exceed it).
int64_t integerScalar(const aclScalar& threshold) {
  if (threshold.dtype == ACL_UINT64 && threshold.toDouble() >= 0x1.0p63) return std::numeric_limits<int64_t>::max();
  return threshold.toInt64();
}

void integerRange(aclDataType dtype, int64_t& lo, int64_t& hi) {
  switch (dtype) {
    case ACL_INT8:
      lo = INT8_MIN, hi = INT8_MAX;
      return;
    case ACL_UINT8:
      lo = 0, hi = UINT8_MAX;
      return;
    case ACL_INT32:
      lo = INT32_MIN, hi = INT32_MAX;
      return;
    default:
      lo = INT64_MIN, hi = INT64_MAX;
      return;
  }
}

// The innermost dim of size > 1 (-1 when there is none).
int64_t innermostDim(const aclTensor& tensor) {
  for (int64_t d = tensor.dim() - 1; d >= 0; --d) {
    if (tensor.viewDims[d] > 1) return d;
  }
  return -1;
}

// An input can be read in place when its innermost dim is dense or broadcast (stride 1 or 0).
bool inputNeedsStaging(const aclTensor& tensor) {
  const int64_t d = innermostDim(tensor);
  return d >= 0 && tensor.strides[d] != 0 && tensor.strides[d] != 1;
}

// Out is written in place when its innermost dim is dense and no element is written twice through a 0 stride.
bool outNeedsStaging(const aclTensor& tensor) {
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (tensor.viewDims[d] > 1 && tensor.strides[d] == 0) return true;
  }
  const int64_t d = innermostDim(tensor);
  return d >= 0 && tensor.strides[d] != 1;
}

// The strides of `tensor` (staged: dense in its own shape) over out's dims, right-aligned; 0 where it broadcasts.
std::vector<int64_t> stridesOverOut(const aclTensor& tensor, bool staged, const std::vector<int64_t>& outDims) {
  const std::vector<int64_t> own = staged ? [&] {
    std::vector<int64_t> dense(tensor.viewDims.size(), 1);
    for (int64_t d = tensor.dim() - 2; d >= 0; --d) dense[d] = dense[d + 1] * tensor.viewDims[d + 1];
    return dense;
  }()
                                          : tensor.strides;
  const auto rank = static_cast<int64_t>(outDims.size());
  std::vector<int64_t> strides(outDims.size(), 0);
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t j = k - (rank - tensor.dim());
    if (j >= 0 && tensor.viewDims[j] != 1) strides[k] = own[j];
  }
  return strides;
}

// Byte offsets of row `row` of the iteration space (every dim but the last) for the three operands.
void rowOffsets(const ThresholdBackwardPlan& plan, int64_t row, int64_t size, int64_t& g, int64_t& s, int64_t& o) {
  g = s = o = 0;
  for (auto d = static_cast<int64_t>(plan.dims.size()) - 2; d >= 0; --d) {
    const int64_t index = row % plan.dims[d];
    row /= plan.dims[d];
    g += index * plan.gradStrides[d];
    s += index * plan.selfStrides[d];
    o += index * plan.outStrides[d];
  }
  g *= size, s *= size, o *= size;
}

}  // namespace

kernels::ThresholdValue resolveThreshold(aclDataType dtype, const aclScalar& threshold) {
  kernels::ThresholdValue value;
  const bool integerThreshold = isIntegerScalar(threshold.dtype);
  if (dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_BF16) {
    if (threshold.dtype == ACL_UINT64 && integerScalar(threshold) == std::numeric_limits<int64_t>::max()) {
      value.asFloat = static_cast<float>(threshold.toDouble());  // >= 2^63: exact in double, then RNE
    } else {
      value.asFloat = integerThreshold ? static_cast<float>(integerScalar(threshold))  // RNE, no double step
                                       : static_cast<float>(threshold.toDouble());     // RNE
    }
    return value;
  }
  int64_t lo = 0, hi = 0;
  integerRange(dtype, lo, hi);
  int64_t t = 0;
  if (integerThreshold) {
    t = integerScalar(threshold);
    if (dtype == ACL_UINT8 && t >= -255 && t <= -1) t += 256;  // PyTorch's two's-complement reading
  } else {
    const double d = std::trunc(threshold.toDouble());
    if (std::isnan(d) || d < -0x1.0p63) {
      value.keepAll = true;  // !(self <= NaN); every self lies above
      return value;
    }
    t = d >= 0x1.0p63 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(d);
  }
  if (t < lo) {
    value.keepAll = true;
  } else {
    value.asInt = t > hi ? hi : t;  // above the type: self <= hi always, nothing is kept
  }
  return value;
}

ThresholdBackwardPlan planThresholdBackward(const ThresholdBackwardArgs& args) {
  const aclTensor& gradOutput = *args.gradOutput;
  const aclTensor& self = *args.self;
  const aclTensor& out = *args.out;
  ThresholdBackwardPlan plan;
  plan.threshold = resolveThreshold(out.dtype, *args.threshold);
  plan.gradOutput = StagedTensor::plan(gradOutput, inputNeedsStaging(gradOutput), "gradOutput staging", plan.workspace);
  plan.self = StagedTensor::plan(self, inputNeedsStaging(self), "self staging", plan.workspace);
  plan.out = StagedTensor::plan(out, outNeedsStaging(out), "out staging", plan.workspace);

  const std::vector<int64_t>& outDims = out.viewDims;
  const std::vector<int64_t> g = stridesOverOut(gradOutput, plan.gradOutput.staged(), outDims);
  const std::vector<int64_t> s = stridesOverOut(self, plan.self.staged(), outDims);
  const std::vector<int64_t> o = stridesOverOut(out, plan.out.staged(), outDims);
  // Drop size-1 dims, then merge each dim into the one inside it where every operand allows it.
  for (size_t k = 0; k < outDims.size(); ++k) {
    if (outDims[k] == 1) continue;
    const size_t last = plan.dims.size();
    if (last > 0 && plan.gradStrides[last - 1] == g[k] * outDims[k] &&
        plan.selfStrides[last - 1] == s[k] * outDims[k] && plan.outStrides[last - 1] == o[k] * outDims[k]) {
      plan.dims[last - 1] *= outDims[k];
      plan.gradStrides[last - 1] = g[k], plan.selfStrides[last - 1] = s[k], plan.outStrides[last - 1] = o[k];
      continue;
    }
    plan.dims.push_back(outDims[k]);
    plan.gradStrides.push_back(g[k]);
    plan.selfStrides.push_back(s[k]);
    plan.outStrides.push_back(o[k]);
  }
  if (plan.dims.empty()) plan.dims = {1}, plan.gradStrides = {1}, plan.selfStrides = {1}, plan.outStrides = {1};

  const uint64_t outBytes = static_cast<uint64_t>(out.numel()) * dtypeSize(out.dtype);
  plan.streamStores = !plan.out.staged() && outBytes >= kStreamingStoreBytes;
  plan.kernels = &chooseKernels(kernels::kThresholdBackwardSimdKernels, kernels::kThresholdBackwardScalarKernels);
  return plan;
}

aclnnStatus ThresholdBackwardPlan::run(void* memory) const {
  const void* grad = gradOutput.read(memory);
  const void* features = self.read(memory);
  void* result = out.target(memory);

  const aclDataType dtype = out.view.dtype;
  const auto size = static_cast<int64_t>(dtypeSize(dtype));
  const auto* g = static_cast<const unsigned char*>(grad);
  const auto* s = static_cast<const unsigned char*>(features);
  auto* o = static_cast<unsigned char*>(result);
  const int64_t rowLength = dims.back();
  const int64_t gradStep = gradStrides.back(), selfStep = selfStrides.back();
  parallelFor(out.view.numel(), kChunkElements, [&](int64_t begin, int64_t end) {
    int64_t row = begin / rowLength;
    int64_t column = begin % rowLength;
    for (int64_t at = begin; at < end; ++row, column = 0) {
      const int64_t count = std::min(rowLength - column, end - at);
      int64_t gradByte = 0, selfByte = 0, outByte = 0;
      rowOffsets(*this, row, size, gradByte, selfByte, outByte);
      const unsigned char* gradRow = g + gradByte + column * gradStep * size;
      const unsigned char* selfRow = s + selfByte + column * selfStep * size;
      unsigned char* outRow = o + outByte + column * size;
      kernels->row(dtype, gradRow, gradStep, selfRow, selfStep, outRow, count, threshold, streamStores);
      at += count;
    }
  });

  out.writeBack(memory);
  return ACLNN_SUCCESS;
}

const OpDefinition<ThresholdBackwardArgs, ThresholdBackwardPlan> kThresholdBackward{
    kThresholdBackwardApi, checkThresholdBackward,
    // out is empty exactly when gradOutput or self is (the check holds out to the broadcast shape)
    [](const ThresholdBackwardArgs& args) { return args.out->isEmpty(); }, planThresholdBackward};

}  // namespace gradkit::ops
