#include "tensor_arg.h"

#include <string>

#include "acl/acl_base.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

// DLPack's bool code (added in DLPack 0.8; absent from older headers).
constexpr uint8_t kDlpackBoolCode = 6;

std::string describe(const char* name) { return std::string("argument '") + name + "'"; }

aclDataType dtypeOfDlpack(const DLDataType& type, const char* name) {
  if (type.lanes == 1) {
    switch (type.code) {
      case kDLFloat:
        if (type.bits == 16) return ACL_FLOAT16;
        if (type.bits == 32) return ACL_FLOAT;
        if (type.bits == 64) return ACL_DOUBLE;
        break;
      case kDLBfloat:
        if (type.bits == 16) return ACL_BF16;
        break;
      case kDLInt:
        if (type.bits == 8) return ACL_INT8;
        if (type.bits == 16) return ACL_INT16;
        if (type.bits == 32) return ACL_INT32;
        if (type.bits == 64) return ACL_INT64;
        break;
      case kDLUInt:
        if (type.bits == 8) return ACL_UINT8;
        if (type.bits == 16) return ACL_UINT16;
        if (type.bits == 32) return ACL_UINT32;
        if (type.bits == 64) return ACL_UINT64;
        break;
      case kDlpackBoolCode:
        if (type.bits == 8) return ACL_BOOL;
        break;
      default:
        break;
    }
  }
  throw py::type_error(describe(name) + ": DLPack dtype (code " + std::to_string(type.code) + ", " +
                       std::to_string(type.bits) + " bits, " + std::to_string(type.lanes) +
                       " lanes) has no aclDataType");
}

aclDataType dtypeOfBufferFormat(std::string format, size_t itemsize, const char* name) {
  // Byte-order and alignment prefixes: only native order reaches here (numpy exports native arrays as such).
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<')) format.erase(0, 1);
  if (format.size() == 1) {
    const char kind = format[0];
    if (kind == 'e') return ACL_FLOAT16;
    if (kind == 'f') return ACL_FLOAT;
    if (kind == 'd') return ACL_DOUBLE;
    if (kind == '?') return ACL_BOOL;
    const bool isSigned = kind == 'b' || kind == 'h' || kind == 'i' || kind == 'l' || kind == 'q';
    const bool isUnsigned = kind == 'B' || kind == 'H' || kind == 'I' || kind == 'L' || kind == 'Q';
    if (isSigned || isUnsigned) {
      switch (itemsize) {
        case 1:
          return isSigned ? ACL_INT8 : ACL_UINT8;
        case 2:
          return isSigned ? ACL_INT16 : ACL_UINT16;
        case 4:
          return isSigned ? ACL_INT32 : ACL_UINT32;
        case 8:
          return isSigned ? ACL_INT64 : ACL_UINT64;
        default:
          break;
      }
    }
  }
  throw py::type_error(describe(name) + ": buffer format '" + format + "' has no aclDataType");
}

/** The aclTensor over `data` with element strides; the storage is the span the view reaches, from `data` on. */
aclTensor* createView(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, aclDataType dtype,
                      void* data, const char* name) {
  int64_t extent = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0) {
      throw py::value_error(describe(name) + ": negative strides are not supported (pass a copy)");
    }
    if (shape[i] == 0) {
      extent = 0;
      break;
    }
    extent += (shape[i] - 1) * strides[i];
  }
  const int64_t storage[1] = {extent};
  aclTensor* tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, storage, 1,
                                      extent > 0 ? data : nullptr);
  if (tensor == nullptr) {
    const char* text = aclGetRecentErrMsg();
    throw py::value_error(describe(name) + ": aclCreateTensor refused it: " + (text != nullptr ? text : ""));
  }
  return tensor;
}

void checkOverride(std::optional<aclDataType> override, size_t itemsize, const char* name) {
  if (override && aclDataTypeSize(*override) != itemsize) {
    throw py::type_error(describe(name) + ": the dtype given has " + std::to_string(aclDataTypeSize(*override)) +
                         "-byte elements, the object " + std::to_string(itemsize) + "-byte ones");
  }
}

}  // namespace

TensorArg TensorArg::from(py::handle object, const char* name, bool writable) {
  std::optional<aclDataType> override;
  if (py::isinstance<py::tuple>(object)) {
    const auto pair = py::reinterpret_borrow<py::tuple>(object);
    if (pair.size() != 2) throw py::type_error(describe(name) + ": a tuple must be (array, acl_dtype)");
    override = static_cast<aclDataType>(pair[1].cast<int>());
    object = pair[0];
  }
  TensorArg result;
  if (PyObject_CheckBuffer(object.ptr())) {
    result.buffer_ = std::make_unique<py::buffer_info>(py::reinterpret_borrow<py::buffer>(object).request(writable));
    const py::buffer_info& info = *result.buffer_;
    const auto itemsize = static_cast<size_t>(info.itemsize);
    checkOverride(override, itemsize, name);
    const aclDataType dtype = override ? *override : dtypeOfBufferFormat(info.format, itemsize, name);
    std::vector<int64_t> strides;
    for (const auto stride : info.strides) {
      if (stride % info.itemsize != 0) {
        throw py::value_error(describe(name) + ": a stride of " + std::to_string(stride) +
                              " bytes is not a whole number of elements");
      }
      strides.push_back(stride / info.itemsize);
    }
    const std::vector<int64_t> shape(info.shape.begin(), info.shape.end());
    result.tensor_ = createView(shape, strides, dtype, info.ptr, name);
    return result;
  }
  if (!py::hasattr(object, "__dlpack__")) {
    throw py::type_error(describe(name) +
                         ": expected a torch tensor, a numpy array or another object with "
                         "__dlpack__ or the buffer protocol, given " +
                         std::string(py::str(py::type::of(object))));
  }
  // Meta and fake tensors (torch.compile's and FakeTensorMode's tracing) have no data; say so before DLPack fails.
  if (py::hasattr(object, "device") && py::hasattr(object.attr("device"), "type")) {
    const std::string device = py::str(object.attr("device").attr("type"));
    if (device != "cpu") {
      throw py::value_error(describe(name) + ": expected a CPU tensor with data (gradkit computes on the host), given" +
                            " a tensor on device '" + device + "'" +
                            (device == "meta" ? " (meta tensors have no data to compute on)" : ""));
    }
  }
  py::capsule capsule = object.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  // The capsule is consumed: rename it so that its destructor leaves the export to us (DLPack protocol).
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  result.managed_ = managed;
  const DLTensor& view = managed->dl_tensor;
  if (view.device.device_type != kDLCPU) {
    throw py::value_error(describe(name) + ": only CPU tensors are supported (DLPack device type " +
                          std::to_string(view.device.device_type) + ")");
  }
  const aclDataType dtype = override ? *override : dtypeOfDlpack(view.dtype, name);
  checkOverride(override, view.dtype.bits / 8, name);
  std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
  std::vector<int64_t> strides(static_cast<size_t>(view.ndim));
  if (view.strides != nullptr) {
    strides.assign(view.strides, view.strides + view.ndim);
  } else {
    int64_t step = 1;
    for (int i = view.ndim - 1; i >= 0; --i) {
      strides[static_cast<size_t>(i)] = step;
      step *= shape[static_cast<size_t>(i)];
    }
  }
  int64_t elements = 1;
  for (const int64_t dim : shape) elements *= dim;
  if (view.data == nullptr && elements > 0) {
    std::string dims;
    for (const int64_t dim : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(dim);
    throw py::value_error(describe(name) + ": expected a tensor with data, given one of shape [" + dims +
                          "] whose data pointer is null (a fake tensor, as under FakeTensorMode or torch.compile's "
                          "tracing, has no data to compute on)");
  }
  void* data = static_cast<char*>(view.data) + view.byte_offset;
  result.tensor_ = createView(shape, strides, dtype, data, name);
  return result;
}

std::optional<TensorArg> TensorArg::fromOptional(py::handle object, const char* name, bool writable) {
  if (object.is_none()) return std::nullopt;
  return from(object, name, writable);
}

TensorArg::TensorArg(TensorArg&& other) noexcept
    : tensor_(other.tensor_), managed_(other.managed_), buffer_(std::move(other.buffer_)) {
  other.tensor_ = nullptr;
  other.managed_ = nullptr;
}

TensorArg::~TensorArg() {
  if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
}

}  // namespace gradkit::python
