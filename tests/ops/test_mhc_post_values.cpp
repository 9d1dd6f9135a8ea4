// MhcPost and MhcPostBackward results: a hand-worked token, the SIMD kernels against the scalar ones on every FMA
// target this CPU runs (bit for bit: they keep one order of operations), the fp64 golden (written from upstream's
// formulas) for N = 4 / 6 / 8, fp16 / bf16, D with and without a tail, with and without hRes, and the public API:
// the same bits for 1, 2, 3 and 8 threads, strided inputs and outputs equal to dense ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "core/parallel.h"
#include "core/tile_path.h"
#include "golden/mhc_post.h"
#include "gradkit/float_convert.h"
#include "hwy/aligned_allocator.h"
#include "ops/mhc/kernels/mhc_post_kernel.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

using kernels::MhcPostBackwardProblem;
using kernels::MhcPostProblem;

uint16_t toBits(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}
float fromBits(aclDataType dtype, uint16_t bits) {
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

struct Sizes {
  int64_t tokens, streams, hidden;
  aclDataType dtype = ACL_BF16;
  bool hRes = true;
  double scale = 1.0;  // of the 16-bit inputs: 2^-130 makes BF16 denormals, and fp32 denormal sums
};

/** Random inputs of one problem, 16-bit tensors as bits, and room for every output. */
struct Data {
  Sizes s;
  std::vector<uint16_t> x, hOut, gradOutput, out, gradX, gradHOut;
  std::vector<float> hRes, hPost, gradHRes, gradHPost;

  explicit Data(const Sizes& sizes, uint32_t seed = 7) : s(sizes) {
    const int64_t t = s.tokens, n = s.streams, d = s.hidden;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> wide(-2.0f, 2.0f), unit(0.0f, 1.0f);
    const auto bits = [&](int64_t count) {
      std::vector<uint16_t> v(static_cast<size_t>(count));
      for (uint16_t& b : v) b = toBits(s.dtype, static_cast<float>(wide(rng) * s.scale));
      return v;
    };
    x = bits(t * n * d);
    hOut = bits(t * d);
    gradOutput = bits(t * n * d);
    hRes.resize(static_cast<size_t>(t * n * n));
    for (float& v : hRes) v = unit(rng) / static_cast<float>(n);
    hPost.resize(static_cast<size_t>(t * n));
    for (float& v : hPost) v = 2.0f * unit(rng);
    out.assign(x.size(), 0);
    gradX.assign(x.size(), 0);
    gradHOut.assign(hOut.size(), 0);
    gradHRes.assign(hRes.size(), 0.0f);
    gradHPost.assign(hPost.size(), 0.0f);
  }

  bool bf16Convert = false;  // the kernels' VCVTNEPS2BF16 path (where the CPU has it)

  MhcPostProblem forward() {
    MhcPostProblem p{s.tokens,    s.streams,    s.hidden,  s.dtype, x.data(), s.hRes ? hRes.data() : nullptr,
                     hOut.data(), hPost.data(), out.data()};
    p.bf16Convert = bf16Convert;
    return p;
  }
  MhcPostBackwardProblem backward() {
    MhcPostBackwardProblem p{s.tokens,
                             s.streams,
                             s.hidden,
                             s.dtype,
                             gradOutput.data(),
                             x.data(),
                             s.hRes ? hRes.data() : nullptr,
                             hOut.data(),
                             hPost.data(),
                             gradX.data(),
                             gradHRes.data(),
                             gradHOut.data(),
                             gradHPost.data()};
    p.bf16Convert = bf16Convert;
    return p;
  }
  void runAll(const kernels::MhcPostKernels& k) {
    k.forward(forward(), 0, s.tokens);
    k.backward(backward(), 0, s.tokens);
  }
  std::vector<double> widened(const std::vector<uint16_t>& v) const {
    std::vector<double> w(v.size());
    for (size_t i = 0; i < v.size(); ++i) w[i] = fromBits(s.dtype, v[i]);
    return w;
  }
};

TEST(MhcPostValues, HandWorkedToken) {
  // One token, N = 4, D = 2: out[j] = hPost[j] * hOut + sum_i hRes[i][j] * x[i]; every value exact in bf16.
  Data data({1, 4, 2, ACL_BF16, true});
  const float x[4][2] = {{1, 2}, {3, 4}, {-1, 0.5f}, {0, 8}};
  for (int i = 0; i < 4; ++i) {
    for (int e = 0; e < 2; ++e) data.x[i * 2 + e] = floatToBf16(x[i][e]);
  }
  data.hOut = {floatToBf16(1.0f), floatToBf16(-2.0f)};
  data.hPost = {1.0f, 0.5f, 0.0f, 2.0f};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) data.hRes[i * 4 + j] = i == j ? 1.0f : (j == 0 ? 0.5f : 0.0f);
  }
  kernels::kMhcPostSimdKernels.forward(data.forward(), 0, 1);
  // Column 0 takes 0.5 of every other stream: x0 + 0.5 (x1 + x2 + x3) + hOut.
  EXPECT_EQ(bf16ToFloat(data.out[0]), 1 + 0.5f * (3 - 1 + 0) + 1.0f);
  EXPECT_EQ(bf16ToFloat(data.out[1]), 2 + 0.5f * (4 + 0.5f + 8) - 2.0f);
  EXPECT_EQ(bf16ToFloat(data.out[2]), 3 + 0.5f * 1.0f);
  EXPECT_EQ(bf16ToFloat(data.out[3]), 4 + 0.5f * -2.0f);
  EXPECT_EQ(bf16ToFloat(data.out[4]), -1.0f);
  EXPECT_EQ(bf16ToFloat(data.out[7]), 8 + 2.0f * -2.0f);

  data.gradOutput = data.x;  // g = x: gradHRes = x x^T, gradHPost[j] = x[j] . hOut
  kernels::kMhcPostSimdKernels.backward(data.backward(), 0, 1);
  EXPECT_EQ(data.gradHRes[0 * 4 + 1], 1 * 3 + 2 * 4);
  EXPECT_EQ(data.gradHRes[3 * 4 + 3], 64.0f);
  EXPECT_EQ(data.gradHPost[1], 3 * 1 + 4 * -2);
  // gradX[i] = sum_j hRes[i][j] g[j]: row 0 of hRes is (1, 0, 0, 0), row 1 is (0.5, 1, 0, 0).
  EXPECT_EQ(bf16ToFloat(data.gradX[0]), 1.0f);
  EXPECT_EQ(bf16ToFloat(data.gradX[2]), 0.5f * 1 + 3);
  // gradHOut = sum_j hPost[j] g[j] = 1 + 0.5 * 3 + 0 + 2 * 0 for d = 0.
  EXPECT_EQ(bf16ToFloat(data.gradHOut[0]), 2.5f);
}

TEST(MhcPostValues, SimdMatchesScalarOnEveryTarget) {
  // Each FMA target this CPU runs, with and (where the CPU has AVX512_BF16) without the one-instruction BF16
  // rounding; the 2^-130 and 2^-128 cases make BF16 denormal inputs and fp32 denormal results, which that
  // instruction flushes (the kernels then round those vectors the portable way).
  const bool converts = cpuMatrixFeatures().avx512bf16;
  for (const Sizes& s :
       {Sizes{5, 4, 64, ACL_BF16, true}, Sizes{3, 4, 19, ACL_FLOAT16, true}, Sizes{4, 6, 1000, ACL_BF16, true},
        Sizes{2, 8, 37, ACL_FLOAT16, false}, Sizes{3, 8, 128, ACL_BF16, false}, Sizes{1, 4, 1, ACL_BF16, true},
        Sizes{4, 4, 256, ACL_BF16, true, 0x1p-130}, Sizes{4, 4, 64, ACL_BF16, false, 0x1p-128}}) {
    Data scalar(s);
    scalar.runAll(kernels::kMhcPostScalarKernels);
    forEachFmaTarget([&](int64_t target) {
      for (bool convert : {false, converts}) {
        Data simd(s);
        simd.bf16Convert = convert;
        simd.runAll(kernels::kMhcPostSimdKernels);
        const std::string where = "target " + std::string(hwy::TargetName(target)) + ", N " +
                                  std::to_string(s.streams) + ", D " + std::to_string(s.hidden) +
                                  (convert ? ", VCVTNEPS2BF16" : "") + ", scale " + std::to_string(s.scale);
        EXPECT_EQ(simd.out, scalar.out) << where;
        EXPECT_EQ(simd.gradX, scalar.gradX) << where;
        EXPECT_EQ(simd.gradHOut, scalar.gradHOut) << where;
        EXPECT_EQ(simd.gradHRes, scalar.gradHRes) << where;
        EXPECT_EQ(simd.gradHPost, scalar.gradHPost) << where;
      }
    });
  }
}

/** One ulp of the 16-bit dtype at |value| (the spacing above it). */
double ulpAt(aclDataType dtype, double value) {
  const int mantissa = dtype == ACL_FLOAT16 ? 10 : 7;
  const double magnitude = std::max(std::fabs(value), dtype == ACL_FLOAT16 ? 0x1p-14 : 0x1p-126);
  return std::ldexp(1.0, std::ilogb(magnitude) - mantissa);
}

/** Every 16-bit output within one ulp of the fp64 golden; fp32 outputs normwise within 1e-5. */
void expectNearGolden(const Data& data, const std::vector<uint16_t>& got, const std::vector<double>& golden,
                      const char* name) {
  ASSERT_EQ(got.size(), golden.size()) << name;
  for (size_t i = 0; i < got.size(); ++i) {
    const double value = fromBits(data.s.dtype, got[i]);
    ASSERT_LE(std::fabs(value - golden[i]), ulpAt(data.s.dtype, golden[i])) << name << "[" << i << "]";
  }
}

void expectNormwise(const std::vector<float>& got, const std::vector<double>& golden, const char* name) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    error += (got[i] - golden[i]) * (got[i] - golden[i]);
    norm += golden[i] * golden[i];
  }
  EXPECT_LE(std::sqrt(error), 1e-5 * std::sqrt(norm)) << name;
}

TEST(MhcPostValues, MatchFp64Golden) {
  for (const Sizes& s :
       {Sizes{9, 4, 256, ACL_BF16, true}, Sizes{9, 4, 256, ACL_FLOAT16, true}, Sizes{4, 6, 333, ACL_BF16, true},
        Sizes{3, 8, 128, ACL_FLOAT16, true}, Sizes{5, 4, 100, ACL_BF16, false}, Sizes{5, 8, 64, ACL_FLOAT16, false}}) {
    Data data(s, 11);
    data.runAll(kernels::kMhcPostSimdKernels);
    const std::vector<double> x = data.widened(data.x), hOut = data.widened(data.hOut),
                              g = data.widened(data.gradOutput);
    const std::vector<double> hRes(data.hRes.begin(), data.hRes.end()), hPost(data.hPost.begin(), data.hPost.end());
    golden::MhcPostInputs<double> in{s.tokens,    s.streams,   s.hidden, x.data(), s.hRes ? hRes.data() : nullptr,
                                     hOut.data(), hPost.data()};
    SCOPED_TRACE("N " + std::to_string(s.streams) + " D " + std::to_string(s.hidden) + (s.hRes ? "" : " no hRes"));
    expectNearGolden(data, data.out, golden::mhcPost(in), "out");
    const golden::MhcPostGradients<double> grads = golden::mhcPostBackward(in, g.data());
    expectNearGolden(data, data.gradX, grads.gradX, "gradX");
    expectNearGolden(data, data.gradHOut, grads.gradHOut, "gradHOut");
    expectNormwise(data.gradHRes, grads.gradHRes, "gradHRes");
    expectNormwise(data.gradHPost, grads.gradHPost, "gradHPost");
  }
}

/** Runs both entry points on `data` through the API; outputs optionally through strided views (every stride x2). */
void runApi(Data& data, bool stridedOutputs = false) {
  const Sizes& s = data.s;
  const std::vector<int64_t> streams = {s.tokens, s.streams, s.hidden}, square = {s.tokens, s.streams, s.streams},
                             hidden = {s.tokens, s.hidden}, weights = {s.tokens, s.streams};
  // Strided outputs live in buffers twice the size; copied back densely after the call.
  std::vector<uint16_t> outWide(data.out.size() * 2), gradXWide(data.gradX.size() * 2),
      gradHOutWide(data.gradHOut.size() * 2);
  std::vector<float> gradHResWide(data.gradHRes.size() * 2), gradHPostWide(data.gradHPost.size() * 2);
  const auto output = [&](auto& dense, auto& wide, aclDataType dtype, const std::vector<int64_t>& shape) {
    if (!stridedOutputs) return makeView(dense.data(), dtype, shape);
    std::vector<int64_t> strides = rowMajorStrides(shape);
    for (int64_t& stride : strides) stride *= 2;
    return makeView(wide.data(), dtype, shape, strides, 0, static_cast<int64_t>(wide.size()));
  };
  TensorPtr x = makeView(data.x.data(), s.dtype, streams), hOut = makeView(data.hOut.data(), s.dtype, hidden);
  TensorPtr g = makeView(data.gradOutput.data(), s.dtype, streams);
  TensorPtr hRes = makeView(data.hRes.data(), ACL_FLOAT, square),
            hPost = makeView(data.hPost.data(), ACL_FLOAT, weights);
  TensorPtr out = output(data.out, outWide, s.dtype, streams), gradX = output(data.gradX, gradXWide, s.dtype, streams);
  TensorPtr gradHRes = output(data.gradHRes, gradHResWide, ACL_FLOAT, square);
  TensorPtr gradHOut = output(data.gradHOut, gradHOutWide, s.dtype, hidden);
  TensorPtr gradHPost = output(data.gradHPost, gradHPostWide, ACL_FLOAT, weights);
  const aclTensor* hResArg = s.hRes ? hRes.get() : nullptr;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnMhcPostGetWorkspaceSize(x.get(), hResArg, hOut.get(), hPost.get(), out.get(), &size, &executor), 0)
      << aclGetRecentErrMsg();
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnMhcPost(workspace.data(), size, executor, nullptr), 0) << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);  // the run reads the workspace: keep it until then
  ASSERT_EQ(aclnnMhcPostBackwardGetWorkspaceSize(g.get(), x.get(), hResArg, hOut.get(), hPost.get(), gradX.get(),
                                                 gradHRes.get(), gradHOut.get(), gradHPost.get(), &size, &executor),
            0)
      << aclGetRecentErrMsg();
  workspace.assign(size, 0);
  ASSERT_EQ(aclnnMhcPostBackward(workspace.data(), size, executor, nullptr), 0) << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);
  if (stridedOutputs) {
    const auto compact = [](const auto& wide, auto& dense) {
      for (size_t i = 0; i < dense.size(); ++i) dense[i] = wide[2 * i];  // every stride doubled: element i at 2i
    };
    compact(outWide, data.out);
    compact(gradXWide, data.gradX);
    compact(gradHResWide, data.gradHRes);
    compact(gradHOutWide, data.gradHOut);
    compact(gradHPostWide, data.gradHPost);
  }
}

TEST(MhcPostValues, ApiBitsForAnyThreadCountAndStridedOutputs) {
  const Sizes s{67, 4, 256, ACL_BF16, true};
  Data reference(s);
  reference.runAll(kernels::kMhcPostScalarKernels);
  const int saved = threadCount();
  for (int threads : {1, 2, 3, 8}) {
    setThreadCount(threads);
    for (bool strided : {false, true}) {
      Data api(s);
      runApi(api, strided);
      const std::string where = std::to_string(threads) + " threads" + (strided ? ", strided outputs" : "");
      EXPECT_EQ(api.out, reference.out) << where;
      EXPECT_EQ(api.gradX, reference.gradX) << where;
      EXPECT_EQ(api.gradHRes, reference.gradHRes) << where;
      EXPECT_EQ(api.gradHOut, reference.gradHOut) << where;
      EXPECT_EQ(api.gradHPost, reference.gradHPost) << where;
    }
  }
  setThreadCount(saved);
}

TEST(MhcPostValues, StreamingStoresGiveTheSameBits) {
  // The plan asks for non-temporal stores for outputs of 16 MB and more; the kernels take them where the rows are
  // 64-byte aligned, and the AVX-512 backward writes whole lines (two chunks, one VCVTNE2PS2BF16 with AVX512_BF16)
  // where D is a multiple of 32. Here on aligned copies of the outputs, every FMA target, with and without the BF16
  // instruction, against the scalar kernels: half lines (D = 272), fp16, no hRes, N = 8, BF16 denormals (2^-130,
  // which the instruction flushes), and a token of zero gradients (lines of +-0 that are not denormal).
  const bool converts = cpuMatrixFeatures().avx512bf16;
  for (const Sizes& s : {Sizes{9, 4, 256, ACL_BF16, true}, Sizes{3, 4, 272, ACL_BF16, true},
                         Sizes{3, 4, 256, ACL_FLOAT16, true}, Sizes{3, 4, 64, ACL_BF16, false},
                         Sizes{2, 8, 96, ACL_BF16, true}, Sizes{4, 4, 256, ACL_BF16, true, 0x1p-130}}) {
    Data reference(s);
    std::fill(reference.gradOutput.begin(), reference.gradOutput.begin() + s.streams * s.hidden, 0);
    reference.runAll(kernels::kMhcPostScalarKernels);
    forEachFmaTarget([&](int64_t target) {
      for (bool convert : {false, converts}) {
        Data data(s);
        data.gradOutput = reference.gradOutput;
        auto out = hwy::AllocateAligned<uint16_t>(data.out.size());
        auto gradX = hwy::AllocateAligned<uint16_t>(data.gradX.size());
        auto gradHOut = hwy::AllocateAligned<uint16_t>(data.gradHOut.size());
        data.bf16Convert = convert;
        MhcPostProblem forward = data.forward();
        forward.out = out.get();
        forward.streamOut = true;
        kernels::kMhcPostSimdKernels.forward(forward, 0, s.tokens);
        MhcPostBackwardProblem backward = data.backward();
        backward.gradX = gradX.get();
        backward.gradHOut = gradHOut.get();
        backward.streamGrads = true;
        kernels::kMhcPostSimdKernels.backward(backward, 0, s.tokens);
        const std::string where = std::string(hwy::TargetName(target)) + ", N " + std::to_string(s.streams) + ", D " +
                                  std::to_string(s.hidden) + (convert ? ", AVX512_BF16" : "") + ", scale " +
                                  std::to_string(s.scale);
        EXPECT_EQ(std::vector<uint16_t>(out.get(), out.get() + data.out.size()), reference.out) << where;
        EXPECT_EQ(std::vector<uint16_t>(gradX.get(), gradX.get() + data.gradX.size()), reference.gradX) << where;
        EXPECT_EQ(std::vector<uint16_t>(gradHOut.get(), gradHOut.get() + data.gradHOut.size()), reference.gradHOut)
            << where;
        EXPECT_EQ(data.gradHRes, reference.gradHRes) << where;
        EXPECT_EQ(data.gradHPost, reference.gradHPost) << where;
      }
    });
  }
}

TEST(MhcPostValues, ApiWithoutHResIsAPlainResidual) {
  Data api({6, 8, 40, ACL_FLOAT16, false});
  runApi(api);
  for (size_t i = 0; i < api.x.size(); ++i) {
    const int64_t t = static_cast<int64_t>(i) / (8 * 40), j = (static_cast<int64_t>(i) / 40) % 8, e = i % 40;
    const float expected =
        fromBits(ACL_FLOAT16, api.x[i]) +
        fromBits(ACL_FLOAT16, api.hOut[static_cast<size_t>(t * 40 + e)]) * api.hPost[static_cast<size_t>(t * 8 + j)];
    ASSERT_EQ(api.out[i], floatToHalf(expected)) << i;
  }
  EXPECT_EQ(api.gradX, api.gradOutput);  // gradX = g, bit for bit
}

}  // namespace
}  // namespace gradkit::test
