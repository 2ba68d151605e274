// data::ExampleReaderOptions::labels (io/label_mode.h) on the trial's
// unlabelled Kaggle-layout TSV (../shared/cases/trial, Criteo-derived: read
// in place, never copied).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ctrain/data/example_reader.h"

namespace ctrain::io {
namespace {

TEST(LabelMode, ExampleReaderOnTheTrialsUnlabelledTsv) {
  const std::string path = std::string(CTRAIN_SHARED_DATA_DIR) + "/../cases/trial/criteo_test_nolabel_39cols.tsv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared trial file " << path << " is absent";
  data::ExampleReaderOptions o;
  o.feature_size = 1000;
  o.labels = LabelMode::kAuto;
  auto r = data::OpenExampleReader(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->format(), data::RecordFormat::kCriteoTsv);
  float label = 0;
  std::vector<int64_t> ids(39);
  std::vector<float> values(39);
  int rows = 0;
  for (;;) {
    StatusOr<bool> more = (*r)->Next(&label, ids.data(), values.data());
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    EXPECT_TRUE(std::isnan(label));
    ++rows;
  }
  EXPECT_EQ(rows, 3);
  // Without the label mode the file is the documented cell-count error.
  o.labels = LabelMode::kRequired;
  auto strict = data::OpenExampleReader(path, o);
  ASSERT_TRUE(strict.ok());
  EXPECT_NE((*strict)->Next(&label, ids.data(), values.data()).status().message().find("expected 40 cells, got 39"),
            std::string::npos);
  o.labels = LabelMode::kAbsent;
  o.format = data::RecordFormat::kTFRecord;
  EXPECT_FALSE(data::OpenExampleReader(path, o).ok());
}

}  // namespace
}  // namespace ctrain::io
