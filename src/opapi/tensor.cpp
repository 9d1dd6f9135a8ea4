// aclTensor and array descriptors: creation with full validation, accessors, destruction (aclScalar: scalar.cpp).
#include "opapi/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "gradkit/float_convert.h"
#include "runtime/memory.h"
#include "runtime/registry.h"
#include "runtime/runtime.h"

namespace {

// The deepest view a descriptor may have. gradkit's strided iteration (core/strided.h, forEachOffset) keeps one index
// per dim in a fixed array of 16; no aclnn operator takes more than 8 dims.
constexpr uint64_t kMaxTensorRank = 16;

/** a * b into *out; false on int64 overflow. */
bool multiply(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

constexpr const char* kCreateTensor = "aclCreateTensor";

aclTensor* rejectTensor(int code, const std::string& arg, const std::string& expected, const std::string& given) {
  gradkit::fail(code, kCreateTensor, arg, expected, given);
  return nullptr;
}

/** Validates a dims array (count, null, non-negative entries, int64 product); the product goes to *product. */
bool checkDims(const char* name, const int64_t* dims, uint64_t count, int64_t* product) {
  if (count > kMaxTensorRank) {
    rejectTensor(ACLNN_ERR_PARAM_INVALID, std::string(name) + "Num", "<= " + std::to_string(kMaxTensorRank),
                 std::to_string(count));
    return false;
  }
  if (dims == nullptr && count > 0) {
    rejectTensor(ACLNN_ERR_PARAM_NULLPTR, name, "non-null when " + std::string(name) + "Num > 0",
                 "nullptr with " + std::string(name) + "Num " + std::to_string(count));
    return false;
  }
  *product = 1;
  for (uint64_t d = 0; d < count; ++d) {
    if (dims[d] < 0) {
      rejectTensor(ACLNN_ERR_PARAM_INVALID, std::string(name) + "[" + std::to_string(d) + "]", ">= 0",
                   std::to_string(dims[d]) + " (" + std::string(name) + " " +
                       gradkit::dimsString(std::vector<int64_t>(dims, dims + count)) + ")");
      return false;
    }
  }
  for (uint64_t d = 0; d < count; ++d) {
    if (!multiply(*product, dims[d], product)) {
      rejectTensor(ACLNN_ERR_PARAM_INVALID, name, "an element count that fits in int64",
                   gradkit::dimsString(std::vector<int64_t>(dims, dims + count)));
      return false;
    }
  }
  return true;
}

/**
 * Row-major strides for `dims` (the stride of a dim is the product of the dims after it, size-0 dims counted as 1);
 * false when one does not fit in int64 (possible for an empty view such as [0, 2^62, 2^62]).
 */
bool rowMajorStrides(const std::vector<int64_t>& dims, std::vector<int64_t>* strides) {
  strides->assign(dims.size(), 1);
  int64_t running = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    (*strides)[d] = running;
    if (d > 0 && !multiply(running, dims[d] > 0 ? dims[d] : 1, &running)) return false;
  }
  return true;
}

/** True for the aclFormat values CANN defines (read as an int: an unknown value must not be loaded as the enum). */
bool isKnownFormat(int format) {
  static constexpr int kFormats[] = {-1, 0, 1, 2, 3, 4, 12, 16, 27, 29, 30, 32, 33, 35, 47};
  return std::find(std::begin(kFormats), std::end(kFormats), format) != std::end(kFormats);
}

}  // namespace

namespace gradkit {

std::string dimsString(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(dims[d]);
  }
  return text + "]";
}

}  // namespace gradkit

int64_t aclTensor::numel() const {
  int64_t count = 1;
  for (int64_t dim : viewDims) count *= dim;
  return count;
}

int64_t aclTensor::storageNumel() const {
  int64_t count = 1;
  for (int64_t dim : storageDims) count *= dim;
  return count;
}

bool aclTensor::isContiguous() const {
  if (isEmpty()) return true;
  int64_t expected = 1;
  for (size_t d = viewDims.size(); d-- > 0;) {
    if (viewDims[d] == 1) continue;  // a size-1 dim is never stepped over: its stride does not matter
    if (strides[d] != expected) return false;
    expected *= viewDims[d];
  }
  return true;
}

void* aclTensor::firstElement() const {
  if (data == nullptr) return nullptr;
  return static_cast<unsigned char*>(data) + offset * static_cast<int64_t>(gradkit::dtypeSize(dtype));
}

std::string aclTensor::shapeString() const { return gradkit::dimsString(viewDims); }

extern "C" aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                      const int64_t* stride, int64_t offset, aclFormat format,
                                      const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
  const int rawDtype = gradkit::rawDtypeValue(dataType);
  const size_t elementSize = gradkit::isDtypeInRange(rawDtype) ? gradkit::dtypeSize(dataType) : 0;
  if (elementSize == 0) {
    return rejectTensor(ACLNN_ERR_PARAM_INVALID, "dataType", "a dtype with a whole-byte element size",
                        gradkit::rawDtypeName(rawDtype));
  }
  int formatValue = 0;
  static_assert(sizeof(format) == sizeof(formatValue));
  std::memcpy(&formatValue, &format, sizeof formatValue);
  if (!isKnownFormat(formatValue)) {
    return rejectTensor(ACLNN_ERR_PARAM_INVALID, "format",
                        "an aclFormat value (-1, 0, 1, 2, 3, 4, 12, 16, 27, 29, 30, 32, 33, 35 or 47)",
                        std::to_string(formatValue));
  }
  int64_t numel = 1;
  if (!checkDims("viewDims", viewDims, viewDimsNum, &numel)) return nullptr;
  int64_t storageElements = 1;
  if (!checkDims("storageDims", storageDims, storageDimsNum, &storageElements)) return nullptr;
  if (offset < 0) return rejectTensor(ACLNN_ERR_PARAM_INVALID, "offset", ">= 0", std::to_string(offset));
  try {
    auto tensor = std::make_unique<aclTensor>();
    tensor->viewDims.assign(viewDims, viewDims + viewDimsNum);
    if (stride == nullptr) {
      if (!rowMajorStrides(tensor->viewDims, &tensor->strides)) {
        return rejectTensor(ACLNN_ERR_PARAM_INVALID, "viewDims",
                            "dims whose row-major strides (stride == nullptr) fit in int64", tensor->shapeString());
      }
    } else {
      tensor->strides.assign(stride, stride + viewDimsNum);
    }
    for (uint64_t d = 0; d < viewDimsNum; ++d) {
      if (tensor->strides[d] < 0) {
        return rejectTensor(
            ACLNN_ERR_PARAM_INVALID, "stride[" + std::to_string(d) + "]", ">= 0",
            std::to_string(tensor->strides[d]) + " (strides " + gradkit::dimsString(tensor->strides) + ")");
      }
    }
    if (numel > 0) {
      // The last element the view touches must lie inside the storage.
      int64_t last = offset;
      for (uint64_t d = 0; d < viewDimsNum; ++d) {
        int64_t step = 0;
        if (!multiply(viewDims[d] - 1, tensor->strides[d], &step) || !add(last, step, &last)) {
          last = std::numeric_limits<int64_t>::max();
          break;
        }
      }
      if (last >= storageElements) {
        return rejectTensor(ACLNN_ERR_PARAM_INVALID, "storageDims",
                            "room for the view (its last element is at offset " + std::to_string(last) + ", so > " +
                                std::to_string(last) + " elements)",
                            gradkit::dimsString(std::vector<int64_t>(storageDims, storageDims + storageDimsNum)) +
                                " = " + std::to_string(storageElements) + " elements for view " +
                                tensor->shapeString() + " with strides " + gradkit::dimsString(tensor->strides) +
                                " and offset " + std::to_string(offset));
      }
      int64_t bytes = 0;
      if (!multiply(storageElements, static_cast<int64_t>(elementSize), &bytes)) {
        return rejectTensor(ACLNN_ERR_PARAM_INVALID, "storageDims", "a byte size that fits in int64",
                            std::to_string(storageElements) + " elements of " + gradkit::dtypeName(dataType));
      }
      if (tensorData == nullptr) {
        return rejectTensor(ACLNN_ERR_PARAM_NULLPTR, "tensorData", "non-null for a view with elements",
                            "nullptr for view " + tensor->shapeString());
      }
      // Kernels load whole elements: a FLOAT16 at an odd address would be undefined behaviour on the host (an NPU
      // never sees one: device memory is aligned).
      const size_t alignment = std::min<size_t>(elementSize, 8);
      if (reinterpret_cast<uintptr_t>(tensorData) % alignment != 0) {
        return rejectTensor(ACLNN_ERR_PARAM_INVALID, "tensorData",
                            "an address aligned to " + std::to_string(alignment) + " bytes (the element size of " +
                                gradkit::dtypeName(dataType) + ")",
                            gradkit::rt::pointerString(tensorData));
      }
      // A pointer into a block freed lately (still in the runtime's quarantine) is a use after free.
      if (const auto freed = gradkit::rt::findFreedAllocation(tensorData)) {
        return rejectTensor(ACLNN_ERR_PARAM_INVALID, "tensorData", "a pointer into live memory",
                            gradkit::rt::pointerString(tensorData) + ", inside the " + std::to_string(freed->size) +
                                "-byte block at " + gradkit::rt::pointerString(freed->base) + " that was freed");
      }
      // Memory gradkit tracked (aclrtMalloc, aclrtMallocHost) must hold the whole storage: a kernel would
      // otherwise read or write past the allocation.
      if (const auto allocation = gradkit::rt::findAllocation(tensorData)) {
        const auto room =
            static_cast<uint64_t>(allocation->base + allocation->size - static_cast<const unsigned char*>(tensorData));
        if (static_cast<uint64_t>(bytes) > room) {
          return rejectTensor(ACLNN_ERR_PARAM_INVALID, "storageDims",
                              "a storage that fits in the memory behind tensorData (" + std::to_string(room) +
                                  " bytes left in the " + std::to_string(allocation->size) + "-byte allocation at " +
                                  gradkit::rt::pointerString(allocation->base) + ")",
                              gradkit::dimsString(std::vector<int64_t>(storageDims, storageDims + storageDimsNum)) +
                                  " of " + gradkit::dtypeName(dataType) + " = " + std::to_string(bytes) + " bytes");
        }
      }
    }
    tensor->offset = offset;
    tensor->dtype = dataType;
    tensor->format = format;
    tensor->storageDims.assign(storageDims, storageDims + storageDimsNum);
    tensor->data = tensorData;
    return tensor.release();
  } catch (const std::bad_alloc&) {
    gradkit::failText(ACLNN_ERR_INNER, kCreateTensor, "out of memory");
    return nullptr;
  }
}

extern "C" aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  delete tensor;
  return ACLNN_SUCCESS;
}

namespace {

/** Copies `size` values into a new array descriptor; nullptr (with a message) on a null source or no memory. */
template <class Array, class T>
Array* createArray(const char* api, const T* value, uint64_t size) {
  if (value == nullptr && size > 0) {
    gradkit::fail(ACLNN_ERR_PARAM_NULLPTR, api, "value", "non-null when size > 0",
                  "nullptr with size " + std::to_string(size));
    return nullptr;
  }
  // No caller holds more than 2^48 bytes of values (value + size would not even be a valid pointer).
  constexpr uint64_t kMaxSize = (uint64_t{1} << 48) / sizeof(T);
  if (size > kMaxSize) {
    gradkit::fail(ACLNN_ERR_PARAM_INVALID, api, "size", "<= " + std::to_string(kMaxSize) + " elements",
                  std::to_string(size));
    return nullptr;
  }
  try {
    auto* array = new Array();
    array->values.assign(value, value + size);
    return array;
  } catch (const std::exception&) {  // bad_alloc, or length_error for an absurd size
    gradkit::fail(ACLNN_ERR_INNER, api, "size", "a size that fits in memory", std::to_string(size));
    return nullptr;
  }
}

}  // namespace

extern "C" aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  return createArray<aclIntArray>("aclCreateIntArray", value, size);
}

extern "C" aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

extern "C" aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
  return createArray<aclFloatArray>("aclCreateFloatArray", value, size);
}

extern "C" aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

extern "C" aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  return createArray<aclBoolArray>("aclCreateBoolArray", value, size);
}

extern "C" aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

namespace {

aclnnStatus nullArgument(const char* api, const char* arg) {
  return gradkit::fail(ACLNN_ERR_PARAM_NULLPTR, api, arg, "non-null", "nullptr");
}

/** Hands `values` to the caller as a new[] array (see acl_meta.h). */
aclnnStatus copyOut(const char* api, const std::vector<int64_t>& values, int64_t** out, uint64_t* count) {
  auto* copy = new (std::nothrow) int64_t[values.size()];
  if (copy == nullptr) return gradkit::failText(ACLNN_ERR_INNER, api, "out of memory");
  std::copy(values.begin(), values.end(), copy);
  *out = copy;
  *count = values.size();
  return ACLNN_SUCCESS;
}

aclnnStatus getDims(const char* api, const aclTensor* tensor, const std::vector<int64_t> aclTensor::*member,
                    int64_t** out, uint64_t* count, const char* outName, const char* countName) {
  if (tensor == nullptr) return nullArgument(api, "tensor");
  if (out == nullptr) return nullArgument(api, outName);
  if (count == nullptr) return nullArgument(api, countName);
  return copyOut(api, tensor->*member, out, count);
}

}  // namespace

extern "C" aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  return getDims("aclGetViewShape", tensor, &aclTensor::viewDims, viewDims, viewDimsNum, "viewDims", "viewDimsNum");
}

extern "C" aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  return getDims("aclGetViewStrides", tensor, &aclTensor::strides, stridesValue, stridesNum, "stridesValue",
                 "stridesNum");
}

extern "C" aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  return getDims("aclGetStorageShape", tensor, &aclTensor::storageDims, storageDims, storageDimsNum, "storageDims",
                 "storageDimsNum");
}

extern "C" aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  if (tensor == nullptr) return nullArgument("aclGetViewOffset", "tensor");
  if (offset == nullptr) return nullArgument("aclGetViewOffset", "offset");
  *offset = tensor->offset;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  if (tensor == nullptr) return nullArgument("aclGetDataType", "tensor");
  if (dataType == nullptr) return nullArgument("aclGetDataType", "dataType");
  *dataType = tensor->dtype;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  if (tensor == nullptr) return nullArgument("aclGetFormat", "tensor");
  if (format == nullptr) return nullArgument("aclGetFormat", "format");
  *format = tensor->format;
  return ACLNN_SUCCESS;
}
