// FieldStats / DistinctCounter: exact counts, the KMV sketch's accuracy, value
// ranges and the two warnings (issue #7 item 4).
#include "ctrain/data/field_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ctrain/io/feature_hash.h"

namespace ctrain::data {
namespace {

TEST(DistinctCounter, ExactThenSketchWithinFivePercent) {
  DistinctCounter c;
  for (uint64_t k = 0; k < 1000; ++k) {
    c.Add(io::Mix64(k));
    c.Add(io::Mix64(k));  // repeats do not count
  }
  EXPECT_TRUE(c.exact());
  EXPECT_EQ(c.Count(), 1000u);
  for (uint64_t k = 0; k < 300000; ++k) c.Add(io::Mix64(k));
  EXPECT_FALSE(c.exact());
  EXPECT_NEAR(static_cast<double>(c.Count()), 300000.0, 300000.0 * 0.05);
}

TEST(FieldStats, RangesDistinctAndWarnings) {
  FieldStats st;
  for (int i = 0; i < 20; ++i) {
    st.Add(0, 100 + i % 4, 1.0);        // one-hot: 4 ids, value 1
    st.Add(1, 7, i * 1e7);              // raw counts on one id
    st.Add(2, 3, i % 5);                // codes 0..4 stored as values
    st.Add(3, 9, 0.1 * (i % 3) + 0.05);  // scaled floats on one id: fine
  }
  const auto& f = st.fields();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].ids.Count(), 4u);
  EXPECT_EQ(f[0].min, 1.0);
  EXPECT_EQ(f[0].max, 1.0);
  EXPECT_EQ(f[1].max, 1.9e8);
  EXPECT_EQ(f[2].values.Count(), 5u);
  EXPECT_TRUE(f[2].all_integral);
  EXPECT_FALSE(f[3].all_integral);
  const std::vector<std::string> w = st.Warnings();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].rfind("field 2: values range 0..1.9e+08: unscaled?", 0), 0u) << w[0];
  EXPECT_NE(w[0].find("if these are category codes"), std::string::npos) << w[0];
  EXPECT_EQ(w[1].rfind("field 3: the id never varies (always 3) while the value does (5 distinct integers, 0..4)", 0),
            0u)
      << w[1];
}

TEST(FieldStats, ManyFieldsShareTheExactBudget) {
  FieldStats st;
  for (size_t i = 0; i < 1024; ++i) st.At(i);
  for (uint64_t k = 0; k < 5000; ++k) st.AddIdHash(0, io::Mix64(k));
  EXPECT_FALSE(st.fields()[0].ids.exact());  // 4M / 2048 counters < 4096 -> the 4096 floor
  EXPECT_NEAR(static_cast<double>(st.fields()[0].ids.Count()), 5000.0, 5000.0 * 0.1);
}

// The rules train::InputStats shares, on a FieldStats that counts only up to caps.
TEST(FieldStats, CappedCountsAndTheSharedRules) {
  FieldStats st(/*id_cap=*/2, /*value_cap=*/4);
  for (int i = 0; i < 10; ++i) {
    st.Add(0, 5, i);      // codes 0..9 on one id
    st.Add(1, 5, i - 5);  // negative integers: not codes
    st.Add(2, i, 1.0);    // one-hot
  }
  const auto& f = st.fields();
  EXPECT_EQ(f[0].values.Count(), 4u);  // at least 4
  EXPECT_EQ(f[0].ids.Count(), 1u);
  EXPECT_EQ(f[2].ids.Count(), 2u);  // at least 2
  EXPECT_TRUE(FieldStats::LooksLikeCodes(f[0]));
  EXPECT_FALSE(FieldStats::LooksLikeCodes(f[0], 5));  // counted up to 4 only
  EXPECT_FALSE(FieldStats::LooksLikeCodes(f[1]));
  EXPECT_FALSE(FieldStats::LooksLikeCodes(f[2]));
  EXPECT_FALSE(FieldStats::Unscaled(f[0]));
  EXPECT_TRUE(FieldStats::Unscaled(f[0], 5.0));
}

}  // namespace
}  // namespace ctrain::data
