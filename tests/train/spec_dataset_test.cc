// Datasets read through a feature spec (train/dataset.h LoadSpecDataset):
// multi-hot LibSVM with a field map (trial/09's varlen.libsvm) and the DeepCTR
// TFRecords with a suggested spec, trained end to end by the Trainer.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ctrain/data/spec_suggest.h"
#include "ctrain/io/example.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"
#include "ctrain/train/data_source.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

const std::string kData = CTRAIN_SHARED_DATA_DIR;
const std::string kVarlen = kData + "/../cases/trial/varlen.libsvm";

// varlen.libsvm: ids 1..200, 3..10 per line; four fields of 50 ids each.
constexpr char kVarlenMap[] = R"({"input": "libsvm", "id_base": 1, "fields": [
  {"name": "a", "ids": [1, 50], "pooling": "mean"}, {"name": "b", "ids": [51, 100], "pooling": "mean"},
  {"name": "c", "ids": [101, 150]}, {"name": "d", "ids": [151, 200]}]})";

TrainOptions Options(int32_t fields, int64_t feature_size) {
  TrainOptions o;
  o.model.feature_size = feature_size;
  o.model.field_size = fields;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16, 8};
  o.model.dropout = 0.0f;
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.02f;
  o.batch_size = 16;
  o.seed = 3;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

TEST(SpecDataset, VarlenLibSvmWithFieldMapIsMultiHot) {
  if (!std::filesystem::exists(kVarlen)) GTEST_SKIP() << kVarlen << " is absent";
  auto spec = data::ParseFeatureSpec(kVarlenMap, "map.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  LoadStats stats;
  auto ds = LoadSpecDataset({kVarlen}, *spec, &stats);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->size(), 50);
  EXPECT_EQ(ds->field_size(), 4);
  ASSERT_TRUE(ds->multi_hot());
  EXPECT_EQ(stats.per_file.at(0).format, data::RecordFormat::kLibSvm);
  // Line 1: "1 17:1 31:1 66:1 146:1 196:1" -> a = {16, 30} (mean: 1/2 each), b = {65}, c = {145}, d = {195}.
  data::Batch b;
  ds->Slice(0, 2, &b);
  ASSERT_TRUE(b.Validate().ok());
  EXPECT_EQ(b.labels[0], 1.0f);
  EXPECT_EQ(std::vector<int64_t>(b.field_splits.begin(), b.field_splits.begin() + 5),
            (std::vector<int64_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(std::vector<int64_t>(b.ids.begin(), b.ids.begin() + 5), (std::vector<int64_t>{16, 30, 65, 145, 195}));
  EXPECT_EQ(std::vector<float>(b.values.begin(), b.values.begin() + 5),
            (std::vector<float>{0.5f, 0.5f, 1.0f, 1.0f, 1.0f}));
  // Gather of rows {1, 0} is the slice's rows swapped.
  data::Batch g;
  const std::vector<int64_t> rows = {1, 0};
  ds->Gather(rows, &g);
  ASSERT_TRUE(g.Validate().ok());
  EXPECT_EQ(g.labels[1], b.labels[0]);
  const auto r0 = b.row_ids(0), g1 = g.row_ids(1);
  EXPECT_EQ(std::vector<int64_t>(r0.begin(), r0.end()), std::vector<int64_t>(g1.begin(), g1.end()));
  EXPECT_EQ(g.field_splits.size(), 9u);
  // Row by row copies (how mpirun shards memory-mode rows) keep the layout.
  Dataset odd(4);
  for (int64_t r = 1; r < ds->size(); r += 2) odd.AppendRowOf(*ds, r);
  EXPECT_EQ(odd.size(), 25);
  data::Batch o1, d1;
  odd.Slice(0, 1, &o1);
  const std::vector<int64_t> one = {1};
  ds->Gather(one, &d1);
  EXPECT_EQ(o1, d1);

  // The trainer fits the 50 rows (memorises them: training AUC well above chance).
  TrainOptions o = Options(4, spec->feature_size);
  o.epochs = 40;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto before = (*t)->Evaluate(*ds);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  TrainResult r;
  Status st = (*t)->Train(*ds, nullptr, &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto after = (*t)->Evaluate(*ds);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->examples, 50);
  EXPECT_GT(after->auc, 0.9) << "before " << before->auc;
  EXPECT_LT(after->logloss, before->logloss);
}

TEST(SpecDataset, LibSvmIdOutsideTheFieldMapNamesTheLine) {
  if (!std::filesystem::exists(kVarlen)) GTEST_SKIP() << kVarlen << " is absent";
  auto spec = data::ParseFeatureSpec(R"({"input": "libsvm", "id_base": 1, "fields": [{"ids": [1, 100]}]})", "m.json");
  ASSERT_TRUE(spec.ok());
  auto ds = LoadSpecDataset({kVarlen}, *spec);
  ASSERT_FALSE(ds.ok());
  // Line 1 holds 146 and 196.
  EXPECT_NE(ds.status().message().find(kVarlen + ":1: pair 4: id 146 (as written) is in no field"),
            std::string::npos)
      << ds.status().ToString();
}

TEST(SpecDataset, DeepCtrGzipTFRecordsTrainWithASuggestedSpec) {
  const std::string tr = kData + "/criteo_deepctr_tr.gzip.tfrecords", va = kData + "/criteo_deepctr_va.gzip.tfrecords";
  if (!std::filesystem::exists(tr)) GTEST_SKIP() << tr << " is absent";
  auto suggested = data::SuggestFeatureSpec({tr}, {});
  ASSERT_TRUE(suggested.ok()) << suggested.status().ToString();
  auto spec = data::ParseFeatureSpec(suggested->json, "deepctr.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto train = LoadSpecDataset({tr}, *spec);
  auto valid = LoadSpecDataset({va}, *spec);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  EXPECT_EQ(train->size(), 160);
  EXPECT_EQ(valid->size(), 20);
  EXPECT_FALSE(train->multi_hot());  // one value per key: the fixed one-hot layout
  TrainOptions o = Options(spec->field_size, spec->feature_size);
  o.epochs = 3;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TrainResult r;
  ASSERT_TRUE((*t)->Train(*train, &*valid, &r).ok());
  auto ev = (*t)->Evaluate(*valid);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->examples, 20);
  EXPECT_GT(ev->auc, 0.0);
  EXPECT_LT(ev->auc, 1.0 + 1e-12);
}

// tf.Example int64 lists of any length (a click history) as a multi-hot field:
// the label is 1 exactly when item 3 is in the history, which the model learns.
TEST(SpecDataset, ExampleInt64ListsAreMultiHot) {
  const std::string dir = ctrain::testing::TestTempDir("spec_dataset", "int64_lists");
  std::mt19937 rng(5);
  std::string bytes, rec;
  int64_t empty = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<int64_t> hist;
    const int n = static_cast<int>(rng() % 5);
    bool has3 = false;
    for (int k = 0; k < n; ++k) {
      hist.push_back(static_cast<int64_t>(rng() % 8));
      has3 |= hist.back() == 3;
    }
    empty += n == 0;
    std::vector<std::pair<std::string, io::ParsedFeature>> f = {{"label", io::ParsedFeature::Floats({has3 ? 1.0f : 0.0f})},
                                                                {"age", io::ParsedFeature::Floats({0.5f})}};
    if (n > 0 || i % 2 == 0) f.push_back({"hist", io::ParsedFeature::Int64s(hist)});  // absent or empty: no ids
    rec.clear();
    io::EncodeExample(f, &rec);
    io::AppendTFRecord(&bytes, rec);
  }
  ASSERT_GT(empty, 0);
  const std::string path = dir + "/hist.tfrecord";
  ASSERT_TRUE(io::WriteStringToFileAtomic(path, bytes).ok());
  auto spec = data::ParseFeatureSpec(R"({"fields": [{"key": "age", "type": "numeric"},
      {"key": "hist", "type": "categorical", "var_len": true, "pooling": "sum", "map": "identity", "buckets": 8}]})",
                                     "hist.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto ds = LoadSpecDataset({path}, *spec);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_TRUE(ds->multi_hot());
  EXPECT_EQ(ds->size(), 300);
  TrainOptions o = Options(2, spec->feature_size);
  o.epochs = 15;
  auto t = Trainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TrainResult r;
  ASSERT_TRUE((*t)->Train(*ds, nullptr, &r).ok());
  auto ev = (*t)->Evaluate(*ds);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_GT(ev->auc, 0.95);
}

TEST(SpecDataset, CheckpointKeepsTheSpecForInference) {
  auto spec = data::ParseFeatureSpec(kVarlenMap, "map.json");
  ASSERT_TRUE(spec.ok());
  LoadStats stats;
  stats.per_file.push_back({"x.libsvm", data::RecordFormat::kLibSvm, io::Compression::kGzip, 3});
  const DataSourceOptions d = MakeSpecDataSource(*spec, stats);
  EXPECT_EQ(d.format, "libsvm");
  EXPECT_EQ(d.compression, "gzip");
  EXPECT_EQ(d.field_size, 4);
  EXPECT_EQ(d.feature_size, 200);
  // Through the checkpoint meta's JSON and back: the same canonical spec.
  auto back = DataSourceFromJson(DataSourceToJson(d, 4));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->feature_spec, spec->ToJson());
  EXPECT_EQ(DescribeDataSource(*back), "libsvm through a feature spec (4 fields, feature_size 200)");
  auto resolved = ResolveInferenceSpec(*back, "runs/a", "");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  ASSERT_TRUE(resolved->has_value());
  EXPECT_EQ((*resolved)->field_size, 4);
  // A different spec given to eval is refused; a model without a spec refuses one.
  const std::string dir = ctrain::testing::TestTempDir("spec_dataset", "resolve");
  const std::string other = dir + "/other.json";
  ASSERT_TRUE(io::WriteStringToFileAtomic(other, R"({"input": "libsvm", "fields": [{"ids": [0, 9]}]})").ok());
  auto differ = ResolveInferenceSpec(*back, "runs/a", other);
  EXPECT_EQ(differ.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(differ.status().message().find("differs from the feature spec the model in runs/a"), std::string::npos)
      << differ.status().ToString();
  DataSourceOptions plain;
  plain.from_files = true;
  plain.format = "libsvm";
  auto none = ResolveInferenceSpec(plain, "runs/b", other);
  EXPECT_NE(none.status().message().find("was trained without a feature spec"), std::string::npos)
      << none.status().ToString();
  auto neither = ResolveInferenceSpec(plain, "runs/b", "");
  ASSERT_TRUE(neither.ok());
  EXPECT_FALSE(neither->has_value());
}

}  // namespace
}  // namespace ctrain::train
