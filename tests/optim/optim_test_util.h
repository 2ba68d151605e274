// Shared harness for the optimizer tests: a double-precision per-float
// reference rule is run next to the float implementation, densely and sparsely.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "ctrain/optim/optimizer.h"

namespace ctrain::optim::testing {

// One float's update in double: p, its slots (num_slots values), gradient, 1-based step.
using RefRule = std::function<void(double& p, double* slots, double g, int64_t step)>;

inline std::unique_ptr<Optimizer> Make(const OptimizerConfig& c) {
  auto o = MakeOptimizer(c);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  return std::move(o).value();
}

inline std::vector<float> RandomVec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// State for a dense parameter or a sparse table of rows * dim floats.
struct State {
  std::vector<float> param;
  std::vector<std::vector<float>> slots;
  std::vector<float*> slot_ptrs;
  State(const Optimizer& o, int64_t n, uint32_t seed) : param(RandomVec(n, seed)) {
    slots.resize(o.num_slots());
    for (int k = 0; k < o.num_slots(); ++k) slots[k].assign(n, o.SlotInit(k));
    for (auto& s : slots) slot_ptrs.push_back(s.data());
  }
  State(const State& o) : param(o.param), slots(o.slots) {
    for (auto& s : slots) slot_ptrs.push_back(s.data());
  }
  float* const* sp() { return slot_ptrs.empty() ? nullptr : slot_ptrs.data(); }
};

// `steps` dense updates of n floats with random gradients vs the reference.
inline void CheckDenseAgainstReference(const OptimizerConfig& cfg, const RefRule& ref, int64_t n, int steps,
                                       double rel_tol = 2e-5, double abs_tol = 1e-6) {
  auto opt = Make(cfg);
  State s(*opt, n, 7);
  const int ns = opt->num_slots();
  std::vector<double> p(s.param.begin(), s.param.end());
  std::vector<double> slots(static_cast<size_t>(n) * (ns ? ns : 1));
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < ns; ++k) slots[i * ns + k] = opt->SlotInit(k);
  for (int t = 1; t <= steps; ++t) {
    std::vector<float> g = RandomVec(n, 100 + t);
    opt->ApplyDense(s.param.data(), g.data(), s.sp(), n, t);
    for (int64_t i = 0; i < n; ++i) ref(p[i], &slots[i * ns], g[i], t);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(s.param[i], p[i], abs_tol + rel_tol * std::fabs(p[i])) << "step " << t << " index " << i;
      for (int k = 0; k < ns; ++k)
        ASSERT_NEAR(s.slots[k][i], slots[i * ns + k], abs_tol + rel_tol * std::fabs(slots[i * ns + k]))
            << "step " << t << " index " << i << " slot " << opt->SlotName(k);
    }
  }
}

// Sparse updates of a subset of rows (given in shuffled order) change exactly
// those rows and their slots; all other rows stay bit-identical. Touched rows
// match the reference rule.
inline void CheckSparseTouchesOnlyGivenRows(const OptimizerConfig& cfg, const RefRule& ref) {
  const int64_t rows = 53;
  const int32_t dim = 7;
  auto opt = Make(cfg);
  State s(*opt, rows * dim, 11);
  const int ns = opt->num_slots();
  // Reference in double for touched rows.
  std::vector<double> p(s.param.begin(), s.param.end());
  std::vector<double> slots(static_cast<size_t>(rows * dim) * (ns ? ns : 1));
  for (int64_t i = 0; i < rows * dim; ++i)
    for (int k = 0; k < ns; ++k) slots[i * ns + k] = opt->SlotInit(k);
  std::mt19937 rng(5);
  std::vector<int> touched_count(rows, 0);
  for (int t = 1; t <= 4; ++t) {
    std::vector<int64_t> all(rows);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int64_t> ids(all.begin(), all.begin() + 9 + t);  // unique, unsorted
    std::vector<float> g = RandomVec(ids.size() * dim, 200 + t);
    const State before(s);
    opt->ApplySparse(s.param.data(), s.sp(), dim, ids, g.data(), t);
    std::vector<bool> is_touched(rows, false);
    for (size_t j = 0; j < ids.size(); ++j) {
      is_touched[ids[j]] = true;
      ++touched_count[ids[j]];
      for (int32_t d = 0; d < dim; ++d) {
        const int64_t f = ids[j] * dim + d;
        ref(p[f], &slots[f * ns], g[j * dim + d], t);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int32_t d = 0; d < dim; ++d) {
        const int64_t f = r * dim + d;
        if (!is_touched[r]) {
          ASSERT_EQ(std::memcmp(&s.param[f], &before.param[f], 4), 0) << "untouched row " << r << " changed";
          for (int k = 0; k < ns; ++k)
            ASSERT_EQ(std::memcmp(&s.slots[k][f], &before.slots[k][f], 4), 0)
                << "slot " << opt->SlotName(k) << " of untouched row " << r << " changed";
        }
        ASSERT_NEAR(s.param[f], p[f], 1e-6 + 2e-5 * std::fabs(p[f])) << "step " << t << " row " << r;
      }
    }
  }
  // Some rows were never touched: they still hold their initial values.
  int never = 0;
  for (int64_t r = 0; r < rows; ++r) never += touched_count[r] == 0;
  EXPECT_GT(never, 0);
}

// With every row given at every step, sparse updates equal dense updates bit
// for bit; a large update split over OpenMP threads equals the serial one.
inline void CheckSparseEqualsDenseWhenAllRowsGiven(OptimizerConfig cfg) {
  const int64_t rows = 701;  // n > 2 dense chunks of 4096
  const int32_t dim = 13;
  const int64_t n = rows * dim;
  cfg.parallel_min_floats = 1;  // sparse: parallel rows; dense: parallel chunks
  auto par = Make(cfg);
  cfg.parallel_min_floats = std::numeric_limits<int64_t>::max();
  auto ser = Make(cfg);
  State dense(*ser, n, 3), sparse(dense), sparse_par(dense);
  std::vector<int64_t> ids(rows);
  std::iota(ids.begin(), ids.end(), 0);
  std::reverse(ids.begin(), ids.end());  // any order
  for (int t = 1; t <= 5; ++t) {
    std::vector<float> g = RandomVec(n, 300 + t);
    ser->ApplyDense(dense.param.data(), g.data(), dense.sp(), n, t);
    // The sparse gradient lists rows in `ids` order.
    std::vector<float> gs(n);
    for (int64_t j = 0; j < rows; ++j) std::memcpy(&gs[j * dim], &g[ids[j] * dim], dim * sizeof(float));
    ser->ApplySparse(sparse.param.data(), sparse.sp(), dim, ids, gs.data(), t);
    par->ApplySparse(sparse_par.param.data(), sparse_par.sp(), dim, ids, gs.data(), t);
  }
  ASSERT_EQ(std::memcmp(dense.param.data(), sparse.param.data(), n * 4), 0);
  ASSERT_EQ(std::memcmp(sparse.param.data(), sparse_par.param.data(), n * 4), 0);
  for (size_t k = 0; k < dense.slots.size(); ++k) {
    ASSERT_EQ(std::memcmp(dense.slots[k].data(), sparse.slots[k].data(), n * 4), 0) << "slot " << k;
    ASSERT_EQ(std::memcmp(sparse.slots[k].data(), sparse_par.slots[k].data(), n * 4), 0) << "slot " << k;
  }
  // And a parallel dense update equals the serial one.
  State d1(*ser, n, 9), d2(d1);
  for (int t = 1; t <= 3; ++t) {
    std::vector<float> g = RandomVec(n, 400 + t);
    ser->ApplyDense(d1.param.data(), g.data(), d1.sp(), n, t);
    par->ApplyDense(d2.param.data(), g.data(), d2.sp(), n, t);
  }
  ASSERT_EQ(std::memcmp(d1.param.data(), d2.param.data(), n * 4), 0);
}

}  // namespace ctrain::optim::testing
