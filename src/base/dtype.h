// Facts about aclDataType: byte size, names, classes. One place so messages and CLI agree.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "acl/acl_base.h"

namespace gradkit {

/** Bytes per element; 0 for sub-byte, string and undefined types. */
size_t dtypeSize(aclDataType dtype);

/** CANN's upper-case name as used in messages: "FLOAT", "FLOAT16", "BFLOAT16", "INT8", ... or "UNKNOWN(<n>)". */
std::string dtypeName(aclDataType dtype);

/** The short name used by the CLI, case files and JSON: "fp32", "fp16", "bf16", "int8", "uint8", "int32", ... */
std::string dtypeShortName(aclDataType dtype);

/** Parses a short name ("fp32") or CANN name ("FLOAT"); nullopt when unknown. */
std::optional<aclDataType> parseDtype(std::string_view name);

/** FLOAT, FLOAT16, BF16, DOUBLE and the fp8 types. */
bool isFloatingDtype(aclDataType dtype);

/** INT8..UINT64 (BOOL excluded). */
bool isIntegerDtype(aclDataType dtype);

/** FLOAT8_E5M2 or FLOAT8_E4M3FN: the fp8 data formats (FLOAT8_E8M0 is a scale format, HIFLOAT8 another family). */
inline bool isFloat8Dtype(aclDataType dtype) { return dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN; }

/**
 * The bits of a dtype argument as an int. A C caller may pass any value; C++ may only hold values in the enum's
 * range (-64..63) as aclDataType, so a value from outside is read through this and rejected as a number.
 */
int rawDtypeValue(const aclDataType& value);

/** True when `raw` (from rawDtypeValue) may be used as an aclDataType. */
inline bool isDtypeInRange(int raw) { return raw >= -64 && raw <= 63; }

/** dtypeName for a raw value: the name when in range (UNKNOWN(n) for unassigned values), else the number. */
std::string rawDtypeName(int raw);

}  // namespace gradkit
