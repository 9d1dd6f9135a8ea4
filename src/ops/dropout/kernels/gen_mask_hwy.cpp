// SIMD mask generation, compiled once per Highway target and dispatched at run time.
//
// Layout: one Philox block per 64-bit lane, its 32-bit word in the low half. The 32x32->64 multiply
// (MulEven, vpmuludq) reads only the low halves, so the high halves may hold garbage between rounds and
// each round costs two multiplies, two shifts and four XORs per vector, with no shuffles. kUnroll
// independent vectors are interleaved to hide the multiply latency. At the end each word's low half is
// compared with the integer keep threshold and the per-lane bits are interleaved into element order
// (element 4 * block + word) with a spread table.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/dropout/kernels/gen_mask_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstring>

#include "core/philox.h"
#include "hwy/highway.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"

#ifndef GRADKIT_GEN_MASK_SPREAD_ONCE
#define GRADKIT_GEN_MASK_SPREAD_ONCE
namespace gradkit::kernels::detail {

// kSpread4[m]: bit i of the 8-bit m moved to bit 4i, so that the masks of the four words of a block
// interleave by shifting each word's spread by its word index.
struct SpreadTable {
  uint32_t value[256];
};
constexpr SpreadTable makeSpreadTable() {
  SpreadTable table{};
  for (uint32_t m = 0; m < 256; ++m) {
    uint32_t spread = 0;
    for (uint32_t bit = 0; bit < 8; ++bit) spread |= ((m >> bit) & 1u) << (4 * bit);
    table.value[m] = spread;
  }
  return table;
}
inline constexpr SpreadTable kSpread4 = makeSpreadTable();

}  // namespace gradkit::kernels::detail
#endif  // GRADKIT_GEN_MASK_SPREAD_ONCE

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kRounds = 10;
constexpr size_t kUnroll = 4;

// Bytes of mask one iteration writes: kUnroll vectors of `lanes` blocks, 4 bits per block.
constexpr size_t bytesPerIteration(size_t lanes) { return kUnroll * lanes / 2; }

// Writes whole mask bytes [firstByte, firstByte + byteCount) where every element is below n; byteCount is
// a multiple of bytesPerIteration and every block of the range has the same high word `blockHigh`.
//
// Counter words 1-3 are the same for every block of the range, so the first two rounds partly fold into
// constants: after round 0, c0 and c1 depend only on those words (c0 = hi(M1 * c2) ^ c1 ^ k0, c1 = lo(M1 * c2));
// in round 1 the product M0 * c0 is then a constant too. Only the products that involve the block's low word
// are computed per lane there, which saves about an eighth of the work.
template <class D64>
HWY_INLINE void philoxMaskBody(D64 d64, const MaskStream& stream, uint32_t blockHigh, int64_t firstByte,
                               int64_t byteCount, uint8_t* out) {
  using V = hn::Vec<D64>;
  const hn::Repartition<uint32_t, D64> d32;
  const hn::RebindToSigned<D64> di64;
  const size_t lanes = hn::Lanes(d64);
  const auto keys = philox::roundKeys<kRounds>(stream.key);
  // Round keys as vectors, once per call (the round loop below reads them as memory operands).
  V k0[kRounds], k1[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    k0[r] = hn::Set(d64, uint64_t{keys[r][0]});
    k1[r] = hn::Set(d64, uint64_t{keys[r][1]});
  }
  // The lane-independent parts of rounds 0 and 1.
  const uint64_t product1Round0 = uint64_t{philox::kM1} * stream.counterHigh[0];
  const uint32_t c0Round0 = static_cast<uint32_t>(product1Round0 >> 32) ^ blockHigh ^ keys[0][0];
  const uint32_t c1Round0 = static_cast<uint32_t>(product1Round0);
  const uint64_t product0Round1 = uint64_t{philox::kM0} * c0Round0;
  const V c3XorKeyRound0 = hn::Set(d64, uint64_t{stream.counterHigh[1] ^ keys[0][1]});
  const V c1XorKeyRound1 = hn::Set(d64, uint64_t{c1Round0 ^ keys[1][0]});
  const V hiProduct0XorKeyRound1 = hn::Set(d64, uint64_t{static_cast<uint32_t>(product0Round1 >> 32) ^ keys[1][1]});
  const V c3Round1 = hn::Set(d64, uint64_t{static_cast<uint32_t>(product0Round1)});

  const auto m0 = hn::Set(d32, philox::kM0);
  const auto m1 = hn::Set(d32, philox::kM1);
  const V low32 = hn::Set(d64, uint64_t{0xFFFFFFFFu});
  const auto keepBelow = hn::Set(di64, static_cast<int64_t>(stream.keepBelow));
  const V laneIndex = hn::Iota(d64, 0);

  const size_t step = bytesPerIteration(lanes);
  for (int64_t done = 0; done < byteCount; done += static_cast<int64_t>(step)) {
    const auto firstBlock = static_cast<uint64_t>((firstByte + done) * 2);
    V c0[kUnroll], c1[kUnroll], c2[kUnroll], c3[kUnroll];
    for (size_t u = 0; u < kUnroll; ++u) {
      // Round 0: only M0 * (block low word) differs per lane (the multiply ignores the high half).
      const V block = hn::Add(hn::Set(d64, firstBlock + u * lanes), laneIndex);
      const V p0 = hn::MulEven(hn::BitCast(d32, block), m0);
      const V c2Round0 = hn::Xor(hn::ShiftRight<32>(p0), c3XorKeyRound0);
      // Round 1: M0 * c0 is the constant product0Round1.
      const V p1 = hn::MulEven(hn::BitCast(d32, c2Round0), m1);
      c0[u] = hn::Xor(hn::ShiftRight<32>(p1), c1XorKeyRound1);
      c1[u] = p1;
      c2[u] = hn::Xor(p0, hiProduct0XorKeyRound1);  // p0 is c3 after round 0
      c3[u] = c3Round1;
    }
#pragma GCC unroll 8
    for (int r = 2; r < kRounds; ++r) {
      for (size_t u = 0; u < kUnroll; ++u) {
        const V p0 = hn::MulEven(hn::BitCast(d32, c0[u]), m0);
        const V p1 = hn::MulEven(hn::BitCast(d32, c2[u]), m1);
        c0[u] = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1[u]), k0[r]);
        c1[u] = p1;
        c2[u] = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3[u]), k1[r]);
        c3[u] = p0;
      }
    }
    for (size_t u = 0; u < kUnroll; ++u) {
      const V words[4] = {c0[u], c1[u], c2[u], c3[u]};
      uint32_t interleaved = 0;
      for (int w = 0; w < 4; ++w) {
        const auto x = hn::BitCast(di64, hn::And(words[w], low32));
        uint8_t bits[8] = {};
        hn::StoreMaskBits(di64, hn::Lt(x, keepBelow), bits);
        interleaved |= detail::kSpread4.value[bits[0]] << w;
      }
      // 4 bits per lane: lanes / 2 bytes, little-endian.
      std::memcpy(out + done + u * (lanes / 2), &interleaved, lanes / 2);
    }
  }
}

// Returns how many leading bytes of the range the SIMD body wrote (the rest is for the scalar kernel).
size_t GenMaskBytesBody(const MaskStream& stream, int64_t n, int64_t firstByte, int64_t byteCount, uint8_t* out) {
  const hn::ScalableTag<uint64_t> d64;
  // One-lane targets cannot hold a whole byte per vector pair, and the spread table covers at most 8 lanes.
  if constexpr (hn::MaxLanes(d64) < 2 || hn::MaxLanes(d64) > 8) {
    return 0;
  } else {
    const int64_t fullBytes = n / 8;  // bytes whose 8 elements are all below n
    const int64_t available = fullBytes > firstByte ? fullBytes - firstByte : 0;
    const auto step = static_cast<int64_t>(bytesPerIteration(hn::Lanes(d64)));
    const int64_t body = (available < byteCount ? available : byteCount) / step * step;
    // Pieces within which the block's high word is constant: 2^32 blocks = 2^31 bytes, a multiple of step.
    constexpr int64_t kBytesPerHighWord = int64_t{1} << 31;
    int64_t done = 0;
    while (done < body) {
      const int64_t at = firstByte + done;
      const int64_t windowEnd = (at / kBytesPerHighWord + 1) * kBytesPerHighWord;
      const int64_t piece = windowEnd - at < body - done ? (windowEnd - at) / step * step : body - done;
      if (piece == 0) break;  // a window edge inside a step (unaligned range): the scalar kernel does the rest
      philoxMaskBody(d64, stream, static_cast<uint32_t>(at / kBytesPerHighWord), at, piece, out + done);
      done += piece;
    }
    return static_cast<size_t>(done);
  }
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(GenMaskBytesBody);

void genMaskBytesSimd(const MaskStream& stream, int64_t n, int64_t firstByte, int64_t byteCount, uint8_t* out) {
  const auto body = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(GenMaskBytesBody)(stream, n, firstByte, byteCount, out));
  if (body < byteCount) genMaskBytesScalar(stream, n, firstByte + body, byteCount - body, out + body);
}

const GenMaskKernels kGenMaskSimdKernels{genMaskBytesSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
