// Input checks (train/input_checks.h): the statistics, their warnings, the
// saturation rule and locating extreme rows in the input files.
#include "ctrain/train/input_checks.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace ctrain::train {
namespace {

// rows x 2 fields: field 1 id varies, value 1 (one-hot); field 2 as given.
void AddRows(InputStats* st, int64_t field2_id, const std::vector<float>& field2_values) {
  for (size_t r = 0; r < field2_values.size(); ++r) {
    const int64_t ids[2] = {static_cast<int64_t>(r % 7), field2_id};
    const float values[2] = {1.0f, field2_values[r]};
    st->Add(ids, values, 1);
  }
}

TEST(InputStats, ScaledOneHotAndContinuousFieldsGiveNoWarning) {
  InputStats st(2);
  AddRows(&st, 9, {0.1f, 2.5f, 3.25f, 0.0f, 7.7f});
  EXPECT_EQ(st.examples(), 5);
  EXPECT_TRUE(st.Warnings().empty());
  EXPECT_TRUE(st.fields()[0].id_varies);
  EXPECT_FALSE(st.fields()[1].id_varies);
  EXPECT_FLOAT_EQ(st.fields()[1].max, 7.7f);
  EXPECT_FALSE(st.fields()[1].integral);
}

TEST(InputStats, UnscaledValuesNameTheFieldTheRangeAndTheFix) {
  InputStats st(2);
  AddRows(&st, 9, {0.5f, 4.7e8f, 12.5f});
  const std::vector<std::string> w = st.Warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("unscaled input values: field 2 has values beyond +-1000 in the first 3 training examples "
                      "(field 2: 0.5 .. 4.7e+08)"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("log1p"), std::string::npos);
}

TEST(InputStats, ConstantIdWithIntegerCodesIsFlaggedAsCategoryCodes) {
  InputStats st(2);
  AddRows(&st, 4, {0, 3, 17, 3, 42, 5});
  const std::vector<std::string> w = st.Warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("field 2: the id never varies while the value takes several integer values"), std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("field 2: id 4, 5 values 0 .. 42"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("hash each code into the id"), std::string::npos);
  // Two values (a binary flag) or a varying id are not codes.
  InputStats flag(2);
  AddRows(&flag, 4, {0, 1, 0, 1});
  EXPECT_TRUE(flag.Warnings().empty());
}

TEST(InputStats, StopsAtMaxExamples) {
  InputCheckOptions o;
  o.max_examples = 2;
  InputStats st(2, o);
  AddRows(&st, 1, {1.5f, 2.5f, 1e9f});  // the third row is never looked at
  EXPECT_TRUE(st.full());
  EXPECT_EQ(st.examples(), 2);
  EXPECT_TRUE(st.Warnings().empty());
}

TEST(Saturation, WarnsOnlyWhenAlmostAllPredictionsSaturate) {
  std::vector<float> p(100, 0.0001f);
  EXPECT_DOUBLE_EQ(SaturatedFraction(p.data(), 100), 1.0);
  EXPECT_NE(SaturationWarning(1.0, 100, 7).find("step 7: 100.0% of the 100 evaluated predictions are saturated"),
            std::string::npos);
  p[0] = 0.5f;
  p[1] = 0.2f;
  EXPECT_DOUBLE_EQ(SaturatedFraction(p.data(), 100), 0.98);
  EXPECT_EQ(SaturationWarning(0.98, 100, 7), "");
}

data::Batch ThreeRows() {
  data::Batch b;
  b.field_size = 2;
  b.labels = {0, 1, 0};
  b.ids = {1, 2, 3, 4, 5, 6};
  b.values = {1, 0.5f, 1e30f, 1, 1, 2e7f};
  return b;
}

TEST(ExtremeRows, LargestFirstAndOnlyExtremeOnes) {
  const std::vector<ExtremeRow> rows = ExtremeRows(ThreeRows(), 5);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].row, 1);
  EXPECT_EQ(rows[0].field, 0);
  EXPECT_EQ(rows[1].row, 2);
  EXPECT_EQ(rows[1].field, 1);
  data::Batch nan = ThreeRows();
  nan.values[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ExtremeRows(nan, 1).at(0).row, 0);
}

TEST(InputStats, UnscaledWarningNamesTheLineOfTheLargestValue) {
  const std::string path = ::testing::TempDir() + "/peak_" + std::to_string(::getpid()) + ".libsvm";
  std::ofstream(path) << "0 1:1 2:0.5\n1 3:1 4:4.7e8\n0 5:1 6:2e3\n";
  data::ExampleReaderOptions ro;
  ro.format = data::RecordFormat::kLibSvm;
  ro.field_size = 2;
  const int64_t ids[] = {1, 2, 3, 4, 5, 6};
  const float values[] = {1, 0.5f, 1, 4.7e8f, 1, 2e3f};
  const float labels[] = {0, 1, 0};
  InputStats st(2);
  st.Add(ids, values, 3, labels);
  const std::vector<std::string> paths = {path};
  const std::vector<std::string> w = st.Warnings("training examples", &paths, &ro);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("(field 2: 0.5 .. 4.7e+08, largest at " + path + ":2)"), std::string::npos) << w[0];
  std::filesystem::remove(path);
}

TEST(LocateRows, NamesTheFileLineOfEachRowOrSaysItCannot) {
  const std::string path = ::testing::TempDir() + "/locate_" + std::to_string(::getpid()) + ".libsvm";
  std::ofstream(path) << "0 1:1 2:0.5\n# comment\n1 3:1e30 4:1\n0 5:1 6:2e7\n";
  data::ExampleReaderOptions ro;
  ro.format = data::RecordFormat::kLibSvm;
  ro.field_size = 2;
  const data::Batch b = ThreeRows();
  const std::vector<std::string> where = LocateRows({path}, ro, b, ExtremeRows(b, 5));
  ASSERT_EQ(where.size(), 2u);
  EXPECT_EQ(where[0], path + ":3: field 1 value 1e+30");
  EXPECT_EQ(where[1], path + ":4: field 2 value 2e+07");
  const std::vector<std::string> stream = LocateRows({"-"}, ro, b, ExtremeRows(b, 1));
  EXPECT_EQ(stream.at(0), "row 1 of the batch (label 1, from a stream that cannot be re-read): field 1 value 1e+30");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ctrain::train
