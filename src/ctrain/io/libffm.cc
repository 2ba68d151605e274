#include "ctrain/io/libffm.h"

#include "ctrain/io/text_number.h"

namespace ctrain::io {
namespace {

inline bool IsFfmSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

Status ParseLibFfmLine(std::string_view line, float* label, std::vector<FfmTriple>* triples, bool* is_data,
                       const TextLocation& where) {
  triples->clear();
  const char* const begin = line.data();
  const char* p = begin;
  const char* const end = begin + line.size();
  auto col = [&](const char* q) { return static_cast<size_t>(q - begin) + 1; };
  while (p < end && IsFfmSpace(*p)) ++p;
  if (p == end || *p == '#') {
    *is_data = false;
    return Status::OK();
  }
  *is_data = true;
  const char* t = p;
  while (t < end && !IsFfmSpace(*t)) ++t;
  if (!ParseBinaryLabel(p, t, label))
    return TextError(where, col(p), "bad label " + QuoteToken(std::string_view(p, t - p)) + ": expected 0, 1 or -1");
  p = t;
  for (;;) {
    while (p < end && IsFfmSpace(*p)) ++p;
    if (p == end) break;
    t = p;
    while (t < end && !IsFfmSpace(*t)) ++t;
    const std::string_view tok(p, t - p);
    const size_t c1 = tok.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : tok.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
      return TextError(where, col(p), "expected 'field:feature:value', found " + QuoteToken(tok));
    FfmTriple tr;
    if (ParseNonNegativeInt64(p, p + c1, &tr.field) != NumParse::kOk)
      return TextError(where, col(p), "bad field " + QuoteToken(tok.substr(0, c1)) + ": expected a non-negative integer");
    if (ParseNonNegativeInt64(p + c1 + 1, p + c2, &tr.feature) != NumParse::kOk)
      return TextError(where, col(p + c1 + 1),
                       "bad feature " + QuoteToken(tok.substr(c1 + 1, c2 - c1 - 1)) + ": expected a non-negative integer");
    if (ParseFloat(p + c2 + 1, t, &tr.value) != NumParse::kOk)
      return TextError(where, col(p + c2 + 1), "bad value " + QuoteToken(tok.substr(c2 + 1)) + ": expected a finite number");
    triples->push_back(tr);
    p = t;
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<LibFfmReader>> LibFfmReader::Open(std::unique_ptr<SequentialFile> file, size_t max_line_bytes) {
  return std::unique_ptr<LibFfmReader>(new LibFfmReader(std::move(file), max_line_bytes));
}

StatusOr<bool> LibFfmReader::Next(float* label, const std::vector<FfmTriple>** triples) {
  std::string_view line;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, lines_.Next(&line));
    if (!more) return false;
    ++counters_.lines;
    bool is_data = false;
    CTRAIN_RETURN_IF_ERROR(
        ParseLibFfmLine(line, label, &triples_, &is_data, TextLocation{file_->name(), lines_.line_number()}));
    if (!is_data) {
      ++counters_.skipped_lines;
      continue;
    }
    ++counters_.records;
    *triples = &triples_;
    return true;
  }
}

}  // namespace ctrain::io
