// aclnnMhcSinkhorn[Backward]GetWorkspaceSize: every rejection of upstream's op-api rules in its order (status and a
// message naming the argument, the expected and the given value), the profile gate, and the accepted edge cases of
// upstream's unit tests (both saved tensors absent or of one element, an empty backward, any rank of the saved
// tensors with the right element count, in-place calls).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test {
namespace {

using mhc::failsWith;
using mhc::Outcome;
using mhc::ScopedSoc;
using mhc::TensorPool;

/** The status and message of a first phase; an accepted call is run (so every accepted case also computes). */
Outcome runIfPlanned(aclnnStatus status, uint64_t size, aclOpExecutor* executor,
                     aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream)) {
  Outcome o{status, aclGetRecentErrMsg()};
  if (status == ACLNN_SUCCESS) {
    std::vector<unsigned char> workspace(size);
    EXPECT_EQ(run(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  }
  return o;
}

/** One forward call: x [T, n, n] and the saved tensors of `iters`, every piece replaceable. */
struct Forward {
  TensorPool pool;
  int64_t tokens = 16, n = 4, iters = 3;
  aclTensor* x = pool.make(ACL_FLOAT, {16, 4, 4});
  aclTensor* output = pool.make(ACL_FLOAT, {16, 4, 4});
  aclTensor* normOut = pool.make(ACL_FLOAT, {2 * 3 * 16 * 4 * 8});
  aclTensor* sumOut = pool.make(ACL_FLOAT, {2 * 3 * 16 * 8});
  int64_t numIters = 3;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  uint64_t* sizeArg = &size;
  aclOpExecutor** executorArg = &executor;

  Outcome call() {
    const aclnnStatus status =
        aclnnMhcSinkhornGetWorkspaceSize(x, 1e-6f, numIters, output, normOut, sumOut, sizeArg, executorArg);
    return runIfPlanned(status, size, executor, aclnnMhcSinkhorn);
  }
};

/** One backward call of 16 tokens, n = 4, 3 iterations. */
struct Backward {
  TensorPool pool;
  aclTensor* gradOutput = pool.make(ACL_FLOAT, {16, 4, 4});
  aclTensor* normOut = pool.make(ACL_FLOAT, {2 * 3 * 16 * 4 * 8});
  aclTensor* sumOut = pool.make(ACL_FLOAT, {2 * 3 * 16 * 8});
  aclTensor* out = pool.make(ACL_FLOAT, {16, 4, 4});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  uint64_t* sizeArg = &size;
  aclOpExecutor** executorArg = &executor;

  Outcome call() {
    const aclnnStatus status =
        aclnnMhcSinkhornBackwardGetWorkspaceSize(gradOutput, normOut, sumOut, out, sizeArg, executorArg);
    return runIfPlanned(status, size, executor, aclnnMhcSinkhornBackward);
  }
};

/** One rule broken on an otherwise valid Call (Forward or Backward): the status and message fragments it gives. */
template <class Call>
struct Rejection {
  const char* what;
  std::function<void(Call&)> change;
  aclnnStatus code;
  std::vector<std::string> fragments;
};

/** Each rejection on a fresh call: its status, then every fragment in the message. */
template <class Call>
void expectRejections(const std::vector<Rejection<Call>>& rejections) {
  for (const Rejection<Call>& r : rejections) {
    Call call;
    r.change(call);
    const Outcome o = call.call();
    EXPECT_TRUE(failsWith(o, r.code, {})) << r.what;
    for (const std::string& fragment : r.fragments) {
      EXPECT_NE(o.message.find(fragment), std::string::npos)
          << r.what << ": lacks \"" << fragment << "\" in " << o.message;
    }
  }
}

TEST(MhcSinkhornChecks, ForwardRejectionsInUpstreamOrder) {
  expectRejections<Forward>({
      {"workspaceSize", [](Forward& f) { f.sizeArg = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'workspaceSize'"}},
      {"executor", [](Forward& f) { f.executorArg = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'executor'"}},
      {"normOut alone",
       [](Forward& f) { f.sumOut = nullptr; },
       ACLNN_ERR_PARAM_INVALID,
       {"'sumOut'", "both given", "nullptr"}},
      {"sumOut alone",
       [](Forward& f) { f.normOut = f.pool.make(ACL_FLOAT, {1}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "1 elements"}},
      {"null x", [](Forward& f) { f.x = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'x'", "nullptr"}},
      {"null output", [](Forward& f) { f.output = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'output'"}},
      {"x fp16",
       [](Forward& f) {
         f.x = f.pool.make(ACL_FLOAT16, {16, 4, 4});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'x'", "FLOAT16"}},
      {"output bf16",
       [](Forward& f) {
         f.output = f.pool.make(ACL_BF16, {16, 4, 4});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'output'", "BFLOAT16"}},
      {"normOut double",
       [](Forward& f) { f.normOut = f.pool.make(ACL_DOUBLE, {2 * 3 * 16 * 4 * 8}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "DOUBLE"}},
      {"output shape",
       [](Forward& f) {
         f.output = f.pool.make(ACL_FLOAT, {16, 4, 5});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'output'", "[16, 4, 5]"}},
      {"numIters 0", [](Forward& f) { f.numIters = 0; }, ACLNN_ERR_PARAM_INVALID, {"'numIters'", "1 .. 100", "0"}},
      {"numIters 101", [](Forward& f) { f.numIters = 101; }, ACLNN_ERR_PARAM_INVALID, {"'numIters'", "101"}},
      {"rank 2",
       [](Forward& f) {
         f.x = f.pool.make(ACL_FLOAT, {16, 16});
         f.output = f.pool.make(ACL_FLOAT, {16, 16});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'x'", "[T, n, n] or [B, S, n, n]"}},
      {"not square",
       [](Forward& f) {
         f.x = f.pool.make(ACL_FLOAT, {16, 4, 8});
         f.output = f.pool.make(ACL_FLOAT, {16, 4, 8});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'x'", "{4, 6, 8}", "[16, 4, 8]"}},
      {"n 5",
       [](Forward& f) {
         f.x = f.pool.make(ACL_FLOAT, {16, 5, 5});
         f.output = f.pool.make(ACL_FLOAT, {16, 5, 5});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'x'", "{4, 6, 8}"}},
      {"normOut size",
       [](Forward& f) { f.normOut = f.pool.make(ACL_FLOAT, {2 * 3 * 16 * 4 * 4}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "3072 elements", "given 1536"}},
      {"sumOut size",
       [](Forward& f) { f.sumOut = f.pool.make(ACL_FLOAT, {2 * 3 * 16 * 4}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'sumOut'", "768 elements", "given 384"}},
      {"private format",
       [](Forward& f) {
         f.x = f.pool.make(ACL_FLOAT, {16, 4, 4}, {}, ACL_FORMAT_FRACTAL_NZ);
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'x'", "FRACTAL_NZ"}},
      {"empty x",
       [](Forward& f) {
         f.x = f.pool.make(ACL_FLOAT, {0, 4, 4});
         f.output = f.pool.make(ACL_FLOAT, {0, 4, 4});
         f.normOut = nullptr;
         f.sumOut = nullptr;
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'x'", "non-empty"}},
      {"output overlaps normOut",
       [](Forward& f) {
         f.output = f.pool.alias(f.normOut, ACL_FLOAT, {16, 4, 4}, 8);
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "overlap the output output"}},
  });
  ScopedSoc soc("Ascend910B");
  Forward f;
  EXPECT_TRUE(failsWith(f.call(), ACLNN_ERR_PARAM_INVALID, {"Ascend910B", "only on Ascend950"}));
}

TEST(MhcSinkhornChecks, ForwardAcceptsUpstreamsEdgeCases) {
  {  // no saved steps: both nullptr, or both of one element (upstream's outFlag 0)
    Forward f;
    f.normOut = nullptr;
    f.sumOut = nullptr;
    EXPECT_EQ(f.call().status, ACLNN_SUCCESS);
    Forward g;
    g.normOut = g.pool.make(ACL_FLOAT, {1});
    g.sumOut = g.pool.make(ACL_FLOAT, {1});
    EXPECT_EQ(g.call().status, ACLNN_SUCCESS);
  }
  {  // the docs program's 4-D saved tensors (element counts right) and BSND x
    Forward f;
    f.x = f.pool.make(ACL_FLOAT, {2, 8, 6, 6});
    f.output = f.pool.make(ACL_FLOAT, {2, 8, 6, 6});
    f.normOut = f.pool.make(ACL_FLOAT, {6, 6, 8, 16});
    f.sumOut = f.pool.make(ACL_FLOAT, {6, 8, 16});
    EXPECT_EQ(f.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
  {  // in place: output is x
    Forward f;
    f.output = f.x;
    EXPECT_EQ(f.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
}

TEST(MhcSinkhornChecks, BackwardRejectionsInUpstreamOrder) {
  expectRejections<Backward>({
      {"null gradOutput", [](Backward& b) { b.gradOutput = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'gradOutput'"}},
      {"null normOut", [](Backward& b) { b.normOut = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'normOut'"}},
      {"null sumOut", [](Backward& b) { b.sumOut = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'sumOut'"}},
      {"null out", [](Backward& b) { b.out = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, {"'out'"}},
      {"gradOutput fp16",
       [](Backward& b) {
         b.gradOutput = b.pool.make(ACL_FLOAT16, {16, 4, 4});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'gradOutput'", "FLOAT16"}},
      {"normOut fp16",
       [](Backward& b) { b.normOut = b.pool.make(ACL_FLOAT16, {2 * 3 * 16 * 4 * 8}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "FLOAT16"}},
      {"sumOut fp16",
       [](Backward& b) { b.sumOut = b.pool.make(ACL_FLOAT16, {2 * 3 * 16 * 8}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'sumOut'", "FLOAT16"}},
      {"out fp16",
       [](Backward& b) {
         b.out = b.pool.make(ACL_FLOAT16, {16, 4, 4});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'out'", "FLOAT16"}},
      {"rank 5",
       [](Backward& b) {
         b.gradOutput = b.pool.make(ACL_FLOAT, {1, 2, 8, 4, 4});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'gradOutput'", "[T, n, n] or [B, S, n, n]"}},
      {"n 6 against out n 4",
       [](Backward& b) {
         b.gradOutput = b.pool.make(ACL_FLOAT, {16, 6, 6});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'out'", "[16, 4, 4]"}},
      {"normOut not a multiple",
       [](Backward& b) { b.normOut = b.pool.make(ACL_FLOAT, {2 * 3 * 16 * 4 * 8 + 1}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "a multiple of 1024", "3073"}},
      {"iters 101",
       [](Backward& b) { b.normOut = b.pool.make(ACL_FLOAT, {2 * 101 * 16 * 4 * 8}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "1 .. 100"}},
      {"sumOut size",
       [](Backward& b) { b.sumOut = b.pool.make(ACL_FLOAT, {2 * 3 * 16 * 8 - 1}); },
       ACLNN_ERR_PARAM_INVALID,
       {"'sumOut'", "768 elements", "numIters 3"}},
      {"empty with saved steps",
       [](Backward& b) {
         b.gradOutput = b.pool.make(ACL_FLOAT, {0, 4, 4});
         b.out = b.pool.make(ACL_FLOAT, {0, 4, 4});
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'normOut'", "0 elements"}},
      {"out overlaps normOut",
       [](Backward& b) {
         b.out = b.pool.alias(b.normOut, ACL_FLOAT, {16, 4, 4}, 4);
       },
       ACLNN_ERR_PARAM_INVALID,
       {"'out'", "overlap the input normOut"}},
  });
  ScopedSoc soc("Ascend910_93");
  Backward b;
  EXPECT_TRUE(failsWith(b.call(), ACLNN_ERR_PARAM_INVALID, {"Ascend910_93", "only on Ascend950"}));
}

TEST(MhcSinkhornChecks, BackwardAcceptsAnEmptyCallAndInPlace) {
  Backward b;  // upstream's UT: gradOutput [0, 4, 4], normOut and sumOut {0}: success, workspace 0
  b.gradOutput = b.pool.make(ACL_FLOAT, {0, 4, 4});
  b.out = b.pool.make(ACL_FLOAT, {0, 4, 4});
  b.normOut = b.pool.make(ACL_FLOAT, {0});
  b.sumOut = b.pool.make(ACL_FLOAT, {0});
  EXPECT_EQ(b.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(b.size, 0u);
  Backward inPlace;
  inPlace.out = inPlace.gradOutput;
  EXPECT_EQ(inPlace.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

}  // namespace
}  // namespace gradkit::test
