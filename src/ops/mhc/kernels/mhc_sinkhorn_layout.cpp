// The Ascend950 kernel's split of tokens over vector cores and unified-buffer tiles (upstream's MhcSinkhorn tiling),
// which fixes where normOut and sumOut keep each token's steps (mhc_sinkhorn_kernel.h).
#include <algorithm>

#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"

namespace gradkit::kernels {
namespace {

// The platform the layout is emulated for: 64 vector cores with 256 KiB of unified buffer each (the Ascend950
// figures of upstream's tiling unit tests). Its kernel keeps 832 bytes for masks and scratch and double-buffers the
// rest.
constexpr int64_t kVectorCores = 64;
constexpr int64_t kUnifiedBufferBytes = 262144;
constexpr int64_t kReservedBytes = 64 + 3 * 256;
constexpr int64_t kBufferFloats = 8;  // one 32-byte block
constexpr int64_t kFloatBytes = 4;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t ceilAlign(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/** Unified-buffer bytes of a forward tile of `tokens` that saves its steps. */
int64_t forwardTileBytes(int64_t tokens, int64_t n) {
  const int64_t matrices = ceilAlign(tokens * n * n, kBufferFloats);
  const int64_t rows = ceilAlign(n * tokens * kSinkhornColumns, kBufferFloats);
  const int64_t sums = ceilAlign(tokens * kSinkhornColumns, kBufferFloats);
  return (2 * matrices + 2 * rows + 2 * sums) * kFloatBytes;
}

/** Unified-buffer bytes of a backward tile of `tokens`. */
int64_t backwardTileBytes(int64_t tokens, int64_t n) {
  const int64_t matrices = ceilAlign(tokens * n * n, kBufferFloats);
  const int64_t rows = ceilAlign(2 * tokens * n * kSinkhornColumns, kBufferFloats);
  const int64_t sums = ceilAlign(2 * tokens * kSinkhornColumns, kBufferFloats);
  return (2 * matrices + rows + sums) * kFloatBytes;
}

}  // namespace

// Both directions take the smaller of the forward's and the backward's tile. Upstream's backward sizes the forward's
// tile as if nothing were saved, which for 289..291 tokens per core (n = 4; similar bands for 6 and 8) gives it other
// tiles than the forward wrote; gradkit's backward reads what the forward wrote.
SinkhornSplit ascend950SinkhornSplit(int64_t tokens, int64_t n) {
  SinkhornSplit split;
  split.coreTokens = std::max<int64_t>(1, ceilDiv(tokens, kVectorCores));
  split.usedCores = std::max<int64_t>(1, ceilDiv(tokens, split.coreTokens));
  const int64_t available = (kUnifiedBufferBytes - kReservedBytes) / 2;

  int64_t forward = ceilAlign(split.coreTokens, 8);
  if (forwardTileBytes(forward, n) > available) forward = available / forwardTileBytes(1, n) / 8 * 8;
  if (forward == 0) forward = 8;

  int64_t backward = split.coreTokens;
  if (backwardTileBytes(backward, n) > available) backward = available / backwardTileBytes(1, n) / 8 * 8;

  split.tileTokens = std::max<int64_t>(1, forward <= backward ? forward : backward);
  return split;
}

SinkhornSpot SinkhornLayout::spotOf(int64_t token) const {
  const int64_t steps = 2 * iters;
  const int64_t core = token / split.coreTokens;
  const int64_t inCore = token % split.coreTokens;
  const int64_t coreSize = core == split.usedCores - 1 ? tokens - core * split.coreTokens : split.coreTokens;
  const int64_t tile = inCore / split.tileTokens;
  SinkhornSpot spot;
  spot.slot = inCore % split.tileTokens;
  spot.tileSize = std::min(split.tileTokens, coreSize - tile * split.tileTokens);
  const int64_t tokensBefore = core * split.coreTokens + tile * split.tileTokens;
  spot.normBase = tokensBefore * steps * n * kSinkhornColumns;
  spot.sumBase = tokensBefore * steps * kSinkhornColumns;
  return spot;
}

}  // namespace gradkit::kernels
