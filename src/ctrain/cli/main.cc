#include "ctrain/cli/main.h"

#include <cstdio>
#include <string>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/cli/arg_parsing.h"
#include "ctrain/train/openmp_wait.h"

namespace ctrain::cli {

std::vector<Command> BuildApp(CLI::App& app) {
  app.name("ctrain");
  app.require_subcommand(1);
  app.set_version_flag("--version", "ctrain 0.1.0");
  std::vector<Command> commands;
  // Registered subcommands (one file each under src/ctrain/cli/).
  commands.push_back(AddInspectCommand(app));
  commands.push_back(AddConvertCommand(app));
  commands.push_back(AddSynthCommand(app));
  commands.push_back(AddTrainCommand(app));
  commands.push_back(AddEvalCommand(app));
  commands.push_back(AddPredictCommand(app));
  commands.push_back(AddDataServiceCommand(app));
  commands.push_back(AddPsCommand(app));
  commands.push_back(AddExportCommand(app));
  commands.push_back(AddLaunchCommand(app));
  commands.push_back(AddReportCommand(app));
  DescribeBoolSwitches(app);
  return commands;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The commands whose kernels run OpenMP teams (ours and oneDNN's) choose how
  // idle threads wait (spin on idle CPUs, sleep on shared ones) and re-execute;
  // ChooseOpenMPWaitAndReexec returns only when no re-exec was needed (or it
  // failed: then say so and go on). The others skip the sample and the exec.
  const std::string command = SubcommandName(args);
  if (command == "train" || command == "eval" || command == "predict")
    if (Status s = train::ChooseOpenMPWaitAndReexec(argv); !s.ok()) Logf("%s\n", s.ToString().c_str());
  if (command == "launch")
    if (const std::string bad = TakeLaunchEntryPoint(&args); !bad.empty()) {
      std::fprintf(stderr, "%s\n", bad.c_str());
      return 2;
    }
  InstallInterruptHandlers();  // interrupts remove in-progress temporary files (base/signals.h)
  CLI::App app{"ctrain: fast click-through-rate model training (DeepFM, DCN-V2, DLRM, xDeepFM, ...) and CTR data tools"};
  std::vector<Command> commands = BuildApp(app);
  args = HelpWins(app, args);
  if (const std::string usage = CheckCommandAndFlags(app, args); !usage.empty()) {
    std::fprintf(stderr, "%s\n", usage.c_str());
    return 2;
  }
  args = NormalizeBoolSwitches(app, std::move(args));
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (auto& c : commands)
    if (c.app != nullptr && c.app->parsed()) return c.run();
  return 2;
}

}  // namespace ctrain::cli
