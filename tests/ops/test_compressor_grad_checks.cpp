// aclnnCompressorGradGetWorkspaceSize: the profile, every rule of spec compressor.md 5.4 in its order (code and
// message), the cases of upstream's tiling UT (spec 5.4), what gradkit checks beyond upstream (B >= 1, block-count
// dims, exact output shapes, formats, cu_seqlens / seqused / start_pos values) and gradkit's memory rules. Only the
// first phase is called.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_compressor_grad.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test {
namespace {

using mhc::failsWith;
using mhc::Outcome;
using mhc::quoted;
using mhc::ScopedSoc;
using mhc::TensorPool;

struct Config {
  bool th = false;
  aclDataType dtype = ACL_BF16;
  int64_t batch = 2, seqLen = 8;         // BSH
  std::vector<int32_t> cu = {0, 4, 10};  // TH
  int64_t tokens = 10;                   // TH
  int64_t hidden = 1024, headDim = 128, coff = 2, cr = 4;
  bool seqused = false, startPos = false;
  bool strided = false;  // every tensor a non-contiguous view
};

// Builds a valid call for the config; each test breaks one argument and calls.
class CompressorGradChecks : public ::testing::Test {
 public:
  void SetUp() override {
    build(Config{});
    recentError();
  }

  void build(const Config& c) {
    config = c;
    cr = c.cr;
    coff = c.coff;
    const int64_t ch = c.coff * c.headDim, n = c.coff * c.cr;
    batch = c.th ? static_cast<int64_t>(c.cu.size()) - 1 : c.batch;
    const std::vector<int64_t> lead = c.th ? std::vector<int64_t>{std::min(c.tokens, c.tokens / c.cr + batch)}
                                           : std::vector<int64_t>{c.batch, (c.seqLen + c.cr - 1) / c.cr};
    const auto with = [&lead](std::initializer_list<int64_t> tail) {
      std::vector<int64_t> s = lead;
      s.insert(s.end(), tail);
      return s;
    };
    const auto make = [&](aclDataType dtype, const std::vector<int64_t>& shape) -> aclTensor* {
      return c.strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
    };
    xShape = c.th ? std::vector<int64_t>{c.tokens, c.hidden} : std::vector<int64_t>{c.batch, c.seqLen, c.hidden};
    x = make(c.dtype, xShape);
    wkv = make(c.dtype, {ch, c.hidden});
    wgate = make(c.dtype, {ch, c.hidden});
    dCmpKv = make(c.dtype, with({c.headDim}));
    softmaxScore = make(ACL_FLOAT, with({n, c.headDim}));
    kv = make(ACL_FLOAT, with({n, c.headDim}));
    cuSeqlens = c.th ? ints(c.cu) : nullptr;
    seqused = c.seqused ? ints(std::vector<int32_t>(static_cast<size_t>(batch), 2)) : nullptr;
    startPos = c.startPos ? ints(std::vector<int32_t>(static_cast<size_t>(batch), 3)) : nullptr;
    dX = make(c.dtype, xShape);
    dWkv = make(c.dtype, {ch, c.hidden});
    dWgate = make(c.dtype, {ch, c.hidden});
    dApe = make(ACL_FLOAT, {c.cr, ch});
  }

  /** A 1-d INT32 tensor holding `values` (non-contiguous when the config says so). */
  aclTensor* ints(const std::vector<int32_t>& values) {
    const auto n = static_cast<int64_t>(values.size());
    aclTensor* t = config.strided ? pool.makeStrided(ACL_INT32, {n}) : pool.make(ACL_INT32, {n});
    auto* data = static_cast<int32_t*>(t->data);
    for (int64_t i = 0; i < n; ++i) data[i * t->strides[0]] = values[static_cast<size_t>(i)];
    return t;
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome outcome;
    outcome.status = aclnnCompressorGradGetWorkspaceSize(
        x, wkv, wgate, dCmpKv, softmaxScore, kv, cuSeqlens, seqused, startPos, cr, coff, dX, dWkv, dWgate, dApe,
        nullWorkspaceSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    outcome.message = recentError();
    if (outcome.status == ACLNN_SUCCESS) {
      EXPECT_NE(executor, nullptr);
    } else {
      EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    }
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return outcome;
  }

  TensorPool pool;
  Config config;
  std::vector<int64_t> xShape;
  int64_t batch = 0, cr = 4, coff = 2;
  const aclTensor *x = nullptr, *wkv = nullptr, *wgate = nullptr, *dCmpKv = nullptr, *softmaxScore = nullptr,
                  *kv = nullptr, *cuSeqlens = nullptr, *seqused = nullptr, *startPos = nullptr;
  const aclTensor *dX = nullptr, *dWkv = nullptr, *dWgate = nullptr, *dApe = nullptr;
  bool nullWorkspaceSize = false, nullExecutor = false;
};

using Member = const aclTensor* CompressorGradChecks::*;

const std::pair<const char*, Member> kRequired[] = {
    {"x", &CompressorGradChecks::x},
    {"wkv", &CompressorGradChecks::wkv},
    {"wgate", &CompressorGradChecks::wgate},
    {"dCmpKv", &CompressorGradChecks::dCmpKv},
    {"softmaxScore", &CompressorGradChecks::softmaxScore},
    {"kv", &CompressorGradChecks::kv},
    {"dXOut", &CompressorGradChecks::dX},
    {"dWkvOut", &CompressorGradChecks::dWkv},
    {"dWgateOut", &CompressorGradChecks::dWgate},
    {"dApeOut", &CompressorGradChecks::dApe},
};

TEST_F(CompressorGradChecks, ValidCallsSucceed) {
  for (bool th : {false, true}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (int64_t c : {1, 2}) {
        for (bool strided : {false, true}) {
          Config cfg;
          cfg.th = th, cfg.dtype = dtype, cfg.coff = c, cfg.strided = strided;
          cfg.seqused = cfg.startPos = strided;
          build(cfg);
          const Outcome outcome = call();
          EXPECT_EQ(outcome.status, ACLNN_SUCCESS)
              << outcome.message << " th " << th << " dtype " << dtype << " coff " << c << " strided " << strided;
        }
      }
    }
  }
  // Every attribute value at its limits: cmpRatio 2 and 128, D 512, H 1024 and 10240, and TH rows after cu[B].
  for (int64_t ratio : {2, 3, 128}) {
    Config cfg;
    cfg.cr = ratio;
    build(cfg);
    EXPECT_EQ(call().status, ACLNN_SUCCESS) << ratio;
  }
  Config wide;
  wide.headDim = 512, wide.seqLen = 5;
  build(wide);
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  wide.headDim = 128, wide.hidden = 10240;
  build(wide);
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  Config tail;
  tail.th = true, tail.cu = {0, 3, 3, 7}, tail.tokens = 12, tail.startPos = true;
  build(tail);
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

// Upstream's tiling UT (spec 5.4): the passing configurations pass, the failing ones fail with 161002. The TH case
// with softmaxScore / kv of dim 0 = B (upstream does not check that dim) fails here: gradkit checks the block count.
TEST_F(CompressorGradChecks, UpstreamTilingUnitTestCases) {
  const auto passes = [&](Config cfg) {
    build(cfg);
    const Outcome outcome = call();
    EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
  };
  Config c4a;
  c4a.batch = 2, c4a.seqLen = 8, c4a.hidden = 4096, c4a.headDim = 512;  // BSH C4A
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    c4a.dtype = dtype;
    passes(c4a);
  }
  Config c4li;
  c4li.hidden = 2048;
  passes(c4li);
  Config c128a;
  c128a.seqLen = 16, c128a.hidden = 4096, c128a.headDim = 512, c128a.coff = 1, c128a.cr = 128;
  passes(c128a);
  Config odd;
  odd.seqLen = 6;
  passes(odd);
  Config thC4a;
  thC4a.th = true, thC4a.cu = {0, 4, 8}, thC4a.tokens = 8, thC4a.hidden = 4096, thC4a.headDim = 512;
  passes(thC4a);
  softmaxScore = pool.make(ACL_FLOAT, {2, 8, 512});  // upstream's UT shape: dim 0 = B instead of R = 4
  kv = pool.make(ACL_FLOAT, {2, 8, 512});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'softmaxScore'", "R = min(T, T/cmpRatio + B) = 4", "given shape [2, 8, 512]"}));
  // Failing cases: cmpRatio 3 with the block rows of 4, coff 3, D 256, H 3000 and 512, B = 0.
  build(c4a);
  cr = 3;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'softmaxScore'", "dim 2 = 6 (coff*cmpRatio = 6)"}));
  build(c4a);
  coff = 3;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'coff'", "expected 1 or 2", "given 3"}));
  Config d256 = c4a;
  d256.headDim = 256;
  build(d256);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'wkv'", "D (head dim) 128 or 512", "D = 256"}));
  for (int64_t h : {3000, 512}) {
    Config bad = c4a;
    bad.hidden = h;
    build(bad);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {"'x'", "a multiple of 512 in [1024, 10240]", "H = " + std::to_string(h)}));
  }
  build(c4a);
  x = pool.make(ACL_BF16, {0, 8, 4096});
  EXPECT_TRUE(
      failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "a non-empty tensor", "given empty shape [0, 8, 4096]"}));
}

TEST_F(CompressorGradChecks, OnlyTheAscend950ProfileHasTheOperator) {
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    ScopedSoc scoped(soc);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {"aclnnCompressorGrad:", std::string("unavailable in the ") + soc, "only on Ascend950"}));
  }
  ScopedSoc scoped("Ascend950");
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

TEST_F(CompressorGradChecks, NullPointersGive161001NamingTheArgument) {
  nullExecutor = true;
  x = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'executor'", "given nullptr"}));
  nullWorkspaceSize = true;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'workspaceSize'"}));
  nullWorkspaceSize = nullExecutor = false;
  for (const auto& [name, member] : kRequired) {
    build({});
    this->*member = nullptr;
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"aclnnCompressorGrad:", quoted(name), "given nullptr"}))
        << name;
  }
  // The null checks come before everything else: a null dApeOut wins over an empty x.
  build({});
  x = pool.make(ACL_BF16, {0, 8, 1024});
  dApe = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR, {"'dApeOut'"}));
}

TEST_F(CompressorGradChecks, CuSeqlensComesWithTheThLayoutOnly) {
  Config cfg;
  cfg.th = true;
  build(cfg);
  cuSeqlens = nullptr;
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_NULLPTR,
                        {"'cuSeqlensOptional'", "a non-null pointer (x is TH [T, H])", "given nullptr"}));
  build({});
  cuSeqlens = ints({0, 8, 16});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "nullptr (x is not 2-D", "given a tensor of shape [3]"}));
  // A 4-D x keeps the BSH default (spec 5.4): without cu_seqlens its rank rule rejects it.
  build({});
  x = pool.make(ACL_BF16, {2, 8, 1, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "2 or 3 dims", "given 4 dims [2, 8, 1, 1024]"}));
}

TEST_F(CompressorGradChecks, EmptyTensorsGive161002) {
  for (const auto& [name, member] : kRequired) {
    build({});
    const bool isX = member == &CompressorGradChecks::x;  // a 2-D x would be TH and ask for cu_seqlens first
    this->*member = pool.make(ACL_FLOAT, isX ? std::vector<int64_t>{0, 3, 5} : std::vector<int64_t>{0, 3});
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {quoted(name), "a non-empty tensor (CompressorGrad supports no empty tensor)",
                           isX ? "given empty shape [0, 3, 5]" : "given empty shape [0, 3]"}))
        << name;
  }
  Config cfg;
  cfg.th = true;
  build(cfg);
  cuSeqlens = pool.make(ACL_INT32, {0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'cuSeqlensOptional'", "a non-empty tensor"}));
  build({});
  seqused = pool.make(ACL_INT32, {0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'sequsedOptional'", "a non-empty tensor"}));
  build({});
  startPos = pool.make(ACL_INT32, {0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'startPosOptional'", "a non-empty tensor"}));
  // Empty beats a wrong dtype (spec 5.4 step 3 before step 4).
  build({});
  wkv = pool.make(ACL_INT8, {256, 0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'wkv'", "a non-empty tensor"}));
}

TEST_F(CompressorGradChecks, DtypesAndRanksOfEachArgument) {
  struct Case {
    const char* name;
    Member member;
    aclDataType dtype;
    std::vector<int64_t> shape;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"x", &CompressorGradChecks::x, ACL_FLOAT, {2, 8, 1024}, {"dtype", "FLOAT"}},
      {"x", &CompressorGradChecks::x, ACL_BF16, {16384}, {"2 or 3 dims", "given 1 dims [16384]"}},
      {"wkv", &CompressorGradChecks::wkv, ACL_INT8, {256, 1024}, {"dtype", "INT8"}},
      {"wkv", &CompressorGradChecks::wkv, ACL_BF16, {1, 256, 1024}, {"2 dims ([coff*D, H])"}},
      {"wgate", &CompressorGradChecks::wgate, ACL_FLOAT, {256, 1024}, {"dtype"}},
      {"wgate", &CompressorGradChecks::wgate, ACL_BF16, {256 * 1024}, {"2 dims"}},
      {"dCmpKv", &CompressorGradChecks::dCmpKv, ACL_FLOAT, {2, 2, 128}, {"dtype"}},
      {"dCmpKv", &CompressorGradChecks::dCmpKv, ACL_BF16, {512}, {"2 or 3 dims"}},
      {"softmaxScore",
       &CompressorGradChecks::softmaxScore,
       ACL_BF16,
       {2, 2, 8, 128},
       {"dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"softmaxScore", &CompressorGradChecks::softmaxScore, ACL_FLOAT, {2, 2, 8, 128, 1}, {"3 or 4 dims"}},
      {"kv", &CompressorGradChecks::kv, ACL_FLOAT16, {2, 2, 8, 128}, {"dtype", "FLOAT16"}},
      {"kv", &CompressorGradChecks::kv, ACL_FLOAT, {4096}, {"3 or 4 dims"}},
      {"dXOut", &CompressorGradChecks::dX, ACL_FLOAT, {2, 8, 1024}, {"dtype"}},
      {"dXOut", &CompressorGradChecks::dX, ACL_BF16, {16384}, {"2 or 3 dims"}},
      {"dWkvOut", &CompressorGradChecks::dWkv, ACL_INT32, {256, 1024}, {"dtype"}},
      {"dWkvOut", &CompressorGradChecks::dWkv, ACL_BF16, {256, 1024, 1}, {"2 dims"}},
      {"dWgateOut", &CompressorGradChecks::dWgate, ACL_FLOAT, {256, 1024}, {"dtype"}},
      {"dWgateOut", &CompressorGradChecks::dWgate, ACL_BF16, {256 * 1024}, {"2 dims"}},
      {"dApeOut", &CompressorGradChecks::dApe, ACL_FLOAT16, {4, 256}, {"dtype"}},
      {"dApeOut", &CompressorGradChecks::dApe, ACL_FLOAT, {1024}, {"2 dims ([cmpRatio, coff*D])"}},
  };
  for (const Case& c : cases) {
    build({});
    this->*c.member = pool.make(c.dtype, c.shape);
    std::vector<std::string> fragments = {"aclnnCompressorGrad:", quoted(c.name)};
    fragments.insert(fragments.end(), c.fragments.begin(), c.fragments.end());
    const Outcome outcome = call();
    EXPECT_EQ(outcome.status, ACLNN_ERR_PARAM_INVALID) << c.name << ": " << outcome.message;
    for (const std::string& f : fragments) EXPECT_TRUE(mentions(outcome.message, {f})) << c.name;
  }
  // The optional int32 tensors.
  Config cfg;
  cfg.th = true;
  build(cfg);
  cuSeqlens = pool.make(ACL_INT64, {3});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'cuSeqlensOptional'", "dtype", "INT64"}));
  build(cfg);
  cuSeqlens = pool.make(ACL_INT32, {3, 1});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'cuSeqlensOptional'", "1 dims ([B+1])"}));
  build({});
  seqused = pool.make(ACL_FLOAT, {2});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'sequsedOptional'", "dtype"}));
  build({});
  startPos = pool.make(ACL_INT32, {2, 1});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'startPosOptional'", "1 dims ([B])"}));
}

TEST_F(CompressorGradChecks, AttributesInRange) {
  for (int64_t ratio : {int64_t{1}, int64_t{0}, int64_t{-4}, int64_t{129}, int64_t{1} << 32, INT64_MIN}) {
    build({});
    cr = ratio;
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {"'cmpRatio'", "an integer in [2, 128]", "given " + std::to_string(ratio)}))
        << ratio;
  }
  for (int64_t c : {int64_t{0}, int64_t{3}, int64_t{-1}, (int64_t{1} << 32) + 1}) {
    build({});
    coff = c;
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'coff'", "1 or 2", "given " + std::to_string(c)})) << c;
  }
}

TEST_F(CompressorGradChecks, FeaturesHeadDimAndHidden) {
  for (int64_t h : {1024, 1536, 10240}) {
    Config cfg;
    cfg.hidden = h;
    build(cfg);
    EXPECT_EQ(call().status, ACLNN_SUCCESS) << h;
  }
  for (int64_t h : {1000, 10752, 1280}) {
    Config cfg;
    cfg.hidden = h;
    build(cfg);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'x'", "H = " + std::to_string(h)})) << h;
  }
  for (int64_t d : {64, 256, 1024}) {
    Config cfg;
    cfg.headDim = d;
    build(cfg);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {"'wkv'", "coff = 2", "dim 0 = " + std::to_string(2 * d), "D = " + std::to_string(d)}))
        << d;
  }
  // D comes from wkv.dim0 / coff (integer division): 257 rows give D = 128, then the cross-shape rule names 256.
  build({});
  wkv = pool.make(ACL_BF16, {257, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'wkv'", "dim 0 = 256 (coff*D = 256)", "given dim 0 = 257"}));
}

TEST_F(CompressorGradChecks, CrossShapesAsUpstream) {
  build({});
  seqused = ints({1, 2, 3});
  EXPECT_TRUE(
      failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'sequsedOptional'", "dim 0 = 2 (B = 2)", "given dim 0 = 3"}));
  build({});
  startPos = ints({1});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'startPosOptional'", "dim 0 = 2 (B = 2)"}));
  build({});
  wkv = pool.make(ACL_BF16, {256, 2048});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'wkv'", "dim 1 = 1024 (H = 1024 of x)", "dim 1 = 2048"}));
  build({});
  wgate = pool.make(ACL_BF16, {256, 1536});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'wgate'", "dim 1 = 1024"}));
  build({});
  wgate = pool.make(ACL_BF16, {128, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'wgate'", "dim 0 = 256 (coff*D = 256)"}));
  // BSH: dCmpKv [B, .., D], softmaxScore / kv [B, .., coff*cr, D].
  build({});
  dCmpKv = pool.make(ACL_BF16, {3, 2, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dCmpKv'", "dim 0 = 2 (B = 2)", "given dim 0 = 3"}));
  build({});
  dCmpKv = pool.make(ACL_BF16, {2, 2, 64});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dCmpKv'", "dim 2 = 128 (D = 128)"}));
  build({});
  softmaxScore = pool.make(ACL_FLOAT, {1, 2, 8, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'softmaxScore'", "dim 0 = 2 (B = 2)"}));
  build({});
  kv = pool.make(ACL_FLOAT, {2, 2, 4, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'kv'", "dim 2 = 8 (coff*cmpRatio = 8)"}));
  build({});
  kv = pool.make(ACL_FLOAT, {2, 2, 8, 512});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'kv'", "dim 3 = 128 (D = 128)"}));
  // TH: dCmpKv [.., D], softmaxScore / kv [.., coff*cr, D].
  Config cfg;
  cfg.th = true;
  build(cfg);
  dCmpKv = pool.make(ACL_BF16, {4, 512});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dCmpKv'", "dim 1 = 128 (D = 128)"}));
  build(cfg);
  softmaxScore = pool.make(ACL_FLOAT, {4, 4, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'softmaxScore'", "dim 1 = 8 (coff*cmpRatio = 8)"}));
  build(cfg);
  kv = pool.make(ACL_FLOAT, {4, 8, 64});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'kv'", "dim 2 = 128 (D = 128)"}));
}

TEST_F(CompressorGradChecks, DtypeAndRankConsistency) {
  for (const auto& [name, member] : {std::pair<const char*, Member>{"wkv", &CompressorGradChecks::wkv},
                                     {"wgate", &CompressorGradChecks::wgate},
                                     {"dCmpKv", &CompressorGradChecks::dCmpKv},
                                     {"dXOut", &CompressorGradChecks::dX},
                                     {"dWkvOut", &CompressorGradChecks::dWkv},
                                     {"dWgateOut", &CompressorGradChecks::dWgate}}) {
    build({});
    const aclTensor* valid = this->*member;
    this->*member = pool.make(ACL_FLOAT16, valid->viewDims);
    EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                          {quoted(name), "expected dtype BFLOAT16 (the dtype of x)", "given dtype FLOAT16"}))
        << name;
  }
  // Ranks: TH x with BSH-shaped dX / dCmpKv / softmaxScore / kv.
  Config cfg;
  cfg.th = true;
  build(cfg);
  dX = pool.make(ACL_BF16, {1, 10, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dXOut'", "2 dims (the rank of x)", "given 3 dims"}));
  build(cfg);
  dCmpKv = pool.make(ACL_BF16, {1, 4, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dCmpKv'", "2 dims (the rank of x)"}));
  build(cfg);
  softmaxScore = pool.make(ACL_FLOAT, {1, 4, 8, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'softmaxScore'", "3 dims (the rank of x + 1)"}));
  build(cfg);
  kv = pool.make(ACL_FLOAT, {1, 4, 8, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'kv'", "3 dims (the rank of x + 1)"}));
  // A dtype mismatch comes before a rank mismatch (steps 8 then 9).
  build({});
  dX = pool.make(ACL_FLOAT16, {16, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dXOut'", "FLOAT16"}));
}

// What upstream does not check: the block-count dims (the forward's output rows) and the exact output shapes.
TEST_F(CompressorGradChecks, BlockCountsAndOutputShapes) {
  build({});  // BSH S = 8, cr = 4: 2 rows per batch
  dCmpKv = pool.make(ACL_BF16, {2, 3, 128});
  EXPECT_TRUE(failsWith(
      call(), ACLNN_ERR_PARAM_INVALID,
      {"'dCmpKv'", "shape [2, 2, 128] (B, ceil(S/cmpRatio) = 2 compressed rows, D)", "given shape [2, 3, 128]"}));
  build({});
  softmaxScore = pool.make(ACL_FLOAT, {2, 1, 8, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'softmaxScore'", "shape [2, 2, 8, 128]"}));
  build({});
  kv = pool.make(ACL_FLOAT, {2, 4, 8, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'kv'", "shape [2, 2, 8, 128]"}));
  Config cfg;
  cfg.th = true;  // T = 10, B = 2, cr = 4: R = min(10, 2 + 2) = 4
  build(cfg);
  dCmpKv = pool.make(ACL_BF16, {5, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'dCmpKv'", "shape [4, 128] (R = min(T, T/cmpRatio + B) = 4 compressed rows, D)"}));
  build(cfg);
  kv = pool.make(ACL_FLOAT, {3, 8, 128});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'kv'", "shape [4, 8, 128]"}));
  // Outputs.
  build({});
  dX = pool.make(ACL_BF16, {2, 9, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dXOut'", "shape [2, 8, 1024] (the shape of x)"}));
  build({});
  dWkv = pool.make(ACL_BF16, {256, 2048});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dWkvOut'", "shape [256, 1024] ([coff*D, H])"}));
  build({});
  dWgate = pool.make(ACL_BF16, {128, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dWgateOut'", "shape [256, 1024]"}));
  build({});
  dApe = pool.make(ACL_FLOAT, {8, 256});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'dApeOut'", "shape [4, 256] ([cmpRatio, coff*D])", "given shape [8, 256]"}));
  // TH with cu_seqlens of one value: B = 0.
  build(cfg);
  cuSeqlens = ints({0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "at least 2 values (B + 1 with B >= 1", "given shape [1]"}));
}

TEST_F(CompressorGradChecks, PrivateFormatsAreRejected) {
  build({});
  const aclTensor* valid = dWkv;
  const std::vector<int64_t> strides = valid->strides;
  dWkv = pool.view(valid->data, ACL_BF16, valid->viewDims, strides, 0, -1, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dWkvOut'", "a public format", "FRACTAL_NZ"}));
}

TEST_F(CompressorGradChecks, MemoryRules) {
  // An output over an input (even exactly the same view: the kernels read x while they write dX).
  build({});
  dX = pool.alias(x, ACL_BF16, xShape);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dXOut'", "does not overlap the input x"}));
  build({});
  dApe = pool.alias(softmaxScore, ACL_FLOAT, {4, 256}, 100);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dApeOut'", "the input softmaxScore"}));
  build({});
  dWkv = pool.alias(wkv, ACL_BF16, {256, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dWkvOut'", "the input wkv"}));
  // Two outputs sharing memory.
  build({});
  dWgate = pool.alias(dWkv, ACL_BF16, {256, 1024});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dWgateOut'", "does not overlap the output dWkvOut"}));
  // An output that writes an address twice (a zero stride).
  build({});
  dApe = pool.view(pool.make(ACL_FLOAT, {256})->data, ACL_FLOAT, {4, 256}, {0, 1});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dApeOut'"}));
  // An output over an optional input.
  build({});
  startPos = pool.view(dApe->data, ACL_INT32, {2});  // zeros: valid start positions
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'dApeOut'", "the input startPosOptional"}));
}

TEST_F(CompressorGradChecks, CuSeqlensValues) {
  Config cfg;
  cfg.th = true;
  const auto withCu = [&](std::vector<int32_t> cu, int64_t tokens) {
    Config c = cfg;
    c.cu = std::move(cu);
    c.tokens = tokens;
    build(c);
  };
  withCu({1, 4, 10}, 10);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "cu_seqlens[0] = 0", "given cu_seqlens[0] = 1"}));
  withCu({0, 6, 4}, 10);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "non-decreasing", "given cu_seqlens[2] = 4 after cu_seqlens[1] = 6"}));
  withCu({0, 4, 11}, 10);
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "cu_seqlens[B] <= T = 10", "given cu_seqlens[2] = 11"}));
  withCu({0, 0, 0}, 10);  // every batch empty, every row unowned: valid (all outputs zero)
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
}

TEST_F(CompressorGradChecks, SequsedAndStartPosValues) {
  build({});
  seqused = ints({8, 9});
  EXPECT_TRUE(failsWith(
      call(), ACLNN_ERR_PARAM_INVALID,
      {"'sequsedOptional'", "0 <= seqused[b] <= the batch's length (S = 8 for b = 1)", "given seqused[1] = 9"}));
  build({});
  seqused = ints({-1, 0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID, {"'sequsedOptional'", "given seqused[0] = -1"}));
  Config cfg;
  cfg.th = true;  // lengths 4 and 6
  build(cfg);
  seqused = ints({4, 7});
  EXPECT_TRUE(
      failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                {"'sequsedOptional'", "cu_seqlens[b+1] - cu_seqlens[b] = 6 for b = 1", "given seqused[1] = 7"}));
  build({});
  startPos = ints({0, -3});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'startPosOptional'", "start_pos[b] >= 0", "given start_pos[1] = -3"}));
  build({});
  startPos = ints({INT32_MAX - 8, 0});  // positions up to INT32_MAX - 1: fine
  EXPECT_EQ(call().status, ACLNN_SUCCESS);
  build({});
  startPos = ints({INT32_MAX - 7, 0});
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'startPosOptional'", "<= 2147483647 (positions are int32; length 8 for b = 0)",
                         "given start_pos[0] = 2147483640"}));
}

}  // namespace
}  // namespace gradkit::test
