#include "gradkit/device_tensor.h"

#include <string>
#include <utility>

#include "acl/acl_rt.h"
#include "base/dtype.h"
#include "base/error.h"
#include "opapi/tensor.h"

namespace gradkit {
namespace {

constexpr const char* kAllocate = "gradkit::DeviceTensor::allocate";
constexpr size_t kMaxRank = 8;

}  // namespace

DeviceTensor::~DeviceTensor() { reset(); }

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : tensor_(std::exchange(other.tensor_, nullptr)),
      memory_(std::exchange(other.memory_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      shape_(std::move(other.shape_)),
      dtype_(std::exchange(other.dtype_, ACL_DT_UNDEFINED)) {
  other.shape_.clear();
}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    reset();
    tensor_ = std::exchange(other.tensor_, nullptr);
    memory_ = std::exchange(other.memory_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    shape_ = std::move(other.shape_);
    other.shape_.clear();
    dtype_ = std::exchange(other.dtype_, ACL_DT_UNDEFINED);
  }
  return *this;
}

int64_t DeviceTensor::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape_) count *= dim;
  return count;
}

void DeviceTensor::reset() {
  if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  if (memory_ != nullptr) aclrtFree(memory_);
  tensor_ = nullptr;
  memory_ = nullptr;
  bytes_ = 0;
  shape_.clear();
  dtype_ = ACL_DT_UNDEFINED;
}

aclnnStatus DeviceTensor::allocate(const std::vector<int64_t>& shape, aclDataType dtype, DeviceTensor* result) {
  if (result == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, kAllocate, "result", "a non-null pointer", "nullptr");
  result->reset();
  const size_t elementSize = dtypeSize(dtype);
  if (elementSize == 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kAllocate, "dtype", "a dtype with a whole-byte element size",
                dtypeName(dtype));
  }
  if (shape.size() > kMaxRank) {
    return fail(ACLNN_ERR_PARAM_INVALID, kAllocate, "shape", "at most 8 dims",
                std::to_string(shape.size()) + " dims " + dimsString(shape));
  }
  uint64_t bytes = elementSize;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes) || bytes > INT64_MAX) {
      return fail(ACLNN_ERR_PARAM_INVALID, kAllocate, "shape", "dims >= 0 whose byte size fits in int64",
                  dimsString(shape) + " of " + dtypeName(dtype));
    }
  }
  DeviceTensor made;
  if (bytes > 0) {
    if (const aclError status = aclrtMalloc(&made.memory_, bytes, ACL_MEM_MALLOC_HUGE_FIRST); status != ACL_SUCCESS) {
      return failText(ACLNN_ERR_RUNTIME_ERROR, kAllocate,
                      "aclrtMalloc of " + std::to_string(bytes) + " bytes for " + dimsString(shape) +
                          " failed (error " + std::to_string(status) + ")");
    }
  }
  made.bytes_ = bytes;
  made.shape_ = shape;
  made.dtype_ = dtype;
  const int64_t storage[1] = {made.numel()};
  made.tensor_ =
      aclCreateTensor(shape.data(), shape.size(), dtype, nullptr, 0, ACL_FORMAT_ND, storage, 1, made.memory_);
  if (made.tensor_ == nullptr) {
    return failText(ACLNN_ERR_INNER, kAllocate, "aclCreateTensor failed for " + dimsString(shape));
  }
  *result = std::move(made);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit
