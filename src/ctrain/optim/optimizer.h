// Optimizer: the update rule applied to a parameter and its gradient, dense or
// for selected rows of a [rows, dim] table (embeddings).
//
// State ("slots") is owned by the caller: a dense parameter of n floats has
// num_slots() arrays of n floats; a sparse table [rows, dim] has num_slots()
// tables [rows, dim]. Slots must be filled with SlotInit(k) before the first
// update (see docs/optimizers.md for every rule, its equations and its slots).
//
// Units: learning_rate is per unit of gradient (the loss is whatever the model
// differentiates, usually the batch mean). `step` is the 1-based global step
// (number of updates applied so far, including this one); only Adam reads it.
//
// Thread safety: an Optimizer is immutable after construction; Apply* may run
// concurrently on disjoint parameters/rows. Apply* on the same rows from two
// threads races (the parameter table decides whether that is allowed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::optim {

struct OptimizerConfig {
  // One of: sgd | momentum | adagrad | adam | ftrl.
  std::string name = "adam";
  // Step size; must be finite and > 0.
  float learning_rate = 0.001f;
  // Adam: moment decay rates in [0, 1); epsilon >= 0 is added to sqrt(v) (TF "epsilon hat").
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  // momentum: velocity decay in [0, 1); nesterov selects the look-ahead form.
  float momentum = 0.9f;
  bool nesterov = false;
  // adagrad and ftrl: initial value (>= 0) of the squared-gradient accumulator.
  // Adagrad also adds `epsilon` to sqrt(accumulator).
  float initial_accumulator_value = 0.1f;
  // ftrl: l1, l2 >= 0 (TF's l1/l2_regularization_strength); lr_power <= 0
  // (-0.5 is the paper's per-coordinate rate and has a fast path); beta >= 0
  // (the paper's beta, folded into l2 as in tf.keras Ftrl).
  float l1 = 0.0f, l2 = 0.0f, lr_power = -0.5f, beta = 0.0f;
  // Sparse updates run rows in parallel (OpenMP) when ids.size() * dim is at
  // least this many floats; smaller updates stay on the calling thread.
  // Dense updates are parallelised above the same size. Use
  // std::numeric_limits<int64_t>::max() to never spawn threads.
  int64_t parallel_min_floats = int64_t{1} << 16;
};

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The config name ("sgd", "momentum", "adagrad", "adam", "ftrl").
  virtual std::string_view name() const = 0;
  // State floats per parameter float (sgd 0, momentum 1, adagrad 1, adam 2, ftrl 2).
  virtual int num_slots() const = 0;
  // Name of slot k in [0, num_slots()), used in checkpoints ("m", "v", "accumulator", ...).
  virtual std::string_view SlotName(int k) const = 0;
  // Value every float of slot k must hold before the first update.
  virtual float SlotInit(int k) const = 0;

  // Dense: updates param[0..n) in place from grad[0..n).
  // slots: num_slots() pointers, each to n floats (ignored when num_slots() == 0).
  // REQUIRES: step >= 1; param, grad and slots do not overlap.
  virtual void ApplyDense(float* param, const float* grad, float* const* slots, int64_t n,
                          int64_t step) const = 0;

  // Sparse: updates rows ids[i] of table [rows, dim] (row-major) with
  // grad[i*dim .. (i+1)*dim). slot_tables: num_slots() pointers, each to a
  // [rows, dim] table laid out like `table`. Rows not in `ids` and their slots
  // are not read or written (for Adam: "lazy", see docs/optimizers.md).
  // REQUIRES: ids unique and in [0, rows) (the caller validates; see
  // train::LocalParameterTable), dim >= 1, step >= 1.
  // Deterministic: each row's update depends only on its own data, so the
  // result does not depend on the thread count.
  virtual void ApplySparse(float* table, float* const* slot_tables, int32_t dim,
                           std::span<const int64_t> ids, const float* grad, int64_t step) const = 0;

  const OptimizerConfig& config() const { return config_; }
  // A learning-rate schedule (e.g. warmup) changes the step size between
  // updates. REQUIRES: lr finite and > 0; not called during an update.
  void set_learning_rate(float lr) { config_.learning_rate = lr; }

 protected:
  explicit Optimizer(const OptimizerConfig& config) : config_(config) {}

  // Runs fn(i) for i in [0, n_rows), in parallel over OpenMP threads when
  // n_rows * dim >= config().parallel_min_floats.
  template <typename Fn>
  void ForEachRow(int64_t n_rows, int32_t dim, Fn&& fn) const;
  // Runs fn(begin, end) over [0, n) in chunks, in parallel when n is large.
  template <typename Fn>
  void ForEachChunk(int64_t n, Fn&& fn) const;

 private:
  OptimizerConfig config_;
};

// Builds the optimizer named by config.name.
// Errors: InvalidArgument for an unknown name or an out-of-range value (the
// message names the field and the value, e.g. "optimizer adam: beta1 1.5 not in [0, 1)").
StatusOr<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerConfig& config);

// ---- implementation of the templates ----

template <typename Fn>
void Optimizer::ForEachRow(int64_t n_rows, int32_t dim, Fn&& fn) const {
  if (n_rows * static_cast<int64_t>(dim) >= config_.parallel_min_floats && n_rows > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_rows; ++i) fn(i);
  } else {
    for (int64_t i = 0; i < n_rows; ++i) fn(i);
  }
}

template <typename Fn>
void Optimizer::ForEachChunk(int64_t n, Fn&& fn) const {
  constexpr int64_t kChunk = 4096;  // multiple of every SIMD width
  if (n >= config_.parallel_min_floats && n > kChunk) {
    const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) fn(c * kChunk, std::min(n, (c + 1) * kChunk));
  } else {
    fn(int64_t{0}, n);
  }
}

}  // namespace ctrain::optim
