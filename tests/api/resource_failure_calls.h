// One plain, valid call of every aclnn operator on main, over device memory (aclrtMalloc), for the resource-failure
// tests: inputs hold data, outputs hold a sentinel pattern so that a failed call that wrote anything is caught.
// Adding an operator is one builder here and one line in kResourceFailureOps.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace gradkit_test {

/** The byte every output is filled with before a call. */
inline constexpr unsigned char kSentinel = 0xA7;

/** `bytes` of aclrtMalloc memory, freed with the object. */
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  /** A copy of the contents. */
  std::vector<unsigned char> contents() const;
  void fill(unsigned char byte) { std::memset(data_, byte, bytes_); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

/** The second phase every aclnn operator has. */
using SecondPhase = aclnnStatus (*)(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream stream);

/** One operator call with the descriptors and memory it needs (all released with the object). */
struct OpCall {
  std::function<aclnnStatus(uint64_t* workspaceSize, aclOpExecutor** executor)> firstPhase;
  SecondPhase secondPhase = nullptr;
  std::vector<std::unique_ptr<DeviceBuffer>> inputs;
  std::vector<std::unique_ptr<DeviceBuffer>> outputs;
  std::vector<std::shared_ptr<void>> descriptors;  // tensors, scalars, arrays: destroyed with the call

  /** Fills every output with kSentinel. */
  void resetOutputs();
  /** True when every byte of every output is still kSentinel. */
  bool outputsUntouched() const;
  /** Every output's bytes, concatenated. */
  std::vector<unsigned char> outputBytes() const;
};

/** An operator of the table: its aclnn name and the builder of a fresh, valid call. */
struct ResourceFailureOp {
  const char* api;
  std::unique_ptr<OpCall> (*make)();
  const char* variant = "";  // a second call of the same operator: what differs (a test-name suffix)
};

// Tensor builders the call files share (resource_failure_calls.cpp).

/** Holds `tensor` in `call` (destroyed with it) and returns it. */
aclTensor* keep(OpCall& call, aclTensor* tensor);
/** A dense tensor of `shape` over its own device buffer, held by `call`; outputs are left to resetOutputs. */
aclTensor* shaped(OpCall& call, aclDataType dtype, size_t elementSize, const std::vector<int64_t>& shape,
                  bool isOutput);
/** A FLOAT input of `shape` holding base + a small multiple of 1/64 per element (exact in BF16). */
aclTensor* mhcFloat(OpCall& call, const std::vector<int64_t>& shape, float base);
/** The same values as a BF16 input. */
aclTensor* mhcBf16(OpCall& call, const std::vector<int64_t>& shape, float base);
/** A FLOAT output of `shape`. */
aclTensor* mhcFloatOutput(OpCall& call, const std::vector<int64_t>& shape);
/** An INT32 input of `values`, 1-d unless a `shape` is given. */
aclTensor* int32Input(OpCall& call, const std::vector<int32_t>& values, std::vector<int64_t> shape = {});

// The mHC calls (resource_failure_calls_mhc.cpp).
std::unique_ptr<OpCall> mhcPre();
std::unique_ptr<OpCall> mhcPreV2();
std::unique_ptr<OpCall> mhcPreBackward();
std::unique_ptr<OpCall> mhcPreBackwardV2();
std::unique_ptr<OpCall> mhcPost();
std::unique_ptr<OpCall> mhcPostBackward();
std::unique_ptr<OpCall> mhcSinkhorn();
std::unique_ptr<OpCall> mhcSinkhornBackward();
std::unique_ptr<OpCall> mhcPreSinkhorn();
std::unique_ptr<OpCall> mhcPreSinkhornBackward();
std::unique_ptr<OpCall> blockAttentionResiduals();
std::unique_ptr<OpCall> blockAttentionResidualsGrad();

// The sparse attention calls (resource_failure_calls_smla.cpp).
std::unique_ptr<OpCall> sparseFlashMlaMetadata();
std::unique_ptr<OpCall> sparseFlashMlaGradMetadata();
std::unique_ptr<OpCall> sparseFlashMlaSoftmaxL1NormMetadata();
std::unique_ptr<OpCall> sparseFlashMla();
std::unique_ptr<OpCall> sparseFlashMlaGrad();
std::unique_ptr<OpCall> sparseFlashMlaSoftmaxL1Norm();

// The lightning indexer calls (resource_failure_calls_lightning_indexer.cpp).
std::unique_ptr<OpCall> klLossGrad();
std::unique_ptr<OpCall> klLossGradMetadata();
// The lightning indexer calls (resource_failure_calls_liv2.cpp).
std::unique_ptr<OpCall> lightningIndexerV2();
std::unique_ptr<OpCall> lightningIndexerV2Metadata();

/** Every operator on main, the mHC, compressor and flash attention entry points included (one line each). */
const std::vector<ResourceFailureOp>& resourceFailureOps();

}  // namespace gradkit_test
