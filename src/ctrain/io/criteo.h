// Criteo raw display-advertising logs (Kaggle DAC train.txt and its samples)
// and their preprocessing into the seed's 39-field ids/values layout.
// Full description: docs/formats/criteo.md.
//
// Row syntax: 40 cells "label I1..I13 C1..C26", separated by '\t' (TSV, the
// original) or ',' (CSV, e.g. DeepCTR's criteo_sample.txt). One trailing '\r'
// is dropped. An empty cell is a missing value. A row must have exactly 40
// cells (39 separators): a short row (stripped trailing cells, Criteo's
// unlabelled 39-column test.txt, a file cut mid-row) or a long one is the
// error "<file>:<line>: expected 40 cells, got N". With pad_missing_trailing
// (--criteo-pad-missing-trailing) a short row's missing trailing cells read
// as empty (missing) cells, and the row says how many it lacked.
//   label: a number whose value is exactly 0 or 1 ("0", "1", "1.0").
//   I1..I13: integer counts, possibly negative (-1) and possibly written as
//            floats ("260.0"); parsed as double, must be finite.
//   C1..C26: any byte string without the separator and without control bytes
//            (0x00-0x1f, 0x7f: an error naming the byte); 8 lowercase hex
//            digits in Criteo; used verbatim.
// Header: if the first cell of the file's first non-blank line is exactly
// "label", that line is a header (CSV files have one) and is skipped and
// counted. Blank lines are skipped and counted.
//
// Errors: InvalidArgument "<file>:<line>:<column>: <what>" (text_location.h),
// column = 1-based byte column of the offending cell.
//
// Thread safety: the free functions are pure; CriteoReader and
// CriteoVocabulary are used by one thread at a time (a built vocabulary's
// const methods may be shared).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/file.h"
#include "ctrain/io/label_mode.h"
#include "ctrain/io/text_location.h"

namespace ctrain::io {

inline constexpr int kCriteoNumeric = 13;      // I1..I13
inline constexpr int kCriteoCategorical = 26;  // C1..C26
inline constexpr int kCriteoFields = 39;       // ids/values per preprocessed row
inline constexpr int kCriteoColumns = 40;      // label + fields

// One parsed row. The categorical views point into the line buffer and stay
// valid until the next ParseCriteoLine / CriteoReader::Next call.
struct CriteoRow {
  float label = 0;                                     // 0 or 1
  uint32_t numeric_present = 0;                        // bit i: I(i+1) not missing
  uint32_t categorical_present = 0;                    // bit j: C(j+1) not missing
  std::array<double, kCriteoNumeric> numeric{};        // 0 where missing
  std::array<std::string_view, kCriteoCategorical> categorical{};  // "" where missing
  // Trailing cells the line lacked, read as empty (pad_missing_trailing only; else 0).
  int padded_cells = 0;

  bool has_numeric(int i) const { return (numeric_present >> i) & 1u; }
  bool has_categorical(int j) const { return (categorical_present >> j) & 1u; }
};

// Parses one data line (no '\n'; a trailing '\r' is dropped). Never allocates
// except to build an error. Errors: InvalidArgument "<where>:<column>: ...":
//   "bad label 'x': expected 0 or 1"   "missing label"
//   "I3: expected a number, found 'abc'"   "I3: value 'inf' is not finite"
//   "I3: value '1e-400' is out of double range: it underflows (...)"  (or "overflows", io/text_number.h)
//   "C2: control byte '\x00' in category 'ab\x00c'"
//   "<file>:<line>: expected 40 cells, got 39 (...)" (no column)
// has_label = false: the row has 39 cells "I1..I13 C1..C26" (Kaggle's
// test.txt) and row->label is set to NaN; the cell count error then expects 39.
// pad_missing_trailing: a row with fewer cells (but its label, when it has
// one) reads the missing trailing cells as empty; row->padded_cells says how
// many. Without it, the short-row error names --criteo-pad-missing-trailing.
Status ParseCriteoLine(std::string_view line, char separator, CriteoRow* row,
                       const TextLocation& where = {}, bool has_label = true,
                       bool pad_missing_trailing = false);

enum class CriteoFormat {
  kAuto,  // TSV if the first non-blank line contains '\t', else CSV if it contains ',', else TSV
  kTsv,
  kCsv,
};

struct CriteoReaderOptions {
  CriteoFormat format = CriteoFormat::kAuto;
  // Initial LineReader buffer in bytes (grows to fit a longer line).
  size_t read_buffer_size = 1 << 20;
  // Longest line accepted (file.h's LineReader): a longer one is an error.
  size_t max_line_bytes = kDefaultMaxLineBytes;
  // Whether rows start with the label (label_mode.h); kAuto: the first data
  // row decides, 39 cells = unlabelled, and every later row must agree.
  // A header whose first cell is "I1" (an unlabelled CSV) is skipped like "label".
  LabelMode labels = LabelMode::kRequired;
  // Rows whose trailing empty cells were stripped (37-39 cells in some copies
  // of the Kaggle data): read the missing cells as empty, counted in
  // padded_rows / padded_cells. With labels kAuto a short row then reads as
  // labelled (only --no-label reads 39-cell rows as unlabelled).
  bool pad_missing_trailing = false;
};

class CriteoReader {
 public:
  struct Counters {
    uint64_t lines = 0;         // all lines read
    uint64_t records = 0;       // rows returned
    uint64_t header_lines = 0;  // skipped header ("label,I1,...")
    uint64_t blank_lines = 0;   // skipped
    uint64_t unterminated_last_line = 0;  // 1: the last line has no '\n' (a cut file?)
    uint64_t padded_rows = 0;   // pad_missing_trailing: rows that lacked trailing cells
    uint64_t padded_cells = 0;  // the cells they lacked (read as empty)
  };
  // Errors: those of OpenSequentialFile.
  static StatusOr<std::unique_ptr<CriteoReader>> Open(const std::string& path,
                                                      const CriteoReaderOptions& options = {});
  static StatusOr<std::unique_ptr<CriteoReader>> Open(std::unique_ptr<SequentialFile> file,
                                                      const CriteoReaderOptions& options = {});
  // Next row; false at EOF. Errors (sticky) as ParseCriteoLine, with the file
  // name and line number, or the file's read error.
  StatusOr<bool> Next(CriteoRow* row);

  // kTsv or kCsv once the first non-blank line was read (kAuto before).
  CriteoFormat format() const { return format_; }
  // kRequired or kAbsent once a data row was read with LabelMode::kAuto.
  LabelMode labels() const { return labels_; }
  uint64_t line_number() const { return lines_.line_number(); }
  uint64_t line_offset() const { return lines_.line_offset(); }
  const Counters& counters() const { return counters_; }
  const std::string& name() const { return file_->name(); }

 private:
  CriteoReader(std::unique_ptr<SequentialFile> file, const CriteoReaderOptions& options);
  std::unique_ptr<SequentialFile> file_;
  LineReader lines_;
  CriteoFormat format_;
  bool first_line_ = true;
  LabelMode labels_;
  bool pad_missing_trailing_;
  uint64_t labels_decided_at_ = 0;  // the line that fixed a kAuto label mode
  Counters counters_;
  Status status_;
};

// ------------------------------------------------------------ preprocessing
// Both featurizers produce the seed's layout: ids[39], values[39], field f at
// index f; I1..I13 are fields 0..12, C1..C26 fields 13..38.

// Numeric value transform: sign(x) * log(1 + |x|), i.e. log1p(x) for x >= 0
// and -log1p(-x) for x < 0 (Criteo's -1 becomes -log 2). Missing -> 0.
float CriteoNumericValue(double x);

struct CriteoHashOptions {
  // Ids are in [0, feature_size): 0..12 numeric, 13.. hashed buckets.
  // Default: the seed config's feature_size. Must be > 13.
  int64_t feature_size = 117581;
  // Mixed into every hash; change to get an independent hashing.
  uint64_t seed = 0;
};
Status ValidateCriteoHashOptions(const CriteoHashOptions& options);

// The hash of category `s` of categorical field j (0..25):
// Hash64(s, Mix64(seed + j)) (feature_hash.h). A missing cell hashes as "".
uint64_t CriteoCategoryHash(int j, std::string_view s, uint64_t seed);

// Hashing trick: numeric field i -> id i, value CriteoNumericValue (0 if
// missing); categorical field j -> id 13 + CriteoCategoryHash(j, s, seed) %
// (feature_size - 13), value 1. A missing categorical is hashed as "", so each
// field has its own deterministic "missing" bucket.
// REQUIRES: ValidateCriteoHashOptions(options).ok(); ids, values hold 39.
void HashCriteoRow(const CriteoRow& row, const CriteoHashOptions& options, int64_t* ids,
                   float* values);

// Vocabulary mode: per categorical field, categories seen at least min_count
// times get their own id, the rest map to the field's "<unk>" id. A missing
// cell is the category "" (written "C3|" in the feature map) and is counted
// like any other. A category literally spelled "<unk>" always maps to <unk>.
//
// Id order after Build (deterministic): I1..I13 -> 0..12; then for C1, C2,
// ..., C26: the field's <unk>, then its kept categories by descending count,
// ties by ascending byte string.
//
// Feature map file (criteo_deepfm_va10k.feature_map.txt layout): one
// "name id" per line, name "I<k>", "C<k>|<unk>" or "C<k>|<category>", id
// written as id + id_base; lines in any order when loading, written in id
// order.
class CriteoVocabulary {
 public:
  CriteoVocabulary();

  // Counts the row's categories (allocates only for a new category).
  void Count(const CriteoRow& row);
  // Assigns ids from the counts (see above) and drops the counts.
  // Errors: InvalidArgument if min_count < 1.
  Status Build(int64_t min_count);

  // Number of ids (the model's feature_size); 0 before Build/Load.
  int64_t size() const { return size_; }
  int64_t numeric_id(int i) const { return numeric_ids_[i]; }
  int64_t unk_id(int j) const { return unk_ids_[j]; }
  // The id of category s of field j (0..25), or unk_id(j).
  int64_t Lookup(int j, std::string_view s) const;
  // Categories of field j with their own id (not counting <unk>).
  size_t num_categories(int j) const { return ids_[j].size(); }

  // ids[39] / values[39]: numeric as HashCriteoRow (id numeric_id(i)),
  // categorical id Lookup(j, s), value 1. REQUIRES: built or loaded.
  void Featurize(const CriteoRow& row, int64_t* ids, float* values) const;

  // The feature map text, lines in id order.
  std::string FeatureMapText(int32_t id_base = 0) const;
  Status WriteFeatureMap(const std::string& path, int32_t id_base = 0) const;  // atomic write
  // Errors: InvalidArgument "<name>:<line>: <what>" for a malformed line, an
  // unknown field name, a duplicate name or id, an id < id_base; and
  // "<name>: no I<k> / C<k>|<unk> entry" when a field is not covered.
  static StatusOr<CriteoVocabulary> ParseFeatureMap(std::string_view text, std::string_view name,
                                                    int32_t id_base = 0);
  // LoadFeatureMap: ParseFeatureMap's errors, the file's, and LineReader's
  // (a line longer than kDefaultMaxLineBytes, a UTF-8 BOM).
  static StatusOr<CriteoVocabulary> LoadFeatureMap(const std::string& path, int32_t id_base = 0);

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const;
  };
  using Map = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;
  std::array<Map, kCriteoCategorical> counts_;
  std::array<Map, kCriteoCategorical> ids_;
  std::array<int64_t, kCriteoNumeric> numeric_ids_{};
  std::array<int64_t, kCriteoCategorical> unk_ids_{};
  int64_t size_ = 0;
};

}  // namespace ctrain::io
