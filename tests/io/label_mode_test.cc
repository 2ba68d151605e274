// io/label_mode.h: LibSVM lines and Criteo rows without the label column
// (Kaggle test.txt, LibSVM test sets), auto-detected or told (--no-label).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/io/criteo.h"
#include "ctrain/io/file.h"
#include "ctrain/io/libsvm.h"
#include "testing/temp_dir.h"

namespace ctrain::io {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = testing::TestTempDir("label_mode", "files") + "/" + name;
  EXPECT_TRUE(WriteStringToFileAtomic(path, text).ok());
  return path;
}

struct Rows {
  std::vector<float> labels;
  std::vector<int64_t> ids;
  Status status;
};

Rows ReadLibSvm(const std::string& text, LabelMode mode) {
  static int n = 0;
  LibSvmOptions o;
  o.field_size = 2;
  o.id_base = 1;
  o.labels = mode;
  Rows rows;
  auto r = LibSvmReader::Open(Write("f" + std::to_string(n++) + ".libsvm", text), o);
  EXPECT_TRUE(r.ok());
  float label;
  int64_t ids[2];
  float values[2];
  int32_t nf;
  for (;;) {
    StatusOr<bool> more = (*r)->Next(&label, ids, values, &nf);
    if (!more.ok()) {
      rows.status = more.status();
      break;
    }
    if (!*more) break;
    rows.labels.push_back(label);
    rows.ids.insert(rows.ids.end(), ids, ids + 2);
  }
  return rows;
}

TEST(LabelMode, LibSvmAutoDetectsUnlabelledLines) {
  Rows r = ReadLibSvm("# test set\n1:0.5 3:1\n2:1 4:1\n", LabelMode::kAuto);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.labels.size(), 2u);
  EXPECT_TRUE(std::isnan(r.labels[0]) && std::isnan(r.labels[1]));
  EXPECT_EQ(r.ids, (std::vector<int64_t>{0, 2, 1, 3}));
  // A labelled file in auto mode reads as before.
  r = ReadLibSvm("1 1:0.5 3:1\n-1 2:1 4:1\n", LabelMode::kAuto);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(r.ids, (std::vector<int64_t>{0, 2, 1, 3}));
}

TEST(LabelMode, LibSvmMixedFileIsAnErrorNamingBothLines) {
  Rows r = ReadLibSvm("1:0.5 3:1\n\n1 2:1 4:1\n", LabelMode::kAuto);
  EXPECT_EQ(r.labels.size(), 1u);
  EXPECT_NE(r.status.message().find(":3:1: expected 'id:value'"), std::string::npos) << r.status.ToString();
  EXPECT_NE(r.status.message().find("(the first data line, line 1, has no label, so every line must)"),
            std::string::npos)
      << r.status.ToString();
  r = ReadLibSvm("0 1:0.5 3:1\n2:1 4:1\n", LabelMode::kAuto);
  EXPECT_NE(r.status.message().find(":2:1: bad label '2:1'"), std::string::npos) << r.status.ToString();
  EXPECT_NE(r.status.message().find("(the first data line, line 1, starts with a label, so every line must)"),
            std::string::npos);
}

TEST(LabelMode, LibSvmRequiredAndAbsent) {
  Rows r = ReadLibSvm("1:0.5 3:1\n", LabelMode::kRequired);  // the default: unchanged
  EXPECT_NE(r.status.message().find(":1:1: bad label '1:0.5'"), std::string::npos) << r.status.ToString();
  r = ReadLibSvm("1 1:0.5 3:1\n", LabelMode::kAbsent);
  EXPECT_NE(r.status.message().find(":1:1: expected 'id:value', found '1'"), std::string::npos)
      << r.status.ToString();
  r = ReadLibSvm("1:0.5 3:1\n", LabelMode::kAbsent);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(std::isnan(r.labels.at(0)));
}

// A 40-cell Criteo row and the same row without its label.
const std::string kCells39 = "1\t\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\tfb936136\t7b4723c4\t25c83c98"
                             "\t7e0ccccf\tde7995b8\t1f89b562\ta73ee510\ta8cd5504\tb2cb9c98\t37c9c164\t2824a5f6\t1adce6ef"
                             "\t8ba8b39a\t891b62e7\te5ba7672\tf54016b9\t21ddcdc9\tb1252a9d\t07b5194c\t\t3a171ecb"
                             "\tc5c50484\te8b83407\t9727dd16";

TEST(LabelMode, CriteoAutoReads39CellsAsUnlabelled) {
  CriteoRow labelled, unlabelled;
  ASSERT_TRUE(ParseCriteoLine("1\t" + kCells39, '\t', &labelled).ok());
  CriteoReaderOptions o;
  o.labels = LabelMode::kAuto;
  auto r = CriteoReader::Open(Write("t.tsv", kCells39 + "\n" + kCells39 + "\n"), o);
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 2; ++i) {
    StatusOr<bool> more = (*r)->Next(&unlabelled);
    ASSERT_TRUE(more.ok() && *more) << more.status().ToString();
    EXPECT_TRUE(std::isnan(unlabelled.label));
    EXPECT_EQ(unlabelled.numeric, labelled.numeric);
    EXPECT_EQ(unlabelled.numeric_present, labelled.numeric_present);
    EXPECT_EQ(unlabelled.categorical_present, labelled.categorical_present);
    EXPECT_EQ(std::string(unlabelled.categorical[25]), "9727dd16");
  }
  EXPECT_EQ((*r)->labels(), LabelMode::kAbsent);
  // A labelled row after an unlabelled one names the first row.
  auto mixed = CriteoReader::Open(Write("m.tsv", kCells39 + "\n1\t" + kCells39 + "\n"), o);
  ASSERT_TRUE(mixed.ok());
  ASSERT_TRUE(*(*mixed)->Next(&unlabelled));
  StatusOr<bool> bad = (*mixed)->Next(&unlabelled);
  EXPECT_EQ(bad.status().message().substr(bad.status().message().find("m.tsv:2")),
            "m.tsv:2: expected 39 cells (I1..I13 C1..C26, no label), got 40 (the first data row, line 1, has 39 "
            "cells and no label, so every row must)");
}

}  // namespace
}  // namespace ctrain::io
