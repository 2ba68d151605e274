// examples/bars/*.toml (the BARS Criteo_x1 recipes): every file loads as a
// `--config` file, its options pass the option schema (types, the model kinds
// that read them, the modes of a local run), and it carries the benchmark's
// recipe (reduce on plateau and early stopping on AUC). For a model that
// ctrain registers (model::ModelKinds()) the whole configuration resolves and
// validates and the model builds; a model not registered yet is checked
// against the schema alone and named, so the test turns strict once it lands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ctrain/job/config_file.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_job.h"
#include "ctrain/job/train_steps.h"
#include "ctrain/model/model.h"

namespace ctrain::job {
namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(CTRAIN_SOURCE_DIR) + "/examples/bars";

std::vector<std::string> Examples() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(BarsExamples, OneFilePerModelOfTheZoo) {
  std::set<std::string> names;
  for (const std::string& f : Examples()) names.insert(fs::path(f).stem().string());
  EXPECT_EQ(names, (std::set<std::string>{"dcn", "dcn_v2", "deepfm", "dlrm", "fm", "lr", "wide_deep", "xdeepfm"}));
}

TEST(BarsExamples, EveryFileIsAValidConfigWithTheBenchmarksRecipe) {
  const std::vector<std::string>& kinds = model::ModelKinds();
  std::vector<std::string> pending;
  for (const std::string& path : Examples()) {
    SCOPED_TRACE(path);
    TrainJobOptions o;
    ExplicitOptions given;
    const Status st = ApplyTrainConfigFile(path, &o, &given);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // The file is named after its model and names its source.
    EXPECT_EQ(o.model, fs::path(path).stem().string());
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    EXPECT_NE(text.str().find("reczoo/BARS ranking/ctr/"), std::string::npos) << "the source file is not named";
    // The options against the schema: the model kinds that read them, the modes of a local run.
    const nlohmann::ordered_json values = EffectiveTrainOptions(o);
    const bool registered = std::find(kinds.begin(), kinds.end(), o.model) != kinds.end();
    if (registered) {
      const Status models = CheckOptionModels(values, o.model);
      EXPECT_TRUE(models.ok()) << models.ToString();
    } else {  // CheckOptionModels refuses an unknown kind first: the schema's model lists directly
      for (auto it = values.begin(); it != values.end(); ++it) {
        const OptionSpec* spec = FindTrainOption(it.key());
        ASSERT_NE(spec, nullptr) << it.key();
        if (!spec->models.empty()) {
          EXPECT_NE(std::find(spec->models.begin(), spec->models.end(), o.model), spec->models.end())
              << spec->flag() << " is not read by --model " << o.model;
        }
      }
    }
    const Status modes = CheckOptionModes(values, RunModes(o, false, false));
    EXPECT_TRUE(modes.ok()) << modes.ToString();
    // The benchmark's recipe.
    EXPECT_EQ(o.lr_decay, "plateau");
    EXPECT_EQ(o.train_options.lr_plateau_metric, "auc");
    EXPECT_EQ(o.train_options.lr_plateau_patience, 0);
    EXPECT_EQ(o.train_options.lr_plateau_factor, 0.1);
    EXPECT_EQ(o.train_options.lr_plateau_min_lr, 1e-6);
    EXPECT_EQ(o.train_options.early_stopping_metric, "auc");
    EXPECT_EQ(o.train_options.early_stopping_patience, 2);
    EXPECT_TRUE(o.train_options.keep_best);
    EXPECT_EQ(o.optimizer, "adam");
    EXPECT_EQ(o.train_options.batch_size, 4096);
    EXPECT_EQ(o.data.field_size, 39);
    if (!registered) {
      pending.push_back(o.model);
      continue;
    }
    // A registered model: the job resolves every option and the model builds.
    StatusOr<std::unique_ptr<DistributedRun>> dist = DistributedRun::Start(o);
    ASSERT_TRUE(dist.ok()) << dist.status().ToString();
    TrainRun run(o, **dist);
    Status s = ResolveModelOptions(run);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = ResolveRunOptions(run);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = run.o.Validate();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(run.o.lr_plateau());
    StatusOr<std::unique_ptr<model::Model>> m = model::MakeModel(run.o.model);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE((*m)->status().ok()) << (*m)->status().ToString();
  }
  for (const std::string& k : pending)
    std::printf("examples/bars/%s.toml: model '%s' is not registered in this build (model::ModelKinds()): checked "
                "against the option schema only\n", k.c_str(), k.c_str());
}

}  // namespace
}  // namespace ctrain::job
