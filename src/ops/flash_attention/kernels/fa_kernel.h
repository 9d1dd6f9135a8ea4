// The flash attention problem as the kernels see it, and the kernels' entry points. Kernels know nothing about
// aclTensor or layouts: the plan turns every layout (BNSD, BSND, BSH, SBH, TND) into element strides, every sparse
// mode into a per-batch band, every pse form into a table view or slopes, and the softmax statistics layouts into
// per-batch offsets (spec fag.md 1.2, 1.3, 2.5-2.12). fa_semantics.h defines, element by element, what each field
// means; the kernels compute exactly that, tiled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl_base.h"
#include "core/tile_path.h"

namespace gradkit::kernels {

/**
 * One tensor as [batch][head][row][column]: element (b, n, r, c) lies at
 * data + (b * strideBatch + n * strideHead + r * strideRow + c * strideCol) elements of `dtype`.
 * Rows are absolute: a TND batch's rows start at its FaBatch::qFirst / kvFirst (strideBatch 0), a padded
 * batch's at 0 (qFirst = kvFirst = 0, strideBatch set). Strides may be 0 (broadcast) or any positive value.
 */
struct FaView {
  void* data = nullptr;  // inputs are only read
  aclDataType dtype = ACL_FLOAT;
  int64_t strideBatch = 0, strideHead = 0, strideRow = 0, strideCol = 1;
};

/** "No limit" for a band side (FaBatch::bandLeft / bandRight). */
inline constexpr int64_t kFaNoBand = INT64_C(1) << 62;

/** One batch: its rows, its mask band, and where its statistics and dropout bits lie. */
struct FaBatch {
  int64_t qFirst = 0;   // first query row in q / dy / attention out / dq (TND: its first token)
  int64_t s1 = 0;       // query rows (0: the batch computes nothing)
  int64_t kvFirst = 0;  // first key row in k / v / dk / dv
  int64_t s2 = 0;       // key rows (0: every query row is fully masked)
  // Band (FaProblem::band): (i, j) is kept only when i - bandLeft <= j <= i + bandRight, or j < prefix.
  int64_t bandLeft = kFaNoBand;
  int64_t bandRight = kFaNoBand;
  int64_t prefix = 0;  // sparse modes 5/6: columns j < prefix are never masked by the band
  // Mask tensor (FaProblem::maskTensor): (i, j) reads mask row maskRow0 + i, column maskCol0 + j.
  int64_t maskRow0 = 0, maskCol0 = 0;
  // pse table (FaPseKind::Table): (i, j) reads table row pseRow0 + i, column pseCol0 + j (see fa_semantics.h for a
  // row < 0 of the 1024-row ALiBi form).
  int64_t pseRow0 = 0, pseCol0 = 0;
  // Dropout: element (n1, i, j) is stream element dropBase + (n1 * s1 + i) * dropRowLength + j.
  int64_t dropBase = 0;
  int64_t dropRowLength = 0;  // s2 for a packed mask; ceil(s2 / 16) * 16 for the Philox stream
  // Softmax statistics: row (n1, i) is the 8 floats at statsBase + n1 * statsHeadStride + i * statsRowStride.
  int64_t statsBase = 0, statsHeadStride = 0, statsRowStride = 0;
};

enum class FaPseKind {
  None,
  Table,     // a tensor of the query's dtype (pseType 0/1): view rows x columns, batch and head strides
  Slope,     // pseType 2: bias = -slope * |(j + kvStartIdx) - (i + qStartIdx)|
  SqrtSlope  // pseType 3: bias = -slope * sqrt(|(j + kvStartIdx) - (i + qStartIdx)|)
};

struct FaPse {
  FaPseKind kind = FaPseKind::None;
  bool beforeScale = false;  // pseType 1: S = (QK^T + pse) * scale; otherwise S = QK^T * scale + pse
  FaView table;              // Table: [batch][head][row][col]; Slope kinds: FLOAT32 slopes, strideRow = strideCol = 0
  int64_t tableRows = 0;     // Table: its rows (1024 for the compressed ALiBi form, else s1)
  int64_t tableCols = 0;     // Table: its columns
  bool alibiRows = false;    // Table: the 1024-row form (rows before pseRow0 + i < 0 are taken along diagonals)
  int64_t qStartIdx = 0, kvStartIdx = 0;  // Slope kinds
};

enum class FaDropoutKind {
  None,    // keepProb == 1
  Packed,  // an external uint8 mask: element e kept iff bit (e % 8) of byte e / 8 is 1 (LSB first)
  Philox   // the Philox4x32-7 byte stream of spec 3: element e kept iff stream byte e <= threshold
};

struct FaDropout {
  FaDropoutKind kind = FaDropoutKind::None;
  float keepProb = 1.0f;          // float32, as upstream narrows it
  float scale = 1.0f;             // 1 / keepProb in float32
  const uint8_t* bits = nullptr;  // Packed
  uint32_t key[2] = {0, 0};       // Philox: (seed low, seed high)
  uint64_t counterLow = 0;        // Philox: ceil(offset / 16), the counter of stream byte 0 (128-bit, high words 0)
  uint32_t threshold = 255;       // Philox: trunc(float(keepProb) * 255)
};

/** Everything a forward or backward call computes from. */
struct FaProblem {
  int64_t n1 = 0, n2 = 0;  // query heads, key/value heads (query head n uses kv head n / (n1 / n2))
  int64_t d = 0;           // head dim of q and k
  int64_t dRope = 0;       // extra head dim of queryRope / keyRope (0: none); scores use both parts
  int64_t dv = 0;          // head dim of v, dy, attention out
  float scale = 1.0f;      // scaleValue narrowed to float32
  std::vector<FaBatch> batches;
  bool band = false;        // apply each batch's band
  bool maskTensor = false;  // apply `mask`
  FaView mask;              // UINT8 or BOOL bytes, non-zero = masked; [batch][head][row][col], broadcast strides 0
  FaPse pse;
  FaDropout dropout;
  // NativeBf16 (bf16 inputs only): the tile products take bf16 operands, P and dS rounded to bf16 (nearest even)
  // before the products that take them; fp32 sums. Highway: fp32 operands, P and dS fp32 (fa_semantics.h).
  gradkit::TilePath tilePath = gradkit::TilePath::Highway;
  // The sums of the native path's products and of the FP8 backward's (TilePathChoice::tileSums; Bf16Pairs: the FP8
  // codes, exact in bf16, go into VDPBF16PS's pairs).
  gradkit::GemmSums tileSums = gradkit::GemmSums::Sequential;
};

/** The forward's tensors. Statistics are dense fp32 arrays addressed through FaBatch::stats*. */
struct FaForwardIo {
  FaView q, k, v, qRope, kRope;  // qRope / kRope only with dRope > 0
  FaView out;                    // attention out [.., dv]
  float* softmaxMax = nullptr;
  float* softmaxSum = nullptr;
  const uint8_t* dropBits = nullptr;  // this run's packed dropout mask (Packed; null: problem.dropout.bits)
};

/** The backward's tensors. */
struct FaBackwardIo {
  FaView q, k, v, qRope, kRope, dy, attentionIn;
  const float* softmaxMax = nullptr;
  const float* softmaxSum = nullptr;
  FaView dq, dk, dv, dqRope, dkRope;  // outputs (dtype may differ from q's)
  const uint8_t* dropBits = nullptr;  // as FaForwardIo::dropBits
};

struct FaKernelTable;  // fa_softmax.h

/** A forward task: the query rows [r0, r0 + block) of (batch b, query head n1); cost orders the tasks only. */
struct FaForwardTask {
  int64_t b, n1, r0;
  int64_t cost;
};

/** A backward pass A / C task: the query rows [r0, r0 + block) of (batch b, query head n1). */
struct FaRowTask {
  int64_t b, n1, r0;
};

/** A backward pass B task: the key chunk `chunk` of (batch b, kv head n2); cost orders the tasks only. */
struct FaChunkTask {
  int64_t b, n2, chunk;
  int64_t cost;
};

/** Where the backward's dQ accumulators and D live, per batch. */
struct FaChunkLayout {
  std::vector<int64_t> chunks;    // per batch: key chunks (0 when s2 == 0)
  std::vector<int64_t> dqOffset;  // per batch: floats into the dQ accumulators, [chunk][n1][s1][dqWidth]
  std::vector<int64_t> dOffset;   // per batch: floats into D, [n1][s1]
  int64_t dqFloats = 0, dFloats = 0;
};

/**
 * The work of one call, made in the plan from the problem alone: the kernel table (SIMD, or scalar under
 * GRADKIT_FORCE_SCALAR), the workers, each worker's scratch, the tasks in the order workers take them and, for the
 * backward, its chunk layout. The run reads it and allocates nothing.
 */
struct FaSchedule {
  const FaKernelTable* kernels = nullptr;
  int threads = 1;
  size_t slotBytes = 0;                // one worker's scratch
  std::vector<FaForwardTask> forward;  // forward only
  FaChunkLayout layout;                // backward only
  std::vector<FaRowTask> rows;         // backward passes A and C
  std::vector<FaChunkTask> chunks;     // backward pass B
};

/**
 * The forward of `problem`: attention out, softmax max and sum (each replicated over its 8 lanes), on
 * schedule.threads workers with faScratchBytes(schedule) bytes of `scratch` (64-byte aligned); the bits do not
 * depend on the thread count or the kernel table (SIMD or scalar).
 */
FaSchedule faForwardSchedule(const FaProblem& problem, int threads);
void faForward(const FaProblem& problem, const FaSchedule& schedule, const FaForwardIo& io, void* scratch);

/** The backward of `problem`: dq, dk, dv (and the rope parts). Same contract as faForward. */
FaSchedule faBackwardSchedule(const FaProblem& problem, int threads);
void faBackward(const FaProblem& problem, const FaSchedule& schedule, const FaBackwardIo& io, void* scratch);

/** The scratch bytes a schedule's run uses (0 when there is nothing to compute). */
size_t faScratchBytes(const FaSchedule& schedule);

/** Rows of an FP8 de-quant scale block, and the rows x columns of a dS quantisation block (spec fag.md 5.9). */
inline constexpr int64_t kFaFp8BlockRows = 128;

/**
 * The FP8 backward's de-quant scales: FLOAT32 views [batch][head][block] (element (b, n, blk) at data +
 * b * strideBatch + n * strideHead + blk * strideRow; strideCol unused), one per 128-row block of a batch's rows:
 * q and dy over the query heads and S1, k and v over the kv heads and S2.
 */
struct FaFp8Scales {
  FaView q, k, v, dy;
};

/**
 * The FP8 backward (spec fag.md 5.9 "FP8 backward golden"): io.q, k, v, dy hold ACL_FLOAT8_E5M2 or ACL_FLOAT8_E4M3FN
 * codes, attentionIn and the outputs FLOAT16 / BFLOAT16; P_d and dS are cast to the inputs' fp8 format (dS with its
 * 128 x 128 block scales). No rope. Same contract as faBackward otherwise (bits independent of the thread count).
 */
FaSchedule faBackwardFp8Schedule(const FaProblem& problem, int threads);
void faBackwardFp8(const FaProblem& problem, const FaSchedule& schedule, const FaBackwardIo& io,
                   const FaFp8Scales& scales, void* scratch);

}  // namespace gradkit::kernels
