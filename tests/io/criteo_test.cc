#include "ctrain/io/criteo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ctrain/io/feature_hash.h"

namespace ctrain::io {
namespace {

std::string DataPath(const char* name) { return std::string(CTRAIN_SHARED_DATA_DIR) + "/" + name; }

#define SKIP_WITHOUT_DATA()                                                         \
  if (!std::filesystem::exists(CTRAIN_SHARED_DATA_DIR)) {                           \
    GTEST_SKIP() << "shared data directory " << CTRAIN_SHARED_DATA_DIR << " not present"; \
  }

std::string ParseError(std::string_view line, char sep) {
  CriteoRow row;
  Status s = ParseCriteoLine(line, sep, &row, TextLocation{"c.tsv", 3});
  EXPECT_FALSE(s.ok()) << line;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  return std::string(s.message());
}

// A full 40-cell TSV line from label, 13 numeric cells and 26 categorical cells.
std::string Line(std::string label, std::vector<std::string> num, std::vector<std::string> cat, char sep = '\t') {
  std::string s = label;
  num.resize(13);
  cat.resize(26);
  for (auto& c : num) s += sep + c;
  for (auto& c : cat) s += sep + c;
  return s;
}

TEST(Hash64, GoldenValuesNeverChange) {
  // Pinned outputs: ids hashed into trained models depend on these.
  EXPECT_EQ(Mix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(Hash64("", 0), Mix64(0));
  EXPECT_EQ(Hash64("a", 0), Mix64(Mix64(0x9E3779B97F4A7C15ULL) ^ 0x61));
  EXPECT_EQ(Hash64("05db9164", 0), Mix64(Mix64(8 * 0x9E3779B97F4A7C15ULL) ^ 0x3436313962643530ULL));
  EXPECT_EQ(Hash64("05db9164x", 7),
            Mix64(Mix64(Mix64(7 ^ (9 * 0x9E3779B97F4A7C15ULL)) ^ 0x3436313962643530ULL) ^ 0x78));
  // From the Python reference in docs/formats/criteo.md (an independent implementation).
  EXPECT_EQ(Hash64("05db9164", 0), 0x4f432a988c31080dULL);
  EXPECT_EQ(CriteoCategoryHash(0, "05db9164", 0), 0xcfe453479a457e0bULL);
  EXPECT_EQ(Hash64("05db9164x", 7), 0xdce73d0f018c7672ULL);
  EXPECT_EQ(Hash64("hello world, 17 b", 3), 0x479c68215d01471dULL);
  EXPECT_EQ(13 + CriteoCategoryHash(0, "05db9164", 0) % (117581 - 13), 65944u);
}

TEST(CriteoLine, ParsesAllKinds) {
  CriteoRow row;
  const std::string line = Line("1", {"3", "", "-1", "260.0", "1e3"}, {"05db9164", "", "abc"});
  ASSERT_TRUE(ParseCriteoLine(line, '\t', &row).ok());
  EXPECT_EQ(row.label, 1.0f);
  EXPECT_EQ(row.numeric_present, 0b11101u);
  EXPECT_EQ(row.numeric[0], 3.0);
  EXPECT_EQ(row.numeric[1], 0.0);
  EXPECT_EQ(row.numeric[2], -1.0);
  EXPECT_EQ(row.numeric[3], 260.0);
  EXPECT_EQ(row.numeric[4], 1000.0);
  EXPECT_EQ(row.categorical_present, 0b101u);
  EXPECT_EQ(row.categorical[0], "05db9164");
  EXPECT_EQ(row.categorical[1], "");
  EXPECT_EQ(row.categorical[2], "abc");
  EXPECT_EQ(row.categorical[25], "");
}

TEST(CriteoLine, EmptyCellsAreMissingAndCrDropped) {
  CriteoRow row;
  ASSERT_TRUE(ParseCriteoLine(Line("0", {"5", "", "7"}, {}) + "\r", '\t', &row).ok());
  EXPECT_EQ(row.label, 0.0f);
  EXPECT_EQ(row.numeric_present, 0b101u);
  EXPECT_EQ(row.numeric[2], 7.0);
  EXPECT_EQ(row.categorical_present, 0u);
  ASSERT_TRUE(ParseCriteoLine(Line("1.0", {}, {}, ','), ',', &row).ok());
  EXPECT_EQ(row.label, 1.0f);
  EXPECT_EQ(row.numeric_present, 0u);
}

// B15: a row with the wrong number of cells is a located error (no column),
// never a row with "missing" cells.
TEST(CriteoLine, B15WrongCellCountIsLocatedError) {
  EXPECT_EQ(ParseError("1\t5", '\t'),
            "c.tsv:3: expected 40 cells, got 2 (a cut or short row; a missing value is an empty cell, the "
            "separators stay; if the trailing empty cells were stripped, --criteo-pad-missing-trailing reads the "
            "missing cells as empty (counted))");
  EXPECT_EQ(ParseError("1", ',').rfind("c.tsv:3: expected 40 cells, got 1 ", 0), 0u);
  // 39 cells: Criteo's unlabelled test.txt layout, or one cell lost.
  std::string no_label = Line("1", {}, {});
  no_label.erase(0, 2);  // drop "1\t": 39 cells
  EXPECT_EQ(ParseError(no_label, '\t'),
            "c.tsv:3: expected 40 cells, got 39 (39 cells is the layout of Criteo's unlabelled test.txt: `ctrain "
            "predict` reads it, training and eval need the label column first; if the trailing empty cells were "
            "stripped, --criteo-pad-missing-trailing reads the missing cells as empty (counted))");
  EXPECT_EQ(ParseError(Line("0", {}, {}) + "\tx", '\t'), "c.tsv:3: expected 40 cells, got 41");
  EXPECT_EQ(ParseError(Line("0", {}, {}, ',') + ",", ','), "c.tsv:3: expected 40 cells, got 41");
  // The count uses the file's separator: a TSV row read as CSV is one cell.
  EXPECT_EQ(ParseError(Line("0", {}, {}), ','),
            "c.tsv:3: expected 40 cells, got 1 (no comma in the line but tabs: pass --format criteo-tsv)");
  EXPECT_EQ(ParseError(Line("0", {}, {}, ','), '\t'),
            "c.tsv:3: expected 40 cells, got 1 (no tab in the line but commas: pass --format criteo-csv)");
  // Without a file name: "line N: ...".
  CriteoRow row;
  Status s = ParseCriteoLine("1\t5", '\t', &row, TextLocation{"", 7});
  EXPECT_EQ(s.message().substr(0, 35), "line 7: expected 40 cells, got 2 (a");
}

// Rows whose trailing empty cells were stripped (37-39 cells, as in some
// public copies of Kaggle's train.txt): refused by default, naming the
// option; with pad_missing_trailing the missing cells are empty and counted.
TEST(CriteoLine, PadMissingTrailingReadsStrippedCellsAsEmpty) {
  std::string stripped = Line("1", {"3", "4"}, {"aa", "bb"});
  stripped.resize(stripped.size() - 2);  // drop the last two tabs: C25, C26 gone (38 cells)
  ASSERT_EQ(std::count(stripped.begin(), stripped.end(), '\t'), 37);
  const std::string err = ParseError(stripped, '\t');
  EXPECT_EQ(err.rfind("c.tsv:3: expected 40 cells, got 38 (", 0), 0u) << err;
  EXPECT_NE(err.find("--criteo-pad-missing-trailing"), std::string::npos) << err;
  CriteoRow row;
  row.categorical[25] = "stale";  // a previous row's view must not survive
  row.numeric[12] = 9;
  ASSERT_TRUE(ParseCriteoLine(stripped, '\t', &row, {}, true, true).ok());
  EXPECT_EQ(row.padded_cells, 2);
  EXPECT_EQ(row.label, 1.0f);
  EXPECT_EQ(row.numeric_present, 0b11u);
  EXPECT_EQ(row.categorical_present, 0b11u);
  EXPECT_EQ(row.categorical[0], "aa");
  EXPECT_EQ(row.categorical[24], "");
  EXPECT_EQ(row.categorical[25], "");
  // The padded row featurizes exactly as the row with its empty cells written out.
  CriteoRow written;
  const std::string written_line = Line("1", {"3", "4"}, {"aa", "bb"});  // the row's views point into it
  ASSERT_TRUE(ParseCriteoLine(written_line, '\t', &written).ok());
  EXPECT_EQ(written.padded_cells, 0);
  int64_t a[39], b[39];
  float va[39], vb[39];
  HashCriteoRow(row, {}, a, va);
  HashCriteoRow(written, {}, b, vb);
  for (int f = 0; f < 39; ++f) {
    EXPECT_EQ(a[f], b[f]) << f;
    EXPECT_EQ(va[f], vb[f]) << f;
  }
  // Stripped into the integer columns: I12, I13 and every C cell padded.
  ASSERT_TRUE(ParseCriteoLine("0,1,2,3,4,5,6,7,8,9,10,11", ',', &row, {}, true, true).ok());
  EXPECT_EQ(row.padded_cells, 28);
  EXPECT_EQ(row.numeric_present, 0x7ffu);
  EXPECT_EQ(row.numeric[11], 0.0);
  EXPECT_EQ(row.numeric[12], 0.0);
  // Padding never hides a bad cell, a long row or a missing label.
  EXPECT_FALSE(ParseCriteoLine("1\tx", '\t', &row, {}, true, true).ok());
  EXPECT_FALSE(ParseCriteoLine(Line("0", {}, {}) + "\tx", '\t', &row, {}, true, true).ok());
  Status s = ParseCriteoLine("\t5", '\t', &row, TextLocation{"c.tsv", 3}, true, true);
  EXPECT_EQ(s.message(), "c.tsv:3:1: missing label");
  // Unlabelled rows (predict --no-label) pad to 39 cells.
  ASSERT_TRUE(ParseCriteoLine("5\t6", '\t', &row, {}, false, true).ok());
  EXPECT_TRUE(std::isnan(row.label));
  EXPECT_EQ(row.padded_cells, 37);
  EXPECT_EQ(row.numeric_present, 0b11u);
}

TEST(CriteoReader, PadMissingTrailingIsCounted) {
  std::string s38 = Line("1", {"3"}, {"aa"});
  s38.resize(s38.size() - 2);
  std::string s37 = Line("0", {}, {"bb"});
  s37.resize(s37.size() - 3);
  const std::string text = Line("0", {}, {}) + "\n" + s38 + "\n" + s37 + "\n";
  // Off: the first short row is the error, naming the option.
  auto off = CriteoReader::Open(NewMemoryFile("p.tsv", text));
  ASSERT_TRUE(off.ok());
  CriteoRow row;
  ASSERT_TRUE(*(*off)->Next(&row));
  auto more = (*off)->Next(&row);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().message().rfind("p.tsv:2: expected 40 cells, got 38 (", 0), 0u);
  EXPECT_NE(more.status().message().find("--criteo-pad-missing-trailing"), std::string_view::npos);
  // On: three rows, two padded (5 cells in all); with LabelMode::kAuto too (a
  // 39-cell row is then a stripped labelled row, not test.txt's layout).
  for (LabelMode labels : {LabelMode::kRequired, LabelMode::kAuto}) {
    CriteoReaderOptions o;
    o.pad_missing_trailing = true;
    o.labels = labels;
    auto on = CriteoReader::Open(NewMemoryFile("p.tsv", text), o);
    ASSERT_TRUE(on.ok());
    float labels_seen[3];
    for (int i = 0; i < 3; ++i) {
      auto m = (*on)->Next(&row);
      ASSERT_TRUE(m.ok() && *m) << m.status().ToString();
      labels_seen[i] = row.label;
    }
    EXPECT_FALSE(*(*on)->Next(&row));
    EXPECT_EQ(labels_seen[1], 1.0f);
    EXPECT_EQ(labels_seen[2], 0.0f);
    EXPECT_EQ((*on)->counters().records, 3u);
    EXPECT_EQ((*on)->counters().padded_rows, 2u);
    EXPECT_EQ((*on)->counters().padded_cells, 5u);
  }
}

// No control byte (0x00-0x1f, 0x7f) ever becomes part of a category.
TEST(CriteoLine, ControlBytesInCategoryAreErrors) {
  for (int b : {0x00, 0x01, 0x09, 0x0b, 0x0d, 0x1f, 0x7f}) {
    const char sep = b == '\t' ? ',' : '\t';
    std::string cat = "ab";
    cat += static_cast<char>(b);
    cat += "c";
    const std::string line = Line("1", {}, {"x", cat}, sep);
    const size_t col = line.find(cat) + 3;
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", b);
    EXPECT_EQ(ParseError(line, sep), "c.tsv:3:" + std::to_string(col) + ": C2: control byte '" + hex +
                                         "' in category 'ab" + hex + "c'")
        << b;
  }
  // Bytes >= 0x80 (UTF-8) are kept verbatim.
  CriteoRow row;
  const std::string utf8 = Line("1", {}, {"caf\xc3\xa9"});
  ASSERT_TRUE(ParseCriteoLine(utf8, '\t', &row).ok());
  EXPECT_EQ(row.categorical[0], "caf\xc3\xa9");
}

TEST(CriteoLine, Errors) {
  auto L = [](std::string label, std::vector<std::string> num, char sep = '\t') { return Line(label, num, {}, sep); };
  EXPECT_EQ(ParseError(L("2", {"1"}), '\t'), "c.tsv:3:1: bad label '2': expected 0 or 1");
  EXPECT_EQ(ParseError(L("-1", {"1"}), '\t'), "c.tsv:3:1: bad label '-1': expected 0 or 1");
  EXPECT_EQ(ParseError(L("", {"1"}), '\t'), "c.tsv:3:1: missing label");
  EXPECT_EQ(ParseError(L("0", {"1", "abc"}), '\t'), "c.tsv:3:5: I2: expected a number, found 'abc'");
  EXPECT_EQ(ParseError(L("0", {"1", "2", " 3"}, ','), ','), "c.tsv:3:7: I3: expected a number, found ' 3'");
  EXPECT_EQ(ParseError(L("0", {"nan"}, ','), ','), "c.tsv:3:3: I1: value 'nan' is not finite");
  EXPECT_EQ(ParseError(L("0", {"1e999"}, ','), ','),
            "c.tsv:3:3: I1: value '1e999' is out of double range: it overflows (larger in magnitude than 1.8e+308, "
            "the largest double)");
  EXPECT_EQ(ParseError(L("0", {"1e-400"}, ','), ','),
            "c.tsv:3:3: I1: value '1e-400' is out of double range: it underflows (nonzero but smaller in magnitude "
            "than 4.9e-324, the smallest double)");
  EXPECT_EQ(ParseError(L("0", {"0x10"}, ','), ','), "c.tsv:3:3: I1: expected a number, found '0x10'");
  EXPECT_EQ(ParseError(L("0", {"++1"}, ','), ','), "c.tsv:3:3: I1: expected a number, found '++1'");
  // A leading '+' and long mantissas read as strtod does.
  CriteoRow row;
  ASSERT_TRUE(ParseCriteoLine(L("+1", {"+5", "12345678901234567890123"}), '\t', &row).ok());
  EXPECT_EQ(row.label, 1.0f);
  EXPECT_EQ(row.numeric[0], 5.0);
  EXPECT_EQ(row.numeric[1], std::strtod("12345678901234567890123", nullptr));
}

// A torn tail: the last line has no '\n'. A short one is named as cut; a
// full-length one (cut inside C26) is read as written and counted.
TEST(CriteoReader, TornTailIsVisible) {
  const std::string full = Line("1", {"1"}, {"aa"});
  auto r = CriteoReader::Open(NewMemoryFile("t.tsv", full + "\n" + full.substr(0, 30)));
  ASSERT_TRUE(r.ok());
  CriteoRow row;
  ASSERT_TRUE(*(*r)->Next(&row));
  EXPECT_EQ((*r)->counters().unterminated_last_line, 0u);
  auto more = (*r)->Next(&row);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().message().substr(0, 36), "t.tsv:2: expected 40 cells, got 27 (");
  EXPECT_NE(more.status().message().find("; it is the last line and has no final newline: the file looks cut"),
            std::string_view::npos)
      << more.status().ToString();
  auto cut_in_last_cell = CriteoReader::Open(NewMemoryFile("u.tsv", full + "\n" + Line("0", {}, {}) + "b2"));
  ASSERT_TRUE(cut_in_last_cell.ok());
  ASSERT_TRUE(*(*cut_in_last_cell)->Next(&row));
  ASSERT_TRUE(*(*cut_in_last_cell)->Next(&row));
  EXPECT_EQ(row.categorical[25], "b2");
  EXPECT_EQ((*cut_in_last_cell)->counters().unterminated_last_line, 1u);
}

TEST(CriteoReader, HeaderBlankAndAutoFormat) {
  const std::string csv = "label,I1,I2\n" + Line("1", {"5"}, {"aa"}, ',') + "\n\n" + Line("0", {}, {}, ',') + "\n";
  auto r = CriteoReader::Open(NewMemoryFile("s.csv", csv));
  ASSERT_TRUE(r.ok());
  CriteoRow row;
  auto more = (*r)->Next(&row);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ((*r)->format(), CriteoFormat::kCsv);
  EXPECT_EQ(row.label, 1.0f);
  EXPECT_EQ(row.categorical[0], "aa");
  more = (*r)->Next(&row);
  ASSERT_TRUE(more.ok() && *more);
  more = (*r)->Next(&row);
  ASSERT_TRUE(more.ok() && !*more);
  EXPECT_EQ((*r)->counters().lines, 4u);
  EXPECT_EQ((*r)->counters().records, 2u);
  EXPECT_EQ((*r)->counters().header_lines, 1u);
  EXPECT_EQ((*r)->counters().blank_lines, 1u);

  auto bad = CriteoReader::Open(NewMemoryFile("b.tsv", Line("0", {}, {}) + "\n" + Line("0", {"1", "x"}, {}) + "\n"));
  ASSERT_TRUE(bad.ok());
  ASSERT_TRUE(*(*bad)->Next(&row));
  more = (*bad)->Next(&row);
  EXPECT_EQ(more.status().ToString(), "InvalidArgument: b.tsv:2:5: I2: expected a number, found 'x'");
  EXPECT_EQ((*bad)->Next(&row).status().message(), "b.tsv:2:5: I2: expected a number, found 'x'");  // sticky

  // A header line later in the file is an error (only the first line may be one).
  auto late = CriteoReader::Open(NewMemoryFile("l.tsv", Line("0", {}, {}) + "\n" + Line("label", {"I1"}, {}) + "\n"));
  ASSERT_TRUE(*(*late)->Next(&row));
  EXPECT_EQ((*late)->Next(&row).status().message(), "l.tsv:2:1: bad label 'label': expected 0 or 1");
}

TEST(CriteoHash, LayoutDeterminismFieldSeparation) {
  CriteoRow row;
  const std::string line = Line("1", {"0", "-1", "", "326904"}, {"05db9164", "05db9164"});
  ASSERT_TRUE(ParseCriteoLine(line, '\t', &row).ok());
  CriteoHashOptions o;
  int64_t ids[39], ids2[39];
  float values[39], values2[39];
  HashCriteoRow(row, o, ids, values);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(ids[i], i);
  EXPECT_EQ(values[0], 0.0f);
  EXPECT_EQ(values[1], static_cast<float>(-std::log(2.0)));
  EXPECT_EQ(values[2], 0.0f);
  EXPECT_EQ(values[3], static_cast<float>(std::log1p(326904.0)));
  for (int f = 13; f < 39; ++f) {
    EXPECT_GE(ids[f], 13);
    EXPECT_LT(ids[f], o.feature_size);
    EXPECT_EQ(values[f], 1.0f);
  }
  EXPECT_NE(ids[13], ids[14]);  // same string, different fields
  EXPECT_EQ(ids[13], 13 + static_cast<int64_t>(CriteoCategoryHash(0, "05db9164", 0) % (117581 - 13)));
  // Missing cells: one bucket per field, = the hash of "".
  EXPECT_EQ(ids[15], 13 + static_cast<int64_t>(CriteoCategoryHash(2, "", 0) % (117581 - 13)));
  EXPECT_NE(ids[15], ids[16]);
  HashCriteoRow(row, o, ids2, values2);
  EXPECT_EQ(std::vector<int64_t>(ids, ids + 39), std::vector<int64_t>(ids2, ids2 + 39));
  o.seed = 1;
  HashCriteoRow(row, o, ids2, values2);
  EXPECT_NE(ids[13], ids2[13]);
  EXPECT_EQ(ValidateCriteoHashOptions(CriteoHashOptions{13, 0}).message(),
            "Criteo hashing: feature_size 13 must be > 13 (13 numeric ids + at least one bucket)");
  EXPECT_TRUE(ValidateCriteoHashOptions(CriteoHashOptions{14, 0}).ok());
}

TEST(CriteoVocab, MinCountOrderAndRoundTrip) {
  CriteoVocabulary v;
  CriteoRow row;
  std::string line;  // the row's views point into it
  auto add = [&](std::vector<std::string> cat) {
    line = Line("0", {}, cat);
    ASSERT_TRUE(ParseCriteoLine(line, '\t', &row).ok());
    v.Count(row);
  };
  add({"b", "x"});
  add({"a", "x"});
  add({"b", "y"});
  add({"a", ""});
  add({"c", ""});
  add({"<unk>", "q"});  // a real "<unk>" category folds into <unk>
  add({"<unk>", "r"});
  EXPECT_EQ(v.Build(0).message(), "CriteoVocabulary::Build: min_count 0 < 1");
  ASSERT_TRUE(v.Build(2).ok());
  // I1..I13 -> 0..12; C1: <unk> 13, a 14, b 15 (tie on count 2 -> ascending); c -> unk.
  EXPECT_EQ(v.numeric_id(12), 12);
  EXPECT_EQ(v.unk_id(0), 13);
  EXPECT_EQ(v.Lookup(0, "a"), 14);
  EXPECT_EQ(v.Lookup(0, "b"), 15);
  EXPECT_EQ(v.Lookup(0, "c"), 13);
  // C2: <unk> 16, "" (missing, count 2) 17, x 18; y -> unk. Then C3..C26: <unk> + "" each.
  EXPECT_EQ(v.unk_id(1), 16);
  EXPECT_EQ(v.Lookup(1, ""), 17);
  EXPECT_EQ(v.Lookup(1, "x"), 18);
  EXPECT_EQ(v.Lookup(1, "y"), 16);
  EXPECT_EQ(v.unk_id(2), 19);
  EXPECT_EQ(v.Lookup(2, ""), 20);
  EXPECT_EQ(v.size(), 19 + 24 * 2);
  int64_t ids[39];
  float values[39];
  line = Line("1", {"2"}, {"a", "zzz"});
  ASSERT_TRUE(ParseCriteoLine(line, '\t', &row).ok());
  v.Featurize(row, ids, values);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(values[0], static_cast<float>(std::log1p(2.0)));
  EXPECT_EQ(ids[13], 14);
  EXPECT_EQ(ids[14], 16);
  EXPECT_EQ(ids[15], 20);

  const std::string text = v.FeatureMapText(1);
  EXPECT_EQ(text.substr(0, 5), "I1 1\n");
  EXPECT_NE(text.find("I13 13\nC1|<unk> 14\nC1|a 15\nC1|b 16\nC2|<unk> 17\nC2| 18\nC2|x 19\n"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/criteo_vocab_test.map";
  ASSERT_TRUE(v.WriteFeatureMap(path, 1).ok());
  auto loaded = CriteoVocabulary::LoadFeatureMap(path, 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->size(), v.size());
  EXPECT_EQ(loaded->FeatureMapText(0), v.FeatureMapText(0));
  EXPECT_EQ(loaded->Lookup(1, "x"), 18);
  std::filesystem::remove(path);
}

TEST(CriteoVocab, FeatureMapErrors) {
  auto err = [](std::string text) {
    auto v = CriteoVocabulary::ParseFeatureMap(text, "m.txt", 1);
    EXPECT_FALSE(v.ok());
    return std::string(v.status().message());
  };
  EXPECT_EQ(err("I1\n"), "m.txt:1: expected 'name id', found 'I1'");
  EXPECT_EQ(err("I1 x\n"), "m.txt:1: bad id 'x': expected a non-negative integer");
  EXPECT_EQ(err("I1 0\n"), "m.txt:1: id 0 is below id_base 1");
  EXPECT_EQ(err("I14 1\n"), "m.txt:1: unknown feature name 'I14': expected I1..I13 or C1..C26|<category>");
  EXPECT_EQ(err("C1 1\n"), "m.txt:1: unknown feature name 'C1': expected I1..I13 or C1..C26|<category>");
  EXPECT_EQ(err("I1 1\nI2 1\n"), "m.txt:2: duplicate id 1");
  EXPECT_EQ(err("I1 1\nI1 2\n"), "m.txt:2: duplicate name 'I1'");
  EXPECT_EQ(err("I1 1\n"), "m.txt: no I2 entry");
  std::string all;
  for (int i = 1; i <= 13; ++i) {
    all += 'I';
    all += std::to_string(i);
    all += ' ';
    all += std::to_string(i);
    all += '\n';
  }
  EXPECT_EQ(err(all), "m.txt: no C1|<unk> entry");
}

// ------------------------------------------------------------- real files

struct RawStats {
  int64_t rows = 0, ones = 0, zeros = 0, neg_one = 0, empty_num = 0, empty_cat = 0;
  double max_int = -1e300;
  bool all_integral = true;
  CriteoReader::Counters counters;
  CriteoFormat format = CriteoFormat::kAuto;
};

RawStats ReadRaw(const std::string& path, CriteoVocabulary* vocab = nullptr) {
  RawStats st;
  auto r = CriteoReader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return st;
  CriteoRow row;
  CriteoHashOptions ho;
  int64_t ids[39];
  float values[39];
  for (;;) {
    auto more = (*r)->Next(&row);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    ++st.rows;
    (row.label == 1 ? st.ones : st.zeros)++;
    for (int i = 0; i < 13; ++i) {
      if (!row.has_numeric(i)) {
        ++st.empty_num;
        continue;
      }
      st.neg_one += row.numeric[i] == -1;
      st.max_int = std::max(st.max_int, row.numeric[i]);
      st.all_integral &= row.numeric[i] == std::floor(row.numeric[i]);
    }
    for (int j = 0; j < 26; ++j) st.empty_cat += !row.has_categorical(j);
    HashCriteoRow(row, ho, ids, values);
    for (int f = 0; f < 39; ++f) {
      EXPECT_GE(ids[f], 0);
      EXPECT_LT(ids[f], ho.feature_size);
      EXPECT_TRUE(std::isfinite(values[f]));
    }
    if (vocab) vocab->Count(row);
  }
  st.counters = (*r)->counters();
  st.format = (*r)->format();
  return st;
}

TEST(CriteoRealData, PaddleRecTsv) {
  SKIP_WITHOUT_DATA();
  CriteoVocabulary vocab;
  RawStats st = ReadRaw(DataPath("criteo_raw_paddlerec_part-0.tsv"), &vocab);
  EXPECT_EQ(st.format, CriteoFormat::kTsv);
  EXPECT_EQ(st.rows, 100);
  EXPECT_EQ(st.zeros, 71);
  EXPECT_EQ(st.ones, 29);
  EXPECT_EQ(st.neg_one, 13);
  EXPECT_EQ(st.max_int, 326904);
  EXPECT_TRUE(st.all_integral);
  EXPECT_EQ(st.empty_num, 257);
  EXPECT_EQ(st.empty_cat, 300);
  EXPECT_EQ(st.counters.header_lines, 0u);
  EXPECT_EQ(st.counters.lines, 100u);
  // Vocabulary with min_count 1 keeps every distinct value (incl. missing "").
  ASSERT_TRUE(vocab.Build(1).ok());
  size_t kept = 0;
  for (int j = 0; j < 26; ++j) kept += vocab.num_categories(j);
  EXPECT_EQ(vocab.size(), static_cast<int64_t>(13 + 26 + kept));
  EXPECT_EQ(vocab.Lookup(0, "05db9164"), 14);  // C1's most frequent value (first line's C1)
}

TEST(CriteoRealData, PaddleRecVocabMinCount) {
  SKIP_WITHOUT_DATA();
  CriteoVocabulary v1, v5;
  ReadRaw(DataPath("criteo_raw_paddlerec_part-0.tsv"), &v1);
  ReadRaw(DataPath("criteo_raw_paddlerec_part-0.tsv"), &v5);
  ASSERT_TRUE(v1.Build(1).ok());
  ASSERT_TRUE(v5.Build(5).ok());
  EXPECT_LT(v5.size(), v1.size());
  for (int j = 0; j < 26; ++j) EXPECT_LE(v5.num_categories(j), v1.num_categories(j));
  // Every row featurizes into range.
  auto r = CriteoReader::Open(DataPath("criteo_raw_paddlerec_part-0.tsv"));
  ASSERT_TRUE(r.ok());
  CriteoRow row;
  int64_t ids[39];
  float values[39];
  int64_t unk = 0;
  while (*(*r)->Next(&row)) {
    v5.Featurize(row, ids, values);
    for (int f = 0; f < 39; ++f) {
      EXPECT_GE(ids[f], 0);
      EXPECT_LT(ids[f], v5.size());
    }
    for (int j = 0; j < 26; ++j) unk += ids[13 + j] == v5.unk_id(j);
  }
  EXPECT_GT(unk, 0);
}

TEST(CriteoRealData, DeepCtrCsv) {
  SKIP_WITHOUT_DATA();
  RawStats st = ReadRaw(DataPath("criteo_deepctr_sample.csv"));
  EXPECT_EQ(st.format, CriteoFormat::kCsv);
  EXPECT_EQ(st.counters.header_lines, 1u);
  EXPECT_EQ(st.counters.lines, 201u);
  EXPECT_EQ(st.rows, 200);
  EXPECT_EQ(st.zeros, 151);
  EXPECT_EQ(st.ones, 49);
  EXPECT_EQ(st.empty_num + st.empty_cat, 1101);
  EXPECT_TRUE(st.all_integral);  // "260.0" etc.
  EXPECT_GT(st.neg_one, 0);      // I2 holds -1
}

TEST(CriteoRealData, DeepFmFeatureMapLoadsAndRoundTrips) {
  SKIP_WITHOUT_DATA();
  const std::string path = DataPath("criteo_deepfm_va10k.feature_map.txt");
  auto v = CriteoVocabulary::LoadFeatureMap(path, 1);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->size(), 922);  // ids 1..922 in the file
  EXPECT_EQ(v->numeric_id(12), 12);   // "I13 13"
  EXPECT_EQ(v->unk_id(0), 13);        // "C1|<unk> 14"
  EXPECT_EQ(v->Lookup(0, "05db9164"), 14);  // "C1|05db9164 15"
  EXPECT_EQ(v->Lookup(25, "731c3655"), 908);  // "C26|731c3655 909"
  EXPECT_EQ(v->Lookup(25, "nothere"), v->unk_id(25));
  // Same set of lines (the file is in arbitrary order; ours is in id order).
  auto original = ReadFileToString(path);
  ASSERT_TRUE(original.ok());
  auto lines = [](const std::string& t) {
    std::multiset<std::string> s;
    size_t p = 0;
    while (p < t.size()) {
      size_t e = t.find('\n', p);
      if (e == std::string::npos) e = t.size();
      s.insert(t.substr(p, e - p));
      p = e + 1;
    }
    return s;
  };
  EXPECT_EQ(lines(v->FeatureMapText(1)), lines(*original));
}

TEST(CriteoRealData, LibSvmFileIsNotCriteo) {
  SKIP_WITHOUT_DATA();
  const std::string path = DataPath("criteo_deepfm_va10k.libsvm");
  auto r = CriteoReader::Open(path);
  ASSERT_TRUE(r.ok());
  CriteoRow row;
  auto more = (*r)->Next(&row);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().message().substr(0, path.size() + 30), path + ":1: expected 40 cells, got 1 (");
}

}  // namespace
}  // namespace ctrain::io
