#include "base/dtype.h"

#include <array>
#include <cctype>
#include <cstring>

namespace gradkit {
namespace {

struct DtypeFacts {
  aclDataType dtype;
  size_t size;            // bytes per element; 0 when elements are not whole bytes
  const char* name;       // CANN's name
  const char* shortName;  // CLI / case-file name
};

// Every aclDataType of acl_base.h, with CANN's names.
constexpr std::array<DtypeFacts, 28> kDtypes = {{
    {ACL_DT_UNDEFINED, 0, "UNDEFINED", "undefined"},
    {ACL_FLOAT, 4, "FLOAT", "fp32"},
    {ACL_FLOAT16, 2, "FLOAT16", "fp16"},
    {ACL_INT8, 1, "INT8", "int8"},
    {ACL_INT32, 4, "INT32", "int32"},
    {ACL_UINT8, 1, "UINT8", "uint8"},
    {ACL_INT16, 2, "INT16", "int16"},
    {ACL_UINT16, 2, "UINT16", "uint16"},
    {ACL_UINT32, 4, "UINT32", "uint32"},
    {ACL_INT64, 8, "INT64", "int64"},
    {ACL_UINT64, 8, "UINT64", "uint64"},
    {ACL_DOUBLE, 8, "DOUBLE", "fp64"},
    {ACL_BOOL, 1, "BOOL", "bool"},
    {ACL_STRING, 0, "STRING", "string"},
    {ACL_COMPLEX64, 8, "COMPLEX64", "complex64"},
    {ACL_COMPLEX128, 16, "COMPLEX128", "complex128"},
    {ACL_BF16, 2, "BFLOAT16", "bf16"},
    {ACL_INT4, 0, "INT4", "int4"},
    {ACL_UINT1, 0, "UINT1", "uint1"},
    {ACL_COMPLEX32, 4, "COMPLEX32", "complex32"},
    {ACL_HIFLOAT8, 1, "HIFLOAT8", "hifp8"},
    {ACL_FLOAT8_E5M2, 1, "FLOAT8_E5M2", "fp8_e5m2"},
    {ACL_FLOAT8_E4M3FN, 1, "FLOAT8_E4M3FN", "fp8_e4m3fn"},
    {ACL_FLOAT8_E8M0, 1, "FLOAT8_E8M0", "fp8_e8m0"},
    {ACL_FLOAT6_E3M2, 0, "FLOAT6_E3M2", "fp6_e3m2"},
    {ACL_FLOAT6_E2M3, 0, "FLOAT6_E2M3", "fp6_e2m3"},
    {ACL_FLOAT4_E2M1, 0, "FLOAT4_E2M1", "fp4_e2m1"},
    {ACL_FLOAT4_E1M2, 0, "FLOAT4_E1M2", "fp4_e1m2"},
}};

const DtypeFacts* find(aclDataType dtype) {
  for (const DtypeFacts& facts : kDtypes) {
    if (facts.dtype == dtype) return &facts;
  }
  return nullptr;
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

size_t dtypeSize(aclDataType dtype) {
  const DtypeFacts* facts = find(dtype);
  return facts == nullptr ? 0 : facts->size;
}

std::string dtypeName(aclDataType dtype) {
  const DtypeFacts* facts = find(dtype);
  return facts == nullptr ? "UNKNOWN(" + std::to_string(static_cast<int>(dtype)) + ")" : facts->name;
}

std::string dtypeShortName(aclDataType dtype) {
  const DtypeFacts* facts = find(dtype);
  return facts == nullptr ? "unknown(" + std::to_string(static_cast<int>(dtype)) + ")" : facts->shortName;
}

std::optional<aclDataType> parseDtype(std::string_view name) {
  for (const DtypeFacts& facts : kDtypes) {
    if (facts.dtype == ACL_DT_UNDEFINED) continue;  // not a type one can ask for
    if (equalsIgnoringCase(name, facts.shortName) || equalsIgnoringCase(name, facts.name)) return facts.dtype;
  }
  // PyTorch's spellings, common in case files written by hand.
  if (equalsIgnoringCase(name, "float32")) return ACL_FLOAT;
  if (equalsIgnoringCase(name, "float64")) return ACL_DOUBLE;
  return std::nullopt;
}

bool isFloatingDtype(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_DOUBLE:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
      return true;
    default:
      return false;
  }
}

bool isIntegerDtype(aclDataType dtype) {
  switch (dtype) {
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_INT64:
    case ACL_UINT64:
      return true;
    default:
      return false;
  }
}

int rawDtypeValue(const aclDataType& value) {
  int bits = 0;
  static_assert(sizeof bits == sizeof value);
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

std::string rawDtypeName(int raw) {
  return isDtypeInRange(raw) ? dtypeName(static_cast<aclDataType>(raw)) : "UNKNOWN(" + std::to_string(raw) + ")";
}

}  // namespace gradkit

extern "C" size_t aclDataTypeSize(aclDataType dataType) { return gradkit::dtypeSize(dataType); }
