#include "ctrain/data/example_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
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

// Text with a few stray control bytes (a \x01 or NUL inside a value or a
// category): one, or at most one in 64 bytes of the first 4 KB, not the first byte,
// and at least one printable line break or separator. Sniffed as text so that
// the format's parser names the byte with its file:line:col, as it does with an
// explicit --format, instead of "cannot detect the record format".
bool LooksLikeTextWithStrayBytes(std::string_view b) {
  b = b.substr(0, 4096);
  if (b.empty()) return false;
  size_t bad = 0;
  bool sep = false;
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(b[i]);
    if (c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f) {
      if (i == 0) return false;
      ++bad;
    } else if (c == '\n' || c == '\t' || c == ' ' || c == ',') {
      sep = true;
    }
  }
  return sep && (bad <= 1 || bad * 64 <= b.size());
}

bool PlainProbe(std::string_view b) { return io::LooksLikeTFRecordHeader(b) || LooksLikeText(b); }

// Text with ':' tokens: LibSVM ("id:value") or libFFM ("field:feature:value").
// Every token with a ':' on the (complete) lines of the peeked bytes votes by
// its number of colons; libFFM needs a strict majority of two-colon tokens, so
// one malformed token (two LibSVM pairs glued together, "13:0.5e-0114:1") does
// not switch the whole file to libFFM: the LibSVM parser then names it with
// its line and column.
RecordFormat SniffPairs(std::string_view b) {
  // Drop a cut last line unless it is the only one.
  if (size_t nl = b.rfind('\n'); nl != std::string_view::npos) b = b.substr(0, nl);
  uint64_t one = 0, two = 0;
  size_t pos = 0;
  while (pos < b.size()) {
    size_t nl = b.find('\n', pos);
    std::string_view line = b.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? b.size() : nl + 1;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    size_t t = 0;
    while (t < line.size()) {
      const size_t s = line.find_first_not_of(" \t\r\v\f", t);
      if (s == std::string_view::npos) break;
      size_t e = line.find_first_of(" \t\r\v\f", s);
      if (e == std::string_view::npos) e = line.size();
      const std::string_view tok = line.substr(s, e - s);
      t = e;
      if (tok.starts_with("qid:")) continue;
      const size_t colons = static_cast<size_t>(std::count(tok.begin(), tok.end(), ':'));
      if (colons == 1) ++one;
      else if (colons >= 2) ++two;
    }
  }
  return two > one ? RecordFormat::kLibFfm : RecordFormat::kLibSvm;
}

// A label or a Criteo integer as written: digits with sign, point and
// exponent only ("1", "-1", "0.5", "1e3"), or an empty cell.
bool NumberLike(std::string_view t) {
  if (t.empty()) return true;
  bool digit = false;
  for (char c : t) {
    if (c >= '0' && c <= '9') digit = true;
    else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E') return false;
  }
  return digit;
}

// Whether the ':' tokens of a data line are pairs or triples: most of them
// (qid: aside) start with a decimal id before the first ':'. Prose ("Note:",
// "http://...", "data:") does not; a malformed pair ("13:6.6e-0114:8") does.
bool PairTokens(std::string_view line) {
  line = line.substr(0, line.find('#'));  // a trailing comment does not vote
  uint64_t pairs = 0, other = 0;
  size_t t = 0;
  while (t < line.size()) {
    const size_t s = line.find_first_not_of(" \t\r\v\f", t);
    if (s == std::string_view::npos) break;
    size_t e = line.find_first_of(" \t\r\v\f", s);
    if (e == std::string_view::npos) e = line.size();
    const std::string_view tok = line.substr(s, e - s);
    t = e;
    const size_t colon = tok.find(':');
    if (colon == std::string_view::npos || tok.starts_with("qid:")) continue;
    const std::string_view id = tok.substr(0, colon);
    const bool digits = !id.empty() && id.find_first_not_of("0123456789") == std::string_view::npos;
    ++(digits ? pairs : other);
  }
  return pairs > other;
}

// The format of text from its first data line (not blank, not a '#'
// comment). A line that fits none of the text formats -- prose, Markdown, a
// README in a data directory -- is InvalidArgument "<name>:<line>: cannot
// detect the record format ..." rather than a guess the parser then misreads.
StatusOr<RecordFormat> SniffText(std::string_view b, const std::string& name) {
  const bool whole_input = b.size() < io::kPeekBytes;  // else the peek may end inside a line
  // A UTF-8 byte-order mark is not part of the first row: detect past it (the
  // reader then names the mark itself).
  size_t pos = b.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  uint64_t line_no = 0;
  while (pos < b.size()) {
    size_t nl = b.find('\n', pos);
    std::string_view line = b.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    const bool complete = nl != std::string_view::npos || whole_input;
    pos = nl == std::string_view::npos ? b.size() : nl + 1;
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    const std::string_view data = line.substr(first);
    if (data.starts_with("label,")) return RecordFormat::kCriteoCsv;
    std::optional<RecordFormat> f;
    std::string_view lead;  // the label (or first cell) the format reads first
    if (line.find('\t') != std::string_view::npos && line.find(':') == std::string_view::npos) {
      f = RecordFormat::kCriteoTsv;
      lead = line.substr(0, line.find('\t'));
    } else if (line.find(':') != std::string_view::npos) {
      lead = data.substr(0, data.find_first_of(" \t\r\v\f"));
      const size_t colon = lead.find(':');
      const bool pair_first = colon != std::string_view::npos && colon > 0 &&  // unlabelled: "1:0.5 ..."
                              lead.substr(0, colon).find_first_not_of("0123456789") == std::string_view::npos;
      if (!complete || (PairTokens(data) && (pair_first || NumberLike(lead))))
        return SniffPairs(b.substr(line.data() - b.data()));
    } else if (line.find(',') != std::string_view::npos) {
      f = RecordFormat::kCriteoCsv;
      lead = line.substr(0, line.find(','));
    } else {
      f = RecordFormat::kLibSvm;  // label-only line: let the LibSVM parser give its error
      lead = data.substr(0, data.find_first_of(" \t\r\v\f"));
    }
    if (lead.ends_with('\r')) lead.remove_suffix(1);
    const bool header = lead == "label" || lead == "I1";  // a Criteo header (I1: unlabelled)
    // A first line longer than the peek is not judged: the reader's line limit names it.
    if (f && (!complete || NumberLike(lead) || (header && f != RecordFormat::kLibSvm))) return *f;
    std::string shown(line.substr(0, 60));
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return InvalidArgumentError(name + ":" + std::to_string(line_no) + ": cannot detect the record format: '" + shown +
                                (line.size() > 60 ? "...'" : "'") +
                                " is not a LibSVM, libFFM or Criteo TSV/CSV row (a text document?); pass --format, "
                                "or keep it out of the inputs (directories skip names starting with '_' or '.')");
  }
  return RecordFormat::kLibSvm;
}

class LibSvmExampleReader final : public ExampleReader {
 public:
  LibSvmExampleReader(std::unique_ptr<io::LibSvmReader> r, io::Compression c, IdRange range)
      : r_(std::move(r)), c_(c), range_(range) {}
  StatusOr<bool> Next(float* label, int64_t* ids, float* values) override {
    int32_t n = 0;
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(label, ids, values, &n));
    if (more) CTRAIN_RETURN_IF_ERROR(range_.Apply(ids, n, &oov_ids_, [this] { return Location(); }));
    return more;
  }
  RecordFormat format() const override { return RecordFormat::kLibSvm; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return r_->name(); }
  uint64_t records() const override { return r_->counters().records; }
  std::string Location() const override { return r_->name() + ":" + std::to_string(r_->line_number()); }
  std::string SkippedSummary() const override {
    const auto& c = r_->counters();
    return "blank_lines=" + std::to_string(c.blank_lines) + " comment_lines=" + std::to_string(c.comment_lines) +
           " qid_tokens=" + std::to_string(c.qid_tokens) + " trailing_comments=" + std::to_string(c.trailing_comments) +
           " unterminated_last_line=" + std::to_string(c.unterminated_last_line);
  }

 private:
  std::unique_ptr<io::LibSvmReader> r_;
  io::Compression c_;
  IdRange range_;
};

class TFRecordExampleReader final : public ExampleReader {
 public:
  TFRecordExampleReader(std::unique_ptr<io::TFRecordReader> r, io::Compression c, io::SeedSchema schema,
                        IdRange range)
      : r_(std::move(r)), c_(c), schema_(std::move(schema)), range_(range) {}
  StatusOr<bool> Next(float* label, int64_t* ids, float* values) override {
    std::string_view rec;
    const io::TFRecordReader::Counters before = r_->counters();
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(&rec));
    NoteDropped(before, more);
    if (!more) return false;
    last_end_ = r_->record_offset() + io::kTFRecordHeaderBytes + rec.size() + io::kTFRecordFooterBytes;
    next_index_ = r_->record_index() + 1;
    Status s = io::ParseSeedExample(rec, schema_, label, ids, values);
    if (s.ok()) s = range_.Apply(ids, schema_.field_size, &oov_ids_, [] { return std::string(); });
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
  std::string Location() const override {
    return r_->name() + ": record " + std::to_string(r_->record_index()) + " at offset " +
           std::to_string(r_->record_offset());
  }
  std::vector<Dropped> TakeDropped() override { return std::move(dropped_); }
  std::string SkippedSummary() const override {
    auto c = r_->counters();
    return "skipped_records=" + std::to_string(c.skipped_records) + " skipped_bytes=" + std::to_string(c.skipped_bytes);
  }

 private:
  std::unique_ptr<io::TFRecordReader> r_;
  io::Compression c_;  // of the file (r_ reads the already decompressed stream)
  io::SeedSchema schema_;
  IdRange range_;
  uint64_t records_ = 0;
  uint64_t last_end_ = 0, next_index_ = 0;  // end offset / index after the last returned record
  std::vector<Dropped> dropped_;

  // Records what one r_->Next() call skipped: the region between the last
  // returned record and the next one (or the end of the stream).
  void NoteDropped(const io::TFRecordReader::Counters& before, bool more) {
    const io::TFRecordReader::Counters after = r_->counters();
    if (after.skipped_records == before.skipped_records) return;
    Dropped d;
    d.records_before = records_;
    d.index = next_index_;
    d.offset = last_end_;
    d.records = after.skipped_records - before.skipped_records;
    d.bytes = more ? r_->record_offset() - last_end_ : after.skipped_bytes - before.skipped_bytes;
    d.exact = after.resyncs == before.resyncs;
    dropped_.push_back(d);
  }
};

class CriteoExampleReader final : public ExampleReader {
 public:
  CriteoExampleReader(std::unique_ptr<io::CriteoReader> r, io::Compression c, RecordFormat f,
                      const ExampleReaderOptions& o)
      : r_(std::move(r)), c_(c), f_(f), hash_{o.feature_size, 0}, vocab_(o.vocabulary), range_(IdRange::Of(o, 0)) {}
  StatusOr<bool> Next(float* label, int64_t* ids, float* values) override {
    CTRAIN_ASSIGN_OR_RETURN(bool more, r_->Next(&row_));
    if (!more) return false;
    *label = row_.label;
    if (vocab_ != nullptr)
      vocab_->Featurize(row_, ids, values);
    else
      io::HashCriteoRow(row_, hash_, ids, values);
    CTRAIN_RETURN_IF_ERROR(range_.Apply(ids, io::kCriteoFields, &oov_ids_, [this] { return Location(); }));
    return true;
  }
  RecordFormat format() const override { return f_; }
  io::Compression compression() const override { return c_; }
  const std::string& name() const override { return r_->name(); }
  uint64_t records() const override { return r_->counters().records; }
  std::string Location() const override { return r_->name() + ":" + std::to_string(r_->line_number()); }
  std::string SkippedSummary() const override {
    const auto& c = r_->counters();
    return "header_lines=" + std::to_string(c.header_lines) + " blank_lines=" + std::to_string(c.blank_lines) +
           " unterminated_last_line=" + std::to_string(c.unterminated_last_line) +
           (c.padded_rows > 0 ? " padded_rows=" + std::to_string(c.padded_rows) + " (" +
                                    std::to_string(c.padded_cells) +
                                    " missing trailing cells read as empty: --criteo-pad-missing-trailing)"
                              : std::string());
  }

 private:
  std::unique_ptr<io::CriteoReader> r_;
  io::Compression c_;
  RecordFormat f_;
  io::CriteoHashOptions hash_;
  const io::CriteoVocabulary* vocab_;
  IdRange range_;
  io::CriteoRow row_;
};

}  // namespace

Status IdRangeError(int32_t f, int32_t field_size, int64_t id, int64_t id_limit, int32_t id_base,
                    std::string_view where, bool limit_is_model) {
  std::string m(where);
  if (!m.empty()) m += ": ";
  const int64_t written = id + id_base;
  m += "field " + std::to_string(f + 1) + " of " + std::to_string(field_size) + ": feature id " +
       std::to_string(written) + " (as written";
  if (id_base != 0) m += ", id_base " + std::to_string(id_base);
  m += ") is outside [" + std::to_string(id_base) + ", " + std::to_string(id_limit + id_base) + ")";
  const std::string model = limit_is_model ? "the model's " : "";
  if (id < 0 && written >= 0) {
    // Below the base, e.g. id 0 with --id-base 1: the file counts from a lower base.
    m += limit_is_model ? ": the model was trained on ids starting at " + std::to_string(id_base) +
                              "; this input's ids start lower, so it is not encoded like the training data"
                        : ": the file's ids start below --id-base " + std::to_string(id_base) +
                              " (use --id-base " + std::to_string(written) + " if they start at " +
                              std::to_string(written) + ")";
  } else if (id < 0) {
    m += ": ids must not be negative";
  } else if (id == id_limit && id_base == 0) {
    // One past the top with base 0: typically a 1-based LIBSVM file.
    m += limit_is_model ? ": one past " + model + "top id; if this file's ids are 1-based it is not encoded like "
                                                  "the training data (0-based)"
                        : ": one past the top; if the file's ids are 1-based (classic LIBSVM), use --id-base 1, "
                          "otherwise increase --feature-size";
  } else {
    m += limit_is_model ? ": the model was trained with feature_size " + std::to_string(id_limit) +
                              " and has no embedding for it (is the input encoded like the training data?)"
                        : ": increase --feature-size, or pass --oov bucket to read ids beyond it as their field's "
                          "out-of-vocabulary row";
  }
  return InvalidArgumentError(m);
}

Status CheckOptionsForFormat(const std::string& name, RecordFormat format, const ExampleReaderOptions& options) {
  if (options.criteo_pad_missing_trailing && format != RecordFormat::kCriteoTsv &&
      format != RecordFormat::kCriteoCsv)
    return InvalidArgumentError(name + ": --criteo-pad-missing-trailing reads Criteo TSV/CSV rows whose trailing "
                                "empty cells were stripped, but this input is " +
                                std::string(RecordFormatName(format)) +
                                (format == RecordFormat::kTFRecord
                                     ? " (drop the flag)"
                                     : " (drop the flag, or pass --format criteo-tsv / criteo-csv if it is Criteo "
                                       "text)"));
  if (format == RecordFormat::kLibFfm) return InvalidArgumentError(LibFfmNeedsSpecMessage(name));
  if (format == RecordFormat::kTFRecord && options.labels == io::LabelMode::kAbsent)
    return InvalidArgumentError(name + ": --no-label reads LibSVM and Criteo text without the label column; a "
                                "TFRecord example is read with its '" + options.schema.label_key + "' feature");
  return Status::OK();
}

std::string LibFfmNeedsSpecMessage(const std::string& name) {
  return name + ": libFFM (field:feature:value) is read through a feature spec, each libFFM field a multi-hot field: "
                "`ctrain inspect " + name + " --suggest-spec spec.json`, then pass --feature-spec spec.json to "
                "train/eval/predict/convert (Python: Trainer(feature_spec=...), read(..., feature_spec=...)); without "
                "one it has no fixed field layout (detected from the first lines; if it is LibSVM, pass --format "
                "libsvm to see the bad token)";
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

namespace {
// Bytes read as uncompressed that start like a gzip member or a zlib stream
// that did not inflate (so detection said "none"): name the compression and
// zlib's complaint instead of letting the TFRecord framing report a "length
// crc mismatch" on compressed bytes. OK when `head` is a TFRecord header.
// gzip or zlib when `head` starts with that signature (kNone otherwise, and
// for a valid TFRecord header).
io::Compression CompressedSignature(std::string_view head) {
  if (head.size() < 2 || io::LooksLikeTFRecordHeader(head)) return io::Compression::kNone;
  const unsigned b0 = static_cast<uint8_t>(head[0]), b1 = static_cast<uint8_t>(head[1]);
  if (b0 == 0x1f && b1 == 0x8b) return io::Compression::kGzip;
  if ((b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && (b0 * 256 + b1) % 31 == 0 && (b1 & 0x20) == 0)
    return io::Compression::kZlib;
  return io::Compression::kNone;
}

Status CheckNotCompressed(const std::string& name, std::string_view head) {
  const io::Compression c = CompressedSignature(head);
  if (c == io::Compression::kNone) return Status::OK();
  const std::string kind(io::CompressionName(c));
  std::string why = "it does not inflate";
  auto inflated = io::NewInflatingFile(io::NewMemoryFile(name, std::string(head)), c);
  if (inflated.ok()) {
    std::string buf(1 << 16, '\0');
    for (;;) {
      StatusOr<size_t> got = (*inflated)->Read(buf.data(), buf.size());
      if (!got.ok()) {
        why = got.status().message();
        break;
      }
      if (*got == 0) break;
    }
  }
  return InvalidArgumentError(name + ": not a TFRecord (no valid length crc in the first 12 bytes); the file starts "
                              "like a " + kind + " stream, read as uncompressed: " + why +
                              " (pass --compression " + kind + " to read it as " + kind + ")");
}
}  // namespace

StatusOr<SniffedStream> SniffStream(std::unique_ptr<io::SequentialFile> raw, io::Compression compression,
                                    RecordFormat requested) {
  SniffedStream o;
  CTRAIN_ASSIGN_OR_RETURN(o.stream, io::WrapForRead(std::move(raw), compression, &o.compression, &PlainProbe));
  o.format = requested;
  if (o.compression != io::Compression::kNone && requested != RecordFormat::kTFRecord) {
    // Decompressed bytes that start like another gzip member or zlib stream: a
    // file compressed twice (any format would misread it byte by byte).
    std::string head(io::kPeekBytes, '\0');
    CTRAIN_ASSIGN_OR_RETURN(size_t n, o.stream->Read(head.data(), head.size()));
    head.resize(n);
    const io::Compression inner = CompressedSignature(head);
    // Text can start like a zlib header ("x^"); real compressed bytes are not text.
    if (inner != io::Compression::kNone && !LooksLikeText(head)) {
      const std::string outer(io::CompressionName(o.compression)), in(io::CompressionName(inner));
      return InvalidArgumentError(o.stream->name() + ": the " + outer + "-decompressed bytes start like another " + in +
                                  " stream: compressed twice? (decompress it once, e.g. `gzip -dc FILE > FILE2`, and "
                                  "read FILE2)");
    }
    o.stream = std::make_unique<PrefixedFile>(std::move(head), std::move(o.stream));
  }
  if (requested == RecordFormat::kTFRecord && o.compression == io::Compression::kNone) {
    std::string head(io::kPeekBytes, '\0');
    CTRAIN_ASSIGN_OR_RETURN(size_t n, o.stream->Read(head.data(), head.size()));
    head.resize(n);
    CTRAIN_RETURN_IF_ERROR(CheckNotCompressed(o.stream->name(), head));
    o.empty = n == 0;
    o.stream = std::make_unique<PrefixedFile>(std::move(head), std::move(o.stream));
  } else if (requested == RecordFormat::kAuto) {
    std::string head(io::kPeekBytes, '\0');
    CTRAIN_ASSIGN_OR_RETURN(size_t n, o.stream->Read(head.data(), head.size()));
    head.resize(n);
    o.empty = n == 0;
    if (n == 0)
      o.format = RecordFormat::kTFRecord;  // any format reads zero records
    else if (io::LooksLikeTFRecordHeader(head))
      o.format = RecordFormat::kTFRecord;
    else if (LooksLikeText(head)) {
      CTRAIN_ASSIGN_OR_RETURN(o.format, SniffText(head, o.stream->name()));
    }
    else {
      CTRAIN_RETURN_IF_ERROR(CheckNotCompressed(o.stream->name(), head));
      if (LooksLikeTextWithStrayBytes(head)) {
        CTRAIN_ASSIGN_OR_RETURN(o.format, SniffText(head, o.stream->name()));
        o.stream = std::make_unique<PrefixedFile>(std::move(head), std::move(o.stream));
        return o;
      }
      return InvalidArgumentError(o.stream->name() +
                                  ": cannot detect the record format: not a TFRecord (no valid length crc "
                                  "in the first 12 bytes) and not text; pass --format");
    }
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

StatusOr<SniffResult> SniffFile(const std::string& path, io::Compression compression, RecordFormat requested) {
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream o, OpenAndSniff(path, compression, requested));
  return SniffResult{o.format, o.compression};
}

namespace {
StatusOr<std::unique_ptr<ExampleReader>> OpenSniffed(const std::string& path, const ExampleReaderOptions& options,
                                                     SniffedStream o);
}  // namespace

StatusOr<std::unique_ptr<ExampleReader>> OpenExampleReader(const std::string& path,
                                                           const ExampleReaderOptions& options) {
  if (options.field_size <= 0) return InvalidArgumentError("field_size must be positive");
  CTRAIN_ASSIGN_OR_RETURN(SniffedStream o, OpenAndSniff(path, options.compression, options.format, options.pipe_timeout_ms));
  const bool empty = o.empty;
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ExampleReader> r, OpenSniffed(path, options, std::move(o)));
  r->empty_input_ = empty;
  return r;
}

namespace {
StatusOr<std::unique_ptr<ExampleReader>> OpenSniffed(const std::string& path, const ExampleReaderOptions& options,
                                                     SniffedStream o) {
  CTRAIN_RETURN_IF_ERROR(CheckOptionsForFormat(path, o.format, options));
  switch (o.format) {
    case RecordFormat::kLibSvm: {
      io::LibSvmOptions lo;
      lo.field_size = options.field_size;
      lo.id_base = options.id_base;
      lo.max_line_bytes = options.max_line_bytes;
      lo.labels = options.labels;
      CTRAIN_ASSIGN_OR_RETURN(auto r, io::LibSvmReader::Open(std::move(o.stream), lo));
      return std::unique_ptr<ExampleReader>(new LibSvmExampleReader(std::move(r), o.compression,
                                                                     IdRange::Of(options, options.id_base)));
    }
    case RecordFormat::kTFRecord: {
      io::TFRecordReaderOptions to;
      to.compression = io::Compression::kNone;  // the stream is already decompressed
      to.skip_corrupt_records = options.skip_corrupt_records;
      to.max_skipped_records = options.max_skipped_records;
      CTRAIN_ASSIGN_OR_RETURN(auto r, io::TFRecordReader::FromFile(std::move(o.stream), to));
      io::SeedSchema schema = options.schema;
      schema.field_size = options.field_size;
      return std::unique_ptr<ExampleReader>(new TFRecordExampleReader(std::move(r), o.compression, std::move(schema),
                                                                       IdRange::Of(options, 0)));
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
      co.max_line_bytes = options.max_line_bytes;
      co.labels = options.labels;
      co.pad_missing_trailing = options.criteo_pad_missing_trailing;
      CTRAIN_ASSIGN_OR_RETURN(auto r, io::CriteoReader::Open(std::move(o.stream), co));
      return std::unique_ptr<ExampleReader>(new CriteoExampleReader(std::move(r), o.compression, o.format, options));
    }
    case RecordFormat::kLibFfm:  // refused above
    case RecordFormat::kAuto: break;
  }
  return InternalError("unreachable format");
}
}  // namespace

namespace {

class LibSvmExampleWriter final : public ExampleWriter {
 public:
  LibSvmExampleWriter(std::unique_ptr<io::WritableFile> f, int32_t id_base) : f_(std::move(f)), id_base_(id_base) {}
  Status Write(float label, std::span<const int64_t> ids, std::span<const float> values) override {
    CTRAIN_RETURN_IF_ERROR(CheckWritable(RecordFormat::kLibSvm, label, ids, values, id_base_));
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
    CTRAIN_RETURN_IF_ERROR(CheckWritable(RecordFormat::kTFRecord, label, ids, values, 0));
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

Status CheckWritable(RecordFormat format, float label, std::span<const int64_t> ids,
                     std::span<const float> values, int32_t id_base) {
  if (label != 0.0f && label != 1.0f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(label));
    return InvalidArgumentError(std::string("label ") + buf + " is not 0 or 1");
  }
  if (ids.size() != values.size())
    return InvalidArgumentError(std::to_string(ids.size()) + " ids but " + std::to_string(values.size()) + " values");
  if (ids.empty()) return InvalidArgumentError("no fields: a record needs at least one");
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(values[i]));
      return InvalidArgumentError("field " + std::to_string(i + 1) + ": value " + buf + " is not finite");
    }
  }
  if (format == RecordFormat::kLibSvm) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0)
        return InvalidArgumentError("field " + std::to_string(i + 1) + ": id " + std::to_string(ids[i]) +
                                    " is negative");
      if (ids[i] > std::numeric_limits<int64_t>::max() - id_base)
        return InvalidArgumentError("field " + std::to_string(i + 1) + ": id " + std::to_string(ids[i]) +
                                    " + output id base " + std::to_string(id_base) + " does not fit in int64");
    }
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<ExampleWriter>> OpenExampleWriter(const std::string& path,
                                                           const ExampleWriterOptions& options) {
  if (options.compression == io::Compression::kAuto)
    return InvalidArgumentError("output compression must be none, gzip or zlib (not auto)");
  if (options.id_base < 0)
    return InvalidArgumentError("output id base " + std::to_string(options.id_base) + " is negative");
  if (options.format == RecordFormat::kTFRecord) {
    const io::SeedSchema& k = options.schema;
    if (k.label_key.empty() || k.ids_key.empty() || k.values_key.empty() || k.label_key == k.ids_key ||
        k.label_key == k.values_key || k.ids_key == k.values_key)
      return InvalidArgumentError("tfrecord output keys must be distinct and non-empty: label '" + k.label_key +
                                  "', ids '" + k.ids_key + "', values '" + k.values_key + "'");
  }
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
