#include "harness/elements.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/dtype.h"
#include "gradkit/float_convert.h"
#include "harness/error.h"

namespace gradkit::cli {
namespace {

template <class T>
T read(const void* data, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(data) + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

template <class T>
void write(void* data, int64_t index, T value) {
  std::memcpy(static_cast<unsigned char*>(data) + index * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
}

// Truncates toward zero and saturates, so out-of-range case values stay well defined.
template <class T>
T saturate(double value) {
  if (std::isnan(value)) return T{0};
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (value <= lo) return std::numeric_limits<T>::lowest();
  if (value >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(std::trunc(value));
}

[[noreturn]] void unsupported(aclDataType dtype) {
  throw HarnessError("the harness cannot hold values of dtype " + dtypeName(dtype));
}

}  // namespace

double loadAsDouble(aclDataType dtype, const void* data, int64_t index) {
  switch (dtype) {
    case ACL_FLOAT:
      return read<float>(data, index);
    case ACL_DOUBLE:
      return read<double>(data, index);
    case ACL_FLOAT16:
      return halfToFloat(read<uint16_t>(data, index));
    case ACL_BF16:
      return bf16ToFloat(read<uint16_t>(data, index));
    case ACL_FLOAT8_E4M3FN:
      return fp8e4m3ToFloat(read<uint8_t>(data, index));
    case ACL_FLOAT8_E5M2:
      return fp8e5m2ToFloat(read<uint8_t>(data, index));
    case ACL_INT8:
      return read<int8_t>(data, index);
    case ACL_UINT8:
      return read<uint8_t>(data, index);
    case ACL_INT16:
      return read<int16_t>(data, index);
    case ACL_UINT16:
      return read<uint16_t>(data, index);
    case ACL_INT32:
      return read<int32_t>(data, index);
    case ACL_UINT32:
      return read<uint32_t>(data, index);
    case ACL_INT64:
      return static_cast<double>(read<int64_t>(data, index));
    case ACL_UINT64:
      return static_cast<double>(read<uint64_t>(data, index));
    case ACL_BOOL:
      return read<uint8_t>(data, index) != 0 ? 1.0 : 0.0;
    default:
      unsupported(dtype);
  }
}

void storeFromDouble(aclDataType dtype, void* data, int64_t index, double value) {
  switch (dtype) {
    case ACL_FLOAT:
      return write(data, index, static_cast<float>(value));
    case ACL_DOUBLE:
      return write(data, index, value);
    case ACL_FLOAT16:
      return write(data, index, floatToHalf(static_cast<float>(value)));
    case ACL_BF16:
      return write(data, index, floatToBf16(static_cast<float>(value)));
    case ACL_FLOAT8_E4M3FN:
      return write(data, index, floatToFp8e4m3(static_cast<float>(value)));
    case ACL_FLOAT8_E5M2:
      return write(data, index, floatToFp8e5m2(static_cast<float>(value)));
    case ACL_INT8:
      return write(data, index, saturate<int8_t>(value));
    case ACL_UINT8:
      return write(data, index, saturate<uint8_t>(value));
    case ACL_INT16:
      return write(data, index, saturate<int16_t>(value));
    case ACL_UINT16:
      return write(data, index, saturate<uint16_t>(value));
    case ACL_INT32:
      return write(data, index, saturate<int32_t>(value));
    case ACL_UINT32:
      return write(data, index, saturate<uint32_t>(value));
    case ACL_INT64:
      return write(data, index, saturate<int64_t>(value));
    case ACL_UINT64:
      return write(data, index, saturate<uint64_t>(value));
    case ACL_BOOL:
      return write(data, index, static_cast<uint8_t>(value != 0.0 ? 1 : 0));
    default:
      unsupported(dtype);
  }
}

double roundToDtype(aclDataType dtype, double value) {
  unsigned char bytes[8] = {};
  storeFromDouble(dtype, bytes, 0, value);
  return loadAsDouble(dtype, bytes, 0);
}

bool holdsSpecialValues(aclDataType dtype) {
  return dtype == ACL_FLOAT || dtype == ACL_DOUBLE || dtype == ACL_FLOAT16 || dtype == ACL_BF16 ||
         dtype == ACL_FLOAT8_E4M3FN || dtype == ACL_FLOAT8_E5M2;
}

}  // namespace gradkit::cli
