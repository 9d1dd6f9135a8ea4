// A case tensor that owns its storage: a host copy (what the harness generated and later reads back) and
// device memory from aclrtMalloc (what the operator sees), moved between them with aclrtMemcpy as a program
// for an NPU would.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "aclnn/acl_meta.h"
#include "harness/gather.h"
#include "harness/tensor_spec.h"

namespace gradkit::cli {

/** Destroys an aclTensor / aclScalar through the public API. */
struct AclTensorDeleter {
  void operator()(aclTensor* tensor) const;
};
struct AclScalarDeleter {
  void operator()(aclScalar* scalar) const;
};
using AclTensorPtr = std::unique_ptr<aclTensor, AclTensorDeleter>;
using AclScalarPtr = std::unique_ptr<aclScalar, AclScalarDeleter>;

class HostTensor {
 public:
  /**
   * Allocates the storage the spec's view needs (at least one element, so the device pointer is never null)
   * and, if `fill` is true, fills it with the spec's values and uploads it. Throws HarnessError when the
   * runtime refuses (message from aclGetRecentErrMsg).
   */
  explicit HostTensor(TensorSpec spec, bool fill = true);
  ~HostTensor();
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  const TensorSpec& spec() const { return spec_; }
  ViewGeometry geometry() const { return {spec_.shape, spec_.strides, spec_.offset}; }
  size_t elementSize() const { return elementSize_; }
  int64_t storageElements() const { return storageElements_; }
  void* deviceData() const { return device_; }

  /** The host copy of the whole storage. */
  std::vector<unsigned char>& host() { return host_; }
  const std::vector<unsigned char>& host() const { return host_; }

  /** Sets every byte of the storage to `byte` (host and device): a sentinel for outputs. */
  void fillBytes(unsigned char byte);
  /** Host copy -> device memory. */
  void upload();
  /** Device memory -> host copy. */
  void download();

  /**
   * A new aclTensor over the device storage (view shape, strides, offset; storage dims = the view's shape
   * when the view is contiguous, else the flat storage). Throws HarnessError when aclCreateTensor refuses.
   */
  AclTensorPtr makeAclTensor() const;

  /** The view's elements from the host copy, dense and row-major. */
  std::vector<unsigned char> dense() const;

 private:
  TensorSpec spec_;
  size_t elementSize_ = 0;
  int64_t storageElements_ = 0;
  std::vector<unsigned char> host_;
  void* device_ = nullptr;
};

/** Bytes of `value` as a scalar of `dtype` (narrow floats rounded to nearest-even). */
std::vector<unsigned char> encodeScalar(aclDataType dtype, double value);

/** aclCreateScalar of `value` as `dtype`; throws HarnessError when refused. */
AclScalarPtr makeAclScalar(aclDataType dtype, double value);

/** The runtime's recent error text, or "(no message)". */
std::string recentErrorText();

}  // namespace gradkit::cli
