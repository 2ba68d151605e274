#include "ctrain/data/raw_record_reader.h"

#include <algorithm>
#include <cstring>

#include "ctrain/data/file_list.h"
#include "ctrain/data/pipe_mode.h"
#include "ctrain/data/record_index.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {
namespace {

class TFRecordRawReader final : public RawRecordReader {
 public:
  // `raw`: the innermost file (owned by r's stream); `base`: its position
  // before the first byte this reader read; `walk`, `index`: bytes read to
  // find a range's start; `ranged`: only a split's records.
  TFRecordRawReader(std::unique_ptr<io::TFRecordReader> r, io::Compression c, const io::SequentialFile* raw,
                    uint64_t base = 0, const RangeStart* walk = nullptr, bool ranged = false)
      : r_(std::move(r)), c_(c), raw_(raw), base_(base), ranged_(ranged) {
    if (walk != nullptr) counters_.input_bytes = walk->walk_bytes, counters_.index_bytes = walk->index_bytes;
  }
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
    c.input_bytes += raw_->position() - base_;
    return c;
  }
  bool ranged() const override { return ranged_; }

 private:
  std::unique_ptr<io::TFRecordReader> r_;
  io::Compression c_;
  const io::SequentialFile* raw_;
  uint64_t base_;
  bool ranged_;
  Counters counters_;
};

class TextRawReader final : public RawRecordReader {
 public:
  TextRawReader(std::unique_ptr<io::SequentialFile> f, io::Compression c, RecordFormat fmt, size_t max_line_bytes,
                const io::SequentialFile* raw, uint64_t base = 0)
      : file_(std::move(f)), lines_(file_.get(), 1 << 20, max_line_bytes), c_(c), format_(fmt), raw_(raw), base_(base) {}
  // Reads only the lines starting in [begin, end) of the file (record_index.h);
  // `start` is FindTextRangeStart(begin)'s, where the file was opened.
  Status SetRange(uint64_t begin, uint64_t end, const RangeStart& start) {
    ranged_ = true;
    counters_.input_bytes = start.walk_bytes;
    counters_.index_bytes = start.index_bytes;
    lines_.StartAt(start.offset, start.index, end);
    if (begin == 0) return Status::OK();
    first_data_line_ = false;  // a Criteo header can only be the file's first line
    std::string_view tail;     // the end of the line that holds byte begin - 1: the previous range's
    return lines_.Next(&tail).status();
  }
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
  Counters counters() const override {
    Counters c = counters_;
    c.input_bytes += raw_->position() - base_;
    return c;
  }
  bool ranged() const override { return ranged_; }

 private:
  std::unique_ptr<io::SequentialFile> file_;
  io::LineReader lines_;
  io::Compression c_;
  RecordFormat format_;
  const io::SequentialFile* raw_;
  uint64_t base_;
  bool ranged_ = false;
  bool first_data_line_ = true;
  Counters counters_;
};

bool IsText(RecordFormat f) {
  return f == RecordFormat::kLibSvm || f == RecordFormat::kCriteoTsv || f == RecordFormat::kCriteoCsv;
}

// The reader of split `range` of `path` when a byte range of it can be read
// (a regular, uncompressed TFRecord or text file); null when it cannot.
StatusOr<std::unique_ptr<RawRecordReader>> OpenRange(const std::string& path, const ExampleReaderOptions& options,
                                                     const RawRecordReader::SplitRange& range) {
  std::unique_ptr<RawRecordReader> none;
  if (path == "-" || path.starts_with(kPipeChannelPrefix) || IsStreamPath(path)) return none;
  const int64_t size = RegularFileSize(path);
  if (size < 0) return none;
  StatusOr<SniffResult> sniffed = SniffFile(path, options.compression, options.format);
  if (!sniffed.ok() || sniffed->compression != io::Compression::kNone) return none;  // errors: as the whole file
  const RecordFormat fmt = sniffed->format;
  CTRAIN_RETURN_IF_ERROR(CheckOptionsForFormat(path, fmt, options));
  const bool tfrecord = fmt == RecordFormat::kTFRecord && !options.skip_corrupt_records;
  if (!tfrecord && !IsText(fmt)) return none;
  const auto [begin, end] = SplitByteRange(static_cast<uint64_t>(size), range.index, range.count);
  if (tfrecord) {
    io::TFRecordReaderOptions to;
    to.compression = io::Compression::kNone;
    CTRAIN_ASSIGN_OR_RETURN(RangeStart start,
                            FindTFRecordRangeStart(path, static_cast<uint64_t>(size), begin, to.max_record_bytes));
    CTRAIN_ASSIGN_OR_RETURN(auto file, io::OpenSequentialFileAt(path, start.offset));
    const io::SequentialFile* raw = file.get();
    CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromUncompressedRange(
                                        std::move(file), to, static_cast<uint64_t>(size),
                                        io::TFRecordRange{start.offset, start.index, end}));
    return std::unique_ptr<RawRecordReader>(
        new TFRecordRawReader(std::move(r), io::Compression::kNone, raw, start.offset, &start, /*ranged=*/true));
  }
  CTRAIN_ASSIGN_OR_RETURN(RangeStart start, FindTextRangeStart(path, static_cast<uint64_t>(size), begin));
  CTRAIN_ASSIGN_OR_RETURN(auto file, io::OpenSequentialFileAt(path, start.offset));
  const io::SequentialFile* raw = file.get();
  auto r = std::make_unique<TextRawReader>(std::move(file), io::Compression::kNone, fmt, options.max_line_bytes, raw,
                                           start.offset);
  CTRAIN_RETURN_IF_ERROR(r->SetRange(begin, end, start));
  return std::unique_ptr<RawRecordReader>(std::move(r));
}

}  // namespace

StatusOr<std::unique_ptr<RawRecordReader>> RawRecordReader::Open(const std::string& path,
                                                                 const ExampleReaderOptions& options,
                                                                 const std::atomic<bool>* cancel,
                                                                 const SplitRange* range) {
  if (range != nullptr && range->count > 1) {
    CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RawRecordReader> r, OpenRange(path, options, *range));
    if (r != nullptr) return r;
  }
  CTRAIN_ASSIGN_OR_RETURN(auto raw, OpenInputStream(path, cancel, options.pipe_timeout_ms));
  const io::SequentialFile* innermost = raw.get();
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream sniffed, SniffStream(std::move(raw), options.compression, options.format));
  auto stream = std::move(sniffed.stream);
  const io::Compression detected = sniffed.compression;
  const RecordFormat fmt = sniffed.format;
  CTRAIN_RETURN_IF_ERROR(CheckOptionsForFormat(stream->name(), fmt, options));
  if (fmt == RecordFormat::kTFRecord) {
    io::TFRecordReaderOptions to;
    to.compression = io::Compression::kNone;  // already decompressed
    to.skip_corrupt_records = options.skip_corrupt_records;
    to.max_skipped_records = options.max_skipped_records;
    CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(stream), to));
    return std::unique_ptr<RawRecordReader>(new TFRecordRawReader(std::move(r), detected, innermost));
  }
  return std::unique_ptr<RawRecordReader>(
      new TextRawReader(std::move(stream), detected, fmt, options.max_line_bytes, innermost));
}

StatusOr<uint64_t> CountRecords(const std::string& path, const ExampleReaderOptions& options,
                                const RawRecordReader::SplitRange* range) {
  CTRAIN_ASSIGN_OR_RETURN(auto r, RawRecordReader::Open(path, options, nullptr, range));
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
