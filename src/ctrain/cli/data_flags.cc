#include "ctrain/cli/data_flags.h"

#include <cstdio>

namespace ctrain::cli {

void DataFlags::Register(CLI::App* app, bool with_feature_size, const std::string& compression_flag) {
  app->add_option("--format", format, "Input format: auto|libsvm|tfrecord|criteo-tsv|criteo-csv")
      ->capture_default_str();
  app->add_option(compression_flag, compression, "Input compression: auto|none|gzip|zlib")->capture_default_str();
  app->add_option("--field-size,--field_size", field_size, "Features per example (F)")->capture_default_str();
  app->add_option("--id-base,--id_base", id_base,
                  "LibSVM: ids in the file start at this value (1 for classic LIBSVM files); never guessed")
      ->capture_default_str();
  if (with_feature_size)
    app->add_option("--feature-size,--feature_size", feature_size,
                    "Number of feature ids (Criteo hash buckets)")->capture_default_str();
  app->add_option("--feature-map,--feature_map", feature_map,
                  "Criteo: map categories with this feature map (name id per line) instead of hashing");
  app->add_flag("--skip-corrupt-records,--skip_corrupt_records", skip_corrupt_records,
                "TFRecord: skip records whose CRC does not match (counted, capped)");
  app->add_option("--max-skipped-records,--max_skipped_records", max_skipped_records,
                  "Cap for --skip-corrupt-records, per input file (each TFRecord file counts its own skips); one more is "
                  "an error. 0 = no limit")->capture_default_str();
  app->add_option("--pipe-timeout-ms,--pipe_timeout_ms", pipe_timeout_ms,
                  "FIFOs and pipe:<dir>/<channel>: longest wait for the FIFO to appear, a writer to connect, "
                  "or the next byte (0 = no limit)")
      ->capture_default_str();
  app->add_option("--max-line-bytes,--max_line_bytes", max_line_bytes,
                  "Text formats: longest line accepted; a longer one (or no newline within it) is an error")
      ->capture_default_str();
}

Status CheckMaxLineBytes(int64_t n) {
  if (n < 1 || n > (int64_t{1} << 40))
    return InvalidArgumentError("--max-line-bytes must be in [1, 2^40], got " + std::to_string(n));
  return Status::OK();
}

StatusOr<data::ExampleReaderOptions> DataFlags::ReaderOptions() {
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
  if (!feature_map.empty()) {
    if (!vocab_ || vocab_path_ != feature_map) {  // eval/predict may set the map after a first call
      CTRAIN_ASSIGN_OR_RETURN(auto v, io::CriteoVocabulary::LoadFeatureMap(feature_map));
      vocab_ = std::make_unique<io::CriteoVocabulary>(std::move(v));
      vocab_path_ = feature_map;
    }
    o.vocabulary = vocab_.get();
  }
  return o;
}

int ReportError(const Status& s) {
  std::fprintf(stderr, "ctrain: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace ctrain::cli
