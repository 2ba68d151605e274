// launch/ps_layout.h: TF_CONFIG's parameter-server layout and SageMaker's.
#include "ctrain/launch/ps_layout.h"

#include <gtest/gtest.h>

#include <string>

namespace ctrain::launch {
namespace {

StatusOr<std::optional<PsLayout>> Read(const std::string& tf_config) {
  return ReadTfConfig([&](const char* name) -> const char* {
    return std::string(name) == "TF_CONFIG" ? tf_config.c_str() : nullptr;
  });
}

std::string Error(const std::string& tf_config) {
  StatusOr<std::optional<PsLayout>> l = Read(tf_config);
  return l.ok() ? "" : l.status().ToString();
}

constexpr const char* kCluster =
    R"("cluster": {"chief": ["c:1"], "worker": ["w0:2", "w1:3"], "ps": ["p0:4", "[::1]:5"]})";

TEST(PsLayoutTest, TfConfigTasksBecomeWorkersAndShards) {
  auto task = [](const std::string& type, int index) {
    return std::string("{") + kCluster + R"(, "task": {"type": ")" + type + R"(", "index": )" + std::to_string(index) + "}}";
  };
  StatusOr<std::optional<PsLayout>> chief = Read(task("chief", 0));
  ASSERT_TRUE(chief.ok() && chief->has_value()) << chief.status().ToString();
  EXPECT_EQ((*chief)->source, "TF_CONFIG");
  EXPECT_EQ((*chief)->servers, (std::vector<std::string>{"p0:4", "[::1]:5"}));
  EXPECT_EQ((*chief)->num_workers, 3);
  EXPECT_EQ((*chief)->worker_index, 0);
  EXPECT_EQ((*chief)->shard, -1);
  StatusOr<std::optional<PsLayout>> w1 = Read(task("worker", 1));
  ASSERT_TRUE(w1.ok()) << w1.status().ToString();
  EXPECT_EQ((*w1)->worker_index, 2);  // after the chief
  StatusOr<std::optional<PsLayout>> ps1 = Read(task("ps", 1));
  ASSERT_TRUE(ps1.ok()) << ps1.status().ToString();
  EXPECT_EQ((*ps1)->shard, 1);
  EXPECT_EQ((*ps1)->worker_index, -1);
  EXPECT_EQ((*ps1)->listen_host, "::1");
  EXPECT_EQ((*ps1)->listen_port, 5);
  // "master" is the chief's older name.
  StatusOr<std::optional<PsLayout>> master =
      Read(R"({"cluster": {"master": ["m:1"], "ps": ["p:2"]}, "task": {"type": "master", "index": 0}})");
  ASSERT_TRUE(master.ok()) << master.status().ToString();
  EXPECT_EQ((*master)->worker_index, 0);
  EXPECT_EQ((*master)->num_workers, 1);
  // Unset or empty: no layout.
  StatusOr<std::optional<PsLayout>> none = Read("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(PsLayoutTest, TfConfigErrorsNameTheProblem) {
  EXPECT_NE(Error("{not json").find("TF_CONFIG is not a JSON object"), std::string::npos);
  EXPECT_NE(Error(R"({"task": {"type": "ps", "index": 0}})").find("no \"cluster\" object"), std::string::npos);
  EXPECT_NE(Error(std::string("{") + kCluster + "}").find("no \"task\" object"), std::string::npos);
  EXPECT_NE(Error(R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0}})")
                .find("cluster has no \"ps\": not a parameter-server job"),
            std::string::npos);
  EXPECT_NE(Error(std::string("{") + kCluster + R"(, "task": {"type": "worker", "index": 2}})")
                .find("task worker index 2 is not in [0, 2)"),
            std::string::npos);
  EXPECT_NE(Error(std::string("{") + kCluster + R"(, "task": {"type": "evaluator", "index": 0}})")
                .find("task type \"evaluator\" is not run by ctrain launch"),
            std::string::npos);
  EXPECT_NE(Error(std::string("{") + kCluster + R"(, "task": {"type": "boss", "index": 0}})")
                .find("task type \"boss\" is none of chief, master, worker, ps"),
            std::string::npos);
  EXPECT_NE(Error(R"({"cluster": {"chief": ["a:1"], "master": ["b:1"], "ps": ["p:2"]}, "task": {"type": "chief", "index": 0}})")
                .find("2 chiefs"),
            std::string::npos);
  EXPECT_NE(Error(R"({"cluster": {"ps": ["p"]}, "task": {"type": "ps", "index": 0}})").find("TF_CONFIG cluster.ps"),
            std::string::npos);
  EXPECT_NE(Error(std::string("{") + kCluster + R"(, "task": {"type": "ps", "index": "0"}})")
                .find("task.index is not a whole number"),
            std::string::npos);
}

TEST(PsLayoutTest, SageMakerRunsAServerAndAWorkerOnEveryHost) {
  const PsLayout l = SageMakerPsLayout({"algo-1", "algo-2", "algo-3"}, {"10.0.0.1", "10.0.0.2", "10.0.0.3"}, "algo-2", 2223);
  EXPECT_EQ(l.source, "resourceconfig.json");
  EXPECT_EQ(l.servers, (std::vector<std::string>{"10.0.0.1:2223", "10.0.0.2:2223", "10.0.0.3:2223"}));
  EXPECT_EQ(l.num_workers, 3);
  EXPECT_EQ(l.shard, 1);
  EXPECT_EQ(l.worker_index, 1);
  EXPECT_EQ(l.listen_host, "10.0.0.2");
  EXPECT_EQ(l.listen_port, 2223);
}

}  // namespace
}  // namespace ctrain::launch
