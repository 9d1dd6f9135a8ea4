// aclnnCompressorGetWorkspaceSize: every rule of spec compressor.md 3.1 (code and message) in its order, the limits of
// each emulated SoC (DECISIONS.md: A2/A3 only power-of-two cmpRatio, cacheMode 1, no gradEnabled, dense cache
// blocks), the rules upstream leaves unchecked (stateCacheStrideDim0, exact output shapes, cu_seqlens / seqused /
// start_pos values, the block-table entries a call uses) and gradkit's memory rules. Only the first phase is called:
// the executors are destroyed unrun.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_compressor.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::compressor {
namespace {

using mhc::failsWith;
using mhc::Outcome;
using mhc::quoted;
using mhc::ScopedSoc;
using mhc::TensorPool;

// One call's arguments; each test breaks one of a valid set.
struct Args {
  const aclTensor *x = nullptr, *wkv = nullptr, *wgate = nullptr;
  aclTensor* cache = nullptr;
  const aclTensor *ape = nullptr, *table = nullptr, *cu = nullptr, *seqused = nullptr, *startPos = nullptr;
  int64_t cmpRatio = 4, coff = 2, cacheMode = 1, strideDim0 = 0;
  bool grad = true;
  const aclTensor *cmpKv = nullptr, *score = nullptr, *kv = nullptr;
  bool nullWorkspaceSize = false, nullExecutor = false;
};

struct Config {
  bool th = false;
  aclDataType dtype = ACL_BF16;
  int64_t d = 128, coff = 2, cr = 4, cacheMode = 1, blockSize = 16;
  bool grad = true;
  bool strided = false;
};

class CompressorChecks : public ::testing::TestWithParam<const char*> {
 public:
  void SetUp() override {
    soc_.emplace(GetParam());
    build(Config{});
    recentError();
  }

  bool is950() const { return std::string(GetParam()) == "Ascend950"; }

  // A valid call: B = 2, S = 8 (TH: cu = [0, 8, 16], T = 16), H = 1024, start_pos = [0, 4], seqused = [8, 7].
  void build(const Config& c) {
    config = c;
    a = Args{};
    const int64_t channels = c.coff * c.d, hidden = 1024;
    auto make = [&](aclDataType dtype, std::vector<int64_t> shape) {
      return c.strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
    };
    a.x = c.th ? make(c.dtype, {16, hidden}) : make(c.dtype, {2, 8, hidden});
    a.wkv = make(c.dtype, {channels, hidden});
    a.wgate = make(c.dtype, {channels, hidden});
    a.ape = make(ACL_FLOAT, {c.cr, channels});
    a.cmpRatio = c.cr;
    a.coff = c.coff;
    a.cacheMode = c.cacheMode;
    a.grad = c.grad && is950();  // gradEnabled exists only in the Ascend950 profile
    if (c.cacheMode == 1) {
      a.cache = pool.make(ACL_FLOAT, {5, c.blockSize, 2 * channels});
      a.table = ints({2, 1}, {1, 2});
    } else {
      a.cache = pool.make(ACL_FLOAT, {2, c.blockSize, 2 * channels});
      a.table = ints({2}, {1, 0});
    }
    if (c.th) a.cu = ints({3}, {0, 8, 16});
    a.startPos = ints({2}, {0, 4});
    a.seqused = ints({2}, {8, 7});
    const std::vector<int64_t> lead = c.th ? std::vector<int64_t>{std::min<int64_t>(16, 16 / c.cr + 2)}
                                           : std::vector<int64_t>{2, (8 + c.cr - 1) / c.cr};
    a.cmpKv = make(c.dtype, shape(lead, {c.d}));
    a.score = make(ACL_FLOAT, shape(lead, {c.coff * c.cr, c.d}));
    a.kv = make(ACL_FLOAT, shape(lead, {c.coff * c.cr, c.d}));
  }

  static std::vector<int64_t> shape(std::vector<int64_t> lead, std::initializer_list<int64_t> tail) {
    lead.insert(lead.end(), tail);
    return lead;
  }

  // An INT32 tensor holding `values` (row-major over `dims`).
  aclTensor* ints(const std::vector<int64_t>& dims, const std::vector<int32_t>& values) {
    auto& buffer = intBuffers.emplace_back(values);
    if (buffer.empty()) buffer.push_back(0);
    return pool.view(buffer.data(), ACL_INT32, dims, {}, 0, static_cast<int64_t>(buffer.size()));
  }

  Outcome call(const Args& args) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome outcome;
    outcome.status = aclnnCompressorGetWorkspaceSize(
        args.x, args.wkv, args.wgate, args.cache, args.ape, args.table, args.cu, args.seqused, args.startPos,
        args.cmpRatio, args.coff, args.cacheMode, args.strideDim0, args.grad, args.cmpKv, args.score, args.kv,
        args.nullWorkspaceSize ? nullptr : &size, args.nullExecutor ? nullptr : &executor);
    outcome.message = recentError();
    if (outcome.status == ACLNN_SUCCESS) {
      EXPECT_NE(executor, nullptr);
    } else {
      EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    }
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return outcome;
  }
  Outcome call() { return call(a); }

  // Calls with one argument replaced (the fixture's call otherwise).
  template <class F>
  Outcome with(F&& change) {
    Args copy = a;
    change(copy);
    return call(copy);
  }

  std::optional<ScopedSoc> soc_;
  TensorPool pool;
  std::deque<std::vector<int32_t>> intBuffers;
  Config config;
  Args a;
};

INSTANTIATE_TEST_SUITE_P(Profiles, CompressorChecks, ::testing::ValuesIn(mhc::kAllSocs));

TEST_P(CompressorChecks, ValidCallsSucceedInBothLayoutsDtypesAndCacheModes) {
  for (bool th : {false, true}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      for (int64_t cacheMode : {1, 2}) {
        for (bool strided : {false, true}) {
          for (int64_t d : {128, 512}) {
            const bool grad = is950();
            if (!is950() && cacheMode == 2) continue;
            build({th, dtype, d, 2, 4, cacheMode, 16, grad, strided});
            const Outcome outcome = call();
            EXPECT_EQ(outcome.status, ACLNN_SUCCESS)
                << outcome.message << " th " << th << " dtype " << dtype << " cacheMode " << cacheMode;
          }
        }
      }
    }
  }
  build({false, ACL_BF16, 512, 1, 128, 1, 16, false, false});  // C128A
  EXPECT_EQ(call().status, ACLNN_SUCCESS) << call().message;
}

TEST_P(CompressorChecks, NullRequiredPointersAre161001) {
  struct Case {
    const char* name;
    void (*clear)(Args&);
  };
  const Case cases[] = {
      {"workspaceSize", [](Args& x) { x.nullWorkspaceSize = true; }},
      {"executor", [](Args& x) { x.nullExecutor = true; }},
      {"x", [](Args& x) { x.x = nullptr; }},
      {"wkv", [](Args& x) { x.wkv = nullptr; }},
      {"wgate", [](Args& x) { x.wgate = nullptr; }},
      {"stateCacheRef", [](Args& x) { x.cache = nullptr; }},
      {"ape", [](Args& x) { x.ape = nullptr; }},
      {"stateBlockTableOptional", [](Args& x) { x.table = nullptr; }},
      {"cmpKvOut", [](Args& x) { x.cmpKv = nullptr; }},
      {"softmaxScoreOut", [](Args& x) { x.score = nullptr; }},
      {"kvOut", [](Args& x) { x.kv = nullptr; }},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(failsWith(with(c.clear), ACLNN_ERR_PARAM_NULLPTR, {quoted(c.name)})) << c.name;
  }
  EXPECT_TRUE(failsWith(with([](Args& x) { x.table = nullptr; }), ACLNN_ERR_PARAM_NULLPTR,
                        {"addressed through the block table"}));
  build({true, ACL_BF16, 128, 2, 4, 1, 16, false, false});
  EXPECT_TRUE(failsWith(with([](Args& x) { x.cu = nullptr; }), ACLNN_ERR_PARAM_NULLPTR,
                        {"'cuSeqlensOptional'", "x is TH [T, H]"}));
}

TEST_P(CompressorChecks, LayoutAndEmptyRules) {
  const aclTensor* cu = ints({3}, {0, 8, 16});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cu = cu; }), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "nullptr (x is BSH [B, S, H])", "[3]"}));
  const aclTensor* x4 = pool.make(ACL_BF16, {1, 2, 8, 1024});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.x = x4; }), ACLNN_ERR_PARAM_INVALID,
                        {"'x'", "2 or 3 dims", "TH [T, H] or BSH [B, S, H]", "4 dims"}));
  const aclTensor* noHidden = pool.make(ACL_BF16, {2, 8, 0});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.x = noHidden; }), ACLNN_ERR_PARAM_INVALID,
                        {"'x'", "H (last dim) > 0", "[2, 8, 0]"}));
  const aclTensor* emptyW = pool.make(ACL_BF16, {0, 1024});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.wkv = emptyW; }), ACLNN_ERR_PARAM_INVALID,
                        {"'wkv'", "a non-empty tensor", "[0, 1024]"}));
  aclTensor* emptyCache = pool.make(ACL_FLOAT, {0, 16, 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = emptyCache; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "block_num > 0"}));
  const aclTensor* emptyTable = ints({2, 0}, {});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.table = emptyTable; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "only with an empty x"}));
}

TEST_P(CompressorChecks, EmptyXIsAcceptedButStillValidated) {
  const aclTensor* x0 = pool.make(ACL_BF16, {0, 8, 1024});
  const aclTensor* table0 = ints({0, 1}, {});
  const aclTensor* cmp0 = pool.make(ACL_BF16, {0, 2, 128});
  const aclTensor* block0 = pool.make(ACL_FLOAT, {0, 2, 8, 128});
  const aclTensor* ints0 = ints({0}, {});
  const auto empty = [&](Args& x) {
    x.x = x0;
    x.table = table0;
    x.cmpKv = cmp0;
    x.score = x.kv = block0;
    x.seqused = x.startPos = ints0;
    x.grad = false;
  };
  uint64_t size = 7;
  aclOpExecutor* executor = nullptr;
  Args args = a;
  empty(args);
  ASSERT_EQ(aclnnCompressorGetWorkspaceSize(args.x, args.wkv, args.wgate, args.cache, args.ape, args.table, nullptr,
                                            args.seqused, args.startPos, 4, 2, 1, 0, false, args.cmpKv, args.score,
                                            args.kv, &size, &executor),
            ACLNN_SUCCESS)
      << recentError();
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(aclnnCompressor(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          empty(x);
                          x.coff = 3;
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'coff'", "1 or 2", "given 3"}));
}

TEST_P(CompressorChecks, AttributeRangesAndProfileLimits) {
  for (int64_t cr : {int64_t{1}, int64_t{129}, int64_t{1} << 40, int64_t{-4}}) {
    EXPECT_TRUE(failsWith(with([&](Args& x) { x.cmpRatio = cr; }), ACLNN_ERR_PARAM_INVALID,
                          {"'cmpRatio'", "an integer in [2, 128]", "given " + std::to_string(cr)}));
  }
  EXPECT_TRUE(failsWith(with([](Args& x) { x.coff = 0; }), ACLNN_ERR_PARAM_INVALID, {"'coff'", "1 or 2"}));
  for (int64_t mode : {0, 3}) {
    EXPECT_TRUE(failsWith(with([&](Args& x) { x.cacheMode = mode; }), ACLNN_ERR_PARAM_INVALID,
                          {"'cacheMode'", "1 (paged buffer) or 2 (ring buffer)"}));
  }
  // cmpRatio 6: any integer in [2, 128] on Ascend950, powers of two only on A2/A3.
  const aclTensor* ape6 = pool.make(ACL_FLOAT, {6, 256});
  const aclTensor* cmp6 = pool.make(ACL_BF16, {2, 2, 128});
  const aclTensor* score6 = pool.make(ACL_FLOAT, {2, 2, 12, 128});
  const aclTensor* kv6 = pool.make(ACL_FLOAT, {2, 2, 12, 128});
  const Outcome six = with([&](Args& x) {
    x.cmpRatio = 6;
    x.ape = ape6;
    x.cmpKv = cmp6;
    x.score = score6;
    x.kv = kv6;
    x.grad = is950();
  });
  if (is950()) {
    EXPECT_EQ(six.status, ACLNN_SUCCESS) << six.message;
  } else {
    EXPECT_TRUE(failsWith(six, ACLNN_ERR_PARAM_INVALID, {"'cmpRatio'", "a power of two", GetParam(), "given 6"}));
    EXPECT_TRUE(failsWith(with([](Args& x) { x.grad = true; }), ACLNN_ERR_PARAM_INVALID,
                          {"'gradEnabled'", "only in the Ascend950 profile", GetParam(), "given true"}));
    EXPECT_TRUE(failsWith(with([](Args& x) { x.cacheMode = 2; }), ACLNN_ERR_PARAM_INVALID,
                          {"'cacheMode'", "exists only in the Ascend950 profile", GetParam()}));
  }
}

TEST_P(CompressorChecks, InputDtypesRanksAndSizes) {
  const auto replaced = [&](auto field, const aclTensor* value) { return with([&](Args& x) { x.*field = value; }); };
  EXPECT_TRUE(failsWith(replaced(&Args::x, pool.make(ACL_FLOAT, {2, 8, 1024})), ACLNN_ERR_PARAM_INVALID,
                        {"'x'", "BFLOAT16", "FLOAT"}));
  for (int64_t h : {512, 1000, 10752}) {
    EXPECT_TRUE(failsWith(replaced(&Args::x, pool.make(ACL_BF16, {2, 8, h})), ACLNN_ERR_PARAM_INVALID,
                          {"'x'", "a multiple of 512 in [1024, 10240]", "H = " + std::to_string(h)}));
  }
  EXPECT_TRUE(failsWith(replaced(&Args::wkv, pool.make(ACL_INT8, {256, 1024})), ACLNN_ERR_PARAM_INVALID, {"'wkv'"}));
  EXPECT_TRUE(failsWith(replaced(&Args::wkv, pool.make(ACL_BF16, {256, 1024, 1})), ACLNN_ERR_PARAM_INVALID,
                        {"'wkv'", "[coff*D, H]"}));
  EXPECT_TRUE(failsWith(replaced(&Args::wkv, pool.make(ACL_BF16, {512, 1024})), ACLNN_ERR_PARAM_INVALID,
                        {"'wkv'", "D (head dim) 128 or 512", "dim 0 = 512 with coff = 2"}));
  EXPECT_TRUE(
      failsWith(replaced(&Args::wgate, pool.make(ACL_FLOAT, {256, 1024})), ACLNN_ERR_PARAM_INVALID, {"'wgate'"}));
  EXPECT_TRUE(
      failsWith(replaced(&Args::wgate, pool.make(ACL_BF16, {256})), ACLNN_ERR_PARAM_INVALID, {"'wgate'", "2 dims"}));
  EXPECT_TRUE(
      failsWith(replaced(&Args::ape, pool.make(ACL_BF16, {4, 256})), ACLNN_ERR_PARAM_INVALID, {"'ape'", "FLOAT"}));
  EXPECT_TRUE(failsWith(replaced(&Args::ape, pool.make(ACL_FLOAT, {1024})), ACLNN_ERR_PARAM_INVALID,
                        {"'ape'", "[cmpRatio, coff*D]"}));
  EXPECT_TRUE(failsWith(replaced(&Args::seqused, pool.make(ACL_INT64, {2})), ACLNN_ERR_PARAM_INVALID,
                        {"'sequsedOptional'", "INT32"}));
  EXPECT_TRUE(failsWith(replaced(&Args::startPos, pool.make(ACL_INT32, {2, 1})), ACLNN_ERR_PARAM_INVALID,
                        {"'startPosOptional'", "1 dims"}));
  EXPECT_TRUE(failsWith(replaced(&Args::table, pool.make(ACL_INT64, {2, 1})), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "INT32"}));
  build({true, ACL_BF16, 128, 2, 4, 1, 16, true, false});
  EXPECT_TRUE(failsWith(replaced(&Args::cu, pool.make(ACL_FLOAT, {3})), ACLNN_ERR_PARAM_INVALID,
                        {"'cuSeqlensOptional'", "INT32"}));
  EXPECT_TRUE(
      failsWith(replaced(&Args::cu, ints({0}, {})), ACLNN_ERR_PARAM_INVALID, {"'cuSeqlensOptional'", "shape [B + 1]"}));
}

TEST_P(CompressorChecks, StateCacheAndTableRanks) {
  aclTensor* doubles = pool.make(ACL_DOUBLE, {5, 16, 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = doubles; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "FLOAT", "DOUBLE"}));
  aclTensor* flat = pool.make(ACL_FLOAT, {5, 16 * 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = flat; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "[block_num, block_size, 2*coff*D]"}));
  aclTensor* bigBlocks = pool.make(ACL_FLOAT, {2, 1025, 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = bigBlocks; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "block_size (dim 1) in [1, 1024]", "block_size = 1025"}));
  const aclTensor* table1d = ints({2}, {1, 2});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.table = table1d; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "cacheMode 1: [B, ceil(Smax / block_size)]"}));
  if (!is950()) return;
  build({false, ACL_BF16, 128, 2, 4, 2, 16, true, false});
  aclTensor* oneRing = pool.make(ACL_FLOAT, {1, 16, 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = oneRing; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "block_num (dim 0) >= B = 2", "one ring buffer per batch"}));
  const aclTensor* table2d = ints({2, 1}, {0, 1});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.table = table2d; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "cacheMode 2: [B]"}));
  const aclTensor* table3 = ints({3}, {0, 1, 1});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.table = table3; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "shape [2]"}));
}

TEST_P(CompressorChecks, OutputDtypesAndRanks) {
  const auto out = [&](auto field, const aclTensor* value) { return with([&](Args& x) { x.*field = value; }); };
  EXPECT_TRUE(failsWith(out(&Args::cmpKv, pool.make(ACL_FLOAT, {2, 2, 128})), ACLNN_ERR_PARAM_INVALID,
                        {"'cmpKvOut'", "FLOAT"}));
  EXPECT_TRUE(failsWith(out(&Args::cmpKv, pool.make(ACL_BF16, {4, 128})), ACLNN_ERR_PARAM_INVALID,
                        {"'cmpKvOut'", "3 dims (the rank of x)"}));
  EXPECT_TRUE(failsWith(out(&Args::score, pool.make(ACL_BF16, {2, 2, 8, 128})), ACLNN_ERR_PARAM_INVALID,
                        {"'softmaxScoreOut'", "FLOAT"}));
  EXPECT_TRUE(failsWith(out(&Args::score, pool.make(ACL_FLOAT, {2, 2, 1024})), ACLNN_ERR_PARAM_INVALID,
                        {"'softmaxScoreOut'", "4 dims"}));
  EXPECT_TRUE(
      failsWith(out(&Args::kv, pool.make(ACL_FLOAT16, {2, 2, 8, 128})), ACLNN_ERR_PARAM_INVALID, {"'kvOut'", "FLOAT"}));
  EXPECT_TRUE(
      failsWith(out(&Args::kv, pool.make(ACL_FLOAT, {4, 8, 128})), ACLNN_ERR_PARAM_INVALID, {"'kvOut'", "4 dims"}));
}

TEST_P(CompressorChecks, ShapesThatMustAgree) {
  const auto replaced = [&](auto field, const aclTensor* value) { return with([&](Args& x) { x.*field = value; }); };
  EXPECT_TRUE(failsWith(replaced(&Args::table, ints({3, 1}, {1, 2, 3})), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "dim 0 = B = 2", "[3, 1]"}));
  EXPECT_TRUE(failsWith(replaced(&Args::seqused, ints({3}, {1, 1, 1})), ACLNN_ERR_PARAM_INVALID,
                        {"'sequsedOptional'", "shape [2]", "[3]"}));
  EXPECT_TRUE(failsWith(replaced(&Args::startPos, ints({1}, {0})), ACLNN_ERR_PARAM_INVALID,
                        {"'startPosOptional'", "shape [2]"}));
  EXPECT_TRUE(failsWith(replaced(&Args::wkv, pool.make(ACL_BF16, {256, 2048})), ACLNN_ERR_PARAM_INVALID,
                        {"'wkv'", "shape [256, 1024]", "H of x"}));
  EXPECT_TRUE(failsWith(replaced(&Args::wgate, pool.make(ACL_BF16, {1024, 1024})), ACLNN_ERR_PARAM_INVALID,
                        {"'wgate'", "shape [256, 1024]"}));
  aclTensor* narrow = pool.make(ACL_FLOAT, {5, 16, 256});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = narrow; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "dim 2 = 2*coff*D = 512"}));
  EXPECT_TRUE(failsWith(replaced(&Args::ape, pool.make(ACL_FLOAT, {8, 256})), ACLNN_ERR_PARAM_INVALID,
                        {"'ape'", "shape [4, 256]"}));
  EXPECT_TRUE(
      failsWith(replaced(&Args::wkv, pool.make(ACL_FLOAT16, {256, 1024})), ACLNN_ERR_PARAM_INVALID, {"'wkv'", "x"}));
  EXPECT_TRUE(failsWith(replaced(&Args::wgate, pool.make(ACL_FLOAT16, {256, 1024})), ACLNN_ERR_PARAM_INVALID,
                        {"'wgate'", "x"}));
  EXPECT_TRUE(failsWith(replaced(&Args::cmpKv, pool.make(ACL_FLOAT16, {2, 2, 128})), ACLNN_ERR_PARAM_INVALID,
                        {"'cmpKvOut'", "x"}));
}

TEST_P(CompressorChecks, StateCacheStrideDim0) {
  // One block spans 16 * 512 elements.
  for (int64_t stride : {int64_t{-1}, int64_t{16 * 512 - 1}, int64_t{1} << 31}) {
    EXPECT_TRUE(failsWith(with([&](Args& x) { x.strideDim0 = stride; }), ACLNN_ERR_PARAM_INVALID,
                          {"'stateCacheStrideDim0'", "[8192, 2147483647]", "given " + std::to_string(stride)}));
  }
  EXPECT_EQ(with([](Args& x) { x.strideDim0 = 16 * 512; }).status, ACLNN_SUCCESS);
  // A padded block stride (the buffer holds it): a non-contiguous dim 0, Ascend950 only.
  aclTensor* padded = pool.make(ACL_FLOAT, {5, 16, 512}, {16 * 512 + 64, 512, 1});
  for (int64_t attribute : {int64_t{0}, int64_t{16 * 512 + 64}}) {
    const Outcome outcome = with([&](Args& x) {
      x.cache = padded;
      x.strideDim0 = attribute;
    });
    if (is950()) {
      EXPECT_EQ(outcome.status, ACLNN_SUCCESS) << outcome.message;
    } else {
      EXPECT_TRUE(failsWith(outcome, ACLNN_ERR_PARAM_INVALID,
                            {"'stateCacheRef'", "dense blocks", "only in the Ascend950 profile", GetParam()}));
    }
  }
}

TEST_P(CompressorChecks, ExactOutputShapes) {
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.cmpKv = pool.make(ACL_BF16, {2, 3, 128});
                        }),
                        ACLNN_ERR_PARAM_INVALID,
                        {"'cmpKvOut'", "shape [2, 2, 128]", "[B, ceil(S/cmpRatio), D]", "[2, 3, 128]"}));
  if (is950()) {
    EXPECT_TRUE(failsWith(with([&](Args& x) {
                            x.score = pool.make(ACL_FLOAT, {2, 2, 4, 128});
                          }),
                          ACLNN_ERR_PARAM_INVALID, {"'softmaxScoreOut'", "shape [2, 2, 8, 128]", "gradEnabled"}));
    EXPECT_TRUE(failsWith(with([&](Args& x) {
                            x.kv = pool.make(ACL_FLOAT, {2, 1, 8, 128});
                          }),
                          ACLNN_ERR_PARAM_INVALID, {"'kvOut'", "shape [2, 2, 8, 128]"}));
  }
  // Without gradEnabled the intermediates are neither written nor shape-checked.
  const aclTensor* small = pool.make(ACL_FLOAT, {1, 1, 1, 1});
  EXPECT_EQ(with([&](Args& x) {
              x.grad = false;
              x.score = x.kv = small;
            }).status,
            ACLNN_SUCCESS);
  build({true, ACL_FLOAT16, 128, 1, 4, 1, 16, false, false});  // TH: min(T, T/cr + B) = min(16, 6) rows
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.cmpKv = pool.make(ACL_FLOAT16, {16, 128});
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'cmpKvOut'", "shape [6, 128]", "[min(T, T/cmpRatio + B), D]"}));
}

TEST_P(CompressorChecks, PrivateFormatsAreRejected) {
  const aclTensor* nz = pool.make(ACL_BF16, {256, 1024}, {}, ACL_FORMAT_FRACTAL_NZ);
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.wkv = nz; }), ACLNN_ERR_PARAM_INVALID, {"'wkv'", "FRACTAL_NZ"}));
}

TEST_P(CompressorChecks, MemoryRules) {
  // cmpKvOut inside x's bytes.
  const aclTensor* alias = pool.alias(a.x, ACL_BF16, {2, 2, 128});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cmpKv = alias; }), ACLNN_ERR_PARAM_INVALID,
                        {"'cmpKvOut'", "does not overlap the input x"}));
  // The state cache is written: it may share no byte with an input.
  aclTensor* cacheOverWeights = const_cast<aclTensor*>(pool.alias(a.wkv, ACL_FLOAT, {1, 16, 512}));
  const aclTensor* table = ints({2, 1}, {0, 0});
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.cache = cacheOverWeights;
                          x.table = table;
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'stateCacheRef'", "does not overlap the input wkv"}));
  // Rows of a block that meet: the cache would write one address twice.
  aclTensor* folded = pool.make(ACL_FLOAT, {5, 16, 512}, {16 * 512, 256, 1});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = folded; }), ACLNN_ERR_PARAM_INVALID, {"'stateCacheRef'"}));
  if (is950()) {
    // Two intermediates on the same bytes: rejected with gradEnabled, ignored without.
    EXPECT_TRUE(failsWith(with([&](Args& x) { x.kv = x.score; }), ACLNN_ERR_PARAM_INVALID,
                          {"'kvOut'", "does not overlap the output softmaxScoreOut"}));
  }
  EXPECT_EQ(with([&](Args& x) {
              x.grad = false;
              x.kv = x.score;
            }).status,
            ACLNN_SUCCESS);
}

TEST_P(CompressorChecks, CuSeqlensSequsedAndStartPosValues) {
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.seqused = ints({2}, {9, 0});
                        }),
                        ACLNN_ERR_PARAM_INVALID,
                        {"'sequsedOptional'", "0 <= seqused[b] <= S = 8 for b = 0", "sequsedOptional[0] = 9"}));
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.seqused = ints({2}, {1, -1});
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'sequsedOptional'", "sequsedOptional[1] = -1"}));
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.startPos = ints({2}, {0, -3});
                        }),
                        ACLNN_ERR_PARAM_INVALID,
                        {"'startPosOptional'", "start positions >= 0", "startPosOptional[1] = -3"}));
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.startPos = ints({2}, {INT32_MAX - 4, 0});
                        }),
                        ACLNN_ERR_PARAM_INVALID,
                        {"'startPosOptional'", "<= 2147483647", "startPosOptional[0] = 2147483643 with 8 tokens"}));
  build({true, ACL_BF16, 128, 2, 4, 1, 16, false, false});
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.cu = ints({3}, {1, 8, 16});
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'cuSeqlensOptional'", "starting at 0", "cuSeqlensOptional[0] = 1"}));
  EXPECT_TRUE(
      failsWith(with([&](Args& x) {
                  x.cu = ints({3}, {0, 9, 8});
                }),
                ACLNN_ERR_PARAM_INVALID,
                {"'cuSeqlensOptional'", "non-decreasing", "cuSeqlensOptional[2] = 8 after cuSeqlensOptional[1] = 9"}));
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.cu = ints({3}, {0, 8, 17});
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'cuSeqlensOptional'", "<= T = 16", "cuSeqlensOptional[2] = 17"}));
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.seqused = ints({2}, {3, 9});
                        }),
                        ACLNN_ERR_PARAM_INVALID, {"'sequsedOptional'", "cu[b+1] - cu[b] = 8 for b = 1"}));
  // Rows after cu[B] belong to no batch: accepted.
  EXPECT_EQ(with([&](Args& x) {
              x.cu = ints({3}, {0, 3, 12});
              x.seqused = ints({2}, {3, 7});
            }).status,
            ACLNN_SUCCESS);
}

TEST_P(CompressorChecks, BlockTableEntriesTheCallUses) {
  // Batch 1 (start_pos 4, 7 tokens) reads positions 0..3 (coff 2) and writes 4..10 through column 0.
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.table = ints({2, 1}, {1, 5});
                        }),
                        ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "entries in [0, block_num = 5) where the call reads",
                         "stateBlockTableOptional[1][0] = 5, used by batch 1 at position 0"}));
  // Writes through 0 or an entry outside [0, block_num) are skipped (upstream's golden; upstream's own example has
  // block_num 1 and entry 1); entries of columns no position reaches are never looked at.
  EXPECT_EQ(with([&](Args& x) { x.table = ints({2, 1}, {-1, 2}); }).status, ACLNN_SUCCESS);
  EXPECT_EQ(with([&](Args& x) { x.table = ints({2, 1}, {0, 0}); }).status, ACLNN_SUCCESS);
  EXPECT_EQ(with([&](Args& x) { x.table = ints({2, 3}, {1, 99, -7, 2, 99, -7}); }).status, ACLNN_SUCCESS);
  // Too few columns: with block_size 4 batch 1 reaches position 10, column 2.
  aclTensor* small = pool.make(ACL_FLOAT, {5, 4, 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = small; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "at least 2 columns (batch 0 uses positions up to 7", "[2, 1]"}));
  if (!is950()) return;
  build({false, ACL_BF16, 128, 2, 4, 2, 16, true, false});
  EXPECT_TRUE(failsWith(with([&](Args& x) {
                          x.table = ints({2}, {0, 2});
                        }),
                        ACLNN_ERR_PARAM_INVALID,
                        {"'stateBlockTableOptional'", "[0, block_num = 2)", "stateBlockTableOptional[1] = 2"}));
  // The ring: block_size >= coff*cr + S - 1 = 15 (BSH S = 8).
  aclTensor* shortRing = pool.make(ACL_FLOAT, {2, 14, 512});
  EXPECT_TRUE(failsWith(with([&](Args& x) { x.cache = shortRing; }), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "coff*cmpRatio + S - 1 = 15", "block_size = 14"}));
  aclTensor* exactRing = pool.make(ACL_FLOAT, {2, 15, 512});
  EXPECT_EQ(with([&](Args& x) { x.cache = exactRing; }).status, ACLNN_SUCCESS);
  build({true, ACL_BF16, 128, 1, 4, 2, 10, true, false});  // TH: S = max(seqused) = 8: 4 + 8 - 1 = 11
  EXPECT_TRUE(failsWith(call(), ACLNN_ERR_PARAM_INVALID,
                        {"'stateCacheRef'", "= 11 with S = the longest used sequence max(seqused) = 8"}));
  EXPECT_EQ(with([&](Args& x) { x.seqused = ints({2}, {7, 7}); }).status, ACLNN_SUCCESS);
}

}  // namespace
}  // namespace gradkit::test::compressor
