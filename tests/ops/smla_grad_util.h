// Helpers of the SparseFlashMlaGrad tests: a problem of the forward's values tests (smla_values_util.h, BSND / TND
// only) run forward through the C API for its out and lse, a random dOut, the gradient through the C API or through
// the plan with a chosen tile path, kernel table and thread count, and the double benchmark of every output against
// the fp64 golden backward (golden/sparse_flash_mla.h) fed the same out and lse.
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

/** Which optional outputs a call passes (an output the call cannot have is never passed). */
struct GradWants {
  bool dOri = true, dCmp = true, dSinks = true, oriL1 = true, cmpL1 = true;
  bool stridedOutputs = false;  // dq, dOri, dCmp with every stride doubled (staged by the plan)
  bool stridedDOut = false;     // dOut with every stride doubled
};

/** A problem with its forward run and its dOut. */
struct GradData {
  Data d;
  std::vector<uint16_t> outStorage;  // the forward's out and lse storage (restored before each gradient call)
  std::vector<uint32_t> lseStorage;
  std::vector<uint16_t> dOut;  // dense [tokens][n1][512]
  explicit GradData(const Spec& spec);
};

/** What a gradient call left (dense, row-major over each tensor's shape). */
struct GradResult {
  aclnnStatus status = -1;
  std::string message;
  std::vector<uint16_t> dq, dOri, dCmp;
  std::vector<float> dSinks, oriL1, cmpL1;
};

/** Both phases through the C API. */
GradResult runGradApi(GradData& g, const GradWants& wants = {});

/** The plan of the call run with `path` / `sums`, `table` (and the row steps of the same kind: SIMD or scalar) and
 *  `threads` workers (the first phase checked). */
GradResult runGradPlan(GradData& g, const GradWants& wants, TilePath path, GemmSums sums,
                       const kernels::FaKernelTable& table, int threads);

/**
 * The double benchmark of dq, dOriKv, dCmpKv, dSinks and the L1 norms against the fp64 golden backward of the same
 * out and lse (the naive computation rounding P and dS to bf16 when `bf16Operands`); rows that see no key and rows no
 * batch computes: dq exactly +0; KV rows no query reaches: exactly +0.
 */
::testing::AssertionResult gradMatchesGolden(const GradData& g, const GradResult& r, const GradWants& wants,
                                             bool bf16Operands);

/** True when two results hold the same bits in every output. */
bool sameBits(const GradResult& a, const GradResult& b);

}  // namespace gradkit::test::smla
