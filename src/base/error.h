// Error reporting shared by the runtime and every operator: a status code plus a message that
// aclGetRecentErrMsg() returns to the thread that made the failing call.
#pragma once

#include <string>
#include <string_view>

#include "aclnn/aclnn_base.h"

namespace gradkit {

/** Appends `message` to this thread's recent-error text. */
void recordError(std::string_view message);

/** Takes this thread's recent-error text (and clears it). */
std::string takeRecentErrors();

/**
 * Records "<api>: argument '<arg>': expected <expected>, given <given>." and returns `code`.
 * Example: fail(ACLNN_ERR_PARAM_INVALID, "aclnnThresholdBackward", "self", "dtype FLOAT16 (as gradOutput)", "FLOAT").
 */
int fail(int code, std::string_view api, std::string_view arg, std::string_view expected, std::string_view given);

/** Records "<api>: <text>" and returns `code`, for failures that are not about one argument. */
int failText(int code, std::string_view api, std::string_view text);

}  // namespace gradkit
