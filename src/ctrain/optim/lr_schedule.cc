#include "ctrain/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace ctrain::optim {

Status ValidateLrSchedule(const LrSchedule& s) {
  if (s.warmup_steps < 0)
    return InvalidArgumentError("--lr-warmup-steps must be >= 0, got " + std::to_string(s.warmup_steps));
  if (!(s.warmup_from >= 0) || !std::isfinite(s.warmup_from))
    return InvalidArgumentError("lr_warmup_from must be a finite rate >= 0, got " + std::to_string(s.warmup_from));
  if (s.decay == LrDecay::kNone || s.decay == LrDecay::kPlateau) return Status::OK();  // plateau: lr_plateau.h
  if (s.decay_steps < 1)
    return InvalidArgumentError(std::string("--lr-decay ") + LrDecayName(s.decay) +
                                " needs --lr-decay-steps >= 1, got " +
                                std::to_string(s.decay_steps));
  if (s.decay == LrDecay::kExponential && !(s.decay_rate > 0 && s.decay_rate <= 1))
    return InvalidArgumentError("--lr-decay-rate must be in (0, 1], got " + std::to_string(s.decay_rate));
  if (s.decay == LrDecay::kCosine && !(s.alpha >= 0 && s.alpha <= 1))
    return InvalidArgumentError("--lr-decay-alpha must be in [0, 1], got " + std::to_string(s.alpha));
  return Status::OK();
}

double ScheduledLearningRate(const LrSchedule& s, double base, int64_t step) {
  if (step <= s.warmup_steps)
    return s.warmup_from + (base - s.warmup_from) * static_cast<double>(step) / static_cast<double>(s.warmup_steps);
  const double t = static_cast<double>(step - 1 - s.warmup_steps);
  const double d = static_cast<double>(s.decay_steps);
  switch (s.decay) {
    case LrDecay::kNone:
    case LrDecay::kPlateau:
      return base;
    case LrDecay::kExponential: {
      const double p = s.staircase ? std::floor(t / d) : t / d;
      return base * std::pow(static_cast<double>(s.decay_rate), p);
    }
    case LrDecay::kCosine: {
      const double c = 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(t, d) / d));
      return base * ((1.0 - s.alpha) * c + s.alpha);
    }
  }
  return base;
}

StatusOr<LrDecay> ParseLrDecay(std::string_view name) {
  if (name == "none") return LrDecay::kNone;
  if (name == "exponential") return LrDecay::kExponential;
  if (name == "cosine") return LrDecay::kCosine;
  if (name == "plateau") return LrDecay::kPlateau;
  return InvalidArgumentError("--lr-decay (--lr-schedule) must be none, exponential, cosine or plateau, got '" +
                              std::string(name) + "'");
}

const char* LrDecayName(LrDecay d) {
  switch (d) {
    case LrDecay::kNone: return "none";
    case LrDecay::kExponential: return "exponential";
    case LrDecay::kCosine: return "cosine";
    case LrDecay::kPlateau: return "plateau";
  }
  return "?";
}

}  // namespace ctrain::optim
