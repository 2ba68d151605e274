#include "ctrain/io/compression.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <random>
#include <string>

#include "ctrain/io/file.h"

namespace ctrain::io {
namespace {

// A WritableFile that appends into a caller-owned string.
class StringSink final : public WritableFile {
 public:
  StringSink(std::string* out, std::string name = "mem") : out_(out), name_(std::move(name)) {}
  Status Append(std::string_view d) override {
    out_->append(d);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Close() override {
    ++closes;
    return Status::OK();
  }
  const std::string& name() const override { return name_; }
  int closes = 0;

 private:
  std::string* out_;
  std::string name_;
};

std::string Compress(std::string_view data, Compression c, int level = 6) {
  std::string out;
  auto f = NewDeflatingFile(std::make_unique<StringSink>(&out), c, level);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  // Feed in uneven pieces to exercise repeated Append.
  size_t i = 0, step = 1;
  while (i < data.size()) {
    size_t k = std::min(step, data.size() - i);
    EXPECT_TRUE((*f)->Append(data.substr(i, k)).ok());
    i += k;
    step = step * 3 + 1;
  }
  EXPECT_TRUE((*f)->Close().ok());
  return out;
}

StatusOr<std::string> ReadAll(SequentialFile* f, size_t chunk) {
  std::string out, buf(chunk, '\0');
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(size_t n, f->Read(buf.data(), chunk));
    out.append(buf.data(), n);
    if (n < chunk) return out;
  }
}

StatusOr<std::string> Inflate(std::string compressed, Compression c, size_t chunk = 4096) {
  CTRAIN_ASSIGN_OR_RETURN(auto f, NewInflatingFile(NewMemoryFile("blob.gz", std::move(compressed)), c));
  return ReadAll(f.get(), chunk);
}

std::string RandomData(size_t n, uint64_t seed, bool compressible) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = compressible ? "abcdefgh\n"[rng() % 9] : static_cast<char>(rng());
  return s;
}

TEST(Compression, ParseAndName) {
  EXPECT_EQ(*ParseCompression("none"), Compression::kNone);
  EXPECT_EQ(*ParseCompression(""), Compression::kNone);
  EXPECT_EQ(*ParseCompression("gzip"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("GZIP"), Compression::kGzip);
  EXPECT_EQ(*ParseCompression("zlib"), Compression::kZlib);
  EXPECT_EQ(*ParseCompression("auto"), Compression::kAuto);
  auto bad = ParseCompression("snappy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown compression \"snappy\" (expected none, gzip, zlib or auto)");
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib, Compression::kAuto}) {
    EXPECT_EQ(*ParseCompression(CompressionName(c)), c);
  }
}

TEST(Compression, RoundTripManySizes) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    for (size_t n : {0, 1, 2, 7, 100, 4095, 4096, 4097, 65535, 65536, 262145, (1 << 20) + 7}) {
      for (bool comp : {true, false}) {
        std::string data = RandomData(n, n * 31 + comp, comp);
        std::string z = Compress(data, c);
        if (c == Compression::kGzip) {
          ASSERT_GE(z.size(), 18u);
          EXPECT_EQ(static_cast<uint8_t>(z[0]), 0x1f);
          EXPECT_EQ(static_cast<uint8_t>(z[1]), 0x8b);
        }
        EXPECT_EQ(DetectCompression(z), c) << n;
        for (size_t chunk : {size_t{1} << 16, size_t{1000}}) {
          auto back = Inflate(z, c, chunk);
          ASSERT_TRUE(back.ok()) << back.status().ToString();
          ASSERT_EQ(back->size(), data.size());
          ASSERT_TRUE(*back == data) << CompressionName(c) << " n=" << n;
        }
      }
    }
  }
}

TEST(Compression, OneByteReadsAndPosition) {
  std::string data = RandomData(5000, 1, true);
  auto f = NewInflatingFile(NewMemoryFile("x", Compress(data, Compression::kGzip)), Compression::kGzip);
  ASSERT_TRUE(f.ok());
  auto back = ReadAll(f->get(), 1);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
  EXPECT_EQ((*f)->position(), 5000u);
  EXPECT_EQ((*f)->name(), "x");
}

TEST(Compression, WriterOutputReadableByZlibGzread) {
  // Independent decoder: zlib's gz* API on a real file.
  char path[] = "/tmp/ctrain_compression_testXXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string data = RandomData(300000, 9, true);
  {
    auto w = OpenWritableFile(path);
    ASSERT_TRUE(w.ok());
    auto z = NewDeflatingFile(std::move(*w), Compression::kGzip, 9);
    ASSERT_TRUE(z.ok());
    ASSERT_TRUE((*z)->Append(data).ok());
    ASSERT_TRUE((*z)->Close().ok());
  }
  gzFile g = gzopen(path, "rb");
  ASSERT_NE(g, nullptr);
  std::string back(data.size() + 10, '\0');
  int n = gzread(g, back.data(), static_cast<unsigned>(back.size()));
  gzclose(g);
  ASSERT_EQ(n, static_cast<int>(data.size()));
  back.resize(n);
  EXPECT_EQ(back, data);
  // And through OpenForRead with auto detection.
  Compression detected = Compression::kAuto;
  auto r = OpenForRead(path, Compression::kAuto, &detected);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(detected, Compression::kGzip);
  EXPECT_EQ(*ReadAll(r->get(), 1 << 16), data);
  unlink(path);
}

TEST(Compression, ConcatenatedMembersReadWhole) {
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    std::string a = RandomData(70000, 2, true), b = RandomData(123, 3, false), e;
    std::string z = Compress(a, c) + Compress(e, c) + Compress(b, c);
    auto back = Inflate(z, c, 777);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == a + b) << CompressionName(c);
  }
}

TEST(Compression, FlushMakesDataDecodable) {
  std::string out;
  auto f = NewDeflatingFile(std::make_unique<StringSink>(&out), Compression::kZlib);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("hello ").ok());
  ASSERT_TRUE((*f)->Flush().ok());
  // After a sync flush the bytes so far inflate to "hello " (stream not ended:
  // reading to EOF reports truncation, but the data is there).
  z_stream s{};
  ASSERT_EQ(inflateInit(&s), Z_OK);
  char buf[64];
  s.next_in = reinterpret_cast<Bytef*>(out.data());
  s.avail_in = static_cast<uInt>(out.size());
  s.next_out = reinterpret_cast<Bytef*>(buf);
  s.avail_out = sizeof(buf);
  EXPECT_EQ(inflate(&s, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(std::string(buf, sizeof(buf) - s.avail_out), "hello ");
  inflateEnd(&s);
  ASSERT_TRUE((*f)->Append("world").ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(*Inflate(out, Compression::kZlib), "hello world");
  EXPECT_EQ((*f)->Append("x").code(), StatusCode::kFailedPrecondition);
}

TEST(Compression, CorruptByteIsDataLoss) {
  std::string data = RandomData(20000, 4, true);
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    std::string z = Compress(data, c);
    int data_loss = 0, harmless = 0, adler_misses = 0;
    // Flip each byte of the deflate body and trailer (gzip header bytes 4..9,
    // mtime/xfl/os, are not checked by any decoder, so start after them).
    for (size_t pos = 10; pos < z.size(); ++pos) {
      std::string bad = z;
      bad[pos] ^= 0x40;
      auto back = Inflate(bad, c);
      if (back.ok()) {
        // Possible for padding bits after the final block (then the output is
        // unchanged) and, for zlib only, when the damaged output happens to
        // keep its Adler-32 (a weak sum; gzip's CRC-32 catches these). The
        // TFRecord CRC32C above this layer still catches such damage.
        if (*back == data) {
          ++harmless;
        } else {
          ASSERT_EQ(c, Compression::kZlib) << "gzip flip at " << pos << " changed the data silently";
          ++adler_misses;
        }
        continue;
      }
      ASSERT_TRUE(back.status().code() == StatusCode::kDataLoss ||
                  back.status().code() == StatusCode::kOutOfRange)
          << back.status().ToString();
      if (back.status().code() == StatusCode::kDataLoss) {
        ++data_loss;
        std::string m(back.status().message());
        EXPECT_EQ(m.rfind("blob.gz: corrupt " + std::string(CompressionName(c)) +
                              " stream near compressed byte offset ", 0),
                  0u)
            << m;
      }
    }
    EXPECT_GT(data_loss, static_cast<int>(z.size()) / 2);
    EXPECT_LE(harmless, 1);
    EXPECT_LE(adler_misses, 3);
  }
}

TEST(Compression, TruncationIsOutOfRange) {
  std::string data = RandomData(3000, 5, true);
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    std::string z = Compress(data, c);
    auto empty = Inflate("", c);  // zero bytes: an empty stream
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(*empty, "");
    for (size_t cut = 1; cut < z.size(); ++cut) {
      auto back = Inflate(z.substr(0, cut), c);
      ASSERT_FALSE(back.ok()) << "cut " << cut;
      EXPECT_EQ(back.status().code(), StatusCode::kOutOfRange) << back.status().ToString();
      EXPECT_EQ(std::string(back.status().message()),
                "blob.gz: truncated " + std::string(CompressionName(c)) +
                    " stream: EOF at compressed byte offset " + std::to_string(cut) +
                    " before the end of the compressed stream");
    }
  }
}

TEST(Compression, TrailingGarbageIsDataLoss) {
  std::string z = Compress("payload", Compression::kGzip) + std::string("\0\0\0\0", 4);
  auto back = Inflate(z, Compression::kGzip);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), StatusCode::kDataLoss) << back.status().ToString();
}

TEST(Compression, Detection) {
  EXPECT_EQ(DetectCompression(""), Compression::kNone);
  EXPECT_EQ(DetectCompression("\x1f"), Compression::kNone);
  EXPECT_EQ(DetectCompression("\x1f\x8b"), Compression::kGzip);
  EXPECT_EQ(DetectCompression("hello world"), Compression::kNone);
  EXPECT_EQ(DetectCompression(Compress("hello world", Compression::kZlib)), Compression::kZlib);
  EXPECT_EQ(DetectCompression(Compress("", Compression::kZlib)), Compression::kZlib);
  // Valid zlib header (78 9c) but the DEFLATE data that follows is a stored
  // block with LEN=0, NLEN=0, which is invalid: the trial inflate rejects it.
  EXPECT_EQ(DetectCompression(std::string("\x78\x9c\x00\x00\x00\x00\x00\x00\x00\x00", 10)), Compression::kNone);
  // FDICT set (78 bb): never written by TF or us -> not zlib.
  EXPECT_EQ(DetectCompression("\x78\xbb\x01\x02"), Compression::kNone);
  // A plain-format probe that accepts wins over everything.
  PlainFormatProbe yes = [](std::string_view) { return true; };
  EXPECT_EQ(DetectCompression("\x1f\x8b\x08", yes), Compression::kNone);
}

// B35: a small stream (all of it inside the detection prefix) whose only
// fault is its trailer is still detected as that compression, so reading it
// names the zlib/gzip fault instead of blaming the record format or framing.
TEST(Compression, B35BadTrailerOnSmallStreamIsDetectedAndNamed) {
  const std::string data = RandomData(300, 9, true);
  struct Case {
    Compression c;
    size_t from_end;  // trailer byte to flip, counted from the end
    const char* zlib_msg;
    size_t at_from_end;  // where zlib notices, counted from the end
  };
  for (const Case& k : {Case{Compression::kZlib, 1, "incorrect data check", 0},   // Adler-32
                        Case{Compression::kZlib, 4, "incorrect data check", 0},
                        Case{Compression::kGzip, 8, "incorrect data check", 4},   // CRC-32
                        Case{Compression::kGzip, 1, "incorrect length check", 0}}) {  // ISIZE
    std::string z = Compress(data, k.c);
    ASSERT_LT(z.size(), kPeekBytes);
    z[z.size() - k.from_end] ^= 0x5a;
    EXPECT_EQ(DetectCompression(z), k.c) << CompressionName(k.c) << " flip " << k.from_end;
    Compression d = Compression::kAuto;
    auto f = WrapForRead(NewMemoryFile("small.zz", z), Compression::kAuto, &d);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(d, k.c);
    auto back = ReadAll(f->get(), 1 << 16);
    ASSERT_FALSE(back.ok());
    EXPECT_EQ(back.status().code(), StatusCode::kDataLoss);
    EXPECT_EQ(std::string(back.status().message()),
              "small.zz: corrupt " + std::string(CompressionName(k.c)) + " stream near compressed byte offset " +
                  std::to_string(z.size() - k.at_from_end) + ": " + k.zlib_msg);
  }
  // The case file itself (tests/cases/B35, a 92-byte ZLIB TFRecord with a bad Adler-32).
  auto f = OpenForRead(std::string(CTRAIN_SOURCE_DIR) + "/tests/cases/B35/bad_adler.tfrecord.zz", Compression::kAuto,
                       nullptr);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto back = ReadAll(f->get(), 1 << 16);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("corrupt zlib stream near compressed byte offset 92: incorrect data check"),
            std::string::npos)
      << back.status().ToString();
}

// The first 2 bytes of an uncompressed TFRecord are the low bytes of its
// length. Every length below 2^17 whose low bytes pass the 2-byte zlib header
// check must still be detected as "none" thanks to the trial inflate (here
// without the TFRecord probe, to test the generic rule).
TEST(Compression, TFRecordLengthsThatLookLikeZlibHeaders) {
  int header_matches = 0;
  std::string payload = RandomData(1 << 17, 6, false);
  for (uint32_t len = 0; len < (1u << 17); ++len) {
    uint8_t b0 = len & 0xff, b1 = (len >> 8) & 0xff;
    if ((b0 & 0x0f) != 8 || (b0 >> 4) > 7 || (b0 * 256u + b1) % 31 != 0 || (b1 & 0x20)) continue;
    ++header_matches;
    std::string rec(8, '\0');
    for (int i = 0; i < 8; ++i) rec[i] = static_cast<char>((uint64_t{len} >> (8 * i)) & 0xff);
    rec += std::string("\x11\x22\x33\x44", 4);  // length crc (content irrelevant here)
    rec += payload.substr(0, std::min<size_t>(len, kPeekBytes));
    ASSERT_EQ(DetectCompression(rec.substr(0, kPeekBytes)), Compression::kNone) << "len " << len;
  }
  EXPECT_EQ(header_matches, 64);  // 8 CMF values x 8 FLG values per 2^16, twice
}

std::unique_ptr<SequentialFile> Mem(std::string data) { return NewMemoryFile("data.rec", std::move(data)); }

TEST(Compression, WrapForReadReplaysPeekedBytes) {
  for (size_t n : {size_t{0}, size_t{1}, kPeekBytes - 1, kPeekBytes, kPeekBytes + 1, 3 * kPeekBytes + 5}) {
    std::string data = RandomData(n, n, true);  // 'a'..'h': detected as none
    Compression d = Compression::kAuto;
    auto f = WrapForRead(Mem(data), Compression::kAuto, &d);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(d, Compression::kNone);
    for (size_t chunk : {size_t{1} << 20}) {
      auto back = ReadAll(f->get(), chunk);
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, data) << n;
    }
    EXPECT_EQ((*f)->position(), n);
  }
  // Odd chunk sizes that straddle the replay boundary.
  std::string data = RandomData(3 * kPeekBytes, 77, true);
  auto f = WrapForRead(Mem(data), Compression::kNone, nullptr);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*ReadAll(f->get(), 1000), data);
}

TEST(Compression, MismatchErrors) {
  std::string gz = Compress("some text", Compression::kGzip);
  auto r = WrapForRead(Mem(gz), Compression::kNone, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "data.rec: compression mismatch: requested none, file looks like gzip (first bytes 1f 8b 08 00 00 00 00 00)");

  r = WrapForRead(Mem("plain text here"), Compression::kGzip, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "data.rec: compression mismatch: requested gzip, file looks like none (first bytes 70 6c 61 69 6e 20 74 65)");

  r = WrapForRead(Mem(gz), Compression::kZlib, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  r = WrapForRead(Mem(Compress("x", Compression::kZlib)), Compression::kGzip, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  // Explicit and matching.
  Compression d = Compression::kAuto;
  r = WrapForRead(Mem(gz), Compression::kGzip, &d);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(d, Compression::kGzip);
  EXPECT_EQ(*ReadAll(r->get(), 100), "some text");

  // An empty stream matches every request.
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib, Compression::kAuto}) {
    r = WrapForRead(Mem(""), c, &d);
    ASSERT_TRUE(r.ok()) << CompressionName(c);
    EXPECT_EQ(*ReadAll(r->get(), 100), "");
  }
}

TEST(Compression, BadArguments) {
  std::string out;
  auto w = NewDeflatingFile(std::make_unique<StringSink>(&out), Compression::kGzip, 12);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  w = NewDeflatingFile(std::make_unique<StringSink>(&out), Compression::kAuto);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  auto r = NewInflatingFile(Mem("x"), Compression::kAuto);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  auto n = OpenForRead("/nonexistent/ctrain/file.gz", Compression::kAuto, nullptr);
  EXPECT_EQ(n.status().code(), StatusCode::kNotFound);
}

TEST(Compression, DestroyWithoutCloseDoesNotCloseSink) {
  std::string out;
  auto sink = std::make_unique<StringSink>(&out);
  StringSink* raw = sink.get();
  {
    auto w = NewDeflatingFile(std::move(sink), Compression::kGzip);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("abc").ok());
    EXPECT_EQ(raw->closes, 0);
  }
}

}  // namespace
}  // namespace ctrain::io
