#include "ctrain/train/ctr_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace ctrain::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// Weighted AUC and average precision over the examples idx (any order).
// w: the effective weight of each example.
void RankMetrics(std::span<const float> probs, std::span<const float> labels, const std::vector<double>& w,
                 std::vector<int64_t>& idx, double* auc, double* ap) {
  // Descending score; -0 and +0 compare equal, ties form one threshold.
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return probs[a] > probs[b]; });
  double pos = 0, neg = 0;
  for (int64_t i : idx) (labels[i] == 1.0f ? pos : neg) += w[i];
  if (!(pos > 0) || !(neg > 0)) {
    *auc = kNaN;
    if (ap != nullptr) *ap = pos > 0 ? 1.0 : kNaN;
    return;
  }
  // Going down the scores: a positive group beats every negative below it
  // (neg - neg_seen - neg_g) and ties half of its own group's negatives.
  double twice_u = 0, tp = 0, fp = 0, sum_ap = 0, prev_recall = 0;
  size_t k = 0;
  while (k < idx.size()) {
    const float s = probs[idx[k]];
    double pos_g = 0, neg_g = 0;
    for (; k < idx.size() && probs[idx[k]] == s; ++k) (labels[idx[k]] == 1.0f ? pos_g : neg_g) += w[idx[k]];
    const double neg_below = neg - fp - neg_g;
    twice_u += pos_g * (2 * neg_below + neg_g);
    tp += pos_g;
    fp += neg_g;
    if (tp + fp > 0) {
      const double recall = tp / pos;
      sum_ap += (recall - prev_recall) * (tp / (tp + fp));
      prev_recall = recall;
    }
  }
  *auc = twice_u / (2.0 * pos * neg);
  if (ap != nullptr) *ap = sum_ap;
}

double Entropy(double c) {
  if (!(c > 0 && c < 1)) return kNaN;
  return -(c * std::log(c) + (1 - c) * std::log1p(-c));
}

}  // namespace

double CorrectDownsampledProbability(double q, double rate) { return q / (q + (1.0 - q) / rate); }

Status ValidateDownsamplingRate(double rate, const char* flag) {
  if (rate > 0 && rate <= 1) return Status::OK();
  return InvalidArgumentError(std::string(flag) + ": the rate at which negatives were kept must be in (0, 1], got " +
                              Num(rate));
}

StatusOr<CtrMetrics> ComputeCtrMetrics(std::span<const float> probs, std::span<const float> labels,
                                       std::span<const float> weights, std::span<const int64_t> groups,
                                       const MetricOptions& options) {
  const size_t n = probs.size();
  if (labels.size() != n)
    return InvalidArgumentError("metrics: " + std::to_string(n) + " predictions but " + std::to_string(labels.size()) +
                                " labels");
  if (!weights.empty() && weights.size() != n)
    return InvalidArgumentError("metrics: " + std::to_string(n) + " predictions but " +
                                std::to_string(weights.size()) + " weights");
  if (!groups.empty() && groups.size() != n)
    return InvalidArgumentError("metrics: " + std::to_string(n) + " predictions but " +
                                std::to_string(groups.size()) + " group keys");
  if (!(options.eps > 0.0 && options.eps < 0.5))
    return InvalidArgumentError("metrics: eps " + Num(options.eps) + " not in (0, 0.5)");
  CTRAIN_RETURN_IF_ERROR(ValidateDownsamplingRate(options.negative_downsampling_rate, "metrics"));
  std::vector<double> w(n);
  const double neg_scale = 1.0 / options.negative_downsampling_rate;
  CtrMetrics m;
  m.examples = static_cast<int64_t>(n);
  double sw = 0, swy = 0, swp = 0, sll = 0;
  for (size_t i = 0; i < n; ++i) {
    const float y = labels[i], p = probs[i];
    if (y != 0.0f && y != 1.0f)
      return InvalidArgumentError("metrics: label " + Num(y) + " at index " + std::to_string(i) + " is not 0 or 1");
    if (!(p >= 0.0f && p <= 1.0f))
      return InvalidArgumentError("metrics: prediction " + Num(p) + " at index " + std::to_string(i) +
                                  " is not in [0, 1]");
    const double wi = weights.empty() ? 1.0 : weights[i];
    if (!(wi >= 0) || !std::isfinite(wi))
      return InvalidArgumentError("metrics: weight " + Num(wi) + " at index " + std::to_string(i) +
                                  " is not a finite value >= 0");
    w[i] = y == 1.0f ? wi : wi * neg_scale;
    const double q = std::clamp(static_cast<double>(p), options.eps, 1.0 - options.eps);
    sw += w[i];
    swy += w[i] * y;
    swp += w[i] * p;
    sll += w[i] * -(y == 1.0f ? std::log(q) : std::log1p(-q));
  }
  m.weight_sum = sw;
  m.label_mean = sw > 0 ? swy / sw : kNaN;
  m.prediction_mean = sw > 0 ? swp / sw : kNaN;
  m.logloss = sw > 0 ? sll / sw : kNaN;
  m.normalized_entropy = m.logloss / Entropy(m.label_mean);
  m.calibration = swy > 0 ? swp / swy : kNaN;
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), int64_t{0});
  RankMetrics(probs, labels, w, idx, &m.auc, &m.pr_auc);
  m.gauc = kNaN;
  if (!groups.empty()) {
    std::unordered_map<int64_t, std::vector<int64_t>> by_group;
    for (size_t i = 0; i < n; ++i) by_group[groups[i]].push_back(static_cast<int64_t>(i));
    std::vector<int64_t> keys;  // sum in key order: the result does not depend on hash order
    keys.reserve(by_group.size());
    for (const auto& [g, v] : by_group) keys.push_back(g);
    std::sort(keys.begin(), keys.end());
    double num = 0, den = 0;
    for (int64_t g : keys) {
      std::vector<int64_t>& members = by_group[g];
      double auc_g = 0;
      RankMetrics(probs, labels, w, members, &auc_g, nullptr);
      if (std::isnan(auc_g)) {
        ++m.gauc_skipped_groups;
        continue;
      }
      double wg = 0;
      for (int64_t i : members) wg += w[i];
      num += wg * auc_g;
      den += wg;
      ++m.gauc_groups;
    }
    if (den > 0) m.gauc = num / den;
  }
  return m;
}

}  // namespace ctrain::train
