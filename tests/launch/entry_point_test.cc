// launch/entry_point.h: a user's script in the trainer role. Where it is found, how it is run,
// and what it is told (tests/python/test_sagemaker_contract.py compares the variables with the
// SageMaker training toolkit's own).
#include "ctrain/launch/entry_point.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "testing/temp_dir.h"

namespace ctrain::launch {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

class EntryPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::TestTempDir("entry_point", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ + "/code");
    std::ofstream(root_ + "/code/train.py") << "print('hi')\n";
    c_.root = root_;
    c_.model_dir = root_ + "/model";
    c_.output_data_dir = root_ + "/output/data";
    c_.resources.hosts = {"algo-1"};
    c_.resources.current_host = "algo-1";
    o_.python = "/usr/bin/env";  // any executable stands in for the interpreter
  }
  MappedHyperparameters Hp(const Hyperparameters& h, bool entry_point = false) {
    StatusOr<MappedHyperparameters> m = MapHyperparameters(h, "hp.json", entry_point);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return *m;
  }
  std::string Error(const MappedHyperparameters& hp) {
    StatusOr<EntryPoint> e = ResolveEntryPoint(c_, hp, o_);
    return e.ok() ? "" : e.status().ToString();
  }
  std::string root_;
  Contract c_;
  LaunchOptions o_;
};

TEST_F(EntryPointTest, NoneWithoutAProgramOrAnEntryPoint) {
  StatusOr<EntryPoint> e = ResolveEntryPoint(c_, Hp({{"epochs", "2"}}), o_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->argv.empty());
}

TEST_F(EntryPointTest, SageMakerProgramRunsInItsCodeDirectoryWithTheHyperparametersAsArguments) {
  // An s3:// source_dir: the toolkit extracts it to <root>/code; so must the image.
  StatusOr<EntryPoint> e = ResolveEntryPoint(
      c_, Hp({{"sagemaker_program", "\"train.py\""}, {"sagemaker_submit_directory", "\"s3://b/k/source.tar.gz\""},
              {"lr", "0.001"}, {"epochs", "3"}, {"layers", "[64, 32]"}, {"opt", "\"adam\""}, {"bn", "true"},
              {"x", "1.0"}, {"names", "[\"a\", \"b'c\"]"}, {"kw", "{\"b\": 2, \"a\": \"z\"}"}}),
      o_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->dir, root_ + "/code");
  EXPECT_EQ(e->name, "train.py");
  EXPECT_EQ(e->user_entry_point, "train.py");
  EXPECT_EQ(e->module_dir, "s3://b/k/source.tar.gz");
  // mapping.to_cmd_args: sorted keys, Python's str() of each value, "-x" for a one-letter key.
  const Args user{"--bn", "True", "--epochs", "3", "--kw", "a=z,b=2", "--layers", "[64, 32]", "--lr", "0.001",
                  "--names", "['a', \"b'c\"]", "--opt", "adam", "-x", "1.0"};
  EXPECT_EQ(e->user_args, user);
  Args argv{"/usr/bin/env", root_ + "/code/train.py"};
  argv.insert(argv.end(), user.begin(), user.end());
  EXPECT_EQ(e->argv, argv);
}

TEST_F(EntryPointTest, LocalModesSubmitDirectoryAndEntryPointWithItsOwnArguments) {
  fs::create_directories(root_ + "/src");
  std::ofstream(root_ + "/src/run.sh") << "echo hi\n";
  StatusOr<EntryPoint> e = ResolveEntryPoint(
      c_, Hp({{"sagemaker_program", "\"run.sh\""}, {"sagemaker_submit_directory", "\"file://" + root_ + "/src\""}}), o_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->argv, (Args{"/bin/sh", root_ + "/src/run.sh"}));
  EXPECT_EQ(e->dir, root_ + "/src");
  // --entry-point: its arguments first, then the hyperparameters'; run where the launcher runs.
  o_.entry_point = {root_ + "/code/train.py", "--steps", "5"};
  e = ResolveEntryPoint(c_, Hp({{"lr", "0.5"}}, true), o_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->argv, (Args{"/usr/bin/env", root_ + "/code/train.py", "--steps", "5", "--lr", "0.5"}));
  EXPECT_EQ(e->dir, "");
  EXPECT_EQ(e->module_dir, root_ + "/code");
}

TEST_F(EntryPointTest, MissingOrContradictoryEntryPointsAreRefusedByName) {
  EXPECT_NE(Error(Hp({{"sagemaker_program", "\"nope.py\""}, {"sagemaker_submit_directory", "\"s3://b/s.tar.gz\""}}))
                .find("sagemaker_program \"nope.py\": " + root_ + "/code/nope.py is not a file (sagemaker_submit_directory "
                      "s3://b/s.tar.gz: ctrain launch downloads no code; the image must hold it in " + root_ + "/code)"),
            std::string::npos);
  EXPECT_NE(Error(Hp({{"sagemaker_program", "\"train.py\""}, {"sagemaker_submit_directory", "\"/no/such/dir\""}}))
                .find("hyperparameter sagemaker_submit_directory \"/no/such/dir\" is not a directory here"),
            std::string::npos);
  o_.entry_point = {root_ + "/code/train.py"};
  EXPECT_NE(Error(Hp({{"sagemaker_program", "\"train.py\""}}))
                .find("and the hyperparameter sagemaker_program \"train.py\" both name the script to run: give one"),
            std::string::npos);
  o_.entry_point = {root_ + "/missing.py"};
  EXPECT_NE(Error(Hp({}, true)).find("--entry-point " + root_ + "/missing.py: no such file"), std::string::npos);
  std::ofstream(root_ + "/tool") << "x";  // neither .py, .sh nor executable
  o_.entry_point = {root_ + "/tool"};
  EXPECT_NE(Error(Hp({}, true)).find(root_ + "/tool is not executable"), std::string::npos);
  o_.entry_point = {root_ + "/code/train.py"};
  o_.python = "no-such-python-here";
  EXPECT_NE(Error(Hp({}, true)).find("is a Python script, but no-such-python-here is not on PATH (--python)"),
            std::string::npos);
}

TEST_F(EntryPointTest, TheScriptIsToldTheJobAndTheDataService) {
  std::ofstream(root_ + "/code/x") << "";
  fs::create_directories(root_ + "/input/config");
  std::ofstream(root_ + "/input/config/inputdataconfig.json") << R"({"valid": {"TrainingInputMode": "File"},
      "train": {"TrainingInputMode": "File"}})";
  std::ofstream(root_ + "/input/config/resourceconfig.json") << R"({"current_host": "algo-1", "hosts": ["algo-1"],
      "current_group_name": "gpu", "instance_groups": [{"instance_group_name": "gpu", "hosts": ["algo-1"]},
      {"instance_group_name": "cpu", "hosts": ["algo-2"]}]})";
  c_.resources.current_group = "gpu";
  const MappedHyperparameters hp = Hp({{"sagemaker_program", "\"train.py\""}, {"lr", "0.5"}, {"data_group", "\"cpu\""}});
  StatusOr<EntryPoint> e = ResolveEntryPoint(c_, hp, o_);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : ScriptEnvironment(c_, hp, *e, "job-7", "10.0.0.1:5050", "/opt/ml/input/data/train"))
    EXPECT_TRUE(env.emplace(k, v).second) << k << " twice";
  EXPECT_EQ(env["SM_HOSTS"], R"(["algo-1"])");
  EXPECT_EQ(env["SM_CURRENT_INSTANCE_GROUP"], "gpu");
  EXPECT_EQ(env["SM_INSTANCE_GROUPS"], R"(["gpu","cpu"])");
  EXPECT_EQ(env["SM_CURRENT_INSTANCE_GROUP_HOSTS"], R"(["algo-1"])");
  EXPECT_EQ(env["SM_IS_HETERO"], "true");
  EXPECT_EQ(env["SM_HPS"], R"({"data_group":"cpu","lr":0.5})");
  EXPECT_EQ(env["SM_HP_LR"], "0.5");
  EXPECT_EQ(env["SM_HP_DATA_GROUP"], "cpu");
  EXPECT_EQ(env["SM_USER_ARGS"], R"(["--data_group","cpu","--lr","0.5"])");
  EXPECT_EQ(env["SM_CHANNELS"], R"(["train","valid"])");
  EXPECT_EQ(env["SM_CHANNEL_VALID"], root_ + "/input/data/valid");
  EXPECT_EQ(env["SM_MODEL_DIR"], root_ + "/model");
  EXPECT_EQ(env["SM_LOG_LEVEL"], "20");
  EXPECT_EQ(env["CTRAIN_DATA_SERVICE"], "10.0.0.1:5050");
  EXPECT_EQ(env["CTRAIN_DATA_SERVICE_TRAIN"], "/opt/ml/input/data/train");
  EXPECT_EQ(env["CTRAIN_TRAINING_JOB_NAME"], "job-7");
  // A homogeneous job has no data service to name.
  env.clear();
  for (const auto& [k, v] : ScriptEnvironment(c_, hp, *e, "job-7", "", "")) env.emplace(k, v);
  EXPECT_EQ(env.count("CTRAIN_DATA_SERVICE"), 0u);
}

TEST(PythonArgText, PythonsStrOfTheDecodedValue) {
  using nlohmann::json;
  EXPECT_EQ(PythonArgText(json(3)), "3");
  EXPECT_EQ(PythonArgText(json(2.0)), "2.0");
  EXPECT_EQ(PythonArgText(json(0.001)), "0.001");
  EXPECT_EQ(PythonArgText(json(false)), "False");
  EXPECT_EQ(PythonArgText(json(nullptr)), "");
  EXPECT_EQ(PythonArgText(json::parse(R"([1, "a", true, null, {"k": [2]}])")), "[1, 'a', True, None, {'k': [2]}]");
}

}  // namespace
}  // namespace ctrain::launch
