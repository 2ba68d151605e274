#include "ctrain/data/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace ctrain::data {
namespace {

struct Rows {
  std::vector<float> labels;
  std::vector<int64_t> ids;
  std::vector<float> values;
  std::vector<double> logits;
};

Rows Generate(const SynthGenerator& g, int64_t first, int64_t n) {
  const int32_t f = g.options().field_size;
  Rows r;
  r.labels.resize(n);
  r.ids.resize(n * f);
  r.values.resize(n * f);
  r.logits.resize(n);
  for (int64_t i = 0; i < n; ++i) g.Row(first + i, &r.labels[i], &r.ids[i * f], &r.values[i * f], &r.logits[i]);
  return r;
}

// AUC by sorting scores (ties averaged via rank sums).
double Auc(const std::vector<double>& score, const std::vector<float>& label) {
  std::vector<size_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
  double rank_sum = 0, pos = 0;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && score[idx[j]] == score[idx[i]]) ++j;
    const double avg_rank = 0.5 * static_cast<double>(i + 1 + j);
    for (size_t k = i; k < j; ++k) {
      if (label[idx[k]] == 1) {
        rank_sum += avg_rank;
        ++pos;
      }
    }
    i = j;
  }
  const double neg = static_cast<double>(score.size()) - pos;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

TEST(Synth, AucHelperSanity) {
  EXPECT_DOUBLE_EQ(Auc({1, 2, 3, 4}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(Auc({4, 3, 2, 1}, {0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(Auc({1, 1, 1, 1}, {0, 1, 0, 1}), 0.5);
}

TEST(Synth, DeterministicAndChunkIndependent) {
  SynthOptions o;
  SynthGenerator a(o), b(o);
  Rows ra = Generate(a, 0, 1000);
  // b: generated in chunks, out of order, through NextRow / Seek / AppendRows.
  Rows rb;
  rb.labels.resize(1000);
  rb.ids.resize(1000 * 39);
  rb.values.resize(1000 * 39);
  b.Seek(500);
  for (int i = 500; i < 1000; ++i) b.NextRow(&rb.labels[i], &rb.ids[i * 39], &rb.values[i * 39]);
  EXPECT_EQ(b.next_row(), 1000);
  Batch batch;
  b.AppendRows(0, 500, &batch);
  ASSERT_EQ(batch.size(), 500);
  EXPECT_EQ(batch.field_size, 39);
  EXPECT_TRUE(batch.Validate().ok());
  std::copy(batch.labels.begin(), batch.labels.end(), rb.labels.begin());
  std::copy(batch.ids.begin(), batch.ids.end(), rb.ids.begin());
  std::copy(batch.values.begin(), batch.values.end(), rb.values.begin());
  EXPECT_EQ(ra.labels, rb.labels);
  EXPECT_EQ(ra.ids, rb.ids);
  EXPECT_EQ(0, std::memcmp(ra.values.data(), rb.values.data(), ra.values.size() * 4));
  EXPECT_EQ(a.bias(), b.bias());

  SynthOptions o2 = o;
  o2.seed = 2018;
  SynthGenerator c(o2);
  Rows rc = Generate(c, 0, 1000);
  EXPECT_NE(ra.ids, rc.ids);
}

TEST(Synth, IdsInFieldRanges) {
  SynthOptions o;
  SynthGenerator g(o);
  // Ranges partition [0, feature_size).
  int64_t expect_lo = 0;
  for (int f = 0; f < 39; ++f) {
    auto [lo, hi] = g.field_range(f);
    EXPECT_EQ(lo, expect_lo);
    EXPECT_LT(lo, hi);
    if (f < 13) {
      EXPECT_EQ(hi, lo + 1);
    }
    expect_lo = hi;
  }
  EXPECT_EQ(expect_lo, o.feature_size);
  EXPECT_EQ(g.field_range(13), (std::pair<int64_t, int64_t>{13, 13 + 4522}));  // 117568 = 26 * 4521 + 22
  Rows r = Generate(g, 0, 5000);
  for (int64_t i = 0; i < 5000; ++i) {
    for (int f = 0; f < 39; ++f) {
      auto [lo, hi] = g.field_range(f);
      const int64_t id = r.ids[i * 39 + f];
      ASSERT_GE(id, lo);
      ASSERT_LT(id, hi);
      const float v = r.values[i * 39 + f];
      ASSERT_TRUE(std::isfinite(v));
      if (f < 13) {
        ASSERT_GE(v, 0.0f);
        ASSERT_LE(v, 21.0f);  // log1p(1e9)
      } else {
        ASSERT_EQ(v, 1.0f);
      }
    }
  }
  // Small configuration: one id per categorical field.
  SynthOptions tiny;
  tiny.field_size = 3;
  tiny.num_numeric = 1;
  tiny.feature_size = 3;
  SynthGenerator t(tiny);
  Rows rt = Generate(t, 0, 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(rt.ids[i * 3 + 1], 1);
    EXPECT_EQ(rt.ids[i * 3 + 2], 2);
  }
}

TEST(Synth, LabelRateZipfSkewAndLearnability) {
  SynthOptions o;
  SynthGenerator g(o);
  const int64_t n = 20000;
  Rows r = Generate(g, 0, n);
  const double ctr = std::accumulate(r.labels.begin(), r.labels.end(), 0.0) / n;
  EXPECT_GE(ctr, 0.15);
  EXPECT_LE(ctr, 0.40);
  std::printf("synth: ctr %.4f bias %.3f\n", ctr, g.bias());

  // Zipf skew in every categorical field: top id >> median id frequency (of seen ids).
  for (int f = 13; f < 39; ++f) {
    std::unordered_map<int64_t, int64_t> count;
    for (int64_t i = 0; i < n; ++i) ++count[r.ids[i * 39 + f]];
    std::vector<int64_t> c;
    for (auto& [id, k] : count) c.push_back(k);
    std::sort(c.rbegin(), c.rend());
    const int64_t median = c[c.size() / 2];
    EXPECT_GT(c[0], 20 * median) << "field " << f;
    EXPECT_EQ(count[g.field_range(f).first], c[0]) << "field " << f;  // lowest id most frequent
    EXPECT_GT(c.size(), 200u) << "field " << f;                       // a long tail is visited
  }
  // Numeric heavy tail: some zeros, some large values.
  int zeros = 0, large = 0;
  for (int64_t i = 0; i < n; ++i) {
    zeros += r.values[i * 39] == 0.0f;
    large += r.values[i * 39] > 5.0f;
  }
  EXPECT_GT(zeros, n / 20);
  EXPECT_GT(large, 0);

  const double auc = Auc(r.logits, r.labels);
  std::printf("synth: AUC of the true logit %.4f\n", auc);
  EXPECT_GE(auc, 0.75);
}

TEST(Synth, OptionsValidated) {
  SynthOptions o;
  o.feature_size = 10;
  EXPECT_EQ(SynthGenerator::Create(o).status().ToString(), "InvalidArgument: SynthOptions: feature_size 10 < field_size 39");
  o = SynthOptions();
  o.num_numeric = 40;
  EXPECT_EQ(SynthGenerator::Create(o).status().message(), "SynthOptions: num_numeric 40 not in [0, field_size 39]");
  o = SynthOptions();
  o.zipf_s = 0;
  EXPECT_FALSE(SynthGenerator::Create(o).ok());
  o = SynthOptions();
  o.target_ctr = 1;
  EXPECT_FALSE(SynthGenerator::Create(o).ok());
  o = SynthOptions();
  o.rows = -1;
  EXPECT_FALSE(SynthGenerator::Create(o).ok());
  o = SynthOptions();
  o.zipf_s = 1.0;  // the s == 1 special case of rejection-inversion
  auto g = SynthGenerator::Create(o);
  ASSERT_TRUE(g.ok());
  Rows r = Generate(**g, 0, 2000);
  const double ctr = std::accumulate(r.labels.begin(), r.labels.end(), 0.0) / 2000;
  EXPECT_GT(ctr, 0.15);
  EXPECT_LT(ctr, 0.40);
}

}  // namespace
}  // namespace ctrain::data
