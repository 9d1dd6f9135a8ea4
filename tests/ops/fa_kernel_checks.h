// Checks shared by the flash attention kernel tests: forward and backward against the fp64 reference of
// fa_kernel_test_util.h with a dtype's tolerance, and the bits over thread counts and kernel tables.
#pragma once

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/fa_kernel_test_util.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/op_test_util.h"

namespace gradkit::test::fa {

using kernels::kFaNoBand;

struct Tolerance {
  double out, grad;
};

inline Tolerance toleranceOf(aclDataType outDtype) {
  switch (outDtype) {
    case ACL_BF16:
      return {8e-3, 8e-3};
    case ACL_FLOAT16:
      return {1.5e-3, 1.5e-3};
    default:
      return {1e-5, 2e-5};
  }
}

/** The native-bf16 path rounds P and dS to bf16: its error is bf16's whatever the output dtype. */
inline Tolerance toleranceOf(const FaCase& c) {
  return c.tilePath == TilePath::NativeBf16 ? toleranceOf(ACL_BF16) : toleranceOf(c.outDtype);
}

inline void checkForward(const FaData& x, const Reference& ref, const std::string& name) {
  const FaCase& c = x.c;
  const Tolerance tol = toleranceOf(c);
  int failures = 0;
  for (int64_t b = 0; b < x.g.batches; ++b) {
    const FaBatch& batch = x.problem.batches[static_cast<size_t>(b)];
    for (int64_t n1 = 0; n1 < c.n1; ++n1) {
      for (int64_t i = 0; i < batch.s1; ++i) {
        const size_t row = static_cast<size_t>(n1 * batch.s1 + i);
        const int64_t at = statsIndex(batch, n1, i);
        const double m = ref.rowMax[static_cast<size_t>(b)][row], l = ref.rowSum[static_cast<size_t>(b)][row];
        for (int64_t lane = 0; lane < 8; ++lane) {
          const float gotMax = x.softmaxMax[static_cast<size_t>(at + lane)];
          const float gotSum = x.softmaxSum[static_cast<size_t>(at + lane)];
          if (m == -FLT_MAX) {
            EXPECT_EQ(gotMax, -FLT_MAX) << name << " b" << b << " n" << n1 << " i" << i;
            EXPECT_EQ(gotSum, FLT_MAX) << name << " b" << b << " n" << n1 << " i" << i;
          } else {
            EXPECT_NEAR(gotMax, m, 1e-5 * (1.0 + std::fabs(m))) << name << " b" << b << " n" << n1 << " i" << i;
            EXPECT_NEAR(gotSum, l, 1e-5 * l) << name << " b" << b << " n" << n1 << " i" << i;
          }
        }
        for (int64_t col = 0; col < c.dv && failures < 10; ++col) {
          const double want =
              ref.out[static_cast<size_t>(b)][row * static_cast<size_t>(c.dv) + static_cast<size_t>(col)];
          const double got = x.out.at(viewBatch(c, b), n1, batch.qFirst + i, col);
          if (std::fabs(got - want) > tol.out * (1.0 + std::fabs(want))) {
            ++failures;
            ADD_FAILURE() << name << " out b" << b << " n" << n1 << " i" << i << " c" << col << ": " << got << " vs "
                          << want;
          }
        }
      }
    }
  }
}

/** Compares one gradient tensor (rows of `cols` columns, the rope part after column `split` in `rope`). */
inline void checkGradient(const HostTensor& main, const HostTensor* rope, int64_t split,
                          const std::vector<double>& want, int64_t b, int64_t vb, int64_t heads, int64_t first,
                          int64_t rows, int64_t cols, double tol, const std::string& what) {
  double scale = 0.0;
  for (const double w : want) scale = std::max(scale, std::fabs(w));
  int failures = 0;
  for (int64_t n = 0; n < heads; ++n) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < cols && failures < 10; ++col) {
        const double got = col < split ? main.at(vb, n, first + r, col) : rope->at(vb, n, first + r, col - split);
        const double w = want[static_cast<size_t>((n * rows + r) * cols + col)];
        if (std::fabs(got - w) > tol * std::max(scale, 1e-3) + 1e-30) {
          ++failures;
          ADD_FAILURE() << what << " b" << b << " n" << n << " r" << r << " c" << col << ": " << got << " vs " << w
                        << " (max |ref| " << scale << ")";
        }
      }
    }
  }
}

inline void checkBackward(const FaData& x, const Reference& ref, const std::string& name) {
  const FaCase& c = x.c;
  const double tol = toleranceOf(c).grad;
  const int64_t dq = c.d + c.dRope;
  for (int64_t b = 0; b < x.g.batches; ++b) {
    const FaBatch& batch = x.problem.batches[static_cast<size_t>(b)];
    const int64_t vb = viewBatch(c, b);
    const auto bi = static_cast<size_t>(b);
    checkGradient(x.dq, &x.dqRope, c.d, ref.dq[bi], b, vb, c.n1, batch.qFirst, batch.s1, dq, tol, name + " dq");
    checkGradient(x.dk, &x.dkRope, c.d, ref.dk[bi], b, vb, c.n2, batch.kvFirst, batch.s2, dq, tol, name + " dk");
    checkGradient(x.dv, nullptr, c.dv, ref.dv[bi], b, vb, c.n2, batch.kvFirst, batch.s2, c.dv, tol, name + " dv");
  }
}

/** Forward and backward of one case against the fp64 reference, with the default table and 2 threads. */
inline void checkCase(const FaCase& c, const std::string& name) {
  auto data = makeData(c);
  FaData& x = *data;
  const Reference forward = referenceForward(x);
  runForward(x, 2, kernels::faKernels());
  checkForward(x, forward, name);
  setBackwardInputs(x, forward);
  const Reference backward = referenceBackward(x);
  runBackward(x, 2, kernels::faKernels());
  checkBackward(x, backward, name);
}

/** The default case: two batches with tails in both directions. */
inline FaCase base() {
  FaCase c;
  c.lengths = {{70, 90}, {33, 65}};  // tails in both directions, two batches
  c.n1 = 2;
  c.n2 = 2;
  c.d = 24;
  c.dv = 24;
  c.scale = 0.3f;
  c.range = 1.5f;
  return c;
}

inline std::vector<unsigned char> outputBytes(const FaData& x, bool backward) {
  std::vector<unsigned char> bytes;
  const auto append = [&](const void* data, size_t size) {
    const auto* at = static_cast<const unsigned char*>(data);
    bytes.insert(bytes.end(), at, at + size);
  };
  if (backward) {
    for (const HostTensor* t : {&x.dq, &x.dk, &x.dv, &x.dqRope, &x.dkRope}) append(t->bytes.data(), t->bytes.size());
  } else {
    append(x.out.bytes.data(), x.out.bytes.size());
    append(x.softmaxMax.data(), x.softmaxMax.size() * 4);
    append(x.softmaxSum.data(), x.softmaxSum.size() * 4);
  }
  return bytes;
}

inline void checkBits(const FaCase& c, const std::string& name) {
  std::vector<unsigned char> forward, backward;
  const auto check = [&](const kernels::FaKernelTable& kernels, int threads, const std::string& table) {
    auto data = makeData(c);
    FaData& x = *data;
    runForward(x, threads, kernels);
    // The backward runs from the kernel's own forward: its statistics and out.
    x.givenMax = x.softmaxMax;
    x.givenSum = x.softmaxSum;
    std::memcpy(x.attentionIn.bytes.data(), x.out.bytes.data(), x.out.bytes.size());  // cases: dtype == outDtype
    runBackward(x, threads, kernels);
    const auto f = outputBytes(x, false), b = outputBytes(x, true);
    if (forward.empty()) {
      forward = f;
      backward = b;
      return;
    }
    EXPECT_TRUE(f == forward) << name << " forward, " << table << ", " << threads << " threads";
    EXPECT_TRUE(b == backward) << name << " backward, " << table << ", " << threads << " threads";
  };
  for (int threads : {1, 2, 3}) check(kernels::kFaScalarKernels, threads, "scalar table");
  // The SIMD table on every Highway target with FMA this CPU runs (an AVX-512 host checks its AVX2 kernels too).
  forEachFmaTarget([&](int64_t target) {
    for (int threads : {1, 2, 3}) check(kernels::kFaSimdKernels, threads, hwy::TargetName(target));
  });
}

/** The bits cases: one (batch, kv head) whose backward splits its keys into chunks, with a band, slopes, dropout. */
inline FaCase bitsBandPseDropoutCase() {
  FaCase c = base();
  c.lengths = {{400, 450}};
  c.n1 = 2;
  c.n2 = 1;
  c.band = true;
  c.bandLeft = 100;
  c.bandRight = 10;
  c.pse = FaPseKind::Slope;
  c.dropout = FaDropoutKind::Philox;
  return c;
}

/** TND batches (empty ones too), bf16, a mask tensor and rope columns. */
inline FaCase bitsTndMaskRopeCase() {
  FaCase t = base();
  t.tnd = true;
  t.lengths = {{20, 30}, {0, 40}, {25, 0}, {70, 66}};
  t.dtype = ACL_BF16;
  t.outDtype = ACL_BF16;
  t.maskTensor = true;
  t.dRope = 8;
  return t;
}

}  // namespace gradkit::test::fa
