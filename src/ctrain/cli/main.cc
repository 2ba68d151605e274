#include "ctrain/cli/main.h"

#include <cstdio>
#include <vector>

#include "ctrain/base/signals.h"
#include "ctrain/cli/commands.h"

namespace ctrain::cli {

int Main(int argc, char** argv) {
  InstallInterruptHandlers();  // interrupts remove in-progress temporary files (base/signals.h)
  CLI::App app{"ctrain: fast click-through-rate model training (DeepFM) and CTR data tools"};
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (auto& c : commands)
    if (c.app != nullptr && c.app->parsed()) return c.run();
  return 2;
}

}  // namespace ctrain::cli
