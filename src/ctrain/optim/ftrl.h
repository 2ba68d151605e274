// FTRL-Proximal (McMahan et al. 2013, "Ad Click Prediction: a View from the
// Trenches", Algorithm 1), with the semantics of tf.keras.optimizers.Ftrl
// (TF kernel ApplyFtrl; `beta` folded into l2 as l2 + beta / (2 lr)):
//   n_new  = n + g^2
//   sigma  = (n_new^(-lr_power) - n^(-lr_power)) / lr
//   z     += g - sigma * p
//   p      = |z| <= l1 ? 0 : (sign(z) * l1 - z) / (n_new^(-lr_power) / lr + 2 * l2 + beta / lr)
//   n      = n_new
// With lr_power = -0.5 (fast path, sqrt) this is the paper's update with
// alpha = lr, lambda1 = l1, lambda2 = 2 * l2 and the paper's beta.
// Slots: 0 "accumulator" (n) starts at initial_accumulator_value (TF default
// 0.1); 1 "linear" (z) starts at 0. Note the weight p is an output of the
// state (z, n), so FTRL overwrites whatever p held once a coordinate is
// updated: initialise embeddings to 0 for the paper's behaviour.
#pragma once

#include <memory>

#include "ctrain/optim/optimizer.h"

namespace ctrain::optim {

class FtrlOptimizer final : public Optimizer {
 public:
  // Errors: InvalidArgument for learning_rate <= 0, initial_accumulator_value < 0,
  // l1 < 0, l2 < 0, beta < 0, lr_power > 0.
  static StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config);

  std::string_view name() const override { return "ftrl"; }
  int num_slots() const override { return 2; }
  std::string_view SlotName(int k) const override { return k == 0 ? "accumulator" : "linear"; }
  float SlotInit(int k) const override { return k == 0 ? config().initial_accumulator_value : 0.0f; }
  void ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                  int64_t step) const override;
  void ApplySparse(float* table, float* const* slot_tables, int32_t dim, std::span<const int64_t> ids,
                   const float* grad, int64_t step) const override;

 private:
  explicit FtrlOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  void Kernel(float* __restrict p, const float* __restrict g, float* __restrict n_acc,
              float* __restrict z, int64_t n) const;
};

}  // namespace ctrain::optim
