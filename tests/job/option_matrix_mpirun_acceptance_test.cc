// The option matrix under mpirun: every option of `ctrain train`, walked from
// the option schema (job/option_schema.h) with the probes of
// option_matrix_acceptance_test.cc, run as `mpirun -np 2 ctrain train` (memory
// mode, two ranks) with the option given as a CLI flag. An option the schema
// lists for mpirun must show its effect (a figure of --metrics-json changes,
// stays bit-equal, an output appears, or the run fails naming it); any other
// must be refused at start naming the option and the mode. Skipped when
// mpirun is not installed.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "ctrain/job/option_schema.h"
#include "dist/mpi_harness.h"
#include "job/option_probes.h"
#include "testing/temp_dir.h"

namespace ctrain::job {
namespace {

using namespace matrix;  // option_probes.h

struct Outcome {
  int exit_code = 0;
  std::string out;      // the run's output (rank 0 first)
  std::string figures;  // from --metrics-json
};

class OptionMatrixMpirun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ctrain::testing::HaveMpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
    root_ = ctrain::testing::TestTempDir("option_matrix_mpirun", "data");
    WriteRows(root_ + "/train.libsvm", 500, 1);
    WriteRows(root_ + "/valid.libsvm", 200, 2);
    // The model warm starts begin from, trained locally.
    const ctrain::testing::RunResult r = ctrain::testing::RunCtrain("train" + Flags(Common()) + " --model-dir " + root_ + "/warm");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }

  json Common() const {
    return {{"train", {root_ + "/train.libsvm"}}, {"valid", {root_ + "/valid.libsvm"}}, {"field_size", 4},
            {"feature_size", 64},   {"embedding_size", 4},  {"deep_layers", {8}},
            {"dropout", 0.2},       {"learning_rate", 0.01}, {"batch_size", 64},
            {"epochs", 2},          {"progress", "none"},   {"intra_op_parallelism_threads", 1},
            {"input_mode", "memory"}};
  }

  // The options as `ctrain train` flags, through the schema's texts.
  static std::string Flags(const json& options) {
    std::string out;
    for (auto it = options.begin(); it != options.end(); ++it) {
      const OptionSpec* s = FindTrainOption(it.key());
      EXPECT_NE(s, nullptr) << it.key();
      if (s == nullptr) continue;
      StatusOr<json> v = CoerceOptionValue(*s, it.value());
      EXPECT_TRUE(v.ok()) << v.status().ToString();
      if (!v.ok()) continue;
      for (const std::string& t : OptionTexts(*s, *v)) out += " '" + s->flag() + "=" + t + "'";
    }
    return out;
  }

  Outcome Run(const json& extra, const std::string& name) {
    const std::string dir = root_ + "/" + std::to_string(runs_++) + "-" + name;
    fs::create_directories(dir);
    std::ofstream(dir + "/lr.json") << R"({"l2_reg": 0.05})";
    std::ofstream(dir + "/vocab.txt") << "a 0\n";
    std::ofstream(dir + "/spec.json") << "{}";
    json o = Common();
    for (auto it = extra.begin(); it != extra.end(); ++it) o[it.key()] = Placed(it.value(), dir);
    KeepOptionsTheModelReads(&o, extra);
    if (!o.contains("metrics_json")) o["metrics_json"] = dir + "/metrics.json";
    const ctrain::testing::RunResult r =
        ctrain::testing::Shell(ctrain::testing::Mpirun(2, 180) + "train" + Flags(o) + " 2>&1");
    last_dir_ = dir;
    Outcome out{r.exit_code, r.out, ""};
    std::ifstream mj(o["metrics_json"].get<std::string>());
    if (r.exit_code == 0 && mj) {
      const json m = json::parse(mj, nullptr, false);
      if (m.is_object())
        for (const char* k : {"steps", "examples", "train_loss", "auc", "logloss", "gauc", "early_stopped"})
          out.figures += std::string(k) + "=" + (m.contains(k) ? m[k].dump() : "-") + " ";
    }
    return out;
  }

  std::string root_, last_dir_;
  int runs_ = 0;
};

TEST_F(OptionMatrixMpirun, EveryOptionIsHonouredOrRefusedByName) {
  const ModeSet modes = TrainMode::kLocalMemory | TrainMode::kMpirun;
  std::map<std::string, Outcome> bases;
  int honoured = 0, refused = 0, in_base = 0;
  for (const OptionSpec& s : TrainOptionSchema()) {
    const Probe& p = Probes().at(s.name);
    const bool supported = (s.modes & modes) == modes && (s.needs == 0 || (s.needs & modes) != 0);
    if (p.value.is_null() || (p.expect == Expect::kBase && supported)) {
      ++in_base;
      continue;
    }
    SCOPED_TRACE(s.name + " under mpirun");
    if (!supported) {
      Outcome o = Run({{s.name, p.value}}, s.name);
      ASSERT_NE(o.exit_code, 0) << s.flag() << " ran under mpirun:\n" << o.out;
      EXPECT_NE(o.out.find(s.flag()), std::string::npos) << o.out;
      EXPECT_TRUE(o.out.find("mpirun") != std::string::npos || o.out.find("local memory") != std::string::npos)
          << o.out;
      ++refused;
      continue;
    }
    const json extra = p.mpirun_extra.value_or(p.extra);
    const Expect expect = p.mpirun_expect.value_or(p.expect);
    json probe = extra;
    for (auto it = p.with.begin(); it != p.with.end(); ++it) probe[it.key()] = it.value();
    probe[s.name] = p.value;
    const std::string key = extra.dump();
    if (!bases.count(key)) bases[key] = Run(extra, s.name + "-base");
    const Outcome& b = bases[key];
    const std::string base_dir = last_dir_;
    ASSERT_EQ(b.exit_code, 0) << b.out;
    Outcome o = Run(probe, s.name);
    switch (expect) {
      case Expect::kChanges:
        ASSERT_EQ(o.exit_code, 0) << o.out;
        EXPECT_NE(o.figures, b.figures) << s.flag() << " changed nothing";
        break;
      case Expect::kSame:
        ASSERT_EQ(o.exit_code, 0) << o.out;
        EXPECT_EQ(o.figures, b.figures);
        break;
      case Expect::kRuns:
        EXPECT_EQ(o.exit_code, 0) << o.out;
        break;
      case Expect::kOutput:
        ASSERT_EQ(o.exit_code, 0) << o.out;
        EXPECT_TRUE(p.check(last_dir_)) << s.flag() << ": its output is not there";
        if (!extra.contains("model_dir")) {
          EXPECT_FALSE(p.check(base_dir));
        }
        break;
      case Expect::kFails:
        ASSERT_NE(o.exit_code, 0) << s.flag() << " had no effect (" << o.figures << ")";
        EXPECT_NE(o.out.find(p.text), std::string::npos) << o.out;
        break;
      case Expect::kBase:
        break;
    }
    ++honoured;
  }
  std::printf("option matrix: mpirun (2 ranks, memory): %d honoured, %d refused, %d set by every run or the mode "
              "itself\n", honoured, refused, in_base);
}

}  // namespace
}  // namespace ctrain::job
