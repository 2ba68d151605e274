// Command-line conventions (cli/arg_parsing.h) checked on the real app: every
// boolean switch of every subcommand takes --x, --x=true, --x true, --x false
// alike and never swallows the argument after it; unknown flags and commands
// are named with the closest valid name.
#include "ctrain/cli/arg_parsing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/cli/main.h"
#include "ctrain/train/train_config.h"

namespace ctrain::cli {
namespace {

// The arguments that make `sub` parse besides the switch under test: its
// required options and positionals, given "1", or (when it has none) one
// optional value option, to see that it still gets its value.
struct Fillers {
  std::vector<std::string> args;
  std::vector<std::string> checked;  // option names whose results must be {"1"}
};

bool IsSwitch(const std::vector<std::string>& switches, const CLI::Option* o) {
  for (const std::string& n : o->get_lnames())
    for (const std::string& s : switches)
      if (s == "--" + n) return true;
  return false;
}

Fillers FillersFor(const CLI::App& sub) {
  Fillers f;
  const std::vector<std::string> switches = BoolSwitchNames(sub);
  std::vector<std::string> positional;
  for (const CLI::Option* o : sub.get_options()) {
    if (!o->get_required() || IsSwitch(switches, o)) continue;
    if (o->get_lnames().empty() && o->get_snames().empty()) {
      positional.push_back("1");
      continue;
    }
    const std::string name = o->get_lnames().empty() ? "-" + o->get_snames()[0] : "--" + o->get_lnames()[0];
    f.args.insert(f.args.end(), {name, "1"});
    f.checked.push_back(name);
  }
  if (f.checked.empty())
    for (const CLI::Option* o : sub.get_options()) {
      if (IsSwitch(switches, o) || o->get_lnames().empty() || o == sub.get_help_ptr() ||
          o->get_expected_max() != 1 || o->get_group().empty())
        continue;
      f.args.insert(f.args.end(), {"--" + o->get_lnames()[0], "1"});
      f.checked.push_back("--" + o->get_lnames()[0]);
      break;
    }
  f.args.insert(f.args.end(), positional.begin(), positional.end());
  return f;
}

// The app as Main builds it; `commands` keeps the flag variables the options write to alive.
struct TestApp {
  TestApp() { commands = BuildApp(app); }
  CLI::App app;
  std::vector<Command> commands;
};

// Parses `args` as Main does; returns the parse error ("" if none).
std::string Parse(CLI::App& app, std::vector<std::string> args) {
  if (std::string usage = CheckCommandAndFlags(app, args); !usage.empty()) return usage;
  args = NormalizeBoolSwitches(app, std::move(args));
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return std::string(e.get_name()) + ": " + e.what();
  }
  return "";
}

std::vector<std::string> SubcommandNames() {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(s->get_name());
  return names;
}

TEST(ArgParsingTest, EverySubcommandIsChecked) {
  EXPECT_EQ(SubcommandNames(),
            (std::vector<std::string>{"inspect", "convert", "synth", "train", "eval", "predict", "data-service"}));
}

TEST(ArgParsingTest, KnownSwitchesAreFound) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  auto has = [&](const char* sub, const char* name) {
    for (const std::string& n : BoolSwitchNames(*app.get_subcommand(sub)))
      if (n == name) return true;
    return false;
  };
  for (const char* name : {"--batch-norm", "--batch_norm", "--shuffle", "--drop-remainder", "--reshuffle-each-iteration",
                           "--affinity", "--autotune", "--deterministic", "--skip-corrupt-records"})
    EXPECT_TRUE(has("train", name)) << name;
  EXPECT_TRUE(has("inspect", "--json"));
  EXPECT_FALSE(has("train", "--help"));
  EXPECT_FALSE(has("train", "--learning-rate"));
}

// Every form of every switch of every subcommand, with the switch first (before
// the other arguments, which it must not swallow) and last.
TEST(ArgParsingTest, EverySwitchOfEverySubcommandTakesEveryForm) {
  // {suffix glued to the name} or {" ", separate value}, and the value wanted.
  const std::vector<std::pair<std::vector<std::string>, bool>> forms = {
      {{""}, true},        {{"=true"}, true}, {{"=false"}, false}, {{" ", "true"}, true},
      {{" ", "false"}, false}, {{" ", "yes"}, true}, {{" ", "off"}, false}, {{" ", "0"}, false},
  };
  int checked = 0;
  for (const std::string& sub_name : SubcommandNames()) {
    TestApp probe_holder;
    CLI::App& probe = probe_holder.app;
    const std::vector<std::string> switches = BoolSwitchNames(*probe.get_subcommand(sub_name));
    const Fillers fill = FillersFor(*probe.get_subcommand(sub_name));
    for (const std::string& sw : switches) {
      for (const auto& [form, want] : forms) {
        for (bool first : {true, false}) {
          std::vector<std::string> sw_tokens;
          if (form[0] == " ") sw_tokens = {sw, form[1]};
          else sw_tokens = {sw + form[0]};
          std::vector<std::string> args{sub_name};
          if (first) args.insert(args.end(), sw_tokens.begin(), sw_tokens.end());
          args.insert(args.end(), fill.args.begin(), fill.args.end());
          if (!first) args.insert(args.end(), sw_tokens.begin(), sw_tokens.end());
          std::string shown;
          for (const auto& a : args) shown += a + " ";
          TestApp t;
          CLI::App& app = t.app;
          const std::string err = Parse(app, args);
          ASSERT_EQ(err, "") << shown;
          CLI::App* sub = app.get_subcommand(sub_name);
          ASSERT_TRUE(sub->parsed()) << shown;
          EXPECT_EQ(sub->get_option(sw)->as<bool>(), want) << shown;
          for (const std::string& name : fill.checked)
            EXPECT_EQ(sub->get_option(name)->results(), std::vector<std::string>{"1"}) << shown << " -> " << name;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(ArgParsingTest, BareSwitchBeforeAnotherFlagIsTheTrialCase) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  ASSERT_EQ(Parse(app, {"train", "--batch-norm", "--train", "x.libsvm"}), "");
  CLI::App* sub = app.get_subcommand("train");
  EXPECT_TRUE(sub->get_option("--batch-norm")->as<bool>());
  EXPECT_EQ(sub->get_option("--train")->results(), std::vector<std::string>{"x.libsvm"});
}

TEST(ArgParsingTest, InspectJsonDoesNotSwallowTheFiles) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  ASSERT_EQ(Parse(app, {"inspect", "--json", "a.libsvm", "b.libsvm"}), "");
  CLI::App* sub = app.get_subcommand("inspect");
  EXPECT_TRUE(sub->get_option("--json")->as<bool>());
  EXPECT_EQ(sub->get_option("files")->results(), (std::vector<std::string>{"a.libsvm", "b.libsvm"}));
}

TEST(ArgParsingTest, NotABooleanIsAnError) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_NE(Parse(app, {"train", "--batch-norm=maybe"}), "");
  TestApp app2_holder;
  CLI::App& app2 = app2_holder.app;
  // "maybe" is not taken as the switch's value; train has no positionals, so it is named as a bad value.
  EXPECT_EQ(Parse(app2, {"train", "--batch-norm", "maybe"}),
            "ctrain train: --batch-norm is a switch: 'maybe' is not true/false (write --batch-norm, "
            "--batch-norm true or --batch-norm false)");
}

TEST(ArgParsingTest, ArgumentsAfterDoubleDashAreKept) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(NormalizeBoolSwitches(app, {"inspect", "--json", "--", "--json"}),
            (std::vector<std::string>{"inspect", "--json=true", "--", "--json"}));
}

TEST(ArgParsingTest, UnknownFlagNamesItselfItsValueAndTheClosestFlag) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--train", "tr.libsvm", "--lerning-rate", "0.1"}),
            "ctrain train: unknown flag --lerning-rate (value '0.1'); did you mean --learning-rate? "
            "(ctrain train --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--lerning-rate=0.1"}),
            "ctrain train: unknown flag --lerning-rate (value '0.1'); did you mean --learning-rate? "
            "(ctrain train --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--batchnorm", "--train", "x"}),
            "ctrain train: unknown flag --batchnorm; did you mean --batch-norm? (ctrain train --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"inspect", "--zzzzzzzz", "f"}),
            "ctrain inspect: unknown flag --zzzzzzzz (value 'f') (ctrain inspect --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"eval", "--epochs", "3"}),
            "ctrain eval: unknown flag --epochs (value '3'); it is a flag of train (ctrain eval --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"synth", "--json"}),
            "ctrain synth: unknown flag --json; it is a flag of inspect (ctrain synth --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--learning-rate", "0.1"}), "");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--help"}), "");
}

TEST(ArgParsingTest, UnknownCommandListsTheCommandsAndTheClosest) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  const std::string list = "inspect, convert, synth, train, eval, predict, data-service";
  EXPECT_EQ(CheckCommandAndFlags(app, {"fit", "--train", "x"}),
            "ctrain: unknown command 'fit'; the commands are " + list + "; did you mean 'train'?");
  EXPECT_EQ(CheckCommandAndFlags(app, {"trian"}),
            "ctrain: unknown command 'trian'; the commands are " + list + "; did you mean 'train'?");
  EXPECT_EQ(CheckCommandAndFlags(app, {"predcit"}),
            "ctrain: unknown command 'predcit'; the commands are " + list + "; did you mean 'predict'?");
  EXPECT_EQ(CheckCommandAndFlags(app, {"xyzzy"}), "ctrain: unknown command 'xyzzy'; the commands are " + list);
  EXPECT_EQ(CheckCommandAndFlags(app, {}),
            "ctrain: a command is required: " + list + " (ctrain --help describes them)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"--version"}), "");
}

// Issue #7 rough edges, second round: single-dash unknowns, empty values,
// repeats, a typo before the command, --help next to errors, stray file names.
TEST(ArgParsingTest, SingleDashUnknownFlagIsNamedInOrderWithTheUsualSpelling) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--train", "s.libsvm", "-lr", "0.1"}),
            "ctrain train: unknown flag -lr (value '0.1'); did you mean --learning-rate? "
            "(ctrain train --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "-learning-rate", "0.1"}),
            "ctrain train: unknown flag -learning-rate (value '0.1'); did you mean --learning-rate? "
            "(ctrain train --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"synth", "-n", "10", "-o", "x"}),
            "ctrain synth: unknown flag -n (value '10'); did you mean --rows? (ctrain synth --help lists the flags)");
  // Known short flags, "-" and negative numbers are not unknown flags.
  EXPECT_EQ(CheckCommandAndFlags(app, {"convert", "-i", "-", "-o", "-", "--output-id-base", "-1"}), "");
}

TEST(ArgParsingTest, EmptyOrMissingValueNamesTheFlagAndNeverTakesTheNext) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--batch-norm=", "--train", "x"}),
            "ctrain train: --batch-norm= has an empty value (write --batch-norm=VALUE, or leave --batch-norm out)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--model-dir=", "--train", "x"}),
            "ctrain train: --model-dir= has an empty value (write --model-dir=VALUE, or leave --model-dir out)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--model-dir", "--train", "x"}),
            "ctrain train: --model-dir needs a value (the next argument, --train, is a flag) "
            "(ctrain train --help lists the flags)");
}

TEST(ArgParsingTest, AFlagGivenTwiceIsNamedWithBothValues) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--learning-rate", "1", "--learning-rate", "2"}),
            "ctrain train: --learning-rate given twice ('1' and '2'); give it once");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--learning-rate=1", "--learning_rate", "2"}),
            "ctrain train: --learning-rate (also spelled --learning_rate) given twice ('1' and '2'); give it once");
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--batch-norm", "--batch-norm", "false"}),
            "ctrain train: --batch-norm given twice ('true' and 'false'); give it once");
  EXPECT_EQ(CheckCommandAndFlags(app, {"predict", "-o", "a", "--output", "b"}),
            "ctrain predict: -o (also spelled --output) given twice ('a' and 'b'); give it once");
  // Lists may repeat and take several words.
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "--train", "a", "b", "--train", "c", "--valid", "d"}), "");
}

TEST(ArgParsingTest, TypoBeforeTheCommandSuggestsVersionOrHelp) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"--verison"}),
            "ctrain: unknown flag --verison; did you mean --version? (ctrain --help describes the commands)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"--hlep", "train"}),
            "ctrain: unknown flag --hlep; did you mean --help? (ctrain --help describes the commands)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"--version"}), "");
  EXPECT_EQ(CheckCommandAndFlags(app, {"-h"}), "");
}

TEST(ArgParsingTest, NestedCommandsAreCheckedAtTheirOwnLevel) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"data-service"}),
            "ctrain data-service: a command is required: dispatcher, worker, read, status, shutdown");
  EXPECT_EQ(CheckCommandAndFlags(app, {"data-service", "wroker"}),
            "ctrain data-service: unknown command 'wroker'; the commands are dispatcher, worker, read, status, "
            "shutdown; did you mean 'worker'?");
  EXPECT_EQ(CheckCommandAndFlags(app, {"data-service", "worker", "--dispatcher", "h:1", "--thread", "2"}),
            "ctrain data-service worker: unknown flag --thread (value '2'); did you mean --threads? (ctrain "
            "data-service worker --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"data-service", "dispatcher", "--port", "0"}), "");
  EXPECT_EQ(HelpWins(app, {"data-service", "worker", "--bogus", "--help"}),
            (std::vector<std::string>{"data-service", "worker", "--help"}));
  EXPECT_EQ(HelpWins(app, {"train", "--help", "--train"}), (std::vector<std::string>{"train", "--help"}));
}

TEST(ArgParsingTest, HelpWinsOverEverythingElse) {
  EXPECT_EQ(HelpWins({"train", "--help", "--train"}), (std::vector<std::string>{"train", "--help"}));
  EXPECT_EQ(HelpWins({"train", "--learning-rate", "-h", "--lr", "x"}), (std::vector<std::string>{"train", "--help"}));
  EXPECT_EQ(HelpWins({"--help", "--verison"}), (std::vector<std::string>{"--help"}));
  EXPECT_EQ(HelpWins({"inspect", "--", "--help"}), (std::vector<std::string>{"inspect", "--", "--help"}));
  TestApp app_holder;
  EXPECT_TRUE(Parse(app_holder.app, HelpWins({"train", "--help", "--train"})).starts_with("CallForHelp"));
}

TEST(ArgParsingTest, AStrayFileNameSuggestsTheInputFlag) {
  TestApp app_holder;
  CLI::App& app = app_holder.app;
  EXPECT_EQ(CheckCommandAndFlags(app, {"train", "s.libsvm"}),
            "ctrain train: unexpected argument 's.libsvm'; did you mean --train s.libsvm? "
            "(ctrain train --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"eval", "--model-dir", "m", "s.libsvm"}),
            "ctrain eval: unexpected argument 's.libsvm'; did you mean --input s.libsvm? "
            "(ctrain eval --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"synth", "--rows", "5", "x"}),
            "ctrain synth: unexpected argument 'x' (ctrain synth --help lists the flags)");
  EXPECT_EQ(CheckCommandAndFlags(app, {"inspect", "s.libsvm"}), "");  // inspect takes files
}

TEST(ArgParsingTest, DeepLayersNamesTheBadElement) {
  EXPECT_EQ(train::ParseLayerList("8,,8").status().message(),
            "deep_layers '8,,8': element 2 is empty; expected positive widths like 400,400,400");
  EXPECT_EQ(train::ParseLayerList("8,").status().message(),
            "deep_layers '8,': element 2 is empty; expected positive widths like 400,400,400");
  EXPECT_EQ(train::ParseLayerList("8,x").status().message(),
            "deep_layers '8,x': element 2 ('x') is not a positive width; expected positive widths like 400,400,400");
  EXPECT_EQ(*train::ParseLayerList("400, 200,100"), (std::vector<int32_t>{400, 200, 100}));
}

TEST(ArgParsingTest, EditDistanceAndClosest) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("--lerning-rate", "--learning-rate"), 1u);
  EXPECT_EQ(ClosestName("--epoch", {"--epochs", "--seed"}), "--epochs");
  EXPECT_EQ(ClosestName("--qqqqqqq", {"--epochs", "--seed"}), "");
}

}  // namespace
}  // namespace ctrain::cli

namespace ctrain::cli {
namespace {

TEST(GivenOptionsTest, CanonicalNamesOfTheFlagsGiven) {
  CLI::App app;
  int threads = 0, shards = 1, towers = 1;
  app.add_option("--intra-op-parallelism-threads,--intra_op_parallelism_threads", threads);
  app.add_option("--num-shards,--num_shards", shards);
  app.add_option("--towers", towers);
  std::vector<std::string> args{"--towers", "2", "--intra_op_parallelism_threads", "3"};
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  app.parse(args);
  const job::ExplicitOptions given = GivenOptions(&app);
  EXPECT_TRUE(given.Has("towers"));
  EXPECT_TRUE(given.Has("intra_op_parallelism_threads"));
  EXPECT_FALSE(given.Has("num_shards"));
  EXPECT_EQ(given.names().size(), 2u);
}

}  // namespace
}  // namespace ctrain::cli
