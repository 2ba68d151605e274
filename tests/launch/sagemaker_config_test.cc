// The SageMaker contract files as SageMaker (and its local mode) write them:
// every hyperparameter a JSON string, both spellings of the current group.
#include "ctrain/launch/sagemaker_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "ctrain/launch/hyperparameters.h"
#include "ctrain/launch/launch.h"
#include "testing/temp_dir.h"

namespace ctrain::launch {
namespace {

// resourceconfig.json of a heterogeneous job, as the SageMaker docs show it.
constexpr char kHetero[] = R"({
  "current_host": "algo-2",
  "current_instance_type": "ml.c5.xlarge",
  "current_group_name": "data_group",
  "hosts": ["algo-1", "algo-2", "algo-3"],
  "instance_groups": [
    {"instance_group_name": "dnn_group", "instance_type": "ml.p4d.24xlarge", "hosts": ["algo-3"]},
    {"instance_group_name": "data_group", "instance_type": "ml.c5.xlarge", "hosts": ["algo-2", "algo-1"]}
  ],
  "network_interface_name": "eth0"
})";

TEST(ResourceConfig, HeterogeneousGroupsAndCurrentGroupName) {
  StatusOr<ResourceConfig> rc = ParseResourceConfig(kHetero, "rc.json");
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_EQ(rc->current_host, "algo-2");
  EXPECT_EQ(rc->current_group, "data_group");
  EXPECT_EQ(rc->current_instance_type, "ml.c5.xlarge");
  ASSERT_EQ(rc->groups.size(), 2u);
  EXPECT_EQ(rc->groups[0].name, "dnn_group");
  EXPECT_EQ(rc->groups[0].instance_type, "ml.p4d.24xlarge");
  EXPECT_EQ(rc->groups[1].hosts, (std::vector<std::string>{"algo-2", "algo-1"}));
  EXPECT_EQ(rc->GroupOf("algo-3")->name, "dnn_group");
}

TEST(ResourceConfig, LocalModeSpellingCurrentInstanceGroup) {
  std::string local = kHetero;
  local.replace(local.find("current_group_name"), 18, "current_instance_group");
  StatusOr<ResourceConfig> rc = ParseResourceConfig(local, "rc.json");
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  EXPECT_EQ(rc->current_group, "data_group");
}

TEST(ResourceConfig, HomogeneousWithoutGroupsIsOneGroup) {
  StatusOr<ResourceConfig> rc = ParseResourceConfig(
      R"({"current_host": "algo-1", "hosts": ["algo-1", "algo-2"], "current_instance_type": "ml.m5.xlarge"})", "rc.json");
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  ASSERT_EQ(rc->groups.size(), 1u);
  EXPECT_EQ(rc->groups[0].name, "homogeneousCluster");
  EXPECT_EQ(rc->groups[0].hosts.size(), 2u);
  EXPECT_EQ(rc->groups[0].instance_type, "ml.m5.xlarge");
}

TEST(ResourceConfig, ErrorsNameTheFileAndTheKey) {
  auto err = [](const std::string& json) { return ParseResourceConfig(json, "/x/rc.json").status().ToString(); };
  EXPECT_NE(err(R"({"hosts": ["algo-1"]})").find("/x/rc.json: \"current_host\" is missing"), std::string::npos);
  EXPECT_NE(err(R"({"current_host": "algo-9", "hosts": ["algo-1"]})").find("\"algo-9\" is not in \"hosts\""),
            std::string::npos);
  EXPECT_NE(err(R"({"current_host": "algo-1", "hosts": ["algo-1"], "current_group_name": "a",
                    "current_instance_group": "b"})")
                .find("disagree"),
            std::string::npos);
  EXPECT_NE(err("{\"current_host\": ").find("not JSON (byte"), std::string::npos);
  std::string bad_group = kHetero;
  bad_group.replace(bad_group.find("\"algo-3\"]}"), 8, "\"algo-7\"");
  EXPECT_NE(err(bad_group).find("instance_groups[0].hosts: \"algo-7\" is not in \"hosts\""), std::string::npos);
}

TEST(Hyperparameters, EveryValueIsAString) {
  StatusOr<Hyperparameters> hp =
      ParseHyperparameters(R"({"epochs": "2", "learning_rate": "0.001", "data_group": "data_group"})", "hp.json");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  ASSERT_EQ(hp->size(), 3u);
  EXPECT_EQ((*hp)[0], (std::pair<std::string, std::string>{"epochs", "2"}));  // file order kept
  Status s = ParseHyperparameters(R"({"epochs": 2})", "/x/hp.json").status();
  EXPECT_NE(s.ToString().find("/x/hp.json: hyperparameter \"epochs\" must be a JSON string"), std::string::npos) << s.ToString();
}

TEST(Hyperparameters, MapOntoTrainFlagsAndNameUnknownKeys) {
  Hyperparameters hp{{"learning_rate", "0.001"}, {"batch-size", "512"}, {"epochs", "3"},
                     {"data_group", "data"},     {"sagemaker_region", "\"us-east-1\""}};
  StatusOr<MappedHyperparameters> m = MapHyperparameters(hp, "hp.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->train_args, (std::vector<std::string>{"--learning-rate=0.001", "--batch-size=512", "--epochs=3"}));
  EXPECT_EQ(m->data_group, "data");
  EXPECT_EQ(m->epochs, 3);
  EXPECT_EQ(m->skipped_platform_keys, 1);

  Status s = MapHyperparameters({{"lerning_rate", "0.1"}}, "/x/hp.json").status();
  EXPECT_EQ(s.ToString(),
            "InvalidArgument: /x/hp.json: unknown hyperparameter \"lerning_rate\" (no ctrain train flag --lerning-rate; "
            "did you mean learning_rate?)");
  s = MapHyperparameters({{"model_dir", "/tmp"}}, "hp.json").status();
  EXPECT_NE(s.ToString().find("\"model_dir\" is set by ctrain launch"), std::string::npos) << s.ToString();
  s = MapHyperparameters({{"epochs", "two"}}, "hp.json").status();
  EXPECT_NE(s.ToString().find("\"epochs\" (value \"two\"): --epochs: expected a whole number"), std::string::npos)
      << s.ToString();
  s = MapHyperparameters({{"epochs", "1"}, {"epochs", "2"}}, "hp.json").status();
  EXPECT_NE(s.ToString().find("given twice"), std::string::npos) << s.ToString();
}

TEST(InputDataConfig, FilePipeFastFileChannels) {
  StatusOr<std::vector<Channel>> ch = ParseInputDataConfig(
      R"({"train": {"TrainingInputMode": "Pipe", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"},
          "validation": {"TrainingInputMode": "File"}, "extra": {"TrainingInputMode": "FastFile"}})",
      "idc.json", "/opt/ml/input/data");
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  ASSERT_EQ(ch->size(), 3u);
  EXPECT_EQ((*ch)[0].mode, InputMode::kPipe);
  EXPECT_EQ((*ch)[0].dir, "/opt/ml/input/data/train");
  EXPECT_EQ((*ch)[1].mode, InputMode::kFile);
  EXPECT_EQ((*ch)[2].mode, InputMode::kFastFile);
  Status s = ParseInputDataConfig(R"({"train": {"TrainingInputMode": "Stream"}})", "idc.json", "/d").status();
  EXPECT_NE(s.ToString().find("channel \"train\": TrainingInputMode \"Stream\" is not File, Pipe or FastFile"),
            std::string::npos);
}

TEST(LoadContract, FilesUnderRootAndSmEnvironment) {
  const std::string root = testing::TestTempDir("launch_config", "contract");
  std::filesystem::create_directories(root + "/input/config");
  std::filesystem::create_directories(root + "/input/data/train");
  std::ofstream(root + "/input/config/resourceconfig.json") << kHetero;
  std::ofstream(root + "/input/config/hyperparameters.json") << R"({"epochs": "1"})";
  std::ofstream(root + "/input/config/inputdataconfig.json") << R"({"train": {"TrainingInputMode": "File"}})";
  std::ofstream(root + "/input/data/train/b.libsvm") << "1 1:1\n";
  std::ofstream(root + "/input/data/train/a.libsvm") << "0 1:1\n";
  std::ofstream(root + "/input/data/train/.hidden") << "x\n";
  std::map<std::string, std::string> env{{"SM_MODEL_DIR", "/elsewhere/model"}};
  auto lookup = [&env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  StatusOr<Contract> c = LoadContract(root, lookup);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->resources.current_host, "algo-2");
  EXPECT_EQ(c->hyperparameters.size(), 1u);
  EXPECT_EQ(c->model_dir, "/elsewhere/model");
  EXPECT_EQ(c->output_data_dir, root + "/output/data");
  ASSERT_EQ(c->channels.size(), 1u);
  StatusOr<std::vector<std::string>> files = ChannelFiles(c->channels[0]);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{root + "/input/data/train/a.libsvm", root + "/input/data/train/b.libsvm"}));
  env["SM_CURRENT_HOST"] = "algo-1";
  EXPECT_NE(LoadContract(root, lookup).status().ToString().find("SM_CURRENT_HOST \"algo-1\" disagrees"),
            std::string::npos);
  EXPECT_EQ(LoadContract(root + "/none", nullptr).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ctrain::launch
