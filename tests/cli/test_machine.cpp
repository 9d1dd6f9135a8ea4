// Machine measurements: sanity only (positive, finite, plausible names); speeds are not asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "machine/machine.h"

namespace {

TEST(Machine, IsaNameIsAHighwayTarget) {
  const std::string name = gradkit::isaName();
  const char* known[] = {"AVX3_SPR", "AVX3_ZEN4", "AVX3_DL", "AVX3",     "AVX2", "SSE4", "SSSE3", "SSE2",   "NEON",
                         "SVE",      "SVE2",      "SVE_256", "SVE2_128", "RVV",  "PPC8", "WASM",  "EMU128", "SCALAR"};
  bool found = false;
  for (const char* k : known) found = found || name == k;
  EXPECT_TRUE(found) << name;
}

TEST(Machine, CopyBandwidthIsPositive) {
  const double gbps = gradkit::measureCopyBandwidthGBps();
  EXPECT_TRUE(std::isfinite(gbps));
  EXPECT_GT(gbps, 0.1);
  RecordProperty("copy_gbps", std::to_string(gbps));
}

TEST(Machine, GemmPeakIsPositive) {
  for (const bool bf16 : {false, true}) {
    const double gflops = gradkit::measureGemmPeakGflops(bf16);
    EXPECT_TRUE(std::isfinite(gflops));
    EXPECT_GT(gflops, 0.1);
    RecordProperty(bf16 ? "bf16_gflops" : "fp32_gflops", std::to_string(gflops));
  }
}

}  // namespace
