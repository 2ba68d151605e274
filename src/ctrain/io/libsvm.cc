#include "ctrain/io/libsvm.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "ctrain/io/text_number.h"

namespace ctrain::io {
namespace {

// Token delimiters: whitespace (space, \t, \r, \v, \f) and '#' (comment start).
constexpr std::array<bool, 256> MakeTable(bool with_hash) {
  std::array<bool, 256> t{};
  t[' '] = t['\t'] = t['\r'] = t['\v'] = t['\f'] = true;
  if (with_hash) t['#'] = true;
  return t;
}
constexpr std::array<bool, 256> kSpace = MakeTable(false);
constexpr std::array<bool, 256> kDelim = MakeTable(true);

inline bool IsSpace(char c) { return kSpace[static_cast<unsigned char>(c)]; }
inline bool IsDelim(char c) { return kDelim[static_cast<unsigned char>(c)]; }
inline bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

inline const char* TokenEnd(const char* p, const char* end) {
  while (p < end && !IsDelim(*p)) ++p;
  return p;
}

// The advice for a line whose pair count is not field_size: a file whose
// lines all hold `n` pairs reads with --field-size n; lines with a varying
// number of pairs (sparse LibSVM, tags, histories) are read through a feature
// spec's field map (data/feature_spec.h).
std::string PairCountHint(int64_t n) {
  std::string s = " (";
  if (n > 0) s += "if every line has " + std::to_string(n) + " pairs, pass --field-size " + std::to_string(n) + "; ";
  return s + "lines with a varying number of pairs: give a --feature-spec with a field map, docs/feature-spec.md)";
}

// 'id:value' tokens in [p, end) up to a comment: how many pairs a long line holds.
int64_t CountPairTokens(const char* p, const char* end) {
  int64_t n = 0;
  while (p < end && *p != '#') {
    while (p < end && IsSpace(*p)) ++p;
    const char* te = p;
    while (te < end && !IsDelim(*te)) ++te;
    if (te > p && std::memchr(p, ':', static_cast<size_t>(te - p)) != nullptr) ++n;
    if (te == p) break;
    p = te;
  }
  return n;
}

std::string_view View(const char* b, const char* e) {
  return std::string_view(b, static_cast<size_t>(e - b));
}

// Builds the error for a pair token [ts, te) that failed to parse.
Status PairError(const TextLocation& where, const char* line, const char* ts, const char* te,
                 const LibSvmOptions& options) {
  const size_t col = static_cast<size_t>(ts - line) + 1;
  const std::string_view tok = View(ts, te);
  const size_t colon = tok.find(':');
  if (tok.substr(0, 4) == "qid:") {
    return TextError(where, col, "qid token " + QuoteToken(tok) + " must come right after the label");
  }
  if (colon == std::string_view::npos) {
    return TextError(where, col, "expected 'id:value', found " + QuoteToken(tok));
  }
  const std::string_view id_text = tok.substr(0, colon);
  const std::string_view value_text = tok.substr(colon + 1);
  int64_t id;
  const NumParse id_status = ParseNonNegativeInt64(id_text.data(), id_text.data() + id_text.size(), &id);
  if (id_status == NumParse::kSyntax) {
    return TextError(where, col,
                     "bad id " + QuoteToken(id_text) + " in " + QuoteToken(tok) +
                         ": expected a non-negative integer");
  }
  if (id_status == NumParse::kOutOfRange) {
    return TextError(where, col, "id " + QuoteToken(id_text) + " does not fit in int64");
  }
  if (id < options.id_base) {
    return TextError(where, col,
                     "id " + std::to_string(id) + " is below id_base " + std::to_string(options.id_base));
  }
  const size_t vcol = col + colon + 1;
  if (value_text.find(':') != std::string_view::npos) {
    // Two pairs glued together ("13:0.5e-0114:1", a missing space) or a libFFM
    // triple. The rest of the file decided the format; name the token. An
    // integer between the colons reads as a libFFM triple, anything else as
    // a value glued to the next pair.
    const std::string_view middle = value_text.substr(0, value_text.find(':'));
    int64_t feature;
    if (ParseNonNegativeInt64(middle.data(), middle.data() + middle.size(), &feature) == NumParse::kOk) {
      return TextError(where, col,
                       "found 'field:feature:value' triple " + QuoteToken(tok) +
                           "; this is libFFM, not LibSVM (or two pairs glued together: missing space?)");
    }
    return TextError(where, col,
                     "bad value " + QuoteToken(value_text) + " for id " + std::string(id_text) +
                         ": token holds two ':'; missing space between two 'id:value' pairs? (libFFM "
                         "'field:feature:value' files need --format libffm)");
  }
  float v;
  switch (ParseFloat(value_text.data(), value_text.data() + value_text.size(), &v)) {
    case NumParse::kNotFinite:
      return TextError(where, vcol,
                       "value " + QuoteToken(value_text) + " for id " + std::string(id_text) + " is not finite");
    case NumParse::kOutOfRange:
      return TextError(where, vcol,
                       "value " + QuoteToken(value_text) + " for id " + std::string(id_text) + " is " +
                           OutOfRangeText(value_text, false));
    default:
      return TextError(where, vcol, "bad value " + QuoteToken(value_text) + " for id " + std::string(id_text));
  }
}

}  // namespace

Status ValidateLibSvmOptions(const LibSvmOptions& options) {
  if (options.field_size < 0) {
    return InvalidArgumentError("LibSVM options: field_size " + std::to_string(options.field_size) + " < 0");
  }
  if (options.id_base < 0) {
    return InvalidArgumentError("LibSVM options: id_base " + std::to_string(options.id_base) + " < 0");
  }
  return Status::OK();
}

Status ParseLibSvmLine(std::string_view line, const LibSvmOptions& options, float* label,
                       int64_t* ids, float* values, int32_t* num_fields, int32_t capacity,
                       LibSvmLineInfo* info, const TextLocation& where) {
  if (capacity < options.field_size) {
    return InvalidArgumentError("ParseLibSvmLine: capacity " + std::to_string(capacity) +
                                " < field_size " + std::to_string(options.field_size));
  }
  *num_fields = 0;
  info->qid_tokens = 0;
  info->trailing_comment = false;
  const char* const begin = line.data();
  const char* const end = begin + line.size();
  const char* p = begin;
  auto col = [begin](const char* q) { return static_cast<size_t>(q - begin) + 1; };

  while (p < end && IsSpace(*p)) ++p;
  if (p == end) {
    info->kind = LineKind::kBlank;
    return Status::OK();
  }
  if (*p == '#') {
    info->kind = LineKind::kComment;
    return Status::OK();
  }
  info->kind = LineKind::kData;

  // Label.
  const char* te = TokenEnd(p, end);
  const bool pair = std::memchr(p, ':', static_cast<size_t>(te - p)) != nullptr;  // a label never holds ':'
  const bool labelled = options.labels == LabelMode::kRequired || (options.labels == LabelMode::kAuto && !pair);
  if (!labelled) {
    *label = std::numeric_limits<float>::quiet_NaN();
  } else if (!ParseBinaryLabel(p, te, label)) {
    return TextError(where, col(p), "bad label " + QuoteToken(View(p, te)) + ": expected 0, 1 or -1");
  } else {
    p = te;
  }

  const int32_t limit = options.field_size;
  const int64_t id_base = options.id_base;
  int32_t n = 0;
  for (;;) {
    while (p < end && IsSpace(*p)) ++p;
    if (p == end) break;
    if (*p == '#') {
      info->trailing_comment = true;
      break;
    }
    const char* ts = p;
    te = TokenEnd(p, end);
    if (n == 0 && te - ts >= 4 && std::memcmp(ts, "qid:", 4) == 0) {
      int64_t qid;
      if (ParseNonNegativeInt64(ts + 4, te, &qid) != NumParse::kOk) {
        return TextError(where, col(ts), "bad qid token " + QuoteToken(View(ts, te)) +
                                             ": expected 'qid:' and a non-negative integer");
      }
      ++info->qid_tokens;
      p = te;
      continue;
    }
    if (n == limit) {
      return TextError(where, col(ts),
                       "more than " + std::to_string(limit) + " 'id:value' pairs (field_size " +
                           std::to_string(limit) + ")" +
                           (options.variable_length
                                ? std::string()
                                : ": the line has " + std::to_string(n + CountPairTokens(ts, end)) + " pairs" +
                                      PairCountHint(n + CountPairTokens(ts, end))));
    }
    // id: decimal digits, overflow-checked.
    const char* q = ts;
    int64_t id = 0;
    bool ok = q < te && IsDigit(*q);
    for (; q < te && IsDigit(*q); ++q) {
      const int d = *q - '0';
      if (id > (std::numeric_limits<int64_t>::max() - d) / 10) {
        ok = false;
        break;
      }
      id = id * 10 + d;
    }
    float v;
    if (!ok || q == te || *q != ':' || id < id_base || ParseFloat(q + 1, te, &v) != NumParse::kOk) {
      return PairError(where, begin, ts, te, options);
    }
    ids[n] = id - id_base;
    values[n] = v;
    ++n;
    p = te;
  }
  if (!options.variable_length && n != limit) {
    return TextError(where, col(p),
                     "expected " + std::to_string(limit) + " 'id:value' pairs, found " + std::to_string(n) +
                         PairCountHint(n));
  }
  *num_fields = n;
  return Status::OK();
}

void AppendLibSvmLine(float label, std::span<const int64_t> ids, std::span<const float> values,
                      int32_t id_base, std::string* out) {
  char buf[64];
  out->push_back(label >= 0.5f ? '1' : '0');
  for (size_t i = 0; i < ids.size(); ++i) {
    char* p = buf;
    *p++ = ' ';
    p = std::to_chars(p, buf + sizeof(buf), ids[i] + id_base).ptr;
    *p++ = ':';
    p = std::to_chars(p, buf + sizeof(buf), values[i]).ptr;
    out->append(buf, static_cast<size_t>(p - buf));
  }
  out->push_back('\n');
}

// ---------------------------------------------------------------- LibSvmReader

LibSvmReader::LibSvmReader(std::unique_ptr<SequentialFile> file, const LibSvmOptions& options,
                           size_t read_buffer_size)
    : file_(std::move(file)), lines_(file_.get(), read_buffer_size < 1 ? 1 : read_buffer_size, options.max_line_bytes),
      options_(options) {}

StatusOr<std::unique_ptr<LibSvmReader>> LibSvmReader::Open(const std::string& path,
                                                           const LibSvmOptions& options,
                                                           size_t read_buffer_size) {
  CTRAIN_RETURN_IF_ERROR(ValidateLibSvmOptions(options));
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, OpenSequentialFile(path));
  return Open(std::move(file), options, read_buffer_size);
}

StatusOr<std::unique_ptr<LibSvmReader>> LibSvmReader::Open(std::unique_ptr<SequentialFile> file,
                                                           const LibSvmOptions& options,
                                                           size_t read_buffer_size) {
  CTRAIN_RETURN_IF_ERROR(ValidateLibSvmOptions(options));
  return std::unique_ptr<LibSvmReader>(new LibSvmReader(std::move(file), options, read_buffer_size));
}

StatusOr<bool> LibSvmReader::Next(float* label, int64_t* ids, float* values, int32_t* num_fields) {
  if (!status_.ok()) return status_;
  std::string_view line;
  LibSvmLineInfo info;
  for (;;) {
    StatusOr<bool> more = lines_.Next(&line);
    if (!more.ok()) {
      status_ = more.status();
      return status_;
    }
    if (!*more) return false;
    ++counters_.lines;
    if (lines_.last_line_unterminated()) counters_.unterminated_last_line = 1;
    Status s = ParseLibSvmLine(line, options_, label, ids, values, num_fields, options_.field_size,
                               &info, TextLocation{file_->name(), lines_.line_number()});
    if (!s.ok() && lines_.last_line_unterminated()) {
      s = InvalidArgumentError(std::string(s.message()) +
                               "; it is the last line and has no final newline: the file looks cut (a torn tail)");
    }
    if (!s.ok() && labels_decided_at_ > 0) {
      s = InvalidArgumentError(std::string(s.message()) + " (the first data line, line " +
                               std::to_string(labels_decided_at_) + ", " +
                               (options_.labels == LabelMode::kAbsent ? "has no label" : "starts with a label") +
                               ", so every line must)");
    }
    if (!s.ok()) {
      status_ = std::move(s);
      return status_;
    }
    if (info.kind == LineKind::kData && options_.labels == LabelMode::kAuto) {  // the first data line decides
      options_.labels = std::isnan(*label) ? LabelMode::kAbsent : LabelMode::kRequired;
      labels_decided_at_ = lines_.line_number();
    }
    switch (info.kind) {
      case LineKind::kBlank:
        ++counters_.blank_lines;
        continue;
      case LineKind::kComment:
        ++counters_.comment_lines;
        continue;
      case LineKind::kData:
        break;
    }
    counters_.qid_tokens += static_cast<uint64_t>(info.qid_tokens);
    if (info.trailing_comment) ++counters_.trailing_comments;
    ++counters_.records;
    return true;
  }
}

}  // namespace ctrain::io
