// Shared argument checks for the optimizer factories (internal to optim/).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/optim/optimizer.h"

namespace ctrain::optim::internal {

inline std::string FloatStr(float v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

// InvalidArgument "optimizer <name>: <field> <value> not in <range>" unless lo <= v (< or <=) hi.
inline Status CheckRange(const OptimizerConfig& c, const char* field, float v, float lo, float hi,
                         bool hi_open) {
  bool ok = std::isfinite(v) && v >= lo && (hi_open ? v < hi : v <= hi);
  if (ok) return Status::OK();
  std::string msg = "optimizer ";
  msg += c.name;
  msg += ": ";
  msg += field;
  msg += " ";
  msg += FloatStr(v);
  msg += " not in [";
  msg += std::isinf(lo) ? std::string("-inf") : FloatStr(lo);
  msg += ", ";
  msg += std::isinf(hi) ? std::string("inf") : FloatStr(hi);
  msg += hi_open ? ")" : "]";
  return InvalidArgumentError(msg);
}

inline Status CheckLearningRate(const OptimizerConfig& c) {
  if (std::isfinite(c.learning_rate) && c.learning_rate > 0) return Status::OK();
  return InvalidArgumentError("optimizer " + c.name + ": learning_rate " + FloatStr(c.learning_rate) +
                              " must be finite and > 0");
}

inline constexpr float kInf = __builtin_inff();

}  // namespace ctrain::optim::internal
