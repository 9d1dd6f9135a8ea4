// MhcSinkhorn and MhcSinkhornBackward results: hand-worked matrices, the Ascend950 split that fixes the saved layout,
// the SIMD kernels against the scalar ones on every FMA target this CPU runs (bit for bit), the fp64 golden (written
// from upstream's formulas) for the output, every saved step and the gradient, and the public API: the same bits for
// 1, 2, 3 and 8 threads, strided and in-place tensors equal to dense ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "core/parallel.h"
#include "golden/mhc_sinkhorn.h"
#include "hwy/aligned_allocator.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

using kernels::kSinkhornColumns;

struct Sizes {
  int64_t tokens, n, iters;
  float eps = 1e-6f;
  float spread = 3.0f;  // x uniform in [-spread, spread]
};

/** Random x and gradOutput of one problem, room for every output, and the kernels' views of them. */
struct Data {
  Sizes s;
  std::vector<float> x, gradOutput, output, normOut, sumOut, gradInput;

  explicit Data(const Sizes& sizes, uint32_t seed = 11) : s(sizes) {
    const int64_t matrices = s.tokens * s.n * s.n;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> wide(-s.spread, s.spread), unit(-1.0f, 1.0f);
    x.resize(static_cast<size_t>(matrices));
    for (float& v : x) v = wide(rng);
    gradOutput.resize(x.size());
    for (float& v : gradOutput) v = unit(rng);
    output.assign(x.size(), -7.0f);
    gradInput.assign(x.size(), -7.0f);
    normOut.assign(static_cast<size_t>(2 * s.iters * s.tokens * s.n * kSinkhornColumns), -7.0f);
    sumOut.assign(static_cast<size_t>(2 * s.iters * s.tokens * kSinkhornColumns), -7.0f);
  }

  kernels::SinkhornLayout layout() const {
    return {s.tokens, s.n, s.iters, kernels::ascend950SinkhornSplit(s.tokens, s.n)};
  }
  kernels::SinkhornProblem forward(bool saving = true) {
    return {
        layout(), s.eps, x.data(), output.data(), saving ? normOut.data() : nullptr, saving ? sumOut.data() : nullptr};
  }
  kernels::SinkhornBackwardProblem backward() {
    return {layout(), gradOutput.data(), normOut.data(), sumOut.data(), gradInput.data()};
  }
  void runAll(const kernels::SinkhornKernels& k) {
    k.forward(forward(), 0, s.tokens);
    k.backward(backward(), 0, s.tokens);
  }
  golden::SinkhornSteps<double> golden() const {
    const std::vector<double> wide(x.begin(), x.end());
    return golden::mhcSinkhorn(wide.data(), s.tokens, s.n, s.iters, static_cast<double>(s.eps));
  }
};

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(MhcSinkhornValues, EqualLogitsGiveTheUniformMatrix) {
  // Every row of softmax(0) is 1/n; with eps = 0 every column and row already sums to 1, so every step keeps 1/n.
  Data data({3, 4, 5, 0.0f});
  for (float& v : data.x) v = 0.0f;
  data.runAll(kernels::kSinkhornSimdKernels);
  for (float v : data.output) EXPECT_EQ(v, 0.25f);
  // The gradient of a constant upstream gradient through a doubly stochastic projection of equal logits is 0.
  for (float& g : data.gradOutput) g = 1.0f;
  kernels::kSinkhornSimdKernels.backward(data.backward(), 0, data.s.tokens);
  for (float v : data.gradInput) EXPECT_EQ(v, 0.0f);
}

TEST(MhcSinkhornValues, OneIterationByHand) {
  // n = 4, one iteration: norm1 = (p + eps) / (colsum(p + eps) + eps). x = log of rows (1, 1, 2, 4) / 8 in every row:
  // p = (1, 1, 2, 4) / 8 per row, column sums 4 p_c + 4 eps + eps.
  Data data({1, 4, 1, 0.5f});
  const float logits[4] = {0.0f, 0.0f, std::log(2.0f), std::log(4.0f)};
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) data.x[r * 4 + c] = logits[c];
  }
  kernels::kSinkhornScalarKernels.forward(data.forward(), 0, 1);
  const double p[4] = {0.125, 0.125, 0.25, 0.5};
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      const double expected = (p[c] + 0.5) / (4 * (p[c] + 0.5) + 0.5);
      EXPECT_NEAR(data.output[r * 4 + c], expected, 2e-7) << r << "," << c;
    }
  }
}

TEST(MhcSinkhornValues, Ascend950SplitKnownAnswers) {
  // 64 cores, 256 KiB unified buffer: T / 64 tokens per core, one tile while it fits (upstream's tiling).
  const auto split = [](int64_t t, int64_t n) { return kernels::ascend950SinkhornSplit(t, n); };
  EXPECT_EQ(split(4096, 4).coreTokens, 64);
  EXPECT_EQ(split(4096, 4).usedCores, 64);
  EXPECT_EQ(split(4096, 4).tileTokens, 64);
  EXPECT_EQ(split(128, 4).coreTokens, 2);  // the backward's tile (2) is smaller than the forward's (8)
  EXPECT_EQ(split(128, 4).tileTokens, 2);
  EXPECT_EQ(split(1024, 4).tileTokens, 16);
  EXPECT_EQ(split(100, 6).coreTokens, 2);
  EXPECT_EQ(split(100, 6).usedCores, 50);
  // 1563 tokens per core of n = 8 take 1088 bytes each; 130656 bytes of buffer hold 120 (a multiple of 8).
  EXPECT_EQ(split(100000, 8).coreTokens, 1563);
  EXPECT_EQ(split(100000, 8).tileTokens, 120);
  EXPECT_EQ(split(1, 8).tileTokens, 1);
}

TEST(MhcSinkhornValues, LayoutPlacesEveryStepOfEveryToken) {
  // T = 200, n = 6: 4 tokens per core, 50 cores; 100000 tokens of n = 8 (checked on a sample) span tiles of 120
  // plus a tail. Every (token, step, row) row and every sum lands on its own element, inside the buffers.
  for (const Sizes& s : {Sizes{200, 6, 3}, Sizes{100000, 8, 1}}) {
    Data data(s);
    const kernels::SinkhornLayout layout = data.layout();
    std::vector<int> hits(data.normOut.size() + data.sumOut.size(), 0);
    const int64_t stride = s.tokens > 1000 ? 97 : 1;
    for (int64_t t = 0; t < s.tokens; t += stride) {
      const kernels::SinkhornSpot spot = layout.spotOf(t);
      for (int64_t k = 0; k < 2 * s.iters; ++k) {
        for (int64_t r = 0; r < s.n; ++r) {
          for (int64_t c = 0; c < kSinkhornColumns; ++c) ++hits[static_cast<size_t>(layout.normRow(spot, k, r) + c)];
        }
        const size_t sums = data.normOut.size();
        if (k % 2 == 1) {
          for (int64_t c = 0; c < kSinkhornColumns; ++c) ++hits[sums + layout.columnSums(spot, k) + c];
        } else {
          for (int64_t r = 0; r < kSinkhornColumns; ++r) ++hits[sums + layout.rowSum(spot, k, r)];
        }
      }
    }
    int64_t covered = 0;
    for (int h : hits) {
      ASSERT_LE(h, 1);
      covered += h;
    }
    if (stride == 1) {
      EXPECT_EQ(covered, static_cast<int64_t>(hits.size()));
    }
  }
}

TEST(MhcSinkhornValues, SimdMatchesScalarOnEveryTarget) {
  for (const Sizes& s : {Sizes{5, 4, 20}, Sizes{19, 6, 3}, Sizes{9, 8, 1}, Sizes{130, 4, 2}, Sizes{3, 8, 100},
                         Sizes{7, 6, 20, 0.0f, 60.0f}}) {
    Data scalar(s);
    scalar.runAll(kernels::kSinkhornScalarKernels);
    forEachFmaTarget([&](int64_t target) {
      Data simd(s);
      simd.runAll(kernels::kSinkhornSimdKernels);
      const std::string where = "target " + std::string(hwy::TargetName(target)) + ", T " + std::to_string(s.tokens) +
                                ", n " + std::to_string(s.n) + ", iters " + std::to_string(s.iters);
      EXPECT_TRUE(sameBits(simd.output, scalar.output)) << where;
      EXPECT_TRUE(sameBits(simd.normOut, scalar.normOut)) << where;
      EXPECT_TRUE(sameBits(simd.sumOut, scalar.sumOut)) << where;
      EXPECT_TRUE(sameBits(simd.gradInput, scalar.gradInput)) << where;
      Data unsaved(s);  // without saved steps: the same output
      kernels::kSinkhornSimdKernels.forward(unsaved.forward(false), 0, s.tokens);
      EXPECT_TRUE(sameBits(unsaved.output, scalar.output)) << where;
    });
  }
}

TEST(MhcSinkhornValues, StreamingStoresGiveTheSameBits) {
  // The plan asks for non-temporal stores of saved steps of 16 MB and more; the kernel takes them where normOut and
  // sumOut are 32-byte aligned. Here on aligned buffers, every FMA target, against the scalar kernels.
  for (const Sizes& s : {Sizes{70, 4, 3}, Sizes{9, 8, 2}}) {
    Data reference(s);
    reference.runAll(kernels::kSinkhornScalarKernels);
    forEachFmaTarget([&](int64_t target) {
      Data data(s);
      auto normOut = hwy::AllocateAligned<float>(data.normOut.size());
      auto sumOut = hwy::AllocateAligned<float>(data.sumOut.size());
      kernels::SinkhornProblem forward = data.forward();
      forward.normOut = normOut.get();
      forward.sumOut = sumOut.get();
      forward.streamSaved = true;
      kernels::kSinkhornSimdKernels.forward(forward, 0, s.tokens);
      const std::string where = std::string(hwy::TargetName(target)) + ", n " + std::to_string(s.n);
      EXPECT_TRUE(sameBits(data.output, reference.output)) << where;
      EXPECT_TRUE(sameBits(std::vector<float>(normOut.get(), normOut.get() + data.normOut.size()), reference.normOut))
          << where;
      EXPECT_TRUE(sameBits(std::vector<float>(sumOut.get(), sumOut.get() + data.sumOut.size()), reference.sumOut))
          << where;
    });
  }
}

TEST(MhcSinkhornValues, MatchFp64GoldenInEveryStep) {
  for (const Sizes& s : {Sizes{37, 4, 20}, Sizes{21, 6, 7}, Sizes{16, 8, 20}, Sizes{8, 4, 100}, Sizes{5, 8, 1}}) {
    Data data(s);
    data.runAll(kernels::kSinkhornSimdKernels);
    const golden::SinkhornSteps<double> gold = data.golden();
    const kernels::SinkhornLayout layout = data.layout();
    const int64_t n = s.n;
    double worstNorm = 0, worstSum = 0;
    for (int64_t t = 0; t < s.tokens; ++t) {
      const kernels::SinkhornSpot spot = layout.spotOf(t);
      for (int64_t k = 0; k < 2 * s.iters; ++k) {
        for (int64_t r = 0; r < n; ++r) {
          const float* row = data.normOut.data() + layout.normRow(spot, k, r);
          for (int64_t c = 0; c < kSinkhornColumns; ++c) {
            if (c >= n) {
              ASSERT_EQ(row[c], 0.0f) << "padded column, step " << k;
              continue;
            }
            const double expected = gold.norm[static_cast<size_t>(((k * s.tokens + t) * n + r) * n + c)];
            worstNorm = std::max(worstNorm, std::fabs(row[c] - expected) / expected);
          }
        }
        for (int64_t i = 0; i < kSinkhornColumns; ++i) {
          const float got = data.sumOut[layout.stepSum(spot, k, i)];
          if (k == 0 || i >= n) {
            ASSERT_EQ(got, 0.0f) << "step " << k << ", sum " << i;
            continue;
          }
          const double expected = gold.sum[static_cast<size_t>((k * s.tokens + t) * n + i)];
          worstSum = std::max(worstSum, std::fabs(got - expected) / expected);
        }
      }
    }
    // fp32 steps each round a few times; 200 steps of them stay far below 1e-4 relative.
    EXPECT_LT(worstNorm, 2e-5) << "n " << n << ", iters " << s.iters;
    EXPECT_LT(worstSum, 2e-5) << "n " << n << ", iters " << s.iters;
    double worstOut = 0;
    for (size_t i = 0; i < data.output.size(); ++i) {
      worstOut = std::max(worstOut, std::fabs(data.output[i] - gold.output[i]) / gold.output[i]);
    }
    EXPECT_LT(worstOut, 2e-5);

    const std::vector<double> g(data.gradOutput.begin(), data.gradOutput.end());
    const std::vector<double> gradGold = golden::mhcSinkhornBackward(gold, g.data(), s.tokens, n, s.iters);
    double scale = 0, worstGrad = 0;
    for (double v : gradGold) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < gradGold.size(); ++i) {
      worstGrad = std::max(worstGrad, std::fabs(data.gradInput[i] - gradGold[i]) / scale);
    }
    EXPECT_LT(worstGrad, 2e-5) << "n " << n << ", iters " << s.iters;
  }
}

TEST(MhcSinkhornValues, TwentyIterationsGiveADoublyStochasticMatrix) {
  Data data({64, 6, 20, 1e-6f, 1.0f});
  kernels::kSinkhornSimdKernels.forward(data.forward(false), 0, data.s.tokens);
  const int64_t n = data.s.n;
  for (int64_t t = 0; t < data.s.tokens; ++t) {
    for (int64_t i = 0; i < n; ++i) {
      double row = 0, column = 0;
      for (int64_t j = 0; j < n; ++j) {
        row += data.output[(t * n + i) * n + j];
        column += data.output[(t * n + j) * n + i];
      }
      EXPECT_NEAR(column, 1.0, 1e-5);  // the last step divides by the column sums
      EXPECT_NEAR(row, 1.0, 1e-4);
    }
  }
}

/** Both entry points through the API; `strided`: x, gradOutput, normOut and out as views with every stride doubled. */
void runApi(Data& data, bool strided, bool inPlace = false) {
  const Sizes& s = data.s;
  const std::vector<int64_t> matrices = {s.tokens, s.n, s.n};
  const std::vector<int64_t> normShape = {static_cast<int64_t>(data.normOut.size())};
  const std::vector<int64_t> sumShape = {static_cast<int64_t>(data.sumOut.size())};
  std::vector<float> xWide(data.x.size() * 2), gWide(data.x.size() * 2), normWide(data.normOut.size() * 2),
      outWide(data.x.size() * 2);
  for (size_t i = 0; i < data.x.size(); ++i) {
    xWide[2 * i] = data.x[i];
    gWide[2 * i] = data.gradOutput[i];
  }
  const auto view = [&](std::vector<float>& dense, std::vector<float>& wide, const std::vector<int64_t>& shape) {
    if (!strided) return makeView(dense.data(), ACL_FLOAT, shape);
    std::vector<int64_t> strides = rowMajorStrides(shape);
    for (int64_t& stride : strides) stride *= 2;
    return makeView(wide.data(), ACL_FLOAT, shape, strides, 0, static_cast<int64_t>(wide.size()));
  };
  TensorPtr x = view(data.x, xWide, matrices), g = view(data.gradOutput, gWide, matrices);
  TensorPtr output = inPlace ? view(data.x, xWide, matrices) : makeView(data.output.data(), ACL_FLOAT, matrices);
  TensorPtr normOut = view(data.normOut, normWide, normShape);
  TensorPtr sumOut = makeView(data.sumOut.data(), ACL_FLOAT, sumShape);
  TensorPtr out = inPlace ? view(data.gradOutput, gWide, matrices) : view(data.gradInput, outWide, matrices);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnMhcSinkhornGetWorkspaceSize(x.get(), s.eps, s.iters, output.get(), normOut.get(), sumOut.get(), &size,
                                             &executor),
            0)
      << aclGetRecentErrMsg();
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnMhcSinkhorn(workspace.data(), size, executor, nullptr), 0) << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);
  ASSERT_EQ(aclnnMhcSinkhornBackwardGetWorkspaceSize(g.get(), normOut.get(), sumOut.get(), out.get(), &size, &executor),
            0)
      << aclGetRecentErrMsg();
  workspace.assign(size, 0);
  ASSERT_EQ(aclnnMhcSinkhornBackward(workspace.data(), size, executor, nullptr), 0) << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);
  const auto compact = [&](const std::vector<float>& wide, std::vector<float>& dense) {
    for (size_t i = 0; i < dense.size(); ++i) dense[i] = wide[2 * i];
  };
  if (inPlace) {
    if (strided) {
      compact(xWide, data.output);
      compact(gWide, data.gradInput);
    } else {
      data.output = data.x;
      data.gradInput = data.gradOutput;
    }
  } else if (strided) {
    compact(outWide, data.gradInput);
  }
  if (strided) compact(normWide, data.normOut);
}

TEST(MhcSinkhornValues, ApiBitsForAnyThreadCountStridedAndInPlace) {
  const Sizes s{300, 6, 20};
  Data reference(s);
  reference.runAll(kernels::kSinkhornScalarKernels);
  const int saved = threadCount();
  for (int threads : {1, 2, 3, 8}) {
    setThreadCount(threads);
    for (bool strided : {false, true}) {
      for (bool inPlace : {false, true}) {
        Data api(s);
        runApi(api, strided, inPlace);
        const std::string where =
            std::to_string(threads) + " threads" + (strided ? ", strided" : "") + (inPlace ? ", in place" : "");
        EXPECT_TRUE(sameBits(api.output, reference.output)) << where;
        EXPECT_TRUE(sameBits(api.normOut, reference.normOut)) << where;
        EXPECT_TRUE(sameBits(api.sumOut, reference.sumOut)) << where;
        EXPECT_TRUE(sameBits(api.gradInput, reference.gradInput)) << where;
      }
    }
  }
  setThreadCount(saved);
}

TEST(MhcSinkhornValues, BackwardIgnoresWhatPaddingHolds) {
  // The NPU leaves stale buffer contents in padded rows of the row sums; the backward must not read them.
  Data clean({40, 4, 3});
  clean.runAll(kernels::kSinkhornSimdKernels);
  Data dirty = clean;
  const kernels::SinkhornLayout layout = dirty.layout();
  for (int64_t t = 0; t < 40; ++t) {
    const kernels::SinkhornSpot spot = layout.spotOf(t);
    for (int64_t k = 0; k < 6; ++k) {
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t c = 4; c < kSinkhornColumns; ++c) dirty.normOut[layout.normRow(spot, k, r) + c] = 1e30f;
      }
      for (int64_t i = 4; i < kSinkhornColumns; ++i) {
        dirty.sumOut[layout.stepSum(spot, k, i)] = NAN;
      }
    }
  }
  dirty.gradInput.assign(dirty.gradInput.size(), -1.0f);
  for (const kernels::SinkhornKernels* k : {&kernels::kSinkhornSimdKernels, &kernels::kSinkhornScalarKernels}) {
    k->backward(dirty.backward(), 0, 40);
    EXPECT_TRUE(sameBits(dirty.gradInput, clean.gradInput));
  }
}

}  // namespace
}  // namespace gradkit::test
