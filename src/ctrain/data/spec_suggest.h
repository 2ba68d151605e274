// SuggestFeatureSpec: a starting feature spec (data/feature_spec.h) from the
// schema and values of tf.train.Example TFRecord files (plain, gzip or zlib)
// or libFFM files, for `ctrain inspect --suggest-spec FILE`.
//
// Rules (each decision that is a guess is also reported in `notes`):
//   label        the given key, else the first present of label, click,
//                clicked, y, target; it must be a float_list or int64_list of
//                one value in every record. A label whose values are not all
//                0 or 1 (a count, an amount: TFX taxi's "tips") is kept, with a
//                warning that suggests a "label_rule" (feature_spec.h).
//   float_list   numeric, one model field per value ("length" n when every
//                record holds n values; a key missing or empty in some records
//                gets "default": 0). "log1p" when a value's magnitude exceeds
//                100 (unscaled counts). Lists of varying length > 1: skipped.
//   int64_list   categorical ids (dtype int64), bytes_list categorical
//   bytes_list   (dtype bytes): "length" n when every record holds n values,
//                else "var_len" with pooling mean. Map hash with buckets the
//                next power of two >= 4 x the distinct values seen (>= 16).
//   mixed kinds  skipped (note).
//   libFFM       one multi-hot field per field number seen, feature_size =
//                the largest feature + 1.
// The returned text is JSON that ParseFeatureSpec accepts (checked before it
// is returned); offsets are left to the spec's automatic layout.
#pragma once

#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/compression.h"

namespace ctrain::data {

struct SuggestSpecOptions {
  std::string label_key;  // empty: detect
  io::Compression compression = io::Compression::kAuto;
};

struct SuggestedSpec {
  std::string json;                // the spec (JSON text, ends in '\n')
  std::vector<std::string> notes;  // guesses and skipped keys, one sentence each
  std::vector<std::string> warnings;  // what training would refuse as suggested (a label not 0/1)
  int64_t records = 0;             // records read
};

// Errors: the readers' (file and record named); InvalidArgument when no label
// key is found ("no label key: none of label, click, ... is present; pass
// --label-key (keys: ...)") or the files are neither TFRecord nor libFFM.
StatusOr<SuggestedSpec> SuggestFeatureSpec(const std::vector<std::string>& paths, const SuggestSpecOptions& options);

}  // namespace ctrain::data
