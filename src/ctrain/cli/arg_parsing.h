// Command-line conventions applied to every subcommand before CLI11 parses:
//
// - Boolean switches (options of type bool and add_flag flags) all take the
//   same four forms: `--x`, `--x=true`, `--x true`, `--x false` (also yes/no,
//   on/off, 1/0). A bare `--x` never swallows the next argument: only one of
//   those words is taken as its value, so `--batch-norm --train f` and
//   `inspect --json f` mean what they say.
// - An unknown flag (--x or -x) is named with its value, in the order given,
//   with the closest flag of that subcommand ("did you mean --learning-rate?").
// - --help wins over everything else on the line (HelpWins).
// - An unknown subcommand lists the subcommands and suggests the closest.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ctrain/base/edit_distance.h"
#include "ctrain/job/explicit_options.h"

namespace ctrain::cli {

// Long and short names ("--batch-norm", "-b") of the boolean switches of `sub`
// (the help flags excluded).
std::vector<std::string> BoolSwitchNames(const CLI::App& sub);

// Shows every boolean option of every subcommand in --help as
// "--x [true|false]=false" (CLI11 says "BOOLEAN=0").
void DescribeBoolSwitches(CLI::App& app);

// Rewrites `args` (argv without argv[0]) so that CLI11 sees every boolean
// switch of the chosen subcommand as `--x=VALUE`: a bare `--x` followed by a
// boolean word becomes `--x=word` (the word is consumed), any other bare `--x`
// becomes `--x=true`. Arguments after `--` and before the subcommand are kept.
std::vector<std::string> NormalizeBoolSwitches(const CLI::App& app, std::vector<std::string> args);

// The usage error for `args` that CLI11 would report badly, or "" if none:
//   - no subcommand, or an unknown one (lists them, suggests the closest);
//   - an unknown flag before the subcommand (suggests --help or --version);
//   - an unknown --flag or -f of the subcommand (names it and its value; names
//     the subcommands that have it, or else suggests the closest flag or the
//     usual spelling: -lr is --learning-rate);
//   - a flag with an empty explicit value (--x=), or without its value;
//   - a single-value flag given twice (names both values), also under two spellings;
//   - a word no flag takes, in a subcommand without positionals ("did you
//     mean --train FILE?").
std::string CheckCommandAndFlags(const CLI::App& app, const std::vector<std::string>& args);

// --help wins: when `args` ask for help (-h or --help before any "--"), only
// the subcommand (if any) and "--help" are kept, so that a missing value or a
// bad flag next to it never hides the help. Otherwise `args` unchanged.
std::vector<std::string> HelpWins(const std::vector<std::string>& args);
// Same, keeping a nested command's name (`data-service worker --help`).
std::vector<std::string> HelpWins(const CLI::App& app, const std::vector<std::string>& args);

// The subcommand named in `args` (the first argument that is not an option),
// or "" if there is none.
std::string SubcommandName(const std::vector<std::string>& args);

// Levenshtein distance (base/edit_distance.h).
using ::ctrain::EditDistance;

// The candidate closest to `word` if it is close enough to be a typo
// (distance <= max(2, |word| / 3)), or "".
std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates);

// The options of `app` given on the command line (or by a config file), by
// canonical name: the first long name with underscores ("--num-shards" ->
// "num_shards").
job::ExplicitOptions GivenOptions(const CLI::App* app);

}  // namespace ctrain::cli
