#include "ctrain/io/criteo.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>
#include <utility>

#include "ctrain/io/feature_hash.h"
#include "ctrain/io/text_number.h"

namespace ctrain::io {
namespace {

constexpr std::string_view kUnk = "<unk>";

// (Built with append: GCC 12 warns falsely on "literal" + std::string.)
std::string FieldName(char kind, int k) {
  std::string s(1, kind);
  s += std::to_string(k + 1);
  return s;
}
std::string NumericName(int i) { return FieldName('I', i); }
std::string CategoricalName(int j) { return FieldName('C', j); }

// "<file>:<line>: expected 40 cells, got N" (N counts every cell of the line).
constexpr std::string_view kPadHint =
    "; if the trailing empty cells were stripped, --criteo-pad-missing-trailing reads the missing cells as empty "
    "(counted)";

Status CellCountError(const TextLocation& where, std::string_view line, char separator, bool has_label) {
  const size_t cells = static_cast<size_t>(std::count(line.begin(), line.end(), separator)) + 1;
  if (!has_label) {
    std::string what = "expected 39 cells (I1..I13 C1..C26, no label), got " + std::to_string(cells);
    if (cells < kCriteoColumns - 1) what += std::string(" (a short row") + std::string(kPadHint) + ")";
    return TextError(where, 0, what);
  }
  std::string what = "expected 40 cells, got " + std::to_string(cells);
  const char other = separator == '\t' ? ',' : '\t';
  if (cells == 1 && std::count(line.begin(), line.end(), other) >= kCriteoColumns - 1)
    what += std::string(" (no ") + (separator == '\t' ? "tab" : "comma") + " in the line but " +
            (separator == '\t' ? "commas" : "tabs") + ": pass --format " +
            (separator == '\t' ? "criteo-csv" : "criteo-tsv") + ")";
  else if (cells == kCriteoColumns - 1)
    what += " (39 cells is the layout of Criteo's unlabelled test.txt: `ctrain predict` reads it, training and "
            "eval need the label column first" + std::string(kPadHint) + ")";
  else if (cells < kCriteoColumns)
    what += " (a cut or short row; a missing value is an empty cell, the separators stay" + std::string(kPadHint) +
            ")";
  return TextError(where, 0, what);
}

}  // namespace

// ------------------------------------------------------------------ parsing

Status ParseCriteoLine(std::string_view line, char separator, CriteoRow* row, const TextLocation& where,
                       bool has_label, bool pad_missing_trailing) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const char* const begin = line.data();
  const char* const end = begin + line.size();
  row->numeric_present = 0;
  row->categorical_present = 0;
  row->padded_cells = 0;
  // The cell count first: a 39-cell row (no label) would otherwise fail later
  // with a misleading "I13: expected a number, found '68fd1e64'".
  const ptrdiff_t separators = std::count(begin, end, separator);
  const ptrdiff_t want = kCriteoColumns - (has_label ? 1 : 2);
  if (separators > want || (separators < want && !pad_missing_trailing))
    return CellCountError(where, line, separator, has_label);
  const char* p = begin;
  int cell = has_label ? 0 : 1;  // the cell numbering of a labelled row
  if (!has_label) row->label = std::numeric_limits<float>::quiet_NaN();
  for (;;) {
    const char* e = static_cast<const char*>(std::memchr(p, separator, static_cast<size_t>(end - p)));
    if (e == nullptr) e = end;
    const size_t col = static_cast<size_t>(p - begin) + 1;
    if (cell == 0) {
      if (p == e) return TextError(where, col, "missing label");
      double v;
      if (e - p == 1 && (*p == '0' || *p == '1')) {
        row->label = static_cast<float>(*p - '0');
      } else if (ParseDouble(p, e, &v) == NumParse::kOk && (v == 0.0 || v == 1.0)) {
        row->label = static_cast<float>(v);
      } else {
        return TextError(where, col,
                         "bad label " + QuoteToken(std::string_view(p, static_cast<size_t>(e - p))) +
                             ": expected 0 or 1");
      }
    } else if (cell <= kCriteoNumeric) {
      const int i = cell - 1;
      if (p == e) {
        row->numeric[i] = 0;
      } else {
        double v = 0;
        const NumParse st = ParseDouble(p, e, &v);
        if (st != NumParse::kOk) {
          const std::string tok = QuoteToken(std::string_view(p, static_cast<size_t>(e - p)));
          return TextError(where, col,
                           st == NumParse::kNotFinite
                               ? NumericName(i) + ": value " + tok + " is not finite"
                           : st == NumParse::kOutOfRange
                               ? NumericName(i) + ": value " + tok + " is " +
                                     OutOfRangeText(std::string_view(p, static_cast<size_t>(e - p)), true)
                               : NumericName(i) + ": expected a number, found " + tok);
        }
        row->numeric[i] = v;
        row->numeric_present |= 1u << i;
      }
    } else {
      const int j = cell - 1 - kCriteoNumeric;
      for (const char* q = p; q < e; ++q) {
        const unsigned char c = static_cast<unsigned char>(*q);
        if (c < 0x20 || c == 0x7f) {
          return TextError(where, static_cast<size_t>(q - begin) + 1,
                           CategoricalName(j) + ": control byte " + QuoteToken(std::string_view(q, 1)) +
                               " in category " + QuoteToken(std::string_view(p, static_cast<size_t>(e - p))));
        }
      }
      row->categorical[j] = std::string_view(p, static_cast<size_t>(e - p));
      if (p != e) row->categorical_present |= 1u << j;
    }
    ++cell;
    if (e == end) break;
    p = e + 1;
  }
  // pad_missing_trailing: the cells the line lacked are missing values.
  row->padded_cells = kCriteoColumns - cell;
  for (; cell < kCriteoColumns; ++cell) {
    if (cell <= kCriteoNumeric) row->numeric[cell - 1] = 0;
    else row->categorical[cell - 1 - kCriteoNumeric] = std::string_view();
  }
  return Status::OK();
}

// ------------------------------------------------------------------ reader

CriteoReader::CriteoReader(std::unique_ptr<SequentialFile> file, const CriteoReaderOptions& options)
    : file_(std::move(file)),
      lines_(file_.get(), options.read_buffer_size < 1 ? 1 : options.read_buffer_size, options.max_line_bytes),
      format_(options.format),
      // A padded short row is a labelled one: kAuto would take a 39-cell row for unlabelled.
      labels_(options.pad_missing_trailing && options.labels == LabelMode::kAuto ? LabelMode::kRequired
                                                                                 : options.labels),
      pad_missing_trailing_(options.pad_missing_trailing) {}

StatusOr<std::unique_ptr<CriteoReader>> CriteoReader::Open(const std::string& path,
                                                           const CriteoReaderOptions& options) {
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, OpenSequentialFile(path));
  return Open(std::move(file), options);
}

StatusOr<std::unique_ptr<CriteoReader>> CriteoReader::Open(std::unique_ptr<SequentialFile> file,
                                                           const CriteoReaderOptions& options) {
  return std::unique_ptr<CriteoReader>(new CriteoReader(std::move(file), options));
}

StatusOr<bool> CriteoReader::Next(CriteoRow* row) {
  if (!status_.ok()) return status_;
  std::string_view line;
  for (;;) {
    StatusOr<bool> more = lines_.Next(&line);
    if (!more.ok()) {
      status_ = more.status();
      return status_;
    }
    if (!*more) return false;
    ++counters_.lines;
    if (lines_.last_line_unterminated()) counters_.unterminated_last_line = 1;
    if (line.empty() || line == "\r") {
      ++counters_.blank_lines;
      continue;
    }
    if (first_line_) {
      first_line_ = false;
      if (format_ == CriteoFormat::kAuto) {
        format_ = line.find('\t') != std::string_view::npos  ? CriteoFormat::kTsv
                  : line.find(',') != std::string_view::npos ? CriteoFormat::kCsv
                                                             : CriteoFormat::kTsv;
      }
      const char sep = format_ == CriteoFormat::kCsv ? ',' : '\t';
      std::string_view first = line.substr(0, line.find(sep));
      if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
      if (first == "label" || (labels_ != LabelMode::kRequired && first == "I1")) {
        ++counters_.header_lines;
        continue;
      }
    }
    const char sep = format_ == CriteoFormat::kCsv ? ',' : '\t';
    if (labels_ == LabelMode::kAuto) {  // the first data row decides: 39 cells = no label
      labels_ = std::count(line.begin(), line.end(), sep) == kCriteoColumns - 2 ? LabelMode::kAbsent
                                                                                : LabelMode::kRequired;
      labels_decided_at_ = lines_.line_number();
    }
    Status s = ParseCriteoLine(line, sep, row, TextLocation{file_->name(), lines_.line_number()},
                               labels_ != LabelMode::kAbsent, pad_missing_trailing_);
    if (!s.ok() && labels_decided_at_ > 0 && labels_decided_at_ != lines_.line_number())
      s = InvalidArgumentError(std::string(s.message()) + " (the first data row, line " +
                               std::to_string(labels_decided_at_) + ", has " +
                               (labels_ == LabelMode::kAbsent ? "39 cells and no label" : "the label column") +
                               ", so every row must)");
    if (!s.ok() && lines_.last_line_unterminated()) {
      s = InvalidArgumentError(std::string(s.message()) +
                               "; it is the last line and has no final newline: the file looks cut (a torn tail)");
    }
    if (!s.ok()) {
      status_ = std::move(s);
      return status_;
    }
    ++counters_.records;
    if (row->padded_cells > 0) {
      ++counters_.padded_rows;
      counters_.padded_cells += static_cast<uint64_t>(row->padded_cells);
    }
    return true;
  }
}

// ------------------------------------------------------------ preprocessing

float CriteoNumericValue(double x) {
  return static_cast<float>(x >= 0 ? std::log1p(x) : -std::log1p(-x));
}

Status ValidateCriteoHashOptions(const CriteoHashOptions& options) {
  if (options.feature_size <= kCriteoNumeric) {
    return InvalidArgumentError("Criteo hashing: feature_size " + std::to_string(options.feature_size) +
                                " must be > 13 (13 numeric ids + at least one bucket)");
  }
  return Status::OK();
}

uint64_t CriteoCategoryHash(int j, std::string_view s, uint64_t seed) {
  return Hash64(s, Mix64(seed + static_cast<uint64_t>(j)));
}

void HashCriteoRow(const CriteoRow& row, const CriteoHashOptions& options, int64_t* ids, float* values) {
  for (int i = 0; i < kCriteoNumeric; ++i) {
    ids[i] = i;
    values[i] = row.has_numeric(i) ? CriteoNumericValue(row.numeric[i]) : 0.0f;
  }
  const uint64_t buckets = static_cast<uint64_t>(options.feature_size - kCriteoNumeric);
  for (int j = 0; j < kCriteoCategorical; ++j) {
    const std::string_view s = row.has_categorical(j) ? row.categorical[j] : std::string_view();
    ids[kCriteoNumeric + j] =
        kCriteoNumeric + static_cast<int64_t>(CriteoCategoryHash(j, s, options.seed) % buckets);
    values[kCriteoNumeric + j] = 1.0f;
  }
}

// ---------------------------------------------------------------- vocabulary

size_t CriteoVocabulary::StringHash::operator()(std::string_view s) const {
  return static_cast<size_t>(Hash64(s, 0));
}

CriteoVocabulary::CriteoVocabulary() = default;

void CriteoVocabulary::Count(const CriteoRow& row) {
  for (int j = 0; j < kCriteoCategorical; ++j) {
    const std::string_view s = row.has_categorical(j) ? row.categorical[j] : std::string_view();
    Map& m = counts_[j];
    auto it = m.find(s);
    if (it == m.end()) {
      m.emplace(std::string(s), 1);
    } else {
      ++it->second;
    }
  }
}

Status CriteoVocabulary::Build(int64_t min_count) {
  if (min_count < 1) {
    return InvalidArgumentError("CriteoVocabulary::Build: min_count " + std::to_string(min_count) + " < 1");
  }
  int64_t next = 0;
  for (int i = 0; i < kCriteoNumeric; ++i) numeric_ids_[i] = next++;
  std::vector<std::pair<int64_t, const std::string*>> kept;
  for (int j = 0; j < kCriteoCategorical; ++j) {
    unk_ids_[j] = next++;
    kept.clear();
    for (const auto& [s, c] : counts_[j]) {
      // A category literally spelled "<unk>" could not be told apart from the
      // field's <unk> entry in a feature map, so it always maps to <unk>.
      if (c >= min_count && s != kUnk) kept.emplace_back(c, &s);
    }
    std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : *a.second < *b.second;
    });
    Map ids;
    ids.reserve(kept.size());
    for (const auto& [c, s] : kept) ids.emplace(*s, next++);
    ids_[j] = std::move(ids);
  }
  for (Map& m : counts_) Map().swap(m);
  size_ = next;
  return Status::OK();
}

int64_t CriteoVocabulary::Lookup(int j, std::string_view s) const {
  const Map& m = ids_[j];
  auto it = m.find(s);
  return it == m.end() ? unk_ids_[j] : it->second;
}

void CriteoVocabulary::Featurize(const CriteoRow& row, int64_t* ids, float* values) const {
  for (int i = 0; i < kCriteoNumeric; ++i) {
    ids[i] = numeric_ids_[i];
    values[i] = row.has_numeric(i) ? CriteoNumericValue(row.numeric[i]) : 0.0f;
  }
  for (int j = 0; j < kCriteoCategorical; ++j) {
    const std::string_view s = row.has_categorical(j) ? row.categorical[j] : std::string_view();
    ids[kCriteoNumeric + j] = Lookup(j, s);
    values[kCriteoNumeric + j] = 1.0f;
  }
}

std::string CriteoVocabulary::FeatureMapText(int32_t id_base) const {
  std::vector<std::pair<int64_t, std::string>> entries;
  for (int i = 0; i < kCriteoNumeric; ++i) entries.emplace_back(numeric_ids_[i], NumericName(i));
  for (int j = 0; j < kCriteoCategorical; ++j) {
    const std::string prefix = CategoricalName(j) + "|";
    entries.emplace_back(unk_ids_[j], prefix + std::string(kUnk));
    for (const auto& [s, id] : ids_[j]) entries.emplace_back(id, prefix + s);
  }
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const auto& [id, name] : entries) {
    out += name;
    out += ' ';
    out += std::to_string(id + id_base);
    out += '\n';
  }
  return out;
}

Status CriteoVocabulary::WriteFeatureMap(const std::string& path, int32_t id_base) const {
  return WriteStringToFileAtomic(path, FeatureMapText(id_base));
}

StatusOr<CriteoVocabulary> CriteoVocabulary::ParseFeatureMap(std::string_view text, std::string_view name,
                                                             int32_t id_base) {
  CriteoVocabulary v;
  std::array<bool, kCriteoNumeric> have_numeric{};
  std::array<bool, kCriteoCategorical> have_unk{};
  std::unordered_set<int64_t> seen_ids;
  int64_t max_id = -1;
  uint64_t line_no = 0;
  auto error = [&](std::string_view what) {
    return InvalidArgumentError(std::string(name) + ":" + std::to_string(line_no) + ": " + std::string(what));
  };
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string_view::npos) return error("expected 'name id', found " + QuoteToken(line));
    const std::string_view key = line.substr(0, sp);
    const std::string_view id_text = line.substr(sp + 1);
    int64_t id;
    if (ParseNonNegativeInt64(id_text.data(), id_text.data() + id_text.size(), &id) != NumParse::kOk) {
      return error("bad id " + QuoteToken(id_text) + ": expected a non-negative integer");
    }
    if (id < id_base) return error("id " + std::to_string(id) + " is below id_base " + std::to_string(id_base));
    id -= id_base;
    // Field name: I<k> or C<k>|category.
    const size_t bar = key.find('|');
    const std::string_view field = key.substr(0, bar);
    int64_t k = 0;
    if (field.size() < 2 || (field[0] != 'I' && field[0] != 'C') ||
        ParseNonNegativeInt64(field.data() + 1, field.data() + field.size(), &k) != NumParse::kOk ||
        k < 1 || k > (field[0] == 'I' ? kCriteoNumeric : kCriteoCategorical) ||
        (field[0] == 'I') != (bar == std::string_view::npos)) {
      return error("unknown feature name " + QuoteToken(key) + ": expected I1..I13 or C1..C26|<category>");
    }
    if (!seen_ids.insert(id).second) return error("duplicate id " + std::to_string(id + id_base));
    max_id = std::max(max_id, id);
    if (field[0] == 'I') {
      if (have_numeric[k - 1]) return error("duplicate name " + QuoteToken(key));
      have_numeric[k - 1] = true;
      v.numeric_ids_[k - 1] = id;
    } else {
      const std::string_view cat = key.substr(bar + 1);
      const int j = static_cast<int>(k - 1);
      if (cat == kUnk) {
        if (have_unk[j]) return error("duplicate name " + QuoteToken(key));
        have_unk[j] = true;
        v.unk_ids_[j] = id;
      } else if (!v.ids_[j].emplace(std::string(cat), id).second) {
        return error("duplicate name " + QuoteToken(key));
      }
    }
  }
  for (int i = 0; i < kCriteoNumeric; ++i) {
    if (!have_numeric[i]) return InvalidArgumentError(std::string(name) + ": no " + NumericName(i) + " entry");
  }
  for (int j = 0; j < kCriteoCategorical; ++j) {
    if (!have_unk[j]) {
      return InvalidArgumentError(std::string(name) + ": no " + CategoricalName(j) + "|<unk> entry");
    }
  }
  v.size_ = max_id + 1;
  return v;
}

StatusOr<CriteoVocabulary> CriteoVocabulary::LoadFeatureMap(const std::string& path, int32_t id_base) {
  // Read through a LineReader so that a file without newlines (/dev/zero)
  // stops at kDefaultMaxLineBytes instead of growing without bound.
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> f, OpenSequentialFile(path));
  LineReader lines(f.get());
  std::string text;
  std::string_view line;
  for (;;) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, lines.Next(&line));
    if (!more) break;
    text.append(line);
    text.push_back('\n');
  }
  return ParseFeatureMap(text, path, id_base);
}

}  // namespace ctrain::io
