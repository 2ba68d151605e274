// Helpers for the model-layer tests: seeded random tensors and a
// finite-difference gradient check (central differences, accumulated in double,
// abs + rel tolerance, repro string on failure), after ggml's test-grad0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ctrain::model::testing {

inline std::vector<float> RandomVector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random values whose magnitude is at least `gap` (keeps ReLU inputs off the kink).
inline std::vector<float> RandomAwayFromZero(size_t n, uint32_t seed, float gap) {
  std::vector<float> v = RandomVector(n, seed);
  for (float& x : v) x = x >= 0 ? x + gap : x - gap;
  return v;
}

// Checks analytic[i] == d f / d x[i] for the indices in `which` (all when empty)
// by central differences: (f(x + h) - f(x - h)) / (x+h - (x-h)) with the actual
// float step. f is evaluated with x perturbed in place and must return a double.
// With `which` empty, checks every index when x has at most `max_checks`
// entries, else `max_checks` indices spread evenly (first and last included).
inline ::testing::AssertionResult CheckGradient(const std::string& repro, std::vector<float>* x,
                                                const std::vector<float>& analytic,
                                                const std::function<double()>& f, double eps, double abs_tol,
                                                double rel_tol, std::vector<size_t> which = {},
                                                size_t max_checks = 200) {
  if (which.empty()) {
    const size_t n = x->size();
    if (n <= max_checks) {
      for (size_t i = 0; i < n; ++i) which.push_back(i);
    } else {
      for (size_t j = 0; j < max_checks; ++j) which.push_back(j * (n - 1) / (max_checks - 1));
    }
  }
  for (size_t i : which) {
    const float orig = (*x)[i];
    const float xp = static_cast<float>(orig + eps), xm = static_cast<float>(orig - eps);
    (*x)[i] = xp;
    const double fp = f();
    (*x)[i] = xm;
    const double fm = f();
    (*x)[i] = orig;
    const double numeric = (fp - fm) / (static_cast<double>(xp) - static_cast<double>(xm));
    const double a = analytic[i];
    const double err = std::fabs(numeric - a);
    if (!(err <= abs_tol + rel_tol * std::fabs(numeric))) {
      return ::testing::AssertionFailure()
             << "gradient mismatch [" << repro << "] at index " << i << ": numeric " << numeric << " analytic " << a
             << " abs err " << err << " rel err " << err / std::max(1e-30, std::fabs(numeric)) << " (abs_tol "
             << abs_tol << ", rel_tol " << rel_tol << ", eps " << eps << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Random projection weights r so a layer output y becomes the scalar sum_i r_i y_i.
inline double Dot(const std::vector<float>& r, const float* y, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(r[i]) * y[i];
  return s;
}

}  // namespace ctrain::model::testing
