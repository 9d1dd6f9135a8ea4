// aclnnMhcPreBackward[V2]GetWorkspaceSize: every rule of spec mhc.md 3.6 in its order (code and message) under
// each platform profile, the profile limits and residual-size consistency of DECISIONS.md, the upstream op_api UT
// list (spec 9, incl. the hicann V2 cases), and gradkit's memory rules. Only the first phase is called.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::mhc {
namespace {

struct BackwardConfig {
  bool bsnd = false;
  aclDataType dtype = ACL_BF16;
  int64_t n = 4;
  int64_t d = 128;
  bool factorial = false;  // gradHRes [.., N!] and phi 2N + N! rows
  bool gamma = true;
  bool gradXPost = true;
  bool strided = false;  // every tensor a non-contiguous view
  int64_t tokens = 6;    // TND's T (BSND is [2, 3])
};

// Builds a valid call for the config; each test breaks one argument and calls.
class MhcPreBackwardChecks : public ::testing::TestWithParam<const char*> {
 public:
  void SetUp() override {
    soc_.emplace(GetParam());
    build(BackwardConfig{});
    recentError();
  }

  void build(const BackwardConfig& c) {
    lead = c.bsnd ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{c.tokens};
    f = 2 * c.n + (c.factorial ? 24 : c.n * c.n);
    auto make = [&](aclDataType dtype, std::vector<int64_t> shape) -> aclTensor* {
      return c.strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
    };
    x = make(c.dtype, shape({c.n, c.d}));
    phi = make(ACL_FLOAT, {f, c.n * c.d});
    alpha = make(ACL_FLOAT, {3});
    gradHIn = make(c.dtype, shape({c.d}));
    gradHPost = make(ACL_FLOAT, shape({c.n}));
    gradHRes = c.factorial ? make(ACL_FLOAT, shape({24})) : make(ACL_FLOAT, shape({c.n, c.n}));
    invRms = make(ACL_FLOAT, lead);
    hMix = make(ACL_FLOAT, shape({f}));
    hPre = make(ACL_FLOAT, shape({c.n}));
    hPost = make(ACL_FLOAT, shape({c.n}));
    gamma = c.gamma ? make(ACL_FLOAT, {c.n, c.d}) : nullptr;
    gradXPost = c.gradXPost ? make(c.dtype, shape({c.n, c.d})) : nullptr;
    gradX = make(c.dtype, shape({c.n, c.d}));
    gradPhi = make(ACL_FLOAT, {f, c.n * c.d});
    gradAlpha = make(ACL_FLOAT, {3});
    gradBias = make(ACL_FLOAT, {f});
    gradGamma = c.gamma ? make(ACL_FLOAT, {c.n, c.d}) : nullptr;
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
    outcome.status =
        v2Mode ? aclnnMhcPreBackwardV2GetWorkspaceSize(x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre,
                                                       hPost, gamma, gradXPost, 1e-6f, *v2Mode, gradX, gradPhi,
                                                       gradAlpha, gradBias, gradGamma, sizeArg, executorArg)
               : aclnnMhcPreBackwardGetWorkspaceSize(x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre,
                                                     hPost, gamma, gradXPost, 1e-6f, gradX, gradPhi, gradAlpha,
                                                     gradBias, gradGamma, sizeArg, executorArg);
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
  std::vector<int64_t> lead;
  int64_t f = 0;
  const aclTensor *x = nullptr, *phi = nullptr, *alpha = nullptr, *gradHIn = nullptr, *gradHPost = nullptr,
                  *gradHRes = nullptr, *invRms = nullptr, *hMix = nullptr, *hPre = nullptr, *hPost = nullptr,
                  *gamma = nullptr, *gradXPost = nullptr;
  const aclTensor *gradX = nullptr, *gradPhi = nullptr, *gradAlpha = nullptr, *gradBias = nullptr, *gradGamma = nullptr;
  std::optional<int64_t> v2Mode;
  bool nullWorkspaceSize = false, nullExecutor = false;
};

INSTANTIATE_TEST_SUITE_P(Profiles, MhcPreBackwardChecks, ::testing::ValuesIn(kAllSocs));

TEST_P(MhcPreBackwardChecks, ValidCallsSucceedInBothLayoutsDtypesWithAndWithoutGammaAndGradXPost) {
  for (bool bsnd : {false, true}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (bool withGamma : {false, true}) {
        for (bool withGradXPost : {false, true}) {
          for (bool strided : {false, true}) {
            build({bsnd, dtype, 4, 128, false, withGamma, withGradXPost, strided});
            const Outcome outcome = call();
            EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " bsnd " << bsnd << " dtype " << dtype
                                                     << " gamma " << withGamma << " gradXPost " << withGradXPost;
          }
        }
      }
    }
  }
}

// Issue 10: the workspace is O(threads * N * D + F * N * D): the per-token values of pass 1 live for one group of
// tokens at a time, so a call with 3x the tokens books the same workspace (both T above one group).
TEST_P(MhcPreBackwardChecks, WorkspaceDoesNotGrowWithTheTokenCount) {
  const auto workspace = [&](int64_t tokens) {
    BackwardConfig c;
    c.tokens = tokens;
    build(c);
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnMhcPreBackwardGetWorkspaceSize(x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre,
                                                  hPost, gamma, gradXPost, 1e-6f, gradX, gradPhi, gradAlpha, gradBias,
                                                  gradGamma, &size, &executor),
              ACLNN_SUCCESS)
        << recentError();
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return size;
  };
  const uint64_t size = workspace(4000);
  EXPECT_GT(size, 0u);
  EXPECT_EQ(workspace(12000), size);
}

// DECISIONS.md: gradGamma is ignored (not checked, never written) when gamma is null.
TEST_P(MhcPreBackwardChecks, GradGammaIsIgnoredWithoutGamma) {
  gamma = nullptr;
  gradGamma = nullptr;
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  gradGamma = pool.make(ACL_INT8, {1});
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  gradGamma = gradX;  // even the same memory as another output
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

TEST_P(MhcPreBackwardChecks, GradXMayBeTheSameViewAsGradXPost) {
  gradX = gradXPost;  // in place: exactly the same view
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  build({});
  gradX = pool.alias(gradXPost, ACL_BF16, {6, 4, 128}, 1);  // one element further: overlapping, not the same view
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradX'", "gradXPostOptional"}));
}

TEST_P(MhcPreBackwardChecks, FactorialResidualOnlyInTheA2A3Profiles) {
  for (bool bsnd : {false, true}) {
    // The hicann UT on Ascend950: gradHRes [10, 24] with phi [32, ..] fails.
    build({bsnd, ACL_BF16, 4, 128, true, true, true, false});
    const Outcome outcome = call();
    if (is950()) {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"aclnnMhcPreBackward:", "'gradHRes'", "N! form", "exists only in the Ascend910B",
                             "this is the Ascend950 profile", bsnd ? "[2, 3, 24]" : "[6, 24]"}));
    } else {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
    }
  }
}

// DECISIONS.md: the residual width of gradHRes must be phi.dim0 - 2N (upstream does not check it).
TEST_P(MhcPreBackwardChecks, ResidualSizesMustAgree) {
  build({});
  phi = pool.make(ACL_FLOAT, {32, 512});
  gradPhi = pool.make(ACL_FLOAT, {32, 512});
  gradBias = pool.make(ACL_FLOAT, {32});
  hMix = pool.make(ACL_FLOAT, {6, 32});
  if (is950()) {
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {"'phi'", "24 rows", "N! residual exists only in", "Ascend950 profile", "[32, 512]"}));
  } else {
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {"'phi'", "expected 24 rows (2N + R, R = 16 the residual width of gradHRes [6, 4, 4])",
                           "given shape [32, 512]"}));
    build({false, ACL_BF16, 4, 128, true, true, true, false});  // gradHRes [6, 24], phi of N*N rows
    phi = pool.make(ACL_FLOAT, {24, 512});
    gradPhi = pool.make(ACL_FLOAT, {24, 512});
    gradBias = pool.make(ACL_FLOAT, {24});
    hMix = pool.make(ACL_FLOAT, {6, 24});
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'phi'", "32 rows (2N + R, R = 24", "[24, 512]"}));
    // phi with neither 2N + N*N nor 2N + N! rows.
    build({});
    phi = pool.make(ACL_FLOAT, {25, 512});
    hMix = pool.make(ACL_FLOAT, {6, 25});
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'phi'", "24 or 32 rows", GetParam()}));
  }
}

TEST_P(MhcPreBackwardChecks, StreamsAndHiddenFollowTheProfile) {
  struct Case {
    int64_t n, d;
    bool on950, onA2;
  } cases[] = {{4, 128, true, true},   {6, 64, true, false},     {8, 64, true, false},  {4, 64, true, false},
               {4, 16384, true, true}, {5, 128, false, false},   {4, 96, false, false}, {4, 16512, false, true},
               {4, 32, false, false},  {4, 100096, false, false}};
  for (const Case& c : cases) {
    build({false, ACL_FLOAT16, c.n, c.d, false, false, false, false});
    const Outcome outcome = call();
    if (is950() ? c.on950 : c.onA2) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message << " N " << c.n << " D " << c.d;
    } else if (is950() ? !(c.n == 4 || c.n == 6 || c.n == 8) : c.n != 4) {
      EXPECT_TRUE(
          failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                    {"'x'", is950() ? "in {4, 6, 8}" : "in {4} in the", GetParam(), "N = " + std::to_string(c.n)}))
          << c.n;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"'x'", is950() ? "a multiple of 64 in [64, 16384]" : "a multiple of 128 in [128, 99968]",
                             GetParam(), "D = " + std::to_string(c.d)}))
          << c.d;
    }
  }
}

TEST_P(MhcPreBackwardChecks, V2ModesFollowTheProfile) {
  for (int64_t mode : {0, 1}) {
    v2Mode = mode;
    const Outcome outcome = call();
    if (is950()) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"aclnnMhcPreBackwardV2:", "unavailable in the " + std::string(GetParam()),
                             "only in the Ascend950 profile"}));
    }
  }
  for (int64_t mode : {2, -1}) {
    v2Mode = mode;
    if (is950()) {
      EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                            {"aclnnMhcPreBackwardV2:", "'opImplMode'", "0 (fp32 matmul) or 1 (HF32 matmul)",
                             "given " + std::to_string(mode)}));
    } else {
      EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"only in the Ascend950 profile"}));
    }
  }
}

// hicann UT mhc_pre_backward_v2_invalid_mode_precedes_tensor_validation_ascend950 (spec 11.1).
TEST_P(MhcPreBackwardChecks, V2InvalidModeWithEveryPointerNullIs161002AndLeavesTheExecutor) {
  aclOpExecutor* executor = nullptr;
  uint64_t size = 0;
  EXPECT_EQ(aclnnMhcPreBackwardV2GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr, nullptr, 1e-6f, 2, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(executor, nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclnnMhcPreBackwardV2", "(code 161002)"}));
  aclOpExecutor* const sentinel = reinterpret_cast<aclOpExecutor*>(0x1234);
  executor = sentinel;
  EXPECT_EQ(aclnnMhcPreBackwardV2GetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr, nullptr, 1e-6f, -1, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr, nullptr, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(executor, sentinel);
  recentError();
  // V1 (seed / spec 10.7): all null is 161001, naming the first null pointer.
  EXPECT_EQ(aclnnMhcPreBackwardGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                nullptr, nullptr, nullptr, nullptr, 1e-6f, nullptr, nullptr, nullptr,
                                                nullptr, nullptr, nullptr, nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclnnMhcPreBackward:", "'workspaceSize'", "given nullptr"}));
}

TEST_P(MhcPreBackwardChecks, NullPointersGive161001NamingTheArgument) {
  nullExecutor = true;
  x = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'executor'", "given nullptr"}));
  nullWorkspaceSize = true;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'workspaceSize'"}));
  nullWorkspaceSize = nullExecutor = false;
  // Spec 9: each of the 10 required inputs, each of the 4 required outputs, gradGamma with gamma given.
  using Member = const aclTensor* MhcPreBackwardChecks::*;
  const std::pair<const char*, Member> cases[] = {
      {"x", &MhcPreBackwardChecks::x},
      {"phi", &MhcPreBackwardChecks::phi},
      {"alpha", &MhcPreBackwardChecks::alpha},
      {"gradHIn", &MhcPreBackwardChecks::gradHIn},
      {"gradHPost", &MhcPreBackwardChecks::gradHPost},
      {"gradHRes", &MhcPreBackwardChecks::gradHRes},
      {"invRms", &MhcPreBackwardChecks::invRms},
      {"hMix", &MhcPreBackwardChecks::hMix},
      {"hPre", &MhcPreBackwardChecks::hPre},
      {"hPost", &MhcPreBackwardChecks::hPost},
      {"gradX", &MhcPreBackwardChecks::gradX},
      {"gradPhi", &MhcPreBackwardChecks::gradPhi},
      {"gradAlpha", &MhcPreBackwardChecks::gradAlpha},
      {"gradBias", &MhcPreBackwardChecks::gradBias},
      {"gradGamma", &MhcPreBackwardChecks::gradGamma},
  };
  for (const auto& [name, member] : cases) {
    build({});
    this->*member = nullptr;
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"aclnnMhcPreBackward:", quoted(name), "given nullptr"}))
        << name;
  }
  build({});
  gradGamma = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'gradGamma'", "gammaOptional is given"}));
  // The null checks come before everything else: a null gradBias wins over an empty x.
  build({});
  x = pool.make(ACL_BF16, {0, 4, 128});
  gradBias = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'gradBias'"}));
}

TEST_P(MhcPreBackwardChecks, EmptyInputsGive161002) {
  using Member = const aclTensor* MhcPreBackwardChecks::*;
  const std::pair<const char*, Member> cases[] = {
      {"x", &MhcPreBackwardChecks::x},
      {"phi", &MhcPreBackwardChecks::phi},
      {"alpha", &MhcPreBackwardChecks::alpha},
      {"gradHIn", &MhcPreBackwardChecks::gradHIn},
      {"gradHPost", &MhcPreBackwardChecks::gradHPost},
      {"gradHRes", &MhcPreBackwardChecks::gradHRes},
      {"invRms", &MhcPreBackwardChecks::invRms},
      {"hMix", &MhcPreBackwardChecks::hMix},
      {"hPre", &MhcPreBackwardChecks::hPre},
      {"hPost", &MhcPreBackwardChecks::hPost},
      {"gammaOptional", &MhcPreBackwardChecks::gamma},
      {"gradXPostOptional", &MhcPreBackwardChecks::gradXPost},
  };
  for (const auto& [name, member] : cases) {
    build({});
    this->*member = pool.make(ACL_FLOAT, {0, 3});
    EXPECT_TRUE(
        failsWith(call(), ACLNN_ERR_PARAM_INVALID, {quoted(name), "a non-empty tensor", "given empty shape [0, 3]"}))
        << name;
  }
  // Outputs are not checked for emptiness (spec 3.6 step 3); an empty one fails its shape rule instead.
  build({});
  gradAlpha = pool.make(ACL_FLOAT, {0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradAlpha'", "shape [3]", "given shape [0]"}));
}

// Spec 9: the upstream op_api UT's bad rank / dtype / format / shape list, plus the rest of 3.6 steps 4-7.
TEST_P(MhcPreBackwardChecks, UpstreamNegativeListAndEveryShapeRankDtypeRule) {
  struct Case {
    const char* name;
    bool bsnd;
    std::function<void(MhcPreBackwardChecks&)> breakIt;
    std::vector<std::string> fragments;
  };
  using T = MhcPreBackwardChecks;
  const std::vector<Case> cases = {
      // ranks
      {"x rank 2",
       false,
       [](T& t) {
         t.x = t.pool.make(ACL_BF16, {6, 512});
       },
       {"'x'", "3 or 4 dims", "2 dims"}},
      {"phi rank 3",
       false,
       [](T& t) {
         t.phi = t.pool.make(ACL_FLOAT, {1, 24, 512});
       },
       {"'phi'", "2 dims", "3 dims"}},
      {"gamma [N]",
       false,
       [](T& t) { t.gamma = t.pool.make(ACL_FLOAT, {4}); },
       {"'gammaOptional'", "2 dims", "1 dims"}},
      {"gradX TND rank 4",
       false,
       [](T& t) {
         t.gradX = t.pool.make(ACL_BF16, {1, 6, 4, 128});
       },
       {"'gradX'", "3 dims (rank of x)", "4 dims"}},
      {"gradX BSND rank 3",
       true,
       [](T& t) {
         t.gradX = t.pool.make(ACL_BF16, {6, 4, 128});
       },
       {"'gradX'", "4 dims (rank of x)", "3 dims"}},
      {"gradHIn rank 3",
       false,
       [](T& t) {
         t.gradHIn = t.pool.make(ACL_BF16, {6, 1, 128});
       },
       {"'gradHIn'", "2 dims (rank of x - 1)"}},
      {"gradHPost rank 3",
       false,
       [](T& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT, {6, 4, 1});
       },
       {"'gradHPost'", "2 dims (rank of x - 1)", "3 dims"}},
      {"gradHRes rank 4",
       false,
       [](T& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {1, 6, 4, 4});
       },
       {"'gradHRes'", "3 or 2 dims", "4 dims"}},
      {"invRms rank 2",
       false,
       [](T& t) {
         t.invRms = t.pool.make(ACL_FLOAT, {6, 1});
       },
       {"'invRms'", "1 dims (rank of x - 2)"}},
      {"hMix [T]", false, [](T& t) { t.hMix = t.pool.make(ACL_FLOAT, {6}); }, {"'hMix'", "2 dims", "1 dims [6]"}},
      {"hPre rank 1", false, [](T& t) { t.hPre = t.pool.make(ACL_FLOAT, {24}); }, {"'hPre'", "2 dims", "1 dims"}},
      {"hPost rank 3",
       false,
       [](T& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {6, 4, 1});
       },
       {"'hPost'", "2 dims"}},
      {"gradXPost rank 2",
       false,
       [](T& t) {
         t.gradXPost = t.pool.make(ACL_BF16, {6, 512});
       },
       {"'gradXPostOptional'", "3 dims (rank of x)"}},
      {"gradPhi rank 1", false, [](T& t) { t.gradPhi = t.pool.make(ACL_FLOAT, {24 * 512}); }, {"'gradPhi'", "2 dims"}},
      {"gradAlpha [3,1]",
       false,
       [](T& t) {
         t.gradAlpha = t.pool.make(ACL_FLOAT, {3, 1});
       },
       {"'gradAlpha'", "1 dims"}},
      {"gradBias [F,1]",
       false,
       [](T& t) {
         t.gradBias = t.pool.make(ACL_FLOAT, {24, 1});
       },
       {"'gradBias'", "1 dims"}},
      {"gradGamma [N]", false, [](T& t) { t.gradGamma = t.pool.make(ACL_FLOAT, {4}); }, {"'gradGamma'", "2 dims"}},
      {"alpha rank 2",
       false,
       [](T& t) {
         t.alpha = t.pool.make(ACL_FLOAT, {1, 3});
       },
       {"'alpha'", "1 dims"}},
      // shapes
      {"x N mismatch",
       false,
       [](T& t) {
         t.x = t.pool.make(ACL_BF16, {6, 6, 128});
       },
       {"'x'", "shape [6, 4, 128] ([T, D] of gradHIn with N of gradHPost)", "[6, 6, 128]"}},
      {"x T mismatch",
       false,
       [](T& t) {
         t.x = t.pool.make(ACL_BF16, {7, 4, 128});
       },
       {"'x'", "[7, 4, 128]"}},
      {"gradHPost N+1",
       false,
       [](T& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT, {6, 5});
       },
       {"'x'", "shape [6, 5, 128]"}},  // N comes from gradHPost: x disagrees
      {"gradHRes N+1",
       false,
       [](T& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT, {6, 5, 5});
       },
       {"'gradHRes'", "shape [6, 4, 4]", "[6, 5, 5]"}},
      {"invRms T-1", false, [](T& t) { t.invRms = t.pool.make(ACL_FLOAT, {5}); }, {"'invRms'", "shape [6]", "[5]"}},
      {"hMix F-1",
       false,
       [](T& t) {
         t.hMix = t.pool.make(ACL_FLOAT, {6, 23});
       },
       {"'hMix'", "[6, 24]", "[6, 23]"}},
      {"hPre N-1",
       false,
       [](T& t) {
         t.hPre = t.pool.make(ACL_FLOAT, {6, 3});
       },
       {"'hPre'", "[6, 4]", "[6, 3]"}},
      {"hPost T+1",
       false,
       [](T& t) {
         t.hPost = t.pool.make(ACL_FLOAT, {7, 4});
       },
       {"'hPost'", "[6, 4]", "[7, 4]"}},
      {"gradX D+1",
       false,
       [](T& t) {
         t.gradX = t.pool.make(ACL_BF16, {6, 4, 129});
       },
       {"'gradX'", "[6, 4, 128] (the shape of x)"}},
      {"gradXPost N-1",
       false,
       [](T& t) {
         t.gradXPost = t.pool.make(ACL_BF16, {6, 3, 128});
       },
       {"'gradXPostOptional'", "[6, 3, 128]"}},
      {"alpha [2]",
       false,
       [](T& t) { t.alpha = t.pool.make(ACL_FLOAT, {2}); },
       {"'alpha'", "shape [3]", "no [2] form"}},
      {"alpha [4]", false, [](T& t) { t.alpha = t.pool.make(ACL_FLOAT, {4}); }, {"'alpha'", "given shape [4]"}},
      {"phi K+1",
       false,
       [](T& t) {
         t.phi = t.pool.make(ACL_FLOAT, {24, 513});
       },
       {"'phi'", "[24, 512]", "[24, 513]"}},
      {"gradPhi shape",
       false,
       [](T& t) {
         t.gradPhi = t.pool.make(ACL_FLOAT, {24, 511});
       },
       {"'gradPhi'", "[24, 512] (the shape of phi)"}},
      {"gradAlpha [2]", false, [](T& t) { t.gradAlpha = t.pool.make(ACL_FLOAT, {2}); }, {"'gradAlpha'", "shape [3]"}},
      {"gradBias F+1", false, [](T& t) { t.gradBias = t.pool.make(ACL_FLOAT, {25}); }, {"'gradBias'", "[24]", "[25]"}},
      {"gamma D+1",
       false,
       [](T& t) {
         t.gamma = t.pool.make(ACL_FLOAT, {4, 129});
       },
       {"'gammaOptional'", "[4, 128]"}},
      {"gradGamma N+1",
       false,
       [](T& t) {
         t.gradGamma = t.pool.make(ACL_FLOAT, {5, 128});
       },
       {"'gradGamma'", "[5, 128]"}},
      {"BSND invRms",
       true,
       [](T& t) {
         t.invRms = t.pool.make(ACL_FLOAT, {3, 2});
       },
       {"'invRms'", "[2, 3] ([B, S] of x)"}},
      // dtypes
      {"x fp32",
       false,
       [](T& t) {
         t.x = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'x'", "{BFLOAT16, FLOAT16}"}},
      {"phi fp16",
       false,
       [](T& t) {
         t.phi = t.pool.make(ACL_FLOAT16, {24, 512});
       },
       {"'phi'", "given dtype FLOAT16"}},
      {"alpha fp16", false, [](T& t) { t.alpha = t.pool.make(ACL_FLOAT16, {3}); }, {"'alpha'", "FLOAT16"}},
      {"gamma bf16",
       false,
       [](T& t) {
         t.gamma = t.pool.make(ACL_BF16, {4, 128});
       },
       {"'gammaOptional'", "BFLOAT16"}},
      {"gradHIn fp16",
       false,
       [](T& t) {
         t.gradHIn = t.pool.make(ACL_FLOAT16, {6, 128});
       },
       {"'gradHIn'", "BFLOAT16 (the dtype of x)", "FLOAT16"}},
      {"gradHPost fp16",
       false,
       [](T& t) {
         t.gradHPost = t.pool.make(ACL_FLOAT16, {6, 4});
       },
       {"'gradHPost'", "FLOAT16"}},
      {"gradHRes fp16",
       false,
       [](T& t) {
         t.gradHRes = t.pool.make(ACL_FLOAT16, {6, 4, 4});
       },
       {"'gradHRes'"}},
      {"invRms fp16", false, [](T& t) { t.invRms = t.pool.make(ACL_FLOAT16, {6}); }, {"'invRms'", "FLOAT16"}},
      {"hMix fp16",
       false,
       [](T& t) {
         t.hMix = t.pool.make(ACL_FLOAT16, {6, 24});
       },
       {"'hMix'", "FLOAT16"}},
      {"hPre fp16",
       false,
       [](T& t) {
         t.hPre = t.pool.make(ACL_FLOAT16, {6, 4});
       },
       {"'hPre'", "FLOAT16"}},
      {"hPost fp16",
       false,
       [](T& t) {
         t.hPost = t.pool.make(ACL_FLOAT16, {6, 4});
       },
       {"'hPost'", "FLOAT16"}},
      {"gradXPost fp32",
       false,
       [](T& t) {
         t.gradXPost = t.pool.make(ACL_FLOAT, {6, 4, 128});
       },
       {"'gradXPostOptional'", "(the dtype of x)"}},
      {"gradX mismatch",
       false,
       [](T& t) {
         t.gradX = t.pool.make(ACL_FLOAT16, {6, 4, 128});
       },
       {"'gradX'", "BFLOAT16 (the dtype of gradHIn)", "FLOAT16"}},
      {"gradPhi fp16",
       false,
       [](T& t) {
         t.gradPhi = t.pool.make(ACL_FLOAT16, {24, 512});
       },
       {"'gradPhi'", "FLOAT16"}},
      {"gradAlpha fp16", false, [](T& t) { t.gradAlpha = t.pool.make(ACL_FLOAT16, {3}); }, {"'gradAlpha'"}},
      {"gradBias fp16", false, [](T& t) { t.gradBias = t.pool.make(ACL_FLOAT16, {24}); }, {"'gradBias'"}},
      {"gradGamma fp16",
       false,
       [](T& t) {
         t.gradGamma = t.pool.make(ACL_FLOAT16, {4, 128});
       },
       {"'gradGamma'"}},
      // formats
      {"x private format",
       false,
       [](T& t) {
         t.x = t.pool.make(ACL_BF16, {6, 4, 128}, {}, ACL_FORMAT_NC1HWC0);
       },
       {"'x'", "given format NC1HWC0"}},
      {"hMix private format",
       false,
       [](T& t) {
         t.hMix = t.pool.make(ACL_FLOAT, {6, 24}, {}, ACL_FORMAT_FRACTAL_NZ);
       },
       {"'hMix'", "given format FRACTAL_NZ"}},
      {"gradPhi private format",
       false,
       [](T& t) {
         t.gradPhi = t.pool.make(ACL_FLOAT, {24, 512}, {}, ACL_FRACTAL_Z_3D);
       },
       {"'gradPhi'", "given format FRACTAL_Z_3D"}},
  };
  for (const Case& c : cases) {
    build({c.bsnd, ACL_BF16, 4, 128, false, true, true, false});
    c.breakIt(*this);
    const Outcome outcome = call();
    EXPECT_EQ(outcome.status, ACLNN_ERR_PARAM_INVALID) << c.name << ": " << outcome.message;
    for (const std::string& fragment : c.fragments) {
      EXPECT_NE(outcome.message.find(fragment), std::string::npos) << c.name << ": " << outcome.message;
    }
    EXPECT_TRUE(mentions(outcome.message, {"aclnnMhcPreBackward:", "(code 161002)"})) << c.name;
  }
}

TEST_P(MhcPreBackwardChecks, RulesRunInTheSpecOrder) {
  // empty (step 3) before rank (4): an empty rank-2 x.
  x = pool.make(ACL_BF16, {0, 4});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "non-empty"}));
  // rank (4) before shape (5): gradBias [F, 1] and a wrong gradHRes.
  build({});
  gradBias = pool.make(ACL_FLOAT, {24, 1});
  gradHRes = pool.make(ACL_FLOAT, {6, 5, 5});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradBias'"}));
  // shape (5) before dtype (6).
  build({});
  x = pool.make(ACL_FLOAT, {6, 4, 128});
  gradBias = pool.make(ACL_FLOAT, {23});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradBias'", "[23]"}));
  // dtype (6) before format (7).
  build({});
  gradGamma = pool.make(ACL_FLOAT16, {4, 128}, {}, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradGamma'", "dtype FLOAT16"}));
}

TEST_P(MhcPreBackwardChecks, OutputsMayNotOverlapInputsEachOtherOrThemselves) {
  gradBias = pool.alias(hMix, ACL_FLOAT, {24}, 24);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradBias'", "does not overlap the input hMix"}));
  build({});
  const aclTensor* shared = pool.make(ACL_FLOAT, {64});
  gradAlpha = pool.alias(shared, ACL_FLOAT, {3}, 0);
  gradBias = pool.alias(shared, ACL_FLOAT, {24}, 2);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'gradBias'", "does not overlap the output gradAlpha", "bytes overlapping gradAlpha"}));
  build({});
  gradGamma = pool.alias(gradPhi, ACL_FLOAT, {4, 128}, 100);  // inside another output
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradGamma'", "overlap the output gradPhi"}));
  build({});
  gradAlpha = pool.make(ACL_FLOAT, {3}, {0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradAlpha'", "all at different addresses", "[0]"}));
  // gradX as x itself: the same view, but only gradXPost may be updated in place (x is read across tokens).
  build({});
  gradX = x;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradX'", "does not overlap the input x"}));
  // Forward caches as gradient outputs: hMix's memory for gradBias.
  build({});
  gradPhi = pool.alias(phi, ACL_FLOAT, {24, 512});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradPhi'", "does not overlap the input phi"}));
}

TEST_P(MhcPreBackwardChecks, TensorsOverFreedMemoryAreRejected) {
  void* block = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 3 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  gradAlpha = pool.view(block, ACL_FLOAT, {3});
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  ASSERT_EQ(aclrtFree(block), ACL_SUCCESS);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'gradAlpha'", "data in live memory", "that was freed"}));
}

}  // namespace
}  // namespace gradkit::test::mhc
