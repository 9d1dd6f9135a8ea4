// The flash attention entry points as the suites call them: the case's "api" picks the GetWorkspaceSize and the
// second phase of one upstream version, with the case's tensors (nullptr where the case leaves one out), arrays and
// attributes in that version's parameter order (spec fag.md 2.2).
#pragma once

#include <string>

#include "harness/op_suite.h"
#include "suites/flash_attention_suite_common.h"

namespace gradkit::cli {

/** One entry point's two phases bound to a case. */
struct FaEntryCall {
  PlanCall plan;
  RunCall run;
};

/**
 * The forward entry point fc.api (or `api` when given) writing attention out to the tensor `outKey` and the
 * statistics to "softmaxMax" / "softmaxSum". Throws HarnessError for an unknown entry point.
 */
FaEntryCall faForwardCall(OpCase& c, const FaCase& fc, const std::string& outKey, const std::string& api = "");

/** The backward entry point fc.api, reading "attentionIn" and the statistics, writing "dq", "dk", "dv". */
FaEntryCall faBackwardCall(OpCase& c, const FaCase& fc);

/** The forward entry point of the family of the backward entry point `backwardApi` ("GradV2" -> "ScoreV2"). */
std::string faForwardApiFor(const std::string& backwardApi);

}  // namespace gradkit::cli
