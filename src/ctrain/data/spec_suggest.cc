#include "ctrain/data/spec_suggest.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/feature_spec.h"
#include "ctrain/io/example.h"
#include "ctrain/io/example_schema.h"
#include "ctrain/io/file.h"
#include "ctrain/io/libffm.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {

namespace {

using nlohmann::ordered_json;  // keys kept in insertion order

// "C2" < "C10": digit runs compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      const std::string_view da(a.data() + i, ei - i), db(b.data() + j, ej - j);
      if (da.size() != db.size()) return da.size() < db.size();
      if (da != db) return da < db;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

// Distinct values kept per feature before the count is reported as "at least".
constexpr size_t kMaxDistinct = size_t{1} << 20;

int64_t Buckets(size_t distinct) {
  int64_t b = 16;
  while (b < static_cast<int64_t>(4 * distinct) && b < (int64_t{1} << 30)) b <<= 1;
  return b;
}

template <typename Fn>
Status ForEachRecord(const std::vector<std::string>& paths, io::Compression compression, Fn fn) {
  for (const std::string& path : paths) {
    io::TFRecordReaderOptions to;
    to.compression = compression;
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::TFRecordReader> r, io::TFRecordReader::Open(path, to));
    for (;;) {
      std::string_view rec;
      CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&rec));
      if (!more) break;
      Status s = fn(rec);
      if (!s.ok())
        return s.WithContext(r->name() + ": record " + std::to_string(r->record_index()) + " at offset " +
                             std::to_string(r->record_offset()));
    }
  }
  return Status::OK();
}

// The label's values over all records: whether they are all 0 or 1, and if
// not, what a label rule (feature_spec.h LabelRule) could make of them.
struct LabelValues {
  bool binary = true, integral = true;
  double min = 0, max = 0;
  uint64_t n = 0, non_finite = 0;
  std::set<double> distinct;  // up to 16
  void Add(double v) {
    if (!std::isfinite(v)) {
      ++non_finite;
      binary = false;
      return;
    }
    min = n == 0 ? v : std::min(min, v);
    max = n == 0 ? v : std::max(max, v);
    ++n;
    if (v != 0 && v != 1) binary = false;
    if (v != std::floor(v)) integral = false;
    if (distinct.size() <= 16) distinct.insert(v);
  }
  std::string Advice(const std::string& key) const {
    auto num = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%.9g", v);
      return std::string(b);
    };
    std::string s = "label '" + key + "' is not 0/1 (values " + num(min) + " .. " + num(max) + ", " +
                    (distinct.size() > 16 ? "more than 16" : std::to_string(distinct.size())) + " distinct" +
                    (non_finite ? ", " + std::to_string(non_finite) + " not finite" : std::string()) +
                    "): training refuses it as it is; add a label rule to the spec, e.g. \"label_rule\": "
                    "{\"threshold\": " + num(min <= 0 && max > 0 ? 0 : (min + max) / 2) + "} (1 when " + key + " > " +
                    num(min <= 0 && max > 0 ? 0 : (min + max) / 2) + ")";
    if (integral && distinct.size() <= 16) s += " or {\"positive_values\": [" + num(*distinct.rbegin()) + "]} (1 when " + key +
                                    " is one of the listed values)";
    return s + " (docs/feature-spec.md#labels)";
  }
};

StatusOr<SuggestedSpec> SuggestExample(const std::vector<std::string>& paths, const SuggestSpecOptions& options) {
  SuggestedSpec out;
  io::ExampleSchemaSummary summary;
  CTRAIN_RETURN_IF_ERROR(ForEachRecord(paths, options.compression, [&](std::string_view rec) {
    return summary.Add(rec);
  }));
  out.records = summary.records();
  if (out.records == 0) return InvalidArgumentError("no records in the input: nothing to suggest a spec from");
  std::vector<io::FeatureSummary> features = summary.Features();
  std::stable_sort(features.begin(), features.end(),
                   [](const io::FeatureSummary& a, const io::FeatureSummary& b) { return NaturalLess(a.key, b.key); });
  std::map<std::string, const io::FeatureSummary*> by_key;
  for (const io::FeatureSummary& f : features) by_key[f.key] = &f;
  std::string label = options.label_key;
  if (label.empty()) {
    for (const char* k : {"label", "click", "clicked", "y", "target"})
      if (by_key.count(k)) {
        label = k;
        break;
      }
    if (label.empty()) {
      std::string keys;
      for (const auto& [k, f] : by_key) keys += (keys.empty() ? "" : ", ") + k;
      return InvalidArgumentError("no label key: none of label, click, clicked, y, target is present; pass "
                                  "--label-key (keys: " + keys + ")");
    }
  }
  auto lit = by_key.find(label);
  if (lit == by_key.end()) return InvalidArgumentError("label key '" + label + "' is in no record");
  const io::FeatureSummary& lf = *lit->second;
  if (lf.present != out.records || lf.min_count != 1 || lf.max_count != 1 || lf.kinds_seen() != 1 ||
      lf.bytes_records > 0)
    return InvalidArgumentError("label key '" + label + "' must hold one float or int64 value in every record (present in " +
                                std::to_string(lf.present) + " of " + std::to_string(out.records) +
                                " records, " + std::to_string(lf.min_count) + ".." + std::to_string(lf.max_count) +
                                " values)");

  // Keys to use, with their kind; pass 2 collects values.
  struct Use {
    const io::FeatureSummary* f;
    io::FeatureKind kind;
    double max_abs = 0;
    std::unordered_set<std::string> distinct_bytes;
    std::unordered_set<int64_t> distinct_ints;
  };
  std::vector<Use> uses;
  for (const io::FeatureSummary& f : features) {
    if (f.key == label) continue;
    if (f.kinds_seen() == 0) {
      out.notes.push_back("skipped '" + f.key + "': it never holds a value (Feature {} or empty lists only)");
      continue;
    }
    if (f.kinds_seen() > 1) {
      out.notes.push_back("skipped '" + f.key + "': it holds different list kinds in different records");
      continue;
    }
    const io::FeatureKind kind = f.bytes_records ? io::FeatureKind::kBytes
                                 : f.float_records ? io::FeatureKind::kFloat
                                                   : io::FeatureKind::kInt64;
    const bool always = f.present == out.records && f.empty == 0;
    if (kind == io::FeatureKind::kFloat && !(always && f.min_count == f.max_count) && f.max_count > 1) {
      out.notes.push_back("skipped '" + f.key + "': a float list of varying length (" + std::to_string(f.min_count) +
                          ".." + std::to_string(f.max_count) + " values) has no fixed field layout");
      continue;
    }
    Use u;
    u.f = &f;
    u.kind = kind;
    uses.push_back(std::move(u));
  }
  std::vector<io::FeatureSpec> ps;
  for (const Use& u : uses) {
    io::FeatureSpec p;
    p.key = u.f->key;
    p.kind = u.kind;
    p.var_len = true;
    ps.push_back(p);
  }
  {  // the label, last: its values decide whether it needs a label rule
    io::FeatureSpec p;
    p.key = label;
    p.kind = lf.float_records ? io::FeatureKind::kFloat : io::FeatureKind::kInt64;
    ps.push_back(p);
  }
  LabelValues lv;
  CTRAIN_ASSIGN_OR_RETURN(io::ExampleParser parser, io::ExampleParser::Create(ps));
  std::vector<io::ParsedFeature> parsed;
  CTRAIN_RETURN_IF_ERROR(ForEachRecord(paths, options.compression, [&](std::string_view rec) {
    CTRAIN_RETURN_IF_ERROR(parser.Parse(rec, &parsed));
    const io::ParsedFeature& lp = parsed.back();
    lv.Add(lp.kind == io::FeatureKind::kFloat ? static_cast<double>(lp.floats[0]) : static_cast<double>(lp.int64s[0]));
    for (size_t i = 0; i < uses.size(); ++i) {
      Use& u = uses[i];
      const io::ParsedFeature& p = parsed[i];
      if (u.kind == io::FeatureKind::kFloat)
        for (float x : p.floats) u.max_abs = std::max(u.max_abs, static_cast<double>(std::fabs(x)));
      else if (u.kind == io::FeatureKind::kBytes)
        for (const std::string& s : p.bytes) {
          if (u.distinct_bytes.size() < kMaxDistinct) u.distinct_bytes.insert(s);
        }
      else
        for (int64_t v : p.int64s)
          if (u.distinct_ints.size() < kMaxDistinct) u.distinct_ints.insert(v);
    }
    return Status::OK();
  }));

  ordered_json spec;
  spec["input"] = "example";
  spec["label"] = label;
  spec["label_dtype"] = lf.float_records ? "float" : "int64";
  ordered_json fields = ordered_json::array();
  std::vector<std::string> int_keys;
  for (const Use& u : uses) {
    const io::FeatureSummary& f = *u.f;
    const bool always = f.present == out.records && f.empty == 0;
    ordered_json e;
    e["key"] = f.key;
    if (u.kind == io::FeatureKind::kFloat) {
      e["type"] = "numeric";
      e["dtype"] = "float";
      if (f.max_count > 1) e["length"] = f.max_count;
      if (!always) {
        e["default"] = 0;
        out.notes.push_back("'" + f.key + "' is missing or empty in " + std::to_string(out.records - f.present + f.empty) +
                            " records: default 0");
      }
      if (u.max_abs > 100) {
        e["log1p"] = true;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", u.max_abs);
        out.notes.push_back("'" + f.key + "' has values up to " + buf +
                            " in magnitude: log1p (DeepFM multiplies embeddings by the value)");
      }
    } else {
      const size_t distinct = u.kind == io::FeatureKind::kBytes ? u.distinct_bytes.size() : u.distinct_ints.size();
      e["type"] = "categorical";
      e["dtype"] = u.kind == io::FeatureKind::kBytes ? "bytes" : "int64";
      if (always && f.min_count == f.max_count) {
        if (f.max_count > 1) e["length"] = f.max_count;
      } else {
        e["var_len"] = true;
        e["pooling"] = "mean";
        out.notes.push_back("'" + f.key + "' holds " + std::to_string(f.min_count) + ".." +
                            std::to_string(f.max_count) + " values per record: a multi-hot field, pooling mean");
      }
      e["map"] = "hash";
      e["buckets"] = Buckets(distinct);
      if (u.kind == io::FeatureKind::kInt64) int_keys.push_back(f.key);
    }
    fields.push_back(std::move(e));
  }
  if (fields.empty()) return InvalidArgumentError("no usable feature besides the label '" + label + "'");
  if (!lv.binary) out.warnings.push_back(lv.Advice(label));
  if (!int_keys.empty()) {
    std::string keys;
    for (const std::string& k : int_keys) keys += (keys.empty() ? "" : ", ") + k;
    out.notes.push_back("int64 features are taken as categorical ids (make one type numeric if it is a count): " +
                        keys);
  }
  spec["fields"] = std::move(fields);
  out.json = spec.dump(2) + "\n";
  CTRAIN_RETURN_IF_ERROR(ParseFeatureSpec(out.json, "suggested spec").status());
  return out;
}

StatusOr<SuggestedSpec> SuggestLibFfm(const std::vector<std::string>& paths, const SuggestSpecOptions& options) {
  SuggestedSpec out;
  std::set<int64_t> fields;
  int64_t max_feature = -1;
  for (const std::string& path : paths) {
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::SequentialFile> raw, io::OpenSequentialFile(path));
    CTRAIN_ASSIGN_OR_RETURN(SniffedStream s, SniffStream(std::move(raw), options.compression, RecordFormat::kLibFfm));
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::LibFfmReader> r, io::LibFfmReader::Open(std::move(s.stream)));
    for (;;) {
      float label = 0;
      const std::vector<io::FfmTriple>* t = nullptr;
      CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&label, &t));
      if (!more) break;
      ++out.records;
      for (const io::FfmTriple& x : *t) {
        fields.insert(x.field);
        max_feature = std::max(max_feature, x.feature);
      }
    }
  }
  if (fields.empty()) return InvalidArgumentError("no field:feature:value triples in the input");
  ordered_json spec;
  spec["input"] = "libffm";
  spec["feature_size"] = max_feature + 1;
  ordered_json fs = ordered_json::array();
  for (int64_t f : fields) fs.push_back({{"name", "field" + std::to_string(f)}, {"ffm_field", f}, {"pooling", "sum"}});
  spec["fields"] = std::move(fs);
  out.notes.push_back("feature_size " + std::to_string(max_feature + 1) +
                      " = the largest feature seen + 1: raise it if other files hold larger ids");
  out.json = spec.dump(2) + "\n";
  CTRAIN_RETURN_IF_ERROR(ParseFeatureSpec(out.json, "suggested spec").status());
  return out;
}

}  // namespace

StatusOr<SuggestedSpec> SuggestFeatureSpec(const std::vector<std::string>& paths, const SuggestSpecOptions& options) {
  if (paths.empty()) return InvalidArgumentError("no input files");
  CTRAIN_ASSIGN_OR_RETURN(SniffResult sniff, SniffFile(paths[0], options.compression, RecordFormat::kAuto));
  if (sniff.format == RecordFormat::kTFRecord) return SuggestExample(paths, options);
  if (sniff.format == RecordFormat::kLibFfm) return SuggestLibFfm(paths, options);
  return InvalidArgumentError(paths[0] + ": --suggest-spec reads tf.train.Example TFRecords or libFFM, this is " +
                              std::string(RecordFormatName(sniff.format)) +
                              (sniff.format == RecordFormat::kLibSvm
                                   ? " (a LibSVM field map is yours to write: fields with \"ids\": [first, last])"
                                   : ""));
}

}  // namespace ctrain::data
