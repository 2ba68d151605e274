// tf.train.Example: a hand-written protobuf wire codec, byte-compatible with TensorFlow.
//
// Source spec: tensorflow/core/example/{example,feature}.proto and the protobuf
// encoding guide (https://protobuf.dev/programming-guides/encoding/):
//
//   message Example   { Features features = 1; }
//   message Features  { map<string, Feature> feature = 1; }   // entry: key = 1, value = 2
//   message Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                                    Int64List int64_list = 3; } }
//   message BytesList { repeated bytes value = 1; }
//   message FloatList { repeated float value = 1 [packed = true]; }   // fixed32, little-endian
//   message Int64List { repeated int64 value = 1 [packed = true]; }   // varint, negative = 10 bytes
//
// What the readers accept (exactly what libprotobuf accepts; docs/formats/example.md):
//   * packed and unpacked repeated floats/int64s, mixed within one list;
//   * unknown fields of every wire type (varint, fixed64, length-delimited, groups,
//     fixed32) anywhere, also a known field number with an unexpected wire type
//     (protobuf treats it as unknown); all of them are skipped and counted;
//   * an empty `Feature {}` (key present, no kind set, zero values);
//   * a key repeated in the map: the last entry wins (protobuf map semantics);
//   * repeated singular message fields merge (several `features` fields, several
//     `value` fields in one map entry, several lists of the same kind in one
//     Feature concatenate; a list of another kind replaces the oneof).
//   Not checked: UTF-8 validity of keys (TensorFlow's parser does not check either).
//
// Errors (all messages are record-relative; the caller adds file/record context
// with Status::WithContext):
//   DataLoss        "malformed tf.train.Example: <what> at byte <offset>", offset
//                   from the start of the record, e.g. "truncated varint at byte 17".
//   InvalidArgument schema mismatches naming the key and expected vs found, e.g.
//                   "feature 'ids': expected int64_list of length 39, found float_list of length 39",
//                   "missing feature 'values'".
//
// Thread safety: free functions are thread-safe; an ExampleParser is used by one
// thread at a time (it owns scratch space; give each thread its own copy).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::io {

// The three list kinds of Feature.kind (values are not stored on disk).
enum class FeatureKind : uint8_t { kBytes = 0, kFloat = 1, kInt64 = 2 };

// "bytes_list", "float_list", "int64_list".
std::string_view FeatureKindName(FeatureKind kind);

// ---------------------------------------------------------------------------
// Fast path: the DeepFM seed schema.
// ---------------------------------------------------------------------------

// Names of the three features of a DeepFM example (Guo et al. 2017 seed code:
// label, feat_ids, feat_vals) and the number of fields F.
struct SeedSchema {
  std::string label_key = "label";    // float_list[1] or int64_list[1], value 0 or 1
  std::string ids_key = "ids";        // int64_list[F]
  std::string values_key = "values";  // float_list[F]
  int32_t field_size = 39;            // F (Criteo: 13 integer + 26 categorical)
};

// Parses one serialized Example straight into caller memory: *label, ids[0..F),
// values[0..F). Allocates nothing. Other features in the record are ignored
// (they are not errors). On error the outputs hold unspecified values.
// Errors:
//   DataLoss        malformed wire bytes ("malformed tf.train.Example: ... at byte N").
//   InvalidArgument "missing feature 'K': the example's keys are 'a', 'b'; the seed layout is
//                   ... read other keys through a feature spec (... Python: feature_spec=...)";
//                   "feature 'K': expected int64_list of length F,
//                   found float_list of length F" (also "found Feature with no kind");
//                   "feature 'label': expected float_list or int64_list of length 1, found ...";
//                   "feature 'label': expected 0 or 1, found -1";
//                   "invalid seed schema: ..." for a negative field_size or repeated key names.
Status ParseSeedExample(std::string_view record, const SeedSchema& schema, float* label,
                        int64_t* ids /*[F]*/, float* values /*[F]*/);

// Appends the Example {label: float_list[1], ids: int64_list[F], values: float_list[F]}
// (keys in that order, packed lists) to *out; reuses out's capacity.
// REQUIRES: ids.size() == values.size() (F is taken from the spans, not the schema).
void EncodeSeedExample(float label, std::span<const int64_t> ids, std::span<const float> values,
                       const SeedSchema& schema, std::string* out);

// ---------------------------------------------------------------------------
// General path: like tf.io.parse_single_example.
// ---------------------------------------------------------------------------

// The values of one feature. Only the vector matching `kind` is meaningful; the
// parser clears the others (keeping capacity).
struct ParsedFeature {
  FeatureKind kind = FeatureKind::kFloat;
  std::vector<std::string> bytes;
  std::vector<float> floats;
  std::vector<int64_t> int64s;

  // Number of values of `kind`.
  int64_t size() const;
  void Clear();  // empties all three vectors, keeps capacity
  static ParsedFeature Bytes(std::vector<std::string> v);
  static ParsedFeature Floats(std::vector<float> v);
  static ParsedFeature Int64s(std::vector<int64_t> v);
  bool operator==(const ParsedFeature&) const = default;
};

// One requested feature, mirroring tf.io.FixedLenFeature / tf.io.VarLenFeature.
struct FeatureSpec {
  std::string key;
  FeatureKind kind = FeatureKind::kFloat;
  // false: FixedLen, exactly `length` values (the product of the TF shape; 1 for a scalar).
  // true:  VarLen, any number of values; a missing key (or Feature{}) gives zero values.
  bool var_len = false;
  int64_t length = 1;
  // FixedLen only: used when the key is missing or holds Feature{} (as TensorFlow does).
  // Its kind must equal `kind` and it holds `length` values, or 1 value that is repeated
  // `length` times. Without a default a missing FixedLen feature is an error.
  std::optional<ParsedFeature> default_value;
};

// Parses Examples against a fixed list of specs. Create once, Parse per record.
class ExampleParser {
 public:
  // Errors: InvalidArgument for an empty or repeated key, a negative length, a default
  // on a VarLen spec, or a default whose kind or size does not fit.
  static StatusOr<ExampleParser> Create(std::vector<FeatureSpec> specs);

  // out->size() becomes specs().size(); (*out)[i] gets specs()[i]'s values, reusing the
  // vectors' capacity. Features in the record that no spec names are ignored.
  // Errors: DataLoss (malformed bytes); InvalidArgument "missing feature 'K'",
  //   "feature 'K': expected float_list of length 13, found int64_list of length 1",
  //   "feature 'K': expected float_list, found bytes_list of length 2" (VarLen).
  Status Parse(std::string_view record, std::vector<ParsedFeature>* out);

  const std::vector<FeatureSpec>& specs() const { return specs_; }

 private:
  ExampleParser() = default;
  int32_t Find(std::string_view key) const;  // spec index or -1

  std::vector<FeatureSpec> specs_;
  std::vector<int32_t> slots_;  // open-addressing hash of spec keys -> index (-1 = empty)
  struct Match {
    const uint8_t* begin = nullptr;  // map entry payload; nullptr: key not seen
    const uint8_t* end = nullptr;
    const uint8_t* value_begin = nullptr;  // single `value` field payload, or nullptr
    const uint8_t* value_end = nullptr;
    int32_t value_fields = 0;
  };
  std::vector<Match> matches_;  // scratch, one per spec
};

// One-shot convenience around ExampleParser (validates the specs on every call).
StatusOr<std::vector<ParsedFeature>> ParseExample(std::string_view record,
                                                  std::span<const FeatureSpec> specs);

// Every feature of a record, for schema inspection.
struct FeatureEntryView {
  std::string_view key;             // points into the record
  std::optional<FeatureKind> kind;  // nullopt: Feature {} with no kind set
  int64_t count = 0;                // number of values of `kind`
};
struct ExampleView {
  std::vector<FeatureEntryView> features;  // sorted by key, one per distinct key
  int64_t duplicate_keys = 0;              // map entries replaced by a later entry of the same key
  int64_t unknown_fields = 0;              // skipped fields (unknown numbers or wire types)
};

// Decodes the whole record (every byte is checked) into *view, reusing its capacity.
// The keys point into `record`. Errors: DataLoss for malformed bytes.
Status DecodeExample(std::string_view record, ExampleView* view);

// Appends an Example holding `features` in the given order (floats and int64s packed,
// exactly as protobuf serializes them) to *out. Keys should be valid UTF-8 for other
// protobuf readers (libprotobuf rejects invalid UTF-8 in proto3 strings).
void EncodeExample(std::span<const std::pair<std::string, ParsedFeature>> features, std::string* out);

}  // namespace ctrain::io
