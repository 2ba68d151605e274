// optim/lr_schedule.h: warm-up, then TF's ExponentialDecay / CosineDecay
// evaluated at the optimizer iteration (step - 1) minus the warm-up.
#include "ctrain/optim/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace ctrain::optim {
namespace {

TEST(LrSchedule, WarmupRampsToTheBaseRate) {
  LrSchedule s;
  s.warmup_steps = 4;  // from 0
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 1), 0.025);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 2), 0.05);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 4), 0.1);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 5), 0.1);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 500), 0.1);
  s.warmup_from = 0.02f;  // Horovod: from lr / N
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 1), 0.02 + 0.08 * 0.25, 1e-9);
}

TEST(LrSchedule, ExponentialDecayIsTensorFlowsAtIterationStepMinusOne) {
  LrSchedule s;
  s.decay = LrDecay::kExponential;
  s.decay_steps = 10;
  s.decay_rate = 0.5f;
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 1), 0.1);   // iteration 0
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 11), 0.05);  // iteration 10
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 6), 0.1 * std::pow(0.5, 0.5));
  s.staircase = true;
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 10), 0.1);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 11), 0.05);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 31), 0.0125);
}

TEST(LrSchedule, CosineDecayReachesAlphaAndStays) {
  LrSchedule s;
  s.decay = LrDecay::kCosine;
  s.decay_steps = 10;
  s.alpha = 0.1f;
  const double a = static_cast<double>(s.alpha);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 1), 0.1);
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 6), 0.1 * ((1 - a) * 0.5 + a), 1e-15);  // halfway
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 3), 0.1 * ((1 - a) * 0.5 * (1 + std::cos(std::numbers::pi * 0.2)) + a),
              1e-15);
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 11), 0.1 * a, 1e-15);
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 1000), 0.1 * a, 1e-15);
}

TEST(LrSchedule, DecayStartsAfterTheWarmup) {
  LrSchedule s;
  s.warmup_steps = 5;
  s.decay = LrDecay::kCosine;
  s.decay_steps = 10;
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 5), 0.1);   // end of the ramp
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(s, 0.1, 6), 0.1);   // decay iteration 0
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 11), 0.05, 1e-15);  // decay iteration 5 of 10
  EXPECT_NEAR(ScheduledLearningRate(s, 0.1, 16), 0.0, 1e-15);
}

TEST(LrSchedule, ValidationNamesTheFlag) {
  LrSchedule s;
  EXPECT_TRUE(ValidateLrSchedule(s).ok());
  s.decay = LrDecay::kCosine;
  EXPECT_EQ(ValidateLrSchedule(s).message(), "--lr-decay cosine needs --lr-decay-steps >= 1, got 0");
  s.decay_steps = 3;
  s.alpha = 2;
  EXPECT_EQ(ValidateLrSchedule(s).message(), "--lr-decay-alpha must be in [0, 1], got 2.000000");
  s.decay = LrDecay::kExponential;
  s.decay_rate = 0;
  EXPECT_EQ(ValidateLrSchedule(s).message(), "--lr-decay-rate must be in (0, 1], got 0.000000");
  s = LrSchedule();
  s.warmup_steps = -1;
  EXPECT_EQ(ValidateLrSchedule(s).message(), "--lr-warmup-steps must be >= 0, got -1");
  EXPECT_EQ(ParseLrDecay("linear").status().message(),
            "--lr-decay (--lr-schedule) must be none, exponential, cosine or plateau, got 'linear'");
  EXPECT_EQ(*ParseLrDecay("cosine"), LrDecay::kCosine);
}

}  // namespace
}  // namespace ctrain::optim
