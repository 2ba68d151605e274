// Adam (Kingma & Ba 2015), in the form of tf.compat.v1.train.AdamOptimizer
// (epsilon is TF's "epsilon hat", added after the bias correction of v):
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)        (t = step, 1-based; computed in double)
//   p -= lr_t * m / (sqrt(v) + epsilon)
// Slots: 0 "m", 1 "v", both start at 0.
//
// Sparse updates are lazy (tf.contrib.opt.LazyAdamOptimizer, torch SparseAdam):
// only the given rows' m and v are updated; moments of rows absent from a batch
// are not decayed, and the bias correction uses the global step t, not a
// per-row count. When every row is given at every step this equals dense Adam.
#pragma once

#include <memory>

#include "ctrain/optim/optimizer.h"

namespace ctrain::optim {

class AdamOptimizer final : public Optimizer {
 public:
  // Errors: InvalidArgument for learning_rate <= 0, beta1/beta2 not in [0, 1), epsilon < 0.
  static StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config);

  std::string_view name() const override { return "adam"; }
  int num_slots() const override { return 2; }
  std::string_view SlotName(int k) const override { return k == 0 ? "m" : "v"; }
  float SlotInit(int k) const override { return 0.0f; }
  void ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                  int64_t step) const override;
  void ApplySparse(float* table, float* const* slot_tables, int32_t dim, std::span<const int64_t> ids,
                   const float* grad, int64_t step) const override;

  // lr * sqrt(1 - beta2^step) / (1 - beta1^step), in double then rounded to float.
  float StepSize(int64_t step) const;

 private:
  explicit AdamOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  void Kernel(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
              int64_t n, float lr_t) const;
};

}  // namespace ctrain::optim
