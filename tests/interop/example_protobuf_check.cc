// Interop: ctrain's hand-written tf.train.Example codec (src/ctrain/io/example.h)
// against the real protobuf library with TensorFlow's message definitions
// (tests/interop/{example,feature}.proto).
//   * bytes we encode parse with libprotobuf to the same values, with no unknown
//     fields, and equal protobuf's deterministic serialization byte for byte;
//   * bytes protobuf serializes (packed floats/int64s, empty Feature {}, random
//     examples) parse with ours to the same values.
#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <bit>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ctrain/io/example.h"
#include "example.pb.h"

namespace ctrain::io {
namespace {

using Features = std::vector<std::pair<std::string, ParsedFeature>>;

std::string DeterministicBytes(const tensorflow::Example& ex) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    EXPECT_TRUE(ex.SerializeToCodedStream(&cos));
  }
  return out;
}

void ToProto(const Features& fs, tensorflow::Example* ex) {
  auto* map = ex->mutable_features()->mutable_feature();
  for (const auto& [key, f] : fs) {
    tensorflow::Feature& pf = (*map)[key];
    switch (f.kind) {
      case FeatureKind::kBytes: {
        auto* l = pf.mutable_bytes_list();
        for (const auto& b : f.bytes) l->add_value(b);
        break;
      }
      case FeatureKind::kFloat: {
        auto* l = pf.mutable_float_list();
        for (float v : f.floats) l->add_value(v);
        break;
      }
      case FeatureKind::kInt64: {
        auto* l = pf.mutable_int64_list();
        for (int64_t v : f.int64s) l->add_value(v);
        break;
      }
    }
  }
}

bool SameFloat(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// Compares a protobuf Feature with our ParsedFeature value by value (floats bitwise).
void ExpectSame(const tensorflow::Feature& pf, const ParsedFeature& f, const std::string& key) {
  switch (f.kind) {
    case FeatureKind::kBytes:
      ASSERT_EQ(pf.kind_case(), tensorflow::Feature::kBytesList) << key;
      ASSERT_EQ(pf.bytes_list().value_size(), static_cast<int>(f.bytes.size())) << key;
      for (size_t i = 0; i < f.bytes.size(); ++i) EXPECT_EQ(pf.bytes_list().value(i), f.bytes[i]) << key;
      break;
    case FeatureKind::kFloat:
      ASSERT_EQ(pf.kind_case(), tensorflow::Feature::kFloatList) << key;
      ASSERT_EQ(pf.float_list().value_size(), static_cast<int>(f.floats.size())) << key;
      for (size_t i = 0; i < f.floats.size(); ++i) {
        EXPECT_TRUE(SameFloat(pf.float_list().value(i), f.floats[i])) << key << "[" << i << "]";
      }
      break;
    case FeatureKind::kInt64:
      ASSERT_EQ(pf.kind_case(), tensorflow::Feature::kInt64List) << key;
      ASSERT_EQ(pf.int64_list().value_size(), static_cast<int>(f.int64s.size())) << key;
      for (size_t i = 0; i < f.int64s.size(); ++i) EXPECT_EQ(pf.int64_list().value(i), f.int64s[i]) << key;
      break;
  }
}

Features RandomFeatures(std::mt19937_64& rng) {
  Features fs;
  const int n = static_cast<int>(rng() % 12);
  for (int i = 0; i < n; ++i) {
    ParsedFeature f;
    f.kind = static_cast<FeatureKind>(rng() % 3);
    const int len = static_cast<int>(rng() % 4 == 0 ? rng() % 200 : rng() % 5);
    for (int j = 0; j < len; ++j) {
      switch (f.kind) {
        case FeatureKind::kBytes: {
          std::string b(rng() % 12, '\0');
          for (char& ch : b) ch = static_cast<char>(rng());
          f.bytes.push_back(b);
          break;
        }
        case FeatureKind::kFloat:
          f.floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));  // any bits, NaNs too
          break;
        case FeatureKind::kInt64: {
          const int shift = static_cast<int>(rng() % 64);
          f.int64s.push_back(static_cast<int64_t>(rng() >> shift) * ((rng() & 1) ? -1 : 1));
          break;
        }
      }
    }
    // Sorted, distinct, ASCII keys (protobuf's deterministic order; proto3 wants UTF-8).
    fs.push_back({"f" + std::to_string(100 + i), std::move(f)});
  }
  return fs;
}

TEST(ExampleInterop, SeedEncodingParsesWithProtobuf) {
  std::vector<int64_t> ids(39);
  std::vector<float> values(39);
  for (int i = 0; i < 39; ++i) {
    ids[i] = (i % 2 ? -1 : 1) * (int64_t{1} << i);
    values[i] = static_cast<float>(i) / 3.0f;
  }
  std::string rec = "garbage-prefix";
  const size_t prefix = rec.size();
  EncodeSeedExample(1.0f, ids, values, SeedSchema{}, &rec);
  tensorflow::Example ex;
  ASSERT_TRUE(ex.ParseFromString(rec.substr(prefix)));
  EXPECT_TRUE(ex.GetReflection()->GetUnknownFields(ex).empty());
  const auto& map = ex.features().feature();
  ASSERT_EQ(map.size(), 3u);
  ExpectSame(map.at("label"), ParsedFeature::Floats({1.0f}), "label");
  ExpectSame(map.at("ids"), ParsedFeature::Int64s(ids), "ids");
  ExpectSame(map.at("values"), ParsedFeature::Floats(values), "values");
  EXPECT_TRUE(ex.features().feature().at("ids").int64_list().GetReflection()->GetUnknownFields(
                  ex.features().feature().at("ids").int64_list()).empty());
}

TEST(ExampleInterop, ProtobufSeedExampleParsesWithOurs) {
  tensorflow::Example ex;
  auto* map = ex.mutable_features()->mutable_feature();
  (*map)["label"].mutable_int64_list()->add_value(1);
  (*map)["other"].mutable_bytes_list()->add_value("ignored");
  (*map)["empty"];  // Feature {} with no kind
  for (int i = 0; i < 39; ++i) {
    (*map)["ids"].mutable_int64_list()->add_value(-1000 + i * 77777);
    (*map)["values"].mutable_float_list()->add_value(0.5f * i);
  }
  const std::string rec = ex.SerializeAsString();
  float label = 0;
  int64_t ids[39];
  float values[39];
  Status s = ParseSeedExample(rec, SeedSchema{}, &label, ids, values);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(label, 1.0f);
  for (int i = 0; i < 39; ++i) {
    EXPECT_EQ(ids[i], -1000 + i * 77777);
    EXPECT_EQ(values[i], 0.5f * i);
  }
  ExampleView view;
  ASSERT_TRUE(DecodeExample(rec, &view).ok());
  ASSERT_EQ(view.features.size(), 5u);
  EXPECT_EQ(view.features[0].key, "empty");
  EXPECT_FALSE(view.features[0].kind.has_value());
  EXPECT_EQ(view.unknown_fields, 0);
}

TEST(ExampleInterop, RandomExamplesBothDirections) {
  std::mt19937_64 rng(20240601);
  ExampleView view;
  for (int iter = 0; iter < 300; ++iter) {
    const Features fs = RandomFeatures(rng);
    tensorflow::Example ex;
    ToProto(fs, &ex);
    // ours -> protobuf: same values, and the very bytes protobuf writes deterministically.
    std::string ours;
    EncodeExample(fs, &ours);
    tensorflow::Example back;
    ASSERT_TRUE(back.ParseFromString(ours)) << "iteration " << iter;
    ASSERT_EQ(back.features().feature().size(), fs.size());
    for (const auto& [key, f] : fs) ExpectSame(back.features().feature().at(key), f, key);
    EXPECT_EQ(ours, DeterministicBytes(ex)) << "iteration " << iter;

    // protobuf -> ours (default, non-deterministic serialization).
    const std::string theirs = ex.SerializeAsString();
    std::vector<FeatureSpec> specs;
    for (const auto& [key, f] : fs) {
      FeatureSpec spec;
      spec.key = key;
      spec.kind = f.kind;
      spec.var_len = true;
      specs.push_back(spec);
    }
    auto parsed = ParseExample(theirs, specs);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    for (size_t i = 0; i < fs.size(); ++i) ExpectSame(ex.features().feature().at(fs[i].first), (*parsed)[i], fs[i].first);
    ASSERT_TRUE(DecodeExample(theirs, &view).ok());
    ASSERT_EQ(view.features.size(), fs.size());
    for (size_t i = 0; i < fs.size(); ++i) {
      EXPECT_EQ(view.features[i].key, fs[i].first);
      EXPECT_EQ(view.features[i].kind, fs[i].second.kind);
      EXPECT_EQ(view.features[i].count, fs[i].second.size());
    }
  }
}

TEST(ExampleInterop, MergedSerializationsMatchProtobufMergeSemantics) {
  // Concatenating two serialized Examples is a protobuf merge: map keys of the
  // second replace those of the first. Ours must agree with ParseFromString.
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 100; ++iter) {
    const Features a = RandomFeatures(rng), b = RandomFeatures(rng);
    std::string rec;
    EncodeExample(a, &rec);
    EncodeExample(b, &rec);
    tensorflow::Example ex;
    ASSERT_TRUE(ex.ParseFromString(rec));
    ExampleView view;
    ASSERT_TRUE(DecodeExample(rec, &view).ok());
    ASSERT_EQ(view.features.size(), ex.features().feature().size());
    for (const FeatureEntryView& f : view.features) {
      const tensorflow::Feature& pf = ex.features().feature().at(std::string(f.key));
      ASSERT_TRUE(f.kind.has_value());
      switch (*f.kind) {
        case FeatureKind::kBytes: EXPECT_EQ(f.count, pf.bytes_list().value_size()); break;
        case FeatureKind::kFloat: EXPECT_EQ(f.count, pf.float_list().value_size()); break;
        case FeatureKind::kInt64: EXPECT_EQ(f.count, pf.int64_list().value_size()); break;
      }
      EXPECT_EQ(static_cast<int>(pf.kind_case()), static_cast<int>(*f.kind) + 1) << f.key;
    }
  }
}

}  // namespace
}  // namespace ctrain::io
