#include "harness/host_tensor.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "acl/acl.h"
#include "base/dtype.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/fill.h"

namespace gradkit::cli {

void AclTensorDeleter::operator()(aclTensor* tensor) const { aclDestroyTensor(tensor); }
void AclScalarDeleter::operator()(aclScalar* scalar) const { aclDestroyScalar(scalar); }

std::string recentErrorText() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr && *text != '\0' ? std::string(text) : std::string("(no message)");
}

HostTensor::HostTensor(TensorSpec spec, bool fill) : spec_(std::move(spec)) {
  elementSize_ = dtypeSize(spec_.dtype);
  if (elementSize_ == 0) throw HarnessError("tensor '" + spec_.name + "': dtype without a byte size");
  storageElements_ = spec_.storageElements();
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(storageElements_, 1)) * elementSize_;
  host_.assign(bytes, 0);
  if (aclrtMalloc(&device_, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    device_ = nullptr;
    throw HarnessError("aclrtMalloc of " + std::to_string(bytes) + " bytes for '" + spec_.name +
                       "' failed: " + recentErrorText());
  }
  if (fill) {
    fillStorage(spec_, host_.data(), storageElements_);
    upload();
  }
}

HostTensor::~HostTensor() {
  if (device_ != nullptr) aclrtFree(device_);
}

void HostTensor::fillBytes(unsigned char byte) {
  std::fill(host_.begin(), host_.end(), byte);
  upload();
}

void HostTensor::upload() {
  if (aclrtMemcpy(device_, host_.size(), host_.data(), host_.size(), ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
    throw HarnessError("aclrtMemcpy host->device of '" + spec_.name + "' failed: " + recentErrorText());
  }
}

void HostTensor::download() {
  if (aclrtMemcpy(host_.data(), host_.size(), device_, host_.size(), ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
    throw HarnessError("aclrtMemcpy device->host of '" + spec_.name + "' failed: " + recentErrorText());
  }
}

AclTensorPtr HostTensor::makeAclTensor() const {
  const bool contiguous = spec_.isContiguous();
  const std::vector<int64_t> storageDims = contiguous ? spec_.shape : std::vector<int64_t>{storageElements_};
  aclTensor* tensor = aclCreateTensor(spec_.shape.data(), spec_.shape.size(), spec_.dtype, spec_.strides.data(),
                                      spec_.offset, ACL_FORMAT_ND, storageDims.data(), storageDims.size(), device_);
  if (tensor == nullptr) {
    throw HarnessError("aclCreateTensor of '" + spec_.name + "' failed: " + recentErrorText());
  }
  return AclTensorPtr(tensor);
}

std::vector<unsigned char> HostTensor::dense() const { return gatherDense(geometry(), host_.data(), elementSize_); }

std::vector<unsigned char> encodeScalar(aclDataType dtype, double value) {
  const size_t size = dtypeSize(dtype);
  if (size == 0) throw HarnessError("a scalar cannot have dtype " + dtypeName(dtype));
  std::vector<unsigned char> bytes(size);
  storeFromDouble(dtype, bytes.data(), 0, value);
  return bytes;
}

AclScalarPtr makeAclScalar(aclDataType dtype, double value) {
  std::vector<unsigned char> bytes = encodeScalar(dtype, value);
  aclScalar* scalar = aclCreateScalar(bytes.data(), dtype);
  if (scalar == nullptr) throw HarnessError("aclCreateScalar failed: " + recentErrorText());
  return AclScalarPtr(scalar);
}

}  // namespace gradkit::cli
