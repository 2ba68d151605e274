// Entry point of the `ctrain` command line: subcommands inspect, convert, synth,
// train, eval, predict, data-service, export. Each subcommand lives in its own file (cli/*_command.cc)
// and registers itself through the Add*Command functions in commands.h.
#pragma once

#include <vector>

#include "ctrain/cli/commands.h"

namespace ctrain::cli {
// Returns the process exit status: 0 on success, 1 on a data/runtime error
// (the message is printed to stderr), 2 on a usage error (unknown command or
// flag, bad flag value). train, eval and predict first re-execute themselves with
// the OpenMP wait policy chosen for this machine (train::ChooseOpenMPWaitAndReexec)
// unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set.
int Main(int argc, char** argv);

// Sets up `app` as Main does: every subcommand (in --help order), --version,
// boolean switches described (cli/arg_parsing.h). Tests use it to check the
// conventions of arg_parsing.h on every flag of every subcommand.
std::vector<Command> BuildApp(CLI::App& app);
}  // namespace ctrain::cli
