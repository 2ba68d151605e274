// Writers never write what their readers reject (issue #7 item 5, B37).
//
// Property, for every writer (libsvm, tfrecord) x compression x output id base
// and every reader of what it wrote (OpenExampleReader, the sequential reader
// of convert/inspect/memory mode; and Pipeline, the streaming reader of
// train/eval/predict): random batches that include edge values either
//   - are refused by Write with a located InvalidArgument naming the field or
//     the label, or
//   - round-trip exactly (label, every id, every value bit for bit).
// Never: written, then refused (or changed) by the reader.
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline.h"

namespace ctrain::data {
namespace {

namespace fs = std::filesystem;

struct Example {
  float label = 0;
  std::vector<int64_t> ids;
  std::vector<float> values;
};

// Edge values mixed into the random ones.
float RandomValue(std::mt19937_64& rng) {
  static const float kEdges[] = {0.0f,
                                 -0.0f,
                                 1.0f,
                                 -1.0f,
                                 0.1f,
                                 1e-7f,
                                 3.4028235e38f,
                                 -3.4028235e38f,
                                 std::numeric_limits<float>::min(),         // smallest normal
                                 std::numeric_limits<float>::denorm_min(),  // smallest subnormal
                                 1.17549421e-38f,                           // largest subnormal
                                 16777217.0f,
                                 4.7e8f,
                                 std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity()};
  switch (rng() % 4) {
    case 0: return kEdges[rng() % std::size(kEdges)];
    case 1: {  // any finite bit pattern
      for (;;) {
        const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
        if (std::isfinite(f)) return f;
      }
    }
    default: return std::uniform_real_distribution<float>(-10, 10)(rng);
  }
}

int64_t RandomId(std::mt19937_64& rng) {
  static const int64_t kEdges[] = {0, 1, -1, std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::min(),
                                   (int64_t{1} << 53) + 1, 117580};
  switch (rng() % 6) {
    case 0: return kEdges[rng() % std::size(kEdges)];
    case 1: return static_cast<int64_t>(rng());  // any int64, negative half the time
    default: return static_cast<int64_t>(rng() % 1000);
  }
}

Example RandomExample(std::mt19937_64& rng, int32_t f, bool edges) {
  Example e;
  static const float kLabels[] = {0.0f, 1.0f, 0.5f, -1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()};
  e.label = edges && rng() % 8 == 0 ? kLabels[rng() % std::size(kLabels)] : static_cast<float>(rng() % 2);
  for (int32_t i = 0; i < f; ++i) {
    e.ids.push_back(edges && rng() % 4 == 0 ? RandomId(rng) : static_cast<int64_t>(rng() % 1000));
    e.values.push_back(edges && rng() % 4 == 0 ? RandomValue(rng) : std::uniform_real_distribution<float>(-5, 5)(rng));
  }
  return e;
}

bool SameExample(const Example& a, float label, const int64_t* ids, const float* values, std::string* why) {
  if (std::bit_cast<uint32_t>(a.label) != std::bit_cast<uint32_t>(label)) {
    *why = "label " + std::to_string(a.label) + " read back as " + std::to_string(label);
    return false;
  }
  for (size_t i = 0; i < a.ids.size(); ++i) {
    if (a.ids[i] != ids[i]) {
      *why = "field " + std::to_string(i + 1) + ": id " + std::to_string(a.ids[i]) + " read back as " +
             std::to_string(ids[i]);
      return false;
    }
    if (std::bit_cast<uint32_t>(a.values[i]) != std::bit_cast<uint32_t>(values[i])) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "value %.9g (0x%08x) read back as %.9g (0x%08x)", a.values[i],
                    std::bit_cast<uint32_t>(a.values[i]), values[i], std::bit_cast<uint32_t>(values[i]));
      *why = "field " + std::to_string(i + 1) + ": " + buf;
      return false;
    }
  }
  return true;
}

class WriterReaderRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ctrain_roundtrip_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(WriterReaderRoundTrip, EveryWriterEveryReaderEveryExampleRoundTripsOrIsRefused) {
  std::mt19937_64 rng(20261130);
  uint64_t refused = 0, written = 0, checked_files = 0;
  int file_no = 0;
  for (RecordFormat wf : {RecordFormat::kLibSvm, RecordFormat::kTFRecord}) {
    for (io::Compression c : {io::Compression::kNone, io::Compression::kGzip, io::Compression::kZlib}) {
      for (int32_t id_base : {0, 1, 7}) {
        if (wf == RecordFormat::kTFRecord && id_base != 0) continue;  // no id base in TFRecord
        for (int32_t f : {1, 3, 39}) {
          const std::string path = dir_ + "/f" + std::to_string(file_no++);
          ExampleWriterOptions wo;
          wo.format = wf;
          wo.compression = c;
          wo.id_base = id_base;
          auto w = OpenExampleWriter(path, wo);
          ASSERT_TRUE(w.ok()) << w.status().ToString();
          std::vector<Example> kept;
          for (int i = 0; i < 200; ++i) {
            Example e = RandomExample(rng, f, /*edges=*/true);
            Status s = (*w)->Write(e.label, e.ids, e.values);
            if (!s.ok()) {
              // Refused: located (names the field or the label) and says why.
              EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
              const std::string m(s.message());
              EXPECT_TRUE(m.rfind("field ", 0) == 0 || m.rfind("label ", 0) == 0) << m;
              ++refused;
              continue;
            }
            kept.push_back(std::move(e));
          }
          ASSERT_TRUE((*w)->Close().ok());
          ASSERT_EQ((*w)->records(), kept.size());
          written += kept.size();
          if (kept.empty()) continue;

          // Reader 1: OpenExampleReader, format sniffed, compression detected.
          ExampleReaderOptions ro;
          ro.field_size = f;
          ro.id_base = id_base;
          auto r = OpenExampleReader(path, ro);
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          EXPECT_EQ((*r)->format(), wf);
          EXPECT_EQ((*r)->compression(), c);
          std::vector<int64_t> ids(f);
          std::vector<float> values(f);
          float label;
          for (size_t i = 0; i < kept.size(); ++i) {
            auto more = (*r)->Next(&label, ids.data(), values.data());
            ASSERT_TRUE(more.ok()) << path << " (" << RecordFormatName(wf) << "): written, then rejected: "
                                   << more.status().ToString();
            ASSERT_TRUE(*more) << path << ": record " << i << " missing";
            std::string why;
            ASSERT_TRUE(SameExample(kept[i], label, ids.data(), values.data(), &why))
                << path << " record " << i << ": " << why;
          }
          auto end = (*r)->Next(&label, ids.data(), values.data());
          ASSERT_TRUE(end.ok() && !*end);

          // Reader 2: the streaming pipeline (train/eval/predict), in file order.
          PipelineOptions po;
          po.batch_size = 64;
          po.prefetch_buffer_size = 0;
          auto p = Pipeline::Create({path}, ro, po);
          ASSERT_TRUE(p.ok()) << p.status().ToString();
          size_t row = 0;
          Batch b;
          for (;;) {
            auto more = (*p)->Next(&b);
            ASSERT_TRUE(more.ok()) << path << ": written, then rejected by the pipeline: " << more.status().ToString();
            if (!*more) break;
            for (int64_t i = 0; i < b.size(); ++i, ++row) {
              ASSERT_LT(row, kept.size());
              std::string why;
              ASSERT_TRUE(SameExample(kept[row], b.labels[i], &b.ids[i * f], &b.values[i * f], &why))
                  << path << " pipeline row " << row << ": " << why;
            }
          }
          EXPECT_EQ(row, kept.size());
          ++checked_files;
        }
      }
    }
  }
  // The edge values are frequent enough that both outcomes happen a lot.
  EXPECT_GT(refused, 100u);
  EXPECT_GT(written, 1000u);
  EXPECT_EQ(checked_files, 36u);
}

// The refusals name the rule (B37 and its siblings).
TEST(CheckWritable, Messages) {
  const std::vector<int64_t> neg = {5, -1};
  const std::vector<float> ok2 = {1.0f, 2.0f};
  EXPECT_EQ(CheckWritable(RecordFormat::kLibSvm, 1, neg, ok2, 0).message(), "field 2: id -1 is negative");
  EXPECT_TRUE(CheckWritable(RecordFormat::kTFRecord, 1, neg, ok2, 0).ok());  // int64 keeps the sign
  const std::vector<int64_t> big = {std::numeric_limits<int64_t>::max()};
  const std::vector<float> one = {1.0f};
  EXPECT_TRUE(CheckWritable(RecordFormat::kLibSvm, 0, big, one, 0).ok());
  EXPECT_EQ(CheckWritable(RecordFormat::kLibSvm, 0, big, one, 1).message(),
            "field 1: id 9223372036854775807 + output id base 1 does not fit in int64");
  const std::vector<int64_t> id1 = {3};
  for (RecordFormat f : {RecordFormat::kLibSvm, RecordFormat::kTFRecord}) {
    EXPECT_EQ(CheckWritable(f, 0.5f, id1, one, 0).message(), "label 0.5 is not 0 or 1");
    const std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN()};
    EXPECT_EQ(CheckWritable(f, 1, id1, nan, 0).message(), "field 1: value nan is not finite");
    const std::vector<float> inf = {-std::numeric_limits<float>::infinity()};
    EXPECT_EQ(CheckWritable(f, 1, id1, inf, 0).message(), "field 1: value -inf is not finite");
    EXPECT_EQ(CheckWritable(f, 1, {}, {}, 0).message(), "no fields: a record needs at least one");
    EXPECT_EQ(CheckWritable(f, 1, id1, ok2, 0).message(), "1 ids but 2 values");
  }
}

TEST(OpenExampleWriter, RefusesOptionsItsReaderCannotUse) {
  ExampleWriterOptions wo;
  wo.format = RecordFormat::kLibSvm;
  wo.id_base = -1;
  EXPECT_EQ(OpenExampleWriter("/tmp/unused", wo).status().message(), "output id base -1 is negative");
  wo.format = RecordFormat::kTFRecord;
  wo.id_base = 0;
  wo.schema.values_key = "ids";
  EXPECT_EQ(OpenExampleWriter("/tmp/unused", wo).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ctrain::data
