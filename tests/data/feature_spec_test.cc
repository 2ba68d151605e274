// Feature specs (data/feature_spec.h): parsing (JSON and TOML), the id layout,
// rows built from tf.Example / LibSVM / libFFM, and --suggest-spec on the
// shared DeepCTR and PaddleRec files.
#include "ctrain/data/feature_spec.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/data/spec_reader.h"
#include "ctrain/data/spec_row_builder.h"
#include "ctrain/data/spec_suggest.h"
#include "ctrain/io/example.h"
#include "ctrain/io/feature_hash.h"
#include "ctrain/io/tfrecord.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

using io::ParsedFeature;

constexpr char kSpec[] = R"({
  "label": "clk", "label_dtype": "int64",
  "fields": [
    {"key": "age", "type": "numeric", "log1p": true, "default": 0},
    {"key": "dense", "type": "numeric", "dtype": "int64", "length": 2},
    {"key": "city", "type": "categorical", "dtype": "bytes", "map": "hash", "buckets": 10},
    {"key": "slot", "type": "categorical", "map": "identity", "buckets": 5},
    {"key": "tags", "type": "categorical", "dtype": "bytes", "var_len": true, "pooling": "mean",
     "vocabulary": ["red", "green", "blue"]},
    {"key": "hist", "type": "categorical", "var_len": true, "map": "hash", "buckets": 7}
  ]
})";

constexpr char kSpecToml[] = R"(
label = "clk"
label_dtype = "int64"
[[fields]]
key = "age"
type = "numeric"
log1p = true
default = 0
[[fields]]
key = "dense"
type = "numeric"
dtype = "int64"
length = 2
[[fields]]
key = "city"
type = "categorical"
dtype = "bytes"
map = "hash"
buckets = 10
[[fields]]
key = "slot"
type = "categorical"
map = "identity"
buckets = 5
[[fields]]
key = "tags"
type = "categorical"
dtype = "bytes"
var_len = true
pooling = "mean"
vocabulary = ["red", "green", "blue"]
[[fields]]
key = "hist"
type = "categorical"
var_len = true
map = "hash"
buckets = 7
)";

std::string Example(std::vector<std::pair<std::string, ParsedFeature>> f) {
  std::string out;
  io::EncodeExample(f, &out);
  return out;
}

TEST(FeatureSpec, LayoutOfJsonAndTomlIsTheSame) {
  auto j = ParseFeatureSpec(kSpec, "spec.json");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto t = ParseFeatureSpec(kSpecToml, "spec.toml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // Blocks in order: age [0,1) dense [1,2) [2,3) city [3,13) slot [13,18) tags [18,22) hist [22,29).
  EXPECT_EQ(j->field_size, 7);
  EXPECT_EQ(j->feature_size, 29);
  EXPECT_TRUE(j->multi_hot);
  EXPECT_EQ(j->fields[1].offsets, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(j->fields[4].offsets, (std::vector<int64_t>{18}));
  EXPECT_EQ(j->fields[4].size, 4);  // 3 words + out-of-vocabulary
  EXPECT_EQ(j->ToJson(), t->ToJson());
  // The checkpoint's canonical form parses back to the same spec.
  auto back = ParseFeatureSpec(j->ToJson(), "ckpt.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), j->ToJson());
  EXPECT_EQ(back->feature_size, 29);
}

TEST(FeatureSpec, RowFromExample) {
  auto spec = ParseFeatureSpec(kSpec, "spec.json");
  ASSERT_TRUE(spec.ok());
  auto b = SpecRowBuilder::Create(*spec);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  SpecRow row;
  // age missing -> default 0; tags: red, purple (OOV), blue; hist missing -> empty field.
  const std::string rec = Example({{"clk", ParsedFeature::Int64s({1})},
                                   {"dense", ParsedFeature::Int64s({-1, 3})},
                                   {"city", ParsedFeature::Bytes({"paris"})},
                                   {"slot", ParsedFeature::Int64s({4})},
                                   {"tags", ParsedFeature::Bytes({"red", "purple", "blue"})}});
  Status s = b->FromExample(rec, &row);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(row.label, 1.0f);
  EXPECT_EQ(row.lengths, (std::vector<int32_t>{1, 1, 1, 1, 1, 3, 0}));
  const int64_t city = 3 + static_cast<int64_t>(io::Hash64("paris", 0) % 10);
  EXPECT_EQ(row.ids, (std::vector<int64_t>{0, 1, 2, city, 13 + 4, 18 + 1, 18 + 0, 18 + 3}));
  ASSERT_EQ(row.values.size(), 8u);
  EXPECT_EQ(row.values[0], 0.0f);  // log1p(0)
  EXPECT_EQ(row.values[1], -1.0f);  // dense is not log1p'd
  EXPECT_EQ(row.values[2], 3.0f);
  EXPECT_EQ(row.values[3], 1.0f);
  for (int i = 5; i < 8; ++i) EXPECT_FLOAT_EQ(row.values[i], 1.0f / 3);  // mean pooling
  // log1p keeps the sign: -1 -> -log(2).
  ASSERT_TRUE(b->FromExample(Example({{"clk", ParsedFeature::Int64s({0})},
                                      {"age", ParsedFeature::Floats({-1.0f})},
                                      {"dense", ParsedFeature::Int64s({0, 0})},
                                      {"city", ParsedFeature::Bytes({""})},
                                      {"slot", ParsedFeature::Int64s({0})},
                                      {"hist", ParsedFeature::Int64s({5, 5})}}),
                             &row)
                  .ok());
  EXPECT_FLOAT_EQ(row.values[0], -std::log(2.0f));
  EXPECT_EQ(row.lengths.back(), 2);
  EXPECT_EQ(row.ids[row.ids.size() - 1], row.ids[row.ids.size() - 2]);  // hist: the same id twice
}

TEST(FeatureSpec, RowErrorsNameTheFeature) {
  auto spec = ParseFeatureSpec(kSpec, "spec.json");
  ASSERT_TRUE(spec.ok());
  auto b = SpecRowBuilder::Create(*spec);
  ASSERT_TRUE(b.ok());
  SpecRow row;
  auto base = [](int64_t slot, int64_t label) {
    return std::vector<std::pair<std::string, ParsedFeature>>{{"clk", ParsedFeature::Int64s({label})},
                                                              {"dense", ParsedFeature::Int64s({1, 2})},
                                                              {"city", ParsedFeature::Bytes({"x"})},
                                                              {"slot", ParsedFeature::Int64s({slot})}};
  };
  Status s = b->FromExample(Example(base(5, 1)), &row);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("feature 'slot' value 0: id 5 is outside [0, 5)"), std::string::npos) << s.ToString();
  s = b->FromExample(Example(base(1, 2)), &row);
  EXPECT_NE(s.message().find("label 2"), std::string::npos) << s.ToString();
  auto no_city = base(1, 1);
  no_city.erase(no_city.begin() + 2);
  s = b->FromExample(Example(no_city), &row);
  EXPECT_NE(s.message().find("missing feature 'city'"), std::string::npos) << s.ToString();
}

TEST(FeatureSpec, ParseErrorsNameTheEntry) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {R"({"fields": [{"key": "a", "type": "categorical", "buckets": 0}]})", "fields[0] (a).buckets: map hash needs buckets"},
      {R"({"fields": [{"key": "a", "type": "categorical", "buckts": 3}]})", "fields[0] (a): unknown key \"buckts\""},
      {R"({"fields": [{"key": "a", "type": "numeric", "var_len": true}]})", "var_len applies to categorical"},
      {R"({"fields": [{"key": "a", "type": "categorical", "dtype": "bytes", "map": "identity", "buckets": 3}]})",
       "map identity needs dtype int64"},
      {R"({"fields": [{"key": "label", "type": "numeric"}]})", "is the label key"},
      {R"({"input": "libsvm", "id_base": 1, "fields": [{"ids": [1, 10]}, {"ids": [10, 20]}]})", "overlap"},
      {R"({"input": "libffm", "fields": [{"ffm_field": 0}]})", "input libffm needs \"feature_size\""},
      {R"({"input": "libsvm", "fields": [{"ids": [0, 9], "buckets": 4}]})", "\"buckets\" does not apply to input libsvm"},
      {R"({"fields": []})", "a non-empty array of fields"},
      {R"({"fields": [{"key": "a", "type": "numeric"}], "feature_size": 0.5})", "feature_size: expected an integer"},
      {R"({"fields": [)", "not valid JSON"},
  };
  for (const Case& c : cases) {
    auto r = ParseFeatureSpec(c.json, "s.json");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().ToString();
    EXPECT_EQ(r.status().message().rfind("s.json", 0), 0u) << r.status().ToString();
  }
  auto t = ParseFeatureSpec("label = \n", "bad.toml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().rfind("bad.toml:1:", 0), 0u) << t.status().ToString();
}

TEST(FeatureSpec, LibSvmFieldMap) {
  auto spec = ParseFeatureSpec(R"({"input": "libsvm", "id_base": 1, "fields": [
      {"name": "a", "ids": [1, 100], "pooling": "mean"}, {"name": "b", "ids": [101, 200]}]})",
                               "map.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->feature_size, 200);
  EXPECT_EQ(spec->field_size, 2);
  auto b = SpecRowBuilder::Create(*spec);
  ASSERT_TRUE(b.ok());
  SpecRow row;
  // Written ids 150, 3, 7 (minus id_base 1): field a gets 2, 6 (mean), field b gets 149.
  const int64_t ids[] = {149, 2, 6};
  const float vals[] = {2.0f, 1.0f, 3.0f};
  ASSERT_TRUE(b->FromLibSvm(1, ids, vals, 3, &row).ok());
  EXPECT_EQ(row.lengths, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(row.ids, (std::vector<int64_t>{2, 6, 149}));
  EXPECT_EQ(row.values, (std::vector<float>{0.5f, 1.5f, 2.0f}));
  const int64_t bad[] = {250};
  Status s = b->FromLibSvm(0, bad, vals, 1, &row);
  EXPECT_NE(s.message().find("id 251 (as written) is in no field"), std::string::npos) << s.ToString();
}

TEST(FeatureSpec, LibFfmFields) {
  auto spec = ParseFeatureSpec(R"({"input": "libffm", "feature_size": 100, "fields": [
      {"ffm_field": 0}, {"ffm_field": 2, "pooling": "mean"}]})",
                               "ffm.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto b = SpecRowBuilder::Create(*spec);
  ASSERT_TRUE(b.ok());
  SpecRow row;
  ASSERT_TRUE(b->FromLibFfm(1, {{2, 10, 1.0f}, {0, 5, 0.5f}, {2, 11, 1.0f}}, &row).ok());
  EXPECT_EQ(row.lengths, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(row.ids, (std::vector<int64_t>{5, 10, 11}));
  EXPECT_EQ(row.values, (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_NE(b->FromLibFfm(1, {{1, 10, 1.0f}}, &row).message().find("field 1 is in no field"), std::string::npos);
  EXPECT_NE(b->FromLibFfm(1, {{0, 100, 1.0f}}, &row).message().find("feature 100 is outside"), std::string::npos);
}

TEST(FeatureSpec, ReaderNamesFileAndRecord) {
  const std::string dir = ctrain::testing::TestTempDir("feature_spec", "reader");
  std::string bytes;
  io::AppendTFRecord(&bytes, Example({{"label", ParsedFeature::Floats({1})}, {"x", ParsedFeature::Floats({2})}}));
  io::AppendTFRecord(&bytes, Example({{"label", ParsedFeature::Floats({0})}}));
  const std::string path = dir + "/two.tfrecord";
  std::ofstream(path, std::ios::binary) << bytes;
  auto spec = ParseFeatureSpec(R"({"fields": [{"key": "x", "type": "numeric"}]})", "s.json");
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->multi_hot);
  auto r = SpecReader::Open(path, *spec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  SpecRow row;
  auto more = (*r)->Next(&row);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ(row.values, (std::vector<float>{2.0f}));
  more = (*r)->Next(&row);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find(path + ": record 1 at offset"), std::string::npos) << more.status().ToString();
  EXPECT_NE(more.status().message().find("missing feature 'x'"), std::string::npos) << more.status().ToString();
}

// Damaged specs and records give errors, never a crash or a row with ids
// outside the spec's id space (a seeded sweep of byte flips and truncations).
TEST(FeatureSpec, DamagedSpecsAndRecordsAreErrorsNotCrashes) {
  std::mt19937 rng(14);
  const std::string spec_text = kSpec;
  int parsed = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string t = spec_text;
    if (i % 3 == 0) t.resize(rng() % t.size());
    else t[rng() % t.size()] = static_cast<char>(rng() % 128);
    auto r = ParseFeatureSpec(t, "s.json");
    if (r.ok()) {
      ++parsed;
      EXPECT_GT(r->feature_size, 0);
    } else {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    }
  }
  EXPECT_GT(parsed, 0);  // some flips land in whitespace or names
  auto spec = ParseFeatureSpec(kSpec, "spec.json");
  ASSERT_TRUE(spec.ok());
  auto b = SpecRowBuilder::Create(*spec);
  ASSERT_TRUE(b.ok());
  const std::string rec = Example({{"clk", ParsedFeature::Int64s({1})},
                                   {"dense", ParsedFeature::Int64s({-1, 3})},
                                   {"city", ParsedFeature::Bytes({"paris"})},
                                   {"slot", ParsedFeature::Int64s({4})},
                                   {"tags", ParsedFeature::Bytes({"red", "blue"})},
                                   {"hist", ParsedFeature::Int64s({1, 2, 3})}});
  SpecRow row;
  int ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string r = rec;
    if (i % 4 == 0) r.resize(rng() % r.size());
    else r[rng() % r.size()] ^= static_cast<char>(1 + rng() % 255);
    Status s = b->FromExample(r, &row);
    if (!s.ok()) continue;
    ++ok;
    ASSERT_EQ(row.lengths.size(), 7u);
    for (int64_t id : row.ids) ASSERT_TRUE(id >= 0 && id < spec->feature_size) << id;
  }
  EXPECT_GT(ok, 0);
}

TEST(FeatureSpec, SuggestedSpecsForDeepCtrAndPaddleRec) {
  const std::string dir = CTRAIN_SHARED_DATA_DIR;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared data folder " << dir << " is absent";
  // DeepCTR, gzip without a telling extension: label float, I1..I13 float, C1..C26 int64.
  auto d = SuggestFeatureSpec({dir + "/criteo_deepctr_tr.gzip.tfrecords"}, {});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->records, 160);
  auto ds = ParseFeatureSpec(d->json, "deepctr.json");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->field_size, 39);
  EXPECT_FALSE(ds->multi_hot);
  EXPECT_EQ(ds->label_dtype, io::FeatureKind::kFloat);
  EXPECT_EQ(ds->fields[0].key, "C1");  // natural order: C1, C2, ... C26, I1, ... I13
  EXPECT_EQ(ds->fields[25].key, "C26");
  EXPECT_EQ(ds->fields[26].kind, SpecFieldKind::kNumeric);
  EXPECT_FALSE(ds->fields[26].log1p);  // min-max scaled to [0, 1]
  // PaddleRec: label int64, dense_feature float[13] (unscaled: log1p), sparse_feature bytes[26].
  auto p = SuggestFeatureSpec({dir + "/criteo_paddlerec_wd.tfrecord"}, {});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto ps = ParseFeatureSpec(p->json, "paddle.json");
  ASSERT_TRUE(ps.ok()) << ps.status().ToString();
  EXPECT_EQ(ps->field_size, 39);
  EXPECT_EQ(ps->label_dtype, io::FeatureKind::kInt64);
  EXPECT_TRUE(ps->fields[0].log1p);
  EXPECT_EQ(ps->fields[1].dtype, io::FeatureKind::kBytes);
  // Every record of both files reads through its spec.
  for (const auto& [spec, file, n] : {std::tuple{&*ds, "criteo_deepctr_tr.gzip.tfrecords", 160},
                                      std::tuple{&*ps, "criteo_paddlerec_wd.tfrecord", 100}}) {
    auto r = SpecReader::Open(dir + "/" + file, *spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    SpecRow row;
    int rows = 0;
    for (;;) {
      auto more = (*r)->Next(&row);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      ASSERT_EQ(row.ids.size(), 39u);
      for (int64_t id : row.ids) ASSERT_TRUE(id >= 0 && id < spec->feature_size);
      ++rows;
    }
    EXPECT_EQ(rows, n) << file;
  }
  // A LibSVM file has no schema to suggest from.
  auto l = SuggestFeatureSpec({dir + "/agaricus_test.libsvm"}, {});
  EXPECT_NE(l.status().message().find("field map is yours to write"), std::string::npos) << l.status().ToString();
}

}  // namespace
}  // namespace ctrain::data
