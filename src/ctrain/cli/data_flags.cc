#include "ctrain/cli/data_flags.h"
#include "ctrain/base/log.h"

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
  app->add_flag("--criteo-pad-missing-trailing,--criteo_pad_missing_trailing", criteo_pad_missing_trailing,
                "Criteo text: read a row whose trailing empty cells were stripped (fewer than 40 cells) with the "
                "missing cells empty (counted as padded_rows)");
}

int ReportError(const Status& s) {
  Logf("%s\n", s.ToString().c_str());
  return 1;
}

}  // namespace ctrain::cli
