#include "ctrain/optim/sgd.h"

#include "ctrain/optim/validate.h"

namespace ctrain::optim {

StatusOr<std::unique_ptr<Optimizer>> SgdOptimizer::Create(const OptimizerConfig& config) {
  CTRAIN_RETURN_IF_ERROR(internal::CheckLearningRate(config));
  const bool use_momentum = config.name == "momentum";
  if (use_momentum) {
    CTRAIN_RETURN_IF_ERROR(internal::CheckRange(config, "momentum", config.momentum, 0.0f, 1.0f, true));
  } else if (config.nesterov) {
    return InvalidArgumentError("optimizer sgd: nesterov requires the momentum optimizer");
  }
  return std::unique_ptr<Optimizer>(new SgdOptimizer(config, use_momentum));
}

void SgdOptimizer::Kernel(float* __restrict p, const float* __restrict g, float* __restrict a,
                          int64_t n) const {
  const float lr = config().learning_rate;
  if (!use_momentum_) {
    for (int64_t i = 0; i < n; ++i) p[i] -= lr * g[i];
    return;
  }
  const float mu = config().momentum;
  if (config().nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const float ai = mu * a[i] + g[i];
      a[i] = ai;
      p[i] -= lr * (g[i] + mu * ai);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float ai = mu * a[i] + g[i];
      a[i] = ai;
      p[i] -= lr * ai;
    }
  }
}

void SgdOptimizer::ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                              int64_t step) const {
  float* a = use_momentum_ ? slots[0] : nullptr;
  ForEachChunk(n, [&](int64_t b, int64_t e) {
    Kernel(param + b, grad + b, a ? a + b : nullptr, e - b);
  });
}

void SgdOptimizer::ApplySparse(float* table, float* const* slot_tables, int32_t dim,
                               std::span<const int64_t> ids, const float* grad, int64_t step) const {
  float* a = use_momentum_ ? slot_tables[0] : nullptr;
  ForEachRow(static_cast<int64_t>(ids.size()), dim, [&](int64_t i) {
    const int64_t off = ids[i] * dim;
    Kernel(table + off, grad + i * dim, a ? a + off : nullptr, dim);
  });
}

}  // namespace ctrain::optim
