// Adagrad (Duchi, Hazan & Singer 2011), in tf.keras.optimizers.Adagrad form:
//   acc += g * g;   p -= lr * g / (sqrt(acc) + epsilon)
// Slot 0 "accumulator" starts at initial_accumulator_value (default 0.1, as
// TF). Sparse updates touch only the given rows and their accumulators.
#pragma once

#include <memory>

#include "ctrain/optim/optimizer.h"

namespace ctrain::optim {

class AdagradOptimizer final : public Optimizer {
 public:
  // Errors: InvalidArgument for learning_rate <= 0, initial_accumulator_value < 0,
  // epsilon < 0, or initial_accumulator_value == epsilon == 0 (division by zero).
  static StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config);

  std::string_view name() const override { return "adagrad"; }
  int num_slots() const override { return 1; }
  std::string_view SlotName(int k) const override { return "accumulator"; }
  float SlotInit(int k) const override { return config().initial_accumulator_value; }
  void ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                  int64_t step) const override;
  void ApplySparse(float* table, float* const* slot_tables, int32_t dim, std::span<const int64_t> ids,
                   const float* grad, int64_t step) const override;

 private:
  explicit AdagradOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  void Kernel(float* __restrict p, const float* __restrict g, float* __restrict acc, int64_t n) const;
};

}  // namespace ctrain::optim
