#include "ctrain/cli/arg_parsing.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <utility>

namespace ctrain::cli {

namespace {

bool IsBoolWord(const std::string& s) {
  std::string l = s;
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l == "true" || l == "false" || l == "yes" || l == "no" || l == "on" || l == "off" || l == "1" ||
         l == "0";
}

// The type shown by --help for a boolean option (DescribeBoolSwitches).
constexpr const char* kBoolType = "[true|false]";

bool IsBoolSwitch(const CLI::App& sub, const CLI::Option* o) {
  if (o == sub.get_help_ptr() || o == sub.get_help_all_ptr()) return false;
  return o->get_type_name() == "BOOLEAN" || o->get_type_name() == kBoolType || o->get_expected_max() == 0;
}

// Other tools' words for a subcommand (suggestions only).
constexpr std::pair<const char*, const char*> kCommandSynonyms[] = {
    {"fit", "train"},       {"learn", "train"},   {"evaluate", "eval"}, {"test", "eval"},
    {"score", "predict"},   {"infer", "predict"}, {"show", "inspect"},  {"info", "inspect"},
    {"generate", "synth"},  {"gen", "synth"},     {"export", "convert"}, {"transform", "convert"},
};

// Other tools' spellings of a flag (suggestions only; used when the subcommand has the flag).
constexpr std::pair<const char*, const char*> kFlagSynonyms[] = {
    {"-lr", "--learning-rate"}, {"--lr", "--learning-rate"}, {"-bs", "--batch-size"}, {"--bs", "--batch-size"},
    {"-e", "--epochs"},         {"-n", "--rows"},            {"-j", "--intra-op-threads"},
};

// True for an argument that is a flag: "-x", "--x", "--x=v"; false for values
// such as "-" (stdin/stdout), negative numbers ("-1", "-0.5e3") and words.
bool IsFlagWord(const std::string& s) {
  if (s.size() < 2 || s[0] != '-') return false;
  if (s[1] == '-') return s.size() > 2;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() + s.size();
}

// Index of the subcommand's name in args// Index of the subcommand's name in args, or args.size() if there is none
// (the main app has only --help and --version, which take no value).
size_t SubcommandIndex(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") return args.size();
    if (args[i].empty() || args[i][0] != '-') return i;
  }
  return args.size();
}

const CLI::App* FindSubcommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (s->check_name(name)) return s;
  return nullptr;
}

// Descends from `sub` (named at args[*at]) into nested subcommands
// (`ctrain data-service dispatcher ...`): the command whose flags follow.
const CLI::App* LeafSubcommand(const CLI::App* sub, const std::vector<std::string>& args, size_t* at) {
  while (sub != nullptr && !sub->get_subcommands([](const CLI::App*) { return true; }).empty() && *at + 1 < args.size() &&
         !args[*at + 1].empty() && args[*at + 1][0] != '-') {
    const CLI::App* nested = FindSubcommand(*sub, args[*at + 1]);
    if (nested == nullptr) break;
    sub = nested;
    ++*at;
  }
  return sub;
}

// "data-service dispatcher" for a nested command.
std::string CommandPath(const CLI::App* sub) {
  std::string path = sub->get_name();
  for (const CLI::App* p = sub->get_parent(); p != nullptr && p->get_parent() != nullptr; p = p->get_parent())
    path = p->get_name() + " " + path;
  return path;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::vector<std::string> BoolSwitchNames(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* o : sub.get_options())
    if (IsBoolSwitch(sub, o))
      for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
  return out;
}

void DescribeBoolSwitches(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* o : sub->get_options())
      if (o->get_type_name() == "BOOLEAN") {
        o->type_name(kBoolType);
        const std::string d = o->get_default_str();
        if (d == "0" || d == "1") o->default_str(d == "1" ? "true" : "false");
      }
}

std::vector<std::string> NormalizeBoolSwitches(const CLI::App& app, std::vector<std::string> args) {
  size_t at = SubcommandIndex(args);
  if (at == args.size()) return args;
  const CLI::App* sub = LeafSubcommand(FindSubcommand(app, args[at]), args, &at);
  if (sub == nullptr) return args;
  const std::vector<std::string> names = BoolSwitchNames(*sub);
  std::vector<std::string> out(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  for (size_t i = at + 1; i < args.size(); ++i) {
    if (args[i] == "--") {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (std::find(names.begin(), names.end(), args[i]) == names.end()) {
      out.push_back(args[i]);
      continue;
    }
    if (i + 1 < args.size() && IsBoolWord(args[i + 1])) {
      out.push_back(args[i] + "=" + args[i + 1]);
      ++i;
    } else {
      out.push_back(args[i] + "=true");
    }
  }
  return out;
}

std::vector<std::string> HelpWins(const std::vector<std::string>& args) {
  const size_t at = SubcommandIndex(args);
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i)
    if (args[i] == "-h" || args[i] == "--help") {
      if (at == args.size() || i < at) return {"--help"};
      return {args[at], "--help"};
    }
  return args;
}

std::vector<std::string> HelpWins(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> out = HelpWins(args);
  size_t at = SubcommandIndex(args);
  if (out == args || at == args.size() || out.size() != 2) return out;
  const size_t top = at;
  const CLI::App* sub = LeafSubcommand(FindSubcommand(app, args[at]), args, &at);
  if (sub == nullptr || at == top) return out;
  out.assign(args.begin() + static_cast<std::ptrdiff_t>(top), args.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  out.push_back("--help");
  return out;
}

std::string SubcommandName(const std::vector<std::string>& args) {
  const size_t at = SubcommandIndex(args);
  return at == args.size() ? std::string() : args[at];
}

std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string CheckCommandAndFlags(const CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> commands;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    commands.push_back(s->get_name());
  size_t at = SubcommandIndex(args);
  bool answered = false;  // --help / --version: CLI11 answers these
  for (size_t i = 0; i < std::min(at, args.size()); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "--version") {
      answered = true;
      continue;
    }
    std::string msg = "ctrain: unknown flag " + a;
    const std::string near = ClosestName(a.starts_with("--") ? a : "-" + a, {"--help", "--version"});
    if (!near.empty()) msg += "; did you mean " + near + "?";
    return msg + " (ctrain --help describes the commands)";
  }
  if (at == args.size()) {
    if (answered) return "";
    return "ctrain: a command is required: " + Join(commands) + " (ctrain --help describes them)";
  }
  const CLI::App* sub = FindSubcommand(app, args[at]);
  if (sub == nullptr) {
    std::string msg = "ctrain: unknown command '" + args[at] + "'; the commands are " + Join(commands);
    std::string near = ClosestName(args[at], commands);
    for (const auto& [word, command] : kCommandSynonyms)
      if (near.empty() && args[at] == word) near = command;
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    return msg;
  }
  sub = LeafSubcommand(sub, args, &at);
  if (std::vector<const CLI::App*> nested = sub->get_subcommands([](const CLI::App*) { return true; });
      !nested.empty() && sub->get_require_subcommand_min() > 0) {  // a command group (data-service) without its command
    std::vector<std::string> names;
    for (const CLI::App* n : nested) names.push_back(n->get_name());
    bool help = false;
    for (size_t i = at + 1; i < args.size(); ++i) help = help || args[i] == "--help" || args[i] == "-h";
    if (help) return "";
    if (at + 1 < args.size() && !args[at + 1].empty() && args[at + 1][0] != '-') {
      std::string msg = "ctrain " + CommandPath(sub) + ": unknown command '" + args[at + 1] + "'; the commands are " + Join(names);
      if (const std::string near = ClosestName(args[at + 1], names); !near.empty()) msg += "; did you mean '" + near + "'?";
      return msg;
    }
    return "ctrain " + CommandPath(sub) + ": a command is required: " + Join(names);
  }
  std::vector<std::string> flags;  // visible long names, for suggestions
  for (const CLI::Option* o : sub->get_options())
    if (!o->get_group().empty())
      for (const std::string& n : o->get_lnames()) flags.push_back("--" + n);
  const std::vector<std::string> switches = BoolSwitchNames(*sub);
  const bool has_positionals = !sub->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  const std::string prefix = "ctrain " + CommandPath(sub) + ": ";
  const std::string help = " (ctrain " + CommandPath(sub) + " --help lists the flags)";
  std::map<const CLI::Option*, std::pair<std::string, std::string>> given;  // scalar option -> (spelling, value)
  for (size_t i = at + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!IsFlagWord(a)) {  // a word no flag took as its value
      if (has_positionals) continue;
      std::string msg = prefix + "unexpected argument '" + a + "'";
      for (const char* input : {"--train", "--input"})
        if (sub->get_option_no_throw(input) != nullptr) {
          msg += std::string("; did you mean ") + input + " " + a + "?";
          break;
        }
      return msg + help;
    }
    // "--batch-norm maybe": without positionals to take it, the word was meant as the switch's value.
    if (!has_positionals && i + 1 < args.size() && std::find(switches.begin(), switches.end(), a) != switches.end() &&
        !args[i + 1].empty() && args[i + 1][0] != '-' && !IsBoolWord(args[i + 1]))
      return prefix + a + " is a switch: '" + args[i + 1] + "' is not true/false (write " + a + ", " + a +
             " true or " + a + " false)";
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const CLI::Option* o = sub->get_option_no_throw(name);
    if (o == nullptr) {
      std::string msg = prefix + "unknown flag " + name;
      if (eq != std::string::npos) msg += " (value '" + a.substr(eq + 1) + "')";
      else if (i + 1 < args.size() && !IsFlagWord(args[i + 1]))
        msg += " (value '" + args[i + 1] + "')";
      std::string elsewhere;  // the subcommands that do have this flag
      for (const CLI::App* other : app.get_subcommands([](const CLI::App*) { return true; })) {
        const CLI::Option* oo = other->get_option_no_throw(name);
        if (other != sub && oo != nullptr && !oo->get_group().empty())
          elsewhere += (elsewhere.empty() ? "" : ", ") + other->get_name();
      }
      std::string near;
      for (const auto& [word, flag] : kFlagSynonyms)
        if (name == word && std::find(flags.begin(), flags.end(), flag) != flags.end()) near = flag;
      // "-learning-rate" is compared as "--learning-rate".
      if (near.empty()) near = ClosestName(name.starts_with("--") ? name : "-" + name, flags);
      if (!elsewhere.empty()) msg += "; it is a flag of " + elsewhere;
      else if (!near.empty()) msg += "; did you mean " + near + "?";
      return msg + help;
    }
    if (o == sub->get_help_ptr()) continue;
    if (eq != std::string::npos && eq + 1 == a.size())
      return prefix + name + "= has an empty value (write " + name + "=VALUE, or leave " + name + " out)";
    // The value(s) this flag takes, as CLI11 will read them.
    std::string value;
    const bool is_switch = IsBoolSwitch(*sub, o);
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (is_switch) {
      value = "true";
      if (i + 1 < args.size() && IsBoolWord(args[i + 1])) value = args[++i];
    } else if (o->get_expected_max() >= 1) {
      if (i + 1 >= args.size() || IsFlagWord(args[i + 1]) || args[i + 1] == "--")
        return prefix + name + " needs a value" +
               (i + 1 < args.size() ? " (the next argument, " + args[i + 1] + ", is a flag)" : std::string()) + help;
      value = args[++i];
      if (o->get_expected_max() > 1)  // a list (--train a b c): every word up to the next flag
        while (i + 1 < args.size() && !IsFlagWord(args[i + 1]) && args[i + 1] != "--") ++i;
    }
    if (o->get_expected_max() <= 1 && o->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw) {
      const auto [it, first] = given.emplace(o, std::make_pair(name, value));
      if (!first) {
        const std::string& before = it->second.first;
        return prefix + (before == name ? name : before + " (also spelled " + name + ")") + " given twice ('" +
               it->second.second + "' and '" + value + "'); give it once";
      }
    }
  }
  return "";
}

job::ExplicitOptions GivenOptions(const CLI::App* app) {
  job::ExplicitOptions given;
  for (const CLI::Option* o : app->get_options()) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    std::string name = o->get_lnames().front();
    for (char& c : name) c = c == '-' ? '_' : c;
    given.Add(std::move(name));
  }
  return given;
}

}  // namespace ctrain::cli
