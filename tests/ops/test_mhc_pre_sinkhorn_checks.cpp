// aclnnMhcPreSinkhornGetWorkspaceSize: the rule book of src/ops/mhc/mhc_pre_sinkhorn_check.cpp (null pointers
// 161001; dtypes, ranks, shapes and formats 161002; the empty-x shortcut; the profile's c rule, 561002 from the
// Ascend950 tiling and 161002 from the A2/A3 docs; gradkit's memory rules) under each platform profile. Each
// rejection is asserted by code, by the argument the message names and by the value it says was given; each accepted
// call is run. The saved tensors are checked only with needBackward.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::mhc {
namespace {

constexpr const char* kApi = "aclnnMhcPreSinkhorn";
constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;  // 161002

/** The test names end with the profile ("./Ascend950"). */
std::string profileName(const ::testing::TestParamInfo<const char*>& param) { return param.param; }

bool is950(const char* soc) { return std::string(soc) == "Ascend950"; }

std::vector<int64_t> cat(std::vector<int64_t> head, const std::vector<int64_t>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::string shapeText(const std::vector<int64_t>& shape) { return "shape " + dimsString(shape); }

struct Config {
  std::vector<int64_t> lead{2, 3};  // [B, S] (BSND) or [T] (TND)
  int64_t c = 128;
  aclDataType dtype = ACL_BF16;
  bool strided = false;  // every tensor a view with gaps
};

/** The cheapest valid c of the profile: the Ascend950 kernel has only 4096 and 7168. */
Config baseConfig(const char* soc) { return Config{{2, 3}, is950(soc) ? 4096 : 128}; }

/** A valid call for a Config (needBackward on); tests replace pieces, then call(). */
struct Forward {
  explicit Forward(const Config& k) : lead(k.lead), c(k.c), dtype(k.dtype), strided(k.strided) {
    x = make(dtype, tok({n, c}));
    phi = make(ACL_FLOAT, {f, n * c});
    alpha = make(ACL_FLOAT, {3});
    bias = make(ACL_FLOAT, {f});
    hin = make(dtype, tok({c}));
    hPost = make(ACL_FLOAT, tok({n}));
    hRes = make(ACL_FLOAT, tok({n * n}));
    hPre = make(ACL_FLOAT, tok({n}));
    hcBeforeNorm = make(ACL_FLOAT, tok({f}));
    invRms = make(ACL_FLOAT, tok({1}));
    sumOut = make(ACL_FLOAT, cat({40}, tok({n})));
    normOut = make(ACL_FLOAT, cat({40}, tok({n, n})));
  }

  aclTensor* make(aclDataType t, const std::vector<int64_t>& shape) {
    return strided ? pool.makeStrided(t, shape) : pool.make(t, shape);
  }
  std::vector<int64_t> tok(const std::vector<int64_t>& tail) const { return cat(lead, tail); }

  /** The outcome; a failed call must hand out no executor, a successful one is run and synchronized. */
  Outcome call() {
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnMhcPreSinkhornGetWorkspaceSize(
        x, phi, alpha, bias, hcMult, numIters, 1e-6, 1e-6, needBackward, hin, hPost, hRes, hPre, hcBeforeNorm, invRms,
        sumOut, normOut, nullSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    const Outcome outcome{status, recentError()};
    if (status != ACLNN_SUCCESS) {
      EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
      return outcome;
    }
    EXPECT_EQ(outcome.message, "") << "a successful call records no message";
    EXPECT_NE(executor, nullptr);
    std::vector<unsigned char> workspace(size);
    EXPECT_EQ(aclnnMhcPreSinkhorn(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS) << recentError();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
    return outcome;
  }

  TensorPool pool;
  std::vector<int64_t> lead;
  int64_t n = 4, c, f = 24;
  aclDataType dtype;
  bool strided;
  aclTensor *x, *phi, *alpha, *bias, *hin, *hPost, *hRes, *hPre, *hcBeforeNorm, *invRms, *sumOut, *normOut;
  int64_t hcMult = 4, numIters = 20;
  bool needBackward = true, nullSize = false, nullExecutor = false;
  uint64_t size = 12345;
};

using Slot = aclTensor* Forward::*;
const std::pair<const char*, Slot> kTensors[] = {
    {"x", &Forward::x},           {"phi", &Forward::phi},       {"alpha", &Forward::alpha},
    {"bias", &Forward::bias},     {"hin", &Forward::hin},       {"hPost", &Forward::hPost},
    {"hRes", &Forward::hRes},     {"hPre", &Forward::hPre},     {"hcBeforeNorm", &Forward::hcBeforeNorm},
    {"invRms", &Forward::invRms}, {"sumOut", &Forward::sumOut}, {"normOut", &Forward::normOut}};
const std::pair<const char*, Slot> kSaved[] = {{"hPre", &Forward::hPre},
                                               {"hcBeforeNorm", &Forward::hcBeforeNorm},
                                               {"invRms", &Forward::invRms},
                                               {"sumOut", &Forward::sumOut},
                                               {"normOut", &Forward::normOut}};

using Rejection = mhc::Rejection<Forward>;

void expectRejected(const Config& k, const std::vector<Rejection>& cases) { mhc::expectRejected(kApi, k, cases); }

class MhcPreSinkhornChecks : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { soc_.emplace(GetParam()); }
  std::optional<ScopedSoc> soc_;
};

INSTANTIATE_TEST_SUITE_P(MhcPreSinkhorn, MhcPreSinkhornChecks, ::testing::ValuesIn(kAllSocs), profileName);

TEST_P(MhcPreSinkhornChecks, ValidCallsSucceedAndRunInEveryLayoutAndDtype) {
  std::vector<std::vector<int64_t>> leads{{2, 3}, {1, 1}};
  if (is950(GetParam())) leads.push_back({5});  // TND
  for (const auto& lead : leads) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (bool strided : {false, true}) {
        for (bool needBackward : {true, false}) {
          Forward call(Config{lead, baseConfig(GetParam()).c, dtype, strided});
          call.needBackward = needBackward;
          EXPECT_EQ(call.call().status, ACLNN_SUCCESS)
              << dimsString(lead) << " dtype " << dtype << " strided " << strided << " needBackward " << needBackward;
        }
      }
    }
  }
}

TEST_P(MhcPreSinkhornChecks, NullPointersGive161001) {
  std::vector<Rejection> cases{
      {"workspaceSize", [](Forward& f) { f.nullSize = true; }, ACLNN_ERR_PARAM_NULLPTR, "workspaceSize", "", "nullptr"},
      {"executor", [](Forward& f) { f.nullExecutor = true; }, ACLNN_ERR_PARAM_NULLPTR, "executor", "", "nullptr"},
      {"all null, workspaceSize first",
       [](Forward& f) {
         for (const auto& [name, slot] : kTensors) f.*slot = nullptr;
         f.nullSize = f.nullExecutor = true;
       },
       ACLNN_ERR_PARAM_NULLPTR, "workspaceSize", "a non-null pointer", "nullptr"},
  };
  for (const auto& [name, slot] : kTensors) {
    cases.push_back({name, [slot = slot](Forward& f) { f.*slot = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, name,
                     "a non-null pointer", "nullptr"});
  }
  expectRejected(baseConfig(GetParam()), cases);
}

TEST_P(MhcPreSinkhornChecks, SavedTensorsAreNeitherCheckedNorWrittenWithoutNeedBackward) {
  const Config k = baseConfig(GetParam());
  const std::function<aclTensor*(Forward&, aclTensor*)> breakers[] = {
      [](Forward&, aclTensor*) -> aclTensor* { return nullptr; },
      [](Forward& f, aclTensor* t) { return f.pool.make(ACL_FLOAT16, t->viewDims); },
      [](Forward& f, aclTensor*) { return f.pool.make(ACL_DOUBLE, {7}); },
      [](Forward& f, aclTensor* t) { return f.pool.make(ACL_FLOAT, t->viewDims, {}, ACL_FORMAT_FRACTAL_NZ); },
  };
  for (const auto& [name, slot] : kSaved) {
    for (size_t b = 0; b < std::size(breakers); ++b) {
      Forward call(k);
      call.needBackward = false;
      call.*slot = breakers[b](call, call.*slot);
      const Outcome o = call.call();
      EXPECT_EQ(o.status, ACLNN_SUCCESS) << name << " breaker " << b << ": " << o.message;
    }
  }
  // A saved tensor over x's memory: no overlap rule, and nothing written there (x stays zero).
  Forward call(k);
  call.needBackward = false;
  call.hPre = call.pool.alias(call.x, ACL_FLOAT, call.tok({4}));
  call.sumOut = call.pool.alias(call.x, ACL_FLOAT, call.tok({4}));
  ASSERT_EQ(call.call().status, ACLNN_SUCCESS);
  std::vector<unsigned char> zeros(96, 0);
  EXPECT_EQ(std::memcmp(call.x->data, zeros.data(), zeros.size()), 0) << "hPre / sumOut were written into x";
}

TEST_P(MhcPreSinkhornChecks, DtypeRulesGive161002) {
  const Config k = baseConfig(GetParam());
  const auto rebuilt = [](Slot slot, aclDataType dtype) {
    return [slot, dtype](Forward& f) { f.*slot = f.pool.make(dtype, (f.*slot)->viewDims); };
  };
  std::vector<Rejection> cases{
      {"x float", rebuilt(&Forward::x, ACL_FLOAT), kInvalid, "x", "dtype in {BFLOAT16, FLOAT16}", "dtype FLOAT"},
      {"x double", rebuilt(&Forward::x, ACL_DOUBLE), kInvalid, "x", "dtype in {BFLOAT16, FLOAT16}", "dtype DOUBLE"},
      {"hin float", rebuilt(&Forward::hin, ACL_FLOAT), kInvalid, "hin", "dtype in {BFLOAT16, FLOAT16}", "dtype FLOAT"},
      {"hin fp16, x bf16", rebuilt(&Forward::hin, ACL_FLOAT16), kInvalid, "hin", "dtype BFLOAT16 (the dtype of x)",
       "dtype FLOAT16"},
      {"x fp16, hin bf16", rebuilt(&Forward::x, ACL_FLOAT16), kInvalid, "hin", "dtype FLOAT16 (the dtype of x)",
       "dtype BFLOAT16"},
  };
  for (const auto& [name, slot] : kTensors) {
    if (std::string(name) == "x" || std::string(name) == "hin") continue;
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
      const std::string given = dtype == ACL_FLOAT16 ? "FLOAT16" : dtype == ACL_BF16 ? "BFLOAT16" : "DOUBLE";
      cases.push_back({std::string(name) + " " + given, rebuilt(slot, dtype), kInvalid, name, "dtype in {FLOAT}",
                       "dtype " + given});
    }
  }
  expectRejected(k, cases);
}

TEST_P(MhcPreSinkhornChecks, RanksShapesAndAttributesGive161002) {
  // A2/A3 name rank 4 only: TND exists only in the Ascend950 profile.
  const std::string ranks = is950(GetParam()) ? "3 or 4 dims ([T, n, c] or [B, S, n, c])" : "4 dims ([B, S, n, c]: TND";
  Config k = baseConfig(GetParam());
  const int64_t c = k.c;
  const std::string cs = std::to_string(c), c4 = std::to_string(4 * c);
  std::vector<Rejection> cases{
      {"x rank 2",
       [c](Forward& f) {
         f.x = f.pool.make(f.dtype, {6, 4 * c});
       },
       kInvalid, "x", ranks, "2 dims [6, " + c4 + "]"},
      {"x rank 5",
       [c](Forward& f) {
         f.x = f.pool.make(f.dtype, {1, 2, 3, 4, c});
       },
       kInvalid, "x", ranks, "5 dims [1, 2, 3, 4, " + cs + "]"},
      {"hcMult 6", [](Forward& f) { f.hcMult = 6; }, kInvalid, "hcMult", "4", "6"},
      {"hcMult 0", [](Forward& f) { f.hcMult = 0; }, kInvalid, "hcMult", "4", "0"},
      {"x n 6",
       [c](Forward& f) {
         f.x = f.pool.make(f.dtype, {2, 3, 6, c});
       },
       kInvalid, "x", "dim n (-2) equal to hcMult (4)", "shape [2, 3, 6, " + cs + "]"},
      {"numIters 19", [](Forward& f) { f.numIters = 19; }, kInvalid, "numIters", "20", "19"},
      {"numIters 21", [](Forward& f) { f.numIters = 21; }, kInvalid, "numIters", "20", "21"},
      {"hin c/2",
       [c](Forward& f) {
         f.hin = f.pool.make(f.dtype, {2, 3, c / 2});
       },
       kInvalid, "hin", "shape [2, 3, " + cs + "] ([B, S, c] from x)", "shape [2, 3, " + std::to_string(c / 2) + "]"},
      {"phi [24, c]",
       [c](Forward& f) {
         f.phi = f.pool.make(ACL_FLOAT, {24, c});
       },
       kInvalid, "phi", "shape [24, " + c4 + "] ([n*n + 2n, n*c] from x)", "shape [24, " + cs + "]"},
      {"bias [20]", [](Forward& f) { f.bias = f.pool.make(ACL_FLOAT, {20}); }, kInvalid, "bias",
       "shape [24] ([n*n + 2n] from x)", "shape [20]"},
      {"hRes [B, S, n, n]",
       [](Forward& f) {
         f.hRes = f.pool.make(ACL_FLOAT, {2, 3, 4, 4});
       },
       kInvalid, "hRes", "shape [2, 3, 16] ([B, S, n*n] from x)", "shape [2, 3, 4, 4]"},
      {"sumOut 20 steps",
       [](Forward& f) {
         f.sumOut = f.pool.make(ACL_FLOAT, {20, 2, 3, 4});
       },
       kInvalid, "sumOut", "shape [40, 2, 3, 4] ([2 numIters, B, S, n] from x)", "shape [20, 2, 3, 4]"},
      {"normOut [.., n*n]",
       [](Forward& f) {
         f.normOut = f.pool.make(ACL_FLOAT, {40, 2, 3, 16});
       },
       kInvalid, "normOut", "shape [40, 2, 3, 4, 4] ([2 numIters, B, S, n, n] from x)", "shape [40, 2, 3, 16]"},
  };
  // Every tensor but x: its last dim + 1, its first dim + 1, a leading 1 (rank + 1).
  Forward base(k);
  for (const auto& [name, slot] : kTensors) {
    if (std::string(name) == "x") continue;
    const std::vector<int64_t> shape = (base.*slot)->viewDims;
    std::vector<int64_t> last = shape, first = shape;
    ++last.back();
    ++first.front();
    for (const auto& bad : {last, first, cat({1}, shape)}) {
      cases.push_back({std::string(name) + " " + dimsString(bad),
                       [slot = slot, bad](Forward& f) { f.*slot = f.pool.make((f.*slot)->dtype, bad); }, kInvalid, name,
                       shapeText(shape), shapeText(bad)});
    }
  }
  expectRejected(k, cases);
}

TEST_P(MhcPreSinkhornChecks, TndOnlyInTheAscend950Profile) {
  Config k = baseConfig(GetParam());
  k.lead = {6};
  const std::string cs = std::to_string(k.c);
  if (!is950(GetParam())) {
    expectRejected(k, {{"TND", [](Forward&) {}, kInvalid, "x",
                        "rank 4 [B, S, n, c]: TND (rank 3) exists only in the Ascend950 profile, this is the " +
                            std::string(GetParam()) + " profile (GRADKIT_SOC)",
                        "shape [6, 4, " + cs + "]"}});
    return;
  }
  EXPECT_EQ(Forward(k).call().status, ACLNN_SUCCESS);
  expectRejected(k, {{"hin BSND",
                      [](Forward& f) {
                        f.hin = f.pool.make(f.dtype, {2, 3, f.c});
                      },
                      kInvalid, "hin", "shape [6, " + cs + "] ([T, c] from x)", "shape [2, 3, " + cs + "]"},
                     {"hPost",
                      [](Forward& f) {
                        f.hPost = f.pool.make(ACL_FLOAT, {6, 5});
                      },
                      kInvalid, "hPost", "shape [6, 4] ([T, n] from x)", "shape [6, 5]"},
                     {"hcBeforeNorm",
                      [](Forward& f) {
                        f.hcBeforeNorm = f.pool.make(ACL_FLOAT, {6, 16});
                      },
                      kInvalid, "hcBeforeNorm", "shape [6, 24] ([T, n*n + 2n] from x)", "shape [6, 16]"},
                     {"invRms", [](Forward& f) { f.invRms = f.pool.make(ACL_FLOAT, {6}); }, kInvalid, "invRms",
                      "shape [6, 1] ([T, 1] from x)", "shape [6]"},
                     {"sumOut",
                      [](Forward& f) {
                        f.sumOut = f.pool.make(ACL_FLOAT, {6, 40, 4});
                      },
                      kInvalid, "sumOut", "shape [40, 6, 4] ([2 numIters, T, n] from x)", "shape [6, 40, 4]"},
                     {"normOut",
                      [](Forward& f) {
                        f.normOut = f.pool.make(ACL_FLOAT, {40, 6, 16});
                      },
                      kInvalid, "normOut", "shape [40, 6, 4, 4] ([2 numIters, T, n, n] from x)", "shape [40, 6, 16]"}});
}

TEST_P(MhcPreSinkhornChecks, PrivateFormatsGive161002ForEveryTensor) {
  std::vector<Rejection> cases;
  for (const auto& [name, slot] : kTensors) {
    for (aclFormat format : {ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_NC1HWC0}) {
      const std::string given = format == ACL_FORMAT_FRACTAL_NZ ? "format FRACTAL_NZ" : "format NC1HWC0";
      cases.push_back({std::string(name) + " " + given,
                       [slot = slot, format](Forward& f) {
                         f.*slot = f.pool.make((f.*slot)->dtype, (f.*slot)->viewDims, {}, format);
                       },
                       kInvalid, name, "a public format", given});
    }
  }
  expectRejected(baseConfig(GetParam()), cases);
}

TEST_P(MhcPreSinkhornChecks, HiddenSizeFollowsTheProfile) {
  const std::string soc = GetParam();
  // A phi with every row on the same memory: c up to 100096 without 38 MB.
  const auto withC = [](int64_t c) {
    return [c](Forward& f) {
      f.c = c;
      f.x = f.pool.make(f.dtype, f.tok({4, c}));
      f.hin = f.pool.make(f.dtype, f.tok({c}));
      f.phi = f.pool.make(ACL_FLOAT, {24, 4 * c}, {0, 1});
    };
  };
  std::vector<Rejection> cases;
  std::vector<int64_t> accepted;
  if (is950(soc.c_str())) {
    for (int64_t c : {128, 192, 4224, 7040, 8192}) {
      cases.push_back(
          {"c " + std::to_string(c), withC(c), ACLNN_ERR_INNER_TILING_ERROR, "x",
           "last dim c in {4096, 7168} (the Ascend950 kernel's widths; the Ascend950 profile (GRADKIT_SOC))",
           std::to_string(c)});
    }
    accepted = {4096, 7168};
  } else {
    for (int64_t c : {64, 192, 4097, 100096}) {
      cases.push_back({"c " + std::to_string(c), withC(c), ACLNN_ERR_PARAM_INVALID, "x",
                       "last dim c a multiple of 128 up to 100000 (the " + soc + " profile (GRADKIT_SOC))",
                       std::to_string(c)});
    }
    accepted = {128, 256, 4096, 7168};
  }
  for (const std::vector<int64_t>& lead : {std::vector<int64_t>{1, 1}, std::vector<int64_t>{1}}) {
    if (lead.size() == 1 && !is950(soc.c_str())) continue;
    const Config k{lead, 128};
    expectRejected(k, cases);
    for (int64_t c : accepted) {
      for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
        Forward call(Config{lead, c, dtype});
        EXPECT_EQ(call.call().status, ACLNN_SUCCESS) << "c " << c << " lead " << dimsString(lead);
      }
    }
  }
}

TEST_P(MhcPreSinkhornChecks, EmptyXSucceedsWithoutWorkAfterTheShapeAndFormatRules) {
  // B = 0, S = 0, c = 0 (and T = 0 on Ascend950): workspace 0, an executor that runs; the c rule is not asked
  // (c = 128 is no Ascend950 width).
  std::vector<Config> empties{{{0, 3}, 128}, {{2, 0}, 128}, {{2, 3}, 0}, {{0, 3}, 128, ACL_FLOAT16}};
  if (is950(GetParam())) empties.push_back({{0}, 4096});
  for (const Config& k : empties) {
    Forward call(k);
    EXPECT_EQ(call.call().status, ACLNN_SUCCESS) << dimsString(call.x->viewDims);
    EXPECT_EQ(call.size, 0u) << dimsString(call.x->viewDims);
  }
  {  // Saved tensors not empty (needBackward off, so unchecked): the executor leaves them as they were.
    Forward call(Config{{0, 3}, 128});
    call.needBackward = false;
    call.hPre = call.pool.make(ACL_FLOAT, {2, 3, 4});
    std::memset(call.hPre->data, 0xAB, 24 * sizeof(float));
    ASSERT_EQ(call.call().status, ACLNN_SUCCESS);
    for (int i = 0; i < 24 * 4; ++i) EXPECT_EQ(static_cast<unsigned char*>(call.hPre->data)[i], 0xAB) << i;
  }
  // The rules before the shortcut still hold for an empty x.
  const Config empty{{0, 3}, 128};
  expectRejected(empty, {{"hin fp16",
                          [](Forward& f) {
                            f.hin = f.pool.make(ACL_FLOAT16, {0, 3, 128});
                          },
                          kInvalid, "hin", "dtype BFLOAT16 (the dtype of x)", "dtype FLOAT16"},
                         {"hin [0, 3, 256]",
                          [](Forward& f) {
                            f.hin = f.pool.make(ACL_BF16, {0, 3, 256});
                          },
                          kInvalid, "hin", "shape [0, 3, 128]", "shape [0, 3, 256]"},
                         {"sumOut [40, 0, 3, 5]",
                          [](Forward& f) {
                            f.sumOut = f.pool.make(ACL_FLOAT, {40, 0, 3, 5});
                          },
                          kInvalid, "sumOut", "shape [40, 0, 3, 4]", "shape [40, 0, 3, 5]"},
                         {"phi NZ",
                          [](Forward& f) {
                            f.phi = f.pool.make(ACL_FLOAT, {24, 512}, {}, ACL_FORMAT_FRACTAL_NZ);
                          },
                          kInvalid, "phi", "a public format", "format FRACTAL_NZ"},
                         {"hcMult 8", [](Forward& f) { f.hcMult = 8; }, kInvalid, "hcMult", "4", "8"},
                         {"null normOut", [](Forward& f) { f.normOut = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "normOut",
                          "a non-null pointer", "nullptr"}});
  if (!is950(GetParam())) {
    expectRejected(Config{{0}, 128},
                   {{"empty TND", [](Forward&) {}, kInvalid, "x", "TND (rank 3) exists only", "shape [0, 4, 128]"}});
  }
}

TEST_P(MhcPreSinkhornChecks, OutputsOverlappingInputsOrOutputsGive161002) {
  expectRejected(baseConfig(GetParam()),
                 {{"hin over x", [](Forward& f) { f.hin = f.pool.alias(f.x, f.dtype, f.tok({f.c})); }, kInvalid, "hin",
                   "memory that does not overlap the input x", "bytes overlapping x"},
                  {"hPost over phi", [](Forward& f) { f.hPost = f.pool.alias(f.phi, ACL_FLOAT, f.tok({4}), 5); },
                   kInvalid, "hPost", "memory that does not overlap the input phi", "bytes overlapping phi"},
                  {"bias inside hRes", [](Forward& f) { f.bias = f.pool.alias(f.hRes, ACL_FLOAT, {24}, 3); }, kInvalid,
                   "hRes", "memory that does not overlap the input bias", "bytes overlapping bias"},
                  {"alpha inside invRms", [](Forward& f) { f.alpha = f.pool.alias(f.invRms, ACL_FLOAT, {3}, 1); },
                   kInvalid, "invRms", "memory that does not overlap the input alpha", "bytes overlapping alpha"},
                  {"hPost inside hRes", [](Forward& f) { f.hPost = f.pool.alias(f.hRes, ACL_FLOAT, f.tok({4}), 8); },
                   kInvalid, "hRes", "memory that does not overlap the output hPost", "bytes overlapping hPost"},
                  {"sumOut inside normOut",
                   [](Forward& f) { f.sumOut = f.pool.alias(f.normOut, ACL_FLOAT, cat({40}, f.tok({4})), 16); },
                   kInvalid, "normOut", "memory that does not overlap the output sumOut", "bytes overlapping sumOut"},
                  {"hin with zero strides",
                   [](Forward& f) {
                     f.hin = f.pool.make(f.dtype, f.tok({f.c}), {0, 0, 1});
                   },
                   kInvalid, "hin", "an output whose elements are all at different addresses",
                   "shape [2, 3, " + std::to_string(baseConfig(GetParam()).c) + "] with strides [0, 0, 1]"}});
}

}  // namespace
}  // namespace gradkit::test::mhc
