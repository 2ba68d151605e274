// Subcommand registration. Each Add*Command adds a CLI11 subcommand to `app`
// and stores in `*run` the function main() calls when that subcommand was chosen.
// The function returns the exit status (0 ok, 1 error already printed).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ctrain/base/status.h"
#include "ctrain/job/train_job.h"

namespace ctrain::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Each command file defines one of these.
Command AddInspectCommand(CLI::App& app);
Command AddConvertCommand(CLI::App& app);
Command AddSynthCommand(CLI::App& app);
Command AddTrainCommand(CLI::App& app);
Command AddEvalCommand(CLI::App& app);
Command AddPredictCommand(CLI::App& app);
Command AddDataServiceCommand(CLI::App& app);
Command AddPsCommand(CLI::App& app);
Command AddExportCommand(CLI::App& app);
Command AddLaunchCommand(CLI::App& app);
// `ctrain launch ... --entry-point SCRIPT [ARGS...]`: everything from --entry-point on is the
// user's command line, not ctrain's flags. Removes it from `args` (the launch subcommand's) and
// keeps it for the launch command; returns an error text ("" = fine).
std::string TakeLaunchEntryPoint(std::vector<std::string>* args);
Command AddReportCommand(CLI::App& app);

// `ctrain train`'s flags (e.g. {"--feature-size", "921", "--shuffle=false"}) parsed onto the job's
// options exactly as the CLI parses them (usage checks, --config applied, the given options
// recorded). Errors: InvalidArgument with the CLI's usage message (an unknown flag with its
// closest name, a bad value).
StatusOr<job::TrainJobOptions> ParseTrainJobOptions(const std::vector<std::string>& args);

}  // namespace ctrain::cli
