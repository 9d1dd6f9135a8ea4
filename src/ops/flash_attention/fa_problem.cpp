// Checked arguments -> FaProblem (spec fag.md 2.5-2.12; the choices are documented in docs/flash_attention.md).
#include "ops/flash_attention/fa_problem.h"

#include "core/tile_path.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/dtype.h"
#include "base/error.h"
#include "base/saturating.h"
#include "opapi/tensor.h"

namespace gradkit::ops {
namespace {

using kernels::FaBatch;
using kernels::FaProblem;
using kernels::FaView;
using kernels::kFaNoBand;

int64_t firstValue(const aclIntArray* array) {
  return array != nullptr && !array->values.empty() ? array->values[0] : 0;
}

int64_t roundUp16(int64_t n) { return (n + 15) / 16 * 16; }

/** The call with its layout parsed: the check accepted the name, so an unknown one means the check missed it. */
FaCall withLayout(FaCall call) {
  const std::optional<FaLayout> layout =
      call.inputLayout != nullptr ? faLayoutFromName(call.inputLayout) : std::nullopt;
  if (!layout.has_value()) throw std::logic_error(std::string(call.api) + ": the check accepted an unknown layout");
  call.layout = *layout;
  return call;
}

/** The band and prefix of one batch for the sparse mode (spec 2.7, 2.8); d0 = s2 - s1 (bottom-right origin). */
void setBand(const FaCall& call, int64_t b, bool bandBatch, FaBatch& batch) {
  const int64_t d0 = batch.s2 - batch.s1;
  switch (call.sparseMode) {
    case 0:  // the mask tensor and the token band (origin top-left)
      batch.bandLeft = call.preTokens;
      batch.bandRight = call.nextTokens;
      break;
    case 2:
      batch.bandRight = 0;
      break;
    case 3:
      batch.bandRight = d0;
      break;
    case 4:
      batch.bandLeft = satSub(call.preTokens, d0);
      batch.bandRight = satAdd(d0, call.nextTokens);
      break;
    case 6:
      batch.bandRight = d0;
      batch.prefix = call.prefix != nullptr && b < static_cast<int64_t>(call.prefix->values.size())
                         ? call.prefix->values[static_cast<size_t>(b)]
                         : 0;
      break;
    case 7:  // the last batch with rows: band of mode 4; the others mode 3
      batch.bandRight = bandBatch ? satAdd(d0, call.nextTokens) : d0;
      if (bandBatch) batch.bandLeft = satSub(call.preTokens, d0);
      break;
    case 8:  // the first batch with rows: band of mode 4; the others mode 2
      batch.bandRight = bandBatch ? satAdd(d0, call.nextTokens) : 0;
      if (bandBatch) batch.bandLeft = satSub(call.preTokens, d0);
      break;
    default:  // mode 1: the mask tensor only
      break;
  }
  // Keep the band arithmetic (i - bandLeft, i + bandRight) far from overflow.
  batch.bandLeft = std::clamp<int64_t>(batch.bandLeft, -kFaNoBand, kFaNoBand);
  batch.bandRight = std::clamp<int64_t>(batch.bandRight, -kFaNoBand, kFaNoBand);
}

/** The mask tensor as [batch][head][row][col]: [S1,S2], [1,1,S1,S2], [B,1,S1,S2] or [B,N1,S1,S2]. */
FaView maskView(const aclTensor& mask) {
  FaView view;
  view.data = mask.firstElement();
  view.dtype = mask.dtype;
  const int64_t rank = mask.dim();
  const auto stride = [&](int64_t axis) {
    return axis >= 0 && mask.viewDims[static_cast<size_t>(axis)] > 1 ? mask.strides[static_cast<size_t>(axis)] : 0;
  };
  view.strideRow = stride(rank - 2);
  view.strideCol = stride(rank - 1);
  view.strideHead = rank == 4 ? stride(1) : 0;
  view.strideBatch = rank == 4 ? stride(0) : 0;
  return view;
}

void setPse(const FaCall& call, const FaSizes& sizes, FaProblem& problem) {
  kernels::FaPse& pse = problem.pse;
  if (call.pse == nullptr) return;  // 0-dim: absent (faCallOf)
  const aclTensor& t = *call.pse;
  const int64_t rank = t.dim();
  const auto stride = [&](int64_t axis) {
    return t.viewDims[static_cast<size_t>(axis)] > 1 ? t.strides[static_cast<size_t>(axis)] : 0;
  };
  pse.table.data = t.firstElement();
  pse.table.dtype = t.dtype;
  if (call.pseType == 2 || call.pseType == 3) {  // slopes [N1] or [B, N1]
    pse.kind = call.pseType == 2 ? kernels::FaPseKind::Slope : kernels::FaPseKind::SqrtSlope;
    pse.table.strideHead = stride(rank - 1);
    pse.table.strideBatch = rank == 2 ? stride(0) : 0;
    pse.table.strideRow = pse.table.strideCol = 0;
    pse.qStartIdx = firstValue(call.qStartIdx);
    pse.kvStartIdx = firstValue(call.kvStartIdx);
    return;
  }
  pse.kind = kernels::FaPseKind::Table;
  pse.beforeScale = call.pseType == 1;
  pse.table.strideBatch = stride(0);
  pse.table.strideHead = stride(1);
  pse.table.strideRow = stride(2);
  pse.table.strideCol = stride(3);
  // A broadcast axis (BN1S rows, 1NSS batch) reads its one entry for every index.
  pse.tableRows = t.viewDims[2] == 1 ? kFaNoBand : t.viewDims[2];
  pse.tableCols = t.viewDims[3];
  const bool tnd = call.layout == FaLayout::TND;
  // The 1024-row ALiBi form holds the last 1024 rows of the bias (spec 2.9): padded when its rows differ from S1
  // (and are not the broadcast row of BN1S), TND always (the table is [., N1, 1024, S2max]).
  pse.alibiRows = tnd || (pse.tableRows == 1024 && sizes.s1 != 1024);
  for (FaBatch& batch : problem.batches) {
    if (tnd) {
      batch.pseRow0 = pse.tableRows - batch.s1;
      batch.pseCol0 = pse.tableCols - batch.s2;
    } else if (pse.alibiRows) {
      batch.pseRow0 = pse.tableRows - batch.s1;
    }
  }
}

void setDropout(const FaCall& call, const FaSizes& sizes, FaProblem& problem) {
  kernels::FaDropout& dropout = problem.dropout;
  const auto keep = static_cast<float>(call.keepProb);
  if (keep >= 1.0f) return;
  dropout.keepProb = keep;
  dropout.scale = 1.0f / keep;
  const bool philox = call.dropMask == nullptr && call.philoxDropout;
  dropout.kind = philox ? kernels::FaDropoutKind::Philox : kernels::FaDropoutKind::Packed;
  if (philox) {
    const auto seed = static_cast<uint64_t>(call.seed);
    dropout.key[0] = static_cast<uint32_t>(seed);
    dropout.key[1] = static_cast<uint32_t>(seed >> 32);
    const auto offset = static_cast<uint64_t>(call.offset);
    dropout.counterLow = offset / 16 + (offset % 16 != 0 ? 1 : 0);
    dropout.threshold = static_cast<uint32_t>(static_cast<int64_t>(keep * 255.0f));
  }
  // Stream elements: padded ((b*N1 + n1)*S1 + i)*rowLength + j; TND batch blocks [N1][S1_b][rowLength_b] in order.
  int64_t base = 0;
  for (FaBatch& batch : problem.batches) {
    batch.dropRowLength = philox ? roundUp16(batch.s2) : batch.s2;
    batch.dropBase = base;
    base += sizes.n1 * batch.s1 * batch.dropRowLength;
  }
}

void setStatistics(const FaCall& call, const FaSizes& sizes, FaProblem& problem) {
  const int64_t lanes = 8;
  for (size_t b = 0; b < problem.batches.size(); ++b) {
    FaBatch& batch = problem.batches[b];
    if (call.layout != FaLayout::TND) {  // [B, N1, S1, 8]
      batch.statsBase = static_cast<int64_t>(b) * sizes.n1 * sizes.s1 * lanes;
      batch.statsHeadStride = sizes.s1 * lanes;
      batch.statsRowStride = lanes;
    } else if (call.statsSameAsInput) {  // a true [T1, N1, 8]
      batch.statsBase = batch.qFirst * sizes.n1 * lanes;
      batch.statsHeadStride = lanes;
      batch.statsRowStride = sizes.n1 * lanes;
    } else {  // shape [T1, N1, 8], data per batch [N1][S1_b][8] (spec 2.6)
      batch.statsBase = batch.qFirst * sizes.n1 * lanes;
      batch.statsHeadStride = batch.s1 * lanes;
      batch.statsRowStride = lanes;
    }
  }
}

}  // namespace

FaCall faPlanCallOf(const FaArgs& args) { return withLayout(faCallOf(args)); }

FaCall faPlanCallOf(const FagArgs& args) { return withLayout(faCallOf(args)); }

// The size model (fa_layout.h) read from a checked call: the check judged these same dims and arrays.
FaSizes faPlanSizesOf(const FaCall& call) {
  FaSizes sizes = faSizesOf(call.layout, call.query->viewDims, call.key->viewDims, call.value->viewDims, call.headNum);
  if (sizes.tnd()) faSetSequenceEnds(call.actualSeqQLen->values, call.actualSeqKvLen->values, &sizes);
  if (call.queryRope != nullptr) sizes.dRope = faRopeDim(sizes, call.queryRope->viewDims.back());
  return sizes;
}

FaView faViewOf(const aclTensor& tensor, FaLayout layout, int64_t headDim) {
  const FaAxisStrides st = faAxisStrides(layout, tensor.strides, headDim);
  return {tensor.firstElement(), tensor.dtype, st.batch, st.head, st.row, st.element};
}

FaProblem faProblemOf(const FaCall& call) {
  const FaSizes sizes = faPlanSizesOf(call);
  FaProblem problem;
  problem.n1 = sizes.n1;
  problem.n2 = sizes.n2;
  problem.d = sizes.d;
  problem.dRope = sizes.dRope;
  problem.dv = sizes.dv;
  problem.scale = static_cast<float>(call.scaleValue);
  // The tile path is chosen once per process (core/tile_path.h); bf16 inputs may take the native one.
  // bf16 inputs may take the native one; fp8 codes (exact in bf16) ride its pairs kernel where it has one.
  if (call.query->dtype == ACL_BF16 || isFloat8Dtype(call.query->dtype)) {
    const TilePathChoice choice = chooseTilePath(ACL_BF16);
    if (call.query->dtype == ACL_BF16) problem.tilePath = choice.path;
    problem.tileSums = choice.tileSums;
  }

  // Padded: every batch has S1 / S2 rows from row 0; TND: the lengths, each batch starting where the last ended.
  problem.batches.resize(static_cast<size_t>(sizes.b));
  int64_t qEnd = 0, kvEnd = 0;
  for (size_t b = 0; b < problem.batches.size(); ++b) {
    FaBatch& batch = problem.batches[b];
    if (sizes.tnd()) {
      batch.qFirst = qEnd, batch.s1 = sizes.seqQ[b], qEnd += batch.s1;
      batch.kvFirst = kvEnd, batch.s2 = sizes.seqKv[b], kvEnd += batch.s2;
    } else {
      batch.s1 = sizes.s1, batch.s2 = sizes.s2;
    }
  }

  // Masking: none without a mask tensor (spec 2.7). Modes 0, 1 and 5 read the tensor (mode 5's is the full mask;
  // a TND batch reads its bottom-right corner); modes 2-4 and 6-8 derive the mask from the mode, upstream's tensor
  // being a fixed template; mode 0 also applies the token band (spec 7 item 7).
  if (call.attenMask != nullptr) {
    const int64_t mode = call.sparseMode;
    problem.maskTensor = mode == 0 || mode == 1 || mode == 5;
    problem.band = mode != 1 && mode != 5;
    if (problem.maskTensor) problem.mask = maskView(*call.attenMask);
    int64_t bandBatch = -1;  // modes 7/8: the last / first batch with query rows
    for (size_t b = 0; b < problem.batches.size(); ++b) {
      if (problem.batches[b].s1 == 0) continue;
      if (mode == 7 || bandBatch < 0) bandBatch = static_cast<int64_t>(b);
    }
    const aclTensor& mask = *call.attenMask;
    for (size_t b = 0; b < problem.batches.size(); ++b) {
      FaBatch& batch = problem.batches[b];
      setBand(call, static_cast<int64_t>(b), static_cast<int64_t>(b) == bandBatch, batch);
      if (mode == 5 && call.layout == FaLayout::TND) {
        batch.maskRow0 = mask.viewDims[static_cast<size_t>(mask.dim() - 2)] - batch.s1;
        batch.maskCol0 = mask.viewDims[static_cast<size_t>(mask.dim() - 1)] - batch.s2;
      }
    }
  }
  setPse(call, sizes, problem);
  setDropout(call, sizes, problem);
  setStatistics(call, sizes, problem);
  return problem;
}

}  // namespace gradkit::ops
