// The local-cluster spec (docs/launch.md#local-clusters) and the process
// supervisor the launcher runs its roles with.
#include "ctrain/launch/local_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ctrain/launch/supervisor.h"
#include "testing/temp_dir.h"

namespace ctrain::launch {
namespace {

using namespace std::chrono_literals;

TEST(LocalClusterSpec, GroupsHyperparametersAndChannels) {
  const std::string dir = testing::TestTempDir("local_cluster", "spec");
  std::ofstream(dir + "/tr.libsvm") << "1 1:1\n";
  std::filesystem::create_directories(dir + "/va");
  std::ofstream(dir + "/va/b.libsvm") << "0 1:1\n";
  std::ofstream(dir + "/va/a.libsvm") << "1 1:1\n";
  StatusOr<LocalClusterSpec> s = ParseLocalClusterSpec(
      "[[group]]\nname = \"data\"\ninstance_type = \"ml.c5.xlarge\"\ncount = 2\n"
      "[[group]]\nname = \"train\"\ninstance_type = \"ml.g5.xlarge\"\ncount = 1\n"
      "[hyperparameters]\ndata_group = \"data\"\nepochs = 3\nlearning_rate = 0.001\nbatch_norm = true\n"
      "[channels.train]\nmode = \"Pipe\"\nfiles = [\"tr.libsvm\"]\n"
      "[channels.validation]\nfiles = [\"va\"]\n",
      dir + "/spec.toml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->groups.size(), 2u);
  EXPECT_EQ(s->groups[0].count, 2);
  EXPECT_EQ(s->groups[1].instance_type, "ml.g5.xlarge");
  // Written to hyperparameters.json as strings (toml++ keeps a table's keys sorted).
  EXPECT_EQ(s->hyperparameters, (Hyperparameters{{"batch_norm", "true"}, {"data_group", "data"}, {"epochs", "3"},
                                                 {"learning_rate", "0.001"}}));
  ASSERT_EQ(s->channels.size(), 2u);
  EXPECT_EQ(s->channels[0].mode, InputMode::kPipe);
  EXPECT_EQ(s->channels[0].files, std::vector<std::string>{dir + "/tr.libsvm"});
  EXPECT_EQ(s->channels[1].mode, InputMode::kFile);  // the default
  EXPECT_EQ(s->channels[1].files, (std::vector<std::string>{dir + "/va/a.libsvm", dir + "/va/b.libsvm"}));
}

TEST(LocalClusterSpec, ErrorsNameTheKey) {
  auto err = [](const std::string& toml) { return ParseLocalClusterSpec(toml, "/x/s.toml").status().ToString(); };
  EXPECT_NE(err("").find("/x/s.toml: no [[group]]"), std::string::npos);
  EXPECT_NE(err("[[group]]\nname = \"a\"\ninstance_type = \"t\"\ncount = 0\n").find("group 1: \"count\" must be"),
            std::string::npos);
  EXPECT_NE(err("[[group]]\nname = \"a\"\ninstance_type = \"t\"\ncount = 1\ncores = 2\n").find("unknown key \"cores\""),
            std::string::npos);
  EXPECT_NE(err("[[group]]\nname = \"a\"\ninstance_type = \"t\"\ncount = 1\n[channels.train]\nmode = \"Stream\"\n"
                "files = [\"x\"]\n")
                .find("channels.train.mode \"Stream\" is not File, Pipe or FastFile"),
            std::string::npos);
  EXPECT_NE(err("[[group]]\nname = \"a\"\ninstance_type = \"t\"\ncount = 1\n[channels.train]\nfiles = [\"/nope\"]\n")
                .find("/nope does not exist"),
            std::string::npos);
  EXPECT_NE(err("[[group]]\nname = \"a\"\n").find("\"instance_type\" (a string) is missing"), std::string::npos);
  EXPECT_NE(err("[[group]\n").find("not TOML (line 1)"), std::string::npos);
  EXPECT_NE(err("[[group]]\nname = \"a\"\ninstance_type = \"t\"\ncount = 1\n[oops]\n").find("unknown key \"oops\""),
            std::string::npos);
}

// Each example is self-contained: running its comment's `build/ctrain synth ...` commands (here
// with the data folder /tmp/ctrain-example moved to a scratch dir) makes every file its channels
// read, and those files lie outside the repository.
TEST(LocalClusterSpec, ExamplesSayHowToMakeTheirDataOutsideTheRepository) {
  const std::string src = std::filesystem::weakly_canonical(CTRAIN_SOURCE_DIR).string();
  const std::string scratch = testing::TestTempDir("local_cluster_examples", "data");
  auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
    return s;
  };
  for (const char* name : {"local-cluster-homogeneous.toml", "local-cluster-heterogeneous.toml"}) {
    SCOPED_TRACE(name);
    std::filesystem::remove_all(scratch);
    std::filesystem::create_directories(scratch);
    const std::string path = src + "/examples/" + name;
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_NE(text.find("/tmp/ctrain-example/"), std::string::npos);
    text = replace_all(text, "/tmp/ctrain-example/", scratch + "/");
    std::istringstream lines(text);
    int synths = 0;
    for (std::string line; std::getline(lines, line);)
      if (size_t p = line.find("build/ctrain synth "); line.rfind("#", 0) == 0 && p != std::string::npos) {
        const std::string cmd = std::string(CTRAIN_BINARY) + line.substr(p + 12) + " 2>/dev/null";
        EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
        ++synths;
      }
    EXPECT_EQ(synths, 2);
    StatusOr<LocalClusterSpec> spec = ParseLocalClusterSpec(text, path);  // checks that each file exists
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    ASSERT_EQ(spec->channels.size(), 2u);
    for (const LocalChannel& c : spec->channels)
      for (const std::string& f : c.files) EXPECT_EQ(f.rfind(scratch + "/", 0), 0u) << f;
    EXPECT_NE(text.find("build/ctrain launch --local-cluster examples/" + std::string(name)), std::string::npos);
  }
  std::filesystem::remove_all(scratch);
}

TEST(Supervisor, CapturesListeningAddressLastLineAndStatus) {
  Supervisor s;
  StatusOr<int> a = s.Start("server", {"/bin/sh", "-c",
                                       "echo 'ctrain: data-service worker listening on 127.0.0.1:4242'; "
                                       "echo 'ctrain: first' >&2; echo 'ctrain: bad thing happened' >&2; "
                                       "echo 'not a ctrain line' >&2; exit 3"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  StatusOr<std::string> addr = s.WaitListening(*a, 10s, nullptr);
  ASSERT_TRUE(addr.ok()) << addr.status().ToString();
  EXPECT_EQ(*addr, "127.0.0.1:4242");
  EXPECT_EQ(s.Wait(*a, 10s), 3);
  EXPECT_EQ(s.last_line(*a), "ctrain: bad thing happened");
  EXPECT_EQ(s.name(*a), "server");
}

// CLI11's own errors have no "ctrain: " prefix: the line before its usage footer is the reason.
TEST(Supervisor, LastLineIsACli11ErrorWithoutThePrefix) {
  Supervisor s;
  StatusOr<int> a = s.Start("trainer", {"/bin/sh", "-c",
                                        "echo 'ctrain: reading the data' >&2; echo 'epoch 1/2: step 3' >&2; "
                                        "echo 'Could not convert: --learning-rate = abc' >&2; "
                                        "echo 'Run with --help for more information.' >&2; exit 2"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(s.Wait(*a, 10s), 2);
  EXPECT_EQ(s.last_line(*a), "Could not convert: --learning-rate = abc");
}

// Each child leads its own process group: a signal to the launcher's group does not reach it.
TEST(Supervisor, ChildrenLeadTheirOwnProcessGroup) {
  Supervisor s;
  StatusOr<int> a = s.Start("sleeper", {"/bin/sleep", "30"});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(::getpgid(s.pid(*a)), s.pid(*a));
  EXPECT_NE(::getpgid(s.pid(*a)), ::getpgrp());
  s.Signal(*a, SIGTERM);
  EXPECT_EQ(s.Wait(*a, 10s), 128 + SIGTERM);
}

TEST(Supervisor, ExitBeforeListeningAndSignals) {
  Supervisor s;
  StatusOr<int> quit = s.Start("quitter", {"/bin/sh", "-c", "echo 'ctrain: no port' >&2; exit 1"});
  ASSERT_TRUE(quit.ok());
  Status st = s.WaitListening(*quit, 10s, nullptr).status();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.ToString().find("quitter exited with status 1 before listening: ctrain: no port"), std::string::npos)
      << st.ToString();
  StatusOr<int> sleeper = s.Start("sleeper", {"/bin/sleep", "30"});
  ASSERT_TRUE(sleeper.ok());
  EXPECT_FALSE(s.Exited(*sleeper));
  EXPECT_EQ(s.WaitListening(*sleeper, 50ms, nullptr).status().code(), StatusCode::kDeadlineExceeded);
  s.Signal(*sleeper, SIGTERM);
  EXPECT_EQ(s.Wait(*sleeper, 10s), 128 + SIGTERM);
  StatusOr<int> missing = s.Start("missing", {"/nonexistent/binary"});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(s.Wait(*missing, 10s), 127);
  EXPECT_NE(s.last_line(*missing).find("cannot execute /nonexistent/binary"), std::string::npos);
}

TEST(Supervisor, DestructorStopsWhatIsStillRunning) {
  pid_t pid;
  {
    Supervisor s;
    StatusOr<int> a = s.Start("sleeper", {"/bin/sleep", "30"});
    ASSERT_TRUE(a.ok());
    pid = s.pid(*a);
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: gone
}

}  // namespace
}  // namespace ctrain::launch
