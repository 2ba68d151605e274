// CTR evaluation metrics beyond AUC and logloss (train/metrics.h), with sample
// weights, per-group AUC and the correction for negative downsampling
// (docs/training.md#metrics).
//
// Inputs, one per example in matching order: predicted probabilities p in
// [0, 1], labels y in {0, 1}, optional weights w >= 0 (finite; empty = every
// example weighs 1) and optional group keys g (empty = no GAUC).
//
//   auc                 ROC AUC with weights: sum over positive/negative pairs
//                       of w_i w_j [p_i > p_j] (+1/2 on ties) / (W+ W-);
//                       sklearn.metrics.roc_auc_score(y, p, sample_weight=w).
//   logloss             sum w * -(y log p + (1-y) log(1-p)) / sum w, p clipped
//                       to [eps, 1-eps]; sklearn.metrics.log_loss.
//   normalized_entropy  logloss / H(ctr), H(c) = -(c log c + (1-c) log(1-c)),
//                       ctr the weighted label mean: the logloss relative to
//                       always predicting the observed CTR (He et al. 2014,
//                       "Practical Lessons from Predicting Clicks on Ads at
//                       Facebook"). < 1 is better than the CTR baseline.
//   calibration         sum w p / sum w y (mean prediction / observed CTR;
//                       1 = calibrated).
//   pr_auc              average precision, sum_k (R_k - R_{k-1}) P_k over the
//                       distinct scores in descending order (ties form one
//                       threshold); sklearn.metrics.average_precision_score.
//   gauc                group AUC (Zhou et al. 2018, DIN): the AUC of each group
//                       weighted by the group's weight sum, over the groups
//                       that hold both classes; groups with one class are
//                       skipped and counted (gauc_skipped_groups).
// Every value that is undefined (no example, one class only, ctr 0 or 1, no
// group with both classes) is NaN.
//
// Negative downsampling (He et al. 2014 section 6.2): a model trained on data
// whose negatives were kept with rate r predicts q; the probability on the
// original distribution is p = q / (q + (1 - q) / r)
// (CorrectDownsampledProbability). MetricOptions::negative_downsampling_rate
// says that the EVALUATED data's negatives were kept at rate r: each negative
// then counts 1/r times (its weight is divided by r), so the metrics describe
// the original distribution.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "ctrain/base/status.h"

namespace ctrain::train {

struct MetricOptions {
  double eps = 1e-7;  // logloss clipping, in (0, 0.5)
  // Rate in (0, 1] at which the evaluated data's negatives were kept; 1 = none.
  double negative_downsampling_rate = 1.0;
};

struct CtrMetrics {
  double auc = 0, logloss = 0, normalized_entropy = 0, calibration = 0, pr_auc = 0, gauc = 0;
  int64_t examples = 0;
  double weight_sum = 0;        // after the downsampling weight
  double label_mean = 0;        // weighted CTR
  double prediction_mean = 0;   // weighted
  int64_t gauc_groups = 0;          // groups that entered GAUC
  int64_t gauc_skipped_groups = 0;  // groups with one class only
};

// Errors: InvalidArgument naming the index and the value for a label not 0 or
// 1, a NaN or out-of-[0, 1] probability, a negative or non-finite weight;
// InvalidArgument for mismatched sizes (weights / groups may be empty), eps
// outside (0, 0.5) or a rate outside (0, 1].
StatusOr<CtrMetrics> ComputeCtrMetrics(std::span<const float> probs, std::span<const float> labels,
                                       std::span<const float> weights, std::span<const int64_t> groups,
                                       const MetricOptions& options = {});

// q / (q + (1 - q) / rate): the probability on the original data of a model
// trained with negatives kept at `rate`. REQUIRES: q in [0, 1], rate in (0, 1].
double CorrectDownsampledProbability(double q, double rate);

// InvalidArgument "<flag>: ... " unless rate is in (0, 1].
Status ValidateDownsamplingRate(double rate, const char* flag = "--negative-downsampling");

}  // namespace ctrain::train
