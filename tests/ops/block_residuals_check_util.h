// Helpers of the BlockAttentionResiduals[Grad] argument-check tests: one rule as a table row (what to break, the code
// and the message fragments expected), the judgement of one outcome, and the run of every accepted call.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::block_residuals {

using mhc::Outcome;
using mhc::TensorPool;

inline constexpr aclnnStatus kNull = ACLNN_ERR_PARAM_NULLPTR;     // 161001
inline constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;  // 161002

/** The sizes and form of the valid call each test starts from. */
struct Config {
  aclDataType dtype = ACL_BF16;
  int64_t t = 6, n = 3, h = 64;
  bool strided = false;  // every tensor a view with all strides doubled
};

/** One rule: a valid call of `config`, broken by `breakIt`, must fail with `code` and every fragment. */
template <class Call>
struct Rule {
  const char* name;
  std::function<void(Call&)> breakIt;
  aclnnStatus code;
  std::vector<std::string> fragments;
  Config config = {};
};

/** A breaker that replaces one tensor by a fresh one of `dtype`, `shape` and `format` (null for nullptr). */
template <class Call, class Member>
std::function<void(Call&)> replace(Member Call::*member, aclDataType dtype, std::vector<int64_t> shape,
                                   aclFormat format = ACL_FORMAT_ND) {
  return [=](Call& c) { c.*member = c.pool.make(dtype, shape, {}, format); };
}
template <class Call, class Member>
std::function<void(Call&)> null(Member Call::*member) {
  return [=](Call& c) { c.*member = nullptr; };
}

/** The status is `code`, the message names `api` and has every fragment and "(code <code>)". */
inline ::testing::AssertionResult rejects(const Outcome& outcome, aclnnStatus code, const std::string& api,
                                          const std::vector<std::string>& fragments) {
  if (outcome.status != code) {
    return ::testing::AssertionFailure() << "status " << outcome.status << ", expected " << code << "; message \""
                                         << outcome.message << "\"";
  }
  std::vector<std::string> all = fragments;
  all.push_back(api + ":");
  all.push_back("(code " + std::to_string(code) + ")");
  for (const std::string& fragment : all) {
    if (outcome.message.find(fragment) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message \"" << outcome.message << "\" does not mention \"" << fragment << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

/** Each rule on a freshly built call. */
template <class Call>
void expectEachRejected(const std::vector<Rule<Call>>& rules) {
  for (const Rule<Call>& rule : rules) {
    Call call(rule.config);
    rule.breakIt(call);
    EXPECT_TRUE(rejects(call.call(), rule.code, Call::kApi, rule.fragments)) << rule.name;
  }
}

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

/** A failed call must hand out no executor; a successful one is run and synchronized. */
inline Outcome settle(aclnnStatus status, uint64_t size, aclOpExecutor* executor, RunFn run) {
  const Outcome outcome{status, recentError()};
  if (status != ACLNN_SUCCESS) {
    EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return outcome;
  }
  EXPECT_EQ(outcome.message, "") << "a successful call records no message";
  EXPECT_NE(executor, nullptr) << "a successful call must hand out an executor";
  if (executor == nullptr) return outcome;
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(run(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return outcome;
}

/** The test names end with the profile ("BlockResiduals/BlockResidualsChecks.X/Ascend950"). */
inline std::string profileName(const ::testing::TestParamInfo<const char*>& info) { return info.param; }

}  // namespace gradkit::test::block_residuals
