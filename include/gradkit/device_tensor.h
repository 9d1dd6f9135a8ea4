// gradkit::DeviceTensor: a dense tensor that owns its device memory (aclrtMalloc) and its aclTensor descriptor.
// The C++ host layer (gradkit/native_dropout.h) returns its new tensors in this form, as torch_npu returns
// at::Tensor. C++ only.
#ifndef GRADKIT_GRADKIT_DEVICE_TENSOR_H_
#define GRADKIT_GRADKIT_DEVICE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl_base.h"
#include "aclnn/aclnn_base.h"

namespace gradkit {

/**
 * A row-major contiguous tensor of `shape` and `dtype` in memory from aclrtMalloc, described by an aclTensor.
 * Move-only; the destructor destroys the descriptor and frees the memory (aclDestroyTensor, aclrtFree).
 * Like aclrtFree, it does not wait for the streams: synchronize the stream that writes or reads the tensor
 * before it is destroyed or reset. An empty tensor (a zero dim) holds a descriptor and no memory; a
 * default-constructed DeviceTensor holds nothing (`valid()` is false).
 */
class ACL_FUNC_VISIBILITY DeviceTensor {
 public:
  DeviceTensor() = default;
  ~DeviceTensor();
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  /**
   * Allocates an uninitialised tensor into `*result` (its previous contents are released first).
   * Returns 161001 for a null `result`, 161002 for a dtype without a whole-byte size, a negative dim, more
   * than 8 dims or a byte size that overflows, 361001 (with the runtime's message) when aclrtMalloc fails.
   */
  static aclnnStatus allocate(const std::vector<int64_t>& shape, aclDataType dtype, DeviceTensor* result);

  /** True when the object holds a tensor (possibly empty). */
  bool valid() const { return tensor_ != nullptr; }
  /** The descriptor (nullptr when !valid()); owned by this object. */
  aclTensor* get() const { return tensor_; }
  /** The first element (nullptr for an empty tensor). */
  void* data() const { return memory_; }
  /** Bytes of the elements (numel * element size). */
  size_t bytes() const { return bytes_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  aclDataType dtype() const { return dtype_; }
  /** Product of the dims (1 for a 0-d tensor). */
  int64_t numel() const;
  /** Destroys the descriptor and frees the memory; the object then holds nothing. */
  void reset();

 private:
  aclTensor* tensor_ = nullptr;
  void* memory_ = nullptr;
  size_t bytes_ = 0;
  std::vector<int64_t> shape_;
  aclDataType dtype_ = ACL_DT_UNDEFINED;
};

}  // namespace gradkit

#endif  // GRADKIT_GRADKIT_DEVICE_TENSOR_H_
