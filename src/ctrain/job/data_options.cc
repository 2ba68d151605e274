#include "ctrain/job/data_options.h"

namespace ctrain::job {

Status CheckMaxLineBytes(int64_t n) {
  if (n < 1 || n > (int64_t{1} << 40))
    return InvalidArgumentError("--max-line-bytes must be in [1, 2^40], got " + std::to_string(n));
  return Status::OK();
}

StatusOr<data::ExampleReaderOptions> DataOptions::ReaderOptions() {
  data::ExampleReaderOptions o;
  CTRAIN_ASSIGN_OR_RETURN(o.format, data::ParseRecordFormat(format));
  CTRAIN_ASSIGN_OR_RETURN(o.compression, io::ParseCompression(compression));
  // Ranges, named by flag (a bad value must never fall back to a default).
  if (field_size < 1 || field_size > kMaxFieldSize)
    return InvalidArgumentError("--field-size must be in [1, " + std::to_string(kMaxFieldSize) + "], got " +
                                std::to_string(field_size));
  if (id_base < 0) return InvalidArgumentError("--id-base must be >= 0, got " + std::to_string(id_base));
  if (feature_size < 1) return InvalidArgumentError("--feature-size must be >= 1, got " + std::to_string(feature_size));
  o.field_size = field_size;
  o.id_base = id_base;
  o.feature_size = feature_size;
  o.skip_corrupt_records = skip_corrupt_records;
  o.max_skipped_records = max_skipped_records;
  if (pipe_timeout_ms < 0) return InvalidArgumentError("--pipe-timeout-ms must be >= 0, got " + std::to_string(pipe_timeout_ms));
  o.pipe_timeout_ms = pipe_timeout_ms;
  CTRAIN_RETURN_IF_ERROR(CheckMaxLineBytes(max_line_bytes));
  o.max_line_bytes = static_cast<size_t>(max_line_bytes);
  o.criteo_pad_missing_trailing = criteo_pad_missing_trailing;
  if (oov != "error" && oov != "bucket")
    return InvalidArgumentError("--oov: expected error or bucket, got '" + oov + "'");
  o.oov_buckets = oov == "bucket";
  if (!feature_map.empty()) {
    if (!vocab_ || vocab_path_ != feature_map) {  // eval/predict may set the map after a first call
      CTRAIN_ASSIGN_OR_RETURN(auto v, io::CriteoVocabulary::LoadFeatureMap(feature_map));
      vocab_ = std::make_shared<io::CriteoVocabulary>(std::move(v));
      vocab_path_ = feature_map;
    }
    o.vocabulary = vocab_.get();
  }
  return o;
}

}  // namespace ctrain::job
