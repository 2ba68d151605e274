#include "ctrain/optim/adam.h"

#include <cmath>

#include "ctrain/optim/validate.h"

namespace ctrain::optim {

StatusOr<std::unique_ptr<Optimizer>> AdamOptimizer::Create(const OptimizerConfig& config) {
  using internal::CheckRange;
  CTRAIN_RETURN_IF_ERROR(internal::CheckLearningRate(config));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "beta1", config.beta1, 0.0f, 1.0f, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "beta2", config.beta2, 0.0f, 1.0f, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "epsilon", config.epsilon, 0.0f, internal::kInf, true));
  return std::unique_ptr<Optimizer>(new AdamOptimizer(config));
}

float AdamOptimizer::StepSize(int64_t step) const {
  const double t = static_cast<double>(step);
  const double b1 = config().beta1, b2 = config().beta2;
  return static_cast<float>(config().learning_rate * std::sqrt(1.0 - std::pow(b2, t)) /
                            (1.0 - std::pow(b1, t)));
}

void AdamOptimizer::Kernel(float* __restrict p, const float* __restrict g, float* __restrict m,
                           float* __restrict v, int64_t n, float lr_t) const {
  const float b1 = config().beta1, b2 = config().beta2, eps = config().epsilon;
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = b1 * m[i] + c1 * gi;
    const float vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr_t * mi / (std::sqrt(vi) + eps);
  }
}

void AdamOptimizer::ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                               int64_t step) const {
  const float lr_t = StepSize(step);
  float* m = slots[0];
  float* v = slots[1];
  ForEachChunk(n, [&](int64_t b, int64_t e) { Kernel(param + b, grad + b, m + b, v + b, e - b, lr_t); });
}

void AdamOptimizer::ApplySparse(float* table, float* const* slot_tables, int32_t dim,
                                std::span<const int64_t> ids, const float* grad, int64_t step) const {
  const float lr_t = StepSize(step);
  float* m = slot_tables[0];
  float* v = slot_tables[1];
  ForEachRow(static_cast<int64_t>(ids.size()), dim, [&](int64_t i) {
    const int64_t off = ids[i] * dim;
    Kernel(table + off, grad + i * dim, m + off, v + off, dim, lr_t);
  });
}

}  // namespace ctrain::optim
