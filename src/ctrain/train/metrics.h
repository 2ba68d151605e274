// Evaluation metrics for binary click prediction: ROC AUC and log loss.
//
// Inputs are predicted probabilities p in [0, 1] (after the sigmoid) and labels
// y in {0, 1}, one per example, in matching order.
//
// Thread safety: the free functions are pure; a MetricAccumulator is used by
// one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::train {

// Exact ROC AUC: the probability that a random positive scores above a random
// negative, ties counting 1/2 (Mann-Whitney U / (P * N); equivalently the
// rank-sum formula with tied scores given their average rank). O(n log n)
// (one sort), no binning. -0.0 and +0.0 are one score.
// Returns NaN when only one class is present (including n = 0): AUC is
// undefined there, and the caller decides how to report it.
// Errors: InvalidArgument when sizes differ, a label is not exactly 0 or 1, or
// a score is NaN (the message names the index and the value).
StatusOr<double> Auc(std::span<const float> probs, std::span<const float> labels);

// Mean binary cross-entropy -(y log p + (1 - y) log(1 - p)) in nats, with p
// clipped to [eps, 1 - eps] (so p = 0 or 1 gives a finite loss; the default
// 1e-7 is Keras' epsilon). Labels may be soft, in [0, 1]. Accumulated in
// double. Returns NaN for n = 0.
// Errors: InvalidArgument when sizes differ, a label is outside [0, 1] or NaN,
// a probability is NaN, or eps is not in (0, 0.5).
StatusOr<double> LogLoss(std::span<const float> probs, std::span<const float> labels, double eps = 1e-7);

// Streaming accumulation over an evaluation pass. Exact AUC needs every score,
// so Add() stores them (8 bytes per example); logloss is summed as it goes.
class MetricAccumulator {
 public:
  explicit MetricAccumulator(double eps = 1e-7) : eps_(eps) {}
  // Adds one batch. Errors: as Auc/LogLoss; on error nothing is added.
  Status Add(std::span<const float> probs, std::span<const float> labels);
  // AUC over everything added so far (NaN while only one class was seen).
  double auc() const;
  // Mean logloss over everything added so far (NaN when count() == 0).
  double logloss() const;
  // Mean of the labels (the click-through rate) and of the predictions.
  double label_mean() const;
  double prediction_mean() const;
  int64_t count() const { return static_cast<int64_t>(probs_.size()); }
  void Reset();

 private:
  double eps_;
  std::vector<float> probs_, labels_;
  double logloss_sum_ = 0.0, label_sum_ = 0.0, prob_sum_ = 0.0;
};

}  // namespace ctrain::train
