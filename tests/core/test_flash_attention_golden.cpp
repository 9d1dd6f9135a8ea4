// The flash attention golden (golden/flash_attention.h) proven independently of any kernel: its Philox4x32-7 against
// the worked values of spec fag.md 3.6 and Random123's KAT lines (3.1), its stream positions (3.4) and packed mask
// (2.11); its fp64 backward against fourth-order central finite differences of its fp64 forward (no mask, every
// sparse mode, every pse type, GQA, D != D_V, rope, dropout, TND with zero-length batches, fully masked rows); small
// answers by hand; every sparse mode's masked positions written out on a 4 x 6 grid; the ALiBi helpers; and the float
// instantiation against the double one.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/gradient_check.h"
#include "golden/flash_attention.h"

namespace {

using gradkit::test::checkGradient;
using gradkit::test::kGradTolerance;

using gradkit::golden::FlashAttentionForwardOutputs;
using gradkit::golden::FlashAttentionGradInputs;
using gradkit::golden::FlashAttentionGradOutputs;
using gradkit::golden::FlashAttentionInputs;
using gradkit::golden::FlashAttentionProblem;

// ---------------------------------------------------------------------------------------------------------------
// Philox and the dropout stream (spec 3)

std::string hexWords(const std::array<uint32_t, 4>& w) {
  char text[64];
  std::snprintf(text, sizeof text, "%08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
  return text;
}

TEST(FlashAttentionGolden, PhiloxRandom123KnownAnswers) {
  using gradkit::golden::flashAttentionPhilox;
  const std::array<uint32_t, 4> zero{0, 0, 0, 0}, ones{~0u, ~0u, ~0u, ~0u};
  const std::array<uint32_t, 4> pi{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  // philox4x32 7 (spec 3.1)
  EXPECT_EQ(hexWords(flashAttentionPhilox(zero, {0, 0}, 7)), "5f6fb709 0d893f64 4f121f81 4f730a48");
  EXPECT_EQ(hexWords(flashAttentionPhilox(ones, {~0u, ~0u}, 7)), "5207ddc2 45165e59 4d8ee751 8c52f662");
  EXPECT_EQ(hexWords(flashAttentionPhilox(pi, {0xa4093822u, 0x299f31d0u}, 7)), "4dfccaba 190a87f0 c47362ba b6b5242a");
  // philox4x32 10, the same block function with more rounds
  EXPECT_EQ(hexWords(flashAttentionPhilox(zero, {0, 0}, 10)), "6627e8d5 e169c58d bc57ac4c 9b00dbd8");
  EXPECT_EQ(hexWords(flashAttentionPhilox(ones, {~0u, ~0u}, 10)), "408f276d 41c83b0e a20bc7c6 6d5451fd");
  EXPECT_EQ(hexWords(flashAttentionPhilox(pi, {0xa4093822u, 0x299f31d0u}, 10)), "d16cfe09 94fdcceb 5001e420 24126ea1");
}

TEST(FlashAttentionGolden, PhiloxWorkedValuesSeed2) {
  using gradkit::golden::flashAttentionPhilox;
  EXPECT_EQ(hexWords(flashAttentionPhilox({0, 0, 0, 0}, {2, 0}, 7)), "afcf3062 f6539c39 9b1d477a 89cea381");
  EXPECT_EQ(hexWords(flashAttentionPhilox({1, 0, 0, 0}, {2, 0}, 7)), "754695ee 887a6249 c5764a61 1af56c9e");
  const std::vector<uint8_t> expected = {0x62, 0x30, 0xcf, 0xaf, 0x39, 0x9c, 0x53, 0xf6, 0x7a, 0x47, 0x1d,
                                         0x9b, 0x81, 0xa3, 0xce, 0x89, 0xee, 0x95, 0x46, 0x75, 0x49, 0x62,
                                         0x7a, 0x88, 0x61, 0x4a, 0x76, 0xc5, 0x9e, 0x6c, 0xf5, 0x1a};
  const std::vector<uint8_t> bytes = gradkit::golden::flashAttentionPhiloxBytes(2, 0, 0, 32);
  EXPECT_EQ(bytes, expected);
  // Keep bit strings of spec 3.6 (threshold trunc(float(kp) * 255): 229, 204, 127).
  const std::vector<std::pair<float, std::string>> keeps = {{0.9f, "11111110111111110111111111111101"},
                                                            {0.8f, "11011110111111010111111111111101"},
                                                            {0.5f, "11001010111000000011111011100101"}};
  EXPECT_EQ(gradkit::golden::flashAttentionDropThreshold(0.9f), 229u);
  EXPECT_EQ(gradkit::golden::flashAttentionDropThreshold(0.8f), 204u);
  EXPECT_EQ(gradkit::golden::flashAttentionDropThreshold(0.5f), 127u);
  EXPECT_EQ(gradkit::golden::flashAttentionDropThreshold(0.2f), 51u);  // the kernel rule, not the golden's 50 (7.2)
  EXPECT_EQ(gradkit::golden::flashAttentionDropThreshold(1.0f), 255u);
  for (const auto& [kp, bits] : keeps) {
    const uint32_t threshold = gradkit::golden::flashAttentionDropThreshold(kp);
    std::string got;
    for (uint8_t byte : bytes) got += byte <= threshold ? '1' : '0';
    EXPECT_EQ(got, bits) << "keepProb " << kp;
  }
  // The same 32 elements through a problem: B = N1 = S1 = 1, S2 = 32, packed LSB first.
  FlashAttentionProblem p;
  p.batch = 1, p.d = 1, p.dv = 1, p.s1 = {1}, p.s2 = {32}, p.keepProb = 0.9f, p.seed = 2;
  const std::vector<uint8_t> packed = gradkit::golden::flashAttentionPhiloxDropMask(p);
  ASSERT_EQ(packed.size(), 4u);
  std::string got;
  for (int e = 0; e < 32; ++e) got += ((packed[e / 8] >> (e % 8)) & 1) ? '1' : '0';
  EXPECT_EQ(got, keeps[0].second);
}

TEST(FlashAttentionGolden, PhiloxOffsetStartsAtCeilOffsetOver16) {
  using gradkit::golden::flashAttentionPhiloxBytes;
  const std::vector<uint8_t> base = flashAttentionPhiloxBytes(7, 0, 0, 96);
  for (uint64_t offset : {1u, 15u, 16u, 17u, 32u, 33u}) {
    const uint64_t block = (offset + 15) / 16;
    const std::vector<uint8_t> shifted = flashAttentionPhiloxBytes(7, offset, 0, 48);
    EXPECT_TRUE(std::equal(shifted.begin(), shifted.end(), base.begin() + 16 * block)) << "offset " << offset;
    // `first` counts from the offset's block: byte 20 of the shifted stream is byte 16 * block + 20 of the base.
    EXPECT_EQ(flashAttentionPhiloxBytes(7, offset, 20, 1)[0], base[16 * block + 20]);
  }
  // A 64-bit seed: key (low, high). The counter crosses a 32-bit word with carry.
  const uint64_t seed = 0x0123456789abcdefull;
  const uint64_t offset = 16ull * 0xFFFFFFFFull;  // counter c0 = 0xFFFFFFFF, next block (0, 1, 0, 0)
  const std::vector<uint8_t> bytes = flashAttentionPhiloxBytes(seed, offset, 0, 32);
  const std::array<uint32_t, 2> key{0x89abcdefu, 0x01234567u};
  const auto b0 = gradkit::golden::flashAttentionPhilox({0xFFFFFFFFu, 0, 0, 0}, key, 7);
  const auto b1 = gradkit::golden::flashAttentionPhilox({0, 1, 0, 0}, key, 7);
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(bytes[k], static_cast<uint8_t>(b0[k / 4] >> (8 * (k % 4))));
    EXPECT_EQ(bytes[16 + k], static_cast<uint8_t>(b1[k / 4] >> (8 * (k % 4))));
  }
}

TEST(FlashAttentionGolden, DropoutPositionsTndPaddedRows) {
  FlashAttentionProblem p;
  p.batch = 3, p.n1 = 2, p.d = 1, p.dv = 1;
  p.s1 = {3, 0, 2}, p.s2 = {5, 4, 17};
  // Stream: ptr = 0, 3*16 = 48, 48 (spec 3.4). Total N1 * (48 + 0 + 2*32) = 224.
  EXPECT_EQ(p.dropStreamBytes(), 224);
  EXPECT_EQ(p.dropStreamIndex(0, 0, 0, 0), 0);
  EXPECT_EQ(p.dropStreamIndex(0, 1, 2, 4), (1 * 3 + 2) * 16 + 4);
  EXPECT_EQ(p.dropStreamIndex(2, 0, 0, 0), 2 * 48);
  EXPECT_EQ(p.dropStreamIndex(2, 1, 1, 16), 2 * 48 + (1 * 2 + 1) * 32 + 16);
  // Packed (unpadded) order: batch blocks [N1][S1_b][S2_b].
  EXPECT_EQ(p.dropElements(), 2 * (15 + 0 + 34));
  EXPECT_EQ(p.dropElementIndex(0, 1, 2, 4), (1 * 3 + 2) * 5 + 4);
  EXPECT_EQ(p.dropElementIndex(2, 1, 1, 16), 30 + (1 * 2 + 1) * 17 + 16);
  // Padded with equal lengths both orders reduce to ((b*N1 + n1)*S1 + i)*S2(a) + j.
  FlashAttentionProblem q;
  q.batch = 2, q.n1 = 3, q.d = 1, q.dv = 1, q.s1 = {4, 4}, q.s2 = {5, 5};
  EXPECT_EQ(q.dropElementIndex(1, 2, 3, 4), ((1 * 3 + 2) * 4 + 3) * 5 + 4);
  EXPECT_EQ(q.dropStreamIndex(1, 2, 3, 4), ((1 * 3 + 2) * 4 + 3) * 16 + 4);

  // The packed mask drawn from the stream agrees with the stream byte of every element, and with flashAttentionKept.
  p.keepProb = 0.6f, p.seed = 12345, p.offset = 40;
  const uint32_t threshold = gradkit::golden::flashAttentionDropThreshold(p.keepProb);
  const std::vector<uint8_t> stream = gradkit::golden::flashAttentionPhiloxBytes(p.seed, p.offset, 0, 224);
  const std::vector<uint8_t> packed = gradkit::golden::flashAttentionPhiloxDropMask(p);
  ASSERT_EQ(static_cast<int64_t>(packed.size()), (p.dropElements() + 7) / 8);
  int64_t kept = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t n = 0; n < p.n1; ++n)
      for (int64_t i = 0; i < p.s1[b]; ++i)
        for (int64_t j = 0; j < p.s2[b]; ++j) {
          const bool fromStream = stream[p.dropStreamIndex(b, n, i, j)] <= threshold;
          const int64_t e = p.dropElementIndex(b, n, i, j);
          EXPECT_EQ(((packed[e / 8] >> (e % 8)) & 1) != 0, fromStream);
          EXPECT_EQ(gradkit::golden::flashAttentionKept(p, b, n, i, j), fromStream);
          kept += fromStream;
        }
  EXPECT_GT(kept, 30);  // about 0.6 * 98
  EXPECT_LT(kept, 90);
  FlashAttentionProblem external = p;
  external.dropMask = packed.data();
  for (int64_t j = 0; j < 17; ++j)
    EXPECT_EQ(gradkit::golden::flashAttentionKept(external, 2, 1, 1, j),
              gradkit::golden::flashAttentionKept(p, 2, 1, 1, j));
}

// ---------------------------------------------------------------------------------------------------------------
// Masks (spec 2.7): masked positions of each mode written out on a 4 x 6 grid ('#' = masked), d0 = 2.

std::string grid(const FlashAttentionProblem& p, int64_t b = 0) {
  std::string out;
  for (int64_t i = 0; i < p.s1[b]; ++i) {
    for (int64_t j = 0; j < p.s2[b]; ++j) out += gradkit::golden::flashAttentionMasked(p, b, 0, i, j) ? '#' : '.';
    out += '|';
  }
  return out;
}

FlashAttentionProblem gridProblem(int64_t mode) {
  FlashAttentionProblem p;
  p.batch = 1, p.d = 1, p.dv = 1, p.s1 = {4}, p.s2 = {6};
  p.hasMask = true, p.sparseMode = mode;
  return p;
}

TEST(FlashAttentionGolden, MaskGridsPerSparseMode) {
  const auto none = [](int64_t, int64_t, int64_t, int64_t) { return false; };
  FlashAttentionProblem p = gridProblem(2);
  EXPECT_EQ(grid(p), ".#####|..####|...###|....##|");  // j > i
  p = gridProblem(3);
  EXPECT_EQ(grid(p), "...###|....##|.....#|......|");  // j > i + 2
  p = gridProblem(4);
  p.preTokens = 1, p.nextTokens = 0;  // j > i + 2 or j < i + 1
  EXPECT_EQ(grid(p), "#..###|##..##|###..#|####..|");
  p.preTokens = 2, p.nextTokens = 1;  // j > i + 3 or j < i
  EXPECT_EQ(grid(p), "....##|#....#|##....|###...|");
  p = gridProblem(0);
  p.attenMask = none, p.preTokens = 1, p.nextTokens = 1;  // j > i + 1 or j < i - 1
  EXPECT_EQ(grid(p), "..####|...###|#...##|##...#|");
  p.attenMask = [](int64_t, int64_t, int64_t row, int64_t col) { return row == 0 && col == 0; };
  EXPECT_EQ(grid(p), "#.####|...###|#...##|##...#|");  // mask OR band
  p.preTokens = p.nextTokens = 2147483647;
  EXPECT_EQ(grid(p), "#.....|......|......|......|");
  p = gridProblem(1);
  p.attenMask = [](int64_t, int64_t, int64_t row, int64_t col) { return (row + col) % 3 == 0; };
  p.preTokens = p.nextTokens = 0;  // ignored
  EXPECT_EQ(grid(p), "#..#..|..#..#|.#..#.|#..#..|");
  p = gridProblem(6);
  p.prefix = {3};  // j > i + 2 and j >= 3
  EXPECT_EQ(grid(p), "...###|....##|.....#|......|");
  p.prefix = {5};
  EXPECT_EQ(grid(p), ".....#|.....#|.....#|......|");
  p = gridProblem(5);
  p.prefix = {5};  // no tensor: mode 6's formula
  EXPECT_EQ(grid(p), ".....#|.....#|.....#|......|");
  p.attenMask = [](int64_t, int64_t, int64_t row, int64_t col) { return col == row; };  // the tensor wins
  EXPECT_EQ(grid(p), "#.....|.#....|..#...|...#..|");
  // No mask tensor: nothing masked in any mode.
  for (int64_t mode = 0; mode <= 8; ++mode) {
    p = gridProblem(mode);
    p.hasMask = false, p.preTokens = 0, p.nextTokens = 0;
    EXPECT_EQ(grid(p), "......|......|......|......|") << "mode " << mode;
  }
}

TEST(FlashAttentionGolden, MaskModes7And8BandBatch) {
  FlashAttentionProblem p;
  p.batch = 4, p.d = 1, p.dv = 1, p.hasMask = true;
  p.s1 = {0, 2, 3, 0}, p.s2 = {1, 4, 3, 2};
  p.preTokens = 1, p.nextTokens = 0;
  p.sparseMode = 7;  // band batch 2 (last with S1 > 0): d0 = 0, j > i or j < i - 1; batch 1 mode 3: j > i + 2
  EXPECT_EQ(grid(p, 1), "...#|....|");
  EXPECT_EQ(grid(p, 2), ".##|..#|#..|");
  p.sparseMode = 8;  // band batch 1 (first with S1 > 0): d0 = 2, j > i + 2 or j < i + 1; batch 2 mode 2: j > i
  EXPECT_EQ(grid(p, 1), "#..#|##..|");
  EXPECT_EQ(grid(p, 2), ".##|..#|...|");
}

TEST(FlashAttentionGolden, MaskTensorCornerPerMode) {
  // TND: a [4, 5] mask tensor; batch 1 has S1 = 2, S2 = 3. Modes 3/4/5 read the bottom-right corner, others top-left.
  FlashAttentionProblem p;
  p.batch = 2, p.d = 1, p.dv = 1, p.hasMask = true;
  p.s1 = {4, 2}, p.s2 = {5, 3};
  std::vector<std::array<int64_t, 4>> asked;
  p.attenMask = [&asked](int64_t b, int64_t n, int64_t row, int64_t col) {
    asked.push_back({b, n, row, col});
    return false;
  };
  p.sparseMode = 1;
  gradkit::golden::flashAttentionMasked(p, 1, 0, 1, 2);
  p.sparseMode = 5;
  gradkit::golden::flashAttentionMasked(p, 1, 0, 1, 2);
  p.sparseMode = 0;
  p.maskRows = 6, p.maskCols = 7;  // an explicit tensor size
  gradkit::golden::flashAttentionMasked(p, 1, 0, 1, 2);
  p.sparseMode = 5;
  gradkit::golden::flashAttentionMasked(p, 1, 0, 1, 2);
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[0], (std::array<int64_t, 4>{1, 0, 1, 2}));
  EXPECT_EQ(asked[1], (std::array<int64_t, 4>{1, 0, 4 - 2 + 1, 5 - 3 + 2}));
  EXPECT_EQ(asked[2], (std::array<int64_t, 4>{1, 0, 1, 2}));
  EXPECT_EQ(asked[3], (std::array<int64_t, 4>{1, 0, 6 - 2 + 1, 7 - 3 + 2}));
}

// ---------------------------------------------------------------------------------------------------------------
// Position bias helpers (spec 2.9)

TEST(FlashAttentionGolden, AlibiSlopes) {
  const std::vector<double> eight = gradkit::golden::alibiSlopes(8);
  ASSERT_EQ(eight.size(), 8u);
  for (int k = 0; k < 8; ++k) EXPECT_DOUBLE_EQ(eight[k], std::ldexp(1.0, -(k + 1)));
  // N = 6: p = 4, (2^-2)^k for k = 1..4, then (2^-1)^k for k = 1, 3.
  const std::vector<double> six = gradkit::golden::alibiSlopes(6);
  const std::vector<double> expected = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  ASSERT_EQ(six.size(), expected.size());
  for (size_t k = 0; k < six.size(); ++k) EXPECT_DOUBLE_EQ(six[k], expected[k]);
  EXPECT_EQ(gradkit::golden::alibiSlopes(1), std::vector<double>{std::pow(2.0, -8.0)});
  EXPECT_EQ(gradkit::golden::alibiSlopes(3).size(), 3u);
}

// The full ALiBi bias of the pytest tables: (j - i) on and below the diagonal, 0 above.
double alibiFull(int64_t i, int64_t j) { return j <= i ? static_cast<double>(j - i) : 0.0; }

TEST(FlashAttentionGolden, AlibiExpansion1024Rows) {
  // Non-TND, S1 = S2 = 1030: the table holds the last 1024 rows of the full bias; rows 0..5 come back along diagonals.
  const int64_t S = 1030, H = 1024;
  std::vector<double> table(static_cast<size_t>(H * S));
  for (int64_t r = 0; r < H; ++r)
    for (int64_t c = 0; c < S; ++c) table[r * S + c] = alibiFull(r + S - H, c);
  const std::vector<double> full = gradkit::golden::expandAlibiPse(table.data(), H, S, S, S);
  int64_t wrong = 0;
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) wrong += full[i * S + j] != alibiFull(i, j);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(full[0 * S + 0], 0.0);
  EXPECT_EQ(full[5 * S + 1], -4.0);
  EXPECT_EQ(full[1029 * S + 0], -1029.0);
}

TEST(FlashAttentionGolden, AlibiExpansionTndForm) {
  // A [8, 10] table with a distinct value per diagonal: g(c - r) = 100 + c - r. A batch with S1 = S2 = L reads
  // table[8 - L + i][10 - L + j], i.e. g(j - i + 2); with L = 12 > 8 the first 4 rows follow the diagonals.
  const int64_t R = 8, C = 10;
  std::vector<double> table(static_cast<size_t>(R * C));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) table[r * C + c] = 100.0 + static_cast<double>(c - r);
  for (int64_t L : {3, 8, 12}) {
    const std::vector<double> e = gradkit::golden::expandAlibiPse(table.data(), R, C, L, L);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) {
        const int64_t col = (C - L + j) - std::min<int64_t>(0, R - L + i);
        const double expected = (col >= 0 && col < C) ? 100.0 + static_cast<double>(j - i + 2) : 0.0;
        EXPECT_EQ(e[i * L + j], expected) << "L " << L << " (" << i << ", " << j << ")";
      }
  }
  // Non-square: S1 = 2, S2 = 4 reads rows 6..7, columns 6..9.
  const std::vector<double> e = gradkit::golden::expandAlibiPse(table.data(), R, C, 2, 4);
  EXPECT_EQ(e[0], table[6 * C + 6]);
  EXPECT_EQ(e[1 * 4 + 3], table[7 * C + 9]);
}

TEST(FlashAttentionGolden, GeneratedBias) {
  FlashAttentionProblem p;
  p.batch = 2, p.n1 = 2, p.d = 1, p.dv = 1, p.s1 = {3, 3}, p.s2 = {3, 3};
  p.hasPse = true, p.pseType = 2, p.slopes = {0.5f, 0.25f}, p.qStartIdx = 1, p.kvStartIdx = 4;
  // dist = |(j + 4) - (i + 1)|
  EXPECT_EQ(gradkit::golden::flashAttentionBias<double>(p, 1, 0, 2, 0), -0.5 * 1);
  EXPECT_EQ(gradkit::golden::flashAttentionBias<double>(p, 0, 1, 0, 2), -0.25 * 5);
  p.pseType = 3;
  EXPECT_DOUBLE_EQ(gradkit::golden::flashAttentionBias<double>(p, 0, 1, 0, 2), -0.25 * std::sqrt(5.0));
  p.slopes = {0.5f, 0.25f, 2.0f, 4.0f};  // [B][N1]
  p.pseType = 2;
  EXPECT_EQ(gradkit::golden::flashAttentionBias<double>(p, 1, 1, 0, 0), -4.0 * 3);
  p.hasPse = false;
  EXPECT_EQ(gradkit::golden::flashAttentionBias<double>(p, 1, 1, 0, 0), 0.0);
}

// ---------------------------------------------------------------------------------------------------------------
// Forward and backward: finite differences and small answers by hand

// One problem with its inputs. Values are fp32-representable so that float and double see the same inputs. The
// problem's callbacks and dropMask point into this object: it is neither copied nor moved.
struct Case {
  FlashAttentionProblem p;
  std::vector<double> q, k, v, qRope, kRope, w;  // w: dy, the weights of loss = sum(out * w)
  std::vector<double> pseTable;                  // [B][N1][maxS1][maxS2] for pseType 0/1
  std::vector<uint8_t> maskTable;                // [B][N1][maxS1][maxS2] for modes 0/1/5
  std::vector<uint8_t> dropBits;                 // packed keep mask
  int64_t maxS1 = 0, maxS2 = 0;

  Case() = default;
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;
};

std::vector<double> randomValues(std::mt19937& rng, int64_t count, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(static_cast<size_t>(count));
  for (double& x : out) x = static_cast<float>(dist(rng));
  return out;
}

// Shapes and random inputs; scale = 1/sqrt(D + dRope) in float32.
void setUp(Case& c, int64_t n1, int64_t n2, std::vector<int64_t> s1, std::vector<int64_t> s2, int64_t d, int64_t dv,
           int64_t dRope, uint32_t seed) {
  FlashAttentionProblem& p = c.p;
  p.batch = static_cast<int64_t>(s1.size()), p.n1 = n1, p.n2 = n2, p.d = d, p.dv = dv, p.dRope = dRope;
  p.s1 = std::move(s1), p.s2 = std::move(s2);
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d + dRope)));
  std::mt19937 rng(seed);
  c.q = randomValues(rng, p.qRows() * d, -1.5, 1.5);
  c.k = randomValues(rng, p.kvRows() * d, -1.5, 1.5);
  c.v = randomValues(rng, p.kvRows() * dv, -1, 1);
  c.qRope = randomValues(rng, p.qRows() * dRope, -1.5, 1.5);
  c.kRope = randomValues(rng, p.kvRows() * dRope, -1.5, 1.5);
  c.w = randomValues(rng, p.qRows() * dv, -1, 1);
  c.maxS1 = *std::max_element(p.s1.begin(), p.s1.end());
  c.maxS2 = *std::max_element(p.s2.begin(), p.s2.end());
}

int64_t tableIndex(const Case& c, int64_t b, int64_t n, int64_t i, int64_t j) {
  return ((b * c.p.n1 + n) * c.maxS1 + i) * c.maxS2 + j;
}

// A random [B][N1][maxS1][maxS2] mask tensor with the given masked fraction.
void randomMask(Case& c, double fraction, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution masked(fraction);
  c.maskTable.resize(static_cast<size_t>(c.p.batch * c.p.n1 * c.maxS1 * c.maxS2));
  for (uint8_t& m : c.maskTable) m = masked(rng) ? 1 : 0;
  c.p.maskRows = c.maxS1, c.p.maskCols = c.maxS2;
  c.p.attenMask = [&c](int64_t b, int64_t n, int64_t row, int64_t col) {
    return c.maskTable[tableIndex(c, b, n, row, col)] != 0;
  };
}

void randomPseTable(Case& c, int64_t type, uint32_t seed) {
  std::mt19937 rng(seed);
  c.pseTable = randomValues(rng, c.p.batch * c.p.n1 * c.maxS1 * c.maxS2, -2, 2);
  c.p.hasPse = true, c.p.pseType = type;
  c.p.pse = [&c](int64_t b, int64_t n, int64_t i, int64_t j) { return c.pseTable[tableIndex(c, b, n, i, j)]; };
}

void randomDropMask(Case& c, float keepProb, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  c.dropBits.resize(static_cast<size_t>((c.p.dropElements() + 7) / 8));
  for (uint8_t& m : c.dropBits) m = static_cast<uint8_t>(byte(rng));
  c.p.keepProb = keepProb, c.p.dropMask = c.dropBits.data();
}

template <class Real>
std::vector<Real> narrow(const std::vector<double>& v) {
  return std::vector<Real>(v.begin(), v.end());
}

template <class Real>
struct Tensors {
  std::vector<Real> q, k, v, qRope, kRope, w;
  explicit Tensors(const Case& c)
      : q(narrow<Real>(c.q)),
        k(narrow<Real>(c.k)),
        v(narrow<Real>(c.v)),
        qRope(narrow<Real>(c.qRope)),
        kRope(narrow<Real>(c.kRope)),
        w(narrow<Real>(c.w)) {}
  FlashAttentionInputs<Real> inputs() const { return {q.data(), k.data(), v.data(), qRope.data(), kRope.data()}; }
};

template <class Real>
FlashAttentionForwardOutputs<Real> forward(const Case& c) {
  const Tensors<Real> t(c);
  return gradkit::golden::flashAttentionForward<Real>(c.p, t.inputs());
}

template <class Real>
FlashAttentionGradOutputs<Real> backward(const Case& c, const FlashAttentionForwardOutputs<Real>& fwd) {
  const Tensors<Real> t(c);
  FlashAttentionGradInputs<Real> in;
  in.tensors = t.inputs();
  in.dy = t.w.data();
  in.attentionIn = fwd.out.data();
  in.softmaxMax = fwd.softmaxMax.data();
  in.softmaxSum = fwd.softmaxSum.data();
  return gradkit::golden::flashAttentionBackward<Real>(c.p, in);
}

double loss(const Case& c) {
  const FlashAttentionInputs<double> in{c.q.data(), c.k.data(), c.v.data(), c.qRope.data(), c.kRope.data()};
  const std::vector<double> out = gradkit::golden::flashAttentionForward<double>(c.p, in).out;
  double sum = 0;
  for (size_t e = 0; e < out.size(); ++e) sum += out[e] * c.w[e];
  return sum;
}

// The backward fed with the forward's own out and statistics against finite differences of sum(out * w), for every
// input; each gradient must have non-zero entries. Returns the worst relative error.
double gradCheck(Case& c, const std::string& label) {
  SCOPED_TRACE(label);
  const FlashAttentionForwardOutputs<double> fwd = forward<double>(c);
  const FlashAttentionGradOutputs<double> g = backward<double>(c, fwd);
  double worst = 0;
  const auto lossOfC = [&c] { return loss(c); };
  EXPECT_GT(checkGradient(lossOfC, c.q, g.dq, "dq", &worst), 0);
  EXPECT_GT(checkGradient(lossOfC, c.k, g.dk, "dk", &worst), 0);
  EXPECT_GT(checkGradient(lossOfC, c.v, g.dv, "dv", &worst), 0);
  if (c.p.dRope > 0) {
    EXPECT_GT(checkGradient(lossOfC, c.qRope, g.dqRope, "dqRope", &worst), 0);
    EXPECT_GT(checkGradient(lossOfC, c.kRope, g.dkRope, "dkRope", &worst), 0);
  } else {
    EXPECT_TRUE(g.dqRope.empty() && g.dkRope.empty());
  }
  return worst;
}

TEST(FlashAttentionGolden, GradientNoMask) {
  Case c;
  setUp(c, 2, 2, {3, 3}, {5, 5}, 4, 3, 0, 1);
  EXPECT_LT(gradCheck(c, "no mask"), kGradTolerance);
}

TEST(FlashAttentionGolden, GradientEverySparseModePadded) {
  for (int64_t mode = 0; mode <= 6; ++mode) {
    Case c;
    setUp(c, 2, 1, {4, 4}, {6, 6}, 3, 2, 0, 10 + static_cast<uint32_t>(mode));
    c.p.hasMask = true, c.p.sparseMode = mode;
    if (mode == 0 || mode == 4) {  // a band with both sides (mode 0: top-left origin, OR the mask)
      c.p.preTokens = mode == 0 ? 2 : 1;
      c.p.nextTokens = 1;
    }
    if (mode == 0 || mode == 1 || mode == 5) randomMask(c, 0.2 + 0.1 * static_cast<double>(mode), 5);
    if (mode == 6) c.p.prefix = {1, 4};
    EXPECT_LT(gradCheck(c, "mode " + std::to_string(mode)), kGradTolerance);
  }
  Case c;  // mode 5 from prefix (no tensor)
  setUp(c, 2, 1, {4, 4}, {6, 6}, 3, 2, 0, 17);
  c.p.hasMask = true, c.p.sparseMode = 5, c.p.prefix = {3, 0};
  EXPECT_LT(gradCheck(c, "mode 5 prefix"), kGradTolerance);
}

TEST(FlashAttentionGolden, GradientTndModes) {
  // Modes 7 and 8 (band batch: 7 the last with S1 > 0, 8 the first), 3 and 4 per batch, with an empty batch.
  struct Mode {
    int64_t mode, pre, next;
  };
  for (const Mode m : {Mode{7, 5, 0}, Mode{8, 3, 0}, Mode{3, 0, 0}, Mode{4, 1, 1}}) {
    Case c;
    setUp(c, 2, 1, {2, 3, 4, 0}, {3, 3, 5, 2}, 3, 2, 0, 20 + static_cast<uint32_t>(m.mode));
    c.p.hasMask = true, c.p.sparseMode = m.mode, c.p.preTokens = m.pre, c.p.nextTokens = m.next;
    EXPECT_LT(gradCheck(c, "TND mode " + std::to_string(m.mode)), kGradTolerance);
  }
}

TEST(FlashAttentionGolden, GradientEveryPseType) {
  for (int64_t type = 0; type <= 3; ++type) {
    Case c;
    setUp(c, 2, 2, {4, 4}, {4, 4}, 3, 3, 0, 30 + static_cast<uint32_t>(type));
    if (type <= 1) {
      randomPseTable(c, type, 31);
    } else {
      c.p.hasPse = true, c.p.pseType = type;
      c.p.slopes = type == 2 ? std::vector<float>{0.5f, 0.25f} : std::vector<float>{0.5f, 0.25f, 1.0f, 0.125f};
      c.p.qStartIdx = 2, c.p.kvStartIdx = 1;
    }
    c.p.hasMask = type == 1, c.p.sparseMode = 3;  // one with a causal mask
    EXPECT_LT(gradCheck(c, "pseType " + std::to_string(type)), kGradTolerance);
  }
}

TEST(FlashAttentionGolden, GradientGqaRopeAndDv) {
  Case gqa;
  setUp(gqa, 4, 2, {3, 3}, {4, 4}, 3, 2, 0, 40);
  gqa.p.hasMask = true, gqa.p.sparseMode = 2;
  EXPECT_LT(gradCheck(gqa, "GQA 4/2"), kGradTolerance);
  Case mqa;
  setUp(mqa, 3, 1, {2}, {5}, 5, 2, 0, 41);  // MQA, D = 5 > D_V = 2
  EXPECT_LT(gradCheck(mqa, "MQA D 5 D_V 2"), kGradTolerance);
  Case rope;
  setUp(rope, 2, 1, {3, 2}, {3, 4}, 4, 3, 2, 42);  // TND with rope
  rope.p.hasMask = true, rope.p.sparseMode = 3;
  EXPECT_LT(gradCheck(rope, "rope"), kGradTolerance);
}

TEST(FlashAttentionGolden, GradientDropout) {
  Case packed;
  setUp(packed, 2, 1, {3, 3}, {5, 5}, 3, 2, 0, 50);
  randomDropMask(packed, 0.7f, 51);
  EXPECT_LT(gradCheck(packed, "packed mask"), kGradTolerance);
  Case philox;
  setUp(philox, 2, 2, {2, 0, 3}, {3, 2, 17}, 3, 2, 0, 52);  // TND, 16-padded stream rows
  philox.p.keepProb = 0.8f, philox.p.seed = 2, philox.p.offset = 32;
  EXPECT_LT(gradCheck(philox, "philox"), kGradTolerance);
  // The same problem through the packed mask the stream draws: identical results.
  const std::vector<uint8_t> bits = gradkit::golden::flashAttentionPhiloxDropMask(philox.p);
  const FlashAttentionForwardOutputs<double> viaStream = forward<double>(philox);
  philox.p.dropMask = bits.data();
  const FlashAttentionForwardOutputs<double> viaMask = forward<double>(philox);
  EXPECT_EQ(viaStream.out, viaMask.out);
  EXPECT_EQ(viaStream.softmaxSum, viaMask.softmaxSum);
}

TEST(FlashAttentionGolden, EmptyBatchesAndFullyMaskedRows) {
  // TND: batch 1 has no queries (its keys get zero dk/dv), batch 3 no keys (its rows are invalid). Mode 3 with
  // S1 > S2 in batch 2 masks rows 0 and 1 completely (j > i - 2). A huge pse on masked positions changes nothing.
  Case c;
  setUp(c, 2, 1, {2, 0, 5, 2}, {3, 2, 3, 0}, 3, 2, 0, 60);
  c.p.hasMask = true, c.p.sparseMode = 3;
  randomPseTable(c, 0, 61);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) c.pseTable[tableIndex(c, 2, n, i, j)] = 1e30;
  EXPECT_LT(gradCheck(c, "TND empty batches"), kGradTolerance);
  const FlashAttentionForwardOutputs<double> fwd = forward<double>(c);
  const FlashAttentionGradOutputs<double> g = backward<double>(c, fwd);
  const auto invalid = [&](int64_t b, int64_t n, int64_t i) {
    const int64_t row = c.p.qRow(b, n, i);
    EXPECT_EQ(fwd.softmaxMax[row], -static_cast<double>(FLT_MAX));
    EXPECT_EQ(fwd.softmaxSum[row], static_cast<double>(FLT_MAX));
    for (int64_t e = 0; e < c.p.dv; ++e) EXPECT_EQ(fwd.out[row * c.p.dv + e], 0.0);
    for (int64_t e = 0; e < c.p.d; ++e) EXPECT_EQ(g.dq[row * c.p.d + e], 0.0);
  };
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t i = 0; i < 2; ++i) {
      invalid(2, n, i);
      invalid(3, n, i);
    }
    EXPECT_NE(fwd.softmaxSum[c.p.qRow(2, n, 2)], static_cast<double>(FLT_MAX));
    EXPECT_LT(std::fabs(fwd.softmaxMax[c.p.qRow(2, n, 2)]), 10.0);  // the 1e30 bias never entered
  }
  for (int64_t j = 0; j < 2; ++j) {
    const int64_t kv = c.p.kvRow(1, 0, j);
    for (int64_t e = 0; e < c.p.d; ++e) EXPECT_EQ(g.dk[kv * c.p.d + e], 0.0);
    for (int64_t e = 0; e < c.p.dv; ++e) EXPECT_EQ(g.dv[kv * c.p.dv + e], 0.0);
  }
  EXPECT_EQ(c.p.qRows(), 2 * 9);
  EXPECT_EQ(c.p.kvRows(), 8);
}

TEST(FlashAttentionGolden, SmallAnswersByHand) {
  // S1 = S2 = 1: out = v, max = the score, sum = 1. pseType 1: s = (q.k + pse) * scale.
  FlashAttentionProblem p;
  p.batch = 1, p.d = 2, p.dv = 2, p.s1 = {1}, p.s2 = {1}, p.scale = 0.5f;
  p.hasPse = true, p.pseType = 1, p.pse = [](int64_t, int64_t, int64_t, int64_t) { return 3.0; };
  const std::vector<double> q = {1, 2}, k = {3, -1}, v = {0.25, -7};
  FlashAttentionForwardOutputs<double> f =
      gradkit::golden::flashAttentionForward<double>(p, {q.data(), k.data(), v.data()});
  EXPECT_EQ(f.out, v);
  EXPECT_EQ(f.softmaxMax[0], (1.0 + 3.0) * 0.5);
  EXPECT_EQ(f.softmaxSum[0], 1.0);
  p.pseType = 0;  // s = q.k * scale + pse
  f = gradkit::golden::flashAttentionForward<double>(p, {q.data(), k.data(), v.data()});
  EXPECT_EQ(f.softmaxMax[0], 1.0 * 0.5 + 3.0);

  // Two keys with equal scores: the mean of the values, sum = 2; dropout keeping only key 1 at keepProb 0.5 gives
  // v1 * 0.5 / 0.5.
  FlashAttentionProblem two;
  two.batch = 1, two.d = 2, two.dv = 2, two.s1 = {1}, two.s2 = {2};
  const std::vector<double> kk = {3, -1, 3, -1}, vv = {1, 2, 5, -4};
  f = gradkit::golden::flashAttentionForward<double>(two, {q.data(), kk.data(), vv.data()});
  EXPECT_EQ(f.out, (std::vector<double>{3, -1}));
  EXPECT_EQ(f.softmaxSum[0], 2.0);
  EXPECT_EQ(f.softmaxMax[0], 1.0);
  const uint8_t keepOnly1 = 0b10;
  two.keepProb = 0.5f, two.dropMask = &keepOnly1;
  f = gradkit::golden::flashAttentionForward<double>(two, {q.data(), kk.data(), vv.data()});
  EXPECT_EQ(f.out, (std::vector<double>{5, -4}));
  EXPECT_EQ(f.softmaxSum[0], 2.0);  // the statistics ignore dropout
  // Backward of that: dv = P_d^T dy = [0, 1] dy; dq = 0 (the scores are equal and stay equal: dS sums to zero and
  // both keys are equal).
  const std::vector<double> dy = {1, 1};
  FlashAttentionGradInputs<double> in;
  in.tensors = {q.data(), kk.data(), vv.data()};
  in.dy = dy.data(), in.attentionIn = f.out.data(), in.softmaxMax = f.softmaxMax.data();
  in.softmaxSum = f.softmaxSum.data();
  const FlashAttentionGradOutputs<double> g = gradkit::golden::flashAttentionBackward<double>(two, in);
  EXPECT_EQ(g.dv, (std::vector<double>{0, 0, 1, 1}));
  EXPECT_NEAR(g.dq[0], 0.0, 1e-15);
  EXPECT_NEAR(g.dq[1], 0.0, 1e-15);
}

TEST(FlashAttentionGolden, FloatCloseToDouble) {
  Case c;
  setUp(c, 4, 2, {5, 3, 6}, {7, 4, 6}, 8, 6, 4, 70);
  c.p.hasMask = true, c.p.sparseMode = 4, c.p.preTokens = 3, c.p.nextTokens = 1;
  randomPseTable(c, 1, 71);
  c.p.keepProb = 0.9f, c.p.seed = 9, c.p.offset = 5;
  const FlashAttentionForwardOutputs<double> fd = forward<double>(c);
  const FlashAttentionForwardOutputs<float> ff = forward<float>(c);
  const FlashAttentionGradOutputs<double> gd = backward<double>(c, fd);
  const FlashAttentionGradOutputs<float> gf = backward<float>(c, ff);
  // Relative to each tensor's largest magnitude: a few fp32 ulps of O(10)-term sums, far below 1e-5; any formula
  // difference between the instantiations would be O(1).
  const auto close = [](const std::vector<double>& d, const std::vector<float>& f, const char* name) {
    ASSERT_EQ(d.size(), f.size()) << name;
    double top = 0, worst = 0;
    for (size_t e = 0; e < d.size(); ++e) {
      top = std::max(top, std::fabs(d[e]));
      worst = std::max(worst, std::fabs(d[e] - static_cast<double>(f[e])));
    }
    EXPECT_GT(top, 0.01) << name;
    EXPECT_LE(worst, 1e-5 * top) << name;
  };
  close(fd.out, ff.out, "out");
  close(fd.softmaxMax, ff.softmaxMax, "softmaxMax");
  close(fd.softmaxSum, ff.softmaxSum, "softmaxSum");
  close(gd.dq, gf.dq, "dq");
  close(gd.dk, gf.dk, "dk");
  close(gd.dv, gf.dv, "dv");
  close(gd.dqRope, gf.dqRope, "dqRope");
  close(gd.dkRope, gf.dkRope, "dkRope");
}

}  // namespace
