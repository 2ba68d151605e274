#include "ctrain/data/raw_record_reader.h"

#include <algorithm>
#include <cstring>

#include "ctrain/data/pipe_mode.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {
namespace {

class TFRecordRawReader final : public RawRecordReader {
 public:
  TFRecordRawReader(std::unique_ptr<io::TFRecordReader> r, io::Compression c) : r_(std::move(r)), c_(c) {}
  StatusOr<bool> Next(std::string_view* record, uint64_t* index, uint64_t* offset) override {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(record));
    if (!more) return false;
    *index = r_->record_index();
    *offset = r_->record_offset();
    ++counters_.records;
    counters_.bytes += record->size();
    return true;
  }
  RecordFormat format() const override { return RecordFormat::kTFRecord; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return r_->name(); }
  Counters counters() const override {
    Counters c = counters_;
    c.corrupt_records = r_->counters().skipped_records;
    return c;
  }

 private:
  std::unique_ptr<io::TFRecordReader> r_;
  io::Compression c_;
  Counters counters_;
};

class TextRawReader final : public RawRecordReader {
 public:
  TextRawReader(std::unique_ptr<io::SequentialFile> f, io::Compression c, RecordFormat fmt, size_t max_line_bytes)
      : file_(std::move(f)), lines_(file_.get(), 1 << 20, max_line_bytes), c_(c), format_(fmt) {}
  StatusOr<bool> Next(std::string_view* record, uint64_t* index, uint64_t* offset) override {
    std::string_view line;
    while (true) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, lines_.Next(&line));
      if (!more) return false;
      if (lines_.last_line_unterminated()) counters_.unterminated_last_lines = 1;
      size_t first = line.find_first_not_of(" \t\r\v\f");
      if (first == std::string_view::npos) {
        ++counters_.blank_lines;
        continue;
      }
      if (format_ == RecordFormat::kLibSvm && line[first] == '#') {
        ++counters_.comment_lines;
        continue;
      }
      if (first_data_line_ && (format_ == RecordFormat::kCriteoCsv || format_ == RecordFormat::kCriteoTsv)) {
        first_data_line_ = false;
        const char sep = format_ == RecordFormat::kCriteoCsv ? ',' : '\t';
        std::string_view cell = line.substr(0, line.find(sep));
        if (cell == "label") {
          ++counters_.header_lines;
          continue;
        }
      }
      first_data_line_ = false;
      break;
    }
    *record = line;
    *index = lines_.line_number();
    *offset = lines_.line_offset();
    ++counters_.records;
    counters_.bytes += line.size();
    return true;
  }
  RecordFormat format() const override { return format_; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return file_->name(); }
  Counters counters() const override { return counters_; }

 private:
  std::unique_ptr<io::SequentialFile> file_;
  io::LineReader lines_;
  io::Compression c_;
  RecordFormat format_;
  bool first_data_line_ = true;
  Counters counters_;
};

}  // namespace

StatusOr<std::unique_ptr<RawRecordReader>> RawRecordReader::Open(const std::string& path,
                                                                 const ExampleReaderOptions& options,
                                                                 const std::atomic<bool>* cancel) {
  CTRAIN_ASSIGN_OR_RETURN(auto raw, OpenInputStream(path, cancel, options.pipe_timeout_ms));
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream sniffed, SniffStream(std::move(raw), options.compression, options.format));
  auto stream = std::move(sniffed.stream);
  const io::Compression detected = sniffed.compression;
  const RecordFormat fmt = sniffed.format;
  if (fmt == RecordFormat::kLibFfm)
    return InvalidArgumentError(LibFfmNeedsSpecMessage(stream->name()));
  if (fmt == RecordFormat::kTFRecord) {
    io::TFRecordReaderOptions to;
    to.compression = io::Compression::kNone;  // already decompressed
    to.skip_corrupt_records = options.skip_corrupt_records;
    to.max_skipped_records = options.max_skipped_records;
    CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(stream), to));
    return std::unique_ptr<RawRecordReader>(new TFRecordRawReader(std::move(r), detected));
  }
  return std::unique_ptr<RawRecordReader>(new TextRawReader(std::move(stream), detected, fmt, options.max_line_bytes));
}

StatusOr<uint64_t> CountRecords(const std::string& path, const ExampleReaderOptions& options) {
  CTRAIN_ASSIGN_OR_RETURN(auto r, RawRecordReader::Open(path, options));
  std::string_view rec;
  uint64_t index = 0, offset = 0, n = 0;
  while (true) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r->Next(&rec, &index, &offset));
    if (!more) break;
    ++n;
  }
  return n;
}

}  // namespace ctrain::data
