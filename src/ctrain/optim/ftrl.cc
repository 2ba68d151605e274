#include "ctrain/optim/ftrl.h"

#include <cmath>

#include "ctrain/optim/validate.h"

namespace ctrain::optim {

StatusOr<std::unique_ptr<Optimizer>> FtrlOptimizer::Create(const OptimizerConfig& config) {
  using internal::CheckRange;
  using internal::kInf;
  CTRAIN_RETURN_IF_ERROR(internal::CheckLearningRate(config));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "initial_accumulator_value", config.initial_accumulator_value,
                                    0.0f, kInf, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "l1", config.l1, 0.0f, kInf, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "l2", config.l2, 0.0f, kInf, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "beta", config.beta, 0.0f, kInf, true));
  CTRAIN_RETURN_IF_ERROR(CheckRange(config, "lr_power", config.lr_power, -kInf, 0.0f, false));
  return std::unique_ptr<Optimizer>(new FtrlOptimizer(config));
}

void FtrlOptimizer::Kernel(float* __restrict p, const float* __restrict g, float* __restrict n_acc,
                           float* __restrict z, int64_t n) const {
  const float lr = config().learning_rate;
  const float inv_lr = 1.0f / lr;
  const float l1 = config().l1;
  // 2 * l2 + beta / lr: the constant part of the denominator (tf.keras folds beta into l2).
  const float l2_term = 2.0f * config().l2 + config().beta / lr;
  if (config().lr_power == -0.5f) {
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float old_n = n_acc[i];
      const float new_n = old_n + gi * gi;
      const float sqrt_new = std::sqrt(new_n);
      const float zi = z[i] + gi - (sqrt_new - std::sqrt(old_n)) * inv_lr * p[i];
      z[i] = zi;
      n_acc[i] = new_n;
      const float x = (zi > 0.0f ? l1 : -l1) - zi;
      const float y = sqrt_new * inv_lr + l2_term;
      p[i] = std::fabs(zi) > l1 ? x / y : 0.0f;
    }
  } else {
    const float e = -config().lr_power;
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float old_n = n_acc[i];
      const float new_n = old_n + gi * gi;
      const float pow_new = std::pow(new_n, e);
      const float zi = z[i] + gi - (pow_new - std::pow(old_n, e)) * inv_lr * p[i];
      z[i] = zi;
      n_acc[i] = new_n;
      const float x = (zi > 0.0f ? l1 : -l1) - zi;
      const float y = pow_new * inv_lr + l2_term;
      p[i] = std::fabs(zi) > l1 ? x / y : 0.0f;
    }
  }
}

void FtrlOptimizer::ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                               int64_t step) const {
  float* acc = slots[0];
  float* z = slots[1];
  ForEachChunk(n, [&](int64_t b, int64_t e) { Kernel(param + b, grad + b, acc + b, z + b, e - b); });
}

void FtrlOptimizer::ApplySparse(float* table, float* const* slot_tables, int32_t dim,
                                std::span<const int64_t> ids, const float* grad, int64_t step) const {
  float* acc = slot_tables[0];
  float* z = slot_tables[1];
  ForEachRow(static_cast<int64_t>(ids.size()), dim, [&](int64_t i) {
    const int64_t off = ids[i] * dim;
    Kernel(table + off, grad + i * dim, acc + off, z + off, dim);
  });
}

}  // namespace ctrain::optim
