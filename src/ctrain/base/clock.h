// The one clock of ctrain: a monotonic clock for durations, timeouts and
// rates (never wall time), seconds as double, and a Deadline for bounded
// waits ("every wait has a deadline").
//
// Thread safety: free functions; a Deadline is a plain value.
#pragma once

#include <chrono>

namespace ctrain {

using Clock = std::chrono::steady_clock;

// Seconds from `a` to `b` (negative when b is earlier).
inline double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
// Seconds since `a`.
inline double SecondsSince(Clock::time_point a) { return SecondsBetween(a, Clock::now()); }

// A point in time a wait must not pass.
class Deadline {
 public:
  explicit Deadline(Clock::duration limit) : end_(Clock::now() + limit) {}
  bool expired() const { return Clock::now() >= end_; }
  // Time left, zero once expired.
  Clock::duration remaining() const {
    const Clock::duration left = end_ - Clock::now();
    return left > Clock::duration::zero() ? left : Clock::duration::zero();
  }
  Clock::time_point time_point() const { return end_; }

 private:
  Clock::time_point end_;
};

}  // namespace ctrain
