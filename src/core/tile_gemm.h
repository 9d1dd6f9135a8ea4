// A small-tile GEMM for attention-sized blocks (64-256 x 64-256 x 128), run thousands of times per call on
// the calling thread: C[M,N] (fp32) = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, with A and B both fp32 or
// both bf16 (raw uint16 bits), fp32 accumulation.
//
// Create the TileGemm in the plan (it validates the shape and sizes its scratch there); book
// scratchBytes() in the workspace; call run() from a kernel. run() allocates nothing, starts no threads,
// takes no locks and never throws: it is made to be called from inside an OpenMP worker.
//
// Numerics (the contract every kernel keeps, SIMD and scalar alike):
//   acc(i,j) = fma(a(i,K-1), b(K-1,j), ... fma(a(i,1), b(1,j), fma(a(i,0), b(0,j), 0)))   (fp32, k ascending)
//   t        = alpha * acc(i,j)                                                             (fp32, rounded)
//   C(i,j)   = beta == 0 ? t : fma(beta, C(i,j), t)
// bf16 operands are widened to fp32 exactly before the products. With beta == 0, C is only written (NaN or
// Inf already in C does not propagate). Every kernel computes exactly this, so the bits do not depend on
// the ISA, the thread or the run: the Highway kernels (targets with native FMA) are bit-identical with the
// scalar reference; targets without FMA (SSSE3, SSE4, EMU128, SCALAR) run the scalar reference.
//
// Bf16Pairs sums (core/gemm_shape.h) change only the summation order: the AVX512-BF16 kernel where the CPU has it,
// else its scalar emulation (same bits; GRADKIT_FORCE_SCALAR=1 forces the emulation).
//
// Kernels: a Highway register-blocked micro-kernel (rows x 2 vectors of C in registers, op(B) packed into
// column panels and op(A) into row panels in the scratch, dynamic dispatch) and the plain scalar reference
// (GRADKIT_FORCE_SCALAR=1, see core/kernel_select.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/gemm_shape.h"

namespace gradkit {

/** The shape of one tile product (fixed when the TileGemm is created). */
using TileGemmShape = GemmShape;

class TileGemm {
 public:
  /** Validates the shape (throws std::invalid_argument naming the field), fills dense leading dims,
   *  picks the kernel (scalar when GRADKIT_FORCE_SCALAR is set) and sizes the scratch. */
  explicit TileGemm(const TileGemmShape& shape);

  /** Bytes of scratch run() needs (0 for an empty product). Give it 64-byte aligned memory for speed;
   *  any alignment of 4 bytes is correct. */
  size_t scratchBytes() const { return scratchBytes_; }

  /** C = alpha*op(A)*op(B) + beta*C on the calling thread. `scratch` holds at least scratchBytes() bytes,
   *  private to this call (its contents before and after are unspecified); it may be null when
   *  scratchBytes() is 0. A, B and C must not overlap C. */
  void run(const void* a, const void* b, float* c, void* scratch) const;

  /** The shape with leading dims filled in. */
  const TileGemmShape& shape() const { return shape_; }

  /** The kernel run() uses: "scalar", the Highway target's name (e.g. "AVX2"), "AVX512-BF16 pairs" or
   *  "scalar pairs". */
  const char* kernelName() const;

 private:
  TileGemmShape shape_;
  size_t scratchBytes_ = 0;
  bool scalar_ = false;
  bool bf16PairsHardware_ = false;  // Bf16Pairs sums on a CPU with AVX512-BF16
};

namespace tile_gemm_detail {

/** Scratch bytes the dispatched Highway kernel needs for `shape` (0 when that target runs the scalar
 *  reference because it has no native FMA). */
size_t simdScratchBytes(const TileGemmShape& shape);

/** Scratch bytes that suffice for every x86 target (vectors up to 512 bits) and ARM NEON/SVE up to 512 bits. */
size_t portableScratchBytes(const TileGemmShape& shape);

/** The dispatched Highway kernel. Returns false, touching nothing, when that target has no native FMA or
 *  needs more than `scratchBytes`; the caller then runs runScalar (same bits). */
bool runSimd(const TileGemmShape& shape, const void* a, const void* b, float* c, void* scratch, size_t scratchBytes);

/** The name of the target runSimd dispatches to, or "scalar" when it would return false. */
const char* simdKernelName(const TileGemmShape& shape, size_t scratchBytes);

/** dst[e] += src[e] for e < count (Highway, dispatched; the bits of the plain loop). */
void addRow(float* dst, const float* src, int64_t count);

/** The scalar reference kernel (no scratch); Bf16Pairs sums run runScalarBf16Pairs. */
void runScalar(const TileGemmShape& shape, const void* a, const void* b, float* c);

/** Scratch bytes of runAvx512Bf16Pairs (core/tile_gemm_bf16_pairs.cpp). */
size_t bf16PairsScratchBytes(const TileGemmShape& shape);

/** The scalar emulation of VDPBF16PS sums (GemmSums::Bf16Pairs), no scratch. */
void runScalarBf16Pairs(const TileGemmShape& shape, const uint16_t* a, const uint16_t* b, float* c);

/** The AVX512-BF16 kernel of Bf16Pairs sums: only on a CPU with AVX512-BF16 (cpuMatrixFeatures), k > 0. */
void runAvx512Bf16Pairs(const TileGemmShape& shape, const uint16_t* a, const uint16_t* b, float* c, void* scratch);

/**
 * The same kernel for TileGemmRowsAdd (core/tile_gemm_rows_add.h): two Bf16Pairs products of one m x n, k > 0 each,
 * summed and added to rows[r]; scratch of bf16PairsScratchBytes(first) rounded up to 64, +
 * bf16PairsScratchBytes(second).
 */
void runAvx512Bf16PairsRowsAdd(const TileGemmShape& first, const uint16_t* a1, const uint16_t* b1,
                               const TileGemmShape& second, const uint16_t* a2, const uint16_t* b2, float* const* rows,
                               void* scratch);

}  // namespace tile_gemm_detail

}  // namespace gradkit
