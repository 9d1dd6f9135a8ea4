// aclScalar: creation with validation, reading as double or int64 (every numeric dtype CANN scalars take),
// destruction.
#include <cmath>
#include <cstring>
#include <new>

#include "base/dtype.h"
#include "base/error.h"
#include "gradkit/float_convert.h"
#include "opapi/tensor.h"

namespace {

template <class T>
T readAs(const unsigned char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

/** 2^(bits - 127); 0xff is NaN (OCP MX E8M0 scale format, no sign, no zero). */
double e8m0ToDouble(uint8_t bits) { return bits == 0xff ? std::nan("") : std::ldexp(1.0, int{bits} - 127); }

/** True for the scalar dtypes toDouble() can read. */
bool isReadableScalarDtype(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_DOUBLE:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_BOOL:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
    case ACL_COMPLEX32:
    case ACL_COMPLEX64:
    case ACL_COMPLEX128:
      return true;
    default:
      return false;
  }
}

}  // namespace

double aclScalar::toDouble() const {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_COMPLEX64:  // complex scalars: the real part
      return readAs<float>(bytes);
    case ACL_DOUBLE:
    case ACL_COMPLEX128:
      return readAs<double>(bytes);
    case ACL_FLOAT16:
    case ACL_COMPLEX32:
      return gradkit::halfToFloat(readAs<uint16_t>(bytes));
    case ACL_BF16:
      return gradkit::bf16ToFloat(readAs<uint16_t>(bytes));
    case ACL_FLOAT8_E5M2:
      return gradkit::fp8e5m2ToFloat(bytes[0]);
    case ACL_FLOAT8_E4M3FN:
      return gradkit::fp8e4m3ToFloat(bytes[0]);
    case ACL_FLOAT8_E8M0:
      return e8m0ToDouble(bytes[0]);
    case ACL_INT8:
      return readAs<int8_t>(bytes);
    case ACL_UINT8:
      return bytes[0];
    case ACL_INT16:
      return readAs<int16_t>(bytes);
    case ACL_UINT16:
      return readAs<uint16_t>(bytes);
    case ACL_INT32:
      return readAs<int32_t>(bytes);
    case ACL_UINT32:
      return readAs<uint32_t>(bytes);
    case ACL_INT64:
      return static_cast<double>(readAs<int64_t>(bytes));
    case ACL_UINT64:
      return static_cast<double>(readAs<uint64_t>(bytes));
    case ACL_BOOL:
      return bytes[0] != 0 ? 1.0 : 0.0;
    default:
      return std::nan("");
  }
}

int64_t aclScalar::toInt64() const {
  switch (dtype) {
    case ACL_INT8:
      return readAs<int8_t>(bytes);
    case ACL_UINT8:
      return bytes[0];
    case ACL_INT16:
      return readAs<int16_t>(bytes);
    case ACL_UINT16:
      return readAs<uint16_t>(bytes);
    case ACL_INT32:
      return readAs<int32_t>(bytes);
    case ACL_UINT32:
      return readAs<uint32_t>(bytes);
    case ACL_INT64:
      return readAs<int64_t>(bytes);
    case ACL_UINT64: {
      const uint64_t value = readAs<uint64_t>(bytes);  // saturates: int64 cannot hold the top half
      return value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                                : static_cast<int64_t>(value);
    }
    case ACL_BOOL:
      return bytes[0] != 0 ? 1 : 0;
    default:
      break;
  }
  // Floating types: truncate toward zero; NaN gives 0 and out-of-range values saturate (a plain cast
  // would be undefined behaviour there).
  const double value = toDouble();
  if (std::isnan(value)) return 0;
  if (value >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (value < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

extern "C" aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  if (value == nullptr) {
    gradkit::fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateScalar", "value", "non-null", "nullptr");
    return nullptr;
  }
  const int rawDtype = gradkit::rawDtypeValue(dataType);
  if (!gradkit::isDtypeInRange(rawDtype) || !isReadableScalarDtype(dataType)) {
    gradkit::fail(ACLNN_ERR_PARAM_INVALID, "aclCreateScalar", "dataType",
                  "a numeric dtype (integer, BOOL, FLOAT/FLOAT16/BFLOAT16/DOUBLE, FLOAT8, COMPLEX)",
                  gradkit::rawDtypeName(rawDtype));
    return nullptr;
  }
  auto* scalar = new (std::nothrow) aclScalar();
  if (scalar == nullptr) {
    gradkit::failText(ACLNN_ERR_INNER, "aclCreateScalar", "out of memory");
    return nullptr;
  }
  scalar->dtype = dataType;
  std::memcpy(scalar->bytes, value, gradkit::dtypeSize(dataType));
  return scalar;
}

extern "C" aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  delete scalar;
  return ACLNN_SUCCESS;
}
