// optim/lr_plateau.h: ReduceLROnPlateau's step against hand-worked sequences,
// and the rates of PyTorch's torch.optim.lr_scheduler.ReduceLROnPlateau for
// the same metric sequences (tests/optim/lr_plateau_reference.py; skipped
// with a message when python3 or torch is missing).
#include "ctrain/optim/lr_plateau.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/temp_dir.h"

namespace ctrain::optim {
namespace {

// The rate after each step of `metrics`.
std::vector<double> Rates(const PlateauConfig& c, double lr, const std::vector<double>& metrics, PlateauState* end = nullptr) {
  PlateauState s = PlateauState::Start(c, lr);
  std::vector<double> out;
  for (double m : metrics) {
    const double before = s.lr;
    const bool lowered = PlateauStep(c, m, &s);
    EXPECT_EQ(lowered, s.lr != before);
    out.push_back(s.lr);
  }
  if (end != nullptr) *end = s;
  return out;
}

TEST(LrPlateau, PatienceCountsTheToleratedEvaluationsAndResetsAfterADrop) {
  PlateauConfig c;
  c.mode = PlateauMode::kMin;
  c.factor = 0.5;
  c.patience = 1;
  c.min_delta = 0;
  // 1.0 and 0.9 improve; 0.95 is bad 1 (tolerated), bad 2 > 1 drops to 0.5 and resets; 0.8 improves;
  // two more bad ones drop to 0.25; one more is bad 1 again.
  PlateauState s;
  const std::vector<double> r = Rates(c, 1.0, {1.0, 0.9, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85}, &s);
  EXPECT_EQ(r, (std::vector<double>{1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25}));
  EXPECT_EQ(s.best, 0.8);
  EXPECT_EQ(s.num_bad, 1);
  EXPECT_EQ(s.reductions, 2);
}

TEST(LrPlateau, CooldownIgnoresEvaluationsAndMinLrStopsTheDrops) {
  PlateauConfig c;
  c.mode = PlateauMode::kMax;
  c.factor = 0.1;
  c.patience = 0;
  c.cooldown = 2;
  c.min_lr = 0.001;
  c.min_delta = 0.01;
  // 0.5 sets the best; 0.505 is within min_delta: bad, patience 0: drop; two evaluations of cooldown; the next
  // bad one drops to 0.1^3 (above min_lr by 2e-19 in doubles); then max(0.1^4, min_lr) = min_lr is not below
  // the rate by more than eps: a plateau changes nothing but still starts a cooldown.
  PlateauState s;
  const std::vector<double> r = Rates(c, 0.1, {0.5, 0.505, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, &s);
  ASSERT_EQ(r.size(), 8u);
  const double d3 = 0.1 * 0.1 * 0.1;
  const std::vector<double> want = {0.1, 0.1 * 0.1, 0.1 * 0.1, 0.1 * 0.1, d3, d3, d3, d3};
  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], want[i]) << "evaluation " << i + 1;
  EXPECT_EQ(s.reductions, 2);
  EXPECT_EQ(s.cooldown_counter, 2);  // evaluation 8 was a plateau at min_lr
  EXPECT_EQ(s.best, 0.5);
}

TEST(LrPlateau, AnImprovementInTheCooldownStillSetsTheBest) {
  PlateauConfig c;
  c.mode = PlateauMode::kMin;
  c.patience = 0;
  c.cooldown = 1;
  c.min_delta = 0;
  PlateauState s;
  const std::vector<double> r = Rates(c, 1.0, {0.5, 0.6, 0.4, 0.45}, &s);
  // 0.6: drop to 0.1, cooldown 1; 0.4 improves in the cooldown; 0.45 is bad: drop to 0.01.
  EXPECT_DOUBLE_EQ(r[1], 0.1);
  EXPECT_DOUBLE_EQ(r[2], 0.1);
  EXPECT_DOUBLE_EQ(r[3], 0.1 * 0.1);
  EXPECT_EQ(s.best, 0.4);
}

TEST(LrPlateau, NanNeverImprovesAndTheFirstValueAlwaysDoes) {
  PlateauConfig c;
  c.mode = PlateauMode::kMax;
  c.patience = 1;
  c.min_delta = 1e9;  // nothing after the first value counts
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PlateauState s;
  const std::vector<double> r = Rates(c, 1.0, {nan, nan, 0.7, 0.9}, &s);
  // NaN: bad 1, bad 2 > 1: drop (the best stays -inf); 0.7 > -inf + 1e9: the first number improves whatever
  // min_delta; 0.9 does not beat it by 1e9: bad 1.
  EXPECT_EQ(r, (std::vector<double>{1.0, 0.1, 0.1, 0.1}));
  EXPECT_EQ(s.best, 0.7);
  EXPECT_EQ(s.num_bad, 1);
  c.min_delta = 0;
  EXPECT_EQ(Rates(c, 1.0, {0.3, nan, nan, 0.2}), (std::vector<double>{1.0, 1.0, 0.1, 0.1}));
}

TEST(LrPlateau, ValidationNamesTheFlagAndModesFollowTheMetric) {
  PlateauConfig c;
  EXPECT_TRUE(ValidatePlateau(c).ok());
  c.factor = 1.0;
  EXPECT_EQ(ValidatePlateau(c).message(), "--lr-plateau-factor must be in (0, 1), got 1.000000");
  c = PlateauConfig();
  c.patience = -1;
  EXPECT_EQ(ValidatePlateau(c).message(), "--lr-plateau-patience must be >= 0 evaluations, got -1");
  c = PlateauConfig();
  c.cooldown = -2;
  EXPECT_EQ(ValidatePlateau(c).message(), "--lr-plateau-cooldown must be >= 0 evaluations, got -2");
  c = PlateauConfig();
  c.min_lr = -1;
  EXPECT_EQ(ValidatePlateau(c).message(), "--lr-plateau-min-lr must be a finite rate >= 0, got -1.000000");
  c = PlateauConfig();
  c.min_delta = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ValidatePlateau(c).message(), "--lr-plateau-min-delta must be finite and >= 0, got inf");
  EXPECT_EQ(*PlateauModeOf("auc"), PlateauMode::kMax);
  EXPECT_EQ(*PlateauModeOf("gauc"), PlateauMode::kMax);
  EXPECT_EQ(*PlateauModeOf("pr_auc"), PlateauMode::kMax);
  EXPECT_EQ(*PlateauModeOf("logloss"), PlateauMode::kMin);
  EXPECT_EQ(*PlateauModeOf("normalized_entropy"), PlateauMode::kMin);
  EXPECT_EQ(PlateauModeOf("loss").status().message(),
            "--lr-plateau-metric must be auc, gauc, pr_auc, logloss or normalized_entropy, got 'loss'");
}

// Metric sequences with plateaus, ties, NaN and the threshold's edge, under several configurations.
TEST(LrPlateau, RatesEqualPyTorchsReduceLROnPlateau) {
  std::mt19937 rng(22);
  nlohmann::json cases = nlohmann::json::array();
  std::vector<PlateauConfig> configs;
  std::vector<double> base_lrs;
  std::vector<std::vector<double>> seqs;
  const double factors[] = {0.1, 0.5, 0.3};
  for (int k = 0; k < 24; ++k) {
    PlateauConfig c;
    c.mode = k % 2 == 0 ? PlateauMode::kMin : PlateauMode::kMax;
    c.factor = factors[k % 3];
    c.patience = static_cast<int32_t>(rng() % 4);
    c.cooldown = static_cast<int32_t>(rng() % 3);
    c.min_lr = k % 4 == 0 ? 0.0 : 1e-5 * static_cast<double>(1 + rng() % 5);
    c.min_delta = k % 5 == 0 ? 0.0 : 1e-3 * static_cast<double>(rng() % 4);
    const double lr = 1e-3 * static_cast<double>(1 + rng() % 10);
    std::vector<double> m;
    double v = 0.5;
    for (int i = 0; i < 60; ++i) {
      const uint32_t r = rng() % 10;
      if (r < 4) v += (c.mode == PlateauMode::kMin ? -1 : 1) * 0.001 * static_cast<double>(rng() % 5);
      else if (r < 6) v -= (c.mode == PlateauMode::kMin ? -1 : 1) * 0.001 * static_cast<double>(rng() % 3);
      v = std::round(v * 1000) / 1000;  // ties and exact threshold edges
      m.push_back(r == 9 && i % 7 == 0 ? std::numeric_limits<double>::quiet_NaN() : v);
    }
    nlohmann::json metrics = nlohmann::json::array();
    for (double x : m) metrics.push_back(std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x));
    cases.push_back({{"mode", c.mode == PlateauMode::kMin ? "min" : "max"},
                     {"factor", c.factor},
                     {"patience", c.patience},
                     {"cooldown", c.cooldown},
                     {"min_lr", c.min_lr},
                     {"min_delta", c.min_delta},
                     {"lr", lr},
                     {"metrics", metrics}});
    configs.push_back(c);
    base_lrs.push_back(lr);
    seqs.push_back(m);
  }
  const std::string dir = testing::TestTempDir("lr_plateau", "torch");
  const std::string in = dir + "/cases.json", out = dir + "/lrs.json";
  std::ofstream(in) << cases.dump();
  const std::string cmd = "python3 " + std::string(CTRAIN_SOURCE_DIR) + "/tests/optim/lr_plateau_reference.py " + in +
                          " > " + out + " 2>" + dir + "/err.txt";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream e(dir + "/err.txt");
    const std::string err((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    if (WIFEXITED(rc) && (WEXITSTATUS(rc) == 3 || WEXITSTATUS(rc) == 127))
      GTEST_SKIP() << "no PyTorch reference (python3 with torch): " << err;
    FAIL() << cmd << " failed: " << err;
  }
  std::ifstream f(out);
  const nlohmann::json ref = nlohmann::json::parse(f);
  ASSERT_EQ(ref["lrs"].size(), seqs.size());
  int drops = 0;
  for (size_t k = 0; k < seqs.size(); ++k) {
    const std::vector<double> ours = Rates(configs[k], base_lrs[k], seqs[k]);
    const std::vector<double> theirs = ref["lrs"][k].get<std::vector<double>>();
    ASSERT_EQ(ours.size(), theirs.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_EQ(ours[i], theirs[i]) << "case " << k << " evaluation " << i + 1 << " (torch "
                                    << ref["torch"].get<std::string>() << ")";
      if (i > 0 && ours[i] != ours[i - 1]) ++drops;
    }
  }
  EXPECT_GT(drops, 24);  // the sequences do reach plateaus
}

}  // namespace
}  // namespace ctrain::optim
