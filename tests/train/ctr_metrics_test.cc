// train/ctr_metrics.h against scikit-learn 1.9.1 on the same predictions:
// the reference values below were computed by roc_auc_score, log_loss,
// average_precision_score (sample_weight=w) in float64 from these float32
// inputs; NE = log_loss(y, p) / log_loss(y, ctr), GAUC = the weighted mean of
// roc_auc_score per group. Downsampled: negatives' weights divided by the
// rate. tests/train/ctr_metrics_reference.py prints the inputs and the values.
#include "ctrain/train/ctr_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ctrain::train {
namespace {

const std::vector<float> kP = {
    0.8199999928474426f, 0.3700000047683716f, 0.6899999976158142f, 0.8500000238418579f, 0.6399999856948853f,
    0.550000011920929f, 0.75f, 0.7099999785423279f, 0.4699999988079071f, 0.5699999928474426f, 0.7400000095367432f,
    0.07999999821186066f, 0.6399999856948853f, 0.7300000190734863f, 0.4000000059604645f, 0.5099999904632568f,
    0.23999999463558197f, 0.6399999856948853f, 0.949999988079071f, 0.3100000023841858f, 0.46000000834465027f,
    0.8799999952316284f, 0.550000011920929f, 0.41999998688697815f, 0.6600000262260437f, 0.05000000074505806f,
    0.17000000178813934f, 0.8600000143051147f, 0.17000000178813934f, 0.05000000074505806f, 0.9100000262260437f,
    0.7400000095367432f, 0.9599999785423279f, 0.75f, 0.9100000262260437f, 0.3499999940395355f, 0.7400000095367432f,
    0.18000000715255737f, 0.8100000023841858f, 0.7200000286102295f
};
const std::vector<float> kY = {
    1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0,
    1, 1
};
const std::vector<float> kW = {
    1.0f, 0.5f, 1.0f, 0.5f, 2.0f, 1.0f, 0.5f, 1.0f, 0.5f, 1.0f, 0.5f, 2.0f, 0.5f, 3.0f, 3.0f, 3.0f, 3.0f, 1.0f, 0.5f,
    1.0f, 0.5f, 0.5f, 1.0f, 1.0f, 0.5f, 3.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.5f, 0.5f, 0.5f, 2.0f, 0.5f, 2.0f, 0.5f, 0.5f,
    2.0f, 0.5f
};
const std::vector<int64_t> kG = {
    2, 0, 2, 0, 5, 1, 2, 0, 2, 5, 1, 3, 0, 0, 1, 3, 1, 2, 4, 1, 4, 2, 2, 3, 0, 0, 5, 5, 0, 2, 4, 0, 2, 4, 2, 5, 3, 0,
    0, 4
};

constexpr double kTol = 1e-12;

CtrMetrics Compute(std::span<const float> w, double rate = 1.0, std::span<const int64_t> g = kG) {
  MetricOptions o;
  o.negative_downsampling_rate = rate;
  StatusOr<CtrMetrics> m = ComputeCtrMetrics(kP, kY, w, g, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : CtrMetrics();
}

TEST(CtrMetrics, UnweightedEqualsSklearn) {
  const CtrMetrics m = Compute({});
  EXPECT_NEAR(m.auc, 0.6412499999999999, kTol);
  EXPECT_NEAR(m.logloss, 0.7282752324578697, kTol);
  EXPECT_NEAR(m.normalized_entropy, 1.0506790662692258, kTol);
  EXPECT_NEAR(m.calibration, 1.1500000048428773, kTol);
  EXPECT_NEAR(m.pr_auc, 0.6087583623300942, kTol);
  EXPECT_NEAR(m.gauc, 0.5254166666666666, kTol);
  EXPECT_EQ(m.gauc_groups, 6);
  EXPECT_EQ(m.gauc_skipped_groups, 0);
  EXPECT_EQ(m.examples, 40);
  EXPECT_DOUBLE_EQ(m.weight_sum, 40.0);
}

TEST(CtrMetrics, SampleWeightsEqualSklearn) {
  const CtrMetrics m = Compute(kW);
  EXPECT_NEAR(m.auc, 0.7443977591036415, kTol);
  EXPECT_NEAR(m.logloss, 0.6104265219608721, kTol);
  EXPECT_NEAR(m.normalized_entropy, 0.8866586080313288, kTol);
  EXPECT_NEAR(m.calibration, 1.120238096941085, kTol);
  EXPECT_NEAR(m.pr_auc, 0.6588662819341911, kTol);
  EXPECT_NEAR(m.gauc, 0.6671130542098284, kTol);
}

TEST(CtrMetrics, NegativeDownsamplingWeightsEachNegativeByTheInverseRate) {
  const CtrMetrics m = Compute(kW, 0.25);
  EXPECT_NEAR(m.auc, 0.7443977591036415, kTol);  // a uniform weight on one class leaves AUC unchanged
  EXPECT_NEAR(m.logloss, 0.6510593882625556, kTol);
  EXPECT_NEAR(m.normalized_entropy, 1.4244987986959514, kTol);
  EXPECT_NEAR(m.calibration, 2.590238087234043, kTol);
  EXPECT_NEAR(m.pr_auc, 0.34323065447829326, kTol);
  EXPECT_NEAR(m.gauc, 0.6663142638752395, kTol);
}

TEST(CtrMetrics, GaucSkipsAndCountsOneClassGroups) {
  std::vector<int64_t> g = kG;
  // Move every example of group 3 except its positives to group 9: group 3
  // keeps one class only, group 9 (negatives only) too.
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] == 3 && kY[i] == 0) g[i] = 9;
  const CtrMetrics m = Compute({}, 1.0, g);
  EXPECT_EQ(m.gauc_groups, 5);
  EXPECT_EQ(m.gauc_skipped_groups, 2);
  // The five remaining groups' weighted mean, by the pairwise definition.
  double num = 0, den = 0;
  for (int64_t k : {0, 1, 2, 4, 5}) {
    double wins = 0, pairs = 0, n = 0;
    for (size_t i = 0; i < kP.size(); ++i) {
      if (g[i] != k) continue;
      n += 1;
      if (kY[i] != 1) continue;
      for (size_t j = 0; j < kP.size(); ++j)
        if (g[j] == k && kY[j] == 0) pairs += 1, wins += kP[i] > kP[j] ? 1 : kP[i] == kP[j] ? 0.5 : 0;
    }
    num += n * wins / pairs;
    den += n;
  }
  EXPECT_NEAR(m.gauc, num / den, kTol);
}

TEST(CtrMetrics, UndefinedValuesAreNaN) {
  const std::vector<float> p = {0.2f, 0.7f}, y1 = {1, 1}, y0 = {0, 0};
  StatusOr<CtrMetrics> pos = ComputeCtrMetrics(p, y1, {}, {});
  ASSERT_TRUE(pos.ok());
  EXPECT_TRUE(std::isnan(pos->auc));
  EXPECT_TRUE(std::isnan(pos->normalized_entropy));  // ctr 1
  EXPECT_DOUBLE_EQ(pos->pr_auc, 1.0);                // sklearn: every threshold has precision 1
  EXPECT_TRUE(std::isnan(pos->gauc));                // no groups given
  StatusOr<CtrMetrics> neg = ComputeCtrMetrics(p, y0, {}, {});
  ASSERT_TRUE(neg.ok());
  EXPECT_TRUE(std::isnan(neg->calibration));  // no clicks
  EXPECT_TRUE(std::isnan(neg->pr_auc));
  StatusOr<CtrMetrics> empty = ComputeCtrMetrics({}, {}, {}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(std::isnan(empty->logloss));
}

TEST(CtrMetrics, BadInputsNameTheIndex) {
  const std::vector<float> p = {0.2f, 0.7f}, y = {0, 1};
  const std::vector<float> neg_w = {1, -1}, bad_y = {0, 2}, bad_p = {0.2f, 1.5f};
  EXPECT_EQ(ComputeCtrMetrics(p, y, neg_w, {}).status().message(),
            "metrics: weight -1 at index 1 is not a finite value >= 0");
  EXPECT_EQ(ComputeCtrMetrics(p, bad_y, {}, {}).status().message(), "metrics: label 2 at index 1 is not 0 or 1");
  EXPECT_EQ(ComputeCtrMetrics(bad_p, y, {}, {}).status().message(),
            "metrics: prediction 1.5 at index 1 is not in [0, 1]");
  const std::vector<int64_t> g3 = {1, 2, 3};
  EXPECT_EQ(ComputeCtrMetrics(p, y, {}, g3).status().message(), "metrics: 2 predictions but 3 group keys");
  MetricOptions o;
  o.negative_downsampling_rate = 0;
  EXPECT_EQ(ComputeCtrMetrics(p, y, {}, {}, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateDownsamplingRate(1.5).message(),
            "--negative-downsampling: the rate at which negatives were kept must be in (0, 1], got 1.5");
}

TEST(CtrMetrics, DownsampledProbabilityCorrection) {
  // q / (q + (1 - q) / r): 0.5 at r = 0.25 is 0.5 / 2.5.
  EXPECT_DOUBLE_EQ(CorrectDownsampledProbability(0.5, 0.25), 0.2);
  EXPECT_DOUBLE_EQ(CorrectDownsampledProbability(0.3, 1.0), 0.3);
  EXPECT_DOUBLE_EQ(CorrectDownsampledProbability(0.0, 0.1), 0.0);
  EXPECT_DOUBLE_EQ(CorrectDownsampledProbability(1.0, 0.1), 1.0);
  // A model that learned the downsampled CTR r*c... inverts to the true CTR c:
  // q = c / (c + (1 - c) r) -> c.
  const double c = 0.03, r = 0.1, q = c / (c + (1 - c) * r);
  EXPECT_NEAR(CorrectDownsampledProbability(q, r), c, 1e-15);
}

}  // namespace
}  // namespace ctrain::train
