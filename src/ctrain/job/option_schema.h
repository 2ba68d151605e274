// The typed option schema of `ctrain train`: every option of the training job
// is declared once, here (train_option_schema.cc), with its name, type,
// default, unit, help and the modes it supports. Everything that sets
// training options reads this one table:
//   - the CLI's flags (cli/train_command.cc registers one flag per entry, its
//     spellings from `name` and `aliases`, help and default from the entry);
//   - `--config` files (TOML/JSON; a key is an option name, a TOML array is a
//     list option's value);
//   - the Python package's keyword arguments (ctrain.Trainer(**options), typed
//     values, no flag strings: python/src/trainer.cc);
//   - SageMaker hyperparameters (launch/hyperparameters.cc: the toolkit's JSON
//     decoding, then the option's type);
//   - the job's mode check (job/train_checks.cc CheckModes): an option set to
//     a value other than its default in a mode it does not list is refused at
//     start, naming the option and the mode.
// tests/job/option_matrix_test.cc walks the table over every mode.
//
// Values are JSON (nlohmann::json) of the option's type:
//   kBool   true/false              kInt    a whole number (int64)
//   kFloat  a number (double)       kString a string
//   kIntList  a list of whole numbers (deep_layers: [400, 400]; text "400,400")
//   kStringList  a list of strings (train, valid, ps; text: one element per
//                flag, or comma-separated for `comma_list` options)
//
// Thread safety: the table is immutable after its first use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/job/explicit_options.h"

namespace ctrain::job {

struct TrainJobOptions;

enum class OptionType { kBool, kInt, kFloat, kString, kIntList, kStringList };
std::string_view OptionTypeName(OptionType t);  // "bool", "int", "float", "string", "int list", "string list"

// The modes a training run can be in (several at once: a run reads in memory
// or streams, and may add replicas, mpirun, the data service or parameter
// servers). docs/training.md#modes.
enum class TrainMode : uint32_t {
  kLocalMemory = 1u << 0,  // --input-mode memory (and the built-in synthetic data)
  kLocalStream = 1u << 1,  // --input-mode stream: the input pipeline
  kTowers = 1u << 2,       // --towers > 1
  kHogwild = 1u << 3,      // --hogwild > 0
  kMpirun = 1u << 4,       // started by mpirun with more than one rank
  kDataService = 1u << 5,  // --data-service
  kPsAsync = 1u << 6,      // --ps without --sync-replicas
  kPsSync = 1u << 7,       // --ps --sync-replicas
};
using ModeSet = uint32_t;
constexpr ModeSet operator|(TrainMode a, TrainMode b) { return static_cast<ModeSet>(a) | static_cast<ModeSet>(b); }
constexpr ModeSet operator|(ModeSet a, TrainMode b) { return a | static_cast<ModeSet>(b); }
constexpr ModeSet operator|(TrainMode a, ModeSet b) { return static_cast<ModeSet>(a) | b; }
constexpr bool Has(ModeSet s, TrainMode m) { return (s & static_cast<ModeSet>(m)) != 0; }
inline constexpr ModeSet kAllModes = 0xffu;
// Every mode but those in `except`.
constexpr ModeSet AllModesBut(ModeSet except) { return kAllModes & ~except; }
std::vector<TrainMode> AllTrainModes();
// "local memory", "local stream", "towers", "hogwild", "mpirun", "data service",
// "parameter servers (async)", "parameter servers (sync)".
std::string_view TrainModeName(TrainMode m);
// "memory|towers": the names' short forms joined, for docs and Python.
std::string ModeSetText(ModeSet s);

struct OptionSpec {
  std::string name;                  // canonical: the first flag with underscores ("learning_rate")
  std::vector<std::string> aliases;  // other spellings, underscores ("num_epochs"); flags get both dash forms
  OptionType type = OptionType::kString;
  std::string unit;                  // "examples", "steps", "ms", "bytes", ... ("" = none)
  std::string help;
  ModeSet modes = 0;                 // where the option is honoured; elsewhere it is refused
  std::string not_supported_why;     // appended to the refusal ("" = none)
  // The reason for one refused mode where it differs from not_supported_why.
  std::vector<std::pair<TrainMode, std::string>> not_supported_why_in;
  // The run must be in one of these modes (0 = any): --lr-scaling needs mpirun,
  // --processing-mode the data service, --max-staleness asynchronous parameter servers.
  ModeSet needs = 0;
  // The model kinds that read the option (model/model.h; empty = every kind). Set away from its
  // default for another kind, it is refused by name (CheckOptionModels).
  std::vector<std::string> models;
  bool is_switch = false;            // kBool: a bare --flag means true and the default is false
  bool comma_list = false;           // kStringList: the CLI takes "a,b" as two elements
  // Where ctrain launch takes the value from, when it sets it itself ("" = a hyperparameter).
  std::string set_by_launch;
  // Under mpirun every rank must give the same value (the model's and every
  // parameter's shape, the optimizer and learning rate, the data encoding, the
  // step plan): compared before step 1 (job/rank_mpi.cc). Per-rank options
  // (paths, threads, shard_index, consumer_index) are not.
  bool same_on_every_rank = false;
  // The value decides the trained model (with the inputs' content): every
  // same_on_every_rank option and the per-rank ones that still change the
  // result (seed, shuffle, warm start, early stopping, the plateau schedule).
  // A finished run records them (job/finished_run.h): a rerun with equal
  // values on equal inputs has nothing to do.
  bool defines_result = false;
  // Typed access to the job's options; `set` takes a value of the option's
  // type (CoerceOptionValue) and fails with InvalidArgument naming the flag
  // for a number outside the field's range.
  std::function<Status(TrainJobOptions&, const nlohmann::json&)> set;
  std::function<nlohmann::json(const TrainJobOptions&)> get;

  std::string flag() const { return FlagName(name); }  // "--learning-rate"
  // The default: get() of default-constructed options.
  nlohmann::json default_value() const;
};

// The schema of `ctrain train` (in declaration order: the --help order).
const std::vector<OptionSpec>& TrainOptionSchema();
// The entry for a name, alias or flag spelling ("learning-rate", "--learning_rate",
// "num_epochs"), or nullptr.
const OptionSpec* FindTrainOption(std::string_view name);

// One command-line text as the option's value: kBool takes true/false, yes/no,
// on/off, 1/0; kInt a whole number; kFloat a number; kIntList "400,400";
// kStringList one element (or, for comma_list, "a,b"). InvalidArgument naming
// the flag and the text.
StatusOr<nlohmann::json> ParseOptionText(const OptionSpec& spec, std::string_view text);
// A JSON value (a config file's, Python's, a decoded SageMaker hyperparameter's)
// converted to the option's type: the value itself where it has the type (an
// integral number for kFloat, a whole-valued number for kInt), a string read
// as ParseOptionText reads a flag's text, a number's text for kString, a list
// of elements (or one element) for the list types. InvalidArgument naming the
// flag and the value otherwise (an object, null, 2.5 for an int, ...).
StatusOr<nlohmann::json> CoerceOptionValue(const OptionSpec& spec, const nlohmann::json& value);
// The command-line text of a typed value: "true", "0.001", "400,400"; a
// kStringList gives one text per element.
std::vector<std::string> OptionTexts(const OptionSpec& spec, const nlohmann::json& value);

// Sets the options of a JSON object {name: value} (names or aliases, dashes or
// underscores), each coerced to its type, into `options`, and records them in
// `given` (by canonical name). Names in `skip` (already given elsewhere: the
// command line wins over a config file) are left alone. `source` prefixes the
// errors: unknown key (with the closest name), a key given twice under two
// spellings, a value of the wrong type.
Status ApplyTrainOptions(const nlohmann::json& values, const std::string& source, TrainJobOptions* options,
                         ExplicitOptions* given, const ExplicitOptions* skip = nullptr);

// The effective configuration: {name: value} of every option whose value
// differs from its default (or of every option with `all`), in schema order.
// The same run gives the same JSON from the CLI, a config file, Python or
// SageMaker hyperparameters.
nlohmann::ordered_json EffectiveTrainOptions(const TrainJobOptions& options, bool all = false);

// {flag: value} of every same_on_every_rank option, in schema order: what every
// mpirun rank compares before step 1 (job/rank_mpi.cc).
nlohmann::ordered_json AgreedTrainOptions(const TrainJobOptions& options);
// {name: value} of every defines_result option, in schema order: the settings
// a finished run records (job/finished_run.h).
nlohmann::ordered_json ResultTrainOptions(const TrainJobOptions& options);

// The modes of a run whose options are `options` (`stream`: the input mode as
// resolved), under mpirun with more than one rank when `mpirun`.
ModeSet RunModes(const TrainJobOptions& options, bool stream, bool mpirun);
// The refusal of an option set in a mode it does not support, or OK: every
// option of `given_values` (EffectiveTrainOptions of the options as set, before
// the job resolves them) must list every mode of `modes`, and be in one of its
// `needs` modes. The error names the flag and
// the mode: "--keep-best is not supported with parameter servers (sync): ...",
// "--lr-scaling needs mpirun (this run: local memory)".
Status CheckOptionModes(const nlohmann::ordered_json& given_values, ModeSet modes);
// The refusal of an option of `given_values` that the model `kind` does not read
// ("--cross-layers applies to --model dcn|dcn_v2 (this run: --model deepfm)"), or OK.
Status CheckOptionModels(const nlohmann::ordered_json& given_values, const std::string& kind);

}  // namespace ctrain::job
