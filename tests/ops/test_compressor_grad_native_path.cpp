// CompressorGrad on the native-bf16 path (CompressorGradOptions::tilePath = NativeBf16, GRADKIT_TILE=native): A
// rounded to bf16 and bf16 GEMMs. Within the precision gate of the naive fp32 computation that rounds A the same way;
// told apart from the fp32 path by which golden it lands on (upstream's "two" golden, which rounds A, or the
// unrounded one) under upstream's two-way tolerance; the same bits for any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "ops/compressor_grad_test_util.h"

namespace gradkit::test {
namespace {

using namespace cgrad;  // NOLINT: the shared case, problem and gate helpers

Case onPath(Case c, TilePath path) {
  c.options.tilePath = path;
  return c;
}

Case native(Case c) { return onPath(std::move(c), TilePath::NativeBf16); }

/** Fraction of `got` within upstream's bf16 two-way tolerance (2^-7 relative + 1e-4) of `want`. */
double fractionWithin(const std::vector<uint16_t>& got, const std::vector<double>& want) {
  int64_t within = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    within += std::fabs(bf16ToFloat(got[i]) - want[i]) <= 1e-4 + 0.0078125 * std::fabs(want[i]) ? 1 : 0;
  }
  return static_cast<double>(within) / static_cast<double>(want.size());
}

TEST(CompressorGradNativePath, WithinTheGateOfTheNaiveThatRoundsA) {
  std::vector<Case> cases;
  cases.push_back(native(bsh(1, 8, 2, 4, 512)));      // C4A
  cases.push_back(native(bsh(2, 12, 2, 4, 128)));     // C4Li
  cases.push_back(native(bsh(1, 256, 1, 128, 512)));  // C128A: two blocks
  Case tails = native(th({0, 5, 17, 17, 30}, 34, 2, 3));
  tails.startPos = {0, 4, 0, 7};
  tails.options.chunkRows = 5;  // chunk boundaries inside blocks
  cases.push_back(tails);
  Case strided = native(bsh(2, 9, 1, 4));
  strided.stridedInputs = strided.stridedOutputs = true;
  cases.push_back(strided);
  for (const Case& c : cases) {
    const Problem p = makeProblem(c);
    expectWithinGate(p, runPlan(p));
  }
}

TEST(CompressorGradNativePath, LandsOnTheGoldenThatRoundsA) {
  Case c = bsh(1, 64, 2, 4, 512);  // C4A, 16 blocks: dW sums 64 tokens of rounded A
  c.hidden = 512;
  const Problem highwayProblem = makeProblem(onPath(c, TilePath::Highway));
  const Problem nativeProblem = makeProblem(native(c));
  const golden::CompressorGradOutputs<double> unrounded = runGolden<double>(highwayProblem);
  const golden::CompressorGradOutputs<double> rounded = runGolden<double>(highwayProblem, true);
  const Result highway = runPlan(highwayProblem), ours = runPlan(nativeProblem);
  for (const auto& [name, field] : {std::pair{"dWkv", &Result::dWkv}, std::pair{"dWgate", &Result::dWgate}}) {
    const auto& want = name[2] == 'k' ? unrounded.dWkv : unrounded.dWgate;
    const auto& wantRounded = name[2] == 'k' ? rounded.dWkv : rounded.dWgate;
    const double nativeOwn = fractionWithin(ours.*field, wantRounded), nativeOther = fractionWithin(ours.*field, want);
    const double highwayOwn = fractionWithin(highway.*field, want);
    const double highwayOther = fractionWithin(highway.*field, wantRounded);
    EXPECT_GE(nativeOwn, 0.995) << name;
    EXPECT_GE(highwayOwn, 0.995) << name;
    EXPECT_LT(nativeOther, nativeOwn - 0.01) << name << ": the native path does not round A";
    EXPECT_LT(highwayOther, highwayOwn - 0.01) << name << ": the fp32 path rounds A";
  }
}

TEST(CompressorGradNativePath, SameBitsForAnyThreadCount) {
  ThreadCountGuard guard;
  Case c = native(th({0, 40, 41, 97}, 100, 2, 4));
  c.options.chunkRows = 16;
  const Problem p = makeProblem(c);
  setThreadCount(1);
  const Result one = runPlan(p);
  for (int threads : {2, 3}) {
    setThreadCount(threads);
    EXPECT_TRUE(sameBits(one, runPlan(p))) << threads << " threads";
  }
}

}  // namespace
}  // namespace gradkit::test
