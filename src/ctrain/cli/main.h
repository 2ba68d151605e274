// Entry point of the `ctrain` command line: subcommands inspect, convert, synth,
// train, eval, predict. Each subcommand lives in its own file (cli/*_command.cc)
// and registers itself through the Add*Command functions in commands.h.
#pragma once

namespace ctrain::cli {
// Returns the process exit status: 0 on success, 1 on a data/runtime error
// (the message is printed to stderr), 2 on a usage error.
int Main(int argc, char** argv);
}  // namespace ctrain::cli
