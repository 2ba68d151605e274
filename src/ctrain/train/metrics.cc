#include "ctrain/train/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace ctrain::train {
namespace {

constexpr double kMetricNaN = std::numeric_limits<double>::quiet_NaN();

std::string MetricNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

Status CheckSizes(const char* what, size_t np, size_t nl) {
  if (np == nl) return Status::OK();
  return InvalidArgumentError(std::string(what) + ": " + std::to_string(np) + " predictions but " +
                              std::to_string(nl) + " labels");
}

Status CheckAucInputs(std::span<const float> probs, std::span<const float> labels) {
  CTRAIN_RETURN_IF_ERROR(CheckSizes("auc", probs.size(), labels.size()));
  for (size_t i = 0; i < probs.size(); ++i) {
    if (labels[i] != 0.0f && labels[i] != 1.0f)
      return InvalidArgumentError("auc: label " + MetricNum(labels[i]) + " at index " + std::to_string(i) +
                                  " is not 0 or 1");
    if (std::isnan(probs[i]))
      return InvalidArgumentError("auc: prediction at index " + std::to_string(i) + " is NaN");
  }
  return Status::OK();
}

Status CheckLogLossInputs(std::span<const float> probs, std::span<const float> labels, double eps) {
  CTRAIN_RETURN_IF_ERROR(CheckSizes("logloss", probs.size(), labels.size()));
  if (!(eps > 0.0 && eps < 0.5)) return InvalidArgumentError("logloss: eps " + MetricNum(eps) + " not in (0, 0.5)");
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(labels[i] >= 0.0f && labels[i] <= 1.0f))
      return InvalidArgumentError("logloss: label " + MetricNum(labels[i]) + " at index " + std::to_string(i) +
                                  " is not in [0, 1]");
    if (std::isnan(probs[i]))
      return InvalidArgumentError("logloss: prediction at index " + std::to_string(i) + " is NaN");
  }
  return Status::OK();
}

// Maps a float to a uint32 whose unsigned order is the float order (-0 == +0).
inline uint32_t OrderedBits(float f) {
  if (f == 0.0f) f = 0.0f;  // -0 -> +0
  const uint32_t u = std::bit_cast<uint32_t>(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// REQUIRES: inputs validated.
double AucUnchecked(std::span<const float> probs, std::span<const float> labels) {
  const size_t n = probs.size();
  // Key: score order in the high 32 bits, label in bit 0; sorting the keys
  // groups equal scores, negatives first within a group (irrelevant for ties).
  std::vector<uint64_t> keys(n);
  int64_t positives = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t y = labels[i] == 1.0f ? 1 : 0;
    positives += static_cast<int64_t>(y);
    keys[i] = (static_cast<uint64_t>(OrderedBits(probs[i])) << 32) | y;
  }
  const int64_t negatives = static_cast<int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return kMetricNaN;
  std::sort(keys.begin(), keys.end());
  // 2 * U = sum over tie groups of pos_g * (2 * neg_below + neg_g), exact in 128 bits.
  unsigned __int128 twice_u = 0;
  uint64_t neg_below = 0;
  size_t i = 0;
  while (i < n) {
    const uint64_t score = keys[i] >> 32;
    uint64_t pos_g = 0, neg_g = 0;
    for (; i < n && (keys[i] >> 32) == score; ++i) {
      if (keys[i] & 1) ++pos_g; else ++neg_g;
    }
    twice_u += static_cast<unsigned __int128>(pos_g) * (2 * neg_below + neg_g);
    neg_below += neg_g;
  }
  return static_cast<double>(twice_u) / (2.0 * static_cast<double>(positives) * static_cast<double>(negatives));
}

inline double ExampleLogLoss(float p, float y, double eps) {
  const double q = std::clamp(static_cast<double>(p), eps, 1.0 - eps);
  const double yd = y;
  return -(yd * std::log(q) + (1.0 - yd) * std::log1p(-q));
}

}  // namespace

StatusOr<double> Auc(std::span<const float> probs, std::span<const float> labels) {
  CTRAIN_RETURN_IF_ERROR(CheckAucInputs(probs, labels));
  return AucUnchecked(probs, labels);
}

StatusOr<double> LogLoss(std::span<const float> probs, std::span<const float> labels, double eps) {
  CTRAIN_RETURN_IF_ERROR(CheckLogLossInputs(probs, labels, eps));
  if (probs.empty()) return kMetricNaN;
  double sum = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) sum += ExampleLogLoss(probs[i], labels[i], eps);
  return sum / static_cast<double>(probs.size());
}

Status MetricAccumulator::Add(std::span<const float> probs, std::span<const float> labels) {
  CTRAIN_RETURN_IF_ERROR(CheckAucInputs(probs, labels));
  CTRAIN_RETURN_IF_ERROR(CheckLogLossInputs(probs, labels, eps_));
  for (size_t i = 0; i < probs.size(); ++i) {
    logloss_sum_ += ExampleLogLoss(probs[i], labels[i], eps_);
    label_sum_ += labels[i];
    prob_sum_ += probs[i];
  }
  probs_.insert(probs_.end(), probs.begin(), probs.end());
  labels_.insert(labels_.end(), labels.begin(), labels.end());
  return Status::OK();
}

double MetricAccumulator::auc() const { return AucUnchecked(probs_, labels_); }

double MetricAccumulator::logloss() const {
  return probs_.empty() ? kMetricNaN : logloss_sum_ / static_cast<double>(probs_.size());
}

double MetricAccumulator::label_mean() const {
  return probs_.empty() ? kMetricNaN : label_sum_ / static_cast<double>(probs_.size());
}

double MetricAccumulator::prediction_mean() const {
  return probs_.empty() ? kMetricNaN : prob_sum_ / static_cast<double>(probs_.size());
}

void MetricAccumulator::Reset() {
  probs_.clear();
  labels_.clear();
  logloss_sum_ = label_sum_ = prob_sum_ = 0.0;
}

}  // namespace ctrain::train
