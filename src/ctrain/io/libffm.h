// libFFM text (Juan et al. 2016, "Field-aware Factorization Machines"; the
// format of libffm and xLearn):
//   label field:feature:value field:feature:value ...
// Whitespace-separated (spaces/tabs, CRLF accepted); fields and features are
// non-negative integers as written (no base is applied); values are finite
// floats; labels follow the LibSVM rule (1 -> 1; 0 or -1 -> 0). Blank lines and
// lines starting with '#' are skipped and counted. Fields need not be sorted
// and may repeat (real xLearn files do both).
//
// `inspect` reads libFFM; train/eval/predict read it through a feature spec
// (data/feature_spec.h: one multi-hot field per field number). Errors: InvalidArgument "<file>:<line>:<column>: <what>".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/file.h"
#include "ctrain/io/text_location.h"

namespace ctrain::io {

struct FfmTriple {
  int64_t field = 0;
  int64_t feature = 0;
  float value = 0;
};

// Parses one data line into *label and *triples (cleared first). Returns
// *is_data = false (and OK) for blank and comment lines.
Status ParseLibFfmLine(std::string_view line, float* label, std::vector<FfmTriple>* triples, bool* is_data,
                       const TextLocation& where = {});

class LibFfmReader {
 public:
  struct Counters {
    uint64_t lines = 0;
    uint64_t records = 0;
    uint64_t skipped_lines = 0;  // blank or comment lines
  };
  // max_line_bytes: longest line accepted (file.h's LineReader).
  static StatusOr<std::unique_ptr<LibFfmReader>> Open(std::unique_ptr<SequentialFile> file,
                                                      size_t max_line_bytes = kDefaultMaxLineBytes);
  // The next example; false at end of input. The triples stay valid until the next call.
  StatusOr<bool> Next(float* label, const std::vector<FfmTriple>** triples);
  const Counters& counters() const { return counters_; }
  const std::string& name() const { return file_->name(); }

 private:
  LibFfmReader(std::unique_ptr<SequentialFile> file, size_t max_line_bytes)
      : file_(std::move(file)), lines_(file_.get(), 1 << 20, max_line_bytes) {}
  std::unique_ptr<SequentialFile> file_;
  LineReader lines_;
  std::vector<FfmTriple> triples_;
  Counters counters_;
};

}  // namespace ctrain::io
