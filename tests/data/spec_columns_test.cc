// SpecColumns (data/spec_columns.h): rows read through a feature spec as one
// array per spec entry: dense values, single ids, and multi-hot fields in
// torch.nn.EmbeddingBag's (ids, offsets, weights) layout.
#include "ctrain/data/spec_columns.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/data/spec_row_builder.h"
#include "ctrain/io/example.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

using io::ParsedFeature;

std::string Example(std::vector<std::pair<std::string, ParsedFeature>> f) {
  std::string out;
  io::EncodeExample(f, &out);
  return out;
}

TEST(SpecColumns, ExampleEntriesByKind) {
  auto spec = ParseFeatureSpec(R"({"label": "clk", "label_dtype": "int64", "fields": [
      {"key": "price", "type": "numeric"},
      {"key": "dense", "type": "numeric", "length": 2},
      {"key": "city", "type": "categorical", "map": "identity", "buckets": 10},
      {"key": "pair", "type": "categorical", "map": "identity", "buckets": 5, "length": 2},
      {"key": "tags", "type": "categorical", "map": "identity", "buckets": 8, "var_len": true, "pooling": "mean"},
      {"key": "hist", "type": "categorical", "map": "identity", "buckets": 8, "var_len": true}]})",
                               "s.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto b = SpecRowBuilder::Create(*spec);
  ASSERT_TRUE(b.ok());
  SpecColumnsBuilder cols(*spec);
  SpecRow row;
  auto add = [&](int64_t clk, float price, std::vector<int64_t> tags, std::vector<int64_t> hist) {
    ASSERT_TRUE(b->FromExample(Example({{"clk", ParsedFeature::Int64s({clk})},
                                        {"price", ParsedFeature::Floats({price})},
                                        {"dense", ParsedFeature::Floats({price, -price})},
                                        {"city", ParsedFeature::Int64s({clk + 3})},
                                        {"pair", ParsedFeature::Int64s({1, 4})},
                                        {"tags", ParsedFeature::Int64s(tags)},
                                        {"hist", ParsedFeature::Int64s(hist)}}),
                               &row)
                    .ok());
    ASSERT_TRUE(cols.Append(row).ok());
  };
  add(1, 2.5f, {1, 2, 3}, {7});
  add(0, 4.0f, {}, {0, 5});
  add(1, 8.0f, {6}, {});
  ASSERT_EQ(cols.rows(), 3);
  SpecColumns c = cols.Take();
  EXPECT_EQ(cols.rows(), 0);
  EXPECT_EQ(c.labels, (std::vector<float>{1, 0, 1}));
  ASSERT_EQ(c.columns.size(), 6u);
  // Blocks: price 0, dense 1..2, city 3..12, pair 13..17 and 18..22, tags 23..30, hist 31..38.
  const SpecColumn& price = c.columns[0];
  EXPECT_EQ(price.kind, SpecColumn::Kind::kDense);
  EXPECT_EQ(price.width, 1);
  EXPECT_EQ(price.values, (std::vector<float>{2.5f, 4.0f, 8.0f}));
  const SpecColumn& dense = c.columns[1];
  EXPECT_EQ(dense.width, 2);
  EXPECT_EQ(dense.values, (std::vector<float>{2.5f, -2.5f, 4, -4, 8, -8}));
  const SpecColumn& city = c.columns[2];
  EXPECT_EQ(city.kind, SpecColumn::Kind::kIds);
  EXPECT_EQ(city.ids, (std::vector<int64_t>{3 + 4, 3 + 3, 3 + 4}));
  const SpecColumn& pair = c.columns[3];
  EXPECT_EQ(pair.width, 2);
  EXPECT_EQ(pair.ids, (std::vector<int64_t>{14, 22, 14, 22, 14, 22}));
  const SpecColumn& tags = c.columns[4];
  EXPECT_EQ(tags.kind, SpecColumn::Kind::kBag);
  EXPECT_TRUE(tags.weighted);
  EXPECT_EQ(tags.ids, (std::vector<int64_t>{24, 25, 26, 29}));
  EXPECT_EQ(tags.offsets, (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(tags.values, (std::vector<float>{1.0f / 3, 1.0f / 3, 1.0f / 3, 1.0f}));
  const SpecColumn& hist = c.columns[5];
  EXPECT_FALSE(hist.weighted);  // pooling sum: all weights 1, not returned
  EXPECT_TRUE(hist.values.empty());
  EXPECT_EQ(hist.ids, (std::vector<int64_t>{38, 31, 36}));
  EXPECT_EQ(hist.offsets, (std::vector<int64_t>{0, 1, 3}));
}

TEST(SpecColumns, LibFfmFieldsAreWeightedBagsAndFilesAreRead) {
  const std::string dir = ctrain::testing::TestTempDir("spec_columns", "ffm");
  std::ofstream(dir + "/a.libffm") << "1 0:3:0.5 1:4:2 0:5:1\n0 1:2:1\n";
  std::ofstream(dir + "/b.libffm") << "# only a comment\n";
  std::ofstream(dir + "/c.libffm") << "1 0:7:0.25\n";
  auto spec = ParseFeatureSpec(R"({"input": "libffm", "feature_size": 8, "fields": [
      {"ffm_field": 0}, {"ffm_field": 1, "pooling": "mean"}]})", "f.json");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  std::vector<uint64_t> records;
  auto none = ReadSpecColumns({dir + "/a.libffm", dir + "/b.libffm"}, *spec, &records);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), dir + "/b.libffm: no records");
  records.clear();
  auto c = ReadSpecColumns({dir + "/a.libffm", dir + "/c.libffm"}, *spec, &records);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(records, (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(c->labels, (std::vector<float>{1, 0, 1}));
  const SpecColumn& f0 = c->columns[0];
  EXPECT_EQ(f0.name, "field0");
  EXPECT_TRUE(f0.weighted);
  EXPECT_EQ(f0.ids, (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(f0.offsets, (std::vector<int64_t>{0, 2, 2}));
  EXPECT_EQ(f0.values, (std::vector<float>{0.5f, 1.0f, 0.25f}));
  const SpecColumn& f1 = c->columns[1];
  EXPECT_EQ(f1.ids, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(f1.offsets, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(f1.values, (std::vector<float>{2.0f, 1.0f}));  // mean over one value each
  // A row that does not have the spec's layout is refused, not misread.
  SpecColumnsBuilder b(*spec);
  SpecRow bad;
  bad.lengths = {1};
  bad.ids = {3};
  bad.values = {1};
  EXPECT_EQ(b.Append(bad).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace ctrain::data
