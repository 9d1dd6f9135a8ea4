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
// a multiple of bytesPerIteration.
template <class D64>
HWY_INLINE void philoxMaskBody(D64 d64, const MaskStream& stream, int64_t firstByte, int64_t byteCount, uint8_t* out) {
  using V = hn::Vec<D64>;
  const hn::Repartition<uint32_t, D64> d32;
  const hn::RebindToSigned<D64> di64;
  const size_t lanes = hn::Lanes(d64);
  const auto keys = philox::roundKeys<kRounds>(stream.key);

  const auto m0 = hn::Set(d32, philox::kM0);
  const auto m1 = hn::Set(d32, philox::kM1);
  const V counter2 = hn::Set(d64, uint64_t{stream.counterHigh[0]});
  const V counter3 = hn::Set(d64, uint64_t{stream.counterHigh[1]});
  const V low32 = hn::Set(d64, uint64_t{0xFFFFFFFFu});
  const auto keepBelow = hn::Set(di64, static_cast<int64_t>(stream.keepBelow));
  const V laneIndex = hn::Iota(d64, 0);

  const size_t step = bytesPerIteration(lanes);
  for (int64_t done = 0; done < byteCount; done += static_cast<int64_t>(step)) {
    const auto firstBlock = static_cast<uint64_t>((firstByte + done) * 2);
    V c0[kUnroll], c1[kUnroll], c2[kUnroll], c3[kUnroll];
    for (size_t u = 0; u < kUnroll; ++u) {
      const V block = hn::Add(hn::Set(d64, firstBlock + u * lanes), laneIndex);
      c0[u] = block;  // the high half is ignored by the multiply
      c1[u] = hn::ShiftRight<32>(block);
      c2[u] = counter2;
      c3[u] = counter3;
    }
    for (int r = 0; r < kRounds; ++r) {
      const V k0 = hn::Set(d64, uint64_t{keys[r][0]});
      const V k1 = hn::Set(d64, uint64_t{keys[r][1]});
      for (size_t u = 0; u < kUnroll; ++u) {
        const V p0 = hn::MulEven(hn::BitCast(d32, c0[u]), m0);
        const V p1 = hn::MulEven(hn::BitCast(d32, c2[u]), m1);
        c0[u] = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1[u]), k0);
        c1[u] = p1;
        c2[u] = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3[u]), k1);
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
    if (body > 0) philoxMaskBody(d64, stream, firstByte, body, out);
    return static_cast<size_t>(body);
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

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
