// Stochastic gradient descent, plain or with (Nesterov) momentum.
//
// Equations (TF tf.compat.v1.train.MomentumOptimizer / torch.optim.SGD with
// dampening 0; Sutskever et al. 2013 for Nesterov), per float:
//   sgd:       p -= lr * g                                   (no slots)
//   momentum:  a = momentum * a + g;   p -= lr * a            (slot 0 "momentum" = a, init 0)
//   nesterov:  a = momentum * a + g;   p -= lr * (g + momentum * a)
// Sparse updates touch only the given rows (a row's velocity decays only when
// the row is updated, like TF's sparse Momentum).
#pragma once

#include <memory>

#include "ctrain/optim/optimizer.h"

namespace ctrain::optim {

class SgdOptimizer final : public Optimizer {
 public:
  // config.name "sgd" (momentum ignored; nesterov must be false)
  // or "momentum" (momentum in [0, 1)).
  // Errors: InvalidArgument for a bad learning_rate/momentum, or nesterov with "sgd".
  static StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config);

  std::string_view name() const override { return use_momentum_ ? "momentum" : "sgd"; }
  int num_slots() const override { return use_momentum_ ? 1 : 0; }
  std::string_view SlotName(int k) const override { return "momentum"; }
  float SlotInit(int k) const override { return 0.0f; }
  void ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                  int64_t step) const override;
  void ApplySparse(float* table, float* const* slot_tables, int32_t dim, std::span<const int64_t> ids,
                   const float* grad, int64_t step) const override;

 private:
  SgdOptimizer(const OptimizerConfig& config, bool use_momentum)
      : Optimizer(config), use_momentum_(use_momentum) {}
  // Updates n contiguous floats.
  void Kernel(float* __restrict p, const float* __restrict g, float* __restrict a, int64_t n) const;

  bool use_momentum_;
};

}  // namespace ctrain::optim
