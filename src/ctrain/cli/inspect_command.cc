// `ctrain inspect`: per file, the format, compression, record count, a schema
// summary and per-field value ranges / distinct-id counts (data/field_stats.h).
// Reads every record, so a zero exit status means every file is intact.
// Arguments expand like `train --train` (data/file_list.h: directories, globs);
// a checkpoint file (ckpt-*.bin) or a model directory shows the checkpoint's
// step, meta and tensors instead; an input with no byte is "empty".
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/data/field_stats.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/data/spec_suggest.h"
#include "ctrain/io/compression.h"
#include "ctrain/io/example.h"
#include "ctrain/io/feature_hash.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/keyed_checkpoint.h"
#include "ctrain/io/example_schema.h"
#include "ctrain/io/libffm.h"
#include "ctrain/io/libsvm.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::cli {
namespace {

using nlohmann::json;

struct InspectFlags {
  std::vector<std::string> files;
  std::string format = "auto";
  std::string compression = "auto";
  int32_t id_base = 0;
  bool json_out = false;
  int64_t pipe_timeout_ms = data::kDefaultPipeTimeoutMs;
  int64_t max_line_bytes = static_cast<int64_t>(io::kDefaultMaxLineBytes);
  std::string suggest_spec;  // write a starting feature spec here ("-" = stdout)
  std::string label_key;     // --suggest-spec: the label key (default: detected)
  bool criteo_pad_missing_trailing = false;  // Criteo: read stripped trailing cells as empty (counted)
};

// --suggest-spec: one spec from all inputs; the guesses go to stderr.
int SuggestSpec(const InspectFlags& fl, const std::vector<std::string>& files) {
  data::SuggestSpecOptions o;
  o.label_key = fl.label_key;
  auto c = io::ParseCompression(fl.compression);
  if (!c.ok()) return ReportError(c.status());
  o.compression = *c;
  auto r = data::SuggestFeatureSpec(files, o);
  if (!r.ok()) return ReportError(r.status());
  for (const std::string& n : r->notes) Logf("spec: %s\n", n.c_str());
  for (const std::string& w : r->warnings) Warnf("spec: %s\n", w.c_str());
  if (fl.suggest_spec == "-") {
    std::fputs(r->json.c_str(), stdout);
    return 0;
  }
  Status w = io::WriteStringToFileAtomic(fl.suggest_spec, r->json);
  if (!w.ok()) return ReportError(w);
  Logf("wrote a feature spec for %lld records to %s (edit it, then pass --feature-spec)\n",
               static_cast<long long>(r->records), fl.suggest_spec.c_str());
  return 0;
}

// Each inspector gets the already decompressed stream (opened once, so FIFOs and
// stdin work with format detection).
using Stream = std::unique_ptr<io::SequentialFile>;

// Per-field value ranges and distinct-id counts, and the warnings they raise.
// A last line without '\n' is how a cut file (torn tail) looks: say so.
void AddTornTail(uint64_t unterminated, json* out) {
  (*out)["last_line_unterminated"] = unterminated != 0;
  if (unterminated != 0)
    (*out)["warnings"].push_back(
        "the last line has no final newline: the file may be cut (a torn tail); its last record was read as "
        "written");
}

// warn = false for raw Criteo columns: ctrain applies log1p to them itself.
void AddFieldStats(const data::FieldStats& st, json* out, bool warn = true) {
  json fields = json::array();
  for (const data::FieldStat& f : st.fields()) {
    json j = {{"field", f.name}, {"count", f.count}};
    if (f.count > 0) {
      j["value_min"] = f.min;
      j["value_max"] = f.max;
      j["distinct_values"] = f.values.Count();
      j["integral_values"] = f.all_integral;
    }
    if (f.id_observations > 0) {
      j["distinct_ids"] = f.ids.Count();
      j["distinct_ids_exact"] = f.ids.exact();
    }
    fields.push_back(std::move(j));
  }
  (*out)["fields"] = std::move(fields);
  (*out)["distinct_method"] = std::string(data::FieldStats::Method());
  (*out)["warnings"] = warn ? st.Warnings() : std::vector<std::string>{};
}

StatusOr<json> InspectTFRecord(Stream f, json out) {
  io::TFRecordReaderOptions o;
  o.compression = io::Compression::kNone;
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(f), o));
  const std::string path = r->name();
  io::ExampleSchemaSummary summary;
  io::ExampleView view;
  std::vector<io::FeatureSpec> specs;
  data::FieldStats st;           // per feature key, or per position of the seed schema
  std::map<std::string, size_t> slot;  // feature key -> field index
  const io::SeedSchema seed;     // "ids" int64_list[F] + "values" float_list[F]
  bool seed_layout = true;
  std::string_view rec;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&rec));
    if (!more) break;
    Status s = summary.Add(rec);
    if (s.ok()) s = io::DecodeExample(rec, &view);
    std::vector<io::ParsedFeature> parsed;
    if (s.ok()) {
      specs.clear();
      for (const auto& e : view.features)
        if (e.kind) specs.push_back({std::string(e.key), *e.kind, /*var_len=*/true, 0, std::nullopt});
      auto p = io::ParseExample(rec, specs);
      if (p.ok()) parsed = std::move(*p);
      else s = p.status();
    }
    if (!s.ok())
      return s.WithContext(path + ": record " + std::to_string(r->record_index()) + " at offset " +
                           std::to_string(r->record_offset()));
    const io::ParsedFeature* ids = nullptr;
    const io::ParsedFeature* values = nullptr;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].key == seed.ids_key && parsed[i].kind == io::FeatureKind::kInt64) ids = &parsed[i];
      if (specs[i].key == seed.values_key && parsed[i].kind == io::FeatureKind::kFloat) values = &parsed[i];
    }
    if (seed_layout && ids != nullptr && values != nullptr && ids->int64s.size() == values->floats.size()) {
      for (size_t k = 0; k < ids->int64s.size(); ++k) st.Add(k, ids->int64s[k], values->floats[k]);
      continue;
    }
    if (seed_layout && st.fields().empty()) seed_layout = false;
    if (seed_layout) continue;  // mixed layouts: the per-position stats stay as they are
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].key == seed.label_key) continue;
      auto [it, fresh] = slot.emplace(specs[i].key, slot.size());
      st.At(it->second, specs[i].key);
      for (float v : parsed[i].floats) st.AddValue(it->second, v);
      for (int64_t v : parsed[i].int64s) st.Add(it->second, v, static_cast<double>(v));
      for (const auto& b : parsed[i].bytes) st.AddIdHash(it->second, io::Hash64(b, 0));
    }
  }
  out["records"] = r->counters().records;
  json feats = json::array();
  for (const auto& f : summary.Features()) {
    json kinds = json::array();
    if (f.bytes_records) kinds.push_back("bytes");
    if (f.float_records) kinds.push_back("float");
    if (f.int64_records) kinds.push_back("int64");
    feats.push_back({{"name", f.key}, {"kinds", kinds}, {"present", f.present}, {"empty", f.empty},
                     {"min_length", f.min_count}, {"max_length", f.max_count}});
  }
  out["features"] = feats;
  out["duplicate_keys"] = summary.duplicate_keys();
  out["unknown_fields"] = summary.unknown_fields();
  out["field_layout"] = seed_layout && !st.fields().empty() ? "seed ids/values, per position" : "per feature key";
  AddFieldStats(st, &out);
  return out;
}

StatusOr<json> InspectLibSvm(Stream f, int32_t id_base, size_t max_line_bytes, json out) {
  io::LibSvmOptions o;
  o.max_line_bytes = max_line_bytes;
  o.variable_length = true;
  o.field_size = 1 << 16;
  o.id_base = id_base;
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::LibSvmReader::Open(std::move(f), o));
  std::vector<int64_t> ids(o.field_size);
  std::vector<float> vals(o.field_size);
  float label;
  int32_t n;
  int64_t min_fields = std::numeric_limits<int64_t>::max(), max_fields = 0;
  int64_t min_id = std::numeric_limits<int64_t>::max(), max_id = -1;
  uint64_t labels[2] = {0, 0};
  data::FieldStats st;  // field i = the i-th pair of a line; ids as written
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&label, ids.data(), vals.data(), &n));
    if (!more) break;
    min_fields = std::min<int64_t>(min_fields, n);
    max_fields = std::max<int64_t>(max_fields, n);
    for (int32_t i = 0; i < n; ++i) {
      min_id = std::min(min_id, ids[i]);
      max_id = std::max(max_id, ids[i]);
      st.Add(static_cast<size_t>(i), ids[i] + id_base, vals[i]);
    }
    ++labels[label > 0.5f];
  }
  const auto& k = r->counters();
  out["records"] = k.records;
  out["fields_per_line"] = {{"min", k.records ? min_fields : 0}, {"max", max_fields}};
  // Ids as written in the file (id_base added back).
  out["id_range"] = {{"min", max_id >= 0 ? min_id + id_base : 0}, {"max", max_id >= 0 ? max_id + id_base : 0}};
  out["id_base"] = id_base;
  out["labels"] = {{"0", labels[0]}, {"1", labels[1]}};
  out["skipped"] = {{"blank_lines", k.blank_lines}, {"comment_lines", k.comment_lines},
                    {"qid_tokens", k.qid_tokens}, {"trailing_comments", k.trailing_comments}};
  AddFieldStats(st, &out);
  AddTornTail(k.unterminated_last_line, &out);
  return out;
}

StatusOr<json> InspectCriteo(Stream f, data::RecordFormat fmt, size_t max_line_bytes, bool pad, json out) {
  io::CriteoReaderOptions o;
  o.format = fmt == data::RecordFormat::kCriteoCsv ? io::CriteoFormat::kCsv : io::CriteoFormat::kTsv;
  o.max_line_bytes = max_line_bytes;
  o.pad_missing_trailing = pad;
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::CriteoReader::Open(std::move(f), o));
  io::CriteoRow row;
  uint64_t labels[2] = {0, 0}, missing_num = 0, missing_cat = 0, negative = 0;
  data::FieldStats st;  // I1..I13: raw values; C1..C26: distinct categories
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&row));
    if (!more) break;
    ++labels[row.label > 0.5f];
    for (int i = 0; i < io::kCriteoNumeric; ++i) {
      st.At(static_cast<size_t>(i), "I" + std::to_string(i + 1));
      if (!row.has_numeric(i)) ++missing_num;
      else {
        if (row.numeric[i] < 0) ++negative;
        st.AddValue(static_cast<size_t>(i), row.numeric[i]);  // as written, before the log transform
      }
    }
    for (int j = 0; j < io::kCriteoCategorical; ++j) {
      missing_cat += !row.has_categorical(j);
      const size_t f = static_cast<size_t>(io::kCriteoNumeric + j);
      st.At(f, "C" + std::to_string(j + 1));
      st.AddIdHash(f, io::Hash64(row.categorical[j], 0));  // "" (missing) counts as one category
    }
  }
  const auto& k = r->counters();
  out["records"] = k.records;
  out["labels"] = {{"0", labels[0]}, {"1", labels[1]}};
  out["missing_integer_cells"] = missing_num;
  out["missing_categorical_cells"] = missing_cat;
  out["negative_integer_cells"] = negative;
  out["skipped"] = {{"header_lines", k.header_lines}, {"blank_lines", k.blank_lines}};
  if (pad) {  // --criteo-pad-missing-trailing: what it filled in (those cells count as missing above too)
    out["padded_rows"] = k.padded_rows;
    out["padded_cells"] = k.padded_cells;
  }
  out["field_layout"] = "I1..I13 raw values (before ctrain's log1p), C1..C26 distinct categories";
  AddFieldStats(st, &out, /*warn=*/false);
  AddTornTail(k.unterminated_last_line, &out);
  return out;
}

StatusOr<json> InspectLibFfm(Stream f, size_t max_line_bytes, json out) {
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::LibFfmReader::Open(std::move(f), max_line_bytes));
  float label;
  const std::vector<io::FfmTriple>* t;
  int64_t min_n = std::numeric_limits<int64_t>::max(), max_n = 0, max_field = -1, max_feature = -1;
  data::FieldStats st;  // field i = libFFM field id i (0-based, so named i + 1)
  uint64_t labels[2] = {0, 0};
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&label, &t));
    if (!more) break;
    min_n = std::min<int64_t>(min_n, t->size());
    max_n = std::max<int64_t>(max_n, t->size());
    for (const auto& x : *t) {
      max_field = std::max(max_field, x.field);
      max_feature = std::max(max_feature, x.feature);
      if (x.field >= 0 && x.field < (1 << 16)) st.Add(static_cast<size_t>(x.field), x.feature, x.value);
    }
    ++labels[label > 0.5f];
  }
  const auto& k = r->counters();
  out["records"] = k.records;
  out["triples_per_line"] = {{"min", k.records ? min_n : 0}, {"max", max_n}};
  out["max_field"] = max_field;
  out["max_feature"] = max_feature;
  out["labels"] = {{"0", labels[0]}, {"1", labels[1]}};
  out["skipped"] = {{"blank_or_comment_lines", k.skipped_lines}};
  AddFieldStats(st, &out);
  return out;
}

// True when `path` is a regular file that starts with the checkpoint magic.
bool IsCheckpointFile(const std::string& path) {
  if (data::IsStreamPath(path) || path.starts_with("pipe:")) return false;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char magic[8] = {};
  const size_t n = std::fread(magic, 1, sizeof magic, f);
  std::fclose(f);
  return n == sizeof magic && std::memcmp(magic, "CTRNCKPT", 8) == 0;
}

StatusOr<json> InspectCheckpoint(const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(train::Checkpoint ck, train::LoadCheckpoint(path));
  json tensors = json::array();
  for (const auto& t : ck.tensors)
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype == train::DType::kF32 ? "f32" : "i64"}, {"shape", t.shape}});
  json out{{"file", path}, {"format", "checkpoint"}, {"step", ck.step}, {"meta", ck.meta}, {"tensors", tensors}};
  if (ck.meta.contains("keyed_table")) {  // a keyed table (train/key_index.h): rows, counters, the delta chain
    json k = {{"counters", ck.meta["keyed_table"]}};
    const train::NamedTensor* keys = ck.Find("embeddings/keys");
    k["rows"] = keys != nullptr ? static_cast<int64_t>(keys->i64.size()) : 0;
    if (train::IsKeyedDelta(ck.meta)) {
      json chain = ck.meta["keyed_delta"];
      const train::NamedTensor* ev = ck.Find(train::kEvictedKeysTensor);
      chain["changed_keys"] = k["rows"];
      chain["evicted_keys"] = ev != nullptr ? static_cast<int64_t>(ev->i64.size()) : 0;
      StatusOr<train::Checkpoint> whole = train::WithKeyedBase(std::move(ck));
      if (whole.ok()) {
        k["rows"] = static_cast<int64_t>(whole->Find("embeddings/keys")->i64.size());
      } else {  // the file's own content is still shown; the rows need the base
        k["rows"] = nullptr;
        chain["base_error"] = std::string(whole.status().message());
      }
      k["incremental"] = chain;
    }
    out["keyed_table"] = k;
  }
  return out;
}

StatusOr<json> InspectOne(const std::string& path, const InspectFlags& fl) {
  CTRAIN_ASSIGN_OR_RETURN(io::Compression c, io::ParseCompression(fl.compression));
  CTRAIN_ASSIGN_OR_RETURN(data::RecordFormat fmt, data::ParseRecordFormat(fl.format));
  CTRAIN_RETURN_IF_ERROR(CheckMaxLineBytes(fl.max_line_bytes));
  if (fl.id_base < 0) return InvalidArgumentError("--id-base must be >= 0, got " + std::to_string(fl.id_base));
  const size_t mlb = static_cast<size_t>(fl.max_line_bytes);
  if (fmt == data::RecordFormat::kAuto && IsCheckpointFile(path)) return InspectCheckpoint(path);
  CTRAIN_ASSIGN_OR_RETURN(Stream raw, data::OpenInputPass(path, 0, fl.pipe_timeout_ms));
  CTRAIN_ASSIGN_OR_RETURN(data::SniffedStream in, data::SniffStream(std::move(raw), c, fmt));
  json out = {{"file", path},
              {"format", data::RecordFormatName(in.format)},
              {"compression", io::CompressionName(in.compression)}};
  if (in.empty) {  // no byte at all (after decompression): not a TFRecord with 0 records
    out["format"] = "empty";
    out["records"] = 0;
    return out;
  }
  if (fl.criteo_pad_missing_trailing) {  // a Criteo option: refused on another format, naming it
    data::ExampleReaderOptions ro;
    ro.criteo_pad_missing_trailing = true;
    CTRAIN_RETURN_IF_ERROR(data::CheckOptionsForFormat(path, in.format, ro));
  }
  switch (in.format) {
    case data::RecordFormat::kTFRecord: return InspectTFRecord(std::move(in.stream), std::move(out));
    case data::RecordFormat::kLibSvm: return InspectLibSvm(std::move(in.stream), fl.id_base, mlb, std::move(out));
    case data::RecordFormat::kLibFfm: return InspectLibFfm(std::move(in.stream), mlb, std::move(out));
    default: return InspectCriteo(std::move(in.stream), in.format, mlb, fl.criteo_pad_missing_trailing, std::move(out));
  }
}

void PrintCheckpoint(const json& j) {
  std::printf("%s: format=checkpoint step=%lld tensors=%zu\n", j["file"].get<std::string>().c_str(),
              j["step"].get<long long>(), j["tensors"].size());
  std::printf("  meta: %s\n", j["meta"].dump().c_str());
  if (j.contains("keyed_table")) {
    const json& k = j["keyed_table"];
    std::printf("  keyed table: %s rows; counters %s\n", k["rows"].is_null() ? "?" : k["rows"].dump().c_str(),
                k["counters"].dump().c_str());
    if (k.contains("incremental"))
      std::printf("  incremental checkpoint %d after the full %s (step %lld): %lld changed keys, %lld evicted keys\n",
                  k["incremental"].value("index", 0), k["incremental"].value("base", "").c_str(),
                  k["incremental"].value("base_step", 0LL), k["incremental"].value("changed_keys", 0LL),
                  k["incremental"].value("evicted_keys", 0LL));
    if (k.contains("incremental") && k["incremental"].contains("base_error"))
      std::printf("  its base cannot be read: %s\n", k["incremental"]["base_error"].get<std::string>().c_str());
  }
  for (const auto& t : j["tensors"])
    std::printf("  %-32s %s %s\n", t["name"].get<std::string>().c_str(), t["dtype"].get<std::string>().c_str(),
                t["shape"].dump().c_str());
}

void PrintFields(const json& j) {
  if (!j.contains("fields") || j["fields"].empty()) return;
  std::printf("  %-12s %10s %14s %14s %10s %12s\n", "field", "count", "value_min", "value_max", "distinct_v",
              "distinct_ids");
  size_t shown = 0;
  for (const auto& f : j["fields"]) {
    if (++shown > 64) {
      std::printf("  ... %zu more fields (see --json)\n", j["fields"].size() - 64);
      break;
    }
    auto num = [&](const char* k) {
      if (!f.contains(k)) return std::string("-");
      if (!f[k].is_number_float()) return f[k].dump();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.7g", f[k].get<double>());
      return std::string(buf);
    };
    std::string ids = num("distinct_ids");
    if (f.contains("distinct_ids_exact") && !f["distinct_ids_exact"].get<bool>()) ids = "~" + ids;
    std::printf("  %-12s %10s %14s %14s %10s %12s\n", f["field"].get<std::string>().c_str(), num("count").c_str(),
                num("value_min").c_str(), num("value_max").c_str(), num("distinct_values").c_str(), ids.c_str());
  }
  std::printf("  distinct counts: %s\n", j["distinct_method"].get<std::string>().c_str());
}

void PrintWarnings(const json& j) {
  if (!j.contains("warnings")) return;
  for (const auto& w : j["warnings"]) std::printf("  warning: %s\n", w.get<std::string>().c_str());
}

void PrintText(const json& j) {
  if (j["format"] == "checkpoint") return PrintCheckpoint(j);
  std::printf("%s: format=%s compression=%s records=%llu\n", j["file"].get<std::string>().c_str(),
              j["format"].get<std::string>().c_str(), j["compression"].get<std::string>().c_str(),
              static_cast<unsigned long long>(j["records"].get<uint64_t>()));
  if (j.contains("features")) {
    for (const auto& f : j["features"]) {
      std::string kinds;
      for (const auto& k : f["kinds"]) kinds += (kinds.empty() ? "" : "|") + k.get<std::string>();
      if (kinds.empty()) kinds = "(none)";
      std::printf("  %-28s %-12s len %lld..%lld  present %lld  empty %lld\n", f["name"].get<std::string>().c_str(),
                  kinds.c_str(), f["min_length"].get<long long>(), f["max_length"].get<long long>(),
                  f["present"].get<long long>(), f["empty"].get<long long>());
    }
  }
  for (const char* key : {"fields_per_line", "triples_per_line", "max_field", "max_feature", "id_range", "labels", "skipped"}) {
    if (!j.contains(key)) continue;
    std::printf("  %s: %s\n", key, j[key].dump().c_str());
  }
  for (const char* key : {"missing_integer_cells", "missing_categorical_cells", "negative_integer_cells", "padded_rows",
                          "padded_cells"})
    if (j.contains(key)) std::printf("  %s: %s\n", key, j[key].dump().c_str());
  if (j.contains("field_layout")) std::printf("  field_layout: %s\n", j["field_layout"].get<std::string>().c_str());
  PrintFields(j);
  PrintWarnings(j);
}

// The inputs of the arguments, expanded as `train --train` expands them
// (data/file_list.h); a model directory (holding a `checkpoint` index) stands
// for its latest checkpoint file.
StatusOr<std::vector<std::string>> ExpandInspectArgs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::error_code ec;
    if (a != "-" && !a.starts_with("pipe:") && std::filesystem::is_directory(a, ec) &&
        std::filesystem::exists(std::filesystem::path(a) / "checkpoint", ec)) {
      CTRAIN_ASSIGN_OR_RETURN(std::string latest, train::LatestCheckpointPath(a));
      out.push_back(std::move(latest));
      continue;
    }
    CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, data::ExpandFileList({a}));
    for (auto& f : files) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  auto fl = std::make_shared<InspectFlags>();
  CLI::App* sub = app.add_subcommand("inspect", "Read every record of FILEs; print format, compression, count and schema");
  sub->add_option("files", fl->files,
                  "Files, directories or globs to inspect, as for train ('-' = stdin; FIFOs; pipe:<dir>/<channel> "
                  "reads the SageMaker FIFO <channel>_0); a checkpoint file or model dir shows step, meta and tensors")
      ->required();
  sub->add_option("--format", fl->format, "auto|libsvm|tfrecord|criteo-tsv|criteo-csv|libffm")->capture_default_str();
  sub->add_option("--compression", fl->compression, "auto|none|gzip|zlib")->capture_default_str();
  sub->add_option("--pipe-timeout-ms,--pipe_timeout_ms", fl->pipe_timeout_ms,
                  "FIFOs and pipe: channels: longest wait for the FIFO, a writer, or the next byte (0 = no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--max-line-bytes,--max_line_bytes", fl->max_line_bytes,
                  "Text formats: longest line accepted; a longer one (or no newline within it) is an error")
      ->capture_default_str();
  sub->add_option("--id-base,--id_base", fl->id_base, "LibSVM id base (ids are reported as written)");
  sub->add_flag("--criteo-pad-missing-trailing,--criteo_pad_missing_trailing", fl->criteo_pad_missing_trailing,
                "Criteo text: read a row whose trailing empty cells were stripped (fewer than 40 cells) with the "
                "missing cells empty (counted as padded_rows)");
  sub->add_flag("--json", fl->json_out, "One JSON object per file (file, format, compression, records, ...)");
  sub->add_option("--suggest-spec,--suggest_spec", fl->suggest_spec,
                  "Write a starting feature spec (JSON, for --feature-spec) from the files' schema to this path "
                  "('-' = stdout): tf.Example TFRecords or libFFM");
  sub->add_option("--label-key,--label_key", fl->label_key,
                  "--suggest-spec: the label key (default: the first of label, click, clicked, y, target)");
  return {sub, [fl]() {
            int rc = 0;
            auto expanded = ExpandInspectArgs(fl->files);
            if (!expanded.ok()) return ReportError(expanded.status());
            if (!fl->suggest_spec.empty()) return SuggestSpec(*fl, *expanded);
            for (const auto& path : *expanded) {
              auto r = InspectOne(path, *fl);
              if (!r.ok()) {
                rc = ReportError(r.status());
                if (fl->json_out)
                  std::printf("%s\n", json({{"file", path}, {"error", r.status().ToString()}}).dump().c_str());
                continue;
              }
              if (fl->json_out)
                std::printf("%s\n", r->dump().c_str());
              else
                PrintText(*r);
            }
            return rc;
          }};
}

}  // namespace ctrain::cli
