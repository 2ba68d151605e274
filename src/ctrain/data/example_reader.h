// Format-agnostic reading and writing of CTR examples in the seed's fixed
// layout: label in {0,1}, ids int64[F], values float[F] (F = field_size).
//
// Formats (docs/formats/*.md):
//   libsvm      "label id:val ..." (io/libsvm.h), optionally gzip/zlib compressed
//   tfrecord    TFRecord of tf.train.Example, seed schema (io/tfrecord.h, io/example.h)
//   criteo-tsv  raw Criteo rows, 40 tab-separated columns (io/criteo.h), preprocessed
//   criteo-csv  the same comma-separated with a "label,I1,..." header
// into the 39-field layout by feature hashing (feature_size buckets) or by a
// vocabulary (feature map).
//
// Every error names the file and the line (text) or record index and byte offset
// (TFRecord). Thread safety: one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/compression.h"
#include "ctrain/io/criteo.h"
#include "ctrain/io/example.h"
#include "ctrain/io/file.h"

namespace ctrain::data {

// kLibFfm ("label field:feature:value ...") is recognised here but not read:
// its fields hold several ids, which the fixed F-field layout below has no
// place for; a feature spec reads it as multi-hot fields (data/spec_reader.h,
// `ctrain inspect FILE --suggest-spec spec.json` writes one).
enum class RecordFormat { kAuto, kLibSvm, kTFRecord, kCriteoTsv, kCriteoCsv, kLibFfm };

// "auto", "libsvm", "tfrecord", "criteo-tsv", "criteo-csv", "libffm" (underscores accepted).
StatusOr<RecordFormat> ParseRecordFormat(std::string_view name);
std::string_view RecordFormatName(RecordFormat f);

// "<name>: libFFM (field:feature:value) is read through a feature spec ...":
// the error of the fixed-layout readers for a libFFM input, with the commands
// that train it (inspect --suggest-spec, then --feature-spec).
std::string LibFfmNeedsSpecMessage(const std::string& name);

struct ExampleReaderOptions {
  RecordFormat format = RecordFormat::kAuto;     // kAuto: sniffed from the (decompressed) bytes
  io::Compression compression = io::Compression::kAuto;
  int32_t field_size = 39;                       // F: every example must have exactly F features
  int32_t id_base = 0;                           // libsvm: ids in the file start at this value
  io::SeedSchema schema;                         // tfrecord feature keys (field_size is taken from above)
  // Criteo: number of hash buckets (ids land in [0, feature_size)); ignored with a vocabulary.
  int64_t feature_size = 117581;
  const io::CriteoVocabulary* vocabulary = nullptr;  // Criteo: map categories via this vocabulary
  bool skip_corrupt_records = false;             // tfrecord: skip CRC-corrupt records (counted)
  uint64_t max_skipped_records = 0;              // cap for the above; exceeding it is an error
  // When > 0, every id must lie in [0, id_limit) (the trainer passes its
  // feature_size); otherwise InvalidArgument naming the file, line or record,
  // the field and the id as written in the file.
  int64_t id_limit = 0;
  // The limit is a trained model's feature_size (eval/predict): the range
  // error then does not suggest --feature-size, which cannot change it.
  bool id_limit_is_model = false;
  // --oov bucket: an id at or above id_limit in field f is read as id_limit + f,
  // that field's out-of-vocabulary row (the model's table has id_limit +
  // field_size rows), and counted (ExampleReader::oov_ids, the pipeline's
  // oov_ids); a negative id or one below id_base is still an error.
  bool oov_buckets = false;
  // FIFOs and pipe:<channel> inputs: the longest wait in ms for the FIFO to
  // appear, a writer to connect, and each next byte (pipe_mode.h); 0 = no
  // limit. The pipeline sets it from PipelineOptions::pipe_timeout_ms.
  int64_t pipe_timeout_ms = 60000;
  // Text formats: the longest line accepted (io::LineReader); a longer one, or
  // no newline within this many bytes, is InvalidArgument "<file>:<line>: line
  // longer than N bytes ...". Bounds the memory a text input can take.
  size_t max_line_bytes = io::kDefaultMaxLineBytes;
  // LibSVM and Criteo text: whether records start with a label (io/label_mode.h;
  // `ctrain predict` reads with kAuto, --no-label = kAbsent). An unlabelled
  // record's label is NaN. TFRecord always reads the label key (kAbsent is
  // InvalidArgument there).
  io::LabelMode labels = io::LabelMode::kRequired;
  // Criteo text: rows whose trailing empty cells were stripped (fewer than 40
  // cells) read the missing cells as empty, counted (CriteoReader's
  // padded_rows, the pipeline's criteo_padded_rows); off = such a row is an
  // error naming --criteo-pad-missing-trailing (io/criteo.h).
  bool criteo_pad_missing_trailing = false;
};

// The options that apply to some formats only, checked once a file's format is
// known (memory readers, the pipeline's record readers, byte-range splits):
// InvalidArgument, starting "<name>: ", for libFFM without a feature spec
// (LibFfmNeedsSpecMessage), --no-label on TFRecord (its label is a feature of
// the example), and --criteo-pad-missing-trailing on anything but Criteo text.
Status CheckOptionsForFormat(const std::string& name, RecordFormat format, const ExampleReaderOptions& options);

// The error of the id-range rule (IdRange below) for field f (0-based) of
// `field_size` holding `id`. `where` is the location prefix ("file:line" or
// "file: record i at offset o"). The hint names the likely cause: an id one
// past the top with id_base 0 or an id below id_base points at --id-base, not
// at --feature-size; with `limit_is_model` (eval/predict) it never suggests
// --feature-size.
Status IdRangeError(int32_t f, int32_t field_size, int64_t id, int64_t id_limit, int32_t id_base,
                    std::string_view where, bool limit_is_model);

// The id-range rule of ExampleReaderOptions (id_limit, id_base,
// id_limit_is_model, oov_buckets) as the readers apply it to each example.
struct IdRange {
  int64_t limit = 0;  // 0 = no check
  int32_t base = 0;   // LibSVM's id base (messages give ids as written)
  bool limit_is_model = false;
  bool oov_buckets = false;

  static IdRange Of(const ExampleReaderOptions& o, int32_t base) {
    return {o.id_limit, base, o.id_limit_is_model, o.oov_buckets};
  }
  // OK when every id of `ids` [n] lies in [0, limit). With oov_buckets an id
  // >= limit in field f becomes limit + f and is counted in *oov. Otherwise
  // IdRangeError, located by where() (called only then).
  template <class Where>
  Status Apply(int64_t* ids, int32_t n, uint64_t* oov, const Where& where) const {
    if (limit <= 0) return Status::OK();
    for (int32_t f = 0; f < n; ++f) {
      if (ids[f] >= 0 && ids[f] < limit) [[likely]]
        continue;
      if (oov_buckets && ids[f] >= limit) {
        ids[f] = limit + f;
        ++*oov;
        continue;
      }
      return IdRangeError(f, n, ids[f], limit, base, where(), limit_is_model);
    }
    return Status::OK();
  }
};

class ExampleReader {
 public:
  virtual ~ExampleReader() = default;
  // Reads the next example. REQUIRES: ids/values hold field_size entries.
  // Returns false at the end of the input.
  virtual StatusOr<bool> Next(float* label, int64_t* ids, float* values) = 0;
  virtual RecordFormat format() const = 0;
  virtual io::Compression compression() const = 0;
  virtual const std::string& name() const = 0;
  // Examples returned so far.
  virtual uint64_t records() const = 0;
  // Items skipped on purpose (blank/comment lines, CSV header, corrupt records), by kind.
  virtual std::string SkippedSummary() const = 0;
  // Ids read as their field's out-of-vocabulary row so far (ExampleReaderOptions::oov_buckets).
  uint64_t oov_ids() const { return oov_ids_; }
  // Where the example last returned by Next() came from: "file:line" (text
  // formats) or "file: record i at offset o" (TFRecord). Default: the name and
  // the 1-based example number.
  virtual std::string Location() const { return name() + ": example " + std::to_string(records()); }

  // Records dropped on purpose (TFRecord skip_corrupt_records) since the last
  // call, in stream order. `records_before` = examples returned before the
  // drop (where it sits among them); `index`/`offset` = 0-based record index
  // and offset (uncompressed stream) where the dropped region starts; `bytes`
  // its length. `records` is the count the reader skipped; `exact` is false
  // when the region began at a corrupt length header, so it may have held
  // more records than counted.
  struct Dropped {
    uint64_t records_before = 0;
    uint64_t index = 0, offset = 0, bytes = 0, records = 0;
    bool exact = true;
  };
  virtual std::vector<Dropped> TakeDropped() { return {}; }
  // The (decompressed) input holds no byte at all; format() then says tfrecord.
  bool empty_input() const { return empty_input_; }

 protected:
  uint64_t oov_ids_ = 0;

 private:
  friend StatusOr<std::unique_ptr<ExampleReader>> OpenExampleReader(const std::string&, const ExampleReaderOptions&);
  bool empty_input_ = false;
};

// Opens `path` ("-" = stdin). With format kAuto the first decompressed bytes decide:
// a valid TFRecord header -> tfrecord; "label," header -> criteo-csv; a first
// data line with "id:value" tokens -> libsvm, unless most ':' tokens of the
// first lines are "field:feature:value" -> libffm (which this reader refuses
// with InvalidArgument LibFfmNeedsSpecMessage; one malformed token does not make a file libFFM);
// tab-separated -> criteo-tsv. Text with a few stray control bytes (one, or 1
// in 64 of the first 4 KB, not the first byte) is still sniffed as text, so the
// parser names the byte's file:line:col. An empty input reads zero records.
StatusOr<std::unique_ptr<ExampleReader>> OpenExampleReader(const std::string& path,
                                                           const ExampleReaderOptions& options);

// Decompresses `raw` (compression kAuto detects gzip/zlib) and, when `requested`
// is kAuto, sniffs the record format from the first decompressed bytes with the
// rule above. The returned stream starts at byte 0 (peeked bytes are replayed,
// so pipes and FIFOs work). Shared by ExampleReader and the pipeline's raw readers.
// A tfrecord read as uncompressed whose first bytes are not a TFRecord header
// but a gzip/zlib signature is InvalidArgument "<file>: not a TFRecord ...; the
// file starts like a zlib stream, read as uncompressed: <zlib error> (pass
// --compression zlib ...)". Decompressed text (or auto-detected) bytes that
// start like another gzip/zlib stream are InvalidArgument "<file>: the
// gzip-decompressed bytes start like another gzip stream: compressed twice? ...".
struct SniffedStream {
  std::unique_ptr<io::SequentialFile> stream;  // decompressed
  io::Compression compression = io::Compression::kNone;  // of the raw bytes
  RecordFormat format = RecordFormat::kAuto;             // never kAuto on success
  // The decompressed stream holds no byte at all (set when the format was
  // sniffed or is tfrecord; `format` is then kTFRecord, which reads zero records).
  bool empty = false;
};
StatusOr<SniffedStream> SniffStream(std::unique_ptr<io::SequentialFile> raw, io::Compression compression,
                                    RecordFormat requested);

// The format and compression `path` would be read with (consumes nothing on
// regular files). An explicit `requested` format is honoured, never sniffed:
// only the compression is detected then.
struct SniffResult {
  RecordFormat format = RecordFormat::kAuto;
  io::Compression compression = io::Compression::kNone;
};
StatusOr<SniffResult> SniffFile(const std::string& path, io::Compression compression = io::Compression::kAuto,
                                RecordFormat requested = RecordFormat::kAuto);

struct ExampleWriterOptions {
  RecordFormat format = RecordFormat::kTFRecord;  // libsvm or tfrecord
  io::Compression compression = io::Compression::kNone;
  int32_t id_base = 0;      // libsvm: written id = id + id_base
  io::SeedSchema schema;    // tfrecord keys
  bool atomic = true;       // write to a temporary file and rename on Close()
};

// Writers never write what their readers reject: Write checks the example
// against the rules of the reader of its format (OpenExampleReader with the
// same id_base and field_size = ids.size()) and refuses, writing nothing, with
// InvalidArgument naming the field:
//   "label 0.5 is not 0 or 1"                      (both formats)
//   "field 2: value nan is not finite"             (both formats)
//   "no fields: a record needs at least one"       (both formats)
//   "3 ids but 2 values"                           (both formats)
//   "field 1: id -1 is negative"                   (libsvm: no sign in the syntax)
//   "field 1: id 9223372036854775807 + output id base 1 does not fit in int64" (libsvm)
// A TFRecord keeps any int64 id (negative ones too) exactly. Callers add the
// input's location (ExampleReader::Location()).
Status CheckWritable(RecordFormat format, float label, std::span<const int64_t> ids,
                     std::span<const float> values, int32_t id_base);

class ExampleWriter {
 public:
  virtual ~ExampleWriter() = default;
  // Errors: CheckWritable's (nothing is written then), the file's.
  virtual Status Write(float label, std::span<const int64_t> ids, std::span<const float> values) = 0;
  virtual Status Close() = 0;
  virtual uint64_t records() const = 0;
};

StatusOr<std::unique_ptr<ExampleWriter>> OpenExampleWriter(const std::string& path,
                                                           const ExampleWriterOptions& options);

}  // namespace ctrain::data
