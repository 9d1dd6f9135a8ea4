// GRADKIT_DISABLE_OPS reports every listed aclnn entry point as unavailable (161002 with a message), before any
// argument is looked at; unlisted ones go on to their own checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_dropout.h"
#include "aclnnop/aclnn_dropout_backward.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "aclnnop/aclnn_threshold_backward.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

struct EntryPoint {
  const char* api;
  std::function<aclnnStatus(uint64_t*, aclOpExecutor**)> callWithNullArguments;
};

std::vector<EntryPoint> everyEntryPoint() {
  return {
      {"aclnnThresholdBackward",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnThresholdBackwardGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, s, e);
       }},
      {"aclnnDropout",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutGetWorkspaceSize(nullptr, 0.5, true, 1, 0, nullptr, nullptr, s, e);
       }},
      {"aclnnDropoutGenMask",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutGenMaskGetWorkspaceSize(nullptr, 0.5, 1, 0, nullptr, s, e);
       }},
      {"aclnnDropoutGenMaskV2",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutGenMaskV2GetWorkspaceSize(nullptr, 0.5, 1, 0, ACL_FLOAT, nullptr, s, e);
       }},
      {"aclnnDropoutGenMaskV2Tensor",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutGenMaskV2TensorGetWorkspaceSize(nullptr, 0.5, nullptr, nullptr, 0, ACL_FLOAT, nullptr, s,
                                                            e);
       }},
      {"aclnnDropoutV3",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutV3GetWorkspaceSize(nullptr, nullptr, 0.5, 1, 0, nullptr, nullptr, s, e);
       }},
      {"aclnnDropoutDoMask",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutDoMaskGetWorkspaceSize(nullptr, nullptr, 0.5, nullptr, s, e);
       }},
      {"aclnnDropoutBackward",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutBackwardGetWorkspaceSize(nullptr, nullptr, 2.0, nullptr, s, e);
       }},
      {"aclnnDropoutV3Grad",
       [](uint64_t* s, aclOpExecutor** e) {
         return aclnnDropoutV3GradGetWorkspaceSize(nullptr, nullptr, 2.0, nullptr, s, e);
       }},
  };
}

TEST(DisableOps, EveryListedEntryPointIsUnavailableAndTheOthersAreNot) {
  for (const EntryPoint& listed : everyEntryPoint()) {
    ASSERT_EQ(setenv("GRADKIT_DISABLE_OPS", (std::string("aclnnSomethingElse, ") + listed.api).c_str(), 1), 0);
    for (const EntryPoint& entry : everyEntryPoint()) {
      uint64_t size = 0;
      aclOpExecutor* executor = nullptr;
      const aclnnStatus status = entry.callWithNullArguments(&size, &executor);
      const std::string message = recentError();
      if (entry.api == listed.api) {
        EXPECT_EQ(status, ACLNN_ERR_PARAM_INVALID) << entry.api;
        EXPECT_TRUE(mentions(message, {entry.api, "unavailable", "GRADKIT_DISABLE_OPS"}));
      } else {
        EXPECT_EQ(status, ACLNN_ERR_PARAM_NULLPTR) << entry.api << " is not listed: its own null check answers";
        EXPECT_EQ(message.find("GRADKIT_DISABLE_OPS"), std::string::npos) << message;
      }
      EXPECT_EQ(executor, nullptr);
    }
  }
  ASSERT_EQ(unsetenv("GRADKIT_DISABLE_OPS"), 0);
}

}  // namespace
}  // namespace gradkit::test
