#include "ctrain/io/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ctrain::io {
namespace {

TEST(Crc32c, StandardVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 B.4 vectors.
  std::vector<uint8_t> buf(32, 0);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x8A9136AAu);
  std::fill(buf.begin(), buf.end(), 0xff);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x113FDB5Cu);
  // Same vectors through the software table path.
  EXPECT_EQ(Crc32cSoftware("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32cSoftware(buf.data(), buf.size()), 0x113FDB5Cu);
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "hello world, this is a crc32c extend check";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    uint32_t a = Crc32c(s.data(), cut);
    EXPECT_EQ(Crc32c(s.data() + cut, s.size() - cut, a), Crc32c(s.data(), s.size())) << cut;
  }
}

TEST(Crc32c, HardwareMatchesSoftwareAllLengthsAndAlignments) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "CPU has no SSE4.2; only the table path runs here";
  std::mt19937_64 rng(42);
  std::vector<uint8_t> buf(4096 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 16; ++align) {
    for (size_t n = 0; n <= 300; ++n) {
      ASSERT_EQ(Crc32cHardware(buf.data() + align, n), Crc32cSoftware(buf.data() + align, n))
          << "align " << align << " n " << n;
      ASSERT_EQ(Crc32cHardware(buf.data() + align, n, 0x12345678u),
                Crc32cSoftware(buf.data() + align, n, 0x12345678u));
    }
  }
  for (size_t n : {1000u, 1023u, 1024u, 1025u, 4095u, 4096u}) {
    EXPECT_EQ(Crc32cHardware(buf.data() + 3, n), Crc32cSoftware(buf.data() + 3, n)) << n;
  }
}

TEST(Crc32c, MaskUnmask) {
  // TensorFlow's crc32c::Mask: rotate right by 15, add 0xa282ead8.
  EXPECT_EQ(MaskCrc(0u), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    uint32_t c = rng();
    EXPECT_EQ(UnmaskCrc(MaskCrc(c)), c);
    EXPECT_NE(MaskCrc(c), c);
  }
  // Header CRC of an empty TFRecord: CRC-32C of eight zero bytes is 0x8c28b28a,
  // masked 0x07980329 (both computed independently with a bit-at-a-time
  // Python reference).
  uint8_t zeros[8] = {};
  EXPECT_EQ(Crc32c(zeros, 8), 0x8c28b28au);
  EXPECT_EQ(MaskCrc(Crc32c(zeros, 8)), 0x07980329u);
  EXPECT_EQ(MaskCrc(Crc32c("", 0)), 0xa282ead8u);
}

}  // namespace
}  // namespace ctrain::io
