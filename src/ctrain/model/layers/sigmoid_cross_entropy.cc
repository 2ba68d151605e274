#include "ctrain/model/layers/sigmoid_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace ctrain::model {

float Sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

double SigmoidCrossEntropy(int64_t B, const float* logits, const float* labels, float* d_logits) {
  double sum = 0.0;
  const float inv_b = 1.0f / static_cast<float>(B);
  for (int64_t b = 0; b < B; ++b) {
    const double x = logits[b], z = labels[b];
    sum += std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::fabs(x)));
    if (d_logits != nullptr) d_logits[b] = (Sigmoid(logits[b]) - labels[b]) * inv_b;
  }
  return sum / static_cast<double>(B);
}

}  // namespace ctrain::model
