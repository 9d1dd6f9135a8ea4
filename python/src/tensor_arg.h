// TensorArg: an aclTensor that describes a Python object's own memory (no copy), for the length of one call.
//
// Accepted objects, in this order:
//  - (object, acl_dtype) tuples: the object's memory read as `acl_dtype` (the element size must match), e.g. a
//    uint16 numpy array holding bfloat16 bit patterns with ACL_BF16 (numpy has no bfloat16);
//  - objects with the buffer protocol (numpy arrays, memoryviews): any non-negative strides that are whole
//    elements; a writable buffer is required for outputs;
//  - objects with __dlpack__ (torch tensors of any version with DLPack, 1.10 and later): CPU tensors, any
//    strides (stride 0 included).
#pragma once

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "aclnn/acl_meta.h"

namespace gradkit::python {

class TensorArg {
 public:
  /**
   * Describes `object` (see the file comment). `name` is the argument's name for error messages; `writable`
   * asks a buffer for write access. Raises TypeError / ValueError (pybind11 exceptions) for objects that cannot
   * be described: another device, a dtype without an aclDataType, negative or fractional strides.
   */
  static TensorArg from(pybind11::handle object, const char* name, bool writable);

  /** from() for an optional argument: nullopt for None. */
  static std::optional<TensorArg> fromOptional(pybind11::handle object, const char* name, bool writable);

  TensorArg(TensorArg&& other) noexcept;
  TensorArg& operator=(TensorArg&&) = delete;
  TensorArg(const TensorArg&) = delete;
  TensorArg& operator=(const TensorArg&) = delete;
  ~TensorArg();

  /** The descriptor, owned by this object. */
  aclTensor* get() const { return tensor_; }

 private:
  TensorArg() = default;

  aclTensor* tensor_ = nullptr;
  DLManagedTensor* managed_ = nullptr;             // the DLPack export this view reads (deleted at the end)
  std::unique_ptr<pybind11::buffer_info> buffer_;  // the buffer-protocol view this one reads (released at the end)
};

/** The descriptor of an optional argument (nullptr for nullopt). */
inline aclTensor* handleOf(const std::optional<TensorArg>& argument) { return argument ? argument->get() : nullptr; }

}  // namespace gradkit::python
