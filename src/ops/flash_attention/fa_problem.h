// From checked arguments to the kernels' FaProblem: layouts become element strides, sparse modes a per-batch band,
// pse forms a table view or slopes, dropout a packed mask or the Philox stream, and the statistics layouts
// per-batch offsets (spec fag.md 2.5-2.12). Shared by the forward and the backward plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "ops/flash_attention/fa_args.h"
#include "ops/flash_attention/fa_check_common.h"  // FaCall
#include "ops/flash_attention/fa_layout.h"
#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::ops {

/** faCallOf(args) (fa_check_common.h) with the layout parsed; throws std::logic_error for a layout the check should
 * have rejected. */
FaCall faPlanCallOf(const FaArgs& args);
FaCall faPlanCallOf(const FagArgs& args);

/** The sizes of a checked call read through the size model (fa_layout.h: dims, TND lengths, the rope head dim). */
FaSizes faPlanSizesOf(const FaCall& call);

/** A tensor of `call`'s layout with head dim `headDim`, as [batch][head][row][col]. */
kernels::FaView faViewOf(const aclTensor& tensor, FaLayout layout, int64_t headDim);

/**
 * The problem of a checked call, without its tensors' data (views filled by the plans; a packed dropMask's bits come
 * with each run's io). Statistics offsets assume dense statistics.
 */
kernels::FaProblem faProblemOf(const FaCall& call);

}  // namespace gradkit::ops
