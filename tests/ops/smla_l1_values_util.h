// Helpers of the SparseFlashMlaSoftmaxL1Norm values tests: a problem drawn by smla_values_util.h's Spec (its
// compressed side is k; no ori rows, mask 0 on that side), the forward's fp64 lse of that problem (no sinks) as the
// op's softmaxLse, the output view over sentinel storage, and both phases through the C API or through the plan with a
// chosen tile path, kernel table and thread count; the golden is golden::sparseFlashMlaSoftmaxL1Norm (Cmp part).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/gemm_shape.h"
#include "core/tile_path.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/smla_values_util.h"

namespace gradkit::test::smla {

/** The op's extras over a Spec: the L1 output's layout and width. */
struct L1Spec {
  Spec s;                   // cmpRows, cmpUsed, residual, ratio, cmpMode (the op's maskMode), cmpK, cmpKind, ...
  int64_t maxSeqlenK = 0;   // TND dense: the output's width (0: the longest batch's key rows)
  bool stridedLse = false;  // softmaxLse with doubled strides (staged)
  bool stridedL1 = false;   // softmaxL1Norm with padded rows (staged)
};

/** The problem's tensors and logical golden problem; lse = the fp64 forward's, rounded to float. */
struct L1Data {
  L1Spec spec;
  Data d;
  int64_t width = 0;  // columns of an output row
  Stored<float> lse, l1;
  std::vector<float> lseLogical;  // [qRows][n1]

  explicit L1Data(const L1Spec& spec);
};

/** What a run left: softmaxL1Norm [tokens][width] (bits) and whether its gaps kept their sentinel. */
struct L1Result {
  aclnnStatus status = -1;
  std::string message;
  std::vector<uint32_t> bits;
  bool gapsKept = false;
};

/** Both phases through the C API. */
L1Result runL1Api(L1Data& d);

/** The plan run with `path` / `sums`, `table` and `threads` workers (the first phase checked). */
L1Result runL1Plan(L1Data& d, TilePath path, GemmSums sums, const kernels::FaKernelTable& table, int threads);

/**
 * The double benchmark against golden::sparseFlashMlaSoftmaxL1Norm (fp64) with the naive fp32 computation; every
 * element the golden has exactly 0 (unused slots, dropped entries, rows no batch computes) exactly +0; gaps kept.
 */
::testing::AssertionResult l1MatchesGolden(const L1Data& d, const L1Result& r);

}  // namespace gradkit::test::smla
