#include "ctrain/data/batch_parser.h"

#include "ctrain/io/example.h"
#include "ctrain/io/libsvm.h"

namespace ctrain::data {

StatusOr<BatchParser> BatchParser::Create(const ExampleReaderOptions& options, SourceNameFn names) {
  if (options.field_size <= 0)
    return InvalidArgumentError("field_size must be positive, got " + std::to_string(options.field_size));
  BatchParser p;
  p.options_ = options;
  p.schema_ = options.schema;
  p.schema_.field_size = options.field_size;
  p.hash_.feature_size = options.feature_size;
  p.names_ = std::move(names);
  if (options.format == RecordFormat::kCriteoTsv || options.format == RecordFormat::kCriteoCsv) {
    if (options.field_size != io::kCriteoFields)
      return InvalidArgumentError("Criteo rows preprocess to 39 fields, but field_size is " +
                                  std::to_string(options.field_size));
    if (options.vocabulary == nullptr) CTRAIN_RETURN_IF_ERROR(io::ValidateCriteoHashOptions(p.hash_));
  }
  return p;
}

Status BatchParser::ParseOne(std::string_view rec, const RecordSource& src, float* label, int64_t* ids,
                             float* values) {
  const int32_t f = options_.field_size;
  switch (src.format) {
    case RecordFormat::kTFRecord: {
      Status s = io::ParseSeedExample(rec, schema_, label, ids, values);
      if (!s.ok())
        return s.WithContext(Name(src) + ": record " + std::to_string(src.index) + " at offset " +
                             std::to_string(src.offset));
      return s;
    }
    case RecordFormat::kLibSvm: {
      io::LibSvmOptions lo;
      lo.field_size = f;
      lo.id_base = options_.id_base;
      int32_t n = 0;
      io::LibSvmLineInfo info;
      Status s = io::ParseLibSvmLine(rec, lo, label, ids, values, &n, f, &info);
      if (!s.ok()) {  // parse again with the location, only to build the message
        const std::string name = Name(src);
        Status located = io::ParseLibSvmLine(rec, lo, label, ids, values, &n, f, &info,
                                             io::TextLocation{name, src.index});
        return located.ok() ? s : located;
      }
      if (info.kind != io::LineKind::kData)
        return InvalidArgumentError(Name(src) + ":" + std::to_string(src.index) + ": not a data line");
      return s;
    }
    case RecordFormat::kCriteoTsv:
    case RecordFormat::kCriteoCsv: {
      if (f != io::kCriteoFields)
        return InvalidArgumentError(Name(src) + ": Criteo rows preprocess to 39 fields, but field_size is " +
                                    std::to_string(f));
      const char sep = src.format == RecordFormat::kCriteoTsv ? '\t' : ',';
      const bool pad = options_.criteo_pad_missing_trailing;
      Status s = io::ParseCriteoLine(rec, sep, &row_, {}, true, pad);
      if (!s.ok()) {
        const std::string name = Name(src);
        Status located = io::ParseCriteoLine(rec, sep, &row_, io::TextLocation{name, src.index}, true, pad);
        return located.ok() ? s : located;
      }
      if (row_.padded_cells > 0 && padded_rows_ != nullptr) padded_rows_->fetch_add(1, std::memory_order_relaxed);
      *label = row_.label;
      if (options_.vocabulary != nullptr)
        options_.vocabulary->Featurize(row_, ids, values);
      else {
        if (hash_.feature_size <= io::kCriteoNumeric) CTRAIN_RETURN_IF_ERROR(io::ValidateCriteoHashOptions(hash_));
        io::HashCriteoRow(row_, hash_, ids, values);
      }
      return Status::OK();
    }
    case RecordFormat::kLibFfm:  // refused when the reader opened the file
    case RecordFormat::kAuto: break;
  }
  return InternalError(Name(src) + ": record with unresolved format");
}

Status BatchParser::ParseChecked(std::string_view rec, const RecordSource& src, float* label, int64_t* ids,
                                 float* values, uint64_t* oov) {
  CTRAIN_RETURN_IF_ERROR(ParseOne(rec, src, label, ids, values));
  const bool text = src.format != RecordFormat::kTFRecord;
  const IdRange range = IdRange::Of(options_, src.format == RecordFormat::kLibSvm ? options_.id_base : 0);
  return range.Apply(ids, options_.field_size, oov, [&] {
    return text ? Name(src) + ":" + std::to_string(src.index)
                : Name(src) + ": record " + std::to_string(src.index) + " at offset " + std::to_string(src.offset);
  });
}

Status BatchParser::Parse(const RawBatch& raw, Batch* out) {
  const int32_t f = options_.field_size;
  const size_t b = raw.size();
  out->field_size = f;
  out->row_splits.clear();
  out->field_splits.clear();
  out->labels.resize(b);
  out->ids.resize(b * f);
  out->values.resize(b * f);
  uint64_t oov = 0;
  for (size_t i = 0; i < b; ++i) {
    Status s = ParseChecked(raw.record(i), raw.sources[i], &out->labels[i], &out->ids[i * f], &out->values[i * f], &oov);
    if (s.ok()) [[likely]]
      continue;
    // Error path: the earliest bad record in file order among the rest of the batch.
    size_t first = i;
    for (size_t j = i + 1; j < b; ++j) {
      if (!EarlierInFileOrder(raw.sources[j], raw.sources[first])) continue;
      Status t = ParseChecked(raw.record(j), raw.sources[j], &out->labels[j], &out->ids[j * f], &out->values[j * f], &oov);
      if (!t.ok()) {
        first = j;
        s = std::move(t);
      }
    }
    if (observer_) observer_(raw.sources[first], s);
    return s;
  }
  if (oov > 0 && oov_ids_ != nullptr) oov_ids_->fetch_add(oov, std::memory_order_relaxed);
  return Status::OK();
}

}  // namespace ctrain::data
