#include "ctrain/io/libsvm.h"

#include <gtest/gtest.h>

#include <charconv>
#include <ctime>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "ctrain/io/feature_hash.h"
#include "ctrain/io/text_number.h"

namespace ctrain::io {
namespace {

struct Parsed {
  Status status;
  float label = -7;
  std::vector<int64_t> ids;
  std::vector<float> values;
  LibSvmLineInfo info;
};

Parsed Parse(std::string_view line, LibSvmOptions o, TextLocation where = {}) {
  Parsed p;
  const int32_t cap = o.field_size;
  std::vector<int64_t> ids(cap + 1);
  std::vector<float> values(cap + 1);
  int32_t n = -1;
  p.status = ParseLibSvmLine(line, o, &p.label, ids.data(), values.data(), &n, cap, &p.info, where);
  if (p.status.ok()) {
    p.ids.assign(ids.begin(), ids.begin() + n);
    p.values.assign(values.begin(), values.begin() + n);
  }
  return p;
}

LibSvmOptions Fixed(int32_t f, int32_t base = 0) {
  LibSvmOptions o;
  o.field_size = f;
  o.id_base = base;
  return o;
}

LibSvmOptions Variable(int32_t f, int32_t base = 0) {
  LibSvmOptions o = Fixed(f, base);
  o.variable_length = true;
  return o;
}

std::string ErrorOf(std::string_view line, LibSvmOptions o) {
  Parsed p = Parse(line, o, TextLocation{"data.libsvm", 17});
  EXPECT_FALSE(p.status.ok()) << line;
  EXPECT_EQ(p.status.code(), StatusCode::kInvalidArgument);
  return std::string(p.status.message());
}

TEST(LibSvmLine, BasicPositionalFieldsKeptAsWritten) {
  Parsed p = Parse("1 5:0.5 3:1 5:2", Fixed(3));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.label, 1.0f);
  EXPECT_EQ(p.info.kind, LineKind::kData);
  EXPECT_EQ(p.ids, (std::vector<int64_t>{5, 3, 5}));  // not sorted, not de-duplicated
  EXPECT_EQ(p.values, (std::vector<float>{0.5f, 1.0f, 2.0f}));
}

TEST(LibSvmLine, IdBaseSubtracted) {
  Parsed p = Parse("0 1:1 126:1", Fixed(2, 1));
  ASSERT_TRUE(p.status.ok());
  EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 125}));
  EXPECT_EQ(ErrorOf("0 0:1 3:1", Fixed(2, 1)), "data.libsvm:17:3: id 0 is below id_base 1");
}

TEST(LibSvmLine, LabelMapping) {
  const std::map<std::string, float> good = {
      {"0", 0}, {"1", 1}, {"-1", 0}, {"+1", 1}, {"1.0", 1}, {"0.0", 0}, {"-1.0", 0}, {"+1.0", 1},
      {"1e0", 1}, {"-0", 0}, {"+0", 0}, {"0.000", 0}, {"10e-1", 1}};
  for (const auto& [text, want] : good) {
    Parsed p = Parse(text + " 1:1", Fixed(1));
    ASSERT_TRUE(p.status.ok()) << text << ": " << p.status.ToString();
    EXPECT_EQ(p.label, want) << text;
  }
  for (std::string bad : {"2", "0.5", "nan", "inf", "-2", "abc", "1a", "+-1", "--1", "+", "-"}) {
    EXPECT_EQ(ErrorOf(bad + " 1:1", Fixed(1)), "data.libsvm:17:1: bad label '" + bad + "': expected 0, 1 or -1")
        << bad;
  }
}

TEST(LibSvmLine, WhitespaceCrlfTabsTrailing) {
  Parsed p = Parse("\t 1 \t 2:0.25\t\t3:1e-3   4:1.5E+2 \r", Fixed(3));
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.ids, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(p.values, (std::vector<float>{0.25f, 1e-3f, 150.0f}));
}

TEST(LibSvmLine, CommentsAndBlank) {
  EXPECT_EQ(Parse("", Fixed(3)).info.kind, LineKind::kBlank);
  EXPECT_EQ(Parse(" \t\r", Fixed(3)).info.kind, LineKind::kBlank);
  EXPECT_EQ(Parse("# header 1:2", Fixed(3)).info.kind, LineKind::kComment);
  EXPECT_EQ(Parse("   #x", Fixed(3)).info.kind, LineKind::kComment);
  Parsed p = Parse("1 1:1 2:2 # trailing 9:9", Fixed(2));
  ASSERT_TRUE(p.status.ok());
  EXPECT_TRUE(p.info.trailing_comment);
  EXPECT_EQ(p.ids, (std::vector<int64_t>{1, 2}));
  Parsed q = Parse("1 1:1 2:2#glued", Fixed(2));
  ASSERT_TRUE(q.status.ok());
  EXPECT_TRUE(q.info.trailing_comment);
  EXPECT_EQ(q.values, (std::vector<float>{1, 2}));
}

TEST(LibSvmLine, QidIgnoredAndCounted) {
  Parsed p = Parse("1 qid:3 1:1 2:2", Fixed(2));
  ASSERT_TRUE(p.status.ok());
  EXPECT_EQ(p.info.qid_tokens, 1);
  EXPECT_EQ(p.ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ErrorOf("1 qid:x 1:1", Fixed(1)),
            "data.libsvm:17:3: bad qid token 'qid:x': expected 'qid:' and a non-negative integer");
  // After the first pair a qid is not allowed.
  EXPECT_EQ(ErrorOf("1 1:1 qid:3", Fixed(2)), "data.libsvm:17:7: qid token 'qid:3' must come right after the label");
}

TEST(LibSvmLine, PairCount) {
  EXPECT_EQ(ErrorOf("1 1:1 2:1", Fixed(3)), "data.libsvm:17:10: expected 3 'id:value' pairs, found 2 (if every line has 2 pairs, pass --field-size 2; lines with a varying number of pairs: give a --feature-spec with a field map, docs/feature-spec.md)");
  EXPECT_EQ(ErrorOf("1 1:1 2:1 3:1 4:1", Fixed(3)),
            "data.libsvm:17:15: more than 3 'id:value' pairs (field_size 3): the line has 4 pairs (if every line "
            "has 4 pairs, pass --field-size 4; lines with a varying number of pairs: give a --feature-spec with a "
            "field map, docs/feature-spec.md)");
  // A trailing comment is not a pair.
  EXPECT_EQ(ErrorOf("1 1:1 2:1 3:1 4:1 5:1 # x:y", Fixed(3)),
            "data.libsvm:17:15: more than 3 'id:value' pairs (field_size 3): the line has 5 pairs (if every line "
            "has 5 pairs, pass --field-size 5; lines with a varying number of pairs: give a --feature-spec with a "
            "field map, docs/feature-spec.md)");
  EXPECT_EQ(ErrorOf("1", Fixed(3)), "data.libsvm:17:2: expected 3 'id:value' pairs, found 0 (lines with a varying number of pairs: give a --feature-spec with a field map, docs/feature-spec.md)");
  EXPECT_EQ(ErrorOf("1 # c", Fixed(3)), "data.libsvm:17:3: expected 3 'id:value' pairs, found 0 (lines with a varying number of pairs: give a --feature-spec with a field map, docs/feature-spec.md)");
  // Variable length: 0..field_size pairs.
  Parsed p = Parse("1", Variable(3));
  ASSERT_TRUE(p.status.ok());
  EXPECT_TRUE(p.ids.empty());
  EXPECT_TRUE(Parse("0 1:1 2:1", Variable(3)).status.ok());
  EXPECT_EQ(ErrorOf("1 1:1 2:1 3:1 4:1", Variable(3)),
            "data.libsvm:17:15: more than 3 'id:value' pairs (field_size 3)");
  // field_size 0: label-only rows.
  EXPECT_TRUE(Parse("0", Fixed(0)).status.ok());
  EXPECT_EQ(ErrorOf("0 1:1", Fixed(0)).substr(0, 73),
            "data.libsvm:17:3: more than 0 'id:value' pairs (field_size 0): the line h");
}

TEST(LibSvmLine, BadPairs) {
  EXPECT_EQ(ErrorOf("1 abc", Fixed(1)), "data.libsvm:17:3: expected 'id:value', found 'abc'");
  EXPECT_EQ(ErrorOf("1 12", Fixed(1)), "data.libsvm:17:3: expected 'id:value', found '12'");
  EXPECT_EQ(ErrorOf("1 -3:1", Fixed(1)),
            "data.libsvm:17:3: bad id '-3' in '-3:1': expected a non-negative integer");
  EXPECT_EQ(ErrorOf("1 1.5:1", Fixed(1)),
            "data.libsvm:17:3: bad id '1.5' in '1.5:1': expected a non-negative integer");
  EXPECT_EQ(ErrorOf("1 :1", Fixed(1)), "data.libsvm:17:3: bad id '' in ':1': expected a non-negative integer");
  EXPECT_EQ(ErrorOf("1 99999999999999999999:1", Fixed(1)),
            "data.libsvm:17:3: id '99999999999999999999' does not fit in int64");
  EXPECT_EQ(ErrorOf("1 3:", Fixed(1)), "data.libsvm:17:5: bad value '' for id 3");
  EXPECT_EQ(ErrorOf("1 3:x", Fixed(1)), "data.libsvm:17:5: bad value 'x' for id 3");
  EXPECT_EQ(ErrorOf("1 3:1e", Fixed(1)), "data.libsvm:17:5: bad value '1e' for id 3");
  EXPECT_EQ(ErrorOf("1 3:nan", Fixed(1)), "data.libsvm:17:5: value 'nan' for id 3 is not finite");
  EXPECT_EQ(ErrorOf("1 3:-inf", Fixed(1)), "data.libsvm:17:5: value '-inf' for id 3 is not finite");
  EXPECT_EQ(ErrorOf("1 3:1e-400", Fixed(1)),
            "data.libsvm:17:5: value '1e-400' for id 3 is out of float range: it underflows (nonzero but smaller in "
            "magnitude than 1.4e-45, the smallest float)");
  EXPECT_EQ(ErrorOf("1 3:-4e38", Fixed(1)),
            "data.libsvm:17:5: value '-4e38' for id 3 is out of float range: it overflows (larger in magnitude than "
            "3.4e+38, the largest float)");
  EXPECT_EQ(ErrorOf("1 3:1e39", Fixed(1)).substr(0, 61), "data.libsvm:17:5: value '1e39' for id 3 is out of float range");
  EXPECT_EQ(ErrorOf("1 0:1:0.5", Fixed(1)),
            "data.libsvm:17:3: found 'field:feature:value' triple '0:1:0.5'; this is libFFM, not LibSVM (or two "
            "pairs glued together: missing space?)");
  // B27: two pairs glued together (a missing space) name the token, not libFFM.
  EXPECT_EQ(ErrorOf("1 13:6.64e-0114:8.74", Fixed(1)),
            "data.libsvm:17:3: bad value '6.64e-0114:8.74' for id 13: token holds two ':'; missing space between "
            "two 'id:value' pairs? (libFFM 'field:feature:value' files need --format libffm)");
  // Binary garbage is quoted with escapes.
  EXPECT_EQ(ErrorOf(std::string("1 \x01\xff", 4), Fixed(1)),
            "data.libsvm:17:3: expected 'id:value', found '\\x01\\xff'");
  // Max int64 id is fine.
  Parsed p = Parse("1 9223372036854775807:1", Fixed(1));
  ASSERT_TRUE(p.status.ok());
  EXPECT_EQ(p.ids[0], INT64_MAX);
}

TEST(LibSvmLine, MessageWithoutFileName) {
  Parsed p = Parse("1 abc", Fixed(1), TextLocation{"", 4});
  EXPECT_EQ(p.status.message(), "line 4, column 3: expected 'id:value', found 'abc'");
  Parsed q = Parse("1 abc", Fixed(1));
  EXPECT_EQ(q.status.message(), "column 3: expected 'id:value', found 'abc'");
}

TEST(LibSvmLine, CapacityBelowFieldSizeIsCallerError) {
  float label;
  int64_t ids[2];
  float values[2];
  int32_t n;
  LibSvmLineInfo info;
  Status s = ParseLibSvmLine("1 1:1", Fixed(3), &label, ids, values, &n, 2, &info);
  EXPECT_EQ(s.ToString(), "InvalidArgument: ParseLibSvmLine: capacity 2 < field_size 3");
}

TEST(TextNumber, WidePathDefersFloatMidpointsToFromChars) {
  // 2^24 + 1 and 2^24 + 3 are exactly halfway between two floats: ties go to even.
  for (const char* s : {"16777217", "16777219", "1.6777217", "0.16777217", "33554434", "8388609.5", "4.0430512", "9007199.254740992"}) {
    float a, b;
    std::string_view v(s);
    ASSERT_EQ(ParseFloat(v.data(), v.data() + v.size(), &a), NumParse::kOk) << s;
    std::from_chars(v.data(), v.data() + v.size(), b);
    EXPECT_EQ(std::memcmp(&a, &b, 4), 0) << s << " " << a << " vs " << b;
  }
  float t;
  std::string_view mid = "16777217";
  ASSERT_EQ(ParseFloat(mid.data(), mid.data() + mid.size(), &t), NumParse::kOk);
  EXPECT_EQ(t, 16777216.0f);
}

TEST(TextNumber, FastPathMatchesFromChars) {
  std::mt19937_64 rng(7);
  char buf[64];
  auto check = [&](std::string_view s) {
    float a, b;
    NumParse st = ParseFloat(s.data(), s.data() + s.size(), &a);
    auto r = std::from_chars(s.data(), s.data() + s.size(), b);
    ASSERT_EQ(st, NumParse::kOk) << s;
    ASSERT_EQ(r.ptr, s.data() + s.size());
    ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << s << " " << a << " vs " << b;
  };
  for (int i = 0; i < 200000; ++i) {
    // Random simple decimals: up to 8 integer digits, up to 10 fraction digits.
    const int id = 1 + static_cast<int>(rng() % 8), fd = static_cast<int>(rng() % 11);
    std::string s = (rng() & 1) ? "-" : "";
    for (int k = 0; k < id; ++k) s += static_cast<char>('0' + rng() % 10);
    if (fd) {
      s += '.';
      for (int k = 0; k < fd; ++k) s += static_cast<char>('0' + rng() % 10);
    }
    check(s);
  }
  for (int i = 0; i < 100000; ++i) {  // shortest forms of random floats round-trip
    uint32_t bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isfinite(f)) continue;
    char* e = std::to_chars(buf, buf + sizeof(buf), f).ptr;
    check(std::string_view(buf, static_cast<size_t>(e - buf)));
  }
  for (const char* s : {"16777216", "16777217", "0.16777217", "1.0000000000", "0.00000000001", "123456789",
                        "5.", ".5", "0", "-0", "00000000000000000000001.5", "3.4028235e38"}) {
    check(s);
  }
}

TEST(LibSvmWriter, ShortestRoundTripByteExact) {
  std::string out;
  const std::vector<int64_t> ids = {0, 12, 12, 920};
  const std::vector<float> values = {0.1f, 1.0f, 13.95325f, 1e-7f};
  AppendLibSvmLine(1.0f, ids, values, 1, &out);
  AppendLibSvmLine(0.0f, ids, std::vector<float>{0, -2.5f, 3.4028235e38f, 1.17549435e-38f}, 0, &out);
  EXPECT_EQ(out, "1 1:0.1 13:1 13:13.95325 921:1e-07\n0 0:0 12:-2.5 12:3.4028235e+38 920:1.1754944e-38\n");

  // Random rows: write -> parse -> write is byte-identical and values bit-identical.
  std::mt19937_64 rng(11);
  std::string text;
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < 2000; ++r) {
    std::vector<int64_t> rid(5);
    std::vector<float> rv(5);
    for (int k = 0; k < 5; ++k) {
      rid[k] = static_cast<int64_t>(rng() % 1000000);
      uint32_t bits = static_cast<uint32_t>(rng());
      std::memcpy(&rv[k], &bits, 4);
      if (!std::isfinite(rv[k])) rv[k] = 0.5f;
    }
    AppendLibSvmLine(static_cast<float>(r & 1), rid, rv, 1, &text);
    rows.push_back(rv);
  }
  auto reader = LibSvmReader::Open(NewMemoryFile("mem", text), Fixed(5, 1));
  ASSERT_TRUE(reader.ok());
  std::string again;
  float label;
  int64_t rid[5];
  float rv[5];
  int32_t n;
  for (int r = 0; r < 2000; ++r) {
    auto more = (*reader)->Next(&label, rid, rv, &n);
    ASSERT_TRUE(more.ok() && *more) << more.status().ToString();
    ASSERT_EQ(std::memcmp(rv, rows[r].data(), sizeof(rv)), 0) << "row " << r;
    AppendLibSvmLine(label, std::span<const int64_t>(rid, 5), std::span<const float>(rv, 5), 1, &again);
  }
  EXPECT_EQ(again, text);
}

TEST(LibSvmReader, CountersAndErrorsNameFileLine) {
  const std::string text =
      "# header comment\n"
      "1 qid:1 1:1 2:0.5\r\n"
      "\n"
      "   \t\n"
      "-1 3:2 4:1 # note\n"
      "+1 5:1 6:1";  // no final newline
  auto reader = LibSvmReader::Open(NewMemoryFile("t.libsvm", text), Fixed(2, 1));
  ASSERT_TRUE(reader.ok());
  float label;
  int64_t ids[2];
  float values[2];
  int32_t n;
  std::vector<float> labels;
  for (;;) {
    auto more = (*reader)->Next(&label, ids, values, &n);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    labels.push_back(label);
    EXPECT_EQ(n, 2);
  }
  EXPECT_EQ(labels, (std::vector<float>{1, 0, 1}));
  const auto& c = (*reader)->counters();
  EXPECT_EQ(c.lines, 6u);
  EXPECT_EQ(c.records, 3u);
  EXPECT_EQ(c.blank_lines, 2u);
  EXPECT_EQ(c.comment_lines, 1u);
  EXPECT_EQ(c.qid_tokens, 1u);
  EXPECT_EQ(c.trailing_comments, 1u);
  EXPECT_EQ((*reader)->line_number(), 6u);

  auto bad = LibSvmReader::Open(NewMemoryFile("data.libsvm", "1 1:1 2:1\n\n0 1:1 abc\n1 1:1 2:1\n"), Fixed(2, 1));
  ASSERT_TRUE(bad.ok());
  auto more = (*bad)->Next(&label, ids, values, &n);
  ASSERT_TRUE(more.ok() && *more);
  more = (*bad)->Next(&label, ids, values, &n);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().ToString(), "InvalidArgument: data.libsvm:3:7: expected 'id:value', found 'abc'");
  EXPECT_EQ((*bad)->line_number(), 3u);
  EXPECT_EQ((*bad)->line_offset(), 11u);
  more = (*bad)->Next(&label, ids, values, &n);  // sticky
  EXPECT_EQ(more.status().message(), "data.libsvm:3:7: expected 'id:value', found 'abc'");
}

TEST(LibSvmReader, BadOptionsAndMissingFile) {
  LibSvmOptions o;
  o.field_size = -1;
  EXPECT_EQ(LibSvmReader::Open(NewMemoryFile("m", ""), o).status().ToString(),
            "InvalidArgument: LibSVM options: field_size -1 < 0");
  o = LibSvmOptions();
  o.id_base = -1;
  EXPECT_EQ(LibSvmReader::Open(NewMemoryFile("m", ""), o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LibSvmReader::Open("/nonexistent/x.libsvm", LibSvmOptions()).status().code(), StatusCode::kNotFound);
}

// ------------------------------------------------------------- real files

std::string DataPath(const char* name) { return std::string(CTRAIN_SHARED_DATA_DIR) + "/" + name; }

#define SKIP_WITHOUT_DATA()                                                              \
  if (!std::filesystem::exists(CTRAIN_SHARED_DATA_DIR)) {                                \
    GTEST_SKIP() << "shared data directory " << CTRAIN_SHARED_DATA_DIR << " not present";   \
  }

struct FileStats {
  int64_t rows = 0, ones = 0, zeros = 0, min_id = INT64_MAX, max_id = -1, dup_lines = 0, dup13 = 0;
};

FileStats ReadAll(const std::string& path, LibSvmOptions o, size_t buffer = 1 << 20) {
  FileStats st;
  auto reader = LibSvmReader::Open(path, o, buffer);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return st;
  std::vector<int64_t> ids(o.field_size);
  std::vector<float> values(o.field_size);
  float label;
  int32_t n;
  for (;;) {
    auto more = (*reader)->Next(&label, ids.data(), values.data(), &n);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    ++st.rows;
    (label == 1 ? st.ones : st.zeros)++;
    std::set<int64_t> seen;
    bool dup = false;
    for (int i = 0; i < n; ++i) {
      st.min_id = std::min(st.min_id, ids[i]);
      st.max_id = std::max(st.max_id, ids[i]);
      dup |= !seen.insert(ids[i]).second;
    }
    st.dup_lines += dup;
    st.dup13 += (n == 39 && ids[12] == 12 && ids[13] == 12);
  }
  return st;
}

TEST(LibSvmRealData, CriteoDeepFmVa10k) {
  SKIP_WITHOUT_DATA();
  FileStats st = ReadAll(DataPath("criteo_deepfm_va10k.libsvm"), Fixed(39, 1));
  EXPECT_EQ(st.rows, 10040);
  EXPECT_EQ(st.zeros, 7711);
  EXPECT_EQ(st.ones, 2329);
  EXPECT_EQ(st.min_id, 0);
  EXPECT_EQ(st.max_id, 920);
  EXPECT_EQ(st.dup_lines, 468);
  EXPECT_EQ(st.dup13, 468);  // "13:<float> 13:1": I13 and C1 share id 13 (12 after id_base)
}

TEST(LibSvmRealData, CriteoDeepFmRoundTripsThroughWriter) {
  SKIP_WITHOUT_DATA();
  // The file writes some values in fixed notation where the shortest form is
  // scientific ("0.000031" vs "3.1e-05"), so: parse(file) -> write -> parse must give
  // bit-identical rows, and writing those again must give identical bytes.
  auto read_all = [](const std::string& name, const std::string& text, std::vector<float>* labels,
                     std::vector<int64_t>* ids, std::vector<float>* values) {
    auto r = LibSvmReader::Open(NewMemoryFile(name, text), Fixed(39, 1));
    ASSERT_TRUE(r.ok());
    int64_t i[39];
    float v[39];
    float label;
    int32_t n;
    for (;;) {
      auto more = (*r)->Next(&label, i, v, &n);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      labels->push_back(label);
      ids->insert(ids->end(), i, i + 39);
      values->insert(values->end(), v, v + 39);
    }
  };
  auto write_all = [](const std::vector<float>& labels, const std::vector<int64_t>& ids,
                      const std::vector<float>& values) {
    std::string out;
    for (size_t r = 0; r < labels.size(); ++r) {
      AppendLibSvmLine(labels[r], std::span<const int64_t>(ids.data() + 39 * r, 39),
                       std::span<const float>(values.data() + 39 * r, 39), 1, &out);
    }
    return out;
  };
  auto text = ReadFileToString(DataPath("criteo_deepfm_va10k.libsvm"));
  ASSERT_TRUE(text.ok());
  std::vector<float> l1, v1, l2, v2;
  std::vector<int64_t> i1, i2;
  read_all("a", *text, &l1, &i1, &v1);
  ASSERT_EQ(l1.size(), 10040u);
  const std::string written = write_all(l1, i1, v1);
  read_all("b", written, &l2, &i2, &v2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(i1, i2);
  ASSERT_EQ(v1.size(), v2.size());
  EXPECT_EQ(std::memcmp(v1.data(), v2.data(), v1.size() * sizeof(float)), 0);
  EXPECT_EQ(write_all(l2, i2, v2), written);
}

TEST(LibSvmRealData, Agaricus) {
  SKIP_WITHOUT_DATA();
  FileStats tr = ReadAll(DataPath("agaricus_train.libsvm"), Fixed(22, 1));
  EXPECT_EQ(tr.rows, 6513);
  EXPECT_EQ(tr.zeros, 3373);
  EXPECT_EQ(tr.ones, 3140);
  EXPECT_EQ(tr.min_id, 0);
  EXPECT_EQ(tr.max_id, 125);
  EXPECT_EQ(tr.dup_lines, 0);
  FileStats te = ReadAll(DataPath("agaricus_test.libsvm"), Fixed(22, 1));
  EXPECT_EQ(te.rows, 1611);
  EXPECT_EQ(te.zeros, 835);
  EXPECT_EQ(te.ones, 776);
  // A tiny read buffer (lines straddle refills, the buffer grows) changes nothing.
  FileStats small = ReadAll(DataPath("agaricus_test.libsvm"), Fixed(22, 1), 7);
  EXPECT_EQ(small.rows, 1611);
  EXPECT_EQ(small.ones, 776);
  EXPECT_EQ(small.max_id, te.max_id);
}

TEST(LibSvmRealData, LibFfmIsRejectedWithLocation) {
  SKIP_WITHOUT_DATA();
  for (const char* name : {"criteo_xlearn_small_train.libffm", "criteo_xlearn_small_test.libffm"}) {
    const std::string path = DataPath(name);
    auto reader = LibSvmReader::Open(path, Variable(64));
    ASSERT_TRUE(reader.ok());
    int64_t ids[64];
    float values[64];
    float label;
    int32_t n;
    auto more = (*reader)->Next(&label, ids, values, &n);
    ASSERT_FALSE(more.ok());
    const std::string msg(more.status().message());
    EXPECT_EQ(msg.rfind(path + ":1:3: found 'field:feature:value' triple '", 0), 0u) << msg;
    EXPECT_NE(msg.find("; this is libFFM, not LibSVM"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ctrain::io
