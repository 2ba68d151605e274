// `ctrain inspect`: per file, the format, compression, record count and a schema
// summary. Reads every record, so a zero exit status means every file is intact.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/data/pipe_mode.h"
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
};

// Each inspector gets the already decompressed stream (opened once, so FIFOs and
// stdin work with format detection).
using Stream = std::unique_ptr<io::SequentialFile>;

StatusOr<json> InspectTFRecord(Stream f, json out) {
  io::TFRecordReaderOptions o;
  o.compression = io::Compression::kNone;
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(f), o));
  const std::string path = r->name();
  io::ExampleSchemaSummary summary;
  std::string_view rec;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&rec));
    if (!more) break;
    Status s = summary.Add(rec);
    if (!s.ok())
      return s.WithContext(path + ": record " + std::to_string(r->record_index()) + " at offset " +
                           std::to_string(r->record_offset()));
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
  return out;
}

StatusOr<json> InspectLibSvm(Stream f, int32_t id_base, json out) {
  io::LibSvmOptions o;
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
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&label, ids.data(), vals.data(), &n));
    if (!more) break;
    min_fields = std::min<int64_t>(min_fields, n);
    max_fields = std::max<int64_t>(max_fields, n);
    for (int32_t i = 0; i < n; ++i) {
      min_id = std::min(min_id, ids[i]);
      max_id = std::max(max_id, ids[i]);
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
  return out;
}

StatusOr<json> InspectCriteo(Stream f, data::RecordFormat fmt, json out) {
  io::CriteoReaderOptions o;
  o.format = fmt == data::RecordFormat::kCriteoCsv ? io::CriteoFormat::kCsv : io::CriteoFormat::kTsv;
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::CriteoReader::Open(std::move(f), o));
  io::CriteoRow row;
  uint64_t labels[2] = {0, 0}, missing_num = 0, missing_cat = 0, negative = 0;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&row));
    if (!more) break;
    ++labels[row.label > 0.5f];
    for (int i = 0; i < io::kCriteoNumeric; ++i) {
      if (!row.has_numeric(i)) ++missing_num;
      else if (row.numeric[i] < 0) ++negative;
    }
    for (int j = 0; j < io::kCriteoCategorical; ++j) missing_cat += !row.has_categorical(j);
  }
  const auto& k = r->counters();
  out["records"] = k.records;
  out["labels"] = {{"0", labels[0]}, {"1", labels[1]}};
  out["missing_integer_cells"] = missing_num;
  out["missing_categorical_cells"] = missing_cat;
  out["negative_integer_cells"] = negative;
  out["skipped"] = {{"header_lines", k.header_lines}, {"blank_lines", k.blank_lines}};
  return out;
}

StatusOr<json> InspectLibFfm(Stream f, json out) {
  CTRAIN_ASSIGN_OR_RETURN(auto r, io::LibFfmReader::Open(std::move(f)));
  float label;
  const std::vector<io::FfmTriple>* t;
  int64_t min_n = std::numeric_limits<int64_t>::max(), max_n = 0, max_field = -1, max_feature = -1;
  uint64_t labels[2] = {0, 0};
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&label, &t));
    if (!more) break;
    min_n = std::min<int64_t>(min_n, t->size());
    max_n = std::max<int64_t>(max_n, t->size());
    for (const auto& x : *t) {
      max_field = std::max(max_field, x.field);
      max_feature = std::max(max_feature, x.feature);
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
  return out;
}

StatusOr<json> InspectOne(const std::string& path, const InspectFlags& fl) {
  CTRAIN_ASSIGN_OR_RETURN(io::Compression c, io::ParseCompression(fl.compression));
  CTRAIN_ASSIGN_OR_RETURN(data::RecordFormat fmt, data::ParseRecordFormat(fl.format));
  CTRAIN_ASSIGN_OR_RETURN(Stream raw, data::OpenInputPass(path, 0, fl.pipe_timeout_ms));
  CTRAIN_ASSIGN_OR_RETURN(data::SniffedStream in, data::SniffStream(std::move(raw), c, fmt));
  json out = {{"file", path},
              {"format", data::RecordFormatName(in.format)},
              {"compression", io::CompressionName(in.compression)}};
  switch (in.format) {
    case data::RecordFormat::kTFRecord: return InspectTFRecord(std::move(in.stream), std::move(out));
    case data::RecordFormat::kLibSvm: return InspectLibSvm(std::move(in.stream), fl.id_base, std::move(out));
    case data::RecordFormat::kLibFfm: return InspectLibFfm(std::move(in.stream), std::move(out));
    default: return InspectCriteo(std::move(in.stream), in.format, std::move(out));
  }
}

void PrintText(const json& j) {
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
  for (const char* key : {"missing_integer_cells", "missing_categorical_cells", "negative_integer_cells"})
    if (j.contains(key)) std::printf("  %s: %s\n", key, j[key].dump().c_str());
}

}  // namespace

Command AddInspectCommand(CLI::App& app) {
  auto fl = std::make_shared<InspectFlags>();
  CLI::App* sub = app.add_subcommand("inspect", "Read every record of FILEs; print format, compression, count and schema");
  sub->add_option("files", fl->files, "Files to inspect ('-' = stdin; FIFOs; pipe:<dir>/<channel> reads the SageMaker FIFO <channel>_0)")->required();
  sub->add_option("--format", fl->format, "auto|libsvm|tfrecord|criteo-tsv|criteo-csv|libffm")->capture_default_str();
  sub->add_option("--compression", fl->compression, "auto|none|gzip|zlib")->capture_default_str();
  sub->add_option("--pipe-timeout-ms,--pipe_timeout_ms", fl->pipe_timeout_ms,
                  "FIFOs and pipe: channels: longest wait for the FIFO, a writer, or the next byte (0 = no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--id-base,--id_base", fl->id_base, "LibSVM id base (ids are reported as written)");
  sub->add_flag("--json", fl->json_out, "One JSON object per file (file, format, compression, records, ...)");
  return {sub, [fl]() {
            int rc = 0;
            for (const auto& path : fl->files) {
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
