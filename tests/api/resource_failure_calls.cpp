#include "api/resource_failure_calls.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "aclnnop/aclnn_compressor.h"
#include "aclnnop/aclnn_compressor_grad.h"
#include "aclnnop/aclnn_dropout.h"
#include "aclnnop/aclnn_dropout_backward.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "aclnnop/aclnn_threshold_backward.h"

namespace gradkit_test {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  EXPECT_EQ(aclrtMalloc(&data_, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << aclGetRecentErrMsg();
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) {
    EXPECT_EQ(aclrtFree(data_), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
}

std::vector<unsigned char> DeviceBuffer::contents() const {
  const auto* bytes = static_cast<const unsigned char*>(data_);
  return std::vector<unsigned char>(bytes, bytes + bytes_);
}

void OpCall::resetOutputs() {
  for (auto& output : outputs) output->fill(kSentinel);
}

bool OpCall::outputsUntouched() const {
  for (const auto& output : outputs) {
    for (unsigned char byte : output->contents()) {
      if (byte != kSentinel) return false;
    }
  }
  return true;
}

std::vector<unsigned char> OpCall::outputBytes() const {
  std::vector<unsigned char> all;
  for (const auto& output : outputs) {
    const auto bytes = output->contents();
    all.insert(all.end(), bytes.begin(), bytes.end());
  }
  return all;
}

/** Holds `tensor` in `call` (destroyed with it) and returns it. */
aclTensor* keep(OpCall& call, aclTensor* tensor) {
  EXPECT_NE(tensor, nullptr) << aclGetRecentErrMsg();
  call.descriptors.emplace_back(tensor, [](void* t) { aclDestroyTensor(static_cast<aclTensor*>(t)); });
  return tensor;
}

/** A dense tensor of `shape` over its own device buffer, held by `call`; outputs are left to resetOutputs. */
aclTensor* shaped(OpCall& call, aclDataType dtype, size_t elementSize, const std::vector<int64_t>& shape,
                  bool isOutput) {
  const int64_t elements = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  auto& list = isOutput ? call.outputs : call.inputs;
  auto& buffer = list.emplace_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(elements) * elementSize));
  const int64_t storage[1] = {elements};
  return keep(
      call, aclCreateTensor(shape.data(), shape.size(), dtype, nullptr, 0, ACL_FORMAT_ND, storage, 1, buffer->data()));
}

/** The value of element i of an mHC input: `base` plus a small multiple of 1/64 (exact in BF16). */
float mhcValue(int64_t i, float base) { return base + static_cast<float>((i * 7) % 13 - 6) / 64.0f; }

/** A FLOAT input of `shape` holding mhcValue(i, base). */
aclTensor* mhcFloat(OpCall& call, const std::vector<int64_t>& shape, float base) {
  aclTensor* tensor = shaped(call, ACL_FLOAT, sizeof(float), shape, false);
  auto& buffer = call.inputs.back();
  auto* values = static_cast<float*>(buffer->data());
  for (size_t i = 0; i < buffer->size() / sizeof(float); ++i) values[i] = mhcValue(static_cast<int64_t>(i), base);
  return tensor;
}

/** A BF16 input of `shape` holding mhcValue(i, base) (the top half of the exact fp32 value). */
aclTensor* mhcBf16(OpCall& call, const std::vector<int64_t>& shape, float base) {
  aclTensor* tensor = shaped(call, ACL_BF16, sizeof(uint16_t), shape, false);
  auto& buffer = call.inputs.back();
  auto* values = static_cast<uint16_t*>(buffer->data());
  for (size_t i = 0; i < buffer->size() / sizeof(uint16_t); ++i) {
    const float value = mhcValue(static_cast<int64_t>(i), base);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    values[i] = static_cast<uint16_t>(bits >> 16);
  }
  return tensor;
}

aclTensor* mhcFloatOutput(OpCall& call, const std::vector<int64_t>& shape) {
  return shaped(call, ACL_FLOAT, sizeof(float), shape, true);
}

aclTensor* int32Input(OpCall& call, const std::vector<int32_t>& values, std::vector<int64_t> shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  aclTensor* tensor = shaped(call, ACL_INT32, sizeof(int32_t), shape, false);
  std::memcpy(call.inputs.back()->data(), values.data(), values.size() * sizeof(int32_t));
  return tensor;
}

namespace {

// 300 elements: several mask blocks of 128 and a tail. Inputs are read with stride 2 (every other element), so the
// operators that stage a non-contiguous input need a workspace.
constexpr int64_t kElements = 300;
constexpr int64_t kMaskBytes = (kElements + 127) / 128 * 16;

/** A FLOAT input of kElements read with stride 2 from device memory holding 0.0, 0.01, 0.02 ... */
aclTensor* stridedFloatInput(OpCall& call) {
  auto& buffer = call.inputs.emplace_back(std::make_unique<DeviceBuffer>(2 * kElements * sizeof(float)));
  auto* values = static_cast<float*>(buffer->data());
  for (int64_t i = 0; i < 2 * kElements; ++i) values[i] = 0.01f * static_cast<float>(i % 97) - 0.3f;
  const int64_t dims[1] = {kElements}, strides[1] = {2}, storage[1] = {2 * kElements};
  return keep(call, aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, buffer->data()));
}

/** A dense input or output of `dtype` and `elements`; inputs get bytes i * 37 + 11. */
aclTensor* dense(OpCall& call, aclDataType dtype, size_t elementSize, int64_t elements, bool isOutput) {
  auto& list = isOutput ? call.outputs : call.inputs;
  auto& buffer = list.emplace_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(elements) * elementSize));
  if (!isOutput) {
    auto* bytes = static_cast<unsigned char*>(buffer->data());
    for (size_t i = 0; i < buffer->size(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 11);
  }
  const int64_t dims[1] = {elements};
  return keep(call, aclCreateTensor(dims, 1, dtype, nullptr, 0, ACL_FORMAT_ND, dims, 1, buffer->data()));
}

aclTensor* floatOutput(OpCall& call) { return dense(call, ACL_FLOAT, sizeof(float), kElements, true); }
aclTensor* maskOutput(OpCall& call) { return dense(call, ACL_UINT8, 1, kMaskBytes, true); }
aclTensor* maskInput(OpCall& call) { return dense(call, ACL_UINT8, 1, kMaskBytes, false); }

/** The shape {kElements} as an int array held by `call`. */
aclIntArray* shapeArray(OpCall& call) {
  const int64_t shape[1] = {kElements};
  aclIntArray* array = aclCreateIntArray(shape, 1);
  call.descriptors.emplace_back(array, [](void* a) { aclDestroyIntArray(static_cast<aclIntArray*>(a)); });
  return array;
}

std::unique_ptr<OpCall> thresholdBackward() {
  auto call = std::make_unique<OpCall>();
  aclTensor* grad = stridedFloatInput(*call);
  aclTensor* self = stridedFloatInput(*call);
  aclTensor* out = floatOutput(*call);
  float value = 0.1f;
  aclScalar* threshold = aclCreateScalar(&value, ACL_FLOAT);
  call->descriptors.emplace_back(threshold, [](void* s) { aclDestroyScalar(static_cast<aclScalar*>(s)); });
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnThresholdBackwardGetWorkspaceSize(grad, self, threshold, out, size, executor);
  };
  call->secondPhase = aclnnThresholdBackward;
  return call;
}

std::unique_ptr<OpCall> genMask() {
  auto call = std::make_unique<OpCall>();
  aclIntArray* shape = shapeArray(*call);
  aclTensor* out = maskOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutGenMaskGetWorkspaceSize(shape, 0.3, 17, 4, out, size, executor);
  };
  call->secondPhase = aclnnDropoutGenMask;
  return call;
}

std::unique_ptr<OpCall> genMaskV2() {
  auto call = std::make_unique<OpCall>();
  aclIntArray* shape = shapeArray(*call);
  aclTensor* out = maskOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutGenMaskV2GetWorkspaceSize(shape, 0.3, 17, 4, ACL_FLOAT, out, size, executor);
  };
  call->secondPhase = aclnnDropoutGenMaskV2;
  return call;
}

std::unique_ptr<OpCall> genMaskV2Tensor() {
  auto call = std::make_unique<OpCall>();
  aclIntArray* shape = shapeArray(*call);
  aclTensor* seed = dense(*call, ACL_INT64, sizeof(int64_t), 1, false);
  aclTensor* offset = dense(*call, ACL_INT64, sizeof(int64_t), 1, false);
  aclTensor* out = maskOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutGenMaskV2TensorGetWorkspaceSize(shape, 0.3, seed, offset, 8, ACL_FLOAT, out, size, executor);
  };
  call->secondPhase = aclnnDropoutGenMaskV2Tensor;
  return call;
}

std::unique_ptr<OpCall> dropout() {
  auto call = std::make_unique<OpCall>();
  aclTensor* input = stridedFloatInput(*call);
  aclTensor* out = floatOutput(*call);
  aclTensor* mask = maskOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutGetWorkspaceSize(input, 0.3, true, 17, 4, out, mask, size, executor);
  };
  call->secondPhase = aclnnDropout;
  return call;
}

std::unique_ptr<OpCall> dropoutV3() {
  auto call = std::make_unique<OpCall>();
  aclTensor* input = stridedFloatInput(*call);
  aclTensor* out = floatOutput(*call);
  aclTensor* mask = maskOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutV3GetWorkspaceSize(input, nullptr, 0.3, 17, 4, out, mask, size, executor);
  };
  call->secondPhase = aclnnDropoutV3;
  return call;
}

std::unique_ptr<OpCall> doMask() {
  auto call = std::make_unique<OpCall>();
  aclTensor* self = stridedFloatInput(*call);
  aclTensor* mask = maskInput(*call);
  aclTensor* out = floatOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutDoMaskGetWorkspaceSize(self, mask, 0.3, out, size, executor);
  };
  call->secondPhase = aclnnDropoutDoMask;
  return call;
}

std::unique_ptr<OpCall> dropoutBackward() {
  auto call = std::make_unique<OpCall>();
  aclTensor* grad = stridedFloatInput(*call);
  aclTensor* mask = maskInput(*call);
  aclTensor* out = floatOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutBackwardGetWorkspaceSize(grad, mask, 1.0 / 0.7, out, size, executor);
  };
  call->secondPhase = aclnnDropoutBackward;
  return call;
}

std::unique_ptr<OpCall> dropoutV3Grad() {
  auto call = std::make_unique<OpCall>();
  aclTensor* grad = stridedFloatInput(*call);
  aclTensor* mask = maskInput(*call);
  aclTensor* out = floatOutput(*call);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnDropoutV3GradGetWorkspaceSize(grad, mask, 1.0 / 0.7, out, size, executor);
  };
  call->secondPhase = aclnnDropoutV3Grad;
  return call;
}

// Compressor (docs/compressor.md): BSH, B = 1, S = 8, H = 1024 (the smallest hidden size), D = 128, coff = 2,
// cmpRatio = 4, BF16, start_pos [2]: two compressed rows, the first reading two positions of history.
constexpr int64_t kCmpSeq = 8, kCmpHidden = 1024, kCmpHeadDim = 128, kCmpCoff = 2, kCmpRatio = 4;
constexpr int64_t kCmpChannels = kCmpCoff * kCmpHeadDim, kCmpRows = (kCmpSeq + kCmpRatio - 1) / kCmpRatio;
constexpr int64_t kCmpBlockRows = kCmpCoff * kCmpRatio;

/** The three ways a compressor call addresses its state cache. */
enum class CacheKind { Paged, PagedPaddedStride, Ring };

/**
 * aclnnCompressor with gradEnabled and a state cache of `kind`: paged (blocks of 8 positions; the batch's table row
 * {1, 2}: it reads positions 0-1 as history and writes positions 2-9), paged with blocks 8*512 + 64 floats apart given
 * only by stateCacheStrideDim0 (the tensor is described densely over storage that holds the padded blocks), or one
 * ring buffer of 16 positions (cacheMode 2). The cache is an output here (the call writes it).
 */
std::unique_ptr<OpCall> compressorCall(CacheKind kind) {
  auto call = std::make_unique<OpCall>();
  aclTensor* x = mhcBf16(*call, {1, kCmpSeq, kCmpHidden}, 0.0f);
  aclTensor* wkv = mhcBf16(*call, {kCmpChannels, kCmpHidden}, 0.0f);
  aclTensor* wgate = mhcBf16(*call, {kCmpChannels, kCmpHidden}, 0.0f);
  aclTensor* ape = mhcFloat(*call, {kCmpRatio, kCmpChannels}, 0.0f);
  const bool ring = kind == CacheKind::Ring;
  aclTensor* table = ring ? int32Input(*call, {0}) : int32Input(*call, {1, 2}, {1, 2});
  aclTensor* startPos = int32Input(*call, {2});
  const int64_t width = 2 * kCmpChannels, blockSize = ring ? 16 : 8, blocks = ring ? 1 : 3;
  const int64_t blockStride = kind == CacheKind::PagedPaddedStride ? blockSize * width + 64 : 0;
  aclTensor* stateCache = mhcFloatOutput(*call, {blocks, blockSize, width});
  if (blockStride != 0) {  // storage for the padded blocks; the view itself stays dense
    const int64_t dims[3] = {blocks, blockSize, width};
    const int64_t storage[1] = {(blocks - 1) * blockStride + blockSize * width};
    auto& buffer = call->outputs.emplace_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(storage[0]) * 4));
    stateCache =
        keep(*call, aclCreateTensor(dims, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, buffer->data()));
  }
  aclTensor* cmpKv = shaped(*call, ACL_BF16, sizeof(uint16_t), {1, kCmpRows, kCmpHeadDim}, true);
  aclTensor* softmaxScore = mhcFloatOutput(*call, {1, kCmpRows, kCmpBlockRows, kCmpHeadDim});
  aclTensor* kv = mhcFloatOutput(*call, {1, kCmpRows, kCmpBlockRows, kCmpHeadDim});
  const int64_t cacheMode = ring ? 2 : 1;
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnCompressorGetWorkspaceSize(x, wkv, wgate, stateCache, ape, table, nullptr, nullptr, startPos, kCmpRatio,
                                           kCmpCoff, cacheMode, blockStride, true, cmpKv, softmaxScore, kv, size,
                                           executor);
  };
  call->secondPhase = aclnnCompressor;
  return call;
}

std::unique_ptr<OpCall> compressor() { return compressorCall(CacheKind::Paged); }
std::unique_ptr<OpCall> compressorPaddedStride() { return compressorCall(CacheKind::PagedPaddedStride); }
std::unique_ptr<OpCall> compressorRing() { return compressorCall(CacheKind::Ring); }

/** aclnnCompressorGrad with start_pos, softmaxScore / kv of plausible values (weights 1/8, the rows' kv). */
std::unique_ptr<OpCall> compressorGrad() {
  auto call = std::make_unique<OpCall>();
  aclTensor* x = mhcBf16(*call, {1, kCmpSeq, kCmpHidden}, 0.0f);
  aclTensor* wkv = mhcBf16(*call, {kCmpChannels, kCmpHidden}, 0.0f);
  aclTensor* wgate = mhcBf16(*call, {kCmpChannels, kCmpHidden}, 0.0f);
  aclTensor* dCmpKv = mhcBf16(*call, {1, kCmpRows, kCmpHeadDim}, 0.0f);
  aclTensor* softmaxScore = mhcFloat(*call, {1, kCmpRows, kCmpBlockRows, kCmpHeadDim}, 0.125f);
  aclTensor* kv = mhcFloat(*call, {1, kCmpRows, kCmpBlockRows, kCmpHeadDim}, 0.0f);
  aclTensor* startPos = int32Input(*call, {2});
  aclTensor* dX = shaped(*call, ACL_BF16, sizeof(uint16_t), {1, kCmpSeq, kCmpHidden}, true);
  aclTensor* dWkv = shaped(*call, ACL_BF16, sizeof(uint16_t), {kCmpChannels, kCmpHidden}, true);
  aclTensor* dWgate = shaped(*call, ACL_BF16, sizeof(uint16_t), {kCmpChannels, kCmpHidden}, true);
  aclTensor* dApe = mhcFloatOutput(*call, {kCmpRatio, kCmpChannels});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnCompressorGradGetWorkspaceSize(x, wkv, wgate, dCmpKv, softmaxScore, kv, nullptr, nullptr, startPos,
                                               kCmpRatio, kCmpCoff, dX, dWkv, dWgate, dApe, size, executor);
  };
  call->secondPhase = aclnnCompressorGrad;
  return call;
}

// Flash attention (docs/flash_attention.md): FLOAT, N1 = 2 query heads over N2 = 1 KV head, D = 16, S1 = S2 = 8
// (padded layouts) or two batches of 3 + 5 query and 4 + 6 KV tokens (TND). Statistics are [B, N1, S1, 8] or
// [T1, N1, 8]. The backward gets plausible statistics (max 0.25, sum 6: finite, no row fully masked) and out.
constexpr int64_t kFaHeads = 2, kFaKvHeads = 1, kFaDim = 16, kFaSeq = 8;
constexpr int64_t kFaTokensQ = 8, kFaTokensKv = 10;
char kFaBsh[] = "BSH";
char kFaBnsd[] = "BNSD";
char kFaTnd[] = "TND";
char kFaNoLayout[] = "";

/** A FLOAT input of `shape` filled with `value` (the softmax statistics). */
aclTensor* faConstant(OpCall& call, const std::vector<int64_t>& shape, float value) {
  aclTensor* tensor = shaped(call, ACL_FLOAT, sizeof(float), shape, false);
  auto& buffer = call.inputs.back();
  auto* values = static_cast<float*>(buffer->data());
  for (size_t i = 0; i < buffer->size() / sizeof(float); ++i) values[i] = value;
  return tensor;
}

/** A BOOL [S1, S2] mask hiding the keys after each query (causal: no row is fully masked). */
aclTensor* faCausalMask(OpCall& call) {
  aclTensor* tensor = shaped(call, ACL_BOOL, 1, {kFaSeq, kFaSeq}, false);
  auto* bytes = static_cast<unsigned char*>(call.inputs.back()->data());
  for (int64_t i = 0; i < kFaSeq; ++i) {
    for (int64_t j = 0; j < kFaSeq; ++j) bytes[i * kFaSeq + j] = j > i ? 1 : 0;
  }
  return tensor;
}

/** A packed UINT8 keep mask of `elements` bits, about 7 of 8 kept. */
aclTensor* faDropMask(OpCall& call, int64_t elements) {
  aclTensor* tensor = shaped(call, ACL_UINT8, 1, {(elements + 7) / 8}, false);
  auto* bytes = static_cast<unsigned char*>(call.inputs.back()->data());
  for (size_t i = 0; i < call.inputs.back()->size(); ++i) bytes[i] = static_cast<unsigned char>(0xFF ^ (1 << (i % 8)));
  return tensor;
}

/** An int array held by `call`. */
aclIntArray* faArray(OpCall& call, const std::vector<int64_t>& values) {
  aclIntArray* array = aclCreateIntArray(values.data(), values.size());
  EXPECT_NE(array, nullptr) << aclGetRecentErrMsg();
  call.descriptors.emplace_back(array, [](void* a) { aclDestroyIntArray(static_cast<aclIntArray*>(a)); });
  return array;
}

/** The BSH / BNSD tensors of one padded-layout call (q and out with N1 heads, k and v with N2). */
std::vector<int64_t> faShape(bool bnsd, int64_t heads) {
  return bnsd ? std::vector<int64_t>{1, heads, kFaSeq, kFaDim} : std::vector<int64_t>{1, kFaSeq, heads * kFaDim};
}
const std::vector<int64_t> kFaStats = {1, kFaHeads, kFaSeq, 8};
const std::vector<int64_t> kFaTndStats = {kFaTokensQ, kFaHeads, 8};
const double kFaScale = 0.25;

/** aclnnFlashAttentionScore: BSH, no mask, no dropout. */
std::unique_ptr<OpCall> flashAttentionScore() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, faShape(false, kFaHeads), 0.0f);
  aclTensor* k = mhcFloat(*call, faShape(false, kFaKvHeads), 0.0f);
  aclTensor* v = mhcFloat(*call, faShape(false, kFaKvHeads), 0.0f);
  aclTensor* max = mhcFloatOutput(*call, kFaStats);
  aclTensor* sum = mhcFloatOutput(*call, kFaStats);
  aclTensor* out = mhcFloatOutput(*call, faShape(false, kFaHeads));
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionScoreGetWorkspaceSize(q, k, v, nullptr, nullptr, nullptr, nullptr, nullptr, kFaScale, 1.0,
                                                    2147483647, 2147483647, kFaHeads, kFaBsh, 0, 0, max, sum, nullptr,
                                                    out, size, executor);
  };
  call->secondPhase = aclnnFlashAttentionScore;
  return call;
}

/** aclnnFlashAttentionScoreV2: BNSD, a causal BOOL mask, a BNSS pse (pseType 1) and dropout (keepProb 0.875). */
std::unique_ptr<OpCall> flashAttentionScoreV2() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* k = mhcFloat(*call, faShape(true, kFaKvHeads), 0.0f);
  aclTensor* v = mhcFloat(*call, faShape(true, kFaKvHeads), 0.0f);
  aclTensor* pse = mhcFloat(*call, {1, kFaHeads, kFaSeq, kFaSeq}, 0.0f);
  aclTensor* drop = faDropMask(*call, kFaHeads * kFaSeq * kFaSeq);
  aclTensor* mask = faCausalMask(*call);
  aclTensor* max = mhcFloatOutput(*call, kFaStats);
  aclTensor* sum = mhcFloatOutput(*call, kFaStats);
  aclTensor* out = mhcFloatOutput(*call, faShape(true, kFaHeads));
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionScoreV2GetWorkspaceSize(q, k, v, pse, drop, nullptr, mask, nullptr, nullptr, nullptr,
                                                      kFaScale, 0.875, 2147483647, 2147483647, kFaHeads, kFaBnsd, 0, 0,
                                                      1, max, sum, nullptr, out, size, executor);
  };
  call->secondPhase = aclnnFlashAttentionScoreV2;
  return call;
}

/** aclnnFlashAttentionVarLenScore: TND, query lengths 3 and 5, KV lengths 4 and 6, causal from the bottom right. */
std::unique_ptr<OpCall> flashAttentionVarLenScore() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, {kFaTokensQ, kFaHeads, kFaDim}, 0.0f);
  aclTensor* k = mhcFloat(*call, {kFaTokensKv, kFaKvHeads, kFaDim}, 0.0f);
  aclTensor* v = mhcFloat(*call, {kFaTokensKv, kFaKvHeads, kFaDim}, 0.0f);
  aclTensor* max = mhcFloatOutput(*call, kFaTndStats);
  aclTensor* sum = mhcFloatOutput(*call, kFaTndStats);
  aclTensor* out = mhcFloatOutput(*call, {kFaTokensQ, kFaHeads, kFaDim});
  aclIntArray* seqQ = faArray(*call, {3, 8});
  aclIntArray* seqKv = faArray(*call, {4, 10});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(q, k, v, nullptr, nullptr, nullptr, nullptr, nullptr, seqQ,
                                                          seqKv, kFaScale, 1.0, 2147483647, 2147483647, kFaHeads,
                                                          kFaTnd, 0, 0, max, sum, nullptr, out, size, executor);
  };
  call->secondPhase = aclnnFlashAttentionVarLenScore;
  return call;
}

/** aclnnFlashAttentionScoreGrad: BSH, no mask, no dropout. */
std::unique_ptr<OpCall> flashAttentionScoreGrad() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, faShape(false, kFaHeads), 0.0f);
  aclTensor* k = mhcFloat(*call, faShape(false, kFaKvHeads), 0.0f);
  aclTensor* v = mhcFloat(*call, faShape(false, kFaKvHeads), 0.0f);
  aclTensor* dy = mhcFloat(*call, faShape(false, kFaHeads), 0.0f);
  aclTensor* max = faConstant(*call, kFaStats, 0.25f);
  aclTensor* sum = faConstant(*call, kFaStats, 6.0f);
  aclTensor* out = mhcFloat(*call, faShape(false, kFaHeads), 0.0f);
  aclTensor* dq = mhcFloatOutput(*call, faShape(false, kFaHeads));
  aclTensor* dk = mhcFloatOutput(*call, faShape(false, kFaKvHeads));
  aclTensor* dv = mhcFloatOutput(*call, faShape(false, kFaKvHeads));
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionScoreGradGetWorkspaceSize(q, k, v, dy, nullptr, nullptr, nullptr, nullptr, max, sum,
                                                        nullptr, out, nullptr, kFaScale, 1.0, 2147483647, 2147483647,
                                                        kFaHeads, kFaBsh, 0, 0, dq, dk, dv, nullptr, size, executor);
  };
  call->secondPhase = aclnnFlashAttentionScoreGrad;
  return call;
}

/** aclnnFlashAttentionScoreGradV2: BNSD, a causal BOOL mask, a BNSS pse (pseType 1), dropout from a packed mask. */
std::unique_ptr<OpCall> flashAttentionScoreGradV2() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* k = mhcFloat(*call, faShape(true, kFaKvHeads), 0.0f);
  aclTensor* v = mhcFloat(*call, faShape(true, kFaKvHeads), 0.0f);
  aclTensor* dy = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* pse = mhcFloat(*call, {1, kFaHeads, kFaSeq, kFaSeq}, 0.0f);
  aclTensor* drop = faDropMask(*call, kFaHeads * kFaSeq * kFaSeq);
  aclTensor* mask = faCausalMask(*call);
  aclTensor* max = faConstant(*call, kFaStats, 0.25f);
  aclTensor* sum = faConstant(*call, kFaStats, 6.0f);
  aclTensor* out = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* dq = mhcFloatOutput(*call, faShape(true, kFaHeads));
  aclTensor* dk = mhcFloatOutput(*call, faShape(true, kFaKvHeads));
  aclTensor* dv = mhcFloatOutput(*call, faShape(true, kFaKvHeads));
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
        q, k, v, dy, pse, drop, nullptr, mask, max, sum, nullptr, out, nullptr, nullptr, nullptr, kFaScale, 0.875,
        2147483647, 2147483647, kFaHeads, kFaBnsd, 0, 0, 1, dq, dk, dv, nullptr, size, executor);
  };
  call->secondPhase = aclnnFlashAttentionScoreGradV2;
  return call;
}

/** aclnnFlashAttentionUnpaddingScoreGrad: TND, the lengths of flashAttentionVarLenScore. */
std::unique_ptr<OpCall> flashAttentionUnpaddingScoreGrad() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, {kFaTokensQ, kFaHeads, kFaDim}, 0.0f);
  aclTensor* k = mhcFloat(*call, {kFaTokensKv, kFaKvHeads, kFaDim}, 0.0f);
  aclTensor* v = mhcFloat(*call, {kFaTokensKv, kFaKvHeads, kFaDim}, 0.0f);
  aclTensor* dy = mhcFloat(*call, {kFaTokensQ, kFaHeads, kFaDim}, 0.0f);
  aclTensor* max = faConstant(*call, kFaTndStats, 0.25f);
  aclTensor* sum = faConstant(*call, kFaTndStats, 6.0f);
  aclTensor* out = mhcFloat(*call, {kFaTokensQ, kFaHeads, kFaDim}, 0.0f);
  aclTensor* dq = mhcFloatOutput(*call, {kFaTokensQ, kFaHeads, kFaDim});
  aclTensor* dk = mhcFloatOutput(*call, {kFaTokensKv, kFaKvHeads, kFaDim});
  aclTensor* dv = mhcFloatOutput(*call, {kFaTokensKv, kFaKvHeads, kFaDim});
  aclIntArray* seqQ = faArray(*call, {3, 8});
  aclIntArray* seqKv = faArray(*call, {4, 10});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
        q, k, v, dy, nullptr, nullptr, nullptr, nullptr, max, sum, nullptr, out, nullptr, seqQ, seqKv, kFaScale, 1.0,
        2147483647, 2147483647, kFaHeads, kFaTnd, 0, 0, dq, dk, dv, nullptr, size, executor);
  };
  call->secondPhase = aclnnFlashAttentionUnpaddingScoreGrad;
  return call;
}

/**
 * aclnnFlashAttentionScoreGradV4 (Ascend950, the default profile the table runs in): BNSD, a causal BOOL mask and
 * Philox dropout from seed / offset (no mask tensor).
 */
std::unique_ptr<OpCall> flashAttentionScoreGradV4() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* k = mhcFloat(*call, faShape(true, kFaKvHeads), 0.0f);
  aclTensor* v = mhcFloat(*call, faShape(true, kFaKvHeads), 0.0f);
  aclTensor* dy = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* mask = faCausalMask(*call);
  aclTensor* max = faConstant(*call, kFaStats, 0.25f);
  aclTensor* sum = faConstant(*call, kFaStats, 6.0f);
  aclTensor* out = mhcFloat(*call, faShape(true, kFaHeads), 0.0f);
  aclTensor* dq = mhcFloatOutput(*call, faShape(true, kFaHeads));
  aclTensor* dk = mhcFloatOutput(*call, faShape(true, kFaKvHeads));
  aclTensor* dv = mhcFloatOutput(*call, faShape(true, kFaKvHeads));
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
        q, k, v, dy, nullptr, nullptr, nullptr, mask, max, sum, nullptr, out, nullptr, nullptr, nullptr, nullptr,
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, kFaScale, 0.875, 2147483647,
        2147483647, kFaHeads, kFaBnsd, kFaNoLayout, 0, 0, 1, 17, 4, 0, dq, dk, dv, nullptr, nullptr, nullptr, nullptr,
        size, executor);
  };
  call->secondPhase = aclnnFlashAttentionScoreGradV4;
  return call;
}

}  // namespace

const std::vector<ResourceFailureOp>& resourceFailureOps() {
  static const std::vector<ResourceFailureOp> ops = {
      {"aclnnThresholdBackward", thresholdBackward},
      {"aclnnDropoutGenMask", genMask},
      {"aclnnDropoutGenMaskV2", genMaskV2},
      {"aclnnDropoutGenMaskV2Tensor", genMaskV2Tensor},
      {"aclnnDropout", dropout},
      {"aclnnDropoutV3", dropoutV3},
      {"aclnnDropoutDoMask", doMask},
      {"aclnnDropoutBackward", dropoutBackward},
      {"aclnnDropoutV3Grad", dropoutV3Grad},
      {"aclnnMhcPre", mhcPre},
      {"aclnnMhcPreV2", mhcPreV2},
      {"aclnnMhcPreBackward", mhcPreBackward},
      {"aclnnMhcPreBackwardV2", mhcPreBackwardV2},
      {"aclnnMhcPost", mhcPost},
      {"aclnnMhcPostBackward", mhcPostBackward},
      {"aclnnMhcSinkhorn", mhcSinkhorn},
      {"aclnnMhcSinkhornBackward", mhcSinkhornBackward},
      {"aclnnMhcPreSinkhorn", mhcPreSinkhorn},
      {"aclnnMhcPreSinkhornBackward", mhcPreSinkhornBackward},
      {"aclnnBlockAttentionResiduals", blockAttentionResiduals},
      {"aclnnBlockAttentionResidualsGrad", blockAttentionResidualsGrad},
      {"aclnnCompressor", compressor},
      {"aclnnCompressor", compressorPaddedStride, "PaddedStrideDim0"},
      {"aclnnCompressor", compressorRing, "RingCache"},
      {"aclnnCompressorGrad", compressorGrad},
      {"aclnnSparseLightningIndexerKLLossGradMetadata", klLossGradMetadata},
      {"aclnnSparseLightningIndexerKLLossGrad", klLossGrad},
      {"aclnnFlashAttentionScore", flashAttentionScore},
      {"aclnnFlashAttentionScoreV2", flashAttentionScoreV2},
      {"aclnnFlashAttentionVarLenScore", flashAttentionVarLenScore},
      {"aclnnFlashAttentionScoreGrad", flashAttentionScoreGrad},
      {"aclnnFlashAttentionScoreGradV2", flashAttentionScoreGradV2},
      {"aclnnFlashAttentionUnpaddingScoreGrad", flashAttentionUnpaddingScoreGrad},
      {"aclnnFlashAttentionScoreGradV4", flashAttentionScoreGradV4},
      {"aclnnSparseFlashMlaMetadata", sparseFlashMlaMetadata},
      {"aclnnSparseFlashMlaGradMetadata", sparseFlashMlaGradMetadata},
      {"aclnnSparseFlashMlaSoftmaxL1NormMetadata", sparseFlashMlaSoftmaxL1NormMetadata},
      {"aclnnSparseFlashMla", sparseFlashMla},
      {"aclnnSparseFlashMlaGrad", sparseFlashMlaGrad},
      {"aclnnSparseFlashMlaSoftmaxL1Norm", sparseFlashMlaSoftmaxL1Norm},
      {"aclnnLightningIndexerV2", lightningIndexerV2},
      {"aclnnLightningIndexerV2Metadata", lightningIndexerV2Metadata},
  };
  return ops;
}

}  // namespace gradkit_test
