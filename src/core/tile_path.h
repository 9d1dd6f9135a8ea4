// Which kind of tile product a low-precision operator runs, chosen once per process from what the CPU has.
//
//   Highway     operands widened to fp32 (exactly), products and sums in fp32: today's path, any CPU. P and dS of
//               flash attention stay fp32 between the products.
//   NativeBf16  bf16 operands, exact products, fp32 sums, as bf16 hardware (AVX512-BF16, AMX-BF16), Ascend's cube
//               unit and GPU FlashAttention compute: the ops round what they feed a product (P, dS) to bf16 first.
//               Which kernel multiplies is TileGemm's or Gemm's business; on a CPU without bf16 products both
//               compute the same exact products at the fp32 rate, so the path runs (and is tested) everywhere.
//               Auto picks it where the engine has a bf16 hardware kernel: Gemm (oneDNN 2.6) on AVX512-BF16 and
//               AMX-BF16, TileGemm (VDPBF16PS, summed in its pairs: GemmSums::Bf16Pairs) on AVX512-BF16.
//
// GRADKIT_TILE=highway|native|native-pairs|auto forces a path for bf16 ops (read once; the native ones apply to bf16
// only, fp32 and fp16 always take Highway). "native" sums TileGemm's products in pairs where the CPU has AVX512-BF16
// and in order elsewhere; "native-pairs" sums them in pairs everywhere (TileGemm's scalar emulation where the CPU
// lacks the instruction: slow, for tests). Ops read the choice in their plan and record it there; the run does not ask
// again.
#pragma once

#include <string>

#include "acl/acl_base.h"
#include "core/gemm_shape.h"

namespace gradkit {

enum class TilePath { Highway, NativeBf16 };

/** The matrix features of this CPU (cpuid, with the OS's register-state support). */
struct CpuMatrixFeatures {
  bool avx512bf16 = false;  // VDPBF16PS
  bool avx512fp16 = false;
  bool amxBf16 = false;  // AMX tiles with bf16 products (usable only after the process asks Linux for the state)
  bool amxFp16 = false;
};

/** Detected once per process; all absent under GRADKIT_ISA=avx2 (core/isa_limit.h). */
const CpuMatrixFeatures& cpuMatrixFeatures();

/** Which product kernel an op's path decides for: TileGemm (small tiles on the calling thread: flash attention) or
 *  Gemm (big threaded products through oneDNN: the compressor), whose bf16 kernels differ by CPU. */
enum class ProductEngine { TileGemm, Gemm };

/** A decision and why it was taken (for `gradkit info` and bench rows). */
struct TilePathChoice {
  TilePath path = TilePath::Highway;
  std::string reason;
  GemmSums tileSums = GemmSums::Sequential;  // TileGemm's sums on the native path
};

/** The path products with `inputType` operands on `engine` take in this process (the same answer on every call). */
TilePathChoice chooseTilePath(aclDataType inputType, ProductEngine engine = ProductEngine::TileGemm);

/** "highway" or "native-bf16". */
const char* tilePathName(TilePath path);

}  // namespace gradkit
