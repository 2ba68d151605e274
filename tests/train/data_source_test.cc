// DataSourceOptions (checkpoint meta "data"), the eval/predict encoding check
// (train/data_source.h) and predict's one-line-per-record output
// (train/prediction_output.h).
#include <gtest/gtest.h>

#include "ctrain/train/data_source.h"
#include "ctrain/train/prediction_output.h"

namespace ctrain::train {
namespace {

DataSourceOptions Libsvm(int32_t base) {
  DataSourceOptions d;
  d.from_files = true;
  d.format = "libsvm";
  d.id_base = base;
  d.field_size = 39;
  d.feature_size = 921;
  return d;
}

DataSourceOptions Hashed(const std::string& format, int64_t buckets) {
  DataSourceOptions d;
  d.from_files = true;
  d.format = format;
  d.field_size = 39;
  d.feature_size = buckets;
  d.hash_buckets = buckets;
  return d;
}

TEST(DataSource, JsonRoundTripKeepsEveryRecordedSetting) {
  DataSourceOptions d = Hashed("criteo-tsv", 5000);
  d.compression = "gzip";
  d.hash_seed = 7;
  auto back = DataSourceFromJson(DataSourceToJson(d, 39));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->format, "criteo-tsv");
  EXPECT_EQ(back->compression, "gzip");
  EXPECT_EQ(back->field_size, 39);
  EXPECT_EQ(back->feature_size, 5000);
  EXPECT_EQ(back->hash_buckets, 5000);
  EXPECT_EQ(back->hash_seed, 7u);
  DataSourceOptions v = Hashed("criteo-csv", 268);
  v.feature_map = "/x/fm.txt";
  v.vocab_fingerprint = "00112233aabbccdd";
  back = DataSourceFromJson(DataSourceToJson(v, 39));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->feature_map, "/x/fm.txt");
  EXPECT_EQ(back->vocab_fingerprint, "00112233aabbccdd");
}

TEST(DataSource, OldMetaWithFormatAutoLoadsAsUnknownFormat) {
  auto d = DataSourceFromJson({{"format", "auto"}, {"id_base", 1}, {"field_size", 39}, {"feature_map", ""}});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->recorded());
  EXPECT_EQ(d->format, "");
  EXPECT_EQ(d->id_base, 1);
  EXPECT_EQ(d->feature_size, 0);
  std::vector<std::string> notes;
  EXPECT_TRUE(CheckInputMatchesModel(*d, "runs/old", Hashed("criteo-tsv", 921), "--input x.tsv", &notes).ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("does not record the training data's format"), std::string::npos) << notes[0];
  // The id base it did record is still checked.
  Status s = CheckInputMatchesModel(*d, "runs/old", Libsvm(0), "--input y.libsvm", &notes);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
}

TEST(DataSource, CriteoInputOnALibsvmModelIsRefusedNamingBothSides) {
  std::vector<std::string> notes;
  Status s = CheckInputMatchesModel(Libsvm(1), "runs/a", Hashed("criteo-tsv", 921), "--input x.tsv", &notes);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message().substr(0, 119),
            "--input x.tsv is criteo-tsv (hashed ids, 921 buckets, seed 0); the model in runs/a was trained on libsvm "
            "with id base 1");
  s = CheckInputMatchesModel(Hashed("criteo-tsv", 921), "runs/a", Libsvm(1), "--input y.libsvm", &notes);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
}

TEST(DataSource, IdFormatsAgreeUnlessTheIdBaseDiffers) {
  std::vector<std::string> notes;
  EXPECT_TRUE(CheckInputMatchesModel(Libsvm(1), "m", Libsvm(1), "--input a", &notes).ok());
  EXPECT_TRUE(notes.empty());
  Status s = CheckInputMatchesModel(Libsvm(1), "m", Libsvm(0), "--input a", &notes);
  EXPECT_NE(s.message().find("every id would shift by -1"), std::string::npos) << s.message();
  DataSourceOptions tfr = Libsvm(0);
  tfr.format = "tfrecord";
  EXPECT_TRUE(CheckInputMatchesModel(Libsvm(1), "m", tfr, "--input a.tfr", &notes).ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("ids are taken as stored"), std::string::npos);
}

TEST(DataSource, CriteoHashingAndVocabularyMustMatch) {
  std::vector<std::string> notes;
  EXPECT_TRUE(CheckInputMatchesModel(Hashed("criteo-tsv", 921), "m", Hashed("criteo-csv", 921), "--input a", &notes).ok());
  DataSourceOptions seed = Hashed("criteo-tsv", 921);
  seed.hash_seed = 1;
  EXPECT_FALSE(CheckInputMatchesModel(Hashed("criteo-tsv", 921), "m", seed, "--input a", &notes).ok());
  DataSourceOptions vm = Hashed("criteo-tsv", 921);
  vm.feature_map = "/fm1";
  vm.vocab_fingerprint = "aaaa";
  DataSourceOptions vi = vm;
  EXPECT_TRUE(CheckInputMatchesModel(vm, "m", vi, "--input a", &notes).ok());
  vi.vocab_fingerprint = "bbbb";
  Status s = CheckInputMatchesModel(vm, "m", vi, "--input a", &notes);
  EXPECT_NE(s.message().find("the feature map changed since training"), std::string::npos) << s.message();
  EXPECT_FALSE(CheckInputMatchesModel(vm, "m", Hashed("criteo-tsv", 921), "--input a", &notes).ok());
}

TEST(DataSource, VocabularyFingerprintFollowsTheMapContent) {
  auto a = io::CriteoVocabulary::ParseFeatureMap(
      "I1 0\nI2 1\nI3 2\nI4 3\nI5 4\nI6 5\nI7 6\nI8 7\nI9 8\nI10 9\nI11 10\nI12 11\nI13 12\n"
      "C1|<unk> 13\nC2|<unk> 14\nC3|<unk> 15\nC4|<unk> 16\nC5|<unk> 17\nC6|<unk> 18\nC7|<unk> 19\nC8|<unk> 20\n"
      "C9|<unk> 21\nC10|<unk> 22\nC11|<unk> 23\nC12|<unk> 24\nC13|<unk> 25\nC14|<unk> 26\nC15|<unk> 27\n"
      "C16|<unk> 28\nC17|<unk> 29\nC18|<unk> 30\nC19|<unk> 31\nC20|<unk> 32\nC21|<unk> 33\nC22|<unk> 34\n"
      "C23|<unk> 35\nC24|<unk> 36\nC25|<unk> 37\nC26|<unk> 38\n",
      "a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = io::CriteoVocabulary::ParseFeatureMap(a->FeatureMapText(0) + "C1|abc 39\n", "b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(VocabularyFingerprint(*a).size(), 16u);
  EXPECT_EQ(VocabularyFingerprint(*a), VocabularyFingerprint(*a));
  EXPECT_NE(VocabularyFingerprint(*a), VocabularyFingerprint(*b));
  // The prefix fingerprint: b's first 39 entries are a's whole map (b extends a append-only).
  EXPECT_EQ(VocabularyFingerprint(*b, 39), VocabularyFingerprint(*a));
  EXPECT_EQ(VocabularyFingerprint(*b, 40), VocabularyFingerprint(*b));
  EXPECT_EQ(VocabularyFingerprint(*b, 1000), VocabularyFingerprint(*b));
  EXPECT_NE(VocabularyFingerprint(*b, 38), VocabularyFingerprint(*a));
}

// Warm start on ids made through a map (shared/cases/trial3/02): the new map must extend the model's.
TEST(DataSource, AWarmStartMapMustExtendTheModelsMap) {
  std::string base;
  for (int i = 0; i < 13; ++i) base += "I" + std::to_string(i + 1) + " " + std::to_string(i) + "\n";
  for (int j = 0; j < 26; ++j) base += "C" + std::to_string(j + 1) + "|<unk> " + std::to_string(13 + j) + "\n";
  auto old_map = io::CriteoVocabulary::ParseFeatureMap(base + "C1|a 39\nC1|b 40\n", "old");
  auto extended = io::CriteoVocabulary::ParseFeatureMap(base + "C1|a 39\nC1|b 40\nC2|z 41\n", "ext");
  auto scrambled = io::CriteoVocabulary::ParseFeatureMap(base + "C1|b 39\nC1|a 40\nC2|z 41\n", "scr");
  ASSERT_TRUE(old_map.ok() && extended.ok() && scrambled.ok());
  DataSourceOptions model;
  model.from_files = true;
  model.format = "libsvm";
  model.feature_map = "/d/day0.libsvm.feature_map.txt";
  model.vocab_fingerprint = VocabularyFingerprint(*old_map);
  model.vocab_entries = 41;
  DataSourceOptions run = model;
  run.feature_map = "/d/day1.libsvm.feature_map.txt";
  std::vector<std::string> notes;
  EXPECT_TRUE(CheckFeatureMapExtends(model, "runs/day0", run, &*old_map, &notes).ok());
  EXPECT_TRUE(CheckFeatureMapExtends(model, "runs/day0", run, &*extended, &notes).ok());
  Status s = CheckFeatureMapExtends(model, "runs/day0", run, &*scrambled, &notes);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("the feature map /d/day1.libsvm.feature_map.txt (42 entries) does not extend the map "
                             "the model in runs/day0 was trained with, /d/day0.libsvm.feature_map.txt (41 entries)"),
            std::string::npos) << s.message();
  EXPECT_NE(s.message().find("ctrain convert --feature-map /d/day0.libsvm.feature_map.txt"), std::string::npos);
  // No map in this run: refused, naming the model's map.
  run.feature_map.clear();
  s = CheckFeatureMapExtends(model, "runs/day0", run, nullptr, &notes);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("this run's --train has no feature map"), std::string::npos) << s.message();
  EXPECT_TRUE(notes.empty());
  // A model without a map: nothing to check. An old checkpoint without the entry count: a note.
  DataSourceOptions hashed = model;
  hashed.feature_map.clear();
  EXPECT_TRUE(CheckFeatureMapExtends(hashed, "runs/day0", run, nullptr, &notes).ok());
  model.vocab_entries = 0;
  run.feature_map = "/d/x.txt";
  EXPECT_TRUE(CheckFeatureMapExtends(model, "runs/day0", run, &*scrambled, &notes).ok());
  EXPECT_EQ(notes.size(), 1u);
  // The entry count survives the checkpoint's JSON, for id files and Criteo vocabularies.
  model.vocab_entries = 41;
  for (const char* format : {"libsvm", "criteo-tsv"}) {
    model.format = format;
    auto back = DataSourceFromJson(DataSourceToJson(model, 39));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->vocab_entries, 41) << format;
    EXPECT_EQ(back->vocab_fingerprint, model.vocab_fingerprint) << format;
    EXPECT_EQ(back->feature_map, model.feature_map) << format;
  }
}

// ---- predict output ----

LoadStats::Dropped Drop(int64_t row, int64_t first_record, uint64_t records, bool exact = true) {
  LoadStats::Dropped d;
  d.file = "f.tfr";
  d.row = row;
  d.first_record = first_record;
  d.where.index = static_cast<uint64_t>(first_record);
  d.where.offset = 100;
  d.where.bytes = 50;
  d.where.records = records;
  d.where.exact = exact;
  return d;
}

TEST(PredictionOutput, ColumnsParseAndRejectUnknownOrRepeatedNames) {
  auto c = ParsePredictColumns("index,label,prediction");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<PredictColumn>{PredictColumn::kIndex, PredictColumn::kLabel, PredictColumn::kPrediction}));
  EXPECT_FALSE(ParsePredictColumns("prediction,prediction").ok());
  EXPECT_FALSE(ParsePredictColumns("score").ok());
  EXPECT_FALSE(ParsePredictColumns("").ok());
}

TEST(PredictionOutput, OneLinePerInputRecordWithNanForDroppedOnesAtStartMiddleAndEnd) {
  Dataset ds(1);
  const int64_t id = 0;
  const float v = 1;
  ds.Append(1, &id, &v);
  ds.Append(0, &id, &v);
  const std::vector<float> probs = {0.25f, 0.5f};
  // Records: 0 dropped, 1 = row 0, 2-3 dropped, 4 = row 1, 5 dropped.
  const std::vector<LoadStats::Dropped> dropped = {Drop(0, 0, 1), Drop(1, 2, 2), Drop(2, 5, 1)};
  EXPECT_EQ(FormatPredictions({PredictColumn::kPrediction}, ds, probs, dropped), "nan\n0.25\nnan\nnan\n0.5\nnan\n");
  EXPECT_EQ(FormatPredictions({PredictColumn::kIndex, PredictColumn::kLabel, PredictColumn::kPrediction}, ds, probs, {}),
            "0\t1\t0.25\n1\t0\t0.5\n");
  const std::vector<std::string> log = DescribeDropped(dropped, true);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1], "f.tfr: record 2 at offset 100 (50 bytes, 2 records) dropped as corrupt; output lines 3-4 are nan");
  EXPECT_TRUE(CheckDroppedAlignable(dropped).ok());
  EXPECT_EQ(CheckDroppedAlignable({Drop(0, 3, 1, false)}).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ctrain::train
