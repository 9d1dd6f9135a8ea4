// aclnnMhcPreSinkhornBackwardGetWorkspaceSize: the rule book of src/ops/mhc/mhc_pre_sinkhorn_check.cpp (null
// pointers 161001; upstream's empty-tensor shortcut before every other rule; ranks, shapes, dtypes and formats
// 161002; the profile's n and c rules; the tiling's phi / sumOut / normOut rules, 561002; gradkit's memory rules)
// under each platform profile. Each rejection is asserted by code, by the argument the message names and by the value
// it says was given; each accepted call is run.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::mhc {
namespace {

constexpr const char* kApi = "aclnnMhcPreSinkhornBackward";
constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;      // 161002
constexpr aclnnStatus kTiling = ACLNN_ERR_INNER_TILING_ERROR;  // 561002

/** The test names end with the profile ("./Ascend950"). */
std::string profileName(const ::testing::TestParamInfo<const char*>& param) { return param.param; }

bool is950(const std::string& soc) { return soc == "Ascend950"; }

std::vector<int64_t> cat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::string shapeText(const std::vector<int64_t>& shape) { return "shape " + dimsString(shape); }

struct Config {
  std::vector<int64_t> lead{2, 3};  // [B, S] (BSND) or [T] (TND)
  int64_t n = 4, c = 128;
  aclDataType dtype = ACL_BF16;
  bool strided = false;        // every tensor a view with gaps
  bool flatRes = false;        // gradHRes [.., n*n] instead of [.., n, n]
  bool sharedPhiRows = false;  // phi and gradPhi with row stride 0 (large c without the memory)
};

/** A valid call for a Config; tests replace pieces, then call(). */
struct Backward {
  explicit Backward(const Config& k) : lead(k.lead), n(k.n), c(k.c), f(k.n * k.n + 2 * k.n), strided(k.strided) {
    gradHin = make(k.dtype, tok({c}));
    gradHPost = make(ACL_FLOAT, tok({n}));
    gradHRes = make(ACL_FLOAT, k.flatRes ? tok({n * n}) : tok({n, n}));
    x = make(k.dtype, tok({n, c}));
    phi = k.sharedPhiRows ? pool.make(ACL_FLOAT, {f, n * c}, {0, 1}) : make(ACL_FLOAT, {f, n * c});
    alpha = make(ACL_FLOAT, {3});
    bias = make(ACL_FLOAT, {f});
    hPre = make(ACL_FLOAT, tok({n}));
    hcBeforeNorm = make(ACL_FLOAT, tok({f}));
    invRms = make(ACL_FLOAT, tok({1}));
    sumOut = make(ACL_FLOAT, cat({40}, tok({n})));
    normOut = make(ACL_FLOAT, cat({40}, tok({n, n})));
    gradX = make(k.dtype, tok({n, c}));
    gradPhi = k.sharedPhiRows ? pool.make(ACL_FLOAT, {f, n * c}, {0, 1}) : make(ACL_FLOAT, {f, n * c});
    gradAlpha = make(ACL_FLOAT, {3});
    gradBias = make(ACL_FLOAT, {f});
  }

  aclTensor* make(aclDataType t, const std::vector<int64_t>& shape) {
    return strided ? pool.makeStrided(t, shape) : pool.make(t, shape);
  }
  std::vector<int64_t> tok(const std::vector<int64_t>& tail) const { return cat(lead, tail); }

  /** The outcome; a failed call must hand out no executor, a successful one is run and synchronized. */
  Outcome call() {
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
        gradHin, gradHPost, gradHRes, x, phi, alpha, bias, hPre, hcBeforeNorm, invRms, sumOut, normOut, 1e-6, gradX,
        gradPhi, gradAlpha, gradBias, nullSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    const Outcome outcome{status, recentError()};
    if (status != ACLNN_SUCCESS) {
      EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
      return outcome;
    }
    EXPECT_EQ(outcome.message, "") << "a successful call records no message";
    EXPECT_NE(executor, nullptr);
    std::vector<unsigned char> workspace(size);
    EXPECT_EQ(aclnnMhcPreSinkhornBackward(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS) << recentError();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
    return outcome;
  }

  TensorPool pool;
  std::vector<int64_t> lead;
  int64_t n, c, f;
  bool strided;
  aclTensor *gradHin, *gradHPost, *gradHRes, *x, *phi, *alpha, *bias, *hPre, *hcBeforeNorm, *invRms, *sumOut, *normOut,
      *gradX, *gradPhi, *gradAlpha, *gradBias;
  bool nullSize = false, nullExecutor = false;
  uint64_t size = 12345;
};

using Slot = aclTensor* Backward::*;
using Named = std::pair<const char*, Slot>;
const Named kTensors[] = {{"gradHin", &Backward::gradHin},
                          {"gradHPost", &Backward::gradHPost},
                          {"gradHRes", &Backward::gradHRes},
                          {"x", &Backward::x},
                          {"phi", &Backward::phi},
                          {"alpha", &Backward::alpha},
                          {"bias", &Backward::bias},
                          {"hPre", &Backward::hPre},
                          {"hcBeforeNorm", &Backward::hcBeforeNorm},
                          {"invRms", &Backward::invRms},
                          {"sumOut", &Backward::sumOut},
                          {"normOut", &Backward::normOut},
                          {"gradX", &Backward::gradX},
                          {"gradPhi", &Backward::gradPhi},
                          {"gradAlpha", &Backward::gradAlpha},
                          {"gradBias", &Backward::gradBias}};
/** The tensors whose emptiness makes the call succeed with nothing to do (upstream). */
const Named kEmptyShortcut[] = {{"gradHin", &Backward::gradHin},   {"gradHPost", &Backward::gradHPost},
                                {"gradHRes", &Backward::gradHRes}, {"x", &Backward::x},
                                {"hPre", &Backward::hPre},         {"hcBeforeNorm", &Backward::hcBeforeNorm},
                                {"invRms", &Backward::invRms},     {"sumOut", &Backward::sumOut},
                                {"normOut", &Backward::normOut}};

bool named(const char* name, std::initializer_list<const char*> names) {
  for (const char* other : names) {
    if (std::string(name) == other) return true;
  }
  return false;
}

/** Replaces the tensor in `slot` with one of `shape` (its dtype unless given) and `format`. */
std::function<void(Backward&)> remade(Slot slot, std::vector<int64_t> shape, std::optional<aclDataType> dtype = {},
                                      aclFormat format = ACL_FORMAT_ND) {
  return [=](Backward& b) { b.*slot = b.pool.make(dtype.value_or((b.*slot)->dtype), shape, {}, format); };
}

using Rejection = mhc::Rejection<Backward>;

void expectRejected(const Config& k, const std::vector<Rejection>& cases) { mhc::expectRejected(kApi, k, cases); }

class MhcPreSinkhornBackwardChecks : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { soc_.emplace(GetParam()); }
  std::optional<ScopedSoc> soc_;
};

INSTANTIATE_TEST_SUITE_P(MhcPreSinkhornBackward, MhcPreSinkhornBackwardChecks, ::testing::ValuesIn(kAllSocs),
                         profileName);

TEST_P(MhcPreSinkhornBackwardChecks, ValidCallsSucceedAndRunInEveryLayoutAndDtype) {
  std::vector<std::vector<int64_t>> leads{{2, 3}, {1, 1}};
  if (is950(GetParam())) leads.push_back({5});  // TND
  for (const auto& lead : leads) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (bool strided : {false, true}) {
        for (bool flatRes : {false, true}) {
          Backward call(Config{lead, 4, 128, dtype, strided, flatRes});
          EXPECT_EQ(call.call().status, ACLNN_SUCCESS)
              << dimsString(lead) << " dtype " << dtype << " strided " << strided << " flatRes " << flatRes;
        }
      }
    }
  }
}

TEST_P(MhcPreSinkhornBackwardChecks, NullPointersGive161001) {
  std::vector<Rejection> cases{
      {"workspaceSize", [](Backward& b) { b.nullSize = true; }, ACLNN_ERR_PARAM_NULLPTR, "workspaceSize", "",
       "nullptr"},
      {"executor", [](Backward& b) { b.nullExecutor = true; }, ACLNN_ERR_PARAM_NULLPTR, "executor", "", "nullptr"},
      {"all null, workspaceSize first",
       [](Backward& b) {
         for (const auto& [name, slot] : kTensors) b.*slot = nullptr;
         b.nullSize = b.nullExecutor = true;
       },
       ACLNN_ERR_PARAM_NULLPTR, "workspaceSize", "a non-null pointer", "nullptr"},
      {"null gradBias with an empty x (nulls come first)",
       [](Backward& b) {
         b.x = b.pool.make(ACL_BF16, {0, 3, 4, 128});
         b.gradBias = nullptr;
       },
       ACLNN_ERR_PARAM_NULLPTR, "gradBias", "a non-null pointer", "nullptr"},
  };
  for (const auto& [name, slot] : kTensors) {
    cases.push_back({name, [slot = slot](Backward& b) { b.*slot = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, name,
                     "a non-null pointer", "nullptr"});
  }
  expectRejected(Config{}, cases);
}

TEST_P(MhcPreSinkhornBackwardChecks, AnyEmptyInputSucceedsBeforeEveryOtherRuleAndWritesNothing) {
  for (const auto& [name, slot] : kEmptyShortcut) {
    Backward call(Config{});
    std::vector<int64_t> shape = (call.*slot)->viewDims;
    shape.front() = 0;
    call.*slot = call.pool.make((call.*slot)->dtype, shape);
    call.phi = call.pool.make(ACL_FLOAT16, {24, 512});                       // a wrong dtype
    call.alpha = call.pool.make(ACL_FLOAT, {5, 5, 5});                       // a wrong rank
    call.bias = call.pool.make(ACL_FLOAT, {24}, {}, ACL_FORMAT_FRACTAL_NZ);  // a private format
    std::memset(call.gradBias->data, 0xAB, 24 * sizeof(float));
    const Outcome o = call.call();
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << name << " " << dimsString(shape) << ": " << o.message;
    EXPECT_EQ(call.size, 0u) << name;
    for (int i = 0; i < 24 * 4; ++i) EXPECT_EQ(static_cast<unsigned char*>(call.gradBias->data)[i], 0xAB) << name;
  }
  // Even TND or a wrong n outside the Ascend950 profile.
  Backward tnd(Config{{0}});
  EXPECT_EQ(tnd.call().status, ACLNN_SUCCESS);
  Backward wide(Config{{2, 3}, 9, 64});
  wide.invRms = wide.pool.make(ACL_FLOAT, {2, 0, 1});
  EXPECT_EQ(wide.call().status, ACLNN_SUCCESS);
  // The other tensors may not be empty: their shape rules name them.
  expectRejected(
      Config{},
      {{"empty alpha", remade(&Backward::alpha, {0}), kInvalid, "alpha", "shape [3]", "shape [0]"},
       {"empty bias", remade(&Backward::bias, {0}), kInvalid, "bias", "shape [24]", "shape [0]"},
       {"empty gradX", remade(&Backward::gradX, {0, 3, 4, 128}), kInvalid, "gradX",
        "shape [2, 3, 4, 128] (the shape of x)", "shape [0, 3, 4, 128]"},
       {"empty gradPhi", remade(&Backward::gradPhi, {0, 512}), kInvalid, "gradPhi", "shape [24, 512]",
        "shape [0, 512]"},
       {"empty gradAlpha", remade(&Backward::gradAlpha, {0}), kInvalid, "gradAlpha", "shape [3]", "shape [0]"},
       {"empty gradBias", remade(&Backward::gradBias, {0}), kInvalid, "gradBias", "shape [24]", "shape [0]"},
       {"empty phi", remade(&Backward::phi, {0, 512}), kTiling, "phi", "first dim n*n + 2n = 24", "shape [0, 512]"}});
}

TEST_P(MhcPreSinkhornBackwardChecks, DtypeRulesGive161002) {
  std::vector<Rejection> cases{
      {"gradHin float", remade(&Backward::gradHin, {2, 3, 128}, ACL_FLOAT), kInvalid, "gradHin",
       "dtype in {BFLOAT16, FLOAT16}", "dtype FLOAT"},
      {"x double", remade(&Backward::x, {2, 3, 4, 128}, ACL_DOUBLE), kInvalid, "x", "dtype in {BFLOAT16, FLOAT16}",
       "dtype DOUBLE"},
      {"x fp16, gradHin bf16", remade(&Backward::x, {2, 3, 4, 128}, ACL_FLOAT16), kInvalid, "x",
       "dtype BFLOAT16 (the dtype of gradHin)", "dtype FLOAT16"},
      {"gradX fp16, gradHin bf16", remade(&Backward::gradX, {2, 3, 4, 128}, ACL_FLOAT16), kInvalid, "gradX",
       "dtype BFLOAT16 (the dtype of gradHin)", "dtype FLOAT16"},
      {"gradX float", remade(&Backward::gradX, {2, 3, 4, 128}, ACL_FLOAT), kInvalid, "gradX",
       "dtype BFLOAT16 (the dtype of gradHin)", "dtype FLOAT"},
  };
  Backward base(Config{});
  for (const auto& [name, slot] : kTensors) {
    if (named(name, {"gradHin", "x", "gradX"})) continue;
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
      const std::string given = dtype == ACL_FLOAT16 ? "FLOAT16" : dtype == ACL_BF16 ? "BFLOAT16" : "DOUBLE";
      cases.push_back({std::string(name) + " " + given, remade(slot, (base.*slot)->viewDims, dtype), kInvalid, name,
                       "dtype in {FLOAT}", "dtype " + given});
    }
  }
  expectRejected(Config{}, cases);
  // All FLOAT16 is as good as all BFLOAT16; then BFLOAT16 is the odd one.
  Config fp16;
  fp16.dtype = ACL_FLOAT16;
  EXPECT_EQ(Backward(fp16).call().status, ACLNN_SUCCESS);
  expectRejected(fp16, {{"gradX bf16", remade(&Backward::gradX, {2, 3, 4, 128}, ACL_BF16), kInvalid, "gradX",
                         "dtype FLOAT16 (the dtype of gradHin)", "dtype BFLOAT16"}});
}

TEST_P(MhcPreSinkhornBackwardChecks, RanksAndShapesGive161002) {
  // A2/A3 name rank 4 only: TND exists only in the Ascend950 profile.
  const std::string ranks = is950(GetParam()) ? "3 or 4 dims ([T, n, c] or [B, S, n, c])" : "4 dims ([B, S, n, c]: TND";
  std::vector<Rejection> cases{
      {"x rank 2", remade(&Backward::x, {6, 512}), kInvalid, "x", ranks, "2 dims [6, 512]"},
      {"x rank 5", remade(&Backward::x, {1, 2, 3, 4, 128}), kInvalid, "x", ranks, "5 dims [1, 2, 3, 4, 128]"},
      {"gradHin", remade(&Backward::gradHin, {2, 3, 256}), kInvalid, "gradHin", "shape [2, 3, 128] ([B, S, c] from x)",
       "shape [2, 3, 256]"},
      {"gradHRes [.., n, n+1]", remade(&Backward::gradHRes, {2, 3, 4, 5}), kInvalid, "gradHRes",
       "shape [2, 3, 4, 4] ([B, S, n, n] or [B, S, n*n] from x)", "shape [2, 3, 4, 5]"},
      {"gradHRes [.., n*n-1]", remade(&Backward::gradHRes, {2, 3, 15}), kInvalid, "gradHRes",
       "shape [2, 3, 16] ([B, S, n*n] or [B, S, n, n] from x)", "shape [2, 3, 15]"},
      {"gradHRes [B*S, n, n]", remade(&Backward::gradHRes, {6, 4, 4}), kInvalid, "gradHRes", "shape [2, 3, 16]",
       "shape [6, 4, 4]"},
      {"phi rank 3", remade(&Backward::phi, {1, 24, 512}), kInvalid, "phi", "2 dims ([n*n + 2n, n*c])",
       "3 dims [1, 24, 512]"},
      {"phi rank 1", remade(&Backward::phi, {24 * 512}), kInvalid, "phi", "2 dims", "1 dims [12288]"},
      {"phi [24, c]", remade(&Backward::phi, {24, 128}), kInvalid, "phi", "second dim n*c = 512 from x",
       "shape [24, 128]"},
      {"hcBeforeNorm", remade(&Backward::hcBeforeNorm, {2, 3, 16}), kInvalid, "hcBeforeNorm",
       "shape [2, 3, 24] ([B, S, n*n + 2n] from x)", "shape [2, 3, 16]"},
      {"sumOut rank 3", remade(&Backward::sumOut, {40, 6, 4}), kInvalid, "sumOut", "[2 numIters, B, S, n] from x",
       "shape [40, 6, 4]"},
      {"sumOut n+1", remade(&Backward::sumOut, {40, 2, 3, 5}), kInvalid, "sumOut", "[2 numIters, B, S, n] from x",
       "shape [40, 2, 3, 5]"},
      {"sumOut S+1", remade(&Backward::sumOut, {40, 2, 4, 4}), kInvalid, "sumOut", "[2 numIters, B, S, n] from x",
       "shape [40, 2, 4, 4]"},
      {"normOut rank 4", remade(&Backward::normOut, {40, 2, 3, 16}), kInvalid, "normOut",
       "[2 numIters, B, S, n, n] from x", "shape [40, 2, 3, 16]"},
      {"normOut n+1", remade(&Backward::normOut, {40, 2, 3, 4, 5}), kInvalid, "normOut",
       "[2 numIters, B, S, n, n] from x", "shape [40, 2, 3, 4, 5]"},
      {"normOut B+1", remade(&Backward::normOut, {40, 3, 3, 4, 4}), kInvalid, "normOut",
       "[2 numIters, B, S, n, n] from x", "shape [40, 3, 3, 4, 4]"},
  };
  // The tensors with one exact shape: last dim + 1, first dim + 1, a leading 1 (rank + 1).
  Backward base(Config{});
  for (const auto& [name, slot] : kTensors) {
    if (named(name, {"x", "gradHRes", "phi", "sumOut", "normOut"})) continue;
    const std::vector<int64_t> shape = (base.*slot)->viewDims;
    std::vector<int64_t> last = shape, first = shape;
    ++last.back();
    ++first.front();
    for (const auto& bad : {last, first, cat({1}, shape)}) {
      cases.push_back({std::string(name) + " " + dimsString(bad), remade(slot, bad), kInvalid, name, shapeText(shape),
                       shapeText(bad)});
    }
  }
  expectRejected(Config{}, cases);
}

TEST_P(MhcPreSinkhornBackwardChecks, TndOnlyInTheAscend950Profile) {
  const Config tnd{{6}};
  if (!is950(GetParam())) {
    expectRejected(tnd, {{"TND", [](Backward&) {}, kInvalid, "x",
                          "rank 4 [B, S, n, c]: TND (rank 3) exists only in the Ascend950 profile, this is the " +
                              std::string(GetParam()) + " profile (GRADKIT_SOC)",
                          "shape [6, 4, 128]"}});
    return;
  }
  expectRejected(
      tnd, {{"gradHin BSND", remade(&Backward::gradHin, {2, 3, 128}), kInvalid, "gradHin",
             "shape [6, 128] ([T, c] from x)", "shape [2, 3, 128]"},
            {"gradHRes", remade(&Backward::gradHRes, {6, 4, 5}), kInvalid, "gradHRes",
             "shape [6, 4, 4] ([T, n, n] or [T, n*n] from x)", "shape [6, 4, 5]"},
            {"gradHRes flat", remade(&Backward::gradHRes, {6, 12}), kInvalid, "gradHRes",
             "shape [6, 16] ([T, n*n] or [T, n, n] from x)", "shape [6, 12]"},
            {"invRms", remade(&Backward::invRms, {6}), kInvalid, "invRms", "shape [6, 1] ([T, 1] from x)", "shape [6]"},
            {"sumOut BSND", remade(&Backward::sumOut, {40, 2, 3, 4}), kInvalid, "sumOut", "[2 numIters, T, n] from x",
             "shape [40, 2, 3, 4]"},
            {"normOut", remade(&Backward::normOut, {40, 6, 4, 3}), kInvalid, "normOut", "[2 numIters, T, n, n] from x",
             "shape [40, 6, 4, 3]"}});
}

TEST_P(MhcPreSinkhornBackwardChecks, PrivateFormatsGive161002ForEveryTensor) {
  std::vector<Rejection> cases;
  Backward base(Config{});
  for (const auto& [name, slot] : kTensors) {
    cases.push_back({name, remade(slot, (base.*slot)->viewDims, {}, ACL_FORMAT_FRACTAL_NZ), kInvalid, name,
                     "a public format", "format FRACTAL_NZ"});
  }
  expectRejected(Config{}, cases);
}

TEST_P(MhcPreSinkhornBackwardChecks, StreamsAndHiddenSizeFollowTheProfile) {
  const std::string soc = GetParam();
  const std::vector<int64_t> accepted = is950(soc) ? std::vector<int64_t>{1, 2, 4, 6, 8} : std::vector<int64_t>{4};
  for (int64_t n : accepted) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      Backward call(Config{{2, 3}, n, 256, dtype});
      EXPECT_EQ(call.call().status, ACLNN_SUCCESS) << "n " << n;
    }
  }
  const std::string profile = " (the " + soc + " profile (GRADKIT_SOC))";
  for (int64_t n : is950(soc) ? std::vector<int64_t>{9, 16} : std::vector<int64_t>{1, 2, 6, 8}) {
    expectRejected(
        Config{{2, 3}, n},
        {{"n " + std::to_string(n), [](Backward&) {}, kInvalid, "x",
          std::string("dim n (-2) ") + (is950(soc) ? "in 1 .. 8" : "equal to 4") + profile, std::to_string(n)}});
  }
  for (int64_t c : {64, 192, 4097, 100096}) {
    Config k{{1, 1}, 4, c};
    k.sharedPhiRows = true;
    expectRejected(k, {{"c " + std::to_string(c), [](Backward&) {}, kInvalid, "x",
                        "last dim c a multiple of 128 below 100000", std::to_string(c)}});
  }
  for (int64_t c : {128, 4096, 7168}) EXPECT_EQ(Backward(Config{{1, 1}, 4, c}).call().status, ACLNN_SUCCESS) << c;
}

TEST_P(MhcPreSinkhornBackwardChecks, TilingRulesGive561002) {
  const auto steps = [](int64_t phiRows, int64_t sums, int64_t norms) {
    return [=](Backward& b) {
      b.phi = b.pool.make(ACL_FLOAT, {phiRows, 512});
      b.sumOut = b.pool.make(ACL_FLOAT, {sums, 2, 3, 4});
      b.normOut = b.pool.make(ACL_FLOAT, {norms, 2, 3, 4, 4});
    };
  };
  const std::string forty = "first dim 2 numIters = 40 (numIters 20)";
  expectRejected(Config{},
                 {{"phi 20 rows", steps(20, 40, 40), kTiling, "phi", "first dim n*n + 2n = 24", "shape [20, 512]"},
                  {"phi 25 rows", steps(25, 40, 40), kTiling, "phi", "first dim n*n + 2n = 24", "shape [25, 512]"},
                  {"sumOut 38", steps(24, 38, 38), kTiling, "sumOut", forty, "shape [38, 2, 3, 4]"},
                  {"sumOut 42", steps(24, 42, 40), kTiling, "sumOut", forty, "shape [42, 2, 3, 4]"},
                  {"sumOut 2", steps(24, 2, 2), kTiling, "sumOut", forty, "shape [2, 2, 3, 4]"},
                  {"normOut 38", steps(24, 40, 38), kTiling, "normOut", forty, "shape [38, 2, 3, 4, 4]"},
                  {"normOut 80", steps(24, 40, 80), kTiling, "normOut", forty, "shape [80, 2, 3, 4, 4]"},
                  {"phi before sumOut", steps(20, 38, 38), kTiling, "phi", "first dim", "shape [20, 512]"},
                  {"sumOut 39", steps(24, 39, 40), kTiling, "sumOut", forty, "shape [39, 2, 3, 4]"}});
  // With n = 2 (Ascend950) the tiling wants 2*2 + 4 = 8 rows of phi; a rule of x's n goes first elsewhere.
  if (is950(GetParam())) {
    expectRejected(Config{{2, 3}, 2}, {{"n 2, phi 24 rows", remade(&Backward::phi, {24, 256}), kTiling, "phi",
                                        "first dim n*n + 2n = 8", "shape [24, 256]"}});
  }
}

TEST_P(MhcPreSinkhornBackwardChecks, OutputsOverlappingInputsOrOutputsGive161002) {
  expectRejected(
      Config{},
      {{"gradPhi is phi", [](Backward& b) { b.gradPhi = b.phi; }, kInvalid, "gradPhi",
        "memory that does not overlap the input phi", "bytes overlapping phi"},
       {"gradPhi over phi",
        [](Backward& b) {
          b.gradPhi = b.pool.alias(b.phi, ACL_FLOAT, {24, 512});
        },
        kInvalid, "gradPhi", "memory that does not overlap the input phi", "bytes overlapping phi"},
       {"gradX is x (no in-place)", [](Backward& b) { b.gradX = b.x; }, kInvalid, "gradX",
        "memory that does not overlap the input x", "bytes overlapping x"},
       {"gradHin inside gradX",
        [](Backward& b) {
          b.gradHin = b.pool.alias(b.gradX, ACL_BF16, {2, 3, 128}, 64);
        },
        kInvalid, "gradX", "memory that does not overlap the input gradHin", "bytes overlapping gradHin"},
       {"gradAlpha inside sumOut", [](Backward& b) { b.gradAlpha = b.pool.alias(b.sumOut, ACL_FLOAT, {3}, 7); },
        kInvalid, "gradAlpha", "memory that does not overlap the input sumOut", "bytes overlapping sumOut"},
       {"gradBias inside gradPhi", [](Backward& b) { b.gradBias = b.pool.alias(b.gradPhi, ACL_FLOAT, {24}, 100); },
        kInvalid, "gradBias", "memory that does not overlap the output gradPhi", "bytes overlapping gradPhi"},
       {"gradBias with zero stride", [](Backward& b) { b.gradBias = b.pool.make(ACL_FLOAT, {24}, {0}); }, kInvalid,
        "gradBias", "an output whose elements are all at different addresses", "shape [24] with strides [0]"}});
}

}  // namespace
}  // namespace gradkit::test::mhc
