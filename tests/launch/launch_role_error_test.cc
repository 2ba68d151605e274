// `ctrain launch --local-cluster` with a hyperparameter whose VALUE the trainer
// rejects: output/failure (docs/launch.md) names the flag and the reason, not
// only the exit status, also when the role's error line (CLI11's) has no
// "ctrain: " prefix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_harness.h"
#include "testing/temp_dir.h"

namespace ctrain::testing {
namespace {

TEST(LaunchRoleError, BadHyperparameterValueNamesTheFlagInOutputFailure) {
  const std::string d = TestTempDir("launch_role_error", "bad_value");
  std::ofstream(d + "/tr.libsvm") << "1 1:1 2:1\n0 1:1 3:1\n";
  std::ofstream(d + "/t.toml") << "[[group]]\nname = \"train\"\ninstance_type = \"ml.m5.xlarge\"\ncount = 1\n"
                               << "[hyperparameters]\nlearning_rate = \"abc\"\n"
                               << "[channels.train]\nmode = \"File\"\nfiles = [\"" << d << "/tr.libsvm\"]\n";
  RunResult r = Shell("timeout 60 " + kCtrain + " launch --local-cluster t.toml --work-dir run", d);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // Typed through the option schema before any role starts: the launcher's own error.
  const std::string why = "hyperparameter \"learning_rate\" (value \"abc\"): --learning-rate: expected a number, got 'abc'";
  const std::string failure = Slurp(d + "/run/algo-1/output/failure");
  EXPECT_NE(failure.find("input/config/hyperparameters.json: " + why), std::string::npos) << failure;
  EXPECT_NE(r.out.find("failed: algo-1 (status 1): InvalidArgument: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
  fs::remove_all(d);
}

}  // namespace
}  // namespace ctrain::testing
