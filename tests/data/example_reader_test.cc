// Format sniffing, compression hints, empty inputs and record locations of
// OpenExampleReader / SniffStream (issue #7: B27, B35, trial/10).
#include "ctrain/data/example_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ctrain/io/compression.h"
#include "ctrain/io/file.h"
#include "ctrain/data/raw_record_reader.h"

namespace ctrain::data {
namespace {

std::string CasePath(const char* rel) { return std::string(CTRAIN_SOURCE_DIR) + "/tests/cases/" + rel; }

StatusOr<SniffedStream> Sniff(std::string bytes, RecordFormat requested = RecordFormat::kAuto,
                              io::Compression c = io::Compression::kAuto) {
  return SniffStream(io::NewMemoryFile("in", std::move(bytes)), c, requested);
}

RecordFormat SniffedFormat(std::string bytes) {
  auto s = Sniff(std::move(bytes));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? s->format : RecordFormat::kAuto;
}

// B27: one malformed token does not switch a LibSVM file to libFFM.
TEST(SniffText, OneGluedTokenStaysLibSvm) {
  EXPECT_EQ(SniffedFormat("0 13:6.64e-0114:8.74 15:1\n1 13:0.5 14:0.25 15:1\n"), RecordFormat::kLibSvm);
  EXPECT_EQ(SniffedFormat("0 1:0.5 2:1.5e-013:1\n"), RecordFormat::kLibSvm);
  // Real libFFM: every token is a triple.
  EXPECT_EQ(SniffedFormat("1 0:1:0.5 1:7:1\n0 0:2:0.5 1:9:1\n"), RecordFormat::kLibFfm);
  EXPECT_EQ(SniffedFormat("1 0:1:0.5\n"), RecordFormat::kLibFfm);
  // A libFFM file with one damaged triple is still libFFM.
  EXPECT_EQ(SniffedFormat("1 0:1:0.5 1:70.5 2:3:1\n"), RecordFormat::kLibFfm);
  // qid tokens and comments do not vote.
  EXPECT_EQ(SniffedFormat("1 qid:3 1:0.5 # a:b:c d:e:f g:h:i\n"), RecordFormat::kLibSvm);
}

TEST(SniffText, B27CaseFileIsLibSvmWithLocatedError) {
  ExampleReaderOptions o;
  o.field_size = 3;
  auto r = OpenExampleReader(CasePath("B27/glued.libsvm"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->format(), RecordFormat::kLibSvm);
  float label;
  int64_t ids[3];
  float values[3];
  auto more = (*r)->Next(&label, ids, values);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(std::string(more.status().message()),
            CasePath("B27/glued.libsvm") +
                ":1:3: bad value '6.646450757980346680e-0114:8.74606966972...' for id 13: token holds two ':'; "
                "missing space between two 'id:value' pairs? (libFFM 'field:feature:value' files need --format "
                "libffm)");
}

// trial/10: an empty input is reported as empty, whatever format it would get.
TEST(SniffStream, EmptyInputIsMarkedEmpty) {
  auto s = Sniff("");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty);
  auto t = Sniff("", RecordFormat::kTFRecord);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->empty);
  auto u = Sniff("1 1:1\n");
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->empty);
  // An empty gzip member decompresses to nothing: empty too.
  std::string gz;
  {
    class Sink final : public io::WritableFile {
     public:
      explicit Sink(std::string* o) : o_(o) {}
      Status Append(std::string_view d) override {
        o_->append(d);
        return Status::OK();
      }
      Status Flush() override { return Status::OK(); }
      Status Close() override { return Status::OK(); }
      const std::string& name() const override { return n_; }

     private:
      std::string* o_;
      std::string n_ = "gz";
    };
    auto f = io::NewDeflatingFile(std::make_unique<Sink>(&gz), io::Compression::kGzip);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  auto g = Sniff(gz);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(g->empty);
  EXPECT_EQ(g->compression, io::Compression::kGzip);
}

// B35 sibling: a zlib stream damaged inside its DEFLATE data (so detection says
// "none") read as a TFRecord names the compression and zlib's fault, not a
// "length crc mismatch" on compressed bytes.
TEST(SniffStream, CompressedBytesReadAsTFRecordNameTheCompression) {
  auto raw = io::ReadFileToString(CasePath("B35/bad_adler.tfrecord.zz"));
  ASSERT_TRUE(raw.ok());
  std::string bad = *raw;
  bad[2] = static_cast<char>(0xff);  // first DEFLATE byte: BTYPE 11 (reserved), invalid
  for (RecordFormat f : {RecordFormat::kTFRecord, RecordFormat::kAuto}) {
    auto s = Sniff(bad, f);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(std::string(s.status().message()),
              "in: not a TFRecord (no valid length crc in the first 12 bytes); the file starts like a zlib stream, "
              "read as uncompressed: in: corrupt zlib stream near compressed byte offset 3: invalid block type "
              "(pass --compression zlib to read it as zlib)");
  }
  // With its compression detected, the case file itself names the zlib fault.
  auto ok_header = Sniff(*raw, RecordFormat::kTFRecord);
  ASSERT_TRUE(ok_header.ok());
  EXPECT_EQ(ok_header->compression, io::Compression::kZlib);
}

TEST(ExampleReader, LocationNamesTheLastRecord) {
  ExampleReaderOptions o;
  o.field_size = 1;
  auto r = OpenExampleReader(CasePath("B37/neg_id.tfr"), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  float label;
  int64_t id;
  float value;
  ASSERT_TRUE(*(*r)->Next(&label, &id, &value));
  EXPECT_EQ((*r)->Location(), CasePath("B37/neg_id.tfr") + ": record 0 at offset 0");
  ASSERT_TRUE(*(*r)->Next(&label, &id, &value));
  EXPECT_EQ(id, -1);  // a TFRecord keeps the sign; the LibSVM writer refuses it
  EXPECT_EQ((*r)->Location(), CasePath("B37/neg_id.tfr") + ": record 1 at offset 71");
  EXPECT_FALSE((*r)->empty_input());
}

// A format's own option on another format is refused once the format is known, by the memory reader and
// the pipeline's record reader alike, naming the file and the format found.
TEST(CheckOptionsForFormat, EachFormatOptionOnlyOnItsFormat) {
  ExampleReaderOptions pad;
  pad.criteo_pad_missing_trailing = true;
  EXPECT_TRUE(CheckOptionsForFormat("a.tsv", RecordFormat::kCriteoTsv, pad).ok());
  EXPECT_TRUE(CheckOptionsForFormat("a.csv", RecordFormat::kCriteoCsv, pad).ok());
  for (RecordFormat f : {RecordFormat::kLibSvm, RecordFormat::kTFRecord, RecordFormat::kLibFfm}) {
    Status s = CheckOptionsForFormat("a", f, pad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().rfind("a: --criteo-pad-missing-trailing reads Criteo TSV/CSV rows", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("but this input is " + std::string(RecordFormatName(f))), std::string::npos);
  }
  ExampleReaderOptions no_label;
  no_label.labels = io::LabelMode::kAbsent;
  EXPECT_TRUE(CheckOptionsForFormat("a", RecordFormat::kLibSvm, no_label).ok());
  EXPECT_EQ(CheckOptionsForFormat("a.tfr", RecordFormat::kTFRecord, no_label).message().rfind("a.tfr: --no-label", 0),
            0u);
  EXPECT_EQ(CheckOptionsForFormat("a.ffm", RecordFormat::kLibFfm, {}).message(), LibFfmNeedsSpecMessage("a.ffm"));
  EXPECT_TRUE(CheckOptionsForFormat("a", RecordFormat::kLibSvm, {}).ok());

  const std::string path = std::string(::testing::TempDir()) + "/check_options_for_format.libsvm";
  ASSERT_TRUE(io::WriteStringToFileAtomic(path, "1 1:1 2:1\n0 1:1 3:1\n").ok());
  pad.field_size = 2;
  auto memory = OpenExampleReader(path, pad);
  ASSERT_FALSE(memory.ok());
  EXPECT_NE(memory.status().message().find(path + ": --criteo-pad-missing-trailing"), std::string::npos);
  auto raw = RawRecordReader::Open(path, pad);
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("but this input is libsvm"), std::string::npos) << raw.status().ToString();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ctrain::data
