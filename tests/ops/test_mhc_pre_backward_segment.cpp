// The MhcPreBackward segment kernel called directly: the SIMD kernel on every FMA target the CPU runs must give the
// scalar kernel's bits where the plan's tests cannot steer it: gradX rows that are whole 64-byte lines (streamed on
// AVX-512) or not, sums that are bf16 denormals (AVX512_BF16's conversion flushes them: the kernel must not use it
// there), NaN and Inf, and gradX written over gradXPost.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gradkit/float_convert.h"
#include "hwy/targets.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

using kernels::MhcColumnSegment;

struct SegmentCase {
  aclDataType dtype = ACL_BF16;
  int64_t rows = 17, cols = 96, ldx = 128;  // ldx * 2 bytes: a multiple of 64 makes every row start a line
  int64_t gradXShift = 0;                   // elements from a 64-byte boundary to gradX's first column
  bool gamma = true, post = true, inPlace = false;
  bool tiny = false;  // inputs scaled by 2^-127: many sums are bf16 denormals

  std::string describe() const {
    return std::string(dtype == ACL_BF16 ? "bf16" : "fp16") + " rows=" + std::to_string(rows) +
           " cols=" + std::to_string(cols) + " ldx=" + std::to_string(ldx) + " shift=" + std::to_string(gradXShift) +
           (gamma ? " gamma" : "") + (post ? " post" : "") + (inPlace ? " in-place" : "") + (tiny ? " tiny" : "");
  }
};

// 64-byte aligned storage; element `shift` is the data's start.
template <class T>
struct Aligned {
  std::vector<T> storage;
  T* data = nullptr;
  Aligned(size_t n, size_t shift) : storage(n + shift + 64 / sizeof(T)) {
    const auto at = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + ((64 - at % 64) % 64) / sizeof(T) + shift;
  }
};

struct SegmentRun {
  std::vector<uint16_t> gradX;
  std::vector<float> phiSum, phiComp, gammaSum;
};

SegmentRun runSegment(const SegmentCase& c, bool simd) {
  constexpr int64_t kFusion = 24, kStreams = 4;
  const int64_t ldPhi = c.cols + 16, n = c.rows * c.ldx;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float scale = c.tiny ? std::ldexp(1.0f, -127) : 1.0f;
  const auto narrow = [&](float v) { return c.dtype == ACL_BF16 ? floatToBf16(v) : floatToHalf(v); };
  std::vector<uint16_t> x(static_cast<size_t>(n)), gin(static_cast<size_t>(n)), post(static_cast<size_t>(n));
  for (auto* buffer : {&x, &gin, &post}) {
    for (uint16_t& e : *buffer) e = narrow(unit(rng) * scale);
  }
  if (c.post) {  // a NaN and an Inf in gradXPost: NaN stays NaN, Inf stays Inf
    post[3] = narrow(std::numeric_limits<float>::quiet_NaN());
    post[static_cast<size_t>(c.ldx + 40)] = narrow(-std::numeric_limits<float>::infinity());
  }
  std::vector<float> dm(static_cast<size_t>(c.rows * kFusion)), coef(static_cast<size_t>(c.rows));
  std::vector<float> hPre(static_cast<size_t>(c.rows * kStreams)), phi(static_cast<size_t>(kFusion * ldPhi));
  std::vector<float> gamma(static_cast<size_t>(c.cols));
  for (auto* buffer : {&dm, &phi}) {
    for (float& e : *buffer) e = unit(rng) * 0.2f * (c.tiny ? std::ldexp(1.0f, -64) : 1.0f);
  }
  for (float& e : coef) e = unit(rng);
  for (float& e : hPre) e = 0.5f + 0.4f * unit(rng);
  for (float& e : gamma) e = 1.0f + 0.5f * unit(rng);

  Aligned<uint16_t> gradX(static_cast<size_t>(n), static_cast<size_t>(c.gradXShift));
  Aligned<uint16_t> postAt(static_cast<size_t>(n), static_cast<size_t>(c.gradXShift));
  std::memcpy(postAt.data, post.data(), post.size() * sizeof(uint16_t));
  std::memset(gradX.data, 0xee, static_cast<size_t>(n) * sizeof(uint16_t));
  SegmentRun run;
  run.phiSum.assign(static_cast<size_t>(kFusion * ldPhi), 0.25f);
  run.phiComp.assign(run.phiSum.size(), 0.0f);
  run.gammaSum.assign(static_cast<size_t>(c.cols), 0.5f);
  std::vector<float> xgStrip(static_cast<size_t>(c.rows * kernels::kMhcStripColumns));

  MhcColumnSegment sg;
  sg.rows = c.rows, sg.cols = c.cols, sg.fusion = kFusion;
  constexpr int64_t kTile = kernels::kMhcDmTileRows;
  std::vector<float> dmTiles(static_cast<size_t>((c.rows + kTile - 1) / kTile * kTile * kFusion));
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t f = 0; f < kFusion; ++f) {
      dmTiles[static_cast<size_t>(kernels::mhcDmTileIndex(r, f, kFusion))] = dm[static_cast<size_t>(r * kFusion + f)];
    }
  }
  sg.dm = dm.data(), sg.dmTiles = dmTiles.data(), sg.rmsCoef = coef.data(), sg.hPre = hPre.data() + 1,
  sg.ldHPre = kStreams;
  sg.phi = phi.data(), sg.ldPhi = ldPhi;
  sg.x = x.data(), sg.ldx = c.ldx, sg.gin = gin.data(), sg.ldGin = c.ldx;
  sg.gamma = c.gamma ? gamma.data() : nullptr;
  sg.gammaSum = c.gamma ? run.gammaSum.data() : nullptr;
  sg.gradXPost = c.post ? postAt.data : nullptr;
  sg.gradX = c.inPlace ? postAt.data : gradX.data;
  sg.phiSum = run.phiSum.data(), sg.phiComp = run.phiComp.data(), sg.xgStrip = xgStrip.data();
  const auto& table = simd ? kernels::kMhcPreBackwardSimdKernels : kernels::kMhcPreBackwardScalarKernels;
  table.segment(c.dtype, sg);
  const uint16_t* out = c.inPlace ? postAt.data : gradX.data;
  run.gradX.assign(out, out + n);
  return run;
}

// Bitwise equality of two fp32 arrays (NaN included).
bool sameFloatBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(MhcPreBackwardSegment, SimdGivesTheScalarBitsOnLinesDenormalsAndSpecials) {
  std::vector<SegmentCase> cases;
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    for (int64_t shift : {0, 1, 16}) {  // whole lines, then rows that straddle lines
      SegmentCase c;
      c.dtype = dtype, c.gradXShift = shift;
      cases.push_back(c);
    }
    SegmentCase odd;  // rows not a whole number of lines apart; a strip of 32 + 16 + scalar columns
    odd.dtype = dtype, odd.ldx = 100, odd.cols = 83, odd.gamma = false;
    cases.push_back(odd);
    SegmentCase inPlace;
    inPlace.dtype = dtype, inPlace.inPlace = true, inPlace.rows = 9;
    cases.push_back(inPlace);
  }
  SegmentCase tiny;  // bf16 denormal sums on whole lines
  tiny.tiny = true, tiny.post = false;
  cases.push_back(tiny);
  SegmentCase tinyNoGamma = tiny;
  tinyNoGamma.gamma = false, tinyNoGamma.post = true;
  cases.push_back(tinyNoGamma);

  for (const SegmentCase& c : cases) {
    const SegmentRun scalar = runSegment(c, false);
    if (c.tiny) {  // the case must reach bf16 denormals, or it checks nothing
      int denormals = 0;
      for (uint16_t bits : scalar.gradX) denormals += (bits & 0x7f80) == 0 && (bits & 0x7f) != 0;
      EXPECT_GT(denormals, 100) << c.describe();
    }
    forEachFmaTarget([&](int64_t target) {
      const SegmentRun simd = runSegment(c, true);
      EXPECT_EQ(simd.gradX, scalar.gradX) << hwy::TargetName(target) << " " << c.describe();
      EXPECT_TRUE(sameFloatBits(simd.phiSum, scalar.phiSum)) << hwy::TargetName(target) << " " << c.describe();
      EXPECT_TRUE(sameFloatBits(simd.phiComp, scalar.phiComp)) << hwy::TargetName(target) << " " << c.describe();
      EXPECT_TRUE(sameFloatBits(simd.gammaSum, scalar.gammaSum)) << hwy::TargetName(target) << " " << c.describe();
    });
  }
}

}  // namespace
}  // namespace gradkit::test
