// Reduce the learning rate on a validation plateau: PyTorch's
// torch.optim.lr_scheduler.ReduceLROnPlateau with threshold_mode="abs" (the
// absolute min_delta of Keras's ReduceLROnPlateau), stepped once per
// validation. docs/training.md#reduce-on-plateau.
//
// One step with the evaluated metric m (PyTorch's step(), in this order):
//   1. improved: mode max: m > best + min_delta; mode min: m < best - min_delta
//      (best starts at -inf / +inf, so the first finite value improves; NaN
//      never does). Improved: best = m, bad = 0. Else bad += 1.
//   2. in cooldown (cooldown_counter > 0): cooldown_counter -= 1, bad = 0
//      (evaluations in the cooldown do not count).
//   3. bad > patience: new = max(lr * factor, min_lr); the rate changes only
//      when lr - new > kPlateauEps (1e-8, PyTorch's eps); either way
//      cooldown_counter = cooldown and bad = 0.
// So patience 0 reduces at the first evaluation without improvement, and
// patience P at the (P+1)-th in a row. Keras's `patience` counts one less
// (it reduces when wait >= patience): Keras patience P is PyTorch's P - 1.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::optim {

inline constexpr double kPlateauEps = 1e-8;  // PyTorch's eps: smaller reductions are ignored

enum class PlateauMode { kMin, kMax };

struct PlateauConfig {
  PlateauMode mode = PlateauMode::kMin;
  double factor = 0.1;      // new rate = rate * factor; in (0, 1)
  int32_t patience = 10;    // evaluations without improvement tolerated (>= 0)
  int32_t cooldown = 0;     // evaluations after a reduction that do not count (>= 0)
  double min_lr = 0;        // the rate never goes below this (>= 0)
  double min_delta = 1e-4;  // the least absolute change that counts as an improvement (>= 0)
};

// The scheduler's state: what a checkpoint must hold for a resumed run to
// continue identically.
struct PlateauState {
  double lr = 0;                                             // the current rate
  double best = std::numeric_limits<double>::infinity();    // +inf (min) / -inf (max): none yet
  int32_t num_bad = 0;           // evaluations without improvement since the last improvement or reduction
  int32_t cooldown_counter = 0;  // evaluations of cooldown left
  int32_t reductions = 0;        // times the rate was lowered

  // The state before the first evaluation, at rate `lr`.
  static PlateauState Start(const PlateauConfig& c, double lr);
};

// InvalidArgument naming the flag (--lr-plateau-factor, --lr-plateau-patience, ...).
Status ValidatePlateau(const PlateauConfig& c);

// One evaluation's step (see the file comment). Returns true when the rate was lowered.
bool PlateauStep(const PlateauConfig& c, double metric, PlateauState* s);

// The mode a metric is compared in: auc, gauc, pr_auc max; logloss, normalized_entropy min.
// InvalidArgument naming the metric otherwise.
StatusOr<PlateauMode> PlateauModeOf(std::string_view metric);

}  // namespace ctrain::optim
