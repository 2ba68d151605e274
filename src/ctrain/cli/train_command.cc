// `ctrain train`, `ctrain eval`, `ctrain predict`: their flags and config files
// (docs/training.md), parsed onto the jobs' options (job/train_job.h,
// job/infer_job.h), which do the work.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/signals.h"
#include "ctrain/cli/arg_parsing.h"
#include "ctrain/cli/commands.h"
#include "ctrain/cli/data_flags.h"
#include "ctrain/cli/service_flags.h"
#include "ctrain/io/file.h"
#include "ctrain/job/config_file.h"
#include "ctrain/job/infer_job.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_job.h"
#include "ctrain/train/trainer.h"

namespace ctrain::cli {
namespace {

// eval/predict run one replica: only --intra-op-parallelism-threads applies.
// The training-only thread flags are accepted by the parser (hidden) so that
// RejectTrainOnly can name them instead of ignoring them silently.
struct ParallelFlags {
  train::ParallelOptions p;
  bool autotune = false;
  int64_t autotune_steps = 5;
  std::vector<std::pair<CLI::Option*, std::string>> train_only;  // hidden options have no get_name()
  void RegisterInfer(CLI::App* sub) {
    sub->add_option("--intra-op-parallelism-threads,--intra_op_parallelism_threads,--intra-op-threads",
                    p.intra_op_threads, "OpenMP threads (0 = all allowed cores)")
        ->capture_default_str();
    auto hide = [&](CLI::Option* o) {
      std::string name = o->get_name();
      train_only.emplace_back(o->group(""), std::move(name));
    };
    hide(sub->add_option("--inter-op-parallelism-threads,--inter_op_parallelism_threads,--inter-op-threads",
                         p.inter_op_threads));
    hide(sub->add_option("--towers", p.towers));
    hide(sub->add_option("--hogwild", p.hogwild));
    hide(sub->add_option("--affinity", p.affinity));
    hide(sub->add_flag("--autotune", autotune));
    hide(sub->add_option("--autotune-steps,--autotune_steps", autotune_steps));
  }
  Status RejectTrainOnly(const char* command) const {
    for (const auto& [o, name] : train_only)
      if (o->count() > 0)
        return InvalidArgumentError("ctrain " + std::string(command) + ": " + name +
                                    " is a training flag; " + command +
                                    " runs one replica (set its threads with --intra-op-parallelism-threads)");
    return Status::OK();
  }
};

// `ctrain train`'s flags: one per entry of the option schema (job/option_schema.h),
// its spellings, help and default from the entry. The parsed texts become typed
// values through the schema, like every other front end's.
struct TrainFlags {
  struct Flag {
    const job::OptionSpec* spec = nullptr;
    CLI::Option* opt = nullptr;
    std::string text;
    std::vector<std::string> texts;  // string lists
    bool value = false;              // bools
  };
  std::vector<Flag> flags;  // schema order
  CLI::App* app = nullptr;

  void Register(CLI::App* sub) {
    app = sub;
    const std::vector<job::OptionSpec>& schema = job::TrainOptionSchema();
    flags.resize(schema.size());
    for (size_t i = 0; i < schema.size(); ++i) {
      const job::OptionSpec& s = schema[i];
      Flag& f = flags[i];
      f.spec = &s;
      std::vector<std::string> spellings = {s.name};
      spellings.insert(spellings.end(), s.aliases.begin(), s.aliases.end());
      std::string names;
      for (const std::string& n : spellings) {
        const std::string dashed = job::FlagName(n);
        names += (names.empty() ? "" : ",") + dashed;
        if (dashed != "--" + n) names += ",--" + n;
      }
      std::string help = s.help;
      if (!s.unit.empty() && s.unit != "path" && s.unit != "paths") help += " [" + s.unit + "]";
      const nlohmann::json def = s.default_value();
      const std::vector<std::string> def_texts = job::OptionTexts(s, def);
      switch (s.type) {
        case job::OptionType::kBool:
          f.opt = s.is_switch ? sub->add_flag(names, f.value, help) : sub->add_option(names, f.value, help);
          if (!s.is_switch) f.opt->default_str(def.get<bool>() ? "true" : "false");
          break;
        case job::OptionType::kStringList:
          f.opt = sub->add_option(names, f.texts, help);
          break;
        default:
          f.opt = sub->add_option(names, f.text, help);
          f.opt->type_name(s.type == job::OptionType::kInt     ? "INT"
                           : s.type == job::OptionType::kFloat ? "FLOAT"
                                                               : "TEXT");
          if (!def_texts.empty() && !def_texts[0].empty()) f.opt->default_str(def_texts[0]);
      }
    }
  }

  // The parsed flags onto `job` (and `given`), then --config's values for the rest.
  Status Apply(job::TrainJobOptions* job) const {
    for (const Flag& f : flags) {
      if (f.opt->count() == 0) continue;
      const job::OptionSpec& s = *f.spec;
      nlohmann::json v;
      if (s.type == job::OptionType::kBool) {
        v = f.value;
      } else if (s.type == job::OptionType::kStringList) {
        v = nlohmann::json::array();
        for (const std::string& t : f.texts) {
          CTRAIN_ASSIGN_OR_RETURN(nlohmann::json part, job::ParseOptionText(s, t));
          for (nlohmann::json& e : part) v.push_back(std::move(e));
        }
      } else {
        CTRAIN_ASSIGN_OR_RETURN(v, job::ParseOptionText(s, f.text));
      }
      CTRAIN_RETURN_IF_ERROR(s.set(*job, v));
      job->given.Add(s.name);
    }
    if (!job->config.empty()) CTRAIN_RETURN_IF_ERROR(job::ApplyTrainConfigFile(job->config, job, &job->given));
    return Status::OK();
  }
};

struct InferFlags {
  job::InferJobOptions job;  // input, model_dir, output, metrics_json, output_columns
  DataFlags data;
  ParallelFlags par;
  CLI::App* app = nullptr;
};

// `ctrain train`: the flags and the config file's values for flags not given,
// then the job; the job's error is printed by the job (*reported), before it
// leaves mpirun.
Status RunTrain(TrainFlags& fl, bool* reported) {
  job::TrainJobOptions options;
  CTRAIN_RETURN_IF_ERROR(fl.Apply(&options));
  return job::RunTrain(options, nullptr, [reported](const Status& s) {
    if (!s.ok()) ReportError(s);
    *reported = true;
  });
}

// `ctrain eval` / `ctrain predict`.
Status RunInfer(InferFlags& fl, bool predict) {
  CTRAIN_RETURN_IF_ERROR(fl.par.RejectTrainOnly(predict ? "predict" : "eval"));
  job::InferJobOptions& o = fl.job;
  o.data = fl.data;
  o.parallel = fl.par.p;
  o.given = GivenOptions(fl.app);
  return predict ? job::RunPredict(o) : job::RunEval(o);
}

Command AddInferCommand(CLI::App& app, bool predict) {
  auto fl = std::make_shared<InferFlags>();
  CLI::App* sub = predict ? app.add_subcommand("predict", "Write one click probability per input example")
                          : app.add_subcommand("eval", "AUC and logloss of a trained model on labelled data");
  sub->add_option("--model-dir,--model_dir", fl->job.model_dir, "Directory with the trained model's checkpoints")
      ->required();
  sub->add_option("--input,--eval,--test", fl->job.input, "Input files")->required();
  if (predict) {
    sub->add_option("--output,-o", fl->job.output, "Output file, one line per input record ('-' = stdout)")->required();
    sub->add_option("--output-columns,--output_columns", fl->job.output_columns,
                    "Tab-separated columns: prediction, label, index or id (the record index), e.g. "
                    "id,label,prediction; a record dropped by --skip-corrupt-records has nan in label and prediction")
        ->capture_default_str();
    sub->add_flag("--no-label,--no_label", fl->job.no_label,
                  "The input has no label column (LibSVM, Criteo text); without it a file whose first record has "
                  "no label (an id:value first token, 39 Criteo cells) is read as unlabelled");
  } else {
    sub->add_option("--metrics-json,--metrics_json", fl->job.metrics_json, "Also write the metrics as JSON here");
    sub->add_option("--negative-downsampling,--negative_downsampling", fl->job.negative_downsampling,
                    "The input kept its negatives at this rate (each counts 1 / rate in the metrics)")
        ->capture_default_str();
    sub->add_option("--gauc-field,--gauc_field", fl->job.gauc_field,
                    "GAUC: group examples by their id in this field (0-based, e.g. the user id; -1 = no GAUC)")
        ->capture_default_str();
    sub->add_option("--weights", fl->job.weights,
                    "Sample weights: a file with one weight per input example, one per line (XGBoost's .weight)");
  }
  // --field-size / --feature-size are accepted when they agree with the model.
  fl->data.Register(sub, /*with_feature_size=*/true);
  sub->add_option("--feature-spec,--feature_spec", fl->data.feature_spec,
                  "Feature spec (JSON/TOML); default: the one the model was trained with (the checkpoint keeps it)");
  fl->par.RegisterInfer(sub);
  fl->app = sub;
  return {sub, [fl, predict]() {
            Status s = RunInfer(*fl, predict);
            return s.ok() ? 0 : ReportError(s);
          }};
}

}  // namespace

namespace {
// Registers `ctrain train` and its flags onto `app`; the flags land in the returned object.
std::shared_ptr<TrainFlags> RegisterTrainCommand(CLI::App& app) {
  auto fl = std::make_shared<TrainFlags>();
  fl->Register(app.add_subcommand("train", "Train a CTR model (--model deepfm by default; without --train: on built-in synthetic data)"));
  return fl;
}
}  // namespace

Command AddTrainCommand(CLI::App& app) {
  std::shared_ptr<TrainFlags> fl = RegisterTrainCommand(app);
  return {fl->app, [fl]() {
            bool reported = false;
            Status s = RunTrain(*fl, &reported);
            const int sig = PendingInterrupt();  // deferred while training (checkpoint written)
            if (sig != 0) {
              if (!s.ok() && !reported) ReportError(s);
              ExitForSignal(sig);
            }
            if (s.ok()) return 0;
            return reported ? 1 : ReportError(s);
          }};
}

StatusOr<job::TrainJobOptions> ParseTrainJobOptions(const std::vector<std::string>& args) {
  CLI::App app{"ctrain"};
  std::shared_ptr<TrainFlags> fl = RegisterTrainCommand(app);
  DescribeBoolSwitches(app);
  std::vector<std::string> a = {"train"};
  a.insert(a.end(), args.begin(), args.end());
  if (const std::string usage = CheckCommandAndFlags(app, a); !usage.empty()) return InvalidArgumentError(usage);
  a = NormalizeBoolSwitches(app, std::move(a));
  std::vector<std::string> reversed(a.rbegin(), a.rend());  // CLI11 takes them last-first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(e.what());
  }
  job::TrainJobOptions options;
  CTRAIN_RETURN_IF_ERROR(fl->Apply(&options));
  return options;
}

Command AddEvalCommand(CLI::App& app) { return AddInferCommand(app, false); }
Command AddPredictCommand(CLI::App& app) { return AddInferCommand(app, true); }

}  // namespace ctrain::cli
