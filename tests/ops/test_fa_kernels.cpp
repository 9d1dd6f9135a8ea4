// The flash attention kernels (faForward / faBackward) on FaProblems built by hand, against a direct fp64 loop over
// fa_semantics.h's definitions (fa_kernel_test_util.h): no mask, bands (causal, sliding window, bottom-right causal
// with fully masked rows), prefix, mask tensors (broadcast and per head, fully masked rows), pse tables (fp32, bf16,
// before / after the scale, the compressed ALiBi rows), slopes and sqrt slopes, packed and Philox dropout, GQA,
// D != DV, rope, TND batches with s1 = 0 and s2 = 0, tails, fp32 / fp16 / bf16 inputs and outputs, BSND and strided
// views. Then the bits: 1, 2 and 3 threads and the scalar table (TileGemm's scalar reference and the scalar softmax)
// give the same bytes as the SIMD table; the exp against std::exp.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gradkit/float_convert.h"
#include "ops/fa_kernel_checks.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/op_test_util.h"

namespace gradkit::test::fa {
namespace {

using kernels::kFaNoBand;

TEST(FaKernels, NoMask) { checkCase(base(), "no mask"); }

TEST(FaKernels, LargeScoresAndManyKeyBlocks) {
  FaCase c = base();
  c.lengths = {{65, 300}};
  c.range = 3.0f;  // scores up to ~50: the running max moves across key blocks
  c.scale = 0.5f;
  checkCase(c, "large scores");
}

TEST(FaKernels, GqaAndHeadDimsDiffer) {
  FaCase c = base();
  c.n1 = 4;
  c.n2 = 2;
  c.d = 40;
  c.dv = 16;
  checkCase(c, "gqa d != dv");
  c.n2 = 1;
  checkCase(c, "mqa");
}

TEST(FaKernels, Causal) {
  FaCase c = base();
  c.lengths = {{150, 150}, {70, 130}};
  c.band = true;
  c.bandRight = 0;
  checkCase(c, "causal");
}

TEST(FaKernels, SlidingWindowAndNegativeScale) {
  FaCase c = base();
  c.lengths = {{130, 140}};
  c.band = true;
  c.bandLeft = 20;
  c.bandRight = 5;
  c.scale = -0.2f;  // masking after the scale: -Inf stays -Inf
  checkCase(c, "sliding window");
}

TEST(FaKernels, ManyTilesWithSkippedBlocks) {
  FaCase c = base();
  c.lengths = {{700, 650}};  // several query and key blocks; the window skips most tiles, strips trim the rest
  c.n1 = 2;
  c.n2 = 1;
  c.d = 16;
  c.dv = 8;
  c.band = true;
  c.bandLeft = 150;
  c.bandRight = 20;
  checkCase(c, "many tiles");
}

TEST(FaKernels, BottomRightCausalHasFullyMaskedRows) {
  FaCase c = base();
  c.lengths = {{150, 70}};
  c.band = true;
  c.bandRight = 70 - 150;  // rows i < 80 keep nothing
  checkCase(c, "bottom-right causal");
}

TEST(FaKernels, Prefix) {
  FaCase c = base();
  c.lengths = {{140, 140}};
  c.band = true;
  c.bandRight = 0;
  c.prefix = 75;
  checkCase(c, "prefix");
}

TEST(FaKernels, MaskTensor) {
  FaCase c = base();
  c.maskTensor = true;
  c.maskedRowsFrom = 3;
  c.maskedRowsTo = 9;
  checkCase(c, "mask per head");
  c.maskBroadcast = true;
  c.maskDensity = 0.6;
  c.maskedRowsFrom = 64;  // a whole tile of rows (and its tail) fully masked
  c.maskedRowsTo = 70;
  checkCase(c, "mask broadcast");
  c.band = true;
  c.bandRight = 0;
  c.maskDensity = 0.1;
  checkCase(c, "mask and band");
}

TEST(FaKernels, PseTable) {
  FaCase c = base();
  c.pse = FaPseKind::Table;
  checkCase(c, "pse fp32");
  c.pseBeforeScale = true;
  c.pseDtype = ACL_BF16;
  checkCase(c, "pse bf16 before scale");
  c.pseBeforeScale = false;
  c.alibiTableRows = 16;  // rows before the table's first are read along diagonals
  c.band = true;
  c.bandRight = 0;
  checkCase(c, "pse alibi rows");
  c.lengths = {{1100, 40}};  // the 1024-row form itself: its first 76 rows read along diagonals
  c.alibiTableRows = 1024;
  c.n1 = 1;
  c.n2 = 1;
  c.d = 8;
  c.dv = 8;
  checkCase(c, "pse 1024-row alibi");
}

TEST(FaKernels, PseSlopes) {
  FaCase c = base();
  c.pse = FaPseKind::Slope;
  checkCase(c, "slope");
  c.pse = FaPseKind::SqrtSlope;
  c.pseBeforeScale = true;
  checkCase(c, "sqrt slope");
}

TEST(FaKernels, Dropout) {
  FaCase c = base();
  c.dropout = FaDropoutKind::Packed;
  checkCase(c, "packed dropout");
  c.dropout = FaDropoutKind::Philox;
  c.keepProb = 0.9f;
  checkCase(c, "philox dropout");
  c.lengths = {{230, 420}};  // a window: strips start at unaligned stream bytes, rows span several 256-byte chunks
  c.band = true;
  c.bandLeft = 60;
  c.bandRight = 290;
  checkCase(c, "philox dropout window");
}

TEST(FaKernels, Rope) {
  FaCase c = base();
  c.dRope = 8;
  c.n1 = 2;
  c.n2 = 1;
  c.tnd = true;
  checkCase(c, "rope");
}

TEST(FaKernels, TndWithEmptyBatches) {
  FaCase c = base();
  c.tnd = true;
  c.lengths = {{20, 30}, {0, 40}, {25, 0}, {70, 66}};
  c.band = true;
  c.bandRight = 0;
  checkCase(c, "tnd");
}

TEST(FaKernels, NarrowDtypesAndLayouts) {
  FaCase c = base();
  c.dtype = ACL_BF16;
  checkCase(c, "bf16 in, fp32 out");
  c.outDtype = ACL_BF16;
  c.bsnd = true;
  checkCase(c, "bf16 bsnd");
  c.dtype = ACL_FLOAT16;
  c.outDtype = ACL_FLOAT16;
  c.bsnd = false;
  c.colStride = 3;
  checkCase(c, "fp16 strided");
  c.dtype = ACL_FLOAT;
  c.outDtype = ACL_FLOAT;
  c.colStride = 2;
  c.bsnd = true;
  checkCase(c, "fp32 strided bsnd");
  c.colStride = 1;
  c.kvBatchStride0 = true;  // zero strides: k and v shared by the batches, read in place
  checkCase(c, "kv batch stride 0");
}

// The keep tile alone, wider than any kernel tile: rows longer than one chunk of generated stream bytes, unaligned
// starts, a counter that carries into its second word (Philox bytes of both tables); packed bits at unaligned bit
// offsets.
TEST(FaKernelTiles, KeepTileIsFaKeep) {
  kernels::FaDropout drop;
  FaBatch batch;
  batch.s1 = 7;
  batch.dropRowLength = 608;
  batch.dropBase = 48;
  std::vector<uint8_t> bits(4096);
  std::mt19937 rng(3);
  for (uint8_t& byte : bits) byte = static_cast<uint8_t>(rng());
  for (const auto& [kind, table] : {std::pair{FaDropoutKind::Philox, &kernels::kFaSimdKernels},
                                    std::pair{FaDropoutKind::Philox, &kernels::kFaScalarKernels},
                                    std::pair{FaDropoutKind::Packed, &kernels::kFaSimdKernels}}) {
    drop.kind = kind;
    drop.bits = bits.data();
    drop.key[0] = 77;
    drop.key[1] = 5;
    drop.counterLow = (uint64_t{1} << 32) - 40;
    drop.threshold = 200;
    const int64_t rows = 3, c0 = 5, cols = 600, ld = 601, n1 = 2, r0 = 1;
    std::vector<float> keep(static_cast<size_t>(rows * ld), -1.0f);
    kernels::faKeepTile(drop, batch, n1, r0, rows, c0, cols, keep.data(), ld, table->philoxBytes);
    int mismatches = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) {
        const float want = kernels::faKeep(drop, batch, n1, r0 + r, c0 + j) ? 1.0f : 0.0f;
        mismatches += keep[static_cast<size_t>(r * ld + j)] != want ? 1 : 0;
      }
    }
    EXPECT_EQ(mismatches, 0) << (kind == FaDropoutKind::Philox ? "philox" : "packed")
                             << (table == &kernels::kFaSimdKernels ? " simd" : " scalar");
  }
}

// ---- bits ----

TEST(FaKernelBits, SameForAnyThreadCountAndTable) {
  checkBits(bitsBandPseDropoutCase(), "band pse dropout");
  checkBits(bitsTndMaskRopeCase(), "tnd bf16 mask rope");
}

TEST(FaKernelBits, ExpWithinTwoUlpNoSubnormalAndSameInBothTables) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-110.0f, 95.0f);
  std::vector<float> x(20000);
  for (float& v : x) v = uniform(rng);
  const float specials[] = {0.0f,     -0.0f,    -INFINITY, INFINITY, NAN,        -87.3f,    -87.4f,
                            -103.9f,  -104.5f,  88.7f,     88.75f,   1e-8f,      -1e-8f,    -0.34657f,
                            0.34658f, -FLT_MAX, FLT_MAX,   -87.0f,   -86.99999f, -87.00001f};
  for (size_t i = 0; i < std::size(specials); ++i) x[i] = specials[i];
  std::vector<float> simd(x.size()), scalar(x.size());
  kernels::kFaSimdKernels.exp(x.data(), simd.data(), static_cast<int64_t>(x.size()));
  kernels::kFaScalarKernels.exp(x.data(), scalar.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), x.size() * 4), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    const float got = scalar[i];
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    if (want > FLT_MAX) {
      EXPECT_EQ(got, INFINITY) << x[i];
      continue;
    }
    // Never a subnormal: x below -87 gives 0 (exp(-87) = 1.6e-38), every other x a normal within 2 ulp.
    EXPECT_NE(std::fpclassify(got), FP_SUBNORMAL) << x[i] << ": " << got;
    const double ulp = std::ldexp(1.0, std::ilogb(std::max(want, static_cast<double>(FLT_MIN))) - 23);
    EXPECT_EQ(got == 0.0f, x[i] < -87.0f) << x[i] << ": " << got << " vs " << want;
    if (got == 0.0f) continue;
    EXPECT_LE(std::fabs(got - want), 2.0 * ulp) << x[i] << ": " << got << " vs " << want;
  }
}

// The native path's rounding of P and dS: every element floatToBf16's bits (nearest even, ties, NaN quieted, Inf,
// subnormals, both zeros) in both tables on every Highway target with FMA, rows of 0..70 columns with strides.
TEST(FaKernelBits, RoundRowsToBf16IsFloatToBf16InBothTables) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  const float specials[] = {NAN,
                            -NAN,
                            INFINITY,
                            -INFINITY,
                            0.0f,
                            -0.0f,
                            FLT_MIN / 3,
                            -FLT_MIN,
                            FLT_MAX,
                            1.0f + 1.0f / 256,
                            1.0f + 3.0f / 256,
                            -(1.0f + 1.0f / 256),
                            3.3895e38f};
  for (const int64_t cols : {0, 1, 7, 8, 9, 16, 33, 70}) {
    const int64_t rows = 3, ld = cols + 5, dstLd = cols + 3;
    std::vector<float> src(static_cast<size_t>(rows * ld));
    for (float& v : src) v = uniform(rng);
    for (size_t i = 0; i < std::size(specials) && i < src.size(); ++i) src[(i * 7) % src.size()] = specials[i];
    std::vector<uint16_t> scalar(static_cast<size_t>(rows * dstLd), 0x1234);
    kernels::kFaScalarKernels.roundRowsToBf16(src.data(), ld, rows, cols, scalar.data(), dstLd);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < dstLd; ++c) {
        const uint16_t want = c < cols ? floatToBf16(src[static_cast<size_t>(r * ld + c)]) : uint16_t{0x1234};
        EXPECT_EQ(scalar[static_cast<size_t>(r * dstLd + c)], want) << cols << " " << r << " " << c;
      }
    }
    test::forEachFmaTarget([&](int64_t target) {
      std::vector<uint16_t> simd(scalar.size(), 0x1234);
      kernels::kFaSimdKernels.roundRowsToBf16(src.data(), ld, rows, cols, simd.data(), dstLd);
      EXPECT_EQ(simd, scalar) << hwy::TargetName(target) << " cols " << cols;
    });
  }
}

// P = exp(s * scale - m) / l below FLT_MIN is 0 in both tables (no subnormal reaches a tile product), the same bits.
TEST(FaKernelBits, BackwardPNeverSubnormalAndSameInBothTables) {
  const int64_t rows = 4, cols = 21;  // two SIMD groups and a scalar tail
  std::vector<float> scores(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) scores[static_cast<size_t>(r * cols + j)] = -70.0f - 1.5f * j + 0.25f * r;
  }
  // Row 3: a caller's negative sum gives negative P, kept (or flushed by magnitude) alike in both tables.
  const float rowMax[rows] = {0.0f, 0.0f, -FLT_MAX, 0.0f}, rowSum[rows] = {1e6f, 1.0f, 1.0f, -2.0f};
  std::vector<float> simd = scores, scalar = scores;
  kernels::kFaSimdKernels.backwardRows({simd.data(), cols, rows, cols, 1.0f, rowMax, rowSum});
  kernels::kFaScalarKernels.backwardRows({scalar.data(), cols, rows, cols, 1.0f, rowMax, rowSum});
  EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), simd.size() * 4), 0);
  int zeros = 0, normals = 0;
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t j = 0; j < cols; ++j) {
      const float got = scalar[static_cast<size_t>(r * cols + j)];
      const double want = std::exp(static_cast<double>(scores[static_cast<size_t>(r * cols + j)])) / rowSum[r];
      EXPECT_NE(std::fpclassify(got), FP_SUBNORMAL) << r << ", " << j;
      if (got == 0.0f) {
        EXPECT_LT(want, FLT_MIN * 1.0000005) << r << ", " << j;
        ++zeros;
      } else {
        EXPECT_NEAR(got, want, want * 1e-6) << r << ", " << j;
        ++normals;
      }
    }
  }
  EXPECT_GT(zeros, 5);  // the case reaches the flushed range
  EXPECT_GT(normals, 5);
  for (int64_t j = 0; j < cols; ++j) EXPECT_EQ(scalar[static_cast<size_t>(2 * cols + j)], 0.0f);    // masked row
  for (int64_t j = 0; j < 8; ++j) EXPECT_LT(scalar[static_cast<size_t>(3 * cols + j)], 0.0f) << j;  // -exp(-70..)/2
}

}  // namespace
}  // namespace gradkit::test::fa
