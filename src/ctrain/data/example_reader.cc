#include "ctrain/data/example_reader.h"

#include <cstring>
#include <vector>

#include "ctrain/data/pipe_mode.h"
#include "ctrain/io/file.h"
#include "ctrain/io/libsvm.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {
namespace {

// Replays already-read bytes, then continues with the underlying stream (works on pipes).
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
  // First line that is neither blank nor a comment.
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
    if (size_t c = line.find(':'); c != std::string_view::npos) {
      // The first pair token decides: two colons before the next blank -> libFFM.
      size_t tok_end = line.find_first_of(" \t\r", c);
      std::string_view tok = line.substr(c + 1, tok_end == std::string_view::npos ? std::string_view::npos : tok_end - c - 1);
      return tok.find(':') != std::string_view::npos ? RecordFormat::kLibFfm : RecordFormat::kLibSvm;
    }
    if (line.find(',') != std::string_view::npos) return RecordFormat::kCriteoCsv;
    return RecordFormat::kLibSvm;  // label-only line: let the LibSVM parser give its error
  }
  return RecordFormat::kLibSvm;
}

class LibSvmExampleReader final : public ExampleReader {
 public:
  LibSvmExampleReader(std::unique_ptr<io::LibSvmReader> r, io::Compression c, int64_t id_limit, int32_t id_base)
      : r_(std::move(r)), c_(c), id_limit_(id_limit), id_base_(id_base) {}
  StatusOr<bool> Next(float* label, int64_t* ids, float* values) override {
    int32_t n = 0;
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(label, ids, values, &n));
    if (more && id_limit_ > 0)
      CTRAIN_RETURN_IF_ERROR(CheckIdRange(ids, n, id_limit_, id_base_, r_->name() + ":" + std::to_string(r_->line_number())));
    return more;
  }
  RecordFormat format() const override { return RecordFormat::kLibSvm; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return r_->name(); }
  uint64_t records() const override { return r_->counters().records; }
  std::string SkippedSummary() const override {
    const auto& c = r_->counters();
    return "blank_lines=" + std::to_string(c.blank_lines) + " comment_lines=" + std::to_string(c.comment_lines) +
           " qid_tokens=" + std::to_string(c.qid_tokens) + " trailing_comments=" + std::to_string(c.trailing_comments);
  }

 private:
  std::unique_ptr<io::LibSvmReader> r_;
  io::Compression c_;
  int64_t id_limit_;
  int32_t id_base_;
};

class TFRecordExampleReader final : public ExampleReader {
 public:
  TFRecordExampleReader(std::unique_ptr<io::TFRecordReader> r, io::Compression c, io::SeedSchema schema,
                        int64_t id_limit)
      : r_(std::move(r)), c_(c), schema_(std::move(schema)), id_limit_(id_limit) {}
  StatusOr<bool> Next(float* label, int64_t* ids, float* values) override {
    std::string_view rec;
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(&rec));
    if (!more) return false;
    Status s = io::ParseSeedExample(rec, schema_, label, ids, values);
    if (s.ok() && id_limit_ > 0) s = CheckIdRange(ids, schema_.field_size, id_limit_, 0, "");
    if (!s.ok())
      return s.WithContext(r_->name() + ": record " + std::to_string(r_->record_index()) + " at offset " +
                           std::to_string(r_->record_offset()));
    ++records_;
    return true;
  }
  RecordFormat format() const override { return RecordFormat::kTFRecord; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return r_->name(); }
  uint64_t records() const override { return records_; }
  std::string SkippedSummary() const override {
    auto c = r_->counters();
    return "skipped_records=" + std::to_string(c.skipped_records) + " skipped_bytes=" + std::to_string(c.skipped_bytes);
  }

 private:
  std::unique_ptr<io::TFRecordReader> r_;
  io::Compression c_;  // of the file (r_ reads the already decompressed stream)
  io::SeedSchema schema_;
  int64_t id_limit_;
  uint64_t records_ = 0;
};

class CriteoExampleReader final : public ExampleReader {
 public:
  CriteoExampleReader(std::unique_ptr<io::CriteoReader> r, io::Compression c, RecordFormat f,
                      const ExampleReaderOptions& o)
      : r_(std::move(r)), c_(c), f_(f), hash_{o.feature_size, 0}, vocab_(o.vocabulary), id_limit_(o.id_limit) {}
  StatusOr<bool> Next(float* label, int64_t* ids, float* values) override {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(&row_));
    if (!more) return false;
    *label = row_.label;
    if (vocab_ != nullptr)
      vocab_->Featurize(row_, ids, values);
    else
      io::HashCriteoRow(row_, hash_, ids, values);
    if (id_limit_ > 0)
      CTRAIN_RETURN_IF_ERROR(CheckIdRange(ids, io::kCriteoFields, id_limit_, 0,
                                          r_->name() + ":" + std::to_string(r_->line_number())));
    return true;
  }
  RecordFormat format() const override { return f_; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return r_->name(); }
  uint64_t records() const override { return r_->counters().records; }
  std::string SkippedSummary() const override {
    const auto& c = r_->counters();
    return "header_lines=" + std::to_string(c.header_lines) + " blank_lines=" + std::to_string(c.blank_lines);
  }

 private:
  std::unique_ptr<io::CriteoReader> r_;
  io::Compression c_;
  RecordFormat f_;
  io::CriteoHashOptions hash_;
  const io::CriteoVocabulary* vocab_;
  int64_t id_limit_;
  io::CriteoRow row_;
};

}  // namespace

Status CheckIdRange(const int64_t* ids, int32_t field_size, int64_t id_limit, int32_t id_base,
                    std::string_view where) {
  for (int32_t f = 0; f < field_size; ++f) {
    if (ids[f] >= 0 && ids[f] < id_limit) continue;
    std::string m(where);
    if (!m.empty()) m += ": ";
    m += "field " + std::to_string(f + 1) + " of " + std::to_string(field_size) + ": feature id " +
         std::to_string(ids[f] + id_base) + " (as written";
    if (id_base != 0) m += ", id_base " + std::to_string(id_base);
    m += ") is outside [" + std::to_string(id_base) + ", " + std::to_string(id_limit + id_base) +
         "): increase --feature-size";
    return InvalidArgumentError(m);
  }
  return Status::OK();
}

StatusOr<RecordFormat> ParseRecordFormat(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "auto") return RecordFormat::kAuto;
  if (n == "libsvm") return RecordFormat::kLibSvm;
  if (n == "tfrecord" || n == "tfrecords") return RecordFormat::kTFRecord;
  if (n == "criteo-tsv") return RecordFormat::kCriteoTsv;
  if (n == "criteo-csv") return RecordFormat::kCriteoCsv;
  if (n == "libffm") return RecordFormat::kLibFfm;
  return InvalidArgumentError("unknown record format '" + std::string(name) +
                              "' (expected auto, libsvm, tfrecord, criteo-tsv, criteo-csv or libffm)");
}

std::string_view RecordFormatName(RecordFormat f) {
  switch (f) {
    case RecordFormat::kAuto: return "auto";
    case RecordFormat::kLibSvm: return "libsvm";
    case RecordFormat::kTFRecord: return "tfrecord";
    case RecordFormat::kCriteoTsv: return "criteo-tsv";
    case RecordFormat::kCriteoCsv: return "criteo-csv";
    case RecordFormat::kLibFfm: return "libffm";
  }
  return "unknown";
}

StatusOr<SniffedStream> SniffStream(std::unique_ptr<io::SequentialFile> raw, io::Compression compression,
                                    RecordFormat requested) {
  SniffedStream o;
  CTRAIN_ASSIGN_OR_RETURN(o.stream, io::WrapForRead(std::move(raw), compression, &o.compression, &PlainProbe));
  o.format = requested;
  if (requested == RecordFormat::kAuto) {
    std::string head(io::kPeekBytes, '\0');
    CTRAIN_ASSIGN_OR_RETURN(size_t n, o.stream->Read(head.data(), head.size()));
    head.resize(n);
    if (n == 0)
      o.format = RecordFormat::kTFRecord;  // empty: any format reads zero records
    else if (io::LooksLikeTFRecordHeader(head))
      o.format = RecordFormat::kTFRecord;
    else if (LooksLikeText(head))
      o.format = SniffText(head);
    else
      return InvalidArgumentError(o.stream->name() +
                                  ": cannot detect the record format: not a TFRecord (no valid length crc "
                                  "in the first 12 bytes) and not text; pass --format");
    o.stream = std::make_unique<PrefixedFile>(std::move(head), std::move(o.stream));
  }
  return o;
}

namespace {
StatusOr<SniffedStream> OpenAndSniff(const std::string& path, io::Compression compression, RecordFormat requested,
                                     int64_t pipe_timeout_ms = kDefaultPipeTimeoutMs) {
  CTRAIN_ASSIGN_OR_RETURN(auto raw, OpenInputPass(path, 0, pipe_timeout_ms));
  return SniffStream(std::move(raw), compression, requested);
}
}  // namespace

StatusOr<SniffResult> SniffFile(const std::string& path, io::Compression compression) {
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream o, OpenAndSniff(path, compression, RecordFormat::kAuto));
  return SniffResult{o.format, o.compression};
}

StatusOr<std::unique_ptr<ExampleReader>> OpenExampleReader(const std::string& path,
                                                           const ExampleReaderOptions& options) {
  if (options.field_size <= 0) return InvalidArgumentError("field_size must be positive");
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream o, OpenAndSniff(path, options.compression, options.format, options.pipe_timeout_ms));
  switch (o.format) {
    case RecordFormat::kLibSvm: {
      io::LibSvmOptions lo;
      lo.field_size = options.field_size;
      lo.id_base = options.id_base;
      CTRAIN_ASSIGN_OR_RETURN(auto r, io::LibSvmReader::Open(std::move(o.stream), lo));
      return std::unique_ptr<ExampleReader>(new LibSvmExampleReader(std::move(r), o.compression, options.id_limit, options.id_base));
    }
    case RecordFormat::kTFRecord: {
      io::TFRecordReaderOptions to;
      to.compression = io::Compression::kNone;  // the stream is already decompressed
      to.skip_corrupt_records = options.skip_corrupt_records;
      to.max_skipped_records = options.max_skipped_records;
      CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(o.stream), to));
      io::SeedSchema schema = options.schema;
      schema.field_size = options.field_size;
      return std::unique_ptr<ExampleReader>(new TFRecordExampleReader(std::move(r), o.compression, std::move(schema), options.id_limit));
    }
    case RecordFormat::kCriteoTsv:
    case RecordFormat::kCriteoCsv: {
      if (options.field_size != io::kCriteoFields)
        return InvalidArgumentError(path + ": Criteo rows preprocess to 39 fields, but field_size is " +
                                    std::to_string(options.field_size));
      if (options.vocabulary == nullptr) {
        CTRAIN_RETURN_IF_ERROR(io::ValidateCriteoHashOptions({options.feature_size, 0}));
      }
      io::CriteoReaderOptions co;
      co.format = o.format == RecordFormat::kCriteoTsv ? io::CriteoFormat::kTsv : io::CriteoFormat::kCsv;
      CTRAIN_ASSIGN_OR_RETURN(auto r, io::CriteoReader::Open(std::move(o.stream), co));
      return std::unique_ptr<ExampleReader>(new CriteoExampleReader(std::move(r), o.compression, o.format, options));
    }
    case RecordFormat::kLibFfm:
      return InvalidArgumentError(path + ": libFFM (field:feature:value) has no fixed " +
                                  std::to_string(options.field_size) +
                                  "-field layout to train on; `ctrain inspect` reads it, convert/train do not");
    case RecordFormat::kAuto: break;
  }
  return InternalError("unreachable format");
}

namespace {

class LibSvmExampleWriter final : public ExampleWriter {
 public:
  LibSvmExampleWriter(std::unique_ptr<io::WritableFile> f, int32_t id_base) : f_(std::move(f)), id_base_(id_base) {}
  Status Write(float label, std::span<const int64_t> ids, std::span<const float> values) override {
    io::AppendLibSvmLine(label, ids, values, id_base_, &buf_);
    ++records_;
    if (buf_.size() > (1 << 20)) {
      CTRAIN_RETURN_IF_ERROR(f_->Append(buf_));
      buf_.clear();
    }
    return Status::OK();
  }
  Status Close() override {
    CTRAIN_RETURN_IF_ERROR(f_->Append(buf_));
    buf_.clear();
    return f_->Close();
  }
  uint64_t records() const override { return records_; }

 private:
  std::unique_ptr<io::WritableFile> f_;
  int32_t id_base_;
  std::string buf_;
  uint64_t records_ = 0;
};

class TFRecordExampleWriter final : public ExampleWriter {
 public:
  TFRecordExampleWriter(std::unique_ptr<io::TFRecordWriter> w, io::SeedSchema s) : w_(std::move(w)), schema_(std::move(s)) {}
  Status Write(float label, std::span<const int64_t> ids, std::span<const float> values) override {
    rec_.clear();
    io::EncodeSeedExample(label, ids, values, schema_, &rec_);
    return w_->Write(rec_);
  }
  Status Close() override { return w_->Close(); }
  uint64_t records() const override { return w_->records_written(); }

 private:
  std::unique_ptr<io::TFRecordWriter> w_;
  io::SeedSchema schema_;
  std::string rec_;
};

}  // namespace

StatusOr<std::unique_ptr<ExampleWriter>> OpenExampleWriter(const std::string& path,
                                                           const ExampleWriterOptions& options) {
  if (options.compression == io::Compression::kAuto)
    return InvalidArgumentError("output compression must be none, gzip or zlib (not auto)");
  io::WriteOptions wo;
  wo.atomic = options.atomic && path != "-";
  switch (options.format) {
    case RecordFormat::kTFRecord: {
      CTRAIN_ASSIGN_OR_RETURN(auto w, io::TFRecordWriter::Open(path, options.compression, wo));
      return std::unique_ptr<ExampleWriter>(new TFRecordExampleWriter(std::move(w), options.schema));
    }
    case RecordFormat::kLibSvm: {
      CTRAIN_ASSIGN_OR_RETURN(auto f, io::OpenWritableFile(path, wo));
      if (options.compression != io::Compression::kNone) {
        CTRAIN_ASSIGN_OR_RETURN(f, io::NewDeflatingFile(std::move(f), options.compression));
      }
      return std::unique_ptr<ExampleWriter>(new LibSvmExampleWriter(std::move(f), options.id_base));
    }
    default:
      return InvalidArgumentError("can write libsvm or tfrecord, not " + std::string(RecordFormatName(options.format)));
  }
}

}  // namespace ctrain::data
