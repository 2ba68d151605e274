// launch/host_plan.h LocalInputArgs: the `ctrain train` input flags of a host that reads its
// channels itself, Pipe channels per local rank included.
#include "ctrain/launch/host_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace ctrain::launch {
namespace {

namespace fs = std::filesystem;

Channel Pipe(const std::string& name) { return Channel{name, InputMode::kPipe, "/opt/ml/input/data/" + name, {}}; }

Contract With(std::vector<Channel> channels) {
  Contract c;
  c.root = "/opt/ml";
  c.channels = std::move(channels);
  return c;
}

std::string Error(const Contract& c, int32_t ranks_per_host) {
  StatusOr<std::vector<std::string>> a = LocalInputArgs(c, ranks_per_host);
  return a.ok() ? "" : a.status().ToString();
}

using Args = std::vector<std::string>;

TEST(LocalInputArgs, OnePipeTrainChannelForOneRankPerHost) {
  StatusOr<Args> a = LocalInputArgs(With({Pipe("train")}), 1);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, (Args{"--train", "pipe:/opt/ml/input/data/train"}));
}

TEST(LocalInputArgs, EachLocalRankReadsItsOwnPipeChannel) {
  // In any order in inputdataconfig.json: one flag naming the local-rank placeholder.
  for (int32_t n : {2, 3}) {
    std::vector<Channel> chs;
    for (int32_t k = n - 1; k >= 0; --k) chs.push_back(Pipe("train_" + std::to_string(k)));
    StatusOr<Args> a = LocalInputArgs(With(chs), n);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(*a, (Args{"--train", "pipe:/opt/ml/input/data/train_{local_rank}"}));
  }
}

TEST(LocalInputArgs, ValidationFilesBesideThePerRankChannels) {
  const std::string d = testing::TestTempDir("host_plan", "validation");
  fs::create_directories(d + "/validation");
  std::ofstream(d + "/validation/va.libsvm") << "1 1:1\n";
  StatusOr<Args> a =
      LocalInputArgs(With({Pipe("train_0"), Pipe("train_1"), Channel{"validation", InputMode::kFile, d + "/validation", {}}}), 2);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, (Args{"--valid", d + "/validation/va.libsvm", "--train", "pipe:/opt/ml/input/data/train_{local_rank}"}));
}

TEST(LocalInputArgs, PipeChannelsThatRanksCannotReadAreRefusedByName) {
  // One FIFO per channel and epoch cannot feed two ranks of a host.
  EXPECT_NE(Error(With({Pipe("train")}), 2).find(
                "distribution mpi processes_per_host 2: channel \"train\" is in Pipe mode, and SageMaker gives each "
                "host one FIFO per channel and epoch, which 2 ranks cannot share: give one Pipe channel per local "
                "rank (train_0 .. train_1; each rank reads train_{local_rank})"),
            std::string::npos);
  // A local rank without its channel.
  EXPECT_NE(Error(With({Pipe("train_0"), Pipe("train_2")}), 3).find(
                "no channel \"train_1\": with distribution mpi processes_per_host 3 every local rank reads its own Pipe "
                "channel (train_0 .. train_2)"),
            std::string::npos);
  // A channel for a rank the host does not run.
  EXPECT_NE(Error(With({Pipe("train_0"), Pipe("train_1"), Pipe("train_2")}), 2).find(
                "channel \"train_2\" is local rank 2's Pipe channel (train_0 .. train_1 for distribution mpi "
                "processes_per_host 2), but a host runs ranks 0 .. 1"),
            std::string::npos);
  // Per-rank channels with one rank per host.
  EXPECT_NE(Error(With({Pipe("train_0")}), 1).find("but processes_per_host is 1: name the channel train"),
            std::string::npos);
  // Per-rank channels in File mode: the ranks share one train channel out instead.
  EXPECT_NE(Error(With({Pipe("train_0"), Channel{"train_1", InputMode::kFastFile, "/x", {}}}), 2).find(
                "but it is in FastFile mode: in File or FastFile mode give one train channel"),
            std::string::npos);
  // Both kinds at once.
  const std::string d = testing::TestTempDir("host_plan", "both");
  fs::create_directories(d + "/train");
  std::ofstream(d + "/train/tr.libsvm") << "1 1:1\n";
  EXPECT_NE(Error(With({Pipe("train_0"), Pipe("train_1"), Channel{"train", InputMode::kFile, d + "/train", {}}}), 2)
                .find("channels \"train\" and train_0 .. train_1 both hold training data"),
            std::string::npos);
  // A name that only looks like one is an unknown channel.
  EXPECT_NE(Error(With({Pipe("train_x")}), 2).find("channel \"train_x\" has no ctrain input (channels: train, validation)"),
            std::string::npos);
}

}  // namespace
}  // namespace ctrain::launch
