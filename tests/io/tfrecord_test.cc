#include "ctrain/io/tfrecord.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ctrain/io/crc32c.h"
#include "ctrain/io/file.h"

// Allocation probe: counts allocations and records the largest request, so
// tests can prove "no allocation per record" and "no allocation of a huge
// declared length".
namespace {
std::atomic<uint64_t> g_allocs{0};
std::atomic<size_t> g_max_alloc{0};
void* CountedAlloc(size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  size_t m = g_max_alloc.load(std::memory_order_relaxed);
  while (n > m && !g_max_alloc.compare_exchange_weak(m, n)) {
  }
  void* p = std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace
void* operator new(size_t n) { return CountedAlloc(n); }
void* operator new[](size_t n) { return CountedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace ctrain::io {
namespace {

namespace fs = std::filesystem;

class StringSink final : public WritableFile {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  Status Append(std::string_view d) override {
    out_->append(d);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
  const std::string& name() const override { return name_; }

 private:
  std::string* out_;
  std::string name_ = "sink";
};

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ctrain_tfrecord_testXXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string Frame(const std::vector<std::string>& payloads) {
  std::string out;
  for (const auto& p : payloads) AppendTFRecord(&out, p);
  return out;
}

std::unique_ptr<TFRecordReader> MemReader(std::string bytes, TFRecordReaderOptions o = {},
                                          bool with_size = false) {
  std::optional<uint64_t> size;
  if (with_size) size = bytes.size();
  auto r = TFRecordReader::FromFile(NewMemoryFile("mem.tfrecord", std::move(bytes)), o, size);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Reads to the end; returns the payloads and the final status.
Status ReadAllRecords(TFRecordReader* r, std::vector<std::string>* out) {
  std::string_view rec;
  for (;;) {
    auto more = r->Next(&rec);
    if (!more.ok()) return more.status();
    if (!*more) return Status::OK();
    out->emplace_back(rec);
  }
}

std::string RandomBytes(size_t n, std::mt19937_64& rng) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// ---------------------------------------------------------------- framing

TEST(TFRecordFraming, ExactBytes) {
  std::string empty = Frame({""});
  // u64 0, masked crc32c(8 zero bytes) = 0x07980329, masked crc32c("") = 0xa282ead8.
  EXPECT_EQ(empty, std::string("\0\0\0\0\0\0\0\0\x29\x03\x98\x07\xd8\xea\x82\xa2", 16));
  std::string abc = Frame({"abc"});
  ASSERT_EQ(abc.size(), 19u);
  EXPECT_EQ(abc.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  uint32_t lc, dc;
  std::memcpy(&lc, abc.data() + 8, 4);
  std::memcpy(&dc, abc.data() + 15, 4);
  EXPECT_EQ(lc, MaskCrc(Crc32c(abc.data(), 8)));
  EXPECT_EQ(dc, MaskCrc(Crc32c("abc", 3)));
  EXPECT_EQ(abc.substr(12, 3), "abc");
  EXPECT_TRUE(LooksLikeTFRecordHeader(abc));
  EXPECT_FALSE(LooksLikeTFRecordHeader(abc.substr(0, 11)));
  abc[8] ^= 1;
  EXPECT_FALSE(LooksLikeTFRecordHeader(abc));
}

// ---------------------------------------------------------------- round trips

TEST(TFRecordRoundTrip, NoneGzipZlibThroughRealFiles) {
  TempDir dir;
  std::mt19937_64 rng(123);
  std::vector<std::string> recs = {"", "a", "", std::string(1 << 20, 'x'), RandomBytes(3 << 20, rng)};
  for (int i = 0; i < 2000; ++i) recs.push_back(RandomBytes(rng() % 300, rng));
  recs.push_back("");
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string path = dir.File(std::string("rt_") + std::string(CompressionName(c)));
    {
      auto w = TFRecordWriter::Open(path, c);
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      for (const auto& r : recs) ASSERT_TRUE((*w)->Write(r).ok());
      EXPECT_EQ((*w)->records_written(), recs.size());
      ASSERT_TRUE((*w)->Close().ok());
      EXPECT_EQ((*w)->Write("late").code(), StatusCode::kFailedPrecondition);
    }
    for (Compression requested : {Compression::kAuto, c}) {
      auto r = TFRecordReader::Open(path, {.compression = requested});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ((*r)->compression(), c);
      std::string_view rec;
      uint64_t offset = 0, bytes = 0;
      for (size_t i = 0; i < recs.size(); ++i) {
        auto more = (*r)->Next(&rec);
        ASSERT_TRUE(more.ok()) << more.status().ToString();
        ASSERT_TRUE(*more);
        ASSERT_TRUE(rec == recs[i]) << CompressionName(c) << " record " << i;
        EXPECT_EQ((*r)->record_index(), i);
        EXPECT_EQ((*r)->record_offset(), offset);
        offset += 16 + recs[i].size();
        bytes += recs[i].size();
      }
      auto end = (*r)->Next(&rec);
      ASSERT_TRUE(end.ok());
      EXPECT_FALSE(*end);
      auto again = (*r)->Next(&rec);  // stays at the end
      ASSERT_TRUE(again.ok());
      EXPECT_FALSE(*again);
      auto k = (*r)->counters();
      EXPECT_EQ(k.records, recs.size());
      EXPECT_EQ(k.bytes, bytes);
      EXPECT_EQ(k.skipped_records, 0u);
      EXPECT_EQ(k.skipped_bytes, 0u);
    }
  }
  // The plain file is exactly the concatenation of the framed records.
  auto plain = ReadFileToString(dir.File("rt_none"));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(*plain == Frame(recs));
}

TEST(TFRecordRoundTrip, EmptyStream) {
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZlib}) {
    std::string bytes;
    {
      auto w = TFRecordWriter::ToFile(std::make_unique<StringSink>(&bytes), c);
      ASSERT_TRUE(w.ok());
      ASSERT_TRUE((*w)->Close().ok());
    }
    auto r = MemReader(bytes);
    std::vector<std::string> got;
    EXPECT_TRUE(ReadAllRecords(r.get(), &got).ok());
    EXPECT_TRUE(got.empty());
    EXPECT_EQ(r->compression(), c);  // a finished gzip/zlib stream of nothing is still detected
  }
  auto r = MemReader("");
  std::string_view rec;
  auto more = r->Next(&rec);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  EXPECT_EQ(r->compression(), Compression::kNone);
}

TEST(TFRecordRoundTrip, SmallBufferAndRecordsLargerThanIt) {
  std::mt19937_64 rng(5);
  std::vector<std::string> recs;
  for (int i = 0; i < 300; ++i) recs.push_back(RandomBytes(rng() % 700, rng));
  TFRecordReaderOptions o;
  o.buffer_bytes = 100;  // most records straddle or exceed the buffer
  for (bool with_size : {false, true}) {
    auto r = MemReader(Frame(recs), o, with_size);
    std::vector<std::string> got;
    ASSERT_TRUE(ReadAllRecords(r.get(), &got).ok());
    EXPECT_TRUE(got == recs);
  }
}

TEST(TFRecordRoundTrip, LengthWhoseLowBytesLookLikeAZlibHeader) {
  // 376 = 0x0178: the file starts 78 01, a valid zlib header. The TFRecord
  // probe (valid length crc) keeps it "none".
  std::string payload(376, 'z');
  auto r = MemReader(Frame({payload, "x"}));
  EXPECT_EQ(r->compression(), Compression::kNone);
  std::vector<std::string> got;
  ASSERT_TRUE(ReadAllRecords(r.get(), &got).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], payload);
}

TEST(TFRecordRoundTrip, NoAllocationPerRecord) {
  std::vector<std::string> recs;
  for (int i = 0; i < 20000; ++i) recs.push_back(std::string(i % 97, static_cast<char>(i)));
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    std::string bytes;
    {
      auto w = TFRecordWriter::ToFile(std::make_unique<StringSink>(&bytes), c);
      ASSERT_TRUE(w.ok());
      for (const auto& r : recs) ASSERT_TRUE((*w)->Write(r).ok());
      ASSERT_TRUE((*w)->Close().ok());
    }
    auto r = MemReader(bytes);
    std::string_view rec;
    ASSERT_TRUE(*r->Next(&rec));
    uint64_t before = g_allocs.load();
    size_t n = 1;
    for (;;) {
      auto more = r->Next(&rec);
      if (!more.ok() || !*more) break;
      ++n;
    }
    EXPECT_EQ(n, recs.size());
    EXPECT_EQ(g_allocs.load() - before, 0u) << CompressionName(c);
  }
}

// The writer reproduces a file written by tf.io.TFRecordWriter byte for byte.
TEST(TFRecordRoundTrip, RewritingRealFileIsByteIdentical) {
  std::string path = std::string(CTRAIN_SHARED_DATA_DIR) + "/criteo_paddlerec_wd.tfrecord";
  if (!fs::exists(CTRAIN_SHARED_DATA_DIR)) GTEST_SKIP() << "no shared data dir " << CTRAIN_SHARED_DATA_DIR;
  auto original = ReadFileToString(path);
  ASSERT_TRUE(original.ok());
  auto r = TFRecordReader::Open(path);
  ASSERT_TRUE(r.ok());
  std::string out;
  auto w = TFRecordWriter::ToFile(std::make_unique<StringSink>(&out));
  ASSERT_TRUE(w.ok());
  std::string_view rec;
  while (*(*r)->Next(&rec)) ASSERT_TRUE((*w)->Write(rec).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_TRUE(out == *original);
}

// ---------------------------------------------------------------- errors

// Three records: "alpha" at 0 (21 bytes), "bravo!" at 21 (22), "charlie-delta" at 43 (29); 72 bytes.
const std::vector<std::string> kThree = {"alpha", "bravo!", "charlie-delta"};
const uint64_t kOffsets[] = {0, 21, 43, 72};

Status FirstError(std::string bytes, TFRecordReaderOptions o = {}, bool with_size = false,
                  std::vector<std::string>* got = nullptr) {
  auto r = MemReader(std::move(bytes), o, with_size);
  std::vector<std::string> local;
  return ReadAllRecords(r.get(), got ? got : &local);
}

TEST(TFRecordErrors, CorruptLengthAndItsCrc) {
  for (int pos : {0, 3, 7, 8, 11}) {
    std::string b = Frame(kThree);
    b[pos] ^= 0x10;
    Status s = FirstError(b);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << pos;
    EXPECT_EQ(s.message(), "mem.tfrecord: record 0 at offset 0: corrupted record: length crc mismatch") << pos;
  }
  std::string b = Frame(kThree);
  b[21 + 2] ^= 0x01;
  std::vector<std::string> got;
  Status s = FirstError(b, {}, false, &got);
  EXPECT_EQ(s.message(), "mem.tfrecord: record 1 at offset 21: corrupted record: length crc mismatch");
  EXPECT_EQ(got, std::vector<std::string>{"alpha"});
}

TEST(TFRecordErrors, CorruptPayloadAndItsCrc) {
  for (int pos : {43 + 12, 43 + 20, 43 + 24, 43 + 25, 43 + 28}) {  // payload bytes, then data crc bytes
    std::string b = Frame(kThree);
    b[pos] ^= 0x80;
    std::vector<std::string> got;
    Status s = FirstError(b, {}, false, &got);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_EQ(s.message(), "mem.tfrecord: record 2 at offset 43: corrupted record: data crc mismatch") << pos;
    EXPECT_EQ(got.size(), 2u);
  }
}

TEST(TFRecordErrors, ErrorsAreSticky) {
  std::string b = Frame(kThree);
  b[30] ^= 1;
  auto r = MemReader(b);
  std::string_view rec;
  ASSERT_TRUE(*r->Next(&rec));
  auto e1 = r->Next(&rec);
  auto e2 = r->Next(&rec);
  ASSERT_FALSE(e1.ok());
  ASSERT_FALSE(e2.ok());
  EXPECT_EQ(e1.status().ToString(), e2.status().ToString());
}

std::string ExpectedTruncation(size_t cut, const std::string& name, size_t* complete) {
  size_t k = 0;
  while (k < 3 && kOffsets[k + 1] <= cut) ++k;
  *complete = k;
  uint64_t within = cut - kOffsets[k];
  if (within == 0) return "";
  std::string head = name + ": record " + std::to_string(k) + " at offset " + std::to_string(kOffsets[k]) +
                     ": truncated record (EOF inside the ";
  uint64_t len = kThree[k].size();
  if (within < 12) return head + "length header), expected 12 bytes, got " + std::to_string(within);
  if (within < 12 + len)
    return head + "payload), expected " + std::to_string(len) + " bytes, got " + std::to_string(within - 12);
  return head + "payload crc), expected 4 bytes, got " + std::to_string(within - 12 - len);
}

TEST(TFRecordErrors, TruncateAtEveryByte) {
  const std::string full = Frame(kThree);
  ASSERT_EQ(full.size(), 72u);
  TempDir dir;
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    size_t complete = 0;
    std::string want = ExpectedTruncation(cut, "mem.tfrecord", &complete);
    // Stream without a known size (pipe-like) and with one (regular file).
    for (bool with_size : {false, true}) {
      std::vector<std::string> got;
      Status s = FirstError(full.substr(0, cut), {}, with_size, &got);
      EXPECT_EQ(got.size(), complete) << cut;
      if (want.empty()) {
        EXPECT_TRUE(s.ok()) << cut << " " << s.ToString();
      } else {
        EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << cut;
        EXPECT_EQ(std::string(s.message()), want) << "cut " << cut << " with_size " << with_size;
      }
    }
    // Through a real file (size from stat) and skip_corrupt (truncation is never skipped).
    std::string path = dir.File("cut.tfrecord");
    ASSERT_TRUE(WriteStringToFileAtomic(path, full.substr(0, cut)).ok());
    auto r = TFRecordReader::Open(path, {.skip_corrupt_records = true});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> got;
    Status s = ReadAllRecords(r->get(), &got);
    EXPECT_EQ(got.size(), complete);
    EXPECT_EQ(std::string(s.message()), want.empty() ? "" : ExpectedTruncation(cut, path, &complete));
  }
  // A few spelled out.
  EXPECT_EQ(FirstError(full.substr(0, 5)).message(),
            "mem.tfrecord: record 0 at offset 0: truncated record (EOF inside the length header), expected 12 bytes, got 5");
  EXPECT_EQ(FirstError(full.substr(0, 21 + 15)).message(),
            "mem.tfrecord: record 1 at offset 21: truncated record (EOF inside the payload), expected 6 bytes, got 3");
  EXPECT_EQ(FirstError(full.substr(0, 71)).message(),
            "mem.tfrecord: record 2 at offset 43: truncated record (EOF inside the payload crc), expected 4 bytes, got 3");
}

TEST(TFRecordErrors, TruncatedGzipStream) {
  std::string bytes;
  {
    auto w = TFRecordWriter::ToFile(std::make_unique<StringSink>(&bytes), Compression::kGzip);
    ASSERT_TRUE(w.ok());
    for (const auto& r : kThree) ASSERT_TRUE((*w)->Write(r).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  Status s = FirstError(bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(std::string(s.message()).find("mem.tfrecord: truncated gzip stream"), std::string::npos) << s.ToString();
}

std::string HeaderWithLength(uint64_t len) {
  std::string h(12, '\0');
  for (int i = 0; i < 8; ++i) h[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  uint32_t c = MaskCrc(Crc32c(h.data(), 8));
  std::memcpy(h.data() + 8, &c, 4);
  return h;
}

TEST(TFRecordErrors, HugeDeclaredLengthFailsWithoutAllocating) {
  // Over max_record_bytes.
  std::string b = Frame({"ok"}) + HeaderWithLength(uint64_t{1} << 40) + "tiny";
  g_max_alloc = 0;
  Status s = FirstError(b);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "mem.tfrecord: record 1 at offset 18: record length 1099511627776 exceeds max_record_bytes 1073741824");
  EXPECT_LT(g_max_alloc.load(), size_t{8} << 20);
  // Under the limit but far beyond the data: the stream path only grows the
  // buffer as bytes arrive, the known-size path fails before reading.
  for (bool with_size : {false, true}) {
    std::string t = HeaderWithLength(uint64_t{900} << 20) + "only ten b";
    g_max_alloc = 0;
    s = FirstError(t, {}, with_size);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
    EXPECT_EQ(s.message(),
              "mem.tfrecord: record 0 at offset 0: truncated record (EOF inside the payload), expected 943718400 "
              "bytes, got 10");
    EXPECT_LT(g_max_alloc.load(), size_t{8} << 20) << with_size;
  }
  // A custom limit.
  TFRecordReaderOptions o;
  o.max_record_bytes = 4;
  s = FirstError(Frame({"1234", "12345"}), o);
  EXPECT_EQ(s.message(), "mem.tfrecord: record 1 at offset 20: record length 5 exceeds max_record_bytes 4");
}

// ---------------------------------------------------------------- skipping

TEST(TFRecordSkip, DataCrcMismatchSkipsExactlyOneRecord) {
  std::string b = Frame(kThree);
  b[21 + 13] ^= 0x04;  // payload of record 1
  TFRecordReaderOptions o{.skip_corrupt_records = true};
  auto r = MemReader(b, o);
  std::string_view rec;
  ASSERT_TRUE(*r->Next(&rec));
  EXPECT_EQ(rec, "alpha");
  ASSERT_TRUE(*r->Next(&rec));
  EXPECT_EQ(rec, "charlie-delta");
  EXPECT_EQ(r->record_index(), 2u);
  EXPECT_EQ(r->record_offset(), 43u);
  EXPECT_FALSE(*r->Next(&rec));
  auto k = r->counters();
  EXPECT_EQ(k.records, 2u);
  EXPECT_EQ(k.bytes, 5u + 13u);
  EXPECT_EQ(k.skipped_records, 1u);
  EXPECT_EQ(k.skipped_bytes, 22u);
}

TEST(TFRecordSkip, LengthCrcMismatchResyncsOnNextHeader) {
  for (int pos : {21, 21 + 5, 21 + 9}) {
    std::string b = Frame(kThree);
    b[pos] ^= 0x20;
    auto r = MemReader(b, {.skip_corrupt_records = true});
    std::vector<std::string> got;
    ASSERT_TRUE(ReadAllRecords(r.get(), &got).ok());
    EXPECT_EQ(got, (std::vector<std::string>{"alpha", "charlie-delta"})) << pos;
    EXPECT_EQ(r->counters().skipped_records, 1u);
    EXPECT_EQ(r->counters().skipped_bytes, 22u);
    EXPECT_EQ(r->record_index(), 2u);
  }
  // Corrupt header of the last record: no header follows, the tail (29 bytes) is dropped.
  std::string b = Frame(kThree);
  b[43] ^= 0x01;
  auto r = MemReader(b, {.skip_corrupt_records = true});
  std::vector<std::string> got;
  ASSERT_TRUE(ReadAllRecords(r.get(), &got).ok());
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(r->counters().skipped_records, 1u);
  EXPECT_EQ(r->counters().skipped_bytes, 29u);
}

TEST(TFRecordSkip, ResyncAcrossBufferRefillsAndBigGarbage) {
  std::mt19937_64 rng(11);
  std::vector<std::string> recs;
  for (int i = 0; i < 50; ++i) recs.push_back(RandomBytes(1000 + rng() % 5000, rng));
  std::string b = Frame(recs);
  // Corrupt the length of record 10 and the payload of record 30.
  uint64_t off = 0;
  std::vector<uint64_t> offs;
  for (const auto& r : recs) offs.push_back(off), off += 16 + r.size();
  b[offs[10] + 1] ^= 0x7f;
  b[offs[30] + 100] ^= 0x01;
  // Garbage that contains no valid header between records 40 and 41.
  std::string garbage = RandomBytes(10000, rng);
  b.insert(offs[41], garbage);
  TFRecordReaderOptions o{.skip_corrupt_records = true};
  o.buffer_bytes = 4096;
  auto r = MemReader(b, o);
  std::vector<std::string> got;
  ASSERT_TRUE(ReadAllRecords(r.get(), &got).ok());
  std::vector<std::string> want;
  for (int i = 0; i < 50; ++i)
    if (i != 10 && i != 30) want.push_back(recs[i]);
  EXPECT_TRUE(got == want);
  auto k = r->counters();
  EXPECT_EQ(k.skipped_records, 3u);
  EXPECT_EQ(k.skipped_bytes, (16 + recs[10].size()) + (16 + recs[30].size()) + garbage.size());
  EXPECT_EQ(k.records, 48u);
  EXPECT_EQ(r->record_index(), 50u);  // 48 good + 3 skipped, 0-based
}

TEST(TFRecordSkip, CapTurnsIntoError) {
  std::string b = Frame({"r0", "r1", "r2", "r3"});
  b[18 + 12] ^= 1;  // payload of r1
  b[54 + 12] ^= 1;  // payload of r3
  {
    TFRecordReaderOptions o{.skip_corrupt_records = true, .max_skipped_records = 1};
    auto r = MemReader(b, o);
    std::vector<std::string> got;
    Status s = ReadAllRecords(r.get(), &got);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_EQ(s.message(),
              "mem.tfrecord: record 3 at offset 54: corrupted record: data crc mismatch (skipped record 2 exceeds "
              "max_skipped_records=1)");
    EXPECT_EQ(got, (std::vector<std::string>{"r0", "r2"}));
    EXPECT_EQ(r->counters().skipped_records, 1u);
  }
  for (uint64_t cap : {2u, 0u}) {  // 0 = no limit
    TFRecordReaderOptions o{.skip_corrupt_records = true, .max_skipped_records = cap};
    auto r = MemReader(b, o);
    std::vector<std::string> got;
    EXPECT_TRUE(ReadAllRecords(r.get(), &got).ok());
    EXPECT_EQ(got, (std::vector<std::string>{"r0", "r2"}));
    EXPECT_EQ(r->counters().skipped_records, 2u);
    EXPECT_EQ(r->counters().skipped_bytes, 36u);
  }
}

TEST(TFRecordSkip, VerifyChecksumsOffSkipsOnlyTheDataCrc) {
  std::string b = Frame(kThree);
  b[21 + 12] ^= 0x01;  // 'b' -> 'c'
  TFRecordReaderOptions o;
  o.verify_checksums = false;
  std::vector<std::string> got;
  EXPECT_TRUE(FirstError(b, o, false, &got).ok());
  EXPECT_EQ(got[1], "cravo!");
  b[0] ^= 1;
  EXPECT_EQ(FirstError(b, o).code(), StatusCode::kDataLoss);
}

// ---------------------------------------------------------------- pipes

TEST(TFRecordPipe, ShortReadsFromAPipeAreRetried) {
  std::mt19937_64 rng(99);
  std::vector<std::string> recs;
  for (int i = 0; i < 400; ++i) recs.push_back(RandomBytes(rng() % 600, rng));
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    std::string bytes;
    {
      auto w = TFRecordWriter::ToFile(std::make_unique<StringSink>(&bytes), c);
      ASSERT_TRUE(w.ok());
      for (const auto& r : recs) ASSERT_TRUE((*w)->Write(r).ok());
      ASSERT_TRUE((*w)->Close().ok());
    }
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::thread writer([&bytes, fd = fds[1]] {
      std::mt19937 wr(1);
      size_t i = 0;
      while (i < bytes.size()) {
        size_t k = std::min<size_t>(1 + wr() % 13, bytes.size() - i);
        ssize_t n = write(fd, bytes.data() + i, k);
        if (n <= 0) break;
        i += static_cast<size_t>(n);
        if (wr() % 64 == 0) std::this_thread::yield();
      }
      close(fd);
    });
    std::string path = "/dev/fd/" + std::to_string(fds[0]);
    auto r = TFRecordReader::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> got;
    Status s = ReadAllRecords(r->get(), &got);
    writer.join();
    close(fds[0]);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(got == recs) << CompressionName(c);
    EXPECT_EQ((*r)->compression(), c);
  }
}

// ---------------------------------------------------------------- real files

struct RealFile {
  const char* name;
  uint64_t records;
  Compression compression;
};

TEST(TFRecordRealFiles, ExactCountsWithAutoDetection) {
  if (!fs::exists(CTRAIN_SHARED_DATA_DIR)) GTEST_SKIP() << "no shared data dir " << CTRAIN_SHARED_DATA_DIR;
  const RealFile files[] = {
      {"criteo_paddlerec_wd.tfrecord", 100, Compression::kNone},
      {"criteo_deepctr_tr.tfrecords", 160, Compression::kNone},
      {"criteo_deepctr_te.tfrecords", 40, Compression::kNone},
      {"criteo_deepctr_tr.gzip.tfrecords", 160, Compression::kGzip},
      {"criteo_deepctr_va.gzip.tfrecords", 20, Compression::kGzip},
      {"criteo_deepctr_te.gzip.tfrecords", 20, Compression::kGzip},
      {"tfx_taxi_eval-00000-of-00012.tfrecord.gz", 424, Compression::kGzip},
      {"tfx_penguin_train-00000-of-00001.tfrecord.gz", 234, Compression::kGzip},
  };
  // Every TFRecord file in the directory is listed above.
  size_t on_disk = 0;
  for (const auto& e : fs::directory_iterator(CTRAIN_SHARED_DATA_DIR)) {
    std::string n = e.path().filename().string();
    if (n.ends_with(".tfrecord") || n.ends_with(".tfrecords") || n.ends_with(".tfrecord.gz")) ++on_disk;
  }
  EXPECT_EQ(on_disk, std::size(files));
  for (const auto& f : files) {
    std::string path = std::string(CTRAIN_SHARED_DATA_DIR) + "/" + f.name;
    auto r = TFRecordReader::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)->compression(), f.compression) << f.name;
    std::vector<std::string> got;
    Status s = ReadAllRecords(r->get(), &got);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(got.size(), f.records) << f.name;
    EXPECT_EQ((*r)->counters().records, f.records);
    EXPECT_EQ((*r)->counters().skipped_records, 0u);
    // Every payload of these files is a tf.train.Example: field 1 (features), wire type 2.
    for (const auto& g : got) ASSERT_EQ(static_cast<uint8_t>(g[0]), 0x0a) << f.name;
    // Explicit matching compression reads the same.
    auto r2 = TFRecordReader::Open(path, {.compression = f.compression});
    ASSERT_TRUE(r2.ok());
    std::vector<std::string> got2;
    ASSERT_TRUE(ReadAllRecords(r2->get(), &got2).ok());
    EXPECT_TRUE(got2 == got);
  }
  // The paddlerec file: size 37,100 bytes = sum of framed records.
  auto r = TFRecordReader::Open(std::string(CTRAIN_SHARED_DATA_DIR) + "/criteo_paddlerec_wd.tfrecord");
  std::vector<std::string> got;
  ASSERT_TRUE(ReadAllRecords(r->get(), &got).ok());
  EXPECT_EQ((*r)->counters().bytes + 16 * 100, 37100u);
}

TEST(TFRecordRealFiles, MismatchedCompressionIsInvalidArgument) {
  if (!fs::exists(CTRAIN_SHARED_DATA_DIR)) GTEST_SKIP() << "no shared data dir " << CTRAIN_SHARED_DATA_DIR;
  std::string gz = std::string(CTRAIN_SHARED_DATA_DIR) + "/criteo_deepctr_tr.gzip.tfrecords";
  auto r = TFRecordReader::Open(gz, {.compression = Compression::kNone});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()).rfind(gz + ": compression mismatch: requested none, file looks like "
                                                         "gzip (first bytes 1f 8b 08 ",
                                                    0),
            0u)
      << r.status().ToString();
  std::string plain = std::string(CTRAIN_SHARED_DATA_DIR) + "/criteo_deepctr_tr.tfrecords";
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    auto p = TFRecordReader::Open(plain, {.compression = c});
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(p.status().message()).find("compression mismatch: requested " +
                                                     std::string(CompressionName(c)) + ", file looks like none"),
              std::string::npos);
  }
  auto missing = TFRecordReader::Open(std::string(CTRAIN_SHARED_DATA_DIR) + "/no_such.tfrecord");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(TFRecordRealFiles, FlippedByteInRealGzipFileIsAnError) {
  if (!fs::exists(CTRAIN_SHARED_DATA_DIR)) GTEST_SKIP() << "no shared data dir " << CTRAIN_SHARED_DATA_DIR;
  auto bytes = ReadFileToString(std::string(CTRAIN_SHARED_DATA_DIR) + "/tfx_penguin_train-00000-of-00001.tfrecord.gz");
  ASSERT_TRUE(bytes.ok());
  std::string b = *bytes;
  b[b.size() / 2] ^= 0x01;
  Status s = FirstError(b);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kOutOfRange) << s.ToString();
}

}  // namespace
}  // namespace ctrain::io
