// aclnnMhcPre[V2]GetWorkspaceSize: every rule of spec mhc.md 2.8 in its order (code and message) under each
// platform profile, the profile limits of DECISIONS.md, the upstream op_api UT negative list (spec 9), the V2 gate,
// and gradkit's memory rules. Only the first phase is called: the executors are destroyed unrun.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::mhc {
namespace {

enum class Residual { Square, Factorial, None };  // N*N rows, N! rows, alpha of 2 (no hRes)

struct PreConfig {
  bool bsnd = false;
  aclDataType dtype = ACL_BF16;
  int64_t n = 4;
  int64_t d = 128;
  Residual residual = Residual::Square;
  bool gamma = true;
  bool caches = true;
  bool strided = false;  // every tensor a non-contiguous view
};

// Builds a valid call for the config; each test breaks one argument and calls.
class MhcPreChecks : public ::testing::TestWithParam<const char*> {
 public:
  void SetUp() override {
    soc_.emplace(GetParam());
    build(PreConfig{});
    recentError();
  }

  void build(const PreConfig& c) {
    config = c;
    lead = c.bsnd ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{6};
    residual = c.residual == Residual::Square ? c.n * c.n : c.residual == Residual::Factorial ? 24 : 0;
    f = 2 * c.n + residual;
    auto make = [&](aclDataType dtype, std::vector<int64_t> shape) {
      return c.strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
    };
    x = make(c.dtype, shape({c.n, c.d}));
    phi = make(ACL_FLOAT, {f, c.n * c.d});
    alpha = make(ACL_FLOAT, {c.residual == Residual::None ? 2 : 3});
    bias = make(ACL_FLOAT, {f});
    gamma = c.gamma ? make(ACL_FLOAT, {c.n, c.d}) : nullptr;
    hIn = make(c.dtype, shape({c.d}));
    hPost = make(ACL_FLOAT, shape({c.n}));
    hRes = c.residual == Residual::Square      ? make(ACL_FLOAT, shape({c.n, c.n}))
           : c.residual == Residual::Factorial ? make(ACL_FLOAT, shape({24}))
                                               : nullptr;
    invRms = c.caches ? make(ACL_FLOAT, lead) : nullptr;
    hMix = c.caches ? make(ACL_FLOAT, shape({f})) : nullptr;
    hPre = c.caches ? make(ACL_FLOAT, shape({c.n})) : nullptr;
  }

  std::vector<int64_t> shape(std::initializer_list<int64_t> tail) const {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), tail);
    return s;
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    uint64_t* sizeArg = nullWorkspaceSize ? nullptr : &size;
    aclOpExecutor** executorArg = nullExecutor ? nullptr : &executor;
    Outcome outcome;
    outcome.status = v2Mode ? aclnnMhcPreV2GetWorkspaceSize(x, phi, alpha, bias, gamma, 1e-6, 1e-6, *v2Mode, hIn, hPost,
                                                            hRes, invRms, hMix, hPre, sizeArg, executorArg)
                            : aclnnMhcPreGetWorkspaceSize(x, phi, alpha, bias, gamma, 1e-6, 1e-6, hIn, hPost, hRes,
                                                          invRms, hMix, hPre, sizeArg, executorArg);
    outcome.message = recentError();
    if (outcome.status == ACLNN_SUCCESS) {
      EXPECT_NE(executor, nullptr);
    } else {
      EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    }
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return outcome;
  }

  bool is950() const { return std::string(GetParam()) == "Ascend950"; }

  std::optional<ScopedSoc> soc_;
  TensorPool pool;
  PreConfig config;
  std::vector<int64_t> lead;
  int64_t residual = 0, f = 0;
  const aclTensor *x = nullptr, *phi = nullptr, *alpha = nullptr, *bias = nullptr, *gamma = nullptr;
  aclTensor *hIn = nullptr, *hPost = nullptr, *hRes = nullptr, *invRms = nullptr, *hMix = nullptr, *hPre = nullptr;
  std::optional<int64_t> v2Mode;
  bool nullWorkspaceSize = false, nullExecutor = false;
};

INSTANTIATE_TEST_SUITE_P(Profiles, MhcPreChecks, ::testing::ValuesIn(kAllSocs));

TEST_P(MhcPreChecks, ValidCallsSucceedInBothLayoutsDtypesWithAndWithoutGammaAndCaches) {
  for (bool bsnd : {false, true}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (bool withGamma : {false, true}) {
        for (bool caches : {false, true}) {
          for (bool strided : {false, true}) {
            build({bsnd, dtype, 4, 128, Residual::Square, withGamma, caches, strided});
            const Outcome outcome = call();
            EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " bsnd " << bsnd << " dtype " << dtype
                                                     << " gamma " << withGamma << " caches " << caches;
          }
        }
      }
    }
  }
}

TEST_P(MhcPreChecks, AlphaOfTwoNeedsNoHResAndIgnoresOne) {
  for (bool bsnd : {false, true}) {
    build({bsnd, ACL_FLOAT16, 4, 128, Residual::None, true, true, false});
    EXPECT_EQ(call().status, ACLNN_SUCCESS);
    hRes = pool.make(ACL_INT8, {1});  // never written nor checked
    EXPECT_EQ(call().status, ACLNN_SUCCESS);
  }
  // alpha of 2 needs phi / bias / hMix of 2N rows.
  const aclTensor* twoRows = alpha;
  build({});
  alpha = twoRows;
  hRes = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'phi'", "8 rows (2N", "alpha of 2", "[24, 512]"}));
}

TEST_P(MhcPreChecks, FactorialResidualOnlyInTheA2A3Profiles) {
  for (bool bsnd : {false, true}) {
    build({bsnd, ACL_BF16, 4, 128, Residual::Factorial, true, true, false});
    Outcome outcome = call();
    if (!is950()) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
      continue;
    }
    // The output ranks (spec 2.8 step 7) come first: hRes [.., N!] has one dim too few here.
    EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                          {"aclnnMhcPre:", "'hRes'", "rank of x: [.., N, N]", "[.., N!] form exists only in the",
                           "this is the Ascend950 profile"}));
    // With an N x N hRes, phi's N! rows are named.
    hRes = pool.make(ACL_FLOAT, shape({4, 4}));
    outcome = call();
    EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                          {"aclnnMhcPre:", "'phi'", "24 rows", "N! residual exists only in the Ascend910B",
                           "this is the Ascend950 profile", "given shape [32, 512]"}));
  }
}

TEST_P(MhcPreChecks, StreamsAndHiddenFollowTheProfile) {
  struct Case {
    int64_t n, d;
    bool on950, onA2;
  } cases[] = {{4, 128, true, true},     {6, 64, true, false},    {8, 64, true, false},   {4, 64, true, false},
               {4, 16384, true, true},   {4, 256, true, true},    {5, 128, false, false}, {2, 128, false, false},
               {4, 96, false, false},    {4, 16512, false, true}, {4, 32, false, false},  {4, 192, true, false},
               {4, 100096, false, false}};
  for (const Case& c : cases) {
    build({false, ACL_BF16, c.n, c.d, Residual::Square, true, false, false});
    const Outcome outcome = call();
    const bool valid = is950() ? c.on950 : c.onA2;
    if (valid) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " N " << c.n << " D " << c.d;
      continue;
    }
    const bool nBad = is950() ? !(c.n == 4 || c.n == 6 || c.n == 8) : c.n != 4;
    if (nBad) {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"'x'", "N (dim -2", is950() ? "{4, 6, 8}" : "in {4} in the", GetParam(),
                             "given N = " + std::to_string(c.n)}))
          << c.n << " " << c.d;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"'x'", is950() ? "a multiple of 64 in [64, 16384]" : "a multiple of 128 in [128, 99968]",
                             GetParam(), "given D = " + std::to_string(c.d)}))
          << c.n << " " << c.d;
    }
  }
}

TEST_P(MhcPreChecks, V2ModesFollowTheProfile) {
  for (int64_t mode : {0, 1}) {
    v2Mode = mode;
    const Outcome outcome = call();
    if (is950()) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"aclnnMhcPreV2:", "unavailable in the " + std::string(GetParam()) + " profile",
                             "only in the Ascend950 profile"}));
    }
  }
  for (int64_t mode : {2, -1, 100}) {
    v2Mode = mode;
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {is950() ? "'opImplMode'" : "only in the Ascend950 profile",
                           is950() ? "given " + std::to_string(mode) : "aclnnMhcPreV2"}));
  }
}

TEST_P(MhcPreChecks, V2InvalidModeWithEveryPointerNullIs161002AndLeavesTheExecutor) {
  aclOpExecutor* const sentinel = reinterpret_cast<aclOpExecutor*>(0x1234);
  aclOpExecutor* executor = sentinel;
  uint64_t size = 77;
  EXPECT_EQ(aclnnMhcPreV2GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, 1e-6, 1e-6, 2, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclnnMhcPreV2", "161002"}));
  EXPECT_EQ(aclnnMhcPreV2GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, 1e-6, 1e-6, 2, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(executor, sentinel);
  EXPECT_EQ(size, 77u);
  recentError();
  // V1 with every pointer null: the first null pointer (workspaceSize) is named.
  EXPECT_TRUE(
      failsWith(Outcome{aclnnMhcPreGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, 1e-6, 1e-6, nullptr,
                                                    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
                        recentError()},
                ACLNN_ERR_PARAM_NULLPTR, {"aclnnMhcPre:", "'workspaceSize'", "given nullptr"}));
}

TEST_P(MhcPreChecks, NullPointersGive161001NamingTheFirst) {
  nullExecutor = true;
  x = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'executor'", "a non-null pointer", "given nullptr"}));
  nullWorkspaceSize = true;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'workspaceSize'"}));
  nullWorkspaceSize = nullExecutor = false;
  using Field = std::function<void(MhcPreChecks&)>;
  const std::pair<const char*, Field> cases[] = {
      {"x", [](MhcPreChecks& t) { t.x = nullptr; }},         {"phi", [](MhcPreChecks& t) { t.phi = nullptr; }},
      {"alpha", [](MhcPreChecks& t) { t.alpha = nullptr; }}, {"bias", [](MhcPreChecks& t) { t.bias = nullptr; }},
      {"hIn", [](MhcPreChecks& t) { t.hIn = nullptr; }},     {"hPost", [](MhcPreChecks& t) { t.hPost = nullptr; }},
      {"hRes", [](MhcPreChecks& t) { t.hRes = nullptr; }},
  };
  for (const auto& [name, breakIt] : cases) {
    build({});
    breakIt(*this);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"aclnnMhcPre:", quoted(name), "given nullptr"})) << name;
  }
  // hRes is asked only after the input ranks and alpha's length (spec 2.8 step 6): a bad x rank wins.
  build({});
  hRes = nullptr;
  x = pool.make(ACL_BF16, {6, 512});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "3 or 4 dims", "given 2 dims [6, 512]"}));
  // Optional arguments may be null.
  build({false, ACL_BF16, 4, 128, Residual::Square, false, false, false});
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

TEST_P(MhcPreChecks, EmptyInputsGive161002) {
  const std::pair<const char*, std::function<void()>> cases[] = {
      {"x",
       [&] {
         x = pool.make(ACL_BF16, {0, 4, 128});
       }},
      {"phi",
       [&] {
         phi = pool.make(ACL_FLOAT, {24, 0});
       }},
      {"alpha", [&] { alpha = pool.make(ACL_FLOAT, {0}); }},
      {"bias", [&] { bias = pool.make(ACL_FLOAT, {0}); }},
  };
  for (const auto& [name, breakIt] : cases) {
    build({});
    breakIt();
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {quoted(name), "a non-empty tensor", "given empty shape"}))
        << name;
  }
  // Empty comes before rank: an empty 2-D x is reported as empty.
  build({});
  x = pool.make(ACL_BF16, {0, 4});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "non-empty", "[0, 4]"}));
}

// Spec 9: the upstream op_api UT's bad dtype / rank / shape list, plus the rest of 2.8 steps 4-9.
TEST_P(MhcPreChecks, UpstreamNegativeListAndEveryShapeRankDtypeRule) {
  struct Case {
    const char* name;
    std::function<void(MhcPreChecks&)> breakIt;
    std::vector<std::string> fragments;
  };
  const std::string n1 = is950() ? "{4, 6, 8}" : "{4}";
  const std::vector<Case> cases = {
      {"x fp32",
       [](auto& t) {
         t.x = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'x'", "BFLOAT16, FLOAT16", "FLOAT"}},
      {"x rank 2",
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {6, 512});
       },
       {"'x'", "3 or 4 dims", "2 dims"}},
      {"x rank 5",
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {1, 2, 3, 4, 128});
       },
       {"'x'", "5 dims"}},
      {"n = N-1",
       [](auto& t) {
         t.x = t.pool.make(ACL_BF16, {6, 3, 128});
       },
       {"'x'", n1, "N = 3"}},
      {"phi fp16",
       [](auto& t) {
         t.phi = t.pool.make(ACL_FLOAT16, {24, 512});
       },
       {"'phi'", "{FLOAT}", "FLOAT16"}},
      {"phi rank 1", [](auto& t) { t.phi = t.pool.make(ACL_FLOAT, {24 * 512}); }, {"'phi'", "2 dims", "1 dims"}},
      {"phi F-1",
       [](auto& t) {
         t.phi = t.pool.make(ACL_FLOAT, {23, 512});
       },
       {"'phi'", "24", "rows", "[23, 512]"}},
      {"phi K+1",
       [](auto& t) {
         t.phi = t.pool.make(ACL_FLOAT, {24, 513});
       },
       {"'phi'", "[24, 512]", "[24, 513]"}},
      {"alpha fp16", [](auto& t) { t.alpha = t.pool.make(ACL_FLOAT16, {3}); }, {"'alpha'", "FLOAT16"}},
      {"alpha rank 0", [](auto& t) { t.alpha = t.pool.make(ACL_FLOAT, {}); }, {"'alpha'", "1 dims", "0 dims []"}},
      {"alpha [1,3]",
       [](auto& t) {
         t.alpha = t.pool.make(ACL_FLOAT, {1, 3});
       },
       {"'alpha'", "2 dims [1, 3]"}},
      {"alpha [4]", [](auto& t) { t.alpha = t.pool.make(ACL_FLOAT, {4}); }, {"'alpha'", "[3]", "[2]", "shape [4]"}},
      {"alpha [1]", [](auto& t) { t.alpha = t.pool.make(ACL_FLOAT, {1}); }, {"'alpha'", "shape [1]"}},
      {"bias fp16", [](auto& t) { t.bias = t.pool.make(ACL_FLOAT16, {24}); }, {"'bias'", "FLOAT16"}},
      {"bias [1,F]",
       [](auto& t) {
         t.bias = t.pool.make(ACL_FLOAT, {1, 24});
       },
       {"'bias'", "1 dims", "2 dims"}},
      {"bias F-1", [](auto& t) { t.bias = t.pool.make(ACL_FLOAT, {23}); }, {"'bias'", "shape [24]", "shape [23]"}},
      {"gamma fp16",
       [](auto& t) {
         t.gamma = t.pool.make(ACL_FLOAT16, {4, 128});
       },
       {"'gammaOptional'", "FLOAT16"}},
      {"gamma [D]", [](auto& t) { t.gamma = t.pool.make(ACL_FLOAT, {128}); }, {"'gammaOptional'", "2 dims", "1 dims"}},
      {"gamma D+1",
       [](auto& t) {
         t.gamma = t.pool.make(ACL_FLOAT, {4, 129});
       },
       {"'gammaOptional'", "[4, 128]"}},
      {"hIn fp32",
       [](auto& t) {
         t.hIn = t.pool.make(ACL_FLOAT, {6, 128});
       },
       {"'hIn'", "BFLOAT16 (the dtype of x)"}},
      {"hIn fp16",
       [](auto& t) {
         t.hIn = t.pool.make(ACL_FLOAT16, {6, 128});
       },
       {"'hIn'", "given dtype FLOAT16"}},
      {"hIn rank 1", [](auto& t) { t.hIn = t.pool.make(ACL_BF16, {768}); }, {"'hIn'", "2 dims (rank of x - 1)"}},
      {"hIn D+1",
       [](auto& t) {
         t.hIn = t.pool.make(ACL_BF16, {6, 129});
       },
       {"'hIn'", "shape [6, 128]", "[6, 129]"}},
      {"hPost fp16",
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT16, {6, 4});
       },
       {"'hPost'", "FLOAT16"}},
      {"hPost rank 1", [](auto& t) { t.hPost = t.pool.make(ACL_FLOAT, {24}); }, {"'hPost'", "2 dims", "1 dims"}},
      {"hPost N+1",
       [](auto& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {6, 5});
       },
       {"'hPost'", "[6, 4]", "[6, 5]"}},
      {"hRes fp16",
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT16, {6, 4, 4});
       },
       {"'hRes'", "FLOAT16"}},
      {"hRes rank 2",
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 16});
       },
       {"'hRes'", "[6, 16]"}},
      {"hRes rank 4",
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {1, 6, 4, 4});
       },
       {"'hRes'", "4 dims"}},
      {"hRes N+1",
       [](auto& t) {
         t.hRes = t.pool.make(ACL_FLOAT, {6, 5, 5});
       },
       {"'hRes'", "[6, 4, 4]", "[6, 5, 5]"}},
      {"invRms fp16", [](auto& t) { t.invRms = t.pool.make(ACL_FLOAT16, {6}); }, {"'invRmsOptional'", "FLOAT16"}},
      {"invRms rank 3",
       [](auto& t) {
         t.invRms = t.pool.make(ACL_FLOAT, {6, 1, 1});
       },
       {"'invRmsOptional'", "1 dims (rank of x - 2)", "3 dims"}},
      {"invRms T+1", [](auto& t) { t.invRms = t.pool.make(ACL_FLOAT, {7}); }, {"'invRmsOptional'", "[6]", "[7]"}},
      {"hMix F+1",
       [](auto& t) {
         t.hMix = t.pool.make(ACL_FLOAT, {6, 25});
       },
       {"'hMixOptional'", "[6, 24]", "[6, 25]"}},
      {"hMix [T]", [](auto& t) { t.hMix = t.pool.make(ACL_FLOAT, {6}); }, {"'hMixOptional'", "2 dims", "1 dims"}},
      {"hMix fp16",
       [](auto& t) {
         t.hMix = t.pool.make(ACL_FLOAT16, {6, 24});
       },
       {"'hMixOptional'", "FLOAT16"}},
      {"hPre N-1",
       [](auto& t) {
         t.hPre = t.pool.make(ACL_FLOAT, {6, 3});
       },
       {"'hPreOptional'", "[6, 4]", "[6, 3]"}},
      {"hPre fp16",
       [](auto& t) {
         t.hPre = t.pool.make(ACL_FLOAT16, {6, 4});
       },
       {"'hPreOptional'", "FLOAT16"}},
      {"partial caches",
       [](auto& t) { t.hMix = nullptr; },
       {"invRmsOptional, hMixOptional, hPreOptional must be all given or all null", "given given, null, given"}},
      {"only invRms", [](auto& t) { t.hMix = t.hPre = nullptr; }, {"all given or all null", "given given, null, null"}},
  };
  for (const Case& c : cases) {
    build({});
    c.breakIt(*this);
    const Outcome outcome = call();
    EXPECT_EQ(outcome.status, ACLNN_ERR_PARAM_INVALID) << c.name << ": " << outcome.message;
    for (const std::string& fragment : c.fragments) {
      EXPECT_NE(outcome.message.find(fragment), std::string::npos) << c.name << ": " << outcome.message;
    }
    EXPECT_TRUE(mentions(outcome.message, {"aclnnMhcPre:", "(code 161002)"})) << c.name;
  }
}

TEST_P(MhcPreChecks, BsndShapesAreExact) {
  build({true, ACL_FLOAT16, 4, 128, Residual::Square, true, true, false});  // lead [2, 3]
  const aclTensor* good = invRms;
  invRms = pool.make(ACL_FLOAT, {6});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'invRmsOptional'", "2 dims (rank of x - 2)", "1 dims"}));
  invRms = pool.make(ACL_FLOAT, {3, 2});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'invRmsOptional'", "shape [2, 3] ([B, S] of x)", "[3, 2]"}));
  invRms = const_cast<aclTensor*>(good);
  hRes = pool.make(ACL_FLOAT, {2, 3, 16});
  const Outcome outcome = call();
  if (is950()) {
    EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID, {"'hRes'", "4 dims (rank of x: [.., N, N]", "3 dims"}));
  } else {
    EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID, {"'hRes'", "shape [2, 3, 4, 4]", "[2, 3, 16]"}));
  }
}

// DECISIONS.md: the N! and N*N forms may not be mixed (upstream's A2 path checks bias and hMix against "either").
TEST_P(MhcPreChecks, FactorialAndSquareFormsMayNotBeMixed) {
  if (is950()) GTEST_SKIP() << "the N! form is rejected as a whole in the Ascend950 profile (see above)";
  build({false, ACL_BF16, 4, 128, Residual::Factorial, true, true, false});
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  const aclTensor* goodBias = bias;
  bias = pool.make(ACL_FLOAT, {24});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'bias'", "shape [32]", "given shape [24]"}));
  bias = goodBias;
  aclTensor* goodHRes = hRes;
  hRes = pool.make(ACL_FLOAT, {6, 4, 4});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hRes'", "shape [6, 24]", "2N + N! rows", "[6, 4, 4]"}));
  hRes = goodHRes;
  hMix = pool.make(ACL_FLOAT, {6, 24});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hMixOptional'", "shape [6, 32]", "[6, 24]"}));
  build({});
  hRes = pool.make(ACL_FLOAT, {6, 24});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hRes'", "shape [6, 4, 4]", "[6, 24]"}));
}

TEST_P(MhcPreChecks, PrivateFormatsGive161002) {
  for (aclFormat format : {ACL_FORMAT_NC1HWC0, ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_FRACTAL_Z, ACL_FORMAT_NDC1HWC0,
                           ACL_FRACTAL_Z_3D, ACL_FORMAT_NC1HWC0_C04}) {
    build({});
    x = pool.make(ACL_BF16, {6, 4, 128}, {}, format);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "a public format", "given format"})) << format;
  }
  build({});
  hMix = pool.make(ACL_FLOAT, {6, 24}, {}, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hMixOptional'", "given format FRACTAL_NZ"}));
  build({});
  phi = pool.make(ACL_FLOAT, {24, 512}, {}, ACL_FORMAT_NCHW);  // public formats pass
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

TEST_P(MhcPreChecks, RulesRunInTheSpecOrder) {
  // rank (step 4) before shape (8): phi rank 3 and a wrong bias.
  phi = pool.make(ACL_FLOAT, {1, 24, 512});
  bias = pool.make(ACL_FLOAT, {5});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'phi'"}));
  // output ranks (7) before input shapes (8).
  build({});
  bias = pool.make(ACL_FLOAT, {5});
  hPost = pool.make(ACL_FLOAT, {24});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hPost'"}));
  // shape (8) before dtype (9).
  build({});
  bias = pool.make(ACL_FLOAT16, {5});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'bias'", "shape [5]"}));
  // dtype (9) before format (10).
  build({});
  x = pool.make(ACL_FLOAT, {6, 4, 128}, {}, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "dtype FLOAT"}));
  // the profile's N rule before phi's shape.
  build({});
  x = pool.make(ACL_BF16, {6, 5, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "N = 5"}));
}

TEST_P(MhcPreChecks, OutputsMayNotOverlapInputsEachOtherOrThemselves) {
  hIn = pool.alias(x, ACL_BF16, {6, 128}, 64);
  EXPECT_TRUE(
      failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hIn'", "does not overlap the input x", "bytes overlapping x"}));
  build({});
  hPre = hPost;  // the same view twice
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'hPreOptional'", "does not overlap the output hPost", "bytes overlapping hPost"}));
  build({});
  const aclTensor* shared = pool.make(ACL_FLOAT, {400});
  hRes = pool.alias(shared, ACL_FLOAT, {6, 4, 4});    // floats [0, 96)
  hMix = pool.alias(shared, ACL_FLOAT, {6, 24}, 95);  // floats [95, 239): one float in common
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hMixOptional'", "overlap the output hRes"}));
  build({});
  hPost = pool.make(ACL_FLOAT, {6, 4}, {1, 1});  // two elements on one address
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'hPost'", "all at different addresses", "[1, 1]"}));
  build({});
  invRms = pool.make(ACL_FLOAT, {6}, {0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'invRmsOptional'", "strides [0]"}));
  // Inputs may share memory with each other (alpha and bias read from one buffer).
  build({});
  alpha = pool.alias(bias, ACL_FLOAT, {3}, 0);
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

TEST_P(MhcPreChecks, TensorsOverFreedMemoryAreRejected) {
  // phi and hIn are made over device memory that is then freed: aclCreateTensor's memory rules, asked at call time.
  void* phiBlock = nullptr;
  void* hInBlock = nullptr;
  ASSERT_EQ(aclrtMalloc(&phiBlock, 24 * 512 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&hInBlock, 6 * 128 * 2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  phi = pool.view(phiBlock, ACL_FLOAT, {24, 512});
  hIn = pool.view(hInBlock, ACL_BF16, {6, 128});
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  ASSERT_EQ(aclrtFree(hInBlock), ACL_SUCCESS);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'hIn'", "expected data in live memory", "1568-byte block", "that was freed"}));
  ASSERT_EQ(aclrtFree(phiBlock), ACL_SUCCESS);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'phi'", "data in live memory", "that was freed"}));
}

}  // namespace
}  // namespace gradkit::test::mhc
