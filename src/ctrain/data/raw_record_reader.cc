#include "ctrain/data/raw_record_reader.h"

#include <algorithm>
#include <cstring>

#include "ctrain/data/pipe_mode.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {
namespace {

// Replays already-read bytes, then continues with the underlying stream.
class PrefixedFile final : public io::SequentialFile {
 public:
  PrefixedFile(std::string prefix, std::unique_ptr<io::SequentialFile> rest)
      : prefix_(std::move(prefix)), rest_(std::move(rest)) {}
  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t got = 0;
    if (off_ < prefix_.size()) {
      got = std::min(n, prefix_.size() - off_);
      std::memcpy(buf, prefix_.data() + off_, got);
      off_ += got;
    }
    if (got < n) {
      CTRAIN_ASSIGN_OR_RETURN(size_t more, rest_->Read(buf + got, n - got));
      got += more;
    }
    pos_ += got;
    return got;
  }
  const std::string& name() const override { return rest_->name(); }
  uint64_t position() const override { return pos_; }

 private:
  std::string prefix_;
  size_t off_ = 0;
  uint64_t pos_ = 0;
  std::unique_ptr<io::SequentialFile> rest_;
};

bool LooksLikeText(std::string_view b) {
  if (b.empty()) return false;
  for (unsigned char c : b.substr(0, 512))
    if (c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f) return false;
  return true;
}

bool PlainProbe(std::string_view b) { return io::LooksLikeTFRecordHeader(b) || LooksLikeText(b); }

RecordFormat SniffText(std::string_view b) {
  size_t pos = 0;
  while (pos < b.size()) {
    size_t nl = b.find('\n', pos);
    std::string_view line = b.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? b.size() : nl + 1;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    if (line.substr(first).starts_with("label,")) return RecordFormat::kCriteoCsv;
    if (line.find('\t') != std::string_view::npos && line.find(':') == std::string_view::npos)
      return RecordFormat::kCriteoTsv;
    if (line.find(':') != std::string_view::npos) return RecordFormat::kLibSvm;
    if (line.find(',') != std::string_view::npos) return RecordFormat::kCriteoCsv;
    return RecordFormat::kLibSvm;
  }
  return RecordFormat::kLibSvm;
}

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
  TextRawReader(std::unique_ptr<io::SequentialFile> f, io::Compression c, RecordFormat fmt)
      : file_(std::move(f)), lines_(file_.get()), c_(c), format_(fmt) {}
  StatusOr<bool> Next(std::string_view* record, uint64_t* index, uint64_t* offset) override {
    std::string_view line;
    while (true) {
      CTRAIN_ASSIGN_OR_RETURN(bool more, lines_.Next(&line));
      if (!more) return false;
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
  CTRAIN_ASSIGN_OR_RETURN(auto raw, OpenInputStream(path, cancel));
  io::Compression detected = io::Compression::kNone;
  CTRAIN_ASSIGN_OR_RETURN(auto stream, io::WrapForRead(std::move(raw), options.compression, &detected, &PlainProbe));
  RecordFormat fmt = options.format;
  if (fmt == RecordFormat::kAuto) {
    std::string head(io::kPeekBytes, '\0');
    CTRAIN_ASSIGN_OR_RETURN(size_t n, stream->Read(head.data(), head.size()));
    head.resize(n);
    if (n == 0 || io::LooksLikeTFRecordHeader(head))
      fmt = RecordFormat::kTFRecord;
    else if (LooksLikeText(head))
      fmt = SniffText(head);
    else
      return InvalidArgumentError(stream->name() +
                                  ": cannot detect the record format: not a TFRecord (no valid length crc "
                                  "in the first 12 bytes) and not text; pass the format explicitly");
    stream = std::make_unique<PrefixedFile>(std::move(head), std::move(stream));
  }
  if (fmt == RecordFormat::kTFRecord) {
    io::TFRecordReaderOptions to;
    to.compression = io::Compression::kNone;  // already decompressed
    to.skip_corrupt_records = options.skip_corrupt_records;
    to.max_skipped_records = options.max_skipped_records;
    CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(stream), to));
    return std::unique_ptr<RawRecordReader>(new TFRecordRawReader(std::move(r), detected));
  }
  return std::unique_ptr<RawRecordReader>(new TextRawReader(std::move(stream), detected, fmt));
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
