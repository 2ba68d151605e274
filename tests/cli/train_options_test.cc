// ParseTrainJobOptions: `ctrain train`'s flags parsed onto job::TrainJobOptions without running
// the job; the flags, config files, typed values and SageMaker hyperparameters all read the one
// option schema (job/option_schema.h) and give the same effective options.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ctrain/cli/commands.h"
#include "ctrain/job/config_file.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/launch/hyperparameters.h"

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

TEST(TrainFlags, OneFlagPerSchemaEntryWithItsSpellings) {
  // Every option of the schema parses from its flag, dashes and underscores, and its aliases.
  for (const job::OptionSpec& spec : job::TrainOptionSchema()) {
    std::vector<std::string> spellings = {spec.name};
    spellings.insert(spellings.end(), spec.aliases.begin(), spec.aliases.end());
    for (const std::string& n : spellings)
      for (const std::string& flag : {job::FlagName(n), "--" + n}) {
        const nlohmann::json def = spec.default_value();
        std::vector<std::string> texts = job::OptionTexts(spec, def);
        std::string text = texts.empty() ? "x" : texts[0];
        if (text.empty()) text = spec.type == job::OptionType::kIntList ? "8" : "x";
        StatusOr<job::TrainJobOptions> o = ParseTrainJobOptions({flag + "=" + text});
        if (spec.name == "config") continue;  // reads the file
        ASSERT_TRUE(o.ok()) << flag << ": " << o.status().ToString();
        EXPECT_TRUE(o->given.Has(spec.name)) << flag;
      }
  }
}

// The same run given as CLI flags, as a config file, as typed values (Python's path) and as
// SageMaker hyperparameters as the SDK writes them: one effective configuration.
TEST(TrainFlags, EveryFrontEndGivesTheSameEffectiveOptions) {
  StatusOr<job::TrainJobOptions> cli = ParseTrainJobOptions(
      {"--epochs", "3", "--optimizer", "adagrad", "--learning-rate", "0.001", "--deep-layers", "400,400",
       "--batch-norm", "--shuffle=false", "--ps", "h1:7000,h2:7001", "--seed", "18446744073709551615"});
  ASSERT_TRUE(cli.ok()) << cli.status().ToString();
  const nlohmann::json values = {{"epochs", 3},           {"optimizer", "adagrad"}, {"learning_rate", 0.001},
                                 {"deep_layers", {400, 400}}, {"batch_norm", true},  {"shuffle", false},
                                 {"ps", {"h1:7000", "h2:7001"}}, {"seed", 18446744073709551615ull}};
  StatusOr<job::TrainJobOptions> typed = job::TrainJobOptionsFromValues(values, "test");
  ASSERT_TRUE(typed.ok()) << typed.status().ToString();
  EXPECT_EQ(job::EffectiveTrainOptions(*typed).dump(), job::EffectiveTrainOptions(*cli).dump());
  EXPECT_EQ(job::EffectiveTrainOptions(*cli).dump(),
            R"({"deep_layers":[400,400],"batch_norm":true,"epochs":3,"learning_rate":0.001,)"
            R"("optimizer":"adagrad","seed":18446744073709551615,"shuffle":false,"ps":["h1:7000","h2:7001"]})");

  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/opts.toml") << "epochs = 3\noptimizer = \"adagrad\"\nlearning_rate = 0.001\n"
                                        "deep_layers = [400, 400]\nbatch_norm = true\nshuffle = false\n"
                                        "ps = [\"h1:7000\", \"h2:7001\"]\nseed = \"18446744073709551615\"\n";
  StatusOr<job::TrainJobOptions> file = ParseTrainJobOptions({"--config", dir + "/opts.toml"});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  nlohmann::ordered_json from_file = job::EffectiveTrainOptions(*file);
  from_file.erase("config");
  EXPECT_EQ(from_file.dump(), job::EffectiveTrainOptions(*cli).dump());

  // What the SageMaker Python SDK's framework estimators write (json.dumps per value), with a
  // tuning job's key, mapped onto flags, parsed by the CLI.
  StatusOr<launch::MappedHyperparameters> hp = launch::MapHyperparameters(
      {{"epochs", "3"}, {"optimizer", "\"adagrad\""}, {"learning_rate", "0.001"}, {"deep_layers", "[400, 400]"},
       {"batch_norm", "true"}, {"shuffle", "false"}, {"ps", "[\"h1:7000\", \"h2:7001\"]"},
       {"seed", "18446744073709551615"}, {"_tuning_objective_metric", "\"validation:auc\""}},
      "hp.json");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  StatusOr<job::TrainJobOptions> sm = ParseTrainJobOptions(hp->train_args);
  ASSERT_TRUE(sm.ok()) << sm.status().ToString();
  EXPECT_EQ(job::EffectiveTrainOptions(*sm).dump(), job::EffectiveTrainOptions(*cli).dump());
  EXPECT_EQ(hp->skipped_platform_keys, 1);
}

TEST(TrainFlags, ConfigFileValuesOfTheWrongTypeAreRefusedNamingFileAndOption) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/bad.toml") << "batch_size = 2.5\n";
  Status s = ParseTrainJobOptions({"--config", dir + "/bad.toml"}).status();
  EXPECT_NE(s.ToString().find("bad.toml: --batch-size: expected a whole number, got 2.5"), std::string::npos)
      << s.ToString();
  std::ofstream(dir + "/unknown.toml") << "lerning_rate = 0.1\n";
  s = ParseTrainJobOptions({"--config", dir + "/unknown.toml"}).status();
  EXPECT_NE(s.ToString().find("unknown option 'lerning_rate'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("did you mean learning_rate?"), std::string::npos) << s.ToString();
  // The command line wins over the file.
  std::ofstream(dir + "/lr.toml") << "learning_rate = 0.1\nbatch_size = 64\n";
  StatusOr<job::TrainJobOptions> o = ParseTrainJobOptions({"--config", dir + "/lr.toml", "--learning-rate", "0.2"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FLOAT_EQ(o->learning_rate, 0.2f);
  EXPECT_EQ(o->train_options.batch_size, 64);
}

}  // namespace
}  // namespace ctrain::cli
