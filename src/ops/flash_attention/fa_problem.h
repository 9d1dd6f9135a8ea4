// From checked arguments to the kernels' FaProblem: layouts become element strides, sparse modes a per-batch band,
// pse forms a table view or slopes, dropout a packed mask or the Philox stream, and the statistics layouts
// per-batch offsets (spec fag.md 2.5-2.12). Shared by the forward and the backward plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "ops/flash_attention/fa_args.h"
#include "ops/flash_attention/fa_check_common.h"  // FaLayout
#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::ops {

/** The arguments both directions share, taken from FaArgs or FagArgs. */
struct FaCall {
  const char* api = "";  // the entry point (messages of a rule the check should have caught)
  FaEntry entry = FaEntry::Padded;
  const char* inputLayout = nullptr;
  FaLayout layout = FaLayout::BNSD;
  const aclTensor* query = nullptr;
  const aclTensor* queryRope = nullptr;
  const aclTensor* key = nullptr;
  const aclTensor* keyRope = nullptr;
  const aclTensor* value = nullptr;
  const aclTensor* pse = nullptr;
  const aclTensor* dropMask = nullptr;
  const aclTensor* attenMask = nullptr;
  const aclIntArray* prefix = nullptr;
  const aclIntArray* actualSeqQLen = nullptr;
  const aclIntArray* actualSeqKvLen = nullptr;
  const aclIntArray* qStartIdx = nullptr;
  const aclIntArray* kvStartIdx = nullptr;
  double scaleValue = 1.0;
  double keepProb = 1.0;
  int64_t preTokens = 0, nextTokens = 0, headNum = 0, sparseMode = 0, pseType = 1;
  bool statsSameAsInput = false;  // softmax*Layout "same_as_input" (TND): a true [T, N1, 8] tensor
  bool philoxDropout = false;
  int64_t seed = 0, offset = 0;
};

FaCall faCallOf(const FaArgs& args);
FaCall faCallOf(const FagArgs& args);

/**
 * The sizes of a checked call, derived by the checks' own rules (fa_check_common.h: layout, dims, TND lengths) plus
 * the rope head dim. Throws std::logic_error if a rule fails: the check let through a call it should have rejected.
 */
FaSizes faPlanSizesOf(const FaCall& call);

/** A tensor of `call`'s layout with head dim `headDim`, as [batch][head][row][col]. */
kernels::FaView faViewOf(const aclTensor& tensor, FaLayout layout, int64_t headDim);

/**
 * The problem of a checked call, without its tensors' data (views filled by the plans). `dropBits` is where the
 * plan will put the dense packed mask (null without one). Statistics offsets assume dense statistics.
 */
kernels::FaProblem faProblemOf(const FaCall& call, const uint8_t* dropBits);

}  // namespace gradkit::ops
