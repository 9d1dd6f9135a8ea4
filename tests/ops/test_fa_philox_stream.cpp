// The flash attention dropout stream as the kernels define it (kernels/fa_semantics.h over core/philox.h) against
// the worked values of spec fag.md 3.6 (seed 2, offset 0), and the keep threshold rule of 3.5 / DECISIONS.md.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/philox.h"
#include "ops/flash_attention/kernels/fa_semantics.h"

namespace gradkit::kernels {
namespace {

FaDropout streamOf(int64_t seed, uint64_t offset, float keepProb) {
  FaDropout dropout;
  dropout.kind = FaDropoutKind::Philox;
  dropout.keepProb = keepProb;
  dropout.key[0] = philox::keyFromSeed(seed)[0];
  dropout.key[1] = philox::keyFromSeed(seed)[1];
  dropout.counterLow = offset / 16 + (offset % 16 != 0 ? 1 : 0);
  dropout.threshold = static_cast<uint32_t>(static_cast<int64_t>(keepProb * 255.0f));
  return dropout;
}

TEST(FaPhiloxStream, BlocksOfSeedTwoAreTheWorkedValues) {
  const philox::Key key = philox::keyFromSeed(2);
  EXPECT_EQ(philox::block<7>({0, 0, 0, 0}, key), (philox::Counter{0xafcf3062u, 0xf6539c39u, 0x9b1d477au, 0x89cea381u}));
  EXPECT_EQ(philox::block<7>({1, 0, 0, 0}, key), (philox::Counter{0x754695eeu, 0x887a6249u, 0xc5764a61u, 0x1af56c9eu}));
}

TEST(FaPhiloxStream, FirstThirtyTwoBytesAreTheWorkedValues) {
  const uint8_t expected[32] = {0x62, 0x30, 0xcf, 0xaf, 0x39, 0x9c, 0x53, 0xf6, 0x7a, 0x47, 0x1d,
                                0x9b, 0x81, 0xa3, 0xce, 0x89, 0xee, 0x95, 0x46, 0x75, 0x49, 0x62,
                                0x7a, 0x88, 0x61, 0x4a, 0x76, 0xc5, 0x9e, 0x6c, 0xf5, 0x1a};
  const FaDropout dropout = streamOf(2, 0, 0.9f);
  for (uint64_t e = 0; e < 32; ++e) EXPECT_EQ(faPhiloxByte(dropout, e), expected[e]) << e;
}

TEST(FaPhiloxStream, KeepBitsOfTheFirstRowAreTheWorkedValues) {
  // One row of 32 keys (rows are padded to 16 bytes: 32 needs none), element j = stream byte j.
  FaBatch batch;
  batch.s1 = 1;
  batch.s2 = 32;
  batch.dropRowLength = 32;
  const struct {
    float keep;
    uint32_t threshold;
    const char* bits;
  } cases[] = {{0.9f, 229, "11111110111111110111111111111101"},
               {0.8f, 204, "11011110111111010111111111111101"},
               {0.5f, 127, "11001010111000000011111011100101"}};
  for (const auto& c : cases) {
    const FaDropout dropout = streamOf(2, 0, c.keep);
    EXPECT_EQ(dropout.threshold, c.threshold) << c.keep;
    std::string bits;
    for (int64_t j = 0; j < 32; ++j) bits += faKeep(dropout, batch, 0, 0, j) ? '1' : '0';
    EXPECT_EQ(bits, c.bits) << c.keep;
  }
}

TEST(FaPhiloxStream, OffsetStartsAtBlockCeilOffsetOverSixteen) {
  // offset 17 -> counter 2: byte 0 is byte 0 of block 2 of the offset-0 stream.
  const FaDropout shifted = streamOf(2, 17, 0.9f), plain = streamOf(2, 0, 0.9f);
  for (uint64_t e = 0; e < 48; ++e) EXPECT_EQ(faPhiloxByte(shifted, e), faPhiloxByte(plain, e + 32)) << e;
}

}  // namespace
}  // namespace gradkit::kernels
