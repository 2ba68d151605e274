#include "ctrain/io/compression.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

namespace ctrain::io {
namespace {

std::string_view KindName(Compression c) { return c == Compression::kGzip ? "gzip" : "zlib"; }

bool HasGzipMagic(std::string_view b) {
  return b.size() >= 2 && static_cast<uint8_t>(b[0]) == 0x1f && static_cast<uint8_t>(b[1]) == 0x8b;
}

// RFC 1950 section 2.2: CM (low nibble of CMF) == 8, CINFO (high nibble) <= 7,
// FCHECK makes CMF*256+FLG a multiple of 31. FDICT (FLG bit 5) must be clear:
// neither TensorFlow nor we write preset dictionaries.
bool HasZlibHeader(std::string_view b) {
  if (b.size() < 2) return false;
  unsigned cmf = static_cast<uint8_t>(b[0]), flg = static_cast<uint8_t>(b[1]);
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0 && (flg & 0x20) == 0;
}

// Inflates `prefix` as the start of a zlib stream; true if zlib finds no error
// in its DEFLATE data (running out of input is fine). The 4-byte Adler-32
// trailer is not checked here: a small file whose whole stream fits in the
// prefix and only has a bad trailer is still zlib, and reading it then reports
// zlib's own "incorrect data check" (B35). Output is discarded, at most 4 MiB
// of it is produced.
bool TrialInflateZlib(std::string_view prefix) {
  if (prefix.size() < 2) return false;
  z_stream s{};
  // Raw DEFLATE after the 2-byte header (the caller checked it): no trailer check.
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) return false;
  std::vector<unsigned char> scratch(1 << 16);
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(prefix.data() + 2));
  s.avail_in = static_cast<uInt>(std::min<size_t>(prefix.size(), kPeekBytes) - 2);
  bool ok = true;
  for (int rounds = 0; rounds < 64; ++rounds) {
    s.next_out = scratch.data();
    s.avail_out = static_cast<uInt>(scratch.size());
    int r = inflate(&s, Z_NO_FLUSH);
    if (r == Z_STREAM_END || r == Z_BUF_ERROR) break;
    if (r != Z_OK) {
      ok = false;
      break;
    }
    if (s.avail_in == 0 && s.avail_out != 0) break;
  }
  inflateEnd(&s);
  return ok;
}

std::string HexPrefix(std::string_view b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  size_t n = std::min<size_t>(b.size(), 8);
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ' ';
    out += kHex[static_cast<uint8_t>(b[i]) >> 4];
    out += kHex[static_cast<uint8_t>(b[i]) & 15];
  }
  if (n == 0) out = "none, empty stream";
  return out;
}

// Replays bytes already read from `src` before continuing with `src`.
class PeekedFile final : public SequentialFile {
 public:
  PeekedFile(std::unique_ptr<SequentialFile> src, std::string prefix)
      : src_(std::move(src)), prefix_(std::move(prefix)) {}
  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t got = 0;
    if (off_ < prefix_.size()) {
      got = std::min(n, prefix_.size() - off_);
      std::memcpy(buf, prefix_.data() + off_, got);
      off_ += got;
      if (off_ == prefix_.size()) {  // release the copy once replayed
        std::string().swap(prefix_);
        off_ = 0;
      }
    }
    if (got < n && !src_eof_) {
      CTRAIN_ASSIGN_OR_RETURN(size_t k, src_->Read(buf + got, n - got));
      if (k < n - got) src_eof_ = true;
      got += k;
    }
    pos_ += got;
    return got;
  }
  const std::string& name() const override { return src_->name(); }
  uint64_t position() const override { return pos_; }
  void set_src_eof() { src_eof_ = true; }

 private:
  std::unique_ptr<SequentialFile> src_;
  std::string prefix_;
  size_t off_ = 0;
  bool src_eof_ = false;
  uint64_t pos_ = 0;
};

class InflatingFile final : public SequentialFile {
 public:
  InflatingFile(std::unique_ptr<SequentialFile> src, Compression kind)
      : src_(std::move(src)), kind_(kind), in_(new char[kInBuf]) {}
  ~InflatingFile() override {
    if (init_) inflateEnd(&strm_);
  }
  Status Init() {
    int r = inflateInit2(&strm_, kind_ == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS);
    if (r != Z_OK) return ResourceExhaustedError(src_->name() + ": inflateInit2 failed");
    init_ = true;
    return Status::OK();
  }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (!error_.ok()) return error_;
    size_t got = 0;
    while (got < n) {
      if (strm_.avail_in == 0 && !src_eof_) CTRAIN_RETURN_IF_ERROR(Refill());
      if (member_done_) {
        if (strm_.avail_in == 0) break;  // src exhausted right after a member: clean end
        // Another member / stream follows: TF and gzip(1) read them as one stream.
        inflateReset(&strm_);
        member_done_ = false;
      }
      if (!started_) break;  // the compressed stream is empty
      size_t want = std::min<size_t>(n - got, UINT_MAX);
      strm_.next_out = reinterpret_cast<Bytef*>(buf + got);
      strm_.avail_out = static_cast<uInt>(want);
      int r = inflate(&strm_, Z_NO_FLUSH);
      got += want - strm_.avail_out;
      if (r == Z_STREAM_END) {
        member_done_ = true;
      } else if (r == Z_OK) {
        continue;
      } else if (r == Z_BUF_ERROR) {
        if (strm_.avail_in == 0 && src_eof_) {
          error_ = OutOfRangeError(src_->name() + ": truncated " + std::string(KindName(kind_)) +
                                   " stream: EOF at compressed byte offset " + std::to_string(in_read_) +
                                   " before the end of the compressed stream");
          // Partial output is dropped: a short count would read as a clean EOF.
          return error_;
        }
      } else if (r == Z_MEM_ERROR) {
        return error_ = ResourceExhaustedError(src_->name() + ": inflate: out of memory");
      } else {
        uint64_t at = in_read_ - strm_.avail_in;
        std::string why = strm_.msg ? strm_.msg : (r == Z_NEED_DICT ? "needs a preset dictionary" : "inflate error");
        error_ = DataLossError(src_->name() + ": corrupt " + std::string(KindName(kind_)) +
                               " stream near compressed byte offset " + std::to_string(at) + ": " + why);
        return error_;
      }
    }
    pos_ += got;
    return got;
  }
  const std::string& name() const override { return src_->name(); }
  uint64_t position() const override { return pos_; }

 private:
  static constexpr size_t kInBuf = 256 << 10;
  Status Refill() {
    CTRAIN_ASSIGN_OR_RETURN(size_t k, src_->Read(in_.get(), kInBuf));
    if (k < kInBuf) src_eof_ = true;
    if (k > 0) started_ = true;
    in_read_ += k;
    strm_.next_in = reinterpret_cast<Bytef*>(in_.get());
    strm_.avail_in = static_cast<uInt>(k);
    return Status::OK();
  }

  std::unique_ptr<SequentialFile> src_;
  Compression kind_;
  std::unique_ptr<char[]> in_;
  z_stream strm_{};
  bool init_ = false;
  bool src_eof_ = false;
  bool started_ = false;
  bool member_done_ = false;
  uint64_t in_read_ = 0;  // compressed bytes read from src_
  uint64_t pos_ = 0;      // uncompressed bytes returned
  Status error_;          // sticky
};

class DeflatingFile final : public WritableFile {
 public:
  DeflatingFile(std::unique_ptr<WritableFile> dst, Compression kind)
      : dst_(std::move(dst)), kind_(kind), out_(kOutBuf) {}
  ~DeflatingFile() override {
    if (init_) deflateEnd(&strm_);
  }
  Status Init(int level) {
    int r = deflateInit2(&strm_, level, Z_DEFLATED, kind_ == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS,
                         8, Z_DEFAULT_STRATEGY);
    if (r == Z_STREAM_ERROR) {
      return InvalidArgumentError(dst_->name() + ": invalid compression level " + std::to_string(level) +
                                  " (expected -1..9)");
    }
    if (r != Z_OK) return ResourceExhaustedError(dst_->name() + ": deflateInit2 failed");
    init_ = true;
    return Status::OK();
  }
  Status Append(std::string_view data) override {
    if (closed_) return FailedPreconditionError(dst_->name() + ": Append after Close");
    while (!data.empty()) {
      size_t k = std::min<size_t>(data.size(), UINT_MAX);
      strm_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      strm_.avail_in = static_cast<uInt>(k);
      CTRAIN_RETURN_IF_ERROR(Pump(Z_NO_FLUSH));
      data.remove_prefix(k);
    }
    return Status::OK();
  }
  Status Flush() override {
    if (closed_) return FailedPreconditionError(dst_->name() + ": Flush after Close");
    CTRAIN_RETURN_IF_ERROR(Pump(Z_SYNC_FLUSH));
    return dst_->Flush();
  }
  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    Status s = Pump(Z_FINISH);
    deflateEnd(&strm_);
    init_ = false;
    s.Update(dst_->Close());
    return s;
  }
  const std::string& name() const override { return dst_->name(); }

 private:
  static constexpr size_t kOutBuf = 256 << 10;
  Status Pump(int flush) {
    do {
      strm_.next_out = out_.data();
      strm_.avail_out = static_cast<uInt>(out_.size());
      int r = deflate(&strm_, flush);
      if (r == Z_STREAM_ERROR) return InternalError(dst_->name() + ": deflate: stream error");
      size_t produced = out_.size() - strm_.avail_out;
      if (produced > 0) {
        CTRAIN_RETURN_IF_ERROR(
            dst_->Append(std::string_view(reinterpret_cast<const char*>(out_.data()), produced)));
      }
      if (flush == Z_FINISH && r == Z_STREAM_END) break;
    } while (strm_.avail_out == 0 || (flush == Z_FINISH));
    return Status::OK();
  }

  std::unique_ptr<WritableFile> dst_;
  Compression kind_;
  std::vector<unsigned char> out_;
  z_stream strm_{};
  bool init_ = false;
  bool closed_ = false;
};

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (Lower(a[i]) != b[i]) return false;
  return true;
}

}  // namespace

StatusOr<Compression> ParseCompression(std::string_view name) {
  if (name.empty() || IEquals(name, "none")) return Compression::kNone;
  if (IEquals(name, "gzip")) return Compression::kGzip;
  if (IEquals(name, "zlib")) return Compression::kZlib;
  if (IEquals(name, "auto")) return Compression::kAuto;
  return InvalidArgumentError("unknown compression \"" + std::string(name) +
                              "\" (expected none, gzip, zlib or auto)");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kZlib: return "zlib";
    case Compression::kAuto: return "auto";
  }
  return "unknown";
}

Compression DetectCompression(std::string_view first_bytes, PlainFormatProbe plain_probe) {
  if (first_bytes.empty()) return Compression::kNone;
  if (plain_probe != nullptr && plain_probe(first_bytes)) return Compression::kNone;
  if (HasGzipMagic(first_bytes)) return Compression::kGzip;
  if (HasZlibHeader(first_bytes) && TrialInflateZlib(first_bytes)) return Compression::kZlib;
  return Compression::kNone;
}

StatusOr<std::unique_ptr<SequentialFile>> NewInflatingFile(std::unique_ptr<SequentialFile> src,
                                                           Compression c) {
  if (c == Compression::kNone) return src;
  if (c == Compression::kAuto) {
    return InvalidArgumentError(src->name() + ": NewInflatingFile needs an explicit compression, not auto");
  }
  auto f = std::make_unique<InflatingFile>(std::move(src), c);
  CTRAIN_RETURN_IF_ERROR(f->Init());
  return std::unique_ptr<SequentialFile>(std::move(f));
}

StatusOr<std::unique_ptr<SequentialFile>> WrapForRead(std::unique_ptr<SequentialFile> src,
                                                      Compression requested, Compression* detected,
                                                      PlainFormatProbe plain_probe) {
  std::string prefix(kPeekBytes, '\0');
  CTRAIN_ASSIGN_OR_RETURN(size_t got, src->Read(prefix.data(), prefix.size()));
  prefix.resize(got);
  const bool at_eof = got < kPeekBytes;
  Compression found = DetectCompression(prefix, plain_probe);
  Compression effective = requested;
  if (requested == Compression::kAuto) {
    effective = found;
  } else if (!prefix.empty()) {
    bool matches = requested == Compression::kNone   ? found == Compression::kNone
                   : requested == Compression::kGzip ? HasGzipMagic(prefix)
                                                      : HasZlibHeader(prefix);
    if (!matches) {
      return InvalidArgumentError(src->name() + ": compression mismatch: requested " +
                                  std::string(CompressionName(requested)) + ", file looks like " +
                                  std::string(CompressionName(found)) + " (first bytes " + HexPrefix(prefix) +
                                  ")");
    }
  }
  if (detected != nullptr) *detected = effective;
  auto peeked = std::make_unique<PeekedFile>(std::move(src), std::move(prefix));
  if (at_eof) peeked->set_src_eof();
  return NewInflatingFile(std::move(peeked), effective);
}

StatusOr<std::unique_ptr<SequentialFile>> OpenForRead(const std::string& path, Compression requested,
                                                      Compression* detected, PlainFormatProbe plain_probe) {
  CTRAIN_ASSIGN_OR_RETURN(auto f, OpenSequentialFile(path));
  return WrapForRead(std::move(f), requested, detected, plain_probe);
}

StatusOr<std::unique_ptr<WritableFile>> NewDeflatingFile(std::unique_ptr<WritableFile> dst, Compression c,
                                                         int level) {
  if (c == Compression::kNone) return dst;
  if (c == Compression::kAuto) {
    return InvalidArgumentError(dst->name() + ": cannot write with compression auto (use none, gzip or zlib)");
  }
  auto f = std::make_unique<DeflatingFile>(std::move(dst), c);
  CTRAIN_RETURN_IF_ERROR(f->Init(level));
  return std::unique_ptr<WritableFile>(std::move(f));
}

}  // namespace ctrain::io
