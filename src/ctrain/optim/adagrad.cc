#include "ctrain/optim/adagrad.h"

#include <cmath>

#include "ctrain/optim/validate.h"

namespace ctrain::optim {

StatusOr<std::unique_ptr<Optimizer>> AdagradOptimizer::Create(const OptimizerConfig& config) {
  using internal::CheckRange;
  using internal::kInf;
  CTRAIN_RETURN_IF_ERROR(internal::CheckLearningRate(config));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "initial_accumulator_value", config.initial_accumulator_value,
                                    0.0f, kInf, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "epsilon", config.epsilon, 0.0f, kInf, true));
  if (config.initial_accumulator_value == 0.0f && config.epsilon == 0.0f) {
    return InvalidArgumentError(
        "optimizer adagrad: initial_accumulator_value and epsilon are both 0 (a zero gradient would divide 0 by 0)");
  }
  return std::unique_ptr<Optimizer>(new AdagradOptimizer(config));
}

void AdagradOptimizer::Kernel(float* __restrict p, const float* __restrict g, float* __restrict acc,
                              int64_t n) const {
  const float lr = config().learning_rate;
  const float eps = config().epsilon;
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float ai = acc[i] + gi * gi;
    acc[i] = ai;
    p[i] -= lr * gi / (std::sqrt(ai) + eps);
  }
}

void AdagradOptimizer::ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                                  int64_t step) const {
  float* acc = slots[0];
  ForEachChunk(n, [&](int64_t b, int64_t e) { Kernel(param + b, grad + b, acc + b, e - b); });
}

void AdagradOptimizer::ApplySparse(float* table, float* const* slot_tables, int32_t dim,
                                   std::span<const int64_t> ids, const float* grad, int64_t step) const {
  float* acc = slot_tables[0];
  ForEachRow(static_cast<int64_t>(ids.size()), dim, [&](int64_t i) {
    const int64_t off = ids[i] * dim;
    Kernel(table + off, grad + i * dim, acc + off, dim);
  });
}

}  // namespace ctrain::optim
