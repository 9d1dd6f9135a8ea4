// The concrete descriptors behind the opaque aclTensor / aclScalar / array handles.
// They are plain values: a plan copies the aclTensor it needs, so the caller may destroy its
// descriptors once the op is enqueued (data memory must stay alive until the stream has run it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"

struct aclTensor {
  std::vector<int64_t> viewDims;
  std::vector<int64_t> strides;  // in elements, one per view dim
  int64_t offset = 0;            // in elements, from `data`
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_ND;
  std::vector<int64_t> storageDims;
  void* data = nullptr;

  int64_t dim() const { return static_cast<int64_t>(viewDims.size()); }
  /** Product of the view dims (1 for a 0-d tensor, 0 when any dim is 0). */
  int64_t numel() const;
  bool isEmpty() const { return numel() == 0; }
  /** Product of the storage dims: the elements the caller declared from `data` on (fits in int64: aclCreateTensor). */
  int64_t storageNumel() const;
  /** Row-major dense view (size-1 dims may have any stride). */
  bool isContiguous() const;
  /** Address of logical element 0 (data + offset * element size). */
  void* firstElement() const;
  /** "[2, 3, 4]" for messages. */
  std::string shapeString() const;
};

struct aclScalar {
  aclDataType dtype = ACL_DT_UNDEFINED;
  alignas(8) unsigned char bytes[16] = {};
  /** The value as double (exact for every integer up to 2^53 and every float type). */
  double toDouble() const;
  /** The value as int64 (floats truncated toward zero). */
  int64_t toInt64() const;
};

struct aclIntArray {
  std::vector<int64_t> values;
};
struct aclFloatArray {
  std::vector<float> values;
};
struct aclBoolArray {
  std::vector<bool> values;
};

namespace gradkit {

/** "[a, b, c]" */
std::string dimsString(const std::vector<int64_t>& dims);

}  // namespace gradkit
