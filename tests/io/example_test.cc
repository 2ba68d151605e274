// Tests for the tf.train.Example codec (src/ctrain/io/example.h) and the schema
// summary (example_schema.h). Every wire case is built byte by byte below; the
// real-file tests read /work/shared/data through the TFRecord reader.
#include "ctrain/io/example.h"

#include <gtest/gtest.h>

#include <cmath>

#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "ctrain/io/example_schema.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::io {
namespace {

// ---- hand-built protobuf bytes ----

std::string V(uint64_t v) {  // varint
  std::string s;
  while (v >= 0x80) {
    s += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
  return s;
}
std::string Tag(int field, int wire_type) { return V((static_cast<uint64_t>(field) << 3) | wire_type); }
std::string Len(int field, const std::string& payload) { return Tag(field, 2) + V(payload.size()) + payload; }
std::string F32(float f) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &f, 4);
  return s;
}
// List payloads (the inside of FloatList / Int64List / BytesList).
std::string PackedFloats(std::initializer_list<float> v) {
  std::string raw;
  for (float f : v) raw += F32(f);
  return Len(1, raw);
}
std::string UnpackedFloats(std::initializer_list<float> v) {
  std::string s;
  for (float f : v) s += Tag(1, 5) + F32(f);
  return s;
}
std::string PackedInts(std::initializer_list<int64_t> v) {
  std::string raw;
  for (int64_t x : v) raw += V(static_cast<uint64_t>(x));
  return Len(1, raw);
}
std::string UnpackedInts(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v) s += Tag(1, 0) + V(static_cast<uint64_t>(x));
  return s;
}
std::string BytesValues(std::initializer_list<std::string> v) {
  std::string s;
  for (const auto& b : v) s += Len(1, b);
  return s;
}
// Feature payloads.
std::string BytesFeature(const std::string& list) { return Len(1, list); }
std::string FloatFeature(const std::string& list) { return Len(2, list); }
std::string Int64Feature(const std::string& list) { return Len(3, list); }
// Map entry payload and the framing around entries.
std::string EntryPayload(const std::string& key, const std::string& feature) {
  return Len(1, key) + Len(2, feature);
}
std::string Ex(std::initializer_list<std::pair<std::string, std::string>> entries) {
  std::string features;
  for (const auto& [k, f] : entries) features += Len(1, EntryPayload(k, f));
  return Len(1, features);
}

std::string SeedRecord(const std::string& label_feature, const std::string& ids_feature,
                       const std::string& values_feature) {
  return Ex({{"label", label_feature}, {"ids", ids_feature}, {"values", values_feature}});
}

SeedSchema Seed(int32_t f) {
  SeedSchema s;
  s.field_size = f;
  return s;
}

struct SeedOut {
  float label = -7;
  int64_t ids[8] = {};
  float values[8] = {};
};

Status ParseSeed(const std::string& rec, int32_t f, SeedOut* o) {
  return ParseSeedExample(rec, Seed(f), &o->label, o->ids, o->values);
}

void ExpectError(const Status& s, StatusCode code, const std::string& msg) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_EQ(s.message(), msg);
}

// ---- seed fast path ----

TEST(SeedExample, EncodeExactBytes) {
  std::string out = "prefix";
  const int64_t ids[] = {5, 300};
  const float values[] = {1.0f, 0.5f};
  EncodeSeedExample(1.0f, ids, values, SeedSchema{}, &out);
  const std::string expected =
      "prefix" + Ex({{"label", FloatFeature(PackedFloats({1.0f}))},
                     {"ids", Int64Feature(PackedInts({5, 300}))},
                     {"values", FloatFeature(PackedFloats({1.0f, 0.5f}))}});
  EXPECT_EQ(out, expected);
  // Spot-check the framing by hand: Example.features tag, then the first entry.
  EXPECT_EQ(static_cast<uint8_t>(out[6]), 0x0a);
  EXPECT_EQ(out.substr(8, 4), std::string("\x0a\x11\x0a\x05", 4));  // entry (17 bytes), key (5 bytes)
}

TEST(SeedExample, RoundTrip39FieldsWithNegativeAndHugeIds) {
  std::vector<int64_t> ids(39);
  std::vector<float> values(39);
  for (int i = 0; i < 39; ++i) {
    ids[i] = (i % 3 == 0) ? -static_cast<int64_t>(i) - 1 : (int64_t{1} << (i + 20)) + i;
    values[i] = 0.25f * static_cast<float>(i) - 3.0f;
  }
  ids[38] = INT64_MIN;
  ids[37] = INT64_MAX;
  std::string rec;
  EncodeSeedExample(0.0f, ids, values, SeedSchema{}, &rec);
  float label = -1;
  std::vector<int64_t> got_ids(39);
  std::vector<float> got_values(39);
  ASSERT_TRUE(ParseSeedExample(rec, SeedSchema{}, &label, got_ids.data(), got_values.data()).ok());
  EXPECT_EQ(label, 0.0f);
  EXPECT_EQ(got_ids, ids);
  EXPECT_EQ(got_values, values);
}

TEST(SeedExample, CustomKeysAndExtraFeaturesIgnored) {
  SeedSchema s;
  s.label_key = "click";
  s.ids_key = "feat_ids";
  s.values_key = "feat_vals";
  s.field_size = 2;
  const std::string rec = Ex({{"other", BytesFeature(BytesValues({"x"}))},
                              {"feat_vals", FloatFeature(PackedFloats({0.5f, 2.0f}))},
                              {"click", Int64Feature(PackedInts({1}))},
                              {"feat_ids", Int64Feature(PackedInts({7, 8}))}});
  float label = 0;
  int64_t ids[2];
  float values[2];
  ASSERT_TRUE(ParseSeedExample(rec, s, &label, ids, values).ok());
  EXPECT_EQ(label, 1.0f);
  EXPECT_EQ(ids[0], 7);
  EXPECT_EQ(ids[1], 8);
  EXPECT_EQ(values[0], 0.5f);
  EXPECT_EQ(values[1], 2.0f);
}

TEST(SeedExample, PackedAndUnpackedGiveSameValues) {
  const std::string packed = SeedRecord(FloatFeature(PackedFloats({1})), Int64Feature(PackedInts({3, -4, 1000})),
                                        FloatFeature(PackedFloats({0.5f, 1.5f, 2.5f})));
  const std::string unpacked = SeedRecord(FloatFeature(UnpackedFloats({1})),
                                          Int64Feature(UnpackedInts({3, -4, 1000})),
                                          FloatFeature(UnpackedFloats({0.5f, 1.5f, 2.5f})));
  // Mixed: values split over a packed run and unpacked elements in one list.
  const std::string mixed = SeedRecord(FloatFeature(PackedFloats({1})),
                                       Int64Feature(UnpackedInts({3}) + PackedInts({-4, 1000})),
                                       FloatFeature(PackedFloats({0.5f}) + UnpackedFloats({1.5f, 2.5f})));
  for (const std::string& rec : {packed, unpacked, mixed}) {
    SeedOut o;
    ASSERT_TRUE(ParseSeed(rec, 3, &o).ok());
    EXPECT_EQ(o.label, 1.0f);
    EXPECT_EQ(o.ids[0], 3);
    EXPECT_EQ(o.ids[1], -4);
    EXPECT_EQ(o.ids[2], 1000);
    EXPECT_EQ(o.values[0], 0.5f);
    EXPECT_EQ(o.values[1], 1.5f);
    EXPECT_EQ(o.values[2], 2.5f);
  }
}

TEST(SeedExample, NegativeInt64IsTenByteVarint) {
  const std::string ten = std::string(9, '\xff') + '\x01';
  EXPECT_EQ(V(static_cast<uint64_t>(int64_t{-1})), ten);
  const std::string rec = SeedRecord(FloatFeature(PackedFloats({0})), Int64Feature(Len(1, ten)),
                                     FloatFeature(PackedFloats({1})));
  SeedOut o;
  ASSERT_TRUE(ParseSeed(rec, 1, &o).ok());
  EXPECT_EQ(o.ids[0], -1);
  // Our encoder writes exactly these 10 bytes.
  std::string enc;
  const int64_t ids[] = {-1};
  const float values[] = {1};
  EncodeSeedExample(0, ids, values, Seed(1), &enc);
  EXPECT_EQ(enc, rec);
}

TEST(SeedExample, PackedVarintsOfEveryLength) {
  // Every varint length 1..10 at every alignment within the 8-byte decode window.
  std::vector<int64_t> ids;
  for (int rep = 0; rep < 3; ++rep) {
    for (int bytes = 1; bytes <= 10; ++bytes) {
      ids.push_back(bytes == 10 ? -rep - 1 : (int64_t{1} << (7 * (bytes - 1))) + rep);
    }
  }
  const std::vector<float> values(ids.size(), 0.5f);
  std::string rec;
  EncodeSeedExample(1, ids, values, Seed(static_cast<int32_t>(ids.size())), &rec);
  float label;
  std::vector<int64_t> got(ids.size());
  std::vector<float> got_values(ids.size());
  ASSERT_TRUE(ParseSeedExample(rec, Seed(static_cast<int32_t>(ids.size())), &label, got.data(), got_values.data()).ok());
  EXPECT_EQ(got, ids);
}

TEST(SeedExample, LabelMayBeInt64) {
  SeedOut o;
  ASSERT_TRUE(ParseSeed(SeedRecord(Int64Feature(PackedInts({0})), Int64Feature(PackedInts({1})),
                                   FloatFeature(PackedFloats({1}))),
                        1, &o)
                  .ok());
  EXPECT_EQ(o.label, 0.0f);
}

TEST(SeedExample, DuplicateKeyLastWins) {
  const std::string rec = Ex({{"label", FloatFeature(PackedFloats({1}))},
                              {"ids", FloatFeature(PackedFloats({1}))},  // wrong kind, but replaced
                              {"values", FloatFeature(PackedFloats({9}))},
                              {"ids", Int64Feature(PackedInts({42}))},
                              {"values", FloatFeature(PackedFloats({3}))}});
  SeedOut o;
  ASSERT_TRUE(ParseSeed(rec, 1, &o).ok());
  EXPECT_EQ(o.ids[0], 42);
  EXPECT_EQ(o.values[0], 3.0f);
  // And the other way round: a valid entry replaced by a bad one is an error.
  const std::string bad = Ex({{"label", FloatFeature(PackedFloats({1}))},
                              {"ids", Int64Feature(PackedInts({42}))},
                              {"values", FloatFeature(PackedFloats({3}))},
                              {"ids", ""}});
  ExpectError(ParseSeed(bad, 1, &o), StatusCode::kInvalidArgument,
              "feature 'ids': expected int64_list of length 1, found Feature with no kind");
}

TEST(SeedExample, Errors) {
  SeedOut o;
  const std::string label = FloatFeature(PackedFloats({1}));
  const std::string ids3 = Int64Feature(PackedInts({1, 2, 3}));
  const std::string vals3 = FloatFeature(PackedFloats({1, 2, 3}));
  // Not the seed layout: the message lists the example's keys and names the feature spec.
  const std::string seed_tail = "; the seed layout is 'label', 'ids' (int64_list[F]), 'values' (float_list[F]): read other keys through a feature spec (`ctrain inspect FILE --suggest-spec spec.json`, then --feature-spec spec.json; Python: feature_spec=\"spec.json\")";
  ExpectError(ParseSeed(Ex({{"label", label}, {"ids", ids3}}), 3, &o), StatusCode::kInvalidArgument,
              "missing feature 'values': the example's keys are 'label', 'ids'" + seed_tail);
  ExpectError(ParseSeed(Ex({{"label", label}, {"values", vals3}}), 3, &o), StatusCode::kInvalidArgument,
              "missing feature 'ids': the example's keys are 'label', 'values'" + seed_tail);
  ExpectError(ParseSeed(Ex({{"ids", ids3}, {"values", vals3}}), 3, &o), StatusCode::kInvalidArgument,
              "missing feature 'label': the example's keys are 'ids', 'values'" + seed_tail);
  ExpectError(ParseSeed("", 3, &o), StatusCode::kInvalidArgument,
              "missing feature 'label': the example's keys are none" + seed_tail);
  // DeepCTR's layout: keys label, I1.., C1..; the list stops after 16.
  std::string deepctr = Len(1, EntryPayload("label", label));
  for (int i = 1; i <= 20; ++i) deepctr += Len(1, EntryPayload("I" + std::to_string(i), vals3));
  const Status d = ParseSeed(Len(1, deepctr), 3, &o);
  EXPECT_EQ(d.message().rfind("missing feature 'ids': the example's keys are 'label', 'I1', 'I2', 'I3', 'I4', 'I5', "
                              "'I6', 'I7', 'I8', 'I9', 'I10', 'I11', 'I12', 'I13', 'I14', 'I15', ... (21 keys); the "
                              "seed layout",
                              0),
            0u)
      << d.ToString();
  ExpectError(ParseSeed(SeedRecord(label, vals3, vals3), 3, &o), StatusCode::kInvalidArgument,
              "feature 'ids': expected int64_list of length 3, found float_list of length 3");
  ExpectError(ParseSeed(SeedRecord(label, ids3, ids3), 3, &o), StatusCode::kInvalidArgument,
              "feature 'values': expected float_list of length 3, found int64_list of length 3");
  ExpectError(ParseSeed(SeedRecord(label, ids3, vals3), 2, &o), StatusCode::kInvalidArgument,
              "feature 'ids': expected int64_list of length 2, found int64_list of length 3");
  ExpectError(ParseSeed(SeedRecord(label, Int64Feature(PackedInts({1, 2})), vals3), 2, &o),
              StatusCode::kInvalidArgument,
              "feature 'values': expected float_list of length 2, found float_list of length 3");
  ExpectError(ParseSeed(SeedRecord(label, BytesFeature(BytesValues({"a", "b", "c"})), vals3), 3, &o),
              StatusCode::kInvalidArgument,
              "feature 'ids': expected int64_list of length 3, found bytes_list of length 3");
  ExpectError(ParseSeed(SeedRecord("", ids3, vals3), 3, &o), StatusCode::kInvalidArgument,
              "feature 'label': expected float_list or int64_list of length 1, found Feature with no kind");
  ExpectError(ParseSeed(SeedRecord(FloatFeature(""), ids3, vals3), 3, &o), StatusCode::kInvalidArgument,
              "feature 'label': expected float_list or int64_list of length 1, found float_list of length 0");
  ExpectError(ParseSeed(SeedRecord(BytesFeature(BytesValues({"1"})), ids3, vals3), 3, &o),
              StatusCode::kInvalidArgument,
              "feature 'label': expected float_list or int64_list of length 1, found bytes_list of length 1");
  ExpectError(ParseSeed(SeedRecord(Int64Feature(PackedInts({-1})), ids3, vals3), 3, &o),
              StatusCode::kInvalidArgument, "feature 'label': expected 0 or 1, found -1");
  ExpectError(ParseSeed(SeedRecord(FloatFeature(PackedFloats({0.5f})), ids3, vals3), 3, &o),
              StatusCode::kInvalidArgument, "feature 'label': expected 0 or 1, found 0.5");
  SeedSchema s;
  s.ids_key = "values";
  ExpectError(ParseSeedExample("", s, &o.label, o.ids, o.values), StatusCode::kInvalidArgument,
              "invalid seed schema: field_size 39 must be >= 0 and keys 'label', 'values', 'values' must differ");
}

TEST(SeedExample, NonFiniteValuesAreErrors) {
  SeedOut o;
  const std::string label = FloatFeature(PackedFloats({1}));
  const std::string ids3 = Int64Feature(PackedInts({1, 2, 3}));
  ExpectError(ParseSeed(SeedRecord(label, ids3, FloatFeature(PackedFloats({1, NAN, 1}))), 3, &o),
              StatusCode::kInvalidArgument, "feature 'values': value 1 of 3 is nan, expected a finite number");
  Status inf = ParseSeed(SeedRecord(label, ids3, FloatFeature(PackedFloats({1, 1, -INFINITY}))), 3, &o);
  EXPECT_EQ(inf.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(inf.message().find("value 2 of 3 is -inf"), std::string_view::npos) << inf.ToString();
}

TEST(SeedExample, EmptyFieldSize) {
  std::string rec;
  EncodeSeedExample(1, {}, {}, Seed(0), &rec);
  // Empty packed lists are omitted (as protobuf does): each list Feature is empty-but-set.
  EXPECT_EQ(rec, SeedRecord(FloatFeature(PackedFloats({1})), Int64Feature(""), FloatFeature("")));
  SeedOut o;
  ASSERT_TRUE(ParseSeed(rec, 0, &o).ok());
  EXPECT_EQ(o.label, 1.0f);
}

// ---- wire robustness ----

TEST(ExampleWire, UnknownFieldsOfEveryWireTypeAreSkippedAndCounted) {
  // One unknown field of each wire type: varint, fixed64, length-delimited, group, fixed32.
  const std::string unknown = Tag(9, 0) + V(300) + Tag(10, 1) + std::string(8, 'x') + Len(11, "junk") +
                              Tag(12, 3) + Tag(1, 0) + V(1) + Tag(13, 3) + Tag(13, 4) + Tag(12, 4) +
                              Tag(14, 5) + std::string(4, 'y');
  const int per = 5;
  // Also: a known field number with the wrong wire type is an unknown field.
  const std::string wrong_type = Tag(1, 0) + V(7);
  std::string features;
  features += unknown;
  features += Len(1, unknown + Len(1, "label") + unknown + Len(2, unknown + FloatFeature(unknown + PackedFloats({1}) + unknown + wrong_type)));
  features += Len(1, EntryPayload("ids", Int64Feature(unknown + PackedInts({4, 5}) + Tag(1, 5) + F32(0))));
  features += Len(1, EntryPayload("values", FloatFeature(PackedFloats({1, 2}) + Tag(1, 0) + V(1))));
  features += Len(1, EntryPayload("extra", BytesFeature(BytesValues({"a"}) + unknown + Tag(1, 5) + F32(1))));
  const std::string rec = unknown + Len(1, features) + unknown;
  SeedOut o;
  ASSERT_TRUE(ParseSeed(rec, 2, &o).ok());
  EXPECT_EQ(o.label, 1.0f);
  EXPECT_EQ(o.ids[0], 4);
  EXPECT_EQ(o.ids[1], 5);
  EXPECT_EQ(o.values[1], 2.0f);

  ExampleView view;
  ASSERT_TRUE(DecodeExample(rec, &view).ok());
  // Unknown blocks: Example x2, Features x1, entry x2, Feature x1, FloatList x2 (+1 wrong type),
  // Int64List x1 (+1 fixed32), FloatList "values" +1 varint, BytesList x1 (+1 fixed32).
  EXPECT_EQ(view.unknown_fields, 10 * per + 4);
  ASSERT_EQ(view.features.size(), 4u);
  EXPECT_EQ(view.features[0].key, "extra");
  EXPECT_EQ(view.features[0].kind, FeatureKind::kBytes);
  EXPECT_EQ(view.features[0].count, 1);
  EXPECT_EQ(view.features[1].key, "ids");
  EXPECT_EQ(view.features[1].count, 2);
  EXPECT_EQ(view.features[2].key, "label");
  EXPECT_EQ(view.features[2].kind, FeatureKind::kFloat);
  EXPECT_EQ(view.features[2].count, 1);
  EXPECT_EQ(view.features[3].key, "values");
}

TEST(ExampleWire, EmptyFeatureIsPresentWithNoKind) {
  const std::string rec = Ex({{"company", ""}, {"fare", FloatFeature(PackedFloats({3.25f}))}});
  ExampleView view;
  ASSERT_TRUE(DecodeExample(rec, &view).ok());
  ASSERT_EQ(view.features.size(), 2u);
  EXPECT_EQ(view.features[0].key, "company");
  EXPECT_FALSE(view.features[0].kind.has_value());
  EXPECT_EQ(view.features[0].count, 0);
  EXPECT_EQ(view.features[1].kind, FeatureKind::kFloat);

  // General parser: VarLen -> empty, FixedLen -> default or "missing".
  std::vector<FeatureSpec> specs(1);
  specs[0].key = "company";
  specs[0].kind = FeatureKind::kBytes;
  specs[0].var_len = true;
  auto r = ParseExample(rec, specs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].kind, FeatureKind::kBytes);
  EXPECT_TRUE((*r)[0].bytes.empty());
  specs[0].var_len = false;
  ExpectError(ParseExample(rec, specs).status(), StatusCode::kInvalidArgument, "missing feature 'company'");
  specs[0].default_value = ParsedFeature::Bytes({"unknown"});
  r = ParseExample(rec, specs);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].bytes, std::vector<std::string>{"unknown"});
}

TEST(ExampleWire, EntryWithoutKeyOrValue) {
  // A map entry with no key has key "", with no value an empty Feature.
  const std::string features = Len(1, Len(2, FloatFeature(PackedFloats({2})))) + Len(1, Len(1, "k"));
  ExampleView view;
  const std::string record = Len(1, features);  // the view's keys point into the record
  ASSERT_TRUE(DecodeExample(record, &view).ok());
  ASSERT_EQ(view.features.size(), 2u);
  EXPECT_EQ(view.features[0].key, "");
  EXPECT_EQ(view.features[0].count, 1);
  EXPECT_EQ(view.features[1].key, "k");
  EXPECT_FALSE(view.features[1].kind.has_value());
}

TEST(ExampleWire, OneofAndMergeSemantics) {
  // Two lists of the same kind concatenate; a list of another kind replaces the oneof.
  const std::string concat = Int64Feature(PackedInts({1})) + Int64Feature(PackedInts({2, 3}));
  const std::string replaced = Int64Feature(PackedInts({9, 9, 9, 9})) + FloatFeature(PackedFloats({5})) +
                               Int64Feature(PackedInts({1, 2})) + Int64Feature(UnpackedInts({3}));
  // Two `value` fields in one map entry merge like the concatenated Feature.
  const std::string two_values_entry =
      Len(1, "c") + Len(2, Int64Feature(PackedInts({1}))) + Len(2, Int64Feature(PackedInts({2, 3})));
  // Two `features` fields in one Example merge their maps.
  const std::string rec = Len(1, Len(1, EntryPayload("a", concat)) + Len(1, EntryPayload("b", replaced)) +
                                     Len(1, two_values_entry)) +
                          Len(1, Len(1, EntryPayload("d", FloatFeature(PackedFloats({7}))) ));
  std::vector<FeatureSpec> specs(4);
  for (int i = 0; i < 3; ++i) {
    specs[i].key = std::string(1, static_cast<char>('a' + i));
    specs[i].kind = FeatureKind::kInt64;
    specs[i].length = 3;
  }
  specs[3].key = "d";
  auto r = ParseExample(rec, specs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*r)[i].int64s, (std::vector<int64_t>{1, 2, 3})) << i;
  EXPECT_EQ((*r)[3].floats, std::vector<float>{7});
}

TEST(ExampleWire, DuplicateKeysInView) {
  const std::string rec = Ex({{"a", FloatFeature(PackedFloats({1}))},
                              {"b", ""},
                              {"a", Int64Feature(PackedInts({1, 2}))},
                              {"a", BytesFeature(BytesValues({"x", "y", "z"}))}});
  ExampleView view;
  ASSERT_TRUE(DecodeExample(rec, &view).ok());
  EXPECT_EQ(view.duplicate_keys, 2);
  ASSERT_EQ(view.features.size(), 2u);
  EXPECT_EQ(view.features[0].key, "a");
  EXPECT_EQ(view.features[0].kind, FeatureKind::kBytes);
  EXPECT_EQ(view.features[0].count, 3);
}

TEST(ExampleWire, MalformedBytesExactErrors) {
  SeedOut o;
  ExampleView view;
  auto both = [&](const std::string& rec, const std::string& msg) {
    ExpectError(ParseSeed(rec, 1, &o), StatusCode::kDataLoss, msg);
    ExpectError(DecodeExample(rec, &view), StatusCode::kDataLoss, msg);
  };
  const std::string good = SeedRecord(FloatFeature(PackedFloats({1})), Int64Feature(PackedInts({300})),
                                      FloatFeature(PackedFloats({1})));
  // Cut inside the ids varint 300 (= ac 02): the record ends after "ac".
  const size_t ids_at = good.find(std::string("\xac\x02", 2));
  ASSERT_NE(ids_at, std::string::npos);
  // Truncating the whole record makes the outer length overrun first.
  both(good.substr(0, ids_at + 1), "malformed tf.train.Example: length " + std::to_string(good.size() - 2) +
                                       " exceeds the " + std::to_string(ids_at - 1) + " bytes left at byte 1");
  // A truncated varint inside a well-framed packed list.
  const std::string label = FloatFeature(PackedFloats({1}));
  const std::string ids = Int64Feature(PackedInts({7}));
  const std::string trunc_varint = SeedRecord(label, Int64Feature(Len(1, "\x05\xac")), FloatFeature(PackedFloats({1})));
  const size_t at = trunc_varint.find("\x05\xac") + 1;
  both(trunc_varint, "malformed tf.train.Example: truncated varint at byte " + std::to_string(at));
  both("\x0a", "malformed tf.train.Example: truncated varint at byte 1");
  both("\x0a\x80", "malformed tf.train.Example: truncated varint at byte 1");
  both("\x08" + std::string(10, '\xff') + "\x01", "malformed tf.train.Example: varint longer than 10 bytes at byte 1");
  both("\x08\xff\xff", "malformed tf.train.Example: truncated varint at byte 1");
  both(std::string("\x00\x01", 2), "malformed tf.train.Example: invalid field number 0 at byte 0");
  both("\x80\x80\x80\x80\x80\x01", "malformed tf.train.Example: tag larger than 32 bits at byte 0");
  both("\x0e", "malformed tf.train.Example: invalid wire type 6 at byte 0");
  both("\x0f", "malformed tf.train.Example: invalid wire type 7 at byte 0");
  both("\x0c", "malformed tf.train.Example: end-group tag without a start-group at byte 0");
  both("\x0b\x14", "malformed tf.train.Example: end-group tag for field 2 closes a group of field 1 at byte 1");
  both("\x0b\x08\x01", "malformed tf.train.Example: unterminated group at byte 0");
  both("\x09\x01\x02", "malformed tf.train.Example: truncated fixed64 at byte 1");
  both("\x0d\x01\x02", "malformed tf.train.Example: truncated fixed32 at byte 1");
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += "\x0b";
  both(deep, "malformed tf.train.Example: groups nested deeper than 64 at byte 64");
  // An over-long varint inside a packed list (the 8-byte-window fast path), then
  // one in the short tail of a packed list.
  const std::string long_packed =
      SeedRecord(label, Int64Feature(Len(1, "\x01" + std::string(10, '\xff') + "\x01")), FloatFeature(PackedFloats({1})));
  both(long_packed, "malformed tf.train.Example: varint longer than 10 bytes at byte " +
                        std::to_string(long_packed.find(std::string(10, '\xff'))));
  const std::string long_tail =
      SeedRecord(label, Int64Feature(Len(1, "\x01" + std::string(5, '\xff'))), FloatFeature(PackedFloats({1})));
  both(long_tail, "malformed tf.train.Example: truncated varint at byte " +
                      std::to_string(long_tail.find(std::string(5, '\xff'))));
  // Packed floats must be a multiple of 4 bytes; an unpacked float needs 4 bytes.
  const std::string odd = SeedRecord(label, ids, FloatFeature(Len(1, "abcdefg")));
  both(odd, "malformed tf.train.Example: packed float payload of 7 bytes is not a multiple of 4 at byte " +
                std::to_string(odd.size() - 9));
  const std::string short_fixed = SeedRecord(label, ids, FloatFeature(Tag(1, 5) + "ab"));
  both(short_fixed, "malformed tf.train.Example: truncated fixed32 at byte " + std::to_string(short_fixed.size() - 2));
}

TEST(ExampleWire, UnrequestedFeaturesAreFramedButNotDecoded) {
  // Like TensorFlow's parser, the typed parsers skip the insides of features they
  // do not return; DecodeExample checks every byte.
  const std::string rec = Ex({{"label", FloatFeature(PackedFloats({1}))},
                              {"ids", Int64Feature(PackedInts({1}))},
                              {"values", FloatFeature(PackedFloats({1}))},
                              {"junk", FloatFeature(Len(1, "abc"))}});
  SeedOut o;
  EXPECT_TRUE(ParseSeed(rec, 1, &o).ok());
  ExampleView view;
  EXPECT_EQ(DecodeExample(rec, &view).code(), StatusCode::kDataLoss);
}

// ---- general path ----

TEST(GeneralExample, EncodeParseRoundTrip) {
  std::vector<std::pair<std::string, ParsedFeature>> features = {
      {"label", ParsedFeature::Int64s({1})},
      {"dense", ParsedFeature::Floats({0.0f, -1.5f, 3e38f, 1e-40f})},
      {"cats", ParsedFeature::Bytes({"68fd1e64", "", std::string("a\0b", 3)})},
      {"empty_f", ParsedFeature::Floats({})},
      {"empty_b", ParsedFeature::Bytes({})},
      {"big", ParsedFeature::Int64s({INT64_MIN, -1, 0, 127, 128, INT64_MAX})},
  };
  std::string rec;
  EncodeExample(features, &rec);
  std::vector<FeatureSpec> specs;
  for (const auto& [k, f] : features) {
    FeatureSpec s;
    s.key = k;
    s.kind = f.kind;
    s.length = f.size();
    specs.push_back(s);
  }
  auto parser = ExampleParser::Create(specs);
  ASSERT_TRUE(parser.ok());
  std::vector<ParsedFeature> out;
  for (int pass = 0; pass < 2; ++pass) {  // second pass reuses the buffers
    ASSERT_TRUE(parser->Parse(rec, &out).ok());
    ASSERT_EQ(out.size(), features.size());
    for (size_t i = 0; i < features.size(); ++i) EXPECT_EQ(out[i], features[i].second) << features[i].first;
  }
  ExampleView view;
  ASSERT_TRUE(DecodeExample(rec, &view).ok());
  ASSERT_EQ(view.features.size(), 6u);
  EXPECT_EQ(view.features[3].key, "empty_b");
  EXPECT_EQ(view.features[3].kind, FeatureKind::kBytes);  // an empty list still sets the kind
  EXPECT_EQ(view.features[3].count, 0);
  // The exact bytes of a small case.
  std::string small;
  EncodeExample(std::vector<std::pair<std::string, ParsedFeature>>{{"s", ParsedFeature::Bytes({"ab"})}}, &small);
  EXPECT_EQ(small, Ex({{"s", BytesFeature(BytesValues({"ab"}))}}));
  EXPECT_EQ(small, std::string("\x0a\x0d" "\x0a\x0b" "\x0a\x01s" "\x12\x06" "\x0a\x04" "\x0a\x02" "ab", 15));
}

TEST(GeneralExample, DefaultsVarLenAndErrors) {
  const std::string rec = Ex({{"f", FloatFeature(PackedFloats({1, 2}))},
                              {"i", Int64Feature(PackedInts({5}))},
                              {"b", BytesFeature(BytesValues({"x", "y"}))}});
  auto spec = [](std::string key, FeatureKind kind, bool var_len, int64_t length) {
    FeatureSpec s;
    s.key = std::move(key);
    s.kind = kind;
    s.var_len = var_len;
    s.length = length;
    return s;
  };
  std::vector<FeatureSpec> specs = {spec("f", FeatureKind::kFloat, false, 2),
                                    spec("b", FeatureKind::kBytes, true, 0),
                                    spec("missing_var", FeatureKind::kInt64, true, 0),
                                    spec("missing_def", FeatureKind::kFloat, false, 3)};
  specs[3].default_value = ParsedFeature::Floats({0.5f});  // broadcast
  auto r = ParseExample(rec, specs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].floats, (std::vector<float>{1, 2}));
  EXPECT_EQ((*r)[1].bytes, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE((*r)[2].int64s.empty());
  EXPECT_EQ((*r)[2].kind, FeatureKind::kInt64);
  EXPECT_EQ((*r)[3].floats, (std::vector<float>{0.5f, 0.5f, 0.5f}));

  auto err = [&](FeatureSpec s) {
    std::vector<FeatureSpec> one = {std::move(s)};
    return ParseExample(rec, one).status();
  };
  ExpectError(err(spec("nope", FeatureKind::kFloat, false, 1)), StatusCode::kInvalidArgument,
              "missing feature 'nope'");
  ExpectError(err(spec("f", FeatureKind::kFloat, false, 3)), StatusCode::kInvalidArgument,
              "feature 'f': expected float_list of length 3, found float_list of length 2");
  ExpectError(err(spec("i", FeatureKind::kFloat, false, 1)), StatusCode::kInvalidArgument,
              "feature 'i': expected float_list of length 1, found int64_list of length 1");
  ExpectError(err(spec("b", FeatureKind::kInt64, true, 0)), StatusCode::kInvalidArgument,
              "feature 'b': expected int64_list, found bytes_list of length 2");
  // Spec validation.
  ExpectError(err(spec("", FeatureKind::kFloat, false, 1)), StatusCode::kInvalidArgument,
              "feature spec 0 (''): empty key");
  ExpectError(err(spec("x", FeatureKind::kFloat, false, -1)), StatusCode::kInvalidArgument,
              "feature spec 0 ('x'): length -1 must be >= 0");
  FeatureSpec d = spec("x", FeatureKind::kFloat, false, 2);
  d.default_value = ParsedFeature::Int64s({1, 2});
  ExpectError(err(d), StatusCode::kInvalidArgument,
              "feature spec 0 ('x'): default value is int64_list, expected float_list");
  d.default_value = ParsedFeature::Floats({1, 2, 3});
  ExpectError(err(d), StatusCode::kInvalidArgument,
              "feature spec 0 ('x'): default value has 3 values, expected 2 or 1");
  d.var_len = true;
  ExpectError(err(d), StatusCode::kInvalidArgument, "feature spec 0 ('x'): a VarLen feature takes no default value");
  std::vector<FeatureSpec> dup = {spec("a", FeatureKind::kFloat, false, 1), spec("a", FeatureKind::kFloat, false, 1)};
  ExpectError(ExampleParser::Create(dup).status(), StatusCode::kInvalidArgument,
              "feature spec 1 ('a'): key repeats feature spec 0");
  // Wire errors surface as DataLoss from the general parser too.
  ExpectError(ParseExample("\x0a\x05", specs).status(), StatusCode::kDataLoss,
              "malformed tf.train.Example: length 5 exceeds the 0 bytes left at byte 1");
}

TEST(GeneralExample, ManySpecsHashLookup) {
  std::vector<std::pair<std::string, ParsedFeature>> features;
  std::vector<FeatureSpec> specs;
  for (int i = 0; i < 100; ++i) {
    features.push_back({"k" + std::to_string(i), ParsedFeature::Int64s({i, -i})});
    FeatureSpec s;
    s.key = "k" + std::to_string(99 - i);
    s.kind = FeatureKind::kInt64;
    s.length = 2;
    specs.push_back(s);
  }
  std::string rec;
  EncodeExample(features, &rec);
  auto r = ParseExample(rec, specs);
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 100; ++i) EXPECT_EQ((*r)[i].int64s, (std::vector<int64_t>{99 - i, i - 99}));
}

// ---- schema summary ----

TEST(ExampleSchema, SummaryAndText) {
  ExampleSchemaSummary sum;
  ASSERT_TRUE(sum.Add(Ex({{"b", ""}, {"a", FloatFeature(PackedFloats({1, 2}))}})).ok());
  ASSERT_TRUE(sum.Add(Ex({{"a", Int64Feature(PackedInts({1, 2, 3}))}, {"c\n", BytesFeature("")}})).ok());
  ASSERT_TRUE(sum.Add(Ex({{"a", FloatFeature("")}, {"a", FloatFeature(PackedFloats({1}))}})).ok());
  EXPECT_EQ(sum.Add("\x0a").code(), StatusCode::kDataLoss);
  EXPECT_EQ(sum.records(), 3);
  EXPECT_EQ(sum.duplicate_keys(), 1);
  auto fs = sum.Features();
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].key, "a");
  EXPECT_EQ(fs[0].present, 3);
  EXPECT_EQ(fs[0].float_records, 2);
  EXPECT_EQ(fs[0].int64_records, 1);
  EXPECT_EQ(fs[0].kinds_seen(), 2);
  EXPECT_EQ(fs[0].min_count, 1);
  EXPECT_EQ(fs[0].max_count, 3);
  EXPECT_EQ(fs[0].total_values, 6);
  EXPECT_EQ(fs[1].key, "b");
  EXPECT_EQ(fs[1].no_kind, 1);
  EXPECT_EQ(fs[1].empty, 1);
  EXPECT_EQ(fs[2].key, "c\n");
  EXPECT_EQ(fs[2].bytes_records, 1);
  EXPECT_EQ(fs[2].empty, 1);
  EXPECT_EQ(fs[2].no_kind, 0);
  EXPECT_EQ(sum.ToText(),
            "records: 3  duplicate_keys: 1  unknown_fields: 0\n"
            "feature  kind        present  missing    empty  no_kind    min    max\n"
            "a        float_list|int64_list        3        0        0        0      1      3\n"
            "b        none              1        2        1        1      0      0\n"
            "c\\x0a    bytes_list        1        2        1        0      0      0\n");
}

// ---- real files (through the TFRecord reader) ----

std::string DataPath(const char* name) { return std::string(CTRAIN_SHARED_DATA_DIR) + "/" + name; }

#define SKIP_WITHOUT_SHARED_DATA()                                                           \
  if (!std::filesystem::is_directory(CTRAIN_SHARED_DATA_DIR))                               \
  GTEST_SKIP() << "shared data directory " << CTRAIN_SHARED_DATA_DIR << " does not exist"

// Calls fn(index, record) for every record of a TFRecord file; returns the count.
template <class Fn>
int64_t ForEachRecord(const std::string& path, Fn&& fn) {
  auto reader = TFRecordReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return -1;
  int64_t n = 0;
  std::string_view rec;
  while (true) {
    auto more = (*reader)->Next(&rec);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    fn(n++, rec);
  }
  return n;
}

TEST(ExampleRealFiles, PaddleRecWideDeep) {
  SKIP_WITHOUT_SHARED_DATA();
  ExampleSchemaSummary sum;
  std::vector<FeatureSpec> specs(3);
  specs[0].key = "label";
  specs[0].kind = FeatureKind::kInt64;
  specs[1].key = "dense_feature";
  specs[1].kind = FeatureKind::kFloat;
  specs[1].length = 13;
  specs[2].key = "sparse_feature";
  specs[2].kind = FeatureKind::kBytes;
  specs[2].length = 26;
  auto parser = ExampleParser::Create(specs);
  ASSERT_TRUE(parser.ok());
  std::vector<ParsedFeature> out;
  int64_t ones = 0, empty_cats = 0, hex8 = 0;
  const int64_t n = ForEachRecord(DataPath("criteo_paddlerec_wd.tfrecord"), [&](int64_t i, std::string_view rec) {
    ASSERT_TRUE(sum.Add(rec).ok()) << "record " << i;
    Status s = parser->Parse(rec, &out);
    ASSERT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
    ASSERT_TRUE(out[0].int64s[0] == 0 || out[0].int64s[0] == 1);
    ones += out[0].int64s[0];
    for (const std::string& c : out[2].bytes) {
      if (c.empty()) ++empty_cats;
      if (c.size() == 8) ++hex8;
    }
  });
  EXPECT_EQ(n, 100);
  EXPECT_EQ(sum.records(), 100);
  EXPECT_EQ(ones, 29);                 // SOURCES.md: 71 label 0, 29 label 1 (twin TSV)
  EXPECT_EQ(empty_cats, 300);          // 300 empty categorical cells -> b""
  EXPECT_EQ(hex8, 100 * 26 - 300);
  auto fs = sum.Features();
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].key, "dense_feature");
  EXPECT_EQ(fs[0].float_records, 100);
  EXPECT_EQ(fs[0].min_count, 13);
  EXPECT_EQ(fs[0].max_count, 13);
  EXPECT_EQ(fs[1].key, "label");
  EXPECT_EQ(fs[1].int64_records, 100);
  EXPECT_EQ(fs[1].max_count, 1);
  EXPECT_EQ(fs[2].key, "sparse_feature");
  EXPECT_EQ(fs[2].bytes_records, 100);
  EXPECT_EQ(fs[2].min_count, 26);
  EXPECT_EQ(fs[2].max_count, 26);
  EXPECT_EQ(sum.unknown_fields(), 0);
  EXPECT_EQ(sum.duplicate_keys(), 0);
}

void CheckDeepCtr(const char* file, int64_t records, int64_t label_ones) {
  ExampleSchemaSummary sum;
  SeedSchema seed;  // label + one (id, value) pair from the DeepCTR keys
  seed.label_key = "label";
  seed.ids_key = "C1";
  seed.values_key = "I1";
  seed.field_size = 1;
  int64_t ones = 0, max_c = 0;
  std::vector<FeatureSpec> specs;
  for (int i = 1; i <= 26; ++i) {
    FeatureSpec s;
    s.key = "C" + std::to_string(i);
    s.kind = FeatureKind::kInt64;
    specs.push_back(s);
  }
  auto parser = ExampleParser::Create(specs);
  ASSERT_TRUE(parser.ok());
  std::vector<ParsedFeature> out;
  const int64_t n = ForEachRecord(DataPath(file), [&](int64_t i, std::string_view rec) {
    ASSERT_TRUE(sum.Add(rec).ok()) << "record " << i;
    float label;
    int64_t id;
    float value;
    Status s = ParseSeedExample(rec, seed, &label, &id, &value);
    ASSERT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
    ones += label == 1.0f;
    ASSERT_TRUE(value >= 0 && value <= 1) << value;
    ASSERT_TRUE(parser->Parse(rec, &out).ok());
    for (const auto& c : out) max_c = std::max(max_c, c.int64s[0]);
  });
  EXPECT_EQ(n, records);
  EXPECT_EQ(ones, label_ones);
  auto fs = sum.Features();
  ASSERT_EQ(fs.size(), 40u);
  for (const FeatureSummary& f : fs) {
    EXPECT_EQ(f.present, records) << f.key;
    EXPECT_EQ(f.min_count, 1) << f.key;
    EXPECT_EQ(f.max_count, 1) << f.key;
    const bool cat = f.key[0] == 'C';
    EXPECT_EQ(f.int64_records, cat ? records : 0) << f.key;
    EXPECT_EQ(f.float_records, cat ? 0 : records) << f.key;
  }
  // SOURCES.md says "max 171"; an independent Python decode of both files gives 182
  // (C7), with 172 (C11) and 171 (C3) next, so we assert the measured value.
  EXPECT_EQ(max_c, 182);
}

TEST(ExampleRealFiles, DeepCtrTrain) {
  SKIP_WITHOUT_SHARED_DATA();
  CheckDeepCtr("criteo_deepctr_tr.tfrecords", 160, 37);
}

TEST(ExampleRealFiles, DeepCtrTrainGzip) {
  SKIP_WITHOUT_SHARED_DATA();
  CheckDeepCtr("criteo_deepctr_tr.gzip.tfrecords", 160, 40);
}

TEST(ExampleRealFiles, TfxTaxiEmptyFeatures) {
  SKIP_WITHOUT_SHARED_DATA();
  ExampleSchemaSummary sum;
  const int64_t n = ForEachRecord(DataPath("tfx_taxi_eval-00000-of-00012.tfrecord.gz"),
                                  [&](int64_t i, std::string_view rec) { ASSERT_TRUE(sum.Add(rec).ok()) << i; });
  EXPECT_EQ(n, 424);
  EXPECT_EQ(sum.records(), 424);
  std::map<std::string, FeatureSummary> by_key;
  for (const auto& f : sum.Features()) by_key[f.key] = f;
  EXPECT_EQ(by_key.size(), 18u);
  const FeatureSummary& company = by_key["company"];
  EXPECT_EQ(company.present, 424);
  EXPECT_EQ(company.no_kind, 131);
  EXPECT_EQ(company.bytes_records, 424 - 131);
  EXPECT_EQ(company.kinds_seen(), 1);
  EXPECT_EQ(by_key["pickup_census_tract"].no_kind, 424);
  EXPECT_EQ(by_key["pickup_census_tract"].kinds_seen(), 0);
  for (const char* k : {"trip_start_hour", "trip_start_day", "trip_start_month", "trip_start_timestamp",
                        "trip_seconds", "pickup_community_area", "dropoff_census_tract",
                        "dropoff_community_area"}) {
    EXPECT_EQ(by_key[k].float_records + by_key[k].bytes_records, 0) << k;
    EXPECT_LE(by_key[k].max_count, 1) << k;
  }
  for (const char* k : {"fare", "tips", "trip_miles"}) {
    EXPECT_EQ(by_key[k].int64_records + by_key[k].bytes_records, 0) << k;
  }
  EXPECT_EQ(by_key["payment_type"].bytes_records + by_key["payment_type"].no_kind, 424);

  // The general parser: company as VarLen bytes is empty in exactly 131 records;
  // as FixedLen with a default it takes the default there.
  std::vector<FeatureSpec> specs(2);
  specs[0].key = "company";
  specs[0].kind = FeatureKind::kBytes;
  specs[0].var_len = true;
  specs[1].key = "trip_start_hour";
  specs[1].kind = FeatureKind::kInt64;
  specs[1].default_value = ParsedFeature::Int64s({-1});
  auto parser = ExampleParser::Create(specs);
  ASSERT_TRUE(parser.ok());
  std::vector<ParsedFeature> out;
  int64_t empty_company = 0;
  ForEachRecord(DataPath("tfx_taxi_eval-00000-of-00012.tfrecord.gz"), [&](int64_t i, std::string_view rec) {
    Status s = parser->Parse(rec, &out);
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
    empty_company += out[0].bytes.empty();
    ASSERT_TRUE(out[1].int64s[0] >= -1 && out[1].int64s[0] <= 23);
  });
  EXPECT_EQ(empty_company, 131);
}

TEST(ExampleRealFiles, TfxPenguin) {
  SKIP_WITHOUT_SHARED_DATA();
  ExampleSchemaSummary sum;
  const int64_t n = ForEachRecord(DataPath("tfx_penguin_train-00000-of-00001.tfrecord.gz"),
                                  [&](int64_t i, std::string_view rec) { ASSERT_TRUE(sum.Add(rec).ok()) << i; });
  EXPECT_EQ(n, 234);
  auto fs = sum.Features();
  ASSERT_EQ(fs.size(), 5u);
  for (const auto& f : fs) {
    EXPECT_EQ(f.present, 234) << f.key;
    EXPECT_EQ(f.no_kind, 0) << f.key;
    EXPECT_EQ(f.max_count, 1) << f.key;
    EXPECT_EQ(f.key == "species" ? f.int64_records : f.float_records, 234) << f.key;
  }
}

}  // namespace
}  // namespace ctrain::io
