// The text helpers of the flash attention rule book (fa_check_common.cpp, fa_check_masking.cpp): every rejection
// reads "<api>: argument '<name>': expected ..., given ..." (base/error.h), with shapes and arrays spelled alike.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"

namespace gradkit::ops::fa_text {

inline std::string str(int64_t value) { return std::to_string(value); }

inline std::string shapeText(const aclTensor& t) { return "shape " + t.shapeString(); }

inline std::string arrayText(const aclIntArray& a) { return dimsString(a.values); }

/** 161002 with the standard message. */
inline aclnnStatus invalid(std::string_view api, std::string_view name, const std::string& expected,
                           const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, given);
}

/** A double as the shortest text that reads back as the same float ("%.9g"). */
inline std::string doubleText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace gradkit::ops::fa_text
