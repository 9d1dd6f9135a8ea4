#include "core/tile_path.h"

#include <cstdlib>
#include <cstring>

#include "core/isa_limit.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace gradkit {
namespace {

#if defined(__x86_64__) || defined(__i386__)
/** XCR0: which register states the OS saves (bits 5-7 AVX-512, 17-18 AMX tiles). */
uint64_t osRegisterStates() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & (1u << 27)) == 0) return 0;  // no OSXSAVE
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<uint64_t>(high) << 32) | low;
}

CpuMatrixFeatures detect() {
  CpuMatrixFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return f;
  const unsigned leaf7Edx = edx;
  const bool avx512f = (ebx & (1u << 16)) != 0;
  unsigned eax1 = 0;
  if (eax >= 1) __get_cpuid_count(7, 1, &eax1, &ebx, &ecx, &edx);
  const uint64_t states = osRegisterStates();
  const bool avx512State = (states & 0xE6) == 0xE6;                              // SSE, AVX, opmask, ZMM
  const bool tileState = (states & (uint64_t{3} << 17)) == (uint64_t{3} << 17);  // TILECFG, TILEDATA
  f.avx512bf16 = avx512f && avx512State && (eax1 & (1u << 5)) != 0;
  f.avx512fp16 = avx512f && avx512State && (leaf7Edx & (1u << 23)) != 0;
  const bool amxTile = tileState && (leaf7Edx & (1u << 24)) != 0;
  f.amxBf16 = amxTile && (leaf7Edx & (1u << 22)) != 0;
  f.amxFp16 = amxTile && (eax1 & (1u << 21)) != 0;
  return f;
}
#else
CpuMatrixFeatures detect() { return {}; }
#endif

enum class Request { Auto, Highway, Native, NativePairs };

Request requested(bool* understood) {
  const char* value = std::getenv("GRADKIT_TILE");
  *understood = true;
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "auto") == 0) return Request::Auto;
  if (std::strcmp(value, "highway") == 0) return Request::Highway;
  if (std::strcmp(value, "native") == 0) return Request::Native;
  if (std::strcmp(value, "native-pairs") == 0) return Request::NativePairs;
  *understood = false;
  return Request::Auto;
}

TilePathChoice chooseBf16(ProductEngine engine) {
  bool understood = true;
  const Request request = requested(&understood);
  const std::string ignored = understood ? "" : "; GRADKIT_TILE is not highway|native|native-pairs|auto: ignored";
  const CpuMatrixFeatures& f = cpuMatrixFeatures();
  const GemmSums hardwareSums = f.avx512bf16 ? GemmSums::Bf16Pairs : GemmSums::Sequential;
  if (request == Request::Highway) return {TilePath::Highway, "forced by GRADKIT_TILE=highway"};
  if (request == Request::Native) return {TilePath::NativeBf16, "forced by GRADKIT_TILE=native", hardwareSums};
  if (request == Request::NativePairs) {
    return {TilePath::NativeBf16, "forced by GRADKIT_TILE=native-pairs", GemmSums::Bf16Pairs};
  }
  if (isaLimitedBelowAvx512()) return {TilePath::Highway, "GRADKIT_ISA=avx2: no AVX512-BF16, no AMX" + ignored};
  if (!f.amxBf16 && !f.avx512bf16) {
    return {TilePath::Highway, "the CPU has no bf16 products: no AVX512-BF16, no AMX-BF16" + ignored};
  }
  const std::string unit = f.amxBf16 ? "AMX-BF16" : "AVX512-BF16";
  if (engine == ProductEngine::Gemm) return {TilePath::NativeBf16, "oneDNN multiplies bf16 on " + unit + ignored};
  // TileGemm's bf16 kernel is VDPBF16PS (every AMX CPU has it too): twice the fp32 FMA rate.
  if (!f.avx512bf16) return {TilePath::Highway, "the CPU has " + unit + " but no AVX512-BF16, TileGemm's kernel"};
  return {TilePath::NativeBf16, "TileGemm multiplies bf16 pairs with AVX512-BF16" + ignored, GemmSums::Bf16Pairs};
}

}  // namespace

const CpuMatrixFeatures& cpuMatrixFeatures() {
  static const CpuMatrixFeatures features = isaLimitedBelowAvx512() ? CpuMatrixFeatures{} : detect();
  return features;
}

TilePathChoice chooseTilePath(aclDataType inputType, ProductEngine engine) {
  if (inputType != ACL_BF16) return {TilePath::Highway, "only bf16 has a native path"};
  static const TilePathChoice tiles = chooseBf16(ProductEngine::TileGemm);
  static const TilePathChoice gemm = chooseBf16(ProductEngine::Gemm);
  return engine == ProductEngine::Gemm ? gemm : tiles;
}

const char* tilePathName(TilePath path) { return path == TilePath::NativeBf16 ? "native-bf16" : "highway"; }

}  // namespace gradkit
