#include "ctrain/train/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ctrain::train {
namespace {

double AucOf(std::vector<float> p, std::vector<float> y) {
  auto r = Auc(p, y);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : -1.0;
}

// O(n^2) definition: P(score_pos > score_neg) + 0.5 P(equal).
double PairwiseAuc(const std::vector<float>& p, const std::vector<float>& y) {
  double wins = 0, pairs = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (y[i] != 1.0f) continue;
    for (size_t j = 0; j < p.size(); ++j) {
      if (y[j] != 0.0f) continue;
      pairs += 1;
      wins += p[i] > p[j] ? 1.0 : (p[i] == p[j] ? 0.5 : 0.0);
    }
  }
  return wins / pairs;
}

TEST(AucTest, HandComputed) {
  EXPECT_DOUBLE_EQ(AucOf({0.1f, 0.9f}, {0, 1}), 1.0);
  EXPECT_DOUBLE_EQ(AucOf({0.9f, 0.1f}, {0, 1}), 0.0);
  EXPECT_DOUBLE_EQ(AucOf({0.5f, 0.5f}, {0, 1}), 0.5);
  // sklearn's doc example: roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75.
  EXPECT_DOUBLE_EQ(AucOf({0.1f, 0.4f, 0.35f, 0.8f}, {0, 0, 1, 1}), 0.75);
  // Ties across classes: pos {0.5, 0.7}, neg {0.5, 0.2, 0.7}:
  // 0.5 vs {0.5, 0.2, 0.7} = 0.5 + 1 + 0 ; 0.7 vs {..} = 1 + 1 + 0.5 -> 4 / 6.
  EXPECT_DOUBLE_EQ(AucOf({0.5f, 0.5f, 0.2f, 0.7f, 0.7f}, {1, 0, 0, 1, 0}), 4.0 / 6.0);
  // All scores equal -> 0.5 whatever the labels.
  EXPECT_DOUBLE_EQ(AucOf({0.3f, 0.3f, 0.3f, 0.3f, 0.3f}, {1, 0, 0, 1, 0}), 0.5);
  // -0 and +0 are one score.
  EXPECT_DOUBLE_EQ(AucOf({-0.0f, 0.0f}, {1, 0}), 0.5);
  // Order independent.
  EXPECT_DOUBLE_EQ(AucOf({0.8f, 0.35f, 0.4f, 0.1f}, {1, 1, 0, 0}), 0.75);
}

TEST(AucTest, OneClassIsNaN) {
  EXPECT_TRUE(std::isnan(AucOf({0.1f, 0.2f}, {1, 1})));
  EXPECT_TRUE(std::isnan(AucOf({0.1f, 0.2f}, {0, 0})));
  EXPECT_TRUE(std::isnan(AucOf({}, {})));
}

TEST(AucTest, Errors) {
  std::vector<float> p = {0.1f, 0.2f}, y = {0, 1}, y3 = {0, 1, 1}, ybad = {0, 0.5f};
  auto size = Auc(p, y3);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(size.status().message(), "auc: 2 predictions but 3 labels");
  auto label = Auc(p, ybad);
  ASSERT_FALSE(label.ok());
  EXPECT_EQ(label.status().message(), "auc: label 0.5 at index 1 is not 0 or 1");
  std::vector<float> pnan = {NAN, 0.2f};
  auto nan = Auc(pnan, y);
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.status().message(), "auc: prediction at index 0 is NaN");
}

TEST(AucTest, MatchesPairwiseReferenceWithManyTies) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 50 + trial * 37;
    const int levels = 1 + trial % 9;  // few distinct scores -> many ties
    std::vector<float> p(n), y(n);
    for (int i = 0; i < n; ++i) {
      p[i] = static_cast<float>(rng() % levels) / levels;
      // Labels correlated with the score so AUC is not ~0.5.
      y[i] = (rng() % 100) < 30 + 40 * p[i] ? 1.0f : 0.0f;
    }
    if (trial % 4 == 0) p[0] = -0.0f;
    EXPECT_NEAR(AucOf(p, y), PairwiseAuc(p, y), 1e-12) << "trial " << trial;
  }
}

TEST(AucTest, NegativeAndExtremeScores) {
  // Scores need not be probabilities; order is what matters (including negatives, inf).
  std::vector<float> p = {-INFINITY, -2.0f, -1.0f, 0.0f, 3.0f, INFINITY}, y = {0, 1, 0, 1, 0, 1};
  EXPECT_NEAR(AucOf(p, y), PairwiseAuc(p, y), 1e-15);
  EXPECT_DOUBLE_EQ(AucOf(p, y), 6.0 / 9.0);
}

TEST(LogLossTest, Values) {
  std::vector<float> p = {0.9f, 0.2f}, y = {1, 0};
  // -(ln 0.9 + ln 0.8) / 2 = (0.105360516 + 0.223143551) / 2 = 0.164252033.
  auto l = LogLoss(p, y);
  ASSERT_TRUE(l.ok());
  EXPECT_NEAR(*l, 0.164252033, 1e-7);
  std::vector<float> half = {0.5f}, one = {1};
  EXPECT_NEAR(*LogLoss(half, one), std::log(2.0), 1e-12);
  // Soft label 0.25 at p 0.5 is still ln 2.
  std::vector<float> soft = {0.25f};
  EXPECT_NEAR(*LogLoss(half, soft), std::log(2.0), 1e-12);
}

TEST(LogLossTest, ClipsZeroAndOne) {
  std::vector<float> p = {0.0f, 1.0f}, y = {1, 0};
  auto l = LogLoss(p, y);
  ASSERT_TRUE(l.ok());
  EXPECT_NEAR(*l, -std::log(1e-7), 1e-6);  // both clipped to eps -> 16.118...
  auto l2 = LogLoss(p, y, 1e-3);
  EXPECT_NEAR(*l2, -std::log(1e-3), 1e-9);
  std::vector<float> right = {0.0f, 1.0f}, yr = {0, 1};
  EXPECT_NEAR(*LogLoss(right, yr), -std::log1p(-1e-7), 1e-12);
}

TEST(LogLossTest, EmptyIsNaNAndErrors) {
  EXPECT_TRUE(std::isnan(*LogLoss({}, {})));
  std::vector<float> p = {0.5f}, y = {2.0f};
  auto bad = LogLoss(p, y);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "logloss: label 2 at index 0 is not in [0, 1]");
  std::vector<float> y0 = {0};
  auto eps = LogLoss(p, y0, 0.0);
  ASSERT_FALSE(eps.ok());
  EXPECT_EQ(eps.status().code(), StatusCode::kInvalidArgument);
}

TEST(MetricAccumulatorTest, StreamingEqualsOneShot) {
  std::mt19937 rng(7);
  std::vector<float> p(1000), y(1000);
  for (int i = 0; i < 1000; ++i) {
    p[i] = static_cast<float>(rng() % 50) / 50.0f;
    y[i] = rng() % 3 == 0 ? 1.0f : 0.0f;
  }
  MetricAccumulator acc;
  EXPECT_EQ(acc.count(), 0);
  EXPECT_TRUE(std::isnan(acc.auc()));
  EXPECT_TRUE(std::isnan(acc.logloss()));
  for (int b = 0; b < 1000; b += 128) {
    const size_t n = std::min(128, 1000 - b);
    ASSERT_TRUE(acc.Add(std::span(p).subspan(b, n), std::span(y).subspan(b, n)).ok());
  }
  EXPECT_EQ(acc.count(), 1000);
  EXPECT_DOUBLE_EQ(acc.auc(), *Auc(p, y));
  EXPECT_NEAR(acc.logloss(), *LogLoss(p, y), 1e-12);
  double ysum = 0;
  for (float v : y) ysum += v;
  EXPECT_DOUBLE_EQ(acc.label_mean(), ysum / 1000);
  // A bad batch adds nothing.
  std::vector<float> bp = {0.5f, 0.5f}, by = {1, 3};
  EXPECT_EQ(acc.Add(bp, by).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(acc.count(), 1000);
  acc.Reset();
  EXPECT_EQ(acc.count(), 0);
}

}  // namespace
}  // namespace ctrain::train
