#include "ctrain/optim/lr_plateau.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ctrain::optim {

PlateauState PlateauState::Start(const PlateauConfig& c, double lr) {
  PlateauState s;
  s.lr = lr;
  s.best = c.mode == PlateauMode::kMin ? std::numeric_limits<double>::infinity()
                                       : -std::numeric_limits<double>::infinity();
  return s;
}

Status ValidatePlateau(const PlateauConfig& c) {
  if (!(c.factor > 0 && c.factor < 1))
    return InvalidArgumentError("--lr-plateau-factor must be in (0, 1), got " + std::to_string(c.factor));
  if (c.patience < 0)
    return InvalidArgumentError("--lr-plateau-patience must be >= 0 evaluations, got " + std::to_string(c.patience));
  if (c.cooldown < 0)
    return InvalidArgumentError("--lr-plateau-cooldown must be >= 0 evaluations, got " + std::to_string(c.cooldown));
  if (!(c.min_lr >= 0) || !std::isfinite(c.min_lr))
    return InvalidArgumentError("--lr-plateau-min-lr must be a finite rate >= 0, got " + std::to_string(c.min_lr));
  if (!(c.min_delta >= 0) || !std::isfinite(c.min_delta))
    return InvalidArgumentError("--lr-plateau-min-delta must be finite and >= 0, got " + std::to_string(c.min_delta));
  return Status::OK();
}

bool PlateauStep(const PlateauConfig& c, double metric, PlateauState* s) {
  const bool better = c.mode == PlateauMode::kMax ? metric > s->best + c.min_delta : metric < s->best - c.min_delta;
  if (better) {
    s->best = metric;
    s->num_bad = 0;
  } else {
    ++s->num_bad;
  }
  if (s->cooldown_counter > 0) {
    --s->cooldown_counter;
    s->num_bad = 0;
  }
  if (s->num_bad <= c.patience) return false;
  const double next = std::max(s->lr * c.factor, c.min_lr);
  bool lowered = false;
  if (s->lr - next > kPlateauEps) {
    s->lr = next;
    ++s->reductions;
    lowered = true;
  }
  s->cooldown_counter = c.cooldown;
  s->num_bad = 0;
  return lowered;
}

StatusOr<PlateauMode> PlateauModeOf(std::string_view metric) {
  if (metric == "auc" || metric == "gauc" || metric == "pr_auc") return PlateauMode::kMax;
  if (metric == "logloss" || metric == "normalized_entropy") return PlateauMode::kMin;
  return InvalidArgumentError("--lr-plateau-metric must be auc, gauc, pr_auc, logloss or normalized_entropy, got '" +
                              std::string(metric) + "'");
}

}  // namespace ctrain::optim
