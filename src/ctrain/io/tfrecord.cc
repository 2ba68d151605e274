#include "ctrain/io/tfrecord.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "ctrain/io/crc32c.h"
#include "ctrain/io/endian.h"

namespace ctrain::io {
namespace {

inline bool HeaderCrcOk(const char* h) { return MaskCrc(Crc32c(h, 8)) == DecodeLE32(h + 8); }

void EncodeHeader(char* h, uint64_t len) {
  EncodeLE64(h, len);
  EncodeLE32(h + 8, MaskCrc(Crc32c(h, 8)));
}

}  // namespace

void AppendTFRecord(std::string* out, std::string_view payload) {
  char h[kTFRecordHeaderBytes];
  EncodeHeader(h, payload.size());
  char f[kTFRecordFooterBytes];
  EncodeLE32(f, MaskCrc(Crc32c(payload.data(), payload.size())));
  out->append(h, sizeof(h));
  out->append(payload);
  out->append(f, sizeof(f));
}

bool LooksLikeTFRecordHeader(std::string_view first_bytes) {
  return first_bytes.size() >= kTFRecordHeaderBytes && HeaderCrcOk(first_bytes.data());
}

// ---------------------------------------------------------------- reader

TFRecordReader::TFRecordReader(std::unique_ptr<SequentialFile> file, const TFRecordReaderOptions& options,
                               Compression compression, std::optional<uint64_t> stream_size)
    : file_(std::move(file)), options_(options), compression_(compression), stream_size_(stream_size) {
  cap_ = std::max<size_t>(options_.buffer_bytes, 64);
  // A small file needs no more than its size (+1 so the first read sees EOF).
  if (stream_size_ && *stream_size_ < cap_) cap_ = std::max<size_t>(static_cast<size_t>(*stream_size_) + 1, 64);
  buf_.reset(new char[cap_]);
}

TFRecordReader::~TFRecordReader() = default;

const std::string& TFRecordReader::name() const { return file_->name(); }

StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::Open(const std::string& path,
                                                               const TFRecordReaderOptions& options) {
  std::optional<uint64_t> size;
  struct stat st;
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    size = static_cast<uint64_t>(st.st_size);
  }
  CTRAIN_ASSIGN_OR_RETURN(auto file, OpenSequentialFile(path));
  return FromFile(std::move(file), options, size);
}

StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::FromFile(std::unique_ptr<SequentialFile> file,
                                                                   const TFRecordReaderOptions& options,
                                                                   std::optional<uint64_t> file_size) {
  Compression effective = Compression::kNone;
  CTRAIN_ASSIGN_OR_RETURN(auto stream,
                          WrapForRead(std::move(file), options.compression, &effective, &LooksLikeTFRecordHeader));
  if (effective != Compression::kNone) file_size.reset();
  return std::unique_ptr<TFRecordReader>(new TFRecordReader(std::move(stream), options, effective, file_size));
}

StatusOr<std::unique_ptr<TFRecordReader>> TFRecordReader::FromUncompressedRange(std::unique_ptr<SequentialFile> file,
                                                                                const TFRecordReaderOptions& options,
                                                                                uint64_t file_size,
                                                                                const TFRecordRange& range) {
  if (options.skip_corrupt_records)
    return InvalidArgumentError(file->name() + ": a byte range of a TFRecord file cannot be read with skip_corrupt_records");
  if (range.start_offset > file_size)
    return InvalidArgumentError(file->name() + ": range start " + std::to_string(range.start_offset) +
                                " is past the end of the file (" + std::to_string(file_size) + " bytes)");
  std::unique_ptr<TFRecordReader> r(new TFRecordReader(std::move(file), options, Compression::kNone, file_size));
  r->base_ = range.start_offset;
  r->next_index_ = range.start_index;
  r->stop_ = range.stop_offset;
  return r;
}

Status TFRecordReader::Fail(Status s) {
  error_ = s;
  return s;
}

std::string TFRecordReader::Where(uint64_t offset) const {
  std::string w = file_->name();
  w += ": record ";
  w += std::to_string(next_index_);
  w += " at offset ";
  w += std::to_string(offset);
  w += ": ";
  return w;
}

Status TFRecordReader::Truncated(uint64_t offset, std::string_view part, uint64_t expected, uint64_t got) {
  std::string m = Where(offset);
  m += "truncated record (EOF inside the ";
  m += part;
  m += "), expected ";
  m += std::to_string(expected);
  m += " bytes, got ";
  m += std::to_string(got);
  return Fail(OutOfRangeError(m));
}

// Makes at least `need` unread bytes available unless the stream ends first.
// The buffer grows (doubling) only when it is full of unread bytes, so its
// size stays within 2x of bytes actually read.
Status TFRecordReader::Fill(size_t need) {
  while (end_ - begin_ < need && !eof_) {
    if (begin_ > 0) {
      std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
      base_ += begin_;
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == cap_) {
      size_t ncap = cap_ * 2;
      std::unique_ptr<char[]> nbuf(new char[ncap]);
      std::memcpy(nbuf.get(), buf_.get(), end_);
      buf_ = std::move(nbuf);
      cap_ = ncap;
    }
    size_t room = cap_ - end_;
    if (stop_ != UINT64_MAX) {  // a range: read up to its end, then only what completes the last record
      const uint64_t at = base_ + end_;
      const uint64_t deficit = need - (end_ - begin_);
      room = static_cast<size_t>(std::min<uint64_t>(room, at < stop_ ? std::max(stop_ - at, deficit) : deficit));
    }
    CTRAIN_ASSIGN_OR_RETURN(size_t k, file_->Read(buf_.get() + end_, room));
    if (k < room) eof_ = true;
    end_ += k;
  }
  return Status::OK();
}

Status TFRecordReader::CountSkip(const Status& why, uint64_t bytes) {
  uint64_t k = counters_.skipped_records + 1;
  if (options_.max_skipped_records != 0 && k > options_.max_skipped_records) {
    std::string m(why.message());
    m += " (skipped record ";
    m += std::to_string(k);
    m += " exceeds max_skipped_records=";
    m += std::to_string(options_.max_skipped_records);
    m += ")";
    return Fail(Status(why.code(), m));
  }
  counters_.skipped_records = k;
  counters_.skipped_bytes += bytes;
  ++next_index_;
  return Status::OK();
}

// After a length-CRC mismatch at buf_[begin_]: drops bytes until the next
// offset holding a valid header (or the end of the stream). Returns the
// number of bytes dropped through counters_.skipped_bytes.
Status TFRecordReader::Resync() {
  ++begin_;
  uint64_t dropped = 1;
  for (;;) {
    if (Status s = Fill(kTFRecordHeaderBytes); !s.ok()) return Fail(std::move(s));
    size_t avail = end_ - begin_;
    if (avail < kTFRecordHeaderBytes) {  // no header fits before EOF: drop the tail
      dropped += avail;
      begin_ = end_;
      break;
    }
    const char* p = buf_.get() + begin_;
    size_t last = avail - kTFRecordHeaderBytes;
    size_t i = 0;
    bool found = false;
    for (; i <= last; ++i) {
      if (HeaderCrcOk(p + i) && DecodeLE64(p + i) <= options_.max_record_bytes) {
        found = true;
        break;
      }
    }
    begin_ += i;
    dropped += i;
    if (found) break;
  }
  counters_.skipped_bytes += dropped;
  return Status::OK();
}

StatusOr<bool> TFRecordReader::Next(std::string_view* record) {
  if (!error_.ok()) return error_;
  for (;;) {
    if (base_ + begin_ >= stop_) return false;  // the next record belongs to the next range
    if (end_ - begin_ < kTFRecordHeaderBytes) {
      if (Status s = Fill(kTFRecordHeaderBytes); !s.ok()) return Fail(std::move(s));
    }
    const uint64_t offset = base_ + begin_;
    size_t avail = end_ - begin_;
    if (avail == 0) return false;  // clean end at a record boundary
    if (avail < kTFRecordHeaderBytes) {
      return Truncated(offset, "length header", kTFRecordHeaderBytes, avail);
    }
    const char* h = buf_.get() + begin_;
    if (!HeaderCrcOk(h)) {
      Status why = DataLossError(Where(offset) + "corrupted record: length crc mismatch");
      if (!options_.skip_corrupt_records) return Fail(std::move(why));
      CTRAIN_RETURN_IF_ERROR(CountSkip(why, 0));
      ++counters_.resyncs;
      CTRAIN_RETURN_IF_ERROR(Resync());
      continue;
    }
    const uint64_t len = DecodeLE64(h);
    if (len > options_.max_record_bytes || len > SIZE_MAX - 64) {
      return Fail(ResourceExhaustedError(Where(offset) + "record length " + std::to_string(len) +
                                         " exceeds max_record_bytes " + std::to_string(options_.max_record_bytes)));
    }
    if (stream_size_) {  // known size: reject impossible lengths before buffering the payload
      uint64_t rest = *stream_size_ > offset + kTFRecordHeaderBytes ? *stream_size_ - offset - kTFRecordHeaderBytes : 0;
      if (rest < len) return Truncated(offset, "payload", len, rest);
      if (rest - len < kTFRecordFooterBytes) return Truncated(offset, "payload crc", kTFRecordFooterBytes, rest - len);
    }
    const size_t total = kTFRecordHeaderBytes + static_cast<size_t>(len) + kTFRecordFooterBytes;
    if (avail < total) {
      if (Status s = Fill(total); !s.ok()) return Fail(std::move(s));
      avail = end_ - begin_;
      if (avail < total) {
        size_t body = avail - kTFRecordHeaderBytes;
        if (body < len) return Truncated(offset, "payload", len, body);
        return Truncated(offset, "payload crc", kTFRecordFooterBytes, body - len);
      }
    }
    const char* payload = buf_.get() + begin_ + kTFRecordHeaderBytes;
    if (options_.verify_checksums &&
        MaskCrc(Crc32c(payload, static_cast<size_t>(len))) != DecodeLE32(payload + len)) {
      Status why = DataLossError(Where(offset) + "corrupted record: data crc mismatch");
      if (!options_.skip_corrupt_records) return Fail(std::move(why));
      CTRAIN_RETURN_IF_ERROR(CountSkip(why, total));
      begin_ += total;
      continue;
    }
    *record = std::string_view(payload, static_cast<size_t>(len));
    record_offset_ = offset;
    record_index_ = next_index_++;
    begin_ += total;
    ++counters_.records;
    counters_.bytes += len;
    return true;
  }
}

// ---------------------------------------------------------------- writer

namespace {
constexpr size_t kWriterBuffer = 256 << 10;
}

TFRecordWriter::TFRecordWriter(std::unique_ptr<WritableFile> file) : file_(std::move(file)) {
  buf_.reserve(kWriterBuffer);
}

TFRecordWriter::~TFRecordWriter() = default;

StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::Open(const std::string& path, Compression c,
                                                               const WriteOptions& write_options) {
  if (c == Compression::kAuto) {
    return InvalidArgumentError(path + ": cannot write with compression auto (use none, gzip or zlib)");
  }
  CTRAIN_ASSIGN_OR_RETURN(auto file, OpenWritableFile(path, write_options));
  return ToFile(std::move(file), c);
}

StatusOr<std::unique_ptr<TFRecordWriter>> TFRecordWriter::ToFile(std::unique_ptr<WritableFile> file,
                                                                 Compression c) {
  CTRAIN_ASSIGN_OR_RETURN(auto sink, NewDeflatingFile(std::move(file), c));
  return std::unique_ptr<TFRecordWriter>(new TFRecordWriter(std::move(sink)));
}

Status TFRecordWriter::FlushBuffer() {
  if (buf_.empty()) return Status::OK();
  Status s = file_->Append(buf_);
  buf_.clear();
  return s;
}

Status TFRecordWriter::Write(std::string_view record) {
  if (closed_) return FailedPreconditionError(file_->name() + ": TFRecordWriter::Write after Close");
  const size_t framed = kTFRecordHeaderBytes + record.size() + kTFRecordFooterBytes;
  if (buf_.size() + framed <= kWriterBuffer) {
    AppendTFRecord(&buf_, record);
  } else {
    CTRAIN_RETURN_IF_ERROR(FlushBuffer());
    if (framed <= kWriterBuffer) {
      AppendTFRecord(&buf_, record);
    } else {  // big record: header and footer through the buffer, payload directly
      char h[kTFRecordHeaderBytes];
      EncodeHeader(h, record.size());
      char f[kTFRecordFooterBytes];
      EncodeLE32(f, MaskCrc(Crc32c(record.data(), record.size())));
      CTRAIN_RETURN_IF_ERROR(file_->Append(std::string_view(h, sizeof(h))));
      CTRAIN_RETURN_IF_ERROR(file_->Append(record));
      CTRAIN_RETURN_IF_ERROR(file_->Append(std::string_view(f, sizeof(f))));
    }
  }
  ++records_;
  return Status::OK();
}

Status TFRecordWriter::Flush() {
  if (closed_) return FailedPreconditionError(file_->name() + ": TFRecordWriter::Flush after Close");
  CTRAIN_RETURN_IF_ERROR(FlushBuffer());
  return file_->Flush();
}

Status TFRecordWriter::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  Status s = FlushBuffer();
  s.Update(file_->Close());
  return s;
}

}  // namespace ctrain::io
