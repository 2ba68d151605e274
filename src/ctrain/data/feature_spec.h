// FeatureSpec: how the keys of the files users already have become DeepFM
// fields (--feature-spec FILE, JSON or TOML; docs/feature-spec.md has the
// full reference and examples).
//
// A spec lists the label key and the fields. Each entry becomes one or more
// model fields; every model field owns a block of ids [offset, offset + size)
// of the embedding tables (blocks are laid out in spec order unless an entry
// gives "offset"), so feature_size = the end of the last block.
//
//   input "example" (tf.train.Example in TFRecord files, plain or gzip/zlib):
//     numeric      float or int64 values; one model field per value (length
//                  n gives n fields), id = the field's block (size 1), value =
//                  x, or sign(x) * log1p(|x|) with "log1p" (finite for the
//                  Criteo -1s). "default": value used when the key is missing.
//     categorical  int64 or bytes values, mapped per field to ids:
//                  "hash" (Hash64 of the bytes, or of the 8 little-endian bytes
//                  of an int64, modulo "buckets"), "identity" (an int64 in
//                  [0, buckets), anything else is an error) or "vocabulary"
//                  (id 1 + position in the list; 0 = out of vocabulary).
//                  value 1. With "var_len" the field holds any number of
//                  values (0 too: a missing key is an empty field) pooled by
//                  "pooling" = "sum" (values 1) or "mean" (values 1/n): a
//                  multi-hot field (data::Batch::field_splits).
//   input "libsvm": a field map. Each entry owns the written ids
//     [ids[0], ids[1]] (inclusive); every "id:value" pair of a line goes to
//     the field owning its id, so a field may hold 0..n pairs (pooled by
//     "pooling"). Ids keep their value (minus "id_base"); an id no field owns
//     is an error naming the line.
//   input "libffm": "field:feature:value"; entry i holds the triples of field
//     number "ffm_field" (default i); feature ids are kept as written and must
//     lie below the spec's "feature_size".
//
// A spec that has no multi-hot field (no var_len; not libsvm/libffm) gives
// one-hot rows (the fixed batch layout, the fast path); otherwise every row is
// multi-hot. The checkpoint keeps the spec (ToJson, vocabularies inline) so
// eval/predict map keys exactly as training did.
//
// Errors: InvalidArgument "<spec file>: <where>: <what>", e.g.
//   "spec.json: fields[3] (C1): buckets must be >= 1".
//
// Thread safety: a FeatureSpec is an immutable value once parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/example.h"

namespace ctrain::data {

enum class SpecInput { kExample, kLibSvm, kLibFfm };
enum class SpecFieldKind { kNumeric, kCategorical };
enum class IdMapping { kHash, kIdentity, kVocabulary };
enum class Pooling { kSum, kMean };

std::string_view SpecInputName(SpecInput v);     // "example" | "libsvm" | "libffm"
std::string_view PoolingName(Pooling v);         // "sum" | "mean"
std::string_view IdMappingName(IdMapping v);     // "hash" | "identity" | "vocabulary"

// One entry of "fields".
struct SpecField {
  std::string name;  // unique; default: key (example), "field<i>" otherwise
  // input "example":
  std::string key;
  SpecFieldKind kind = SpecFieldKind::kCategorical;
  io::FeatureKind dtype = io::FeatureKind::kInt64;  // numeric: float|int64; categorical: int64|bytes
  int32_t length = 1;                               // fixed-length list: this many model fields
  bool var_len = false;                             // categorical: one multi-hot field
  bool log1p = false;                               // numeric
  std::optional<float> default_value;               // numeric: value when the key is missing
  IdMapping mapping = IdMapping::kHash;             // categorical
  int64_t buckets = 0;                              // hash / identity: ids per model field
  std::vector<std::string> vocabulary;              // mapping vocabulary (int64 values as decimal text)
  // input "libsvm": written ids [ids_lo, ids_hi].
  int64_t ids_lo = -1, ids_hi = -1;
  // input "libffm": the field number of the line's triples.
  int64_t ffm_field = -1;
  Pooling pooling = Pooling::kSum;  // multi-hot fields
  // Layout (computed; "offset" in the file pins the first block).
  std::optional<int64_t> offset_pin;
  int64_t size = 1;                 // ids per model field
  std::vector<int64_t> offsets;     // first id of each of the entry's model fields
  int32_t first_model_field = 0;    // index of its first model field
  int32_t model_fields() const { return static_cast<int32_t>(offsets.size()); }
  bool multi_hot() const { return var_len; }
};

// How an example's label value becomes the 0/1 label (input "example"):
//   none             the value must be 0 or 1 (else an error naming the record)
//   threshold t      1 when value > t, else 0 (scikit-learn's Binarizer rule;
//                    TFX taxi's "tips > 0" is {"threshold": 0})
//   positive_values  1 when the value is one of the list, else 0
// A NaN or infinite value is an error under every rule.
struct LabelRule {
  enum class Kind { kNone, kThreshold, kPositiveValues };
  Kind kind = Kind::kNone;
  double threshold = 0;
  std::vector<double> positive_values;
};

struct FeatureSpec {
  std::string source;  // the spec file's name, for messages
  SpecInput input = SpecInput::kExample;
  std::string label_key = "label";                      // example
  io::FeatureKind label_dtype = io::FeatureKind::kFloat;  // float_list[1] or int64_list[1], 0 or 1
  LabelRule label_rule;                                 // example: "label_rule" (above)
  int32_t id_base = 0;                                  // libsvm
  uint64_t hash_seed = 0;
  std::vector<SpecField> fields;
  // Computed.
  int64_t feature_size = 0;  // ids lie in [0, feature_size)
  int32_t field_size = 0;    // model fields F
  bool multi_hot = false;    // rows carry ragged fields

  // Canonical JSON (every computed offset, vocabularies inline): what the
  // checkpoint stores; parsing it gives the same spec.
  std::string ToJson() const;
};

// Parses a spec. `name` is used in messages and decides the syntax: a name
// ending in ".toml" is TOML, anything else JSON. Relative "vocabulary_file"
// paths are resolved against `base_dir`.
StatusOr<FeatureSpec> ParseFeatureSpec(std::string_view text, const std::string& name,
                                       const std::string& base_dir = ".");
// Reads and parses the file at `path` (NotFound naming it when missing).
StatusOr<FeatureSpec> LoadFeatureSpec(const std::string& path);

}  // namespace ctrain::data
