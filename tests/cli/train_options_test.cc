// ParseTrainJobOptions: `ctrain train`'s flags parsed onto job::TrainJobOptions without running
// the job (what the Python package's Trainer(**options) uses).
#include <gtest/gtest.h>

#include <algorithm>

#include "ctrain/cli/commands.h"

namespace ctrain::cli {
namespace {

TEST(ParseTrainJobOptions, FlagsLandOnTheJobOptionsAndAreRecordedAsGiven) {
  StatusOr<job::TrainJobOptions> o = ParseTrainJobOptions(
      {"--feature-size", "921", "--id_base", "1", "--deep-layers", "32,16", "--shuffle=false", "--learning-rate",
       "0.002", "--train", "a.libsvm", "b.libsvm", "--num-shards", "3", "--towers", "2"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->data.feature_size, 921);
  EXPECT_EQ(o->data.id_base, 1);
  EXPECT_EQ(o->deep_layers, "32,16");
  EXPECT_FALSE(o->train_options.shuffle);
  EXPECT_FLOAT_EQ(o->learning_rate, 0.002f);
  EXPECT_EQ(o->train, (std::vector<std::string>{"a.libsvm", "b.libsvm"}));
  EXPECT_EQ(o->pipeline.num_shards, 3);
  EXPECT_EQ(o->parallel.towers, 2);
  EXPECT_TRUE(o->given.Has("num_shards"));
  EXPECT_TRUE(o->given.Has("towers"));
  EXPECT_FALSE(o->given.Has("hogwild"));
  EXPECT_EQ(o->train_options.batch_size, 256);  // defaults as the CLI's
  EXPECT_EQ(o->embedding_size, 32);
}

TEST(ParseTrainJobOptions, UsageErrorsAreInvalidArgumentWithTheCliMessage) {
  StatusOr<job::TrainJobOptions> o = ParseTrainJobOptions({"--learning-rat", "0.1"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().message().find("--learning-rate"), std::string::npos) << o.status().ToString();
  o = ParseTrainJobOptions({"--batch-size", "many"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--batch-size"), std::string::npos) << o.status().ToString();
}

TEST(TrainOptionNames, CanonicalUnderscoreNamesOfEveryTrainFlag) {
  const std::vector<std::string> names = TrainOptionNames();
  for (const char* n : {"feature_size", "learning_rate", "model_dir", "num_parallel_reads", "data_service", "towers",
                        "id_base", "config"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_EQ(std::find(names.begin(), names.end(), "help"), names.end());
}

}  // namespace
}  // namespace ctrain::cli
