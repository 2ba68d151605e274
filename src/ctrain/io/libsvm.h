// LibSVM text format: "label id:value id:value ...", one example per line.
// The full syntax, the label mapping and every error message are in
// docs/formats/libsvm.md. Summary:
//
//   * Positional fields: the i-th "id:value" pair of a line is field i (the
//     seed's feat_ids/feat_vals layout, data::Batch). Ids are kept as written
//     (minus id_base): never sorted or de-duplicated — real files repeat an id
//     in two fields (criteo_deepfm_va10k.libsvm has "13:x 13:1" on 468 lines).
//   * Label: any decimal spelling whose value is exactly 1 -> 1; exactly 0 or
//     -1 -> 0 ("1", "+1", "1.0", "0", "-1", "-1.0", "0e0"...). Anything else
//     (2, 0.5, nan, text) is an error.
//   * Whitespace is any run of ' ', '\t', '\r', '\v', '\f' (so CRLF files and
//     trailing blanks are fine). '#' starts a comment that runs to the end of
//     the line. A "qid:N" token right after the label (SVMrank) is ignored and
//     counted.
//   * Blank and comment-only lines are skipped and counted.
//   * Fixed length (default): every data line has exactly field_size pairs.
//     variable_length: 0..field_size pairs (field_size is then the maximum
//     row length, as in data::Batch).
//   * Values: decimal floats with optional exponent, correctly rounded to
//     float; nan/inf and values outside float range are errors. Ids:
//     non-negative decimal integers fitting int64, >= id_base.
//
// Errors are InvalidArgument with the message "<file>:<line>:<column>: <what>"
// (see text_location.h), e.g.
//   "data.libsvm:17:5: expected 'id:value', found 'abc'".
//
// Thread safety: ParseLibSvmLine and AppendLibSvmLine are pure; a
// LibSvmReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"
#include "ctrain/io/file.h"
#include "ctrain/io/label_mode.h"
#include "ctrain/io/text_location.h"

namespace ctrain::io {

struct LibSvmOptions {
  // Pairs per line (fixed length), or the maximum pairs per line
  // (variable_length). Default: the seed's Criteo layout (13 + 26). Must be >= 0.
  int32_t field_size = 39;
  // Allow 0..field_size pairs per line (a label-only line is a row with no
  // features). Default false: a different pair count is an error.
  bool variable_length = false;
  // Ids in the file start at this base: parsed id = written id - id_base, and
  // a written id < id_base is an error. 1 for the classic LIBSVM/XGBoost
  // files (agaricus, criteo_deepfm_va10k). Never guessed. Must be >= 0.
  int32_t id_base = 0;
  // Longest line accepted (file.h's LineReader): a longer one is an error.
  size_t max_line_bytes = kDefaultMaxLineBytes;
  // Whether lines start with a label (label_mode.h). ParseLibSvmLine with
  // kAuto decides per line (first token without ':' = a label); LibSvmReader
  // fixes the mode at the first data line. Unlabelled lines give label NaN.
  LabelMode labels = LabelMode::kRequired;
};

enum class LineKind {
  kData,     // a label (and pairs): an example
  kBlank,    // empty or whitespace only
  kComment,  // first non-blank character is '#'
};

// What ParseLibSvmLine saw besides the example itself (for counters).
struct LibSvmLineInfo {
  LineKind kind = LineKind::kBlank;
  int32_t qid_tokens = 0;          // "qid:N" tokens skipped
  bool trailing_comment = false;   // a '#' comment after the data
};

// Parses one line (without its '\n'; a trailing '\r' is whitespace).
// On a data line writes *label (0 or 1), ids[0..n), values[0..n) and
// *num_fields = n. On blank/comment lines writes only *num_fields = 0.
// Never allocates except to build an error.
// REQUIRES: capacity >= options.field_size (else InvalidArgument, a caller bug).
// Errors: InvalidArgument "<where>:<column>: <what>" (the message list is in
// docs/formats/libsvm.md). `where` only feeds error messages.
Status ParseLibSvmLine(std::string_view line, const LibSvmOptions& options, float* label,
                       int64_t* ids, float* values, int32_t* num_fields, int32_t capacity,
                       LibSvmLineInfo* info, const TextLocation& where = {});

// Appends one line, '\n'-terminated: label as "1" if label >= 0.5 else "0",
// then " id:value" per pair with id written as ids[i] + id_base and value in
// the shortest form that parses back to the same float (std::to_chars).
// Parsing the result with the same id_base gives back identical
// ids/values/label, and re-writing gives identical bytes.
// REQUIRES: ids.size() == values.size(); values finite; ids >= 0.
void AppendLibSvmLine(float label, std::span<const int64_t> ids, std::span<const float> values,
                      int32_t id_base, std::string* out);

// Reads examples from a LibSVM file, skipping (and counting) blank and comment
// lines.
class LibSvmReader {
 public:
  struct Counters {
    uint64_t lines = 0;              // lines read, all kinds
    uint64_t records = 0;            // data lines returned
    uint64_t blank_lines = 0;        // skipped
    uint64_t comment_lines = 0;      // skipped
    uint64_t qid_tokens = 0;         // "qid:N" tokens ignored
    uint64_t trailing_comments = 0;  // data lines that ended in a '#' comment (ignored)
    uint64_t unterminated_last_line = 0;  // 1: the last line has no '\n' (a cut file?); read as written
  };

  // Errors: those of OpenSequentialFile; InvalidArgument for bad options.
  // read_buffer_size: initial LineReader buffer (it grows to fit a longer line).
  static StatusOr<std::unique_ptr<LibSvmReader>> Open(const std::string& path,
                                                      const LibSvmOptions& options,
                                                      size_t read_buffer_size = 1 << 20);
  static StatusOr<std::unique_ptr<LibSvmReader>> Open(std::unique_ptr<SequentialFile> file,
                                                      const LibSvmOptions& options,
                                                      size_t read_buffer_size = 1 << 20);

  // Reads the next example. REQUIRES: ids and values have room for
  // options.field_size entries. Returns false at end of file. Errors are
  // InvalidArgument "<file>:<line>:<column>: <what>" (or the file's read
  // error) and are sticky: every later call returns the same error.
  StatusOr<bool> Next(float* label, int64_t* ids, float* values, int32_t* num_fields);

  uint64_t line_number() const { return lines_.line_number(); }  // of the last line read
  uint64_t line_offset() const { return lines_.line_offset(); }  // its byte offset
  const Counters& counters() const { return counters_; }
  const std::string& name() const { return file_->name(); }
  const LibSvmOptions& options() const { return options_; }
  // kRequired or kAbsent once a data line was read with LabelMode::kAuto.
  LabelMode labels() const { return options_.labels; }

 private:
  LibSvmReader(std::unique_ptr<SequentialFile> file, const LibSvmOptions& options, size_t read_buffer_size);

  std::unique_ptr<SequentialFile> file_;
  LineReader lines_;
  LibSvmOptions options_;  // labels: kAuto until the first data line fixes it
  uint64_t labels_decided_at_ = 0;  // the line that fixed a kAuto label mode (0 = not auto)
  Counters counters_;
  Status status_;
};

// Checks option ranges (field_size >= 0, id_base >= 0).
Status ValidateLibSvmOptions(const LibSvmOptions& options);

}  // namespace ctrain::io
