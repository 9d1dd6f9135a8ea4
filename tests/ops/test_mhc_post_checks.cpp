// aclnnMhcPost[Backward]GetWorkspaceSize: the rule book of src/ops/mhc/mhc_post_check.cpp in its order (null
// pointers, dtypes, ranks, shapes, empty tensors and formats, the profile's N and D limits, gradkit's memory rules),
// code and message, under each platform profile. Every call that succeeds is run (the buffers are zeroed, so each
// view may be read and written) and synchronized; a failed one must hand out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::mhc {
namespace {

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

/** Checks the executor against the status, runs a successful call's executor, and gives the outcome back. */
Outcome settle(Outcome outcome, uint64_t size, aclOpExecutor* executor, RunFn run) {
  if (outcome.status != ACLNN_SUCCESS) {
    EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return outcome;
  }
  EXPECT_NE(executor, nullptr) << "a successful call must hand out an executor";
  if (executor == nullptr) return outcome;
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(run(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return outcome;
}

/** The test names end with the profile ("MhcPost/MhcPostChecks.X/Ascend950"). */
std::string profileName(const ::testing::TestParamInfo<const char*>& info) { return info.param; }

/** A permuted (non-contiguous, gap-free) view: [lead.., a, b] laid out as [a, lead.., b] in memory. */
aclTensor* makeTransposed(TensorPool& pool, aclDataType dtype, const std::vector<int64_t>& shape) {
  // Memory order: dim rank-2 outermost, then the leading dims, then the last dim.
  const size_t rank = shape.size();
  std::vector<int64_t> strides(rank);
  int64_t step = shape[rank - 1];
  strides[rank - 1] = 1;
  for (size_t d = rank - 2; d-- > 0;) {
    strides[d] = step;
    step *= shape[d];
  }
  strides[rank - 2] = step;
  return pool.make(dtype, shape, strides);
}

/** Fills the bytes of `tensor`'s storage up to its last element with 0xFF (every element and every gap). */
void poison(const aclTensor* tensor, int64_t elementSize) {
  int64_t last = 0;
  for (size_t d = 0; d < tensor->viewDims.size(); ++d) last += (tensor->viewDims[d] - 1) * tensor->strides[d];
  std::memset(tensor->data, 0xFF, static_cast<size_t>((tensor->offset + last + 1) * elementSize));
}

/**
 * True when, for a view made by TensorPool::makeStrided (every stride doubled), each element holds zero bits and
 * each gap between two elements still holds 0xFF (from poison()).
 */
::testing::AssertionResult zeroAtElementsAndUntouchedGaps(const aclTensor* tensor, int64_t elementSize) {
  const int64_t elements = product(tensor->viewDims);
  const auto* bytes = static_cast<const unsigned char*>(tensor->data);
  for (int64_t e = 0; e < 2 * elements - 1; ++e) {
    const unsigned char expected = e % 2 == 0 ? 0x00 : 0xFF;
    for (int64_t k = 0; k < elementSize; ++k) {
      if (bytes[e * elementSize + k] != expected) {
        return ::testing::AssertionFailure()
               << "storage element " << e << " byte " << k << " is " << static_cast<int>(bytes[e * elementSize + k])
               << ", expected " << static_cast<int>(expected) << (e % 2 ? " (a gap)" : " (an element)");
      }
    }
  }
  return ::testing::AssertionSuccess();
}

struct PostConfig {
  bool bsnd = false;
  aclDataType dtype = ACL_BF16;
  int64_t n = 4;
  int64_t d = 128;
  bool hRes = true;
  bool strided = false;  // every tensor a non-contiguous view
};

/** One argument broken on a valid call of the Checks fixture (BSND when bsnd, TND otherwise). */
template <class Checks>
struct Broken {
  const char* name;
  bool bsnd;
  std::function<void(Checks&)> breakIt;
  std::vector<std::string> fragments;
};

/** Each case on a freshly built call: 161002 from `api` ("aclnnMhcPost:"), every fragment in the message. */
template <class Checks>
void expectEachRejected(std::type_identity_t<Checks>& t, const std::vector<Broken<Checks>>& cases, const char* api) {
  for (const Broken<Checks>& c : cases) {
    t.build({c.bsnd});
    c.breakIt(t);
    const Outcome outcome = t.call();
    EXPECT_EQ(outcome.status, ACLNN_ERR_PARAM_INVALID) << c.name << ": " << outcome.message;
    for (const std::string& fragment : c.fragments) {
      EXPECT_NE(outcome.message.find(fragment), std::string::npos) << c.name << ": " << outcome.message;
    }
    EXPECT_TRUE(mentions(outcome.message, {api, "(code 161002)"})) << c.name;
  }
}

/** The state both fixtures share: the profile, the tensors' pool and the leading dims. */
class MhcPostFixture : public ::testing::TestWithParam<const char*> {
 public:
  std::vector<int64_t> shape(std::initializer_list<int64_t> tail) const {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), tail);
    return s;
  }

  bool is950() const { return std::string(GetParam()) == "Ascend950"; }

  aclTensor* make(const PostConfig& c, aclDataType dtype, const std::vector<int64_t>& s) {
    return c.strided ? pool.makeStrided(dtype, s) : pool.make(dtype, s);
  }

  std::optional<ScopedSoc> soc_;
  TensorPool pool;
  std::vector<int64_t> lead;
  bool nullWorkspaceSize = false, nullExecutor = false;
};

// ---------------------------------------------------------------------------------------------------------------
// aclnnMhcPost
// ---------------------------------------------------------------------------------------------------------------

// Builds a valid call for the config; each test breaks one argument and calls.
class MhcPostChecks : public MhcPostFixture {
 public:
  void SetUp() override {
    soc_.emplace(GetParam());
    build(PostConfig{});
    recentError();
  }

  void build(const PostConfig& c) {
    lead = c.bsnd ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{6};
    x = make(c, c.dtype, shape({c.n, c.d}));
    hRes = c.hRes ? make(c, ACL_FLOAT, shape({c.n, c.n})) : nullptr;
    hOut = make(c, c.dtype, shape({c.d}));
    hPost = make(c, ACL_FLOAT, shape({c.n}));
    out = make(c, c.dtype, shape({c.n, c.d}));
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome outcome;
    outcome.status = aclnnMhcPostGetWorkspaceSize(x, hRes, hOut, hPost, out, nullWorkspaceSize ? nullptr : &size,
                                                  nullExecutor ? nullptr : &executor);
    outcome.message = recentError();
    return settle(outcome, size, executor, aclnnMhcPost);
  }

  const aclTensor *x = nullptr, *hRes = nullptr, *hOut = nullptr, *hPost = nullptr;
  aclTensor* out = nullptr;
};

INSTANTIATE_TEST_SUITE_P(MhcPost, MhcPostChecks, ::testing::ValuesIn(kAllSocs), profileName);

TEST_P(MhcPostChecks, ValidCallsSucceedAndRunInBothLayoutsAndDtypes) {
  for (bool bsnd : {false, true}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (bool strided : {false, true}) {
        for (bool withHRes : {true, false}) {
          if (!withHRes && !is950()) continue;  // see HResMayBeNullOnlyInTheAscend950Profile
          build({bsnd, dtype, 4, 128, withHRes, strided});
          const Outcome outcome = call();
          EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " bsnd " << bsnd << " dtype " << dtype
                                                   << " strided " << strided << " hRes " << withHRes;
          EXPECT_EQ(outcome.message, "") << "a successful call records no message";
        }
      }
    }
  }
}

TEST_P(MhcPostChecks, ValidCallReturnsAnExecutorThatMayBeDestroyedUnrun) {
  for (bool bsnd : {false, true}) {
    build({bsnd});
    uint64_t size = 7;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(aclnnMhcPostGetWorkspaceSize(x, hRes, hOut, hPost, out, &size, &executor), ACLNN_SUCCESS)
        << recentError();
    ASSERT_NE(executor, nullptr);
    EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  }
}

TEST_P(MhcPostChecks, HResMayBeNullOnlyInTheAscend950Profile) {
  for (bool bsnd : {false, true}) {
    build({bsnd, ACL_BF16, 4, 128, /*hRes=*/false});
    const Outcome outcome = call();
    if (is950()) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_NULLPTR,
                            {"aclnnMhcPost:", "'hRes'", "may be nullptr only in the Ascend950 profile",
                             "this is the " + std::string(GetParam()) + " profile", "given nullptr"}));
    }
  }
  // hRes is the second argument: a null x is named first, a null hOut after it.
  build({});
  hRes = nullptr;
  x = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'x'", "given nullptr"}));
  build({});
  hRes = nullptr;
  hOut = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {is950() ? "'hOut'" : "'hRes'", "given nullptr"}));
}

TEST_P(MhcPostChecks, NullPointersGive161001NamingTheFirst) {
  nullWorkspaceSize = nullExecutor = true;
  x = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR,
                        {"aclnnMhcPost:", "'workspaceSize'", "a non-null pointer", "given nullptr"}));
  nullWorkspaceSize = false;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"aclnnMhcPost:", "'executor'", "given nullptr"}));
  nullExecutor = false;
  const std::pair<const char*, std::function<void(MhcPostChecks&)>> cases[] = {
      {"x", [](MhcPostChecks& t) { t.x = nullptr; }},
      {"hOut", [](MhcPostChecks& t) { t.hOut = nullptr; }},
      {"hPost", [](MhcPostChecks& t) { t.hPost = nullptr; }},
      {"out", [](MhcPostChecks& t) { t.out = nullptr; }},
  };
  for (const auto& [name, breakIt] : cases) {
    build({});
    breakIt(*this);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR,
                          {"aclnnMhcPost:", quoted(name), "a non-null pointer", "given nullptr"}))
        << name;
  }
  // Every pointer null: workspaceSize is named.
  uint64_t* noSize = nullptr;
  aclOpExecutor** noExecutor = nullptr;
  const aclnnStatus status =
      aclnnMhcPostGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, noSize, noExecutor);
  EXPECT_TRUE(failsWith(Outcome{status, recentError()}, ACLNN_ERR_PARAM_NULLPTR, {"'workspaceSize'"}));
}

TEST_P(MhcPostChecks, DtypeRulesGive161002NamingTheArgument) {
  const std::vector<Broken<MhcPostChecks>> cases = {
      {"x fp32",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'x'", "dtype in {BFLOAT16, FLOAT16}", "given dtype FLOAT"}},
      {"x int16",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_INT16, {6, 4, 128});
       },
       {"'x'", "dtype in {BFLOAT16, FLOAT16}", "given dtype INT16"}},
      {"x double",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_DOUBLE, {6, 4, 128});
       },
       {"'x'", "dtype in {BFLOAT16, FLOAT16}", "given dtype DOUBLE"}},
      {"hRes fp16",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT16, {6, 4, 4});
       },
       {"'hRes'", "dtype in {FLOAT}", "given dtype FLOAT16"}},
      {"hRes bf16",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_BF16, {6, 4, 4});
       },
       {"'hRes'", "dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"hOut fp16 with x bf16",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_FLOAT16, {6, 128});
       },
       {"'hOut'", "dtype BFLOAT16 (the dtype of x)", "given dtype FLOAT16"}},
      {"hOut fp32",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_FLOAT, {6, 128});
       },
       {"'hOut'", "dtype BFLOAT16 (the dtype of x)", "given dtype FLOAT"}},
      {"hPost bf16",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_BF16, {6, 4});
       },
       {"'hPost'", "dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"hPost double",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_DOUBLE, {6, 4});
       },
       {"'hPost'", "dtype in {FLOAT}", "given dtype DOUBLE"}},
      {"out fp16 with x bf16",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_FLOAT16, {6, 4, 128});
       },
       {"'out'", "dtype BFLOAT16 (the dtype of x)", "given dtype FLOAT16"}},
      {"out fp32",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'out'", "dtype BFLOAT16 (the dtype of x)", "given dtype FLOAT"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPost:");
  // FP16 x takes FP16 hOut and out, and then names FP16 in the rule.
  build({false, ACL_FLOAT16});
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  out = pool.make(ACL_BF16, {6, 4, 128});
  EXPECT_TRUE(
      failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'out'", "dtype FLOAT16 (the dtype of x)", "given dtype BFLOAT16"}));
}

TEST_P(MhcPostChecks, WrongRanksGive161002NamingTheArgument) {
  const std::vector<Broken<MhcPostChecks>> cases = {
      {"x rank 2",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {6, 512});
       },
       {"'x'", "3 or 4 dims (TND [T, N, D] or BSND [B, S, N, D])", "given 2 dims [6, 512]"}},
      {"x rank 5",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {1, 2, 3, 4, 128});
       },
       {"'x'", "3 or 4 dims", "given 5 dims [1, 2, 3, 4, 128]"}},
      {"x rank 0", false, [](auto& t) { t.x = t.pool.make(ACL_BF16, {}); }, {"'x'", "3 or 4 dims", "given 0 dims"}},
      {"hRes rank 2",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 16});
       },
       {"'hRes'", "3 dims ([T, N, N] of x)", "given 2 dims [6, 16]"}},
      {"hRes rank 4",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {1, 6, 4, 4});
       },
       {"'hRes'", "3 dims ([T, N, N] of x)", "given 4 dims [1, 6, 4, 4]"}},
      {"hOut rank 3",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {6, 1, 128});
       },
       {"'hOut'", "2 dims ([T, D] of x)", "given 3 dims [6, 1, 128]"}},
      {"hOut rank 1",
       false,
       [](auto& t) { t.hOut = t.pool.make(ACL_BF16, {768}); },
       {"'hOut'", "2 dims ([T, D] of x)", "given 1 dims [768]"}},
      {"hPost rank 1",
       false,
       [](auto& t) { t.hPost = t.pool.make(ACL_FLOAT, {24}); },
       {"'hPost'", "2 dims ([T, N] of x)", "given 1 dims [24]"}},
      {"hPost rank 3",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {6, 4, 1});
       },
       {"'hPost'", "2 dims ([T, N] of x)", "given 3 dims [6, 4, 1]"}},
      {"out rank 4",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {2, 3, 4, 128});
       },
       {"'out'", "3 dims ([T, N, D] of x)", "given 4 dims [2, 3, 4, 128]"}},
      {"bsnd hRes rank 3",
       true,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 4, 4});
       },
       {"'hRes'", "4 dims ([B, S, N, N] of x)", "given 3 dims [6, 4, 4]"}},
      {"bsnd hOut rank 2",
       true,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {6, 128});
       },
       {"'hOut'", "3 dims ([B, S, D] of x)", "given 2 dims [6, 128]"}},
      {"bsnd hPost rank 2",
       true,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {6, 4});
       },
       {"'hPost'", "3 dims ([B, S, N] of x)", "given 2 dims [6, 4]"}},
      {"bsnd out rank 3",
       true,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {6, 4, 128});
       },
       {"'out'", "4 dims ([B, S, N, D] of x)", "given 3 dims [6, 4, 128]"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPost:");
}

TEST_P(MhcPostChecks, WrongShapesGive161002NamingTheArgument) {
  const std::vector<Broken<MhcPostChecks>> cases = {
      {"hRes N+1",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 5, 5});
       },
       {"'hRes'", "shape [6, 4, 4] ([T, N, N] with T, N, D of x)", "given shape [6, 5, 5]"}},
      {"hRes [T, N, 1]",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 4, 1});
       },
       {"'hRes'", "shape [6, 4, 4]", "given shape [6, 4, 1]"}},
      {"hRes T+1",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {7, 4, 4});
       },
       {"'hRes'", "shape [6, 4, 4]", "given shape [7, 4, 4]"}},
      {"hOut D+1",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {6, 129});
       },
       {"'hOut'", "shape [6, 128] ([T, D] with T, N, D of x)", "given shape [6, 129]"}},
      {"hOut [T, N]",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {6, 4});
       },
       {"'hOut'", "shape [6, 128]", "given shape [6, 4]"}},
      {"hOut T-1",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {5, 128});
       },
       {"'hOut'", "shape [6, 128]", "given shape [5, 128]"}},
      {"hPost N+1",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {6, 5});
       },
       {"'hPost'", "shape [6, 4] ([T, N] with T, N, D of x)", "given shape [6, 5]"}},
      {"hPost T+1",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {7, 4});
       },
       {"'hPost'", "shape [6, 4]", "given shape [7, 4]"}},
      {"out D*2",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {6, 4, 256});
       },
       {"'out'", "shape [6, 4, 128] ([T, N, D] with T, N, D of x)", "given shape [6, 4, 256]"}},
      {"out N-1",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {6, 3, 128});
       },
       {"'out'", "shape [6, 4, 128]", "given shape [6, 3, 128]"}},
      {"bsnd hRes B and S swapped",
       true,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {3, 2, 4, 4});
       },
       {"'hRes'", "shape [2, 3, 4, 4] ([B, S, N, N] with B, S, N, D of x)", "given shape [3, 2, 4, 4]"}},
      {"bsnd hOut B and S swapped",
       true,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {3, 2, 128});
       },
       {"'hOut'", "shape [2, 3, 128] ([B, S, D] with B, S, N, D of x)", "given shape [3, 2, 128]"}},
      {"bsnd hPost S+1",
       true,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {2, 4, 4});
       },
       {"'hPost'", "shape [2, 3, 4] ([B, S, N] with B, S, N, D of x)", "given shape [2, 4, 4]"}},
      {"bsnd out B+1",
       true,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {3, 3, 4, 128});
       },
       {"'out'", "shape [2, 3, 4, 128] ([B, S, N, D] with B, S, N, D of x)", "given shape [3, 3, 4, 128]"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPost:");
}

TEST_P(MhcPostChecks, EmptyTensorsGive161002) {
  // Only x can be empty with every other shape following it; x is named.
  const std::vector<int64_t> emptyShapes[] = {{0, 4, 128}, {6, 0, 128}, {6, 4, 0}, {0, 3, 4, 128}, {2, 0, 4, 128}};
  for (const std::vector<int64_t>& xShape : emptyShapes) {
    lead.assign(xShape.begin(), xShape.end() - 2);
    const int64_t n = xShape[xShape.size() - 2], d = xShape.back();
    x = pool.make(ACL_BF16, xShape);
    hRes = pool.make(ACL_FLOAT, shape({n, n}));
    hOut = pool.make(ACL_BF16, shape({d}));
    hPost = pool.make(ACL_FLOAT, shape({n}));
    out = pool.make(ACL_BF16, xShape);
    const Outcome outcome = call();
    EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                          {"aclnnMhcPost:", "'x'", "a non-empty tensor", "given empty shape"}))
        << outcome.message;
  }
  // Shapes come before emptiness: an empty x whose hRes does not follow it names hRes.
  build({});
  x = pool.make(ACL_BF16, {0, 4, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hRes'", "shape [0, 4, 4]", "given shape [6, 4, 4]"}));
  // The empty rule comes before the profile's limits: D = 0 on A2/A3 is 161002, not 561103.
  build({false, ACL_BF16, 4, 0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "non-empty", "given empty shape [6, 4, 0]"}));
}

TEST_P(MhcPostChecks, StreamsAndHiddenFollowTheProfile) {
  struct Case {
    int64_t n, d;
  } cases[] = {{4, 128}, {6, 128}, {8, 128}, {5, 128}, {2, 128}, {3, 128},   {1, 128},    {7, 128}, {9, 128}, {16, 128},
               {4, 256}, {4, 64},  {4, 200}, {4, 19},  {4, 1},   {4, 99968}, {4, 100096}, {6, 64},  {8, 100}};
  for (const Case& c : cases) {
    build({false, ACL_BF16, c.n, c.d});
    const Outcome outcome = call();
    if (is950()) {
      if (c.n == 4 || c.n == 6 || c.n == 8) {
        EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " N " << c.n << " D " << c.d;
      } else {
        EXPECT_TRUE(failsWith(
            outcome, ACLNN_ERR_PARAM_INVALID,
            {"aclnnMhcPost:", "'x'", "N (dim -2, the number of streams) in {4, 6, 8}", "in the Ascend950 profile",
             "given N = " + std::to_string(c.n) + " (shape [6, " + std::to_string(c.n) + ", " + std::to_string(c.d) +
                 "])"}))
            << c.n << " " << c.d;
      }
      continue;
    }
    // Ascend910B / Ascend910_93: N = 4 and D a multiple of 128; the forward's code is upstream's 561103.
    if (c.n != 4) {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_INNER_NULLPTR,
                            {"aclnnMhcPost:", "'x'",
                             "N (dim -2, the number of streams) in {4} in the " + std::string(GetParam()) + " profile",
                             "given N = " + std::to_string(c.n)}))
          << c.n << " " << c.d;
    } else if (c.d % 128 != 0 || c.d > 100000) {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_INNER_NULLPTR,
                            {"aclnnMhcPost:", "'x'", "D (last dim, the hidden size) a multiple of 128",
                             std::string("in the ") + GetParam() + " profile", "given D = " + std::to_string(c.d)}))
          << c.n << " " << c.d;
    } else {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " N " << c.n << " D " << c.d;
    }
  }
  // BSND names the shape as given.
  build({true, ACL_BF16, 5, 128});
  EXPECT_TRUE(failsWith(call(), is950() ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_INNER_NULLPTR,
                        {"'x'", "given N = 5 (shape [2, 3, 5, 128])"}));
}

TEST_P(MhcPostChecks, StridedAndTransposedTensorsAreAcceptedAndWrittenOnlyAtTheirElements) {
  for (bool bsnd : {false, true}) {
    for (bool withHRes : {true, false}) {
      if (!withHRes && !is950()) continue;
      build({bsnd, ACL_FLOAT16, 4, 128, withHRes, /*strided=*/true});
      poison(out, 2);
      EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
      EXPECT_TRUE(zeroAtElementsAndUntouchedGaps(out, 2)) << "bsnd " << bsnd << " hRes " << withHRes;
    }
  }
  // Permuted views (the streams dim outermost in memory), inputs and output.
  build({});
  x = makeTransposed(pool, ACL_BF16, shape({4, 128}));
  hRes = makeTransposed(pool, ACL_FLOAT, shape({4, 4}));
  hPost = pool.make(ACL_FLOAT, {6, 4}, {1, 6});
  out = makeTransposed(pool, ACL_BF16, shape({4, 128}));
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
  // Broadcast (stride-0) inputs: every token reads the same hRes, hOut and hPost.
  build({true});
  hRes = pool.make(ACL_FLOAT, {2, 3, 4, 4}, {0, 0, 4, 1});
  hOut = pool.make(ACL_BF16, {2, 3, 128}, {0, 0, 1});
  hPost = pool.make(ACL_FLOAT, {2, 3, 4}, {0, 0, 1});
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
  // A view at an offset into its storage.
  build({});
  out = pool.make(ACL_BF16, {6, 4, 128 + 8});  // a wider buffer; out views columns [8, 136) of it
  out = pool.alias(out, ACL_BF16, {6, 4, 128}, 8, {4 * 136, 136, 1});
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
}

TEST_P(MhcPostChecks, OutputOverlappingAnInputIsRejected) {
  const std::vector<Broken<MhcPostChecks>> cases = {
      {"out is x",
       false,
       [](auto& t) { t.out = const_cast<aclTensor*>(t.x); },
       {"'out'", "memory that does not overlap the input x", "given bytes overlapping x"}},
      {"out over the second half of x",
       false,
       [](auto& t) {
         const aclTensor* wide = t.pool.make(ACL_BF16, {12, 4, 128});
         t.x = t.pool.alias(wide, ACL_BF16, {6, 4, 128});
         t.out = t.pool.alias(wide, ACL_BF16, {6, 4, 128}, 5 * 4 * 128);  // one token in common
       },
       {"'out'", "does not overlap the input x"}},
      {"out over hOut",
       false,
       [](auto& t) {
         const aclTensor* wide = t.pool.make(ACL_BF16, {6 * 4 * 128 + 6 * 128});
         t.hOut = t.pool.alias(wide, ACL_BF16, {6, 128}, 6 * 4 * 128 - 1);  // the last element in common
         t.out = t.pool.alias(wide, ACL_BF16, {6, 4, 128});
       },
       {"'out'", "does not overlap the input hOut"}},
      {"out over hRes (another dtype)",
       false,
       [](auto& t) {
         const aclTensor* wide = t.pool.make(ACL_FLOAT, {6 * 4 * 128});
         t.hRes = t.pool.alias(wide, ACL_FLOAT, {6, 4, 4}, 100);
         t.out = t.pool.alias(wide, ACL_BF16, {6, 4, 128});
       },
       {"'out'", "does not overlap the input hRes"}},
      {"out over hPost",
       false,
       [](auto& t) {
         const aclTensor* wide = t.pool.make(ACL_FLOAT, {6 * 4 * 128});
         t.hPost = t.pool.alias(wide, ACL_FLOAT, {6, 4});
         t.out = t.pool.alias(wide, ACL_BF16, {6, 4, 128});
       },
       {"'out'", "does not overlap the input hPost"}},
      {"out writes one address twice",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {6, 4, 128}, {128, 128, 1});
       },
       {"'out'", "all at different addresses", "strides [128, 128, 1]"}},
      {"out stride 0",
       false,
       [](auto& t) {
         t.out = t.pool.make(ACL_BF16, {6, 4, 128}, {0, 128, 1});
       },
       {"'out'", "all at different addresses", "strides [0, 128, 1]"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPost:");
  // Inputs may share memory (hOut reads x's first floats; hPost and hRes overlap).
  build({});
  hOut = pool.alias(x, ACL_BF16, {6, 128});
  const aclTensor* shared = pool.make(ACL_FLOAT, {6 * 4 * 4});
  hRes = pool.alias(shared, ACL_FLOAT, {6, 4, 4});
  hPost = pool.alias(shared, ACL_FLOAT, {6, 4}, 3);
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
  // Touching without a shared byte is fine: out right after x in one buffer.
  build({});
  const aclTensor* both = pool.make(ACL_BF16, {12, 4, 128});
  x = pool.alias(both, ACL_BF16, {6, 4, 128});
  out = pool.alias(both, ACL_BF16, {6, 4, 128}, 6 * 4 * 128);
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
}

TEST_P(MhcPostChecks, PrivateFormatsGive161002) {
  build({});
  x = pool.make(ACL_BF16, {6, 4, 128}, {}, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "a public format", "given format FRACTAL_NZ"}));
  build({});
  out = pool.make(ACL_BF16, {6, 4, 128}, {}, ACL_FORMAT_NC1HWC0);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'out'", "a public format", "given format NC1HWC0"}));
  build({});
  hPost = pool.make(ACL_FLOAT, {6, 4}, {}, ACL_FORMAT_NCHW);  // public formats pass
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
}

TEST_P(MhcPostChecks, RulesRunInTheRuleBooksOrder) {
  // nulls before dtypes: a null out and an FP32 x.
  x = pool.make(ACL_FLOAT, {6, 4, 128});
  out = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'out'"}));
  // dtypes before ranks: an FP16 hPost of rank 1 and an x of rank 2.
  build({});
  x = pool.make(ACL_BF16, {6, 512});
  hPost = pool.make(ACL_FLOAT16, {24});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hPost'", "dtype in {FLOAT}"}));
  // every rank before any shape: hRes of a wrong shape, out of rank 2.
  build({});
  hRes = pool.make(ACL_FLOAT, {6, 5, 5});
  out = pool.make(ACL_BF16, {6, 512});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'out'", "3 dims"}));
  // shapes before formats: a private-format x and a wrong hOut.
  build({});
  x = pool.make(ACL_BF16, {6, 4, 128}, {}, ACL_FORMAT_FRACTAL_NZ);
  hOut = pool.make(ACL_BF16, {6, 64});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hOut'", "shape [6, 128]"}));
  // formats before the profile's N: N = 5 and a private-format out.
  build({false, ACL_BF16, 5, 128});
  out = pool.make(ACL_BF16, {6, 5, 128}, {}, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'out'", "FRACTAL_NZ"}));
  // the profile's N before the memory rules: N = 5 with out over x.
  build({false, ACL_BF16, 5, 128});
  out = const_cast<aclTensor*>(x);
  EXPECT_TRUE(failsWith(call(), is950() ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_INNER_NULLPTR, {"'x'", "N = 5"}));
}

TEST_P(MhcPostChecks, TensorsOverFreedMemoryAreRejected) {
  void* block = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 6 * 128 * 2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  hOut = pool.view(block, ACL_BF16, {6, 128});
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
  ASSERT_EQ(aclrtFree(block), ACL_SUCCESS);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hOut'", "data in live memory", "that was freed"}));
}

// ---------------------------------------------------------------------------------------------------------------
// aclnnMhcPostBackward
// ---------------------------------------------------------------------------------------------------------------

class MhcPostBackwardChecks : public MhcPostFixture {
 public:
  void SetUp() override {
    soc_.emplace(GetParam());
    build(PostConfig{});
    recentError();
  }

  void build(const PostConfig& c) {
    lead = c.bsnd ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{6};
    gradOutput = make(c, c.dtype, shape({c.n, c.d}));
    x = make(c, c.dtype, shape({c.n, c.d}));
    hRes = c.hRes ? make(c, ACL_FLOAT, shape({c.n, c.n})) : nullptr;
    hOut = make(c, c.dtype, shape({c.d}));
    hPost = make(c, ACL_FLOAT, shape({c.n}));
    gradX = make(c, c.dtype, shape({c.n, c.d}));
    gradHRes = make(c, ACL_FLOAT, shape({c.n, c.n}));
    gradHOut = make(c, c.dtype, shape({c.d}));
    gradHPost = make(c, ACL_FLOAT, shape({c.n}));
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome outcome;
    outcome.status =
        aclnnMhcPostBackwardGetWorkspaceSize(gradOutput, x, hRes, hOut, hPost, gradX, gradHRes, gradHOut, gradHPost,
                                             nullWorkspaceSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    outcome.message = recentError();
    return settle(outcome, size, executor, aclnnMhcPostBackward);
  }

  const aclTensor *gradOutput = nullptr, *x = nullptr, *hRes = nullptr, *hOut = nullptr, *hPost = nullptr;
  aclTensor *gradX = nullptr, *gradHRes = nullptr, *gradHOut = nullptr, *gradHPost = nullptr;
};

INSTANTIATE_TEST_SUITE_P(MhcPost, MhcPostBackwardChecks, ::testing::ValuesIn(kAllSocs), profileName);

TEST_P(MhcPostBackwardChecks, ValidCallsSucceedAndRunInBothLayoutsAndDtypes) {
  for (bool bsnd : {false, true}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (bool strided : {false, true}) {
        for (bool withHRes : {true, false}) {
          if (!withHRes && !is950()) continue;
          build({bsnd, dtype, 4, 128, withHRes, strided});
          const Outcome outcome = call();
          EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " bsnd " << bsnd << " dtype " << dtype
                                                   << " strided " << strided << " hRes " << withHRes;
          EXPECT_EQ(outcome.message, "") << "a successful call records no message";
        }
      }
    }
  }
}

TEST_P(MhcPostBackwardChecks, ValidCallReturnsAnExecutorThatMayBeDestroyedUnrun) {
  for (bool bsnd : {false, true}) {
    build({bsnd});
    uint64_t size = 7;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(aclnnMhcPostBackwardGetWorkspaceSize(gradOutput, x, hRes, hOut, hPost, gradX, gradHRes, gradHOut,
                                                   gradHPost, &size, &executor),
              ACLNN_SUCCESS)
        << recentError();
    ASSERT_NE(executor, nullptr);
    EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  }
}

TEST_P(MhcPostBackwardChecks, HResMayBeNullOnlyInTheAscend950Profile) {
  for (bool bsnd : {false, true}) {
    build({bsnd, ACL_FLOAT16, 4, 128, /*hRes=*/false});
    const Outcome outcome = call();
    if (is950()) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_NULLPTR,
                            {"aclnnMhcPostBackward:", "'hRes'", "may be nullptr only in the Ascend950 profile",
                             "this is the " + std::string(GetParam()) + " profile", "given nullptr"}));
    }
  }
  // gradHRes is still required without hRes.
  build({});
  hRes = nullptr;
  gradHRes = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {is950() ? "'gradHRes'" : "'hRes'", "given nullptr"}));
  // x (before hRes) is named first.
  build({});
  hRes = nullptr;
  x = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'x'", "given nullptr"}));
}

TEST_P(MhcPostBackwardChecks, NullPointersGive161001NamingTheFirst) {
  nullWorkspaceSize = nullExecutor = true;
  gradOutput = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR,
                        {"aclnnMhcPostBackward:", "'workspaceSize'", "a non-null pointer", "given nullptr"}));
  nullWorkspaceSize = false;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"aclnnMhcPostBackward:", "'executor'", "given nullptr"}));
  nullExecutor = false;
  using Field = std::function<void(MhcPostBackwardChecks&)>;
  const std::pair<const char*, Field> cases[] = {
      {"gradOutput", [](MhcPostBackwardChecks& t) { t.gradOutput = nullptr; }},
      {"x", [](MhcPostBackwardChecks& t) { t.x = nullptr; }},
      {"hOut", [](MhcPostBackwardChecks& t) { t.hOut = nullptr; }},
      {"hPost", [](MhcPostBackwardChecks& t) { t.hPost = nullptr; }},
      {"gradX", [](MhcPostBackwardChecks& t) { t.gradX = nullptr; }},
      {"gradHRes", [](MhcPostBackwardChecks& t) { t.gradHRes = nullptr; }},
      {"gradHOut", [](MhcPostBackwardChecks& t) { t.gradHOut = nullptr; }},
      {"gradHPost", [](MhcPostBackwardChecks& t) { t.gradHPost = nullptr; }},
  };
  for (const auto& [name, breakIt] : cases) {
    build({});
    breakIt(*this);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR,
                          {"aclnnMhcPostBackward:", quoted(name), "a non-null pointer", "given nullptr"}))
        << name;
  }
  // Two null tensors: the first in the argument order is named.
  build({});
  gradHPost = nullptr;
  gradX = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'gradX'"}));
  uint64_t* noSize = nullptr;
  aclOpExecutor** noExecutor = nullptr;
  const aclnnStatus status = aclnnMhcPostBackwardGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                                  nullptr, nullptr, nullptr, noSize, noExecutor);
  EXPECT_TRUE(failsWith(Outcome{status, recentError()}, ACLNN_ERR_PARAM_NULLPTR, {"'workspaceSize'"}));
}

TEST_P(MhcPostBackwardChecks, DtypeRulesGive161002NamingTheArgument) {
  const std::string same = "dtype BFLOAT16 (the dtype of gradOutput)";
  const std::vector<Broken<MhcPostBackwardChecks>> cases = {
      {"gradOutput fp32",
       false,
       [](auto& t) {
         t.gradOutput = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'gradOutput'", "dtype in {BFLOAT16, FLOAT16}", "given dtype FLOAT"}},
      {"gradOutput int8",
       false,
       [](auto& t) {
         t.gradOutput = t.pool.make(ACL_INT8, {6, 4, 128});
       },
       {"'gradOutput'", "dtype in {BFLOAT16, FLOAT16}", "given dtype INT8"}},
      {"x fp16",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_FLOAT16, {6, 4, 128});
       },
       {"'x'", same, "given dtype FLOAT16"}},
      {"x fp32",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'x'", same, "given dtype FLOAT"}},
      {"hRes fp16",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT16, {6, 4, 4});
       },
       {"'hRes'", "dtype in {FLOAT}", "given dtype FLOAT16"}},
      {"hOut fp16",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_FLOAT16, {6, 128});
       },
       {"'hOut'", same, "FLOAT16"}},
      {"hPost bf16",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_BF16, {6, 4});
       },
       {"'hPost'", "dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"gradX fp32",
       false,
       [](auto& t) {
         t.gradX = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'gradX'", same, "given dtype FLOAT"}},
      {"gradX fp16",
       false,
       [](auto& t) {
         t.gradX = t.pool.make(ACL_FLOAT16, {6, 4, 128});
       },
       {"'gradX'", same, "given dtype FLOAT16"}},
      {"gradHRes bf16",
       false,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_BF16, {6, 4, 4});
       },
       {"'gradHRes'", "dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"gradHRes double",
       false,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_DOUBLE, {6, 4, 4});
       },
       {"'gradHRes'", "dtype in {FLOAT}", "given dtype DOUBLE"}},
      {"gradHOut fp32",
       false,
       [](auto& t) {
         t.gradHOut = t.pool.make(ACL_FLOAT, {6, 128});
       },
       {"'gradHOut'", same, "given dtype FLOAT"}},
      {"gradHPost fp16",
       false,
       [](auto& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT16, {6, 4});
       },
       {"'gradHPost'", "dtype in {FLOAT}", "given dtype FLOAT16"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPostBackward:");
  // gradOutput sets the dtype: an FP16 gradOutput with BF16 x names x.
  build({false, ACL_BF16});
  gradOutput = pool.make(ACL_FLOAT16, {6, 4, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'x'", "dtype FLOAT16 (the dtype of gradOutput)", "given dtype BFLOAT16"}));
}

TEST_P(MhcPostBackwardChecks, WrongRanksGive161002NamingTheArgument) {
  const std::vector<Broken<MhcPostBackwardChecks>> cases = {
      {"gradOutput rank 2",
       false,
       [](auto& t) {
         t.gradOutput = t.pool.make(ACL_BF16, {6, 512});
       },
       {"'gradOutput'", "3 or 4 dims (TND [T, N, D] or BSND [B, S, N, D])", "given 2 dims [6, 512]"}},
      {"gradOutput rank 5",
       false,
       [](auto& t) {
         t.gradOutput = t.pool.make(ACL_BF16, {1, 1, 6, 4, 128});
       },
       {"'gradOutput'", "3 or 4 dims", "given 5 dims"}},
      {"x rank 4",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {1, 6, 4, 128});
       },
       {"'x'", "3 dims ([T, N, D] of gradOutput)", "given 4 dims [1, 6, 4, 128]"}},
      {"hRes rank 2",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 16});
       },
       {"'hRes'", "3 dims ([T, N, N] of gradOutput)", "given 2 dims [6, 16]"}},
      {"hOut rank 3",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {6, 1, 128});
       },
       {"'hOut'", "2 dims ([T, D] of gradOutput)", "given 3 dims"}},
      {"hPost rank 1",
       false,
       [](auto& t) { t.hPost = t.pool.make(ACL_FLOAT, {24}); },
       {"'hPost'", "2 dims ([T, N] of gradOutput)", "given 1 dims [24]"}},
      {"gradX rank 2",
       false,
       [](auto& t) {
         t.gradX = t.pool.make(ACL_BF16, {24, 128});
       },
       {"'gradX'", "3 dims ([T, N, D] of gradOutput)", "given 2 dims [24, 128]"}},
      {"gradHRes rank 2",
       false,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {6, 16});
       },
       {"'gradHRes'", "3 dims ([T, N, N] of gradOutput)", "given 2 dims [6, 16]"}},
      {"gradHOut rank 1",
       false,
       [](auto& t) { t.gradHOut = t.pool.make(ACL_BF16, {768}); },
       {"'gradHOut'", "2 dims ([T, D] of gradOutput)", "given 1 dims [768]"}},
      {"gradHPost rank 3",
       false,
       [](auto& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT, {6, 4, 1});
       },
       {"'gradHPost'", "2 dims ([T, N] of gradOutput)", "given 3 dims [6, 4, 1]"}},
      {"bsnd x rank 3",
       true,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {6, 4, 128});
       },
       {"'x'", "4 dims ([B, S, N, D] of gradOutput)", "given 3 dims"}},
      {"bsnd gradHRes rank 3",
       true,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {6, 4, 4});
       },
       {"'gradHRes'", "4 dims ([B, S, N, N] of gradOutput)", "given 3 dims [6, 4, 4]"}},
      {"bsnd gradHOut rank 2",
       true,
       [](auto& t) {
         t.gradHOut = t.pool.make(ACL_BF16, {6, 128});
       },
       {"'gradHOut'", "3 dims ([B, S, D] of gradOutput)", "given 2 dims [6, 128]"}},
      {"bsnd gradHPost rank 2",
       true,
       [](auto& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT, {6, 4});
       },
       {"'gradHPost'", "3 dims ([B, S, N] of gradOutput)", "given 2 dims [6, 4]"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPostBackward:");
}

TEST_P(MhcPostBackwardChecks, WrongShapesGive161002NamingTheArgument) {
  const std::vector<Broken<MhcPostBackwardChecks>> cases = {
      {"x D+1",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {6, 4, 129});
       },
       {"'x'", "shape [6, 4, 128] ([T, N, D] with T, N, D of gradOutput)", "given shape [6, 4, 129]"}},
      {"x N-1",
       false,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {6, 3, 128});
       },
       {"'x'", "shape [6, 4, 128]", "given shape [6, 3, 128]"}},
      {"hRes N+1",
       false,
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 5, 5});
       },
       {"'hRes'", "shape [6, 4, 4] ([T, N, N] with T, N, D of gradOutput)", "given shape [6, 5, 5]"}},
      {"hOut T+1",
       false,
       [](auto& t) {
         t.hOut = t.pool.make(ACL_BF16, {7, 128});
       },
       {"'hOut'", "shape [6, 128] ([T, D] with T, N, D of gradOutput)", "given shape [7, 128]"}},
      {"hPost N+1",
       false,
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {6, 5});
       },
       {"'hPost'", "shape [6, 4] ([T, N] with T, N, D of gradOutput)", "given shape [6, 5]"}},
      {"gradX T-1",
       false,
       [](auto& t) {
         t.gradX = t.pool.make(ACL_BF16, {5, 4, 128});
       },
       {"'gradX'", "shape [6, 4, 128]", "given shape [5, 4, 128]"}},
      {"gradHRes [T, N, D]",
       false,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'gradHRes'", "shape [6, 4, 4] ([T, N, N] with T, N, D of gradOutput)", "given shape [6, 4, 128]"}},
      {"gradHOut D-1",
       false,
       [](auto& t) {
         t.gradHOut = t.pool.make(ACL_BF16, {6, 127});
       },
       {"'gradHOut'", "shape [6, 128]", "given shape [6, 127]"}},
      {"gradHPost [T, 1]",
       false,
       [](auto& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT, {6, 1});
       },
       {"'gradHPost'", "shape [6, 4] ([T, N] with T, N, D of gradOutput)", "given shape [6, 1]"}},
      {"bsnd x B and S swapped",
       true,
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {3, 2, 4, 128});
       },
       {"'x'", "shape [2, 3, 4, 128] ([B, S, N, D] with B, S, N, D of gradOutput)", "given shape [3, 2, 4, 128]"}},
      {"bsnd gradHRes S+1",
       true,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {2, 4, 4, 4});
       },
       {"'gradHRes'", "shape [2, 3, 4, 4]", "given shape [2, 4, 4, 4]"}},
      {"bsnd gradHOut B+1",
       true,
       [](auto& t) {
         t.gradHOut = t.pool.make(ACL_BF16, {3, 3, 128});
       },
       {"'gradHOut'", "shape [2, 3, 128] ([B, S, D] with B, S, N, D of gradOutput)", "given shape [3, 3, 128]"}},
      {"bsnd gradHPost N+1",
       true,
       [](auto& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT, {2, 3, 5});
       },
       {"'gradHPost'", "shape [2, 3, 4] ([B, S, N] with B, S, N, D of gradOutput)", "given shape [2, 3, 5]"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPostBackward:");
}

TEST_P(MhcPostBackwardChecks, EmptyTensorsGive161002) {
  const std::vector<int64_t> emptyShapes[] = {{0, 4, 128}, {6, 0, 128}, {6, 4, 0}, {0, 3, 4, 128}, {2, 0, 4, 128}};
  for (const std::vector<int64_t>& xShape : emptyShapes) {
    lead.assign(xShape.begin(), xShape.end() - 2);
    const int64_t n = xShape[xShape.size() - 2], d = xShape.back();
    gradOutput = pool.make(ACL_BF16, xShape);
    x = pool.make(ACL_BF16, xShape);
    hRes = pool.make(ACL_FLOAT, shape({n, n}));
    hOut = pool.make(ACL_BF16, shape({d}));
    hPost = pool.make(ACL_FLOAT, shape({n}));
    gradX = pool.make(ACL_BF16, xShape);
    gradHRes = pool.make(ACL_FLOAT, shape({n, n}));
    gradHOut = pool.make(ACL_BF16, shape({d}));
    gradHPost = pool.make(ACL_FLOAT, shape({n}));
    const Outcome outcome = call();
    EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                          {"aclnnMhcPostBackward:", "'gradOutput'", "a non-empty tensor", "given empty shape"}))
        << outcome.message;
  }
  // D = 0 on A2/A3: the empty rule (161002) before the profile's D.
  build({false, ACL_BF16, 4, 0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradOutput'", "given empty shape [6, 4, 0]"}));
}

TEST_P(MhcPostBackwardChecks, StreamsAndHiddenFollowTheProfileWith161002) {
  struct Case {
    int64_t n, d;
  } cases[] = {{4, 128}, {6, 128}, {8, 128}, {5, 128}, {2, 128}, {1, 128},   {16, 128},  {4, 256},
               {4, 64},  {4, 200}, {4, 19},  {4, 1},   {6, 100}, {4, 99968}, {4, 100096}};
  for (const Case& c : cases) {
    build({false, ACL_FLOAT16, c.n, c.d});
    const Outcome outcome = call();
    const bool nOk = is950() ? (c.n == 4 || c.n == 6 || c.n == 8) : c.n == 4;
    const bool dOk = is950() || (c.d % 128 == 0 && c.d <= 100000);
    if (nOk && dOk) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " N " << c.n << " D " << c.d;
    } else if (!nOk) {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"aclnnMhcPostBackward:", "'gradOutput'", "N (dim -2, the number of streams) in",
                             is950() ? "{4, 6, 8}" : "{4}", std::string("in the ") + GetParam() + " profile",
                             "given N = " + std::to_string(c.n)}))
          << c.n << " " << c.d;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"aclnnMhcPostBackward:", "'gradOutput'", "D (last dim, the hidden size) a multiple of 128",
                             std::string("in the ") + GetParam() + " profile", "given D = " + std::to_string(c.d)}))
          << c.n << " " << c.d;
    }
  }
}

TEST_P(MhcPostBackwardChecks, StridedAndTransposedTensorsAreAcceptedAndWrittenOnlyAtTheirElements) {
  for (bool bsnd : {false, true}) {
    for (bool withHRes : {true, false}) {
      if (!withHRes && !is950()) continue;
      build({bsnd, ACL_BF16, 4, 128, withHRes, /*strided=*/true});
      poison(gradX, 2);
      poison(gradHRes, 4);
      poison(gradHOut, 2);
      poison(gradHPost, 4);
      EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
      EXPECT_TRUE(zeroAtElementsAndUntouchedGaps(gradX, 2)) << "gradX bsnd " << bsnd << " hRes " << withHRes;
      EXPECT_TRUE(zeroAtElementsAndUntouchedGaps(gradHRes, 4)) << "gradHRes bsnd " << bsnd << " hRes " << withHRes;
      EXPECT_TRUE(zeroAtElementsAndUntouchedGaps(gradHOut, 2)) << "gradHOut bsnd " << bsnd << " hRes " << withHRes;
      EXPECT_TRUE(zeroAtElementsAndUntouchedGaps(gradHPost, 4)) << "gradHPost bsnd " << bsnd << " hRes " << withHRes;
    }
  }
  build({});
  gradOutput = makeTransposed(pool, ACL_BF16, shape({4, 128}));
  x = makeTransposed(pool, ACL_BF16, shape({4, 128}));
  gradX = makeTransposed(pool, ACL_BF16, shape({4, 128}));
  gradHRes = makeTransposed(pool, ACL_FLOAT, shape({4, 4}));
  gradHPost = pool.make(ACL_FLOAT, {6, 4}, {1, 6});
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
  build({true});
  hRes = pool.make(ACL_FLOAT, {2, 3, 4, 4}, {0, 0, 4, 1});
  hOut = pool.make(ACL_BF16, {2, 3, 128}, {0, 0, 1});
  hPost = pool.make(ACL_FLOAT, {2, 3, 4}, {0, 0, 1});
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
}

TEST_P(MhcPostBackwardChecks, OutputOverlappingAnInputOrAnotherOutputIsRejected) {
  const std::vector<Broken<MhcPostBackwardChecks>> cases = {
      {"gradX is gradOutput",
       false,
       [](auto& t) { t.gradX = const_cast<aclTensor*>(t.gradOutput); },
       {"'gradX'", "memory that does not overlap the input gradOutput", "given bytes overlapping gradOutput"}},
      {"gradX is x",
       false,
       [](auto& t) { t.gradX = const_cast<aclTensor*>(t.x); },
       {"'gradX'", "does not overlap the input x"}},
      {"gradHRes is hRes",
       false,
       [](auto& t) { t.gradHRes = const_cast<aclTensor*>(t.hRes); },
       {"'gradHRes'", "does not overlap the input hRes"}},
      {"gradHOut is hOut",
       false,
       [](auto& t) { t.gradHOut = const_cast<aclTensor*>(t.hOut); },
       {"'gradHOut'", "does not overlap the input hOut"}},
      {"gradHPost over hPost",
       false,
       [](auto& t) {
         const aclTensor* wide = t.pool.make(ACL_FLOAT, {48});
         t.hPost = t.pool.alias(wide, ACL_FLOAT, {6, 4});
         t.gradHPost = t.pool.alias(wide, ACL_FLOAT, {6, 4}, 23);
       },
       {"'gradHPost'", "does not overlap the input hPost"}},
      {"gradHPost over gradHRes",
       false,
       [](auto& t) {
         const aclTensor* wide = t.pool.make(ACL_FLOAT, {6 * 4 * 4 + 6 * 4});
         t.gradHRes = t.pool.alias(wide, ACL_FLOAT, {6, 4, 4});
         t.gradHPost = t.pool.alias(wide, ACL_FLOAT, {6, 4}, 6 * 4 * 4 - 1);
       },
       {"'gradHPost'", "memory that does not overlap the output gradHRes", "bytes overlapping gradHRes"}},
      {"gradHOut over gradX",
       false,
       [](auto& t) {
         t.gradHOut = t.pool.alias(t.gradX, ACL_BF16, {6, 128}, 128);
       },
       {"'gradHOut'", "does not overlap the output gradX"}},
      {"gradHRes writes one address twice",
       false,
       [](auto& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {6, 4, 4}, {4, 4, 1});
       },
       {"'gradHRes'", "all at different addresses", "strides [4, 4, 1]"}},
      {"gradX stride 0",
       false,
       [](auto& t) {
         t.gradX = t.pool.make(ACL_BF16, {6, 4, 128}, {512, 0, 1});
       },
       {"'gradX'", "all at different addresses", "strides [512, 0, 1]"}},
  };
  expectEachRejected(*this, cases, "aclnnMhcPostBackward:");
  // Inputs may share memory: x and gradOutput are one tensor, hRes and hPost overlap.
  build({});
  x = gradOutput;
  const aclTensor* shared = pool.make(ACL_FLOAT, {6 * 4 * 4});
  hRes = pool.alias(shared, ACL_FLOAT, {6, 4, 4});
  hPost = pool.alias(shared, ACL_FLOAT, {6, 4}, 5);
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << recentError();
}

TEST_P(MhcPostBackwardChecks, RulesRunInTheRuleBooksOrder) {
  // nulls before dtypes.
  gradOutput = pool.make(ACL_FLOAT, {6, 4, 128});
  gradHPost = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'gradHPost'"}));
  // dtypes before ranks.
  build({});
  gradOutput = pool.make(ACL_BF16, {6, 512});
  gradHOut = pool.make(ACL_FLOAT, {6, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradHOut'", "(the dtype of gradOutput)"}));
  // every rank before any shape.
  build({});
  x = pool.make(ACL_BF16, {6, 4, 64});
  gradHPost = pool.make(ACL_FLOAT, {24});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradHPost'", "2 dims"}));
  // shapes before formats.
  build({});
  gradOutput = pool.make(ACL_BF16, {6, 4, 128}, {}, ACL_FORMAT_FRACTAL_NZ);
  gradHOut = pool.make(ACL_BF16, {6, 64});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradHOut'", "shape [6, 128]"}));
  // formats before the profile.
  build({false, ACL_BF16, 5, 128});
  gradHRes = pool.make(ACL_FLOAT, {6, 5, 5}, {}, ACL_FORMAT_NC1HWC0);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradHRes'", "given format NC1HWC0"}));
  // the profile before the memory rules.
  build({false, ACL_BF16, 5, 128});
  gradX = const_cast<aclTensor*>(x);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradOutput'", "N = 5"}));
}

}  // namespace
}  // namespace gradkit::test::mhc
