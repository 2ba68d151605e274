// SplitSource (dataservice/split_source.h), the spec kind: a split of files read
// through a feature spec gives the trainer's batch layout (one-hot or
// multi-hot), which SpecColumnsBuilder::AppendBatch turns back into the spec's
// arrays equal to reading the files directly; file- and record-level splits
// partition the rows; drop_remainder; what a spec read cannot do is refused
// by name.
#include "ctrain/dataservice/split_source.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ctrain/data/spec_columns.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/io/example.h"
#include "ctrain/io/tfrecord.h"
#include "testing/temp_dir.h"

namespace ctrain::dataservice {
namespace {

using testing::TestTempDir;

constexpr int kRows = 23;

// Record r of file `file`: label r % 2, field 0 holds (r % 3) ids, field 1 one, field 2 (r + file) % 2.
std::string WriteLibFfm(const std::string& dir, int file) {
  const std::string path = dir + "/f" + std::to_string(file) + ".libffm";
  std::ofstream out(path);
  for (int r = 0; r < kRows; ++r) {
    out << r % 2;
    for (int k = 0; k < r % 3; ++k) out << " 0:" << (r + k) % 7 << ":" << 0.5 * (k + 1);
    out << " 1:" << 10 + (r + file) % 5 << ":1";
    for (int k = 0; k < (r + file) % 2; ++k) out << " 2:" << 20 + k << ":2";
    out << "\n";
  }
  return path;
}

constexpr const char* kFfmSpec =
    R"({"input": "libffm", "feature_size": 32, "fields": [{"ffm_field": 0}, {"ffm_field": 1}, {"ffm_field": 2}]})";

// One-hot tf.Examples: label, a numeric "price" and a categorical "city".
std::string WriteExamples(const std::string& dir) {
  const std::string path = dir + "/ex.tfrecord";
  auto w = io::TFRecordWriter::Open(path);
  EXPECT_TRUE(w.ok());
  for (int r = 0; r < kRows; ++r) {
    std::string rec;
    const std::vector<std::pair<std::string, io::ParsedFeature>> features{
        {"label", io::ParsedFeature::Floats({static_cast<float>(r % 2)})},
        {"price", io::ParsedFeature::Floats({0.25f * r})},
        {"city", io::ParsedFeature::Int64s({r % 6})}};
    io::EncodeExample(features, &rec);
    EXPECT_TRUE((*w)->Write(rec).ok());
  }
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

constexpr const char* kExampleSpec = R"({"fields": [{"key": "price", "type": "numeric"},
    {"key": "city", "type": "categorical", "map": "identity", "buckets": 8}]})";

data::FeatureSpec Spec(const char* json) {
  auto s = data::ParseFeatureSpec(json, "spec.json");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

proto::DatasetDef Def(const std::vector<std::string>& files, const data::FeatureSpec& spec, int64_t batch_size) {
  train::StreamInput in;
  in.files = files;
  auto def = MakeDatasetDef(in, "", batch_size, /*seed=*/1, /*shuffle=*/false, spec.ToJson());
  EXPECT_TRUE(def.ok()) << def.status().ToString();
  return *def;
}

// Every batch of a split, and their arrays.
struct Read {
  std::vector<data::Batch> batches;
  data::SpecColumns columns;
  data::PipelineStats stats;
};
Read ReadSplit(const proto::DatasetDef& def, const data::FeatureSpec& spec, int32_t index, int32_t n) {
  proto::SplitId split;
  split.set_split_index(index);
  split.set_num_splits(n);
  Read out;
  auto src = OpenSplit(def, split, 1);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  if (!src.ok()) return out;
  data::SpecColumnsBuilder b(spec);
  data::Batch batch;
  for (;;) {
    auto more = (*src)->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    EXPECT_TRUE(b.AppendBatch(batch).ok());
    out.batches.push_back(batch);
  }
  out.columns = b.Take();
  out.stats = (*src)->stats();
  return out;
}

void ExpectSameColumns(const data::SpecColumns& a, const data::SpecColumns& b) {
  EXPECT_EQ(a.labels, b.labels);
  ASSERT_EQ(a.columns.size(), b.columns.size());
  for (size_t i = 0; i < a.columns.size(); ++i) {
    SCOPED_TRACE(a.columns[i].name);
    EXPECT_EQ(a.columns[i].name, b.columns[i].name);
    EXPECT_EQ(a.columns[i].values, b.columns[i].values);
    EXPECT_EQ(a.columns[i].ids, b.columns[i].ids);
    EXPECT_EQ(a.columns[i].offsets, b.columns[i].offsets);
  }
}

TEST(SpecSplit, OneSplitGivesTheFilesRowsInOrderMultiHot) {
  const std::string dir = TestTempDir("split_source", "one_multi_hot");
  const std::vector<std::string> files = {WriteLibFfm(dir, 0), WriteLibFfm(dir, 1)};
  const data::FeatureSpec spec = Spec(kFfmSpec);
  ASSERT_TRUE(spec.multi_hot);
  const Read r = ReadSplit(Def(files, spec, 5), spec, 0, 1);
  auto want = data::ReadSpecColumns(files, spec);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ExpectSameColumns(r.columns, *want);
  // Batches of 5 span the two files; the last is partial; all multi-hot with F = 3.
  ASSERT_EQ(r.batches.size(), 10u);
  EXPECT_EQ(r.batches[4].size(), 5);  // rows 20..22 of file 0 and 0..1 of file 1
  EXPECT_EQ(r.batches.back().size(), 1);
  for (const data::Batch& b : r.batches) EXPECT_TRUE(b.multi_hot() && b.field_size == 3);
  ASSERT_EQ(r.stats.inputs.size(), 2u);
  EXPECT_EQ(r.stats.inputs[1].format, "libffm");
  EXPECT_EQ(r.stats.inputs[1].records, static_cast<uint64_t>(kRows));
  EXPECT_TRUE(r.stats.inputs[1].finished);
  EXPECT_GT(r.stats.inputs[1].input_bytes, 0u);
  EXPECT_EQ(r.stats.records, static_cast<uint64_t>(2 * kRows));
}

TEST(SpecSplit, OneHotSpecGivesFixedRows) {
  const std::string dir = TestTempDir("split_source", "one_hot");
  const std::vector<std::string> files = {WriteExamples(dir)};
  const data::FeatureSpec spec = Spec(kExampleSpec);
  ASSERT_FALSE(spec.multi_hot);
  const Read r = ReadSplit(Def(files, spec, 8), spec, 0, 1);
  auto want = data::ReadSpecColumns(files, spec);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ExpectSameColumns(r.columns, *want);
  ASSERT_FALSE(r.batches.empty());
  EXPECT_FALSE(r.batches[0].multi_hot());
  EXPECT_EQ(r.batches[0].ids.size(), 8u * spec.field_size);
  EXPECT_EQ(r.columns.columns[0].values[4], 1.0f);  // price of row 4, as written (0.25 * 4)
  EXPECT_EQ(r.stats.inputs.at(0).format, "tfrecord");
}

// Rows of a split as (file, label, field-0 ids) keys: each row of the data once over all splits.
std::multiset<std::vector<int64_t>> RowKeys(const Read& r) {
  std::multiset<std::vector<int64_t>> out;
  for (const data::Batch& b : r.batches)
    for (int64_t i = 0; i < b.size(); ++i) {
      std::vector<int64_t> k{static_cast<int64_t>(b.labels[i])};
      for (int64_t id : b.row_ids(i)) k.push_back(id);
      for (float v : b.row_values(i)) k.push_back(static_cast<int64_t>(v * 4));
      out.insert(k);
    }
  return out;
}

TEST(SpecSplit, RecordAndFileLevelSplitsPartitionTheRows) {
  const std::string dir = TestTempDir("split_source", "partition");
  const data::FeatureSpec spec = Spec(kFfmSpec);
  for (int files_n : {1, 2, 4}) {
    std::vector<std::string> files;
    for (int f = 0; f < files_n; ++f) files.push_back(WriteLibFfm(dir, f));
    const proto::DatasetDef def = Def(files, spec, 4);
    const Read all = ReadSplit(def, spec, 0, 1);
    for (int n : {2, 3}) {
      SCOPED_TRACE("files " + std::to_string(files_n) + " splits " + std::to_string(n));
      std::multiset<std::vector<int64_t>> got;
      int64_t rows = 0;
      for (int i = 0; i < n; ++i) {
        const Read r = ReadSplit(def, spec, i, n);
        for (const auto& k : RowKeys(r)) got.insert(k);
        rows += r.columns.rows();
        if (files_n >= n) {
          // File level: split i reads files i, i + n, ... whole.
          size_t expect_files = 0;
          for (int f = i; f < files_n; f += n) ++expect_files;
          EXPECT_EQ(r.stats.inputs.size(), expect_files);
          EXPECT_EQ(r.stats.records_sharded_out, 0u);
        } else {
          // Record level: every file read; record r of file f kept when (f + r) % n == i.
          EXPECT_EQ(r.stats.inputs.size(), static_cast<size_t>(files_n));
          int64_t kept = 0;
          for (int f = 0; f < files_n; ++f)
            for (int rec = 0; rec < kRows; ++rec) kept += (f + rec) % n == i;
          EXPECT_EQ(r.columns.rows(), kept);
        }
      }
      EXPECT_EQ(rows, static_cast<int64_t>(files_n) * kRows);
      EXPECT_EQ(got, RowKeys(all));
    }
  }
}

TEST(SpecSplit, DropRemainderDropsTheSplitsPartialBatch) {
  const std::string dir = TestTempDir("split_source", "drop");
  const data::FeatureSpec spec = Spec(kFfmSpec);
  proto::DatasetDef def = Def({WriteLibFfm(dir, 0)}, spec, 5);
  def.set_drop_remainder(true);
  const Read r = ReadSplit(def, spec, 0, 1);
  EXPECT_EQ(r.batches.size(), 4u);
  EXPECT_EQ(r.columns.rows(), 20);
  EXPECT_EQ(r.stats.dropped_remainder_records, 3u);
}

TEST(SpecSplit, ErrorsNameTheFileAndWhatDoesNotApply) {
  const std::string dir = TestTempDir("split_source", "errors");
  const data::FeatureSpec spec = Spec(kFfmSpec);
  const std::string ffm = WriteLibFfm(dir, 0);
  const proto::DatasetDef good = Def({ffm}, spec, 4);
  auto refused = [&](const std::function<void(proto::DatasetDef*)>& change, const std::string& what) {
    proto::DatasetDef d = good;
    change(&d);
    const Status s = ValidateDatasetDef(d);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what;
    EXPECT_NE(s.message().find(what + " does not apply with a feature spec"), std::string::npos) << s.ToString();
  };
  refused([](proto::DatasetDef* d) { d->set_shuffle_buffer_size(8); }, "shuffle_buffer_size");
  refused([](proto::DatasetDef* d) { d->set_num_parallel_reads(2); }, "num_parallel_reads 2");
  refused([](proto::DatasetDef* d) { d->set_format("libsvm"); }, "format \"libsvm\"");
  refused([](proto::DatasetDef* d) { d->set_feature_map("/v.map"); }, "a feature map");
  refused([](proto::DatasetDef* d) { d->set_skip_corrupt_records(true); }, "skip_corrupt_records");
  proto::DatasetDef bad = good;
  bad.set_feature_spec("{\"fields\": 3}");
  const Status s = ValidateDatasetDef(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dataset definition: feature_spec: "), std::string::npos) << s.ToString();
  // Only the canonical form, and never a path for the worker to open.
  auto spec_refused = [&](const std::string& text, const std::string& what) {
    proto::DatasetDef d = good;
    d.set_feature_spec(text);
    const Status st = ValidateDatasetDef(d);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(st.message().find(what), std::string::npos) << st.ToString();
  };
  spec_refused(R"({"input": "libffm", "feature_size": 64, "fields": [{"ffm_field": 0}, {"ffm_field": 1}]})",
               "not in canonical form");
  spec_refused(R"({"input": "example", "label": "y", "fields": [{"key": "c", "vocabulary_file": "/etc/passwd"}]})",
               "\"vocabulary_file\" is not accepted in a dataset definition");
  // The spec is part of the fingerprint.
  proto::DatasetDef other = good;
  other.set_feature_spec(Spec(R"({"input": "libffm", "feature_size": 64, "fields": [{"ffm_field": 0}]})").ToJson());
  EXPECT_NE(DatasetFingerprint(other), DatasetFingerprint(good));

  // A file that is not the spec's input: the read error names it and the line.
  const std::string svm = dir + "/x.libsvm";
  std::ofstream(svm) << "1 3:1 5:1\n";
  const proto::DatasetDef wrong = Def({svm}, spec, 4);
  proto::SplitId split;
  split.set_num_splits(1);
  auto src = OpenSplit(wrong, split, 1);
  ASSERT_TRUE(src.ok());
  data::Batch b;
  auto more = (*src)->Next(&b);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("x.libsvm"), std::string::npos) << more.status().ToString();
  auto again = (*src)->Next(&b);  // sticky
  EXPECT_FALSE(again.ok());
}

TEST(SpecColumnsAppendBatch, RefusesAnotherLayoutAndAppendsNothing) {
  const data::FeatureSpec spec = Spec(kFfmSpec);
  data::SpecColumnsBuilder b(spec);
  data::Batch one_hot;
  one_hot.field_size = 3;
  one_hot.AppendRow(1, std::vector<int64_t>{1, 2, 3}, std::vector<float>{1, 1, 1});
  const Status s = b.AppendBatch(one_hot);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not have the layout of the spec"), std::string::npos) << s.ToString();
  // A multi-hot batch of the spec's layout: its rows become the spec's bags.
  data::Batch mh;
  mh.field_size = 3;
  mh.AppendMultiHotRow(1, std::vector<int64_t>{1, 11}, std::vector<float>{1, 1}, std::vector<int32_t>{1, 1, 0});
  ASSERT_TRUE(b.AppendBatch(mh).ok());
  EXPECT_EQ(b.rows(), 1);
  data::SpecColumns c = b.Take();
  EXPECT_EQ(c.columns[0].ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.columns[1].ids, (std::vector<int64_t>{11}));
  EXPECT_EQ(c.columns[2].offsets, (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace ctrain::dataservice
