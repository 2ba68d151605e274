// Feature-spec label rules (data/feature_spec.h LabelRule): a 0/1 label
// derived from a numeric column (TFX taxi's "tips > 0"), and --suggest-spec's
// warning when the label it picks is not 0/1.
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ctrain/data/feature_spec.h"
#include "ctrain/data/spec_reader.h"
#include "ctrain/data/spec_row_builder.h"
#include "ctrain/data/spec_suggest.h"
#include "ctrain/io/example.h"
#include "ctrain/io/tfrecord.h"
#include "testing/temp_dir.h"

namespace ctrain::data {
namespace {

using io::ParsedFeature;

std::string Example(std::vector<std::pair<std::string, ParsedFeature>> f) {
  std::string out;
  io::EncodeExample(f, &out);
  return out;
}

// The labels a spec gives to records whose label feature holds `values`.
std::vector<float> Labels(const std::string& spec_json, const std::string& key, const std::vector<ParsedFeature>& values) {
  auto spec = ParseFeatureSpec(spec_json, "s.json");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto b = SpecRowBuilder::Create(*spec);
  EXPECT_TRUE(b.ok());
  std::vector<float> out;
  SpecRow row;
  for (const ParsedFeature& v : values) {
    Status s = b->FromExample(Example({{key, v}, {"fare", ParsedFeature::Floats({3})}}), &row);
    EXPECT_TRUE(s.ok()) << s.ToString();
    out.push_back(row.label);
  }
  return out;
}

TEST(LabelRule, ThresholdDerivesTheLabel) {
  const std::string spec = R"({"label": "tips", "label_rule": {"threshold": 0},
                               "fields": [{"key": "fare", "type": "numeric"}]})";
  EXPECT_EQ(Labels(spec, "tips", {ParsedFeature::Floats({0}), ParsedFeature::Floats({0.5f}),
                                  ParsedFeature::Floats({12.25f}), ParsedFeature::Floats({-1})}),
            (std::vector<float>{0, 1, 1, 0}));
  const std::string half = R"({"label": "tips", "label_rule": {"threshold": 0.5},
                               "fields": [{"key": "fare", "type": "numeric"}]})";
  EXPECT_EQ(Labels(half, "tips", {ParsedFeature::Floats({0.5f}), ParsedFeature::Floats({0.5000001f})}),
            (std::vector<float>{0, 1}));  // strictly greater
  // Without a rule the same values are refused, naming the label feature.
  auto plain = ParseFeatureSpec(R"({"label": "tips", "fields": [{"key": "fare", "type": "numeric"}]})", "p.json");
  ASSERT_TRUE(plain.ok());
  auto b = SpecRowBuilder::Create(*plain);
  SpecRow row;
  Status s = b->FromExample(Example({{"tips", ParsedFeature::Floats({2.5f})}, {"fare", ParsedFeature::Floats({3})}}), &row);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("feature 'tips': label 2.5"), std::string_view::npos) << s.ToString();
}

TEST(LabelRule, PositiveValuesDeriveTheLabel) {
  const std::string ints = R"({"label": "rating", "label_dtype": "int64", "label_rule": {"positive_values": [4, 5]},
                               "fields": [{"key": "fare", "type": "numeric"}]})";
  std::vector<ParsedFeature> r;
  for (int64_t v : {1, 2, 3, 4, 5}) r.push_back(ParsedFeature::Int64s({v}));
  EXPECT_EQ(Labels(ints, "rating", r), (std::vector<float>{0, 0, 0, 1, 1}));
  // float_list values compare as floats: 0.1 in the spec matches the float 0.1f.
  const std::string floats = R"({"label": "p", "label_rule": {"positive_values": [0.1, 2]},
                                 "fields": [{"key": "fare", "type": "numeric"}]})";
  EXPECT_EQ(Labels(floats, "p", {ParsedFeature::Floats({0.1f}), ParsedFeature::Floats({0.2f}), ParsedFeature::Floats({2})}),
            (std::vector<float>{1, 0, 1}));
  // A NaN label is an error under a rule, not a silent 0.
  auto spec = ParseFeatureSpec(floats, "f.json");
  ASSERT_TRUE(spec.ok());
  auto b = SpecRowBuilder::Create(*spec);
  SpecRow row;
  Status s = b->FromExample(Example({{"p", ParsedFeature::Floats({std::numeric_limits<float>::quiet_NaN()})},
                                     {"fare", ParsedFeature::Floats({3})}}),
                            &row);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("feature 'p': label value nan is not finite"), std::string_view::npos) << s.ToString();
}

TEST(LabelRule, ParseErrorsAndRoundTrip) {
  auto spec = ParseFeatureSpec(R"({"label": "tips", "label_rule": {"threshold": 0.25},
                                   "fields": [{"key": "fare", "type": "numeric"}]})", "s.json");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->label_rule.kind, LabelRule::Kind::kThreshold);
  EXPECT_EQ(spec->label_rule.threshold, 0.25);
  auto again = ParseFeatureSpec(spec->ToJson(), "ckpt");  // what the checkpoint keeps
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->label_rule.kind, LabelRule::Kind::kThreshold);
  EXPECT_EQ(again->label_rule.threshold, 0.25);
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  auto pv = ParseFeatureSpec("label = \"r\"\nlabel_dtype = \"int64\"\n[label_rule]\npositive_values = [4, 5]\n"
                             "[[fields]]\nkey = \"fare\"\ntype = \"numeric\"\n", "s.toml");
  ASSERT_TRUE(pv.ok()) << pv.status().ToString();
  EXPECT_EQ(pv->label_rule.positive_values, (std::vector<double>{4, 5}));
  EXPECT_EQ(ParseFeatureSpec(pv->ToJson(), "ckpt")->label_rule.positive_values, (std::vector<double>{4, 5}));

  const std::string fields = R"(, "fields": [{"key": "fare", "type": "numeric"}]})";
  auto err = [&](const std::string& rule) {
    auto r = ParseFeatureSpec(R"({"label": "tips", "label_rule": )" + rule + fields, "s.json");
    EXPECT_FALSE(r.ok()) << rule;
    return std::string(r.status().message());
  };
  EXPECT_EQ(err("{}").rfind("s.json: label_rule: expected {\"threshold\": T}", 0), 0u) << err("{}");
  EXPECT_EQ(err(R"({"threshold": 0, "positive_values": [1]})").rfind("s.json: label_rule: expected", 0), 0u);
  EXPECT_EQ(err(R"({"threshhold": 0})").rfind("s.json: label_rule: unknown rule threshhold", 0), 0u);
  EXPECT_EQ(err(R"({"threshold": "0"})"), "s.json: label_rule.threshold: must be a finite number, found \"0\"");
  EXPECT_EQ(err(R"({"positive_values": []})"), "s.json: label_rule.positive_values: must be a non-empty list of numbers");
  EXPECT_EQ(err(R"({"positive_values": [1, "x"]})"),
            "s.json: label_rule.positive_values[1]: must be a finite number, found \"x\"");
  auto svm = ParseFeatureSpec(R"({"input": "libsvm", "label_rule": {"threshold": 0},
                                  "fields": [{"name": "a", "ids": [0, 9]}]})", "m.json");
  ASSERT_FALSE(svm.ok());
  EXPECT_EQ(svm.status().message(),
            "m.json: label_rule: applies to input \"example\" only (LibSVM and libFFM labels are read as 0/1)");
}

// --suggest-spec picks "tips" (given as the label key) and warns that it is
// not 0/1, suggesting the rule; the spec with the rule added then trains.
TEST(LabelRule, SuggestSpecWarnsOnANonBinaryLabel) {
  const std::string dir = ctrain::testing::TestTempDir("label_rule", "suggest");
  std::string taxi, clicks;
  const float tips[] = {0, 1.5f, 0, 2.25f, 12.5f, 0};
  for (int i = 0; i < 6; ++i) {
    io::AppendTFRecord(&taxi, Example({{"tips", ParsedFeature::Floats({tips[i]})},
                                      {"fare", ParsedFeature::Floats({3.0f + i})},
                                      {"company", ParsedFeature::Bytes({i % 2 ? "a" : "b"})}}));
    io::AppendTFRecord(&clicks, Example({{"label", ParsedFeature::Floats({static_cast<float>(i % 2)})},
                                        {"fare", ParsedFeature::Floats({3.0f + i})}}));
  }
  std::ofstream(dir + "/taxi.tfrecord", std::ios::binary) << taxi;
  std::ofstream(dir + "/clicks.tfrecord", std::ios::binary) << clicks;
  SuggestSpecOptions o;
  o.label_key = "tips";
  auto t = SuggestFeatureSpec({dir + "/taxi.tfrecord"}, o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_EQ(t->warnings[0].rfind("label 'tips' is not 0/1 (values 0 .. 12.5, 4 distinct): training refuses it as "
                                 "it is; add a label rule to the spec, e.g. \"label_rule\": {\"threshold\": 0} (1 "
                                 "when tips > 0)", 0),
            0u)
      << t->warnings[0];
  auto c = SuggestFeatureSpec({dir + "/clicks.tfrecord"}, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->warnings.empty());

  // As suggested the rows are refused; with the suggested rule they read, tipped = tips > 0.
  auto as_is = ParseFeatureSpec(t->json, "taxi.json");
  ASSERT_TRUE(as_is.ok());
  auto r = SpecReader::Open(dir + "/taxi.tfrecord", *as_is);
  ASSERT_TRUE(r.ok());
  SpecRow row;
  ASSERT_TRUE(*(*r)->Next(&row));  // tips 0
  EXPECT_FALSE((*r)->Next(&row).ok());  // tips 1.5
  std::string with_rule = t->json;
  with_rule.insert(with_rule.find('{') + 1, "\"label_rule\": {\"threshold\": 0},");
  auto ruled = ParseFeatureSpec(with_rule, "taxi.json");
  ASSERT_TRUE(ruled.ok()) << ruled.status().ToString();
  auto r2 = SpecReader::Open(dir + "/taxi.tfrecord", *ruled);
  ASSERT_TRUE(r2.ok());
  std::vector<float> labels;
  for (;;) {
    auto more = (*r2)->Next(&row);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    labels.push_back(row.label);
  }
  EXPECT_EQ(labels, (std::vector<float>{0, 1, 0, 1, 1, 0}));
}

}  // namespace
}  // namespace ctrain::data
