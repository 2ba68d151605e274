// Learning-rate schedules: linear warm-up, then exponential or cosine decay
// (the rates of tf.keras.optimizers.schedules.ExponentialDecay and
// CosineDecay, Horovod's LearningRateWarmupCallback for the ramp). The
// trainer sets the rate of each step on every optimizer before the update
// (Optimizer::set_learning_rate). docs/training.md#learning-rate-schedules.
//
// Step s is the 1-based global step of the update (optimizer.h). With base
// rate b, W = warmup_steps, t = s - 1 - W (updates done after the warm-up):
//   s <= W:                 warmup_from + (b - warmup_from) * s / W
//   decay none:             b
//   decay exponential:      b * decay_rate ^ (t / decay_steps)   (staircase: floor(t / decay_steps))
//   decay cosine:           b * ((1 - alpha) * (1 + cos(pi * min(t, decay_steps) / decay_steps)) / 2 + alpha)
//   decay plateau:          b, where the caller passes as b the rate the
//                           plateau scheduler holds (optim/lr_plateau.h): it
//                           changes at evaluations, not with the step
// so the first step after the warm-up runs at b and the decay is TF's schedule
// evaluated at the optimizer's iteration count minus the warm-up.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::optim {

enum class LrDecay { kNone, kExponential, kCosine, kPlateau };

struct LrSchedule {
  // Warm-up steps (0 = none) and the rate the ramp starts from (>= 0; 0 =
  // from zero: step s runs at b * s / W).
  int64_t warmup_steps = 0;
  float warmup_from = 0;
  LrDecay decay = LrDecay::kNone;
  // Steps of the decay (> 0 with a decay): exponential divides t by it,
  // cosine reaches alpha * b there and stays.
  int64_t decay_steps = 0;
  float decay_rate = 0.96f;  // exponential: factor per decay_steps, in (0, 1]
  bool staircase = false;    // exponential: integer division t / decay_steps
  float alpha = 0.0f;        // cosine: the final rate as a fraction of b, in [0, 1]
};

// InvalidArgument naming the flag (--lr-warmup-steps, --lr-decay-steps, ...).
Status ValidateLrSchedule(const LrSchedule& s);

// The rate of 1-based step `step` for base rate `base` (see the file comment).
// REQUIRES: ValidateLrSchedule(s).ok(), step >= 1.
double ScheduledLearningRate(const LrSchedule& s, double base, int64_t step);

// "none" | "exponential" | "cosine" | "plateau". InvalidArgument naming the value.
StatusOr<LrDecay> ParseLrDecay(std::string_view name);
const char* LrDecayName(LrDecay d);

}  // namespace ctrain::optim
