#include "ctrain/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ctrain::optim {
namespace {

TEST(MakeOptimizerTest, KnownNames) {
  for (const char* name : {"sgd", "momentum", "adagrad", "adam", "ftrl"}) {
    OptimizerConfig c;
    c.name = name;
    c.learning_rate = 0.01f;
    auto o = MakeOptimizer(c);
    ASSERT_TRUE(o.ok()) << name << ": " << o.status().ToString();
    EXPECT_EQ((*o)->name(), name);
  }
}

TEST(MakeOptimizerTest, UnknownName) {
  OptimizerConfig c;
  c.name = "rmsprop";
  auto o = MakeOptimizer(c);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(o.status().message(),
            "unknown optimizer 'rmsprop': expected one of sgd, momentum, adagrad, adam, ftrl");
}

TEST(MakeOptimizerTest, NonFiniteLearningRate) {
  for (float lr : {-1.0f, NAN, INFINITY}) {
    OptimizerConfig c;
    c.name = "adam";
    c.learning_rate = lr;
    auto o = MakeOptimizer(c);
    ASSERT_FALSE(o.ok()) << lr;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ctrain::optim
