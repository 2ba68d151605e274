// Byte-range splits of one file (data/record_index.h, shard.h byte-range
// level): N splits read together exactly the file's records, each once, in
// file order within a split, with the file's record indices / line numbers and
// offsets; each split reads about 1/N of the bytes (input_bytes counter);
// compressed files cannot be entered mid-way and are read whole by every split
// (every N-th record kept), which the counters show.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctrain/data/pipeline.h"
#include "ctrain/data/raw_record_reader.h"
#include "ctrain/data/record_index.h"
#include "ctrain/io/compression.h"
#include "ctrain/io/example.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

struct Rec {
  std::string data;
  uint64_t index = 0, offset = 0;
  bool operator==(const Rec& o) const { return data == o.data && index == o.index && offset == o.offset; }
};

std::string Dir() {
  return testing::TestTempDir("ctrain_byte_range", ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

void Write(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(io::WriteStringToFileAtomic(path, bytes).ok()) << path;
}

// Every record `path` holds, read whole.
std::vector<Rec> ReadAll(const std::string& path, const ExampleReaderOptions& o) {
  std::vector<Rec> out;
  auto r = RawRecordReader::Open(path, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return out;
  std::string_view rec;
  Rec x;
  for (;;) {
    auto more = (*r)->Next(&rec, &x.index, &x.offset);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    x.data = std::string(rec);
    out.push_back(x);
  }
  return out;
}

struct SplitRead {
  std::vector<Rec> records;
  RawRecordReader::Counters counters;
  bool ranged = false;
  Status status;
};

SplitRead ReadSplit(const std::string& path, const ExampleReaderOptions& o, int32_t i, int32_t n) {
  SplitRead s;
  const RawRecordReader::SplitRange range{i, n};
  auto r = RawRecordReader::Open(path, o, nullptr, &range);
  if (!r.ok()) {
    s.status = r.status();
    return s;
  }
  s.ranged = (*r)->ranged();
  std::string_view rec;
  Rec x;
  for (;;) {
    auto more = (*r)->Next(&rec, &x.index, &x.offset);
    if (!more.ok()) {
      s.status = more.status();
      break;
    }
    if (!*more) break;
    x.data = std::string(rec);
    s.records.push_back(x);
  }
  s.counters = (*r)->counters();
  return s;
}

// N splits read together exactly `all`, in order (splits are contiguous), and
// each reads about 1/N of `size` bytes.
void CheckSplits(const std::string& path, const ExampleReaderOptions& o, const std::vector<Rec>& all, uint64_t size,
                 int32_t n, uint64_t max_record) {
  std::vector<Rec> got;
  for (int32_t i = 0; i < n; ++i) {
    SplitRead s = ReadSplit(path, o, i, n);
    ASSERT_TRUE(s.status.ok()) << s.status.ToString();
    EXPECT_TRUE(s.ranged) << "split " << i << "/" << n;
    got.insert(got.end(), s.records.begin(), s.records.end());
    const auto [b, e] = SplitByteRange(size, i, n);
    // Its range, the walk from the index (< one 64 KiB granule + a record),
    // and the rest of the record that crosses its end (text: in 4 KiB reads).
    EXPECT_LE(s.counters.input_bytes, (e - b) + (uint64_t{68} << 10) + 2 * max_record + 64)
        << "split " << i << "/" << n << " of " << size << " bytes";
    EXPECT_GE(s.counters.input_bytes + max_record + 64, e - b) << "split " << i << "/" << n;
  }
  ASSERT_EQ(got.size(), all.size()) << "n=" << n;
  for (size_t k = 0; k < all.size(); ++k) {
    ASSERT_TRUE(got[k] == all[k]) << "n=" << n << ": record " << k << " got index " << got[k].index << " offset "
                                   << got[k].offset << ", expected index " << all[k].index << " offset "
                                   << all[k].offset;
  }
}

TEST(ByteRangeSplitTest, TFRecordSplitsReadEveryRecordOnceAndAboutOneNthOfTheBytes) {
  const std::string dir = Dir();
  std::mt19937 rng(7);
  std::string bytes;
  uint64_t max_record = 0;
  for (int i = 0; i < 6000; ++i) {  // payloads of 1..1500 bytes, ~4.5 MB
    std::string p(1 + rng() % 1500, 'a' + static_cast<char>(i % 26));
    p += std::to_string(i);
    max_record = std::max<uint64_t>(max_record, p.size() + 16);
    io::AppendTFRecord(&bytes, p);
  }
  const std::string path = dir + "/a.tfrecord";
  Write(path, bytes);
  ExampleReaderOptions o;
  o.format = RecordFormat::kTFRecord;
  const std::vector<Rec> all = ReadAll(path, o);
  ASSERT_EQ(all.size(), 6000u);
  ClearRecordIndexCache();
  for (int32_t n : {2, 3, 8, 13, 64}) CheckSplits(path, o, all, bytes.size(), n, max_record);

  // The index is built once per process: the first split past the start reads
  // headers up to its range; a second read of that split reads no index bytes.
  ClearRecordIndexCache();
  SplitRead first = ReadSplit(path, o, 7, 8);
  EXPECT_GT(first.counters.index_bytes, 0u);
  SplitRead again = ReadSplit(path, o, 7, 8);
  EXPECT_EQ(again.counters.index_bytes, 0u);
  EXPECT_TRUE(again.records == first.records);
}

TEST(ByteRangeSplitTest, TFRecordWithLargeRecordsWalksHeadersOnly) {
  // Records of 200 KB: the walk to split 3/4 reads 12-byte headers, not payloads.
  const std::string dir = Dir();
  std::string bytes;
  for (int i = 0; i < 40; ++i) io::AppendTFRecord(&bytes, std::string(200000, static_cast<char>('A' + i % 26)));
  const std::string path = dir + "/big.tfrecord";
  Write(path, bytes);
  ExampleReaderOptions o;
  o.format = RecordFormat::kTFRecord;
  ClearRecordIndexCache();
  SplitRead s = ReadSplit(path, o, 3, 4);
  ASSERT_TRUE(s.status.ok()) << s.status.ToString();
  EXPECT_EQ(s.records.size(), 10u);
  EXPECT_EQ(s.records.front().index, 30u);
  // One first block of 1 MiB, then only the 12-byte headers of the records
  // after it (a block would be mostly payload), never the whole 6 MB prefix.
  EXPECT_LE(s.counters.index_bytes, (uint64_t{1} << 20) + 30 * 12);
  const std::vector<Rec> all = ReadAll(path, o);
  CheckSplits(path, o, all, bytes.size(), 4, 200016);
}

TEST(ByteRangeSplitTest, ChangedFileGetsANewIndex) {
  const std::string dir = Dir();
  const std::string path = dir + "/c.tfrecord";
  ExampleReaderOptions o;
  o.format = RecordFormat::kTFRecord;
  std::string v1, v2;
  for (int i = 0; i < 3000; ++i) io::AppendTFRecord(&v1, std::string(100, 'x') + std::to_string(i));
  for (int i = 0; i < 2000; ++i) io::AppendTFRecord(&v2, std::string(173, 'y') + std::to_string(i));
  Write(path, v1);
  std::vector<Rec> all = ReadAll(path, o);
  CheckSplits(path, o, all, v1.size(), 5, 120);
  Write(path, v2);  // same path, another file: the old index must not be used
  all = ReadAll(path, o);
  CheckSplits(path, o, all, v2.size(), 5, 200);
}

TEST(ByteRangeSplitTest, CorruptHeaderFailsOnlyTheSplitsThatWalkOverIt) {
  const std::string dir = Dir();
  std::string bytes;
  std::vector<uint64_t> starts;
  for (int i = 0; i < 4000; ++i) {
    starts.push_back(bytes.size());
    io::AppendTFRecord(&bytes, std::string(200, 'z') + std::to_string(i));
  }
  const uint64_t bad = starts[3000];  // 3/4 in
  bytes[bad + 8] ^= 0x5a;             // the length CRC
  const std::string path = dir + "/bad.tfrecord";
  Write(path, bytes);
  ExampleReaderOptions o;
  o.format = RecordFormat::kTFRecord;
  ClearRecordIndexCache();
  for (int32_t i = 0; i < 4; ++i) {
    SplitRead s = ReadSplit(path, o, i, 4);
    const auto [b, e] = SplitByteRange(bytes.size(), i, 4);
    if (e <= bad) {
      EXPECT_TRUE(s.status.ok()) << "split " << i << ": " << s.status.ToString();
    } else {
      EXPECT_EQ(s.status.code(), StatusCode::kDataLoss) << "split " << i;
      EXPECT_NE(s.status.message().find(path + ": record 3000 at offset " + std::to_string(bad) +
                                        ": corrupted record: length crc mismatch"),
                std::string::npos)
          << s.status.ToString();
    }
  }
}

TEST(ByteRangeSplitTest, LibSvmSplitsResyncAtNewlinesAndKeepLineNumbers) {
  const std::string dir = Dir();
  std::mt19937 rng(11);
  std::string text;
  uint64_t max_line = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line;
    if (i % 97 == 5) {
      line = "";  // blank
    } else if (i % 89 == 3) {
      line = "# comment " + std::to_string(i);
    } else {
      line = std::to_string(i % 2);
      for (uint32_t k = 0, m = 1 + rng() % 40; k < m; ++k) line += " " + std::to_string(rng() % 100000) + ":1";
    }
    max_line = std::max<uint64_t>(max_line, line.size() + 1);
    text += line + "\n";
  }
  text += "1 7:1 8:1";  // an unterminated last line
  const std::string path = dir + "/a.libsvm";
  Write(path, text);
  ExampleReaderOptions o;
  o.format = RecordFormat::kLibSvm;
  const std::vector<Rec> all = ReadAll(path, o);
  ClearRecordIndexCache();
  for (int32_t n : {2, 3, 8, 31, 200}) CheckSplits(path, o, all, text.size(), n, max_line);
  // Skipped lines and the unterminated last line are counted once over all splits.
  const RawRecordReader::Counters whole = [&] {
    auto r = RawRecordReader::Open(path, o);
    std::string_view rec;
    uint64_t a, b;
    while (*(*r)->Next(&rec, &a, &b)) {
    }
    return (*r)->counters();
  }();
  RawRecordReader::Counters sum;
  for (int32_t i = 0; i < 8; ++i) {
    SplitRead s = ReadSplit(path, o, i, 8);
    sum.blank_lines += s.counters.blank_lines;
    sum.comment_lines += s.counters.comment_lines;
    sum.unterminated_last_lines += s.counters.unterminated_last_lines;
  }
  EXPECT_GT(whole.blank_lines, 0u);
  EXPECT_EQ(sum.blank_lines, whole.blank_lines);
  EXPECT_EQ(sum.comment_lines, whole.comment_lines);
  EXPECT_EQ(sum.unterminated_last_lines, 1u);
}

TEST(ByteRangeSplitTest, CriteoTsvHeaderIsOnlyTheFirstSplitsAndTinyFilesGiveEmptySplits) {
  const std::string dir = Dir();
  std::string text = "label\tI1\tC1\n";
  for (int i = 0; i < 3000; ++i) text += std::to_string(i % 2) + "\t" + std::to_string(i) + "\tab" + std::to_string(i) + "\n";
  const std::string path = dir + "/a.tsv";
  Write(path, text);
  ExampleReaderOptions o;
  o.format = RecordFormat::kCriteoTsv;
  const std::vector<Rec> all = ReadAll(path, o);
  ASSERT_EQ(all.size(), 3000u);
  CheckSplits(path, o, all, text.size(), 6, 40);
  uint64_t headers = 0;
  for (int32_t i = 0; i < 6; ++i) headers += ReadSplit(path, o, i, 6).counters.header_lines;
  EXPECT_EQ(headers, 1u);

  // 3 lines in 16 splits: most splits are empty, together they hold the 3 lines once.
  const std::string tiny = dir + "/tiny.libsvm";
  Write(tiny, "1 1:1\n0 2:1\n1 3:1\n");
  ExampleReaderOptions lo;
  lo.format = RecordFormat::kLibSvm;
  CheckSplits(tiny, lo, ReadAll(tiny, lo), 18, 16, 6);
}

TEST(ByteRangeSplitTest, CompressedTFRecordCannotSeekEverySplitReadsTheWholeFileAndKeepsEveryNthRecord) {
  const std::string dir = Dir();
  for (io::Compression c : {io::Compression::kGzip, io::Compression::kZlib}) {
    const std::string path = dir + "/z" + std::string(io::CompressionName(c)) + ".tfrecord";
    io::SeedSchema schema;
    schema.field_size = 2;
    {
      auto w = io::TFRecordWriter::Open(path, c);
      ASSERT_TRUE(w.ok());
      std::string rec;
      for (int64_t i = 0; i < 5000; ++i) {
        const int64_t ids[2] = {i, 7};
        const float vals[2] = {1.f, 1.f};
        rec.clear();
        io::EncodeSeedExample(static_cast<float>(i % 2), ids, vals, schema, &rec);
        ASSERT_TRUE((*w)->Write(rec).ok());
      }
      ASSERT_TRUE((*w)->Close().ok());
    }
    const uint64_t size = static_cast<uint64_t>(std::filesystem::file_size(path));
    ExampleReaderOptions o;
    o.field_size = 2;
    // Not ranged: the caller keeps every N-th record.
    SplitRead s = ReadSplit(path, o, 1, 4);
    ASSERT_TRUE(s.status.ok()) << s.status.ToString();
    EXPECT_FALSE(s.ranged);
    EXPECT_EQ(s.records.size(), 5000u);
    // Through the pipeline (the data service's byte-range shards): the union is
    // every example once, and every shard read the whole compressed file.
    std::multiset<int64_t> seen;
    for (int32_t i = 0; i < 4; ++i) {
      PipelineOptions po;
      po.print_warnings = false;
      po.num_shards = 4;
      po.shard_index = i;
      po.shard_byte_ranges = true;
      po.batch_size = 64;
      auto p = Pipeline::Create({path}, o, po);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ((*p)->shard_plan().level, ShardLevel::kByteRange);
      Batch b;
      for (;;) {
        auto more = (*p)->Next(&b);
        ASSERT_TRUE(more.ok()) << more.status().ToString();
        if (!*more) break;
        for (int64_t r = 0; r < b.size(); ++r) {
          EXPECT_EQ(b.ids[r * 2] % 4, i);  // every 4th record
          seen.insert(b.ids[r * 2]);
        }
      }
      const PipelineStats st = (*p)->stats();
      ASSERT_EQ(st.inputs.size(), 1u);
      EXPECT_FALSE(st.inputs[0].byte_range);
      EXPECT_EQ(st.inputs[0].input_bytes, size);  // the whole file, compressed bytes
      EXPECT_EQ(st.records_sharded_out, 5000u - 1250u);
    }
    ASSERT_EQ(seen.size(), 5000u);
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), 4999);
  }
}

TEST(ByteRangeSplitTest, PipelineShardsOfOneUncompressedFileReadAboutOneNthEach) {
  const std::string dir = Dir();
  const std::string path = dir + "/p.tfrecord";
  io::SeedSchema schema;
  schema.field_size = 2;
  std::string bytes, rec;
  for (int64_t i = 0; i < 20000; ++i) {
    const int64_t ids[2] = {i, 7};
    const float vals[2] = {1.f, 1.f};
    rec.clear();
    io::EncodeSeedExample(static_cast<float>(i % 2), ids, vals, schema, &rec);
    io::AppendTFRecord(&bytes, rec);
  }
  Write(path, bytes);
  ExampleReaderOptions o;
  o.field_size = 2;
  std::vector<int64_t> got;
  uint64_t index_bytes = 0;
  for (int32_t i = 0; i < 8; ++i) {
    PipelineOptions po;
    po.print_warnings = false;
    po.num_shards = 8;
    po.shard_index = i;
    po.shard_byte_ranges = true;
    po.batch_size = 100;
    auto p = Pipeline::Create({path}, o, po);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    Batch b;
    for (;;) {
      auto more = (*p)->Next(&b);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      for (int64_t r = 0; r < b.size(); ++r) got.push_back(b.ids[r * 2]);
    }
    const PipelineStats st = (*p)->stats();
    ASSERT_EQ(st.inputs.size(), 1u);
    EXPECT_TRUE(st.inputs[0].byte_range);
    EXPECT_EQ(st.records_sharded_out, 0u);
    EXPECT_LE(st.input_bytes_read, bytes.size() / 8 + (uint64_t{64} << 10) + 200) << "shard " << i;
    index_bytes += st.record_index_bytes_read;
  }
  // Without a shuffle, shard after shard, the file's order.
  ASSERT_EQ(got.size(), 20000u);
  for (int64_t i = 0; i < 20000; ++i) ASSERT_EQ(got[i], i);
  // The index: the file up to the last split's start, read once in this
  // process (records of ~70 bytes: in 1 MiB blocks, not header by header).
  EXPECT_LE(index_bytes, bytes.size() * 7 / 8 + 100);
  EXPECT_GE(index_bytes, bytes.size() * 7 / 8 - 100);
}

TEST(ByteRangeSplitTest, ParseErrorInALaterSplitNamesTheFileLine) {
  const std::string dir = Dir();
  std::string text;
  for (int i = 0; i < 5000; ++i) text += (i == 4321 ? "1 x:1 2:1 3:1\n" : "1 1:1 2:1 3:1\n");
  const std::string path = dir + "/e.libsvm";
  Write(path, text);
  ExampleReaderOptions o;
  o.field_size = 3;
  o.format = RecordFormat::kLibSvm;
  PipelineOptions po;
  po.print_warnings = false;
  po.num_shards = 4;
  po.shard_index = 3;
  po.shard_byte_ranges = true;
  auto p = Pipeline::Create({path}, o, po);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Batch b;
  Status st;
  for (;;) {
    auto more = (*p)->Next(&b);
    if (!more.ok()) {
      st = more.status();
      break;
    }
    if (!*more) break;
  }
  EXPECT_NE(st.message().find(path + ":4322:"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace ctrain::data

namespace ctrain::data {
namespace {

TEST(ByteRangeSplitTest, CountedShardRecordsAreWhatEachByteRangeShardReads) {
  const std::string dir = Dir();
  std::string a, b;
  for (int i = 0; i < 700; ++i) a += "1 " + std::to_string(i) + ":1" + std::string(i % 13, ' ') + "\n";
  for (int i = 0; i < 300; ++i) b += "0 " + std::to_string(i) + ":1\n";
  Write(dir + "/a.libsvm", a);
  Write(dir + "/b.libsvm", b);
  ExampleReaderOptions o;
  o.field_size = 1;
  o.id_base = 0;
  uint64_t total = 0;
  for (int32_t i = 0; i < 4; ++i) {
    PipelineOptions po;
    po.print_warnings = false;
    po.num_shards = 4;
    po.shard_index = i;
    po.shard_byte_ranges = true;
    po.count_shard_records = true;
    po.batch_size = 50;
    auto p = Pipeline::Create({dir + "/a.libsvm", dir + "/b.libsvm"}, o, po);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    const ShardPlan& plan = (*p)->shard_plan();
    EXPECT_EQ(plan.level, ShardLevel::kByteRange);
    ASSERT_EQ(plan.shard_records.size(), 4u);
    EXPECT_EQ(plan.shard_records[0] + plan.shard_records[1] + plan.shard_records[2] + plan.shard_records[3], 1000u);
    EXPECT_EQ(plan.shard_bytes[0] + plan.shard_bytes[1] + plan.shard_bytes[2] + plan.shard_bytes[3],
              static_cast<int64_t>(a.size() + b.size()));
    Batch batch;
    uint64_t n = 0;
    for (;;) {
      auto more = (*p)->Next(&batch);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      n += static_cast<uint64_t>(batch.size());
    }
    EXPECT_EQ(n, plan.shard_records[i]) << "shard " << i;
    total += n;
  }
  EXPECT_EQ(total, 1000u);
}

}  // namespace
}  // namespace ctrain::data
