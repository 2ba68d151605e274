// The option schema's values, lookup, effective configuration and mode check (job/option_schema.h).
#include "ctrain/job/option_schema.h"

#include "ctrain/model/model.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <string>

#include "ctrain/base/edit_distance.h"
#include "ctrain/job/train_job.h"
#include "ctrain/model/model.h"

namespace ctrain::job {
namespace {

using json = nlohmann::json;

std::string Underscores(std::string_view s) {
  while (!s.empty() && s.front() == '-') s.remove_prefix(1);
  std::string out(s);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status BadValue(const OptionSpec& spec, const std::string& shown, std::string_view expected) {
  return InvalidArgumentError(spec.flag() + ": expected " + std::string(expected) + ", got " + shown);
}

StatusOr<json> ParseInt(const OptionSpec& spec, std::string_view text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, v);
  if (r.ec == std::errc() && r.ptr == end) return json(v);
  uint64_t u = 0;  // seeds may use the whole unsigned range
  r = std::from_chars(text.data(), end, u);
  if (r.ec == std::errc() && r.ptr == end) return json(u);
  return BadValue(spec, "'" + std::string(text) + "'", "a whole number");
}

StatusOr<json> ParseFloat(const OptionSpec& spec, std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || !std::isfinite(v))
    return BadValue(spec, "'" + std::string(text) + "'", "a number");
  return json(v);
}

StatusOr<json> ParseBool(const OptionSpec& spec, std::string_view text) {
  const std::string t = Lower(text);
  if (t == "true" || t == "yes" || t == "on" || t == "1") return json(true);
  if (t == "false" || t == "no" || t == "off" || t == "0") return json(false);
  return BadValue(spec, "'" + std::string(text) + "'", "true or false");
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string_view::npos ? text.size() : comma;
    parts.push_back(text.substr(start, end - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

// A JSON scalar's text as a command line would give it.
std::string ScalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

}  // namespace

std::string_view OptionTypeName(OptionType t) {
  switch (t) {
    case OptionType::kBool: return "bool";
    case OptionType::kInt: return "int";
    case OptionType::kFloat: return "float";
    case OptionType::kString: return "string";
    case OptionType::kIntList: return "int list";
    case OptionType::kStringList: return "string list";
  }
  return "?";
}

std::vector<TrainMode> AllTrainModes() {
  return {TrainMode::kLocalMemory, TrainMode::kLocalStream, TrainMode::kTowers, TrainMode::kHogwild,
          TrainMode::kMpirun,      TrainMode::kDataService, TrainMode::kPsAsync, TrainMode::kPsSync};
}

std::string_view TrainModeName(TrainMode m) {
  switch (m) {
    case TrainMode::kLocalMemory: return "local memory";
    case TrainMode::kLocalStream: return "local stream";
    case TrainMode::kTowers: return "towers";
    case TrainMode::kHogwild: return "hogwild";
    case TrainMode::kMpirun: return "mpirun";
    case TrainMode::kDataService: return "the data service";
    case TrainMode::kPsAsync: return "parameter servers (async)";
    case TrainMode::kPsSync: return "parameter servers (sync)";
  }
  return "?";
}

std::string ModeSetText(ModeSet s) {
  static const std::map<TrainMode, const char*> kShort = {
      {TrainMode::kLocalMemory, "memory"}, {TrainMode::kLocalStream, "stream"}, {TrainMode::kTowers, "towers"},
      {TrainMode::kHogwild, "hogwild"},    {TrainMode::kMpirun, "mpirun"},      {TrainMode::kDataService, "data_service"},
      {TrainMode::kPsAsync, "ps_async"},   {TrainMode::kPsSync, "ps_sync"}};
  std::string out;
  for (TrainMode m : AllTrainModes())
    if (Has(s, m)) out += (out.empty() ? "" : "|") + std::string(kShort.at(m));
  return out;
}

nlohmann::json OptionSpec::default_value() const {
  static const TrainJobOptions* defaults = new TrainJobOptions();
  return get(*defaults);
}

const OptionSpec* FindTrainOption(std::string_view name) {
  const std::string n = Underscores(name);
  for (const OptionSpec& s : TrainOptionSchema()) {
    if (s.name == n) return &s;
    for (const std::string& a : s.aliases)
      if (a == n) return &s;
  }
  return nullptr;
}

StatusOr<json> ParseOptionText(const OptionSpec& spec, std::string_view text) {
  switch (spec.type) {
    case OptionType::kBool: return ParseBool(spec, text);
    case OptionType::kInt: return ParseInt(spec, text);
    case OptionType::kFloat: return ParseFloat(spec, text);
    case OptionType::kString: return json(std::string(text));
    case OptionType::kIntList: {
      json list = json::array();
      if (text.empty()) return list;
      for (std::string_view part : SplitCommas(text)) {
        StatusOr<json> v = ParseInt(spec, part);
        if (!v.ok() || !v->is_number_integer() || v->get<int64_t>() < 1)
          return BadValue(spec, "'" + std::string(text) + "'", "positive whole numbers separated by commas");
        list.push_back(*v);
      }
      return list;
    }
    case OptionType::kStringList: {
      json list = json::array();
      if (!spec.comma_list) return list.push_back(std::string(text)), list;
      for (std::string_view part : SplitCommas(text))
        if (!part.empty()) list.push_back(std::string(part));
      return list;
    }
  }
  return InternalError(spec.flag() + ": unknown option type");
}

StatusOr<json> CoerceOptionValue(const OptionSpec& spec, const json& value) {
  const std::string shown = value.dump();
  if (value.is_object() || value.is_null() || value.is_discarded())
    return BadValue(spec, shown, "a " + std::string(OptionTypeName(spec.type)));
  const bool list = spec.type == OptionType::kIntList || spec.type == OptionType::kStringList;
  if (value.is_array()) {
    if (!list) return BadValue(spec, shown, "one value (a " + std::string(OptionTypeName(spec.type)) + "), not a list");
    json out = json::array();
    for (const json& e : value) {
      if (e.is_array() || e.is_object() || e.is_null()) return BadValue(spec, shown, "a list of scalars");
      if (spec.type == OptionType::kStringList) {
        out.push_back(ScalarText(e));
        continue;
      }
      OptionSpec one = spec;  // each element as one whole number
      one.type = OptionType::kInt;
      CTRAIN_ASSIGN_OR_RETURN(json n, CoerceOptionValue(one, e));
      if (n.get<int64_t>() < 1) return BadValue(spec, shown, "positive whole numbers");
      out.push_back(n);
    }
    return out;
  }
  if (value.is_string()) return ParseOptionText(spec, value.get<std::string>());
  switch (spec.type) {
    case OptionType::kBool:
      if (value.is_boolean()) return value;
      return BadValue(spec, shown, "true or false");
    case OptionType::kInt:
      if (value.is_number_integer()) return value;
      if (value.is_number_float()) {
        const double d = value.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.007199254740992e15)
          return json(static_cast<int64_t>(d));
      }
      return BadValue(spec, shown, "a whole number");
    case OptionType::kFloat:
      if (value.is_number()) return json(value.get<double>());
      return BadValue(spec, shown, "a number");
    case OptionType::kString:
      return json(ScalarText(value));  // job_name = 7, ... as its text
    case OptionType::kIntList:
    case OptionType::kStringList:
      return CoerceOptionValue(spec, json::array({value}));
  }
  return InternalError(spec.flag() + ": unknown option type");
}

std::vector<std::string> OptionTexts(const OptionSpec& spec, const json& value) {
  if (spec.type == OptionType::kStringList) {
    std::vector<std::string> out;
    for (const json& e : value) out.push_back(ScalarText(e));
    return out;
  }
  if (spec.type == OptionType::kIntList || (spec.type == OptionType::kString && value.is_array())) {
    std::string text;
    for (const json& e : value) text += (text.empty() ? "" : ",") + ScalarText(e);
    return {text};
  }
  if (value.is_number_float()) {  // the shortest text that reads back as the same double
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), value.get<double>());
    return {std::string(buf, r.ptr)};
  }
  return {ScalarText(value)};
}

Status ApplyTrainOptions(const json& values, const std::string& source, TrainJobOptions* options,
                         ExplicitOptions* given, const ExplicitOptions* skip) {
  if (!values.is_object()) return InvalidArgumentError(source + ": expected an object of option names to values");
  std::map<std::string, std::string> seen;  // canonical name -> the key that gave it
  for (auto it = values.begin(); it != values.end(); ++it) {
    const std::string& key = it.key();
    const OptionSpec* spec = FindTrainOption(key);
    if (spec == nullptr) {
      std::string best;
      size_t best_d = 4;
      const std::string k = Underscores(key);
      for (const OptionSpec& s : TrainOptionSchema())
        if (size_t d = EditDistance(k, s.name); d < best_d) best_d = d, best = s.name;
      return InvalidArgumentError(source + ": unknown option '" + key + "' (no ctrain train option " +
                                  FlagName(k) + (best.empty() ? "" : "; did you mean " + best + "?") + ")");
    }
    if (auto [at, fresh] = seen.emplace(spec->name, key); !fresh)
      return InvalidArgumentError(source + ": option " + spec->name + " is given twice ('" + at->second + "' and '" +
                                  key + "')");
    if (skip != nullptr && skip->Has(spec->name)) continue;  // given on the command line: it wins
    StatusOr<json> v = CoerceOptionValue(*spec, it.value());
    if (!v.ok()) return v.status().WithContext(source);
    if (Status s = spec->set(*options, *v); !s.ok()) return s.WithContext(source);
    if (given != nullptr) given->Add(spec->name);
  }
  return Status::OK();
}

nlohmann::ordered_json EffectiveTrainOptions(const TrainJobOptions& options, bool all) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const OptionSpec& s : TrainOptionSchema()) {
    json v = s.get(options);
    if (all || v != s.default_value()) out[s.name] = std::move(v);
  }
  return out;
}

nlohmann::ordered_json AgreedTrainOptions(const TrainJobOptions& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const OptionSpec& s : TrainOptionSchema())
    if (s.same_on_every_rank) out[s.flag()] = s.get(options);
  return out;
}

nlohmann::ordered_json ResultTrainOptions(const TrainJobOptions& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const OptionSpec& s : TrainOptionSchema())
    if (s.defines_result) out[s.name] = s.get(options);
  return out;
}

ModeSet RunModes(const TrainJobOptions& o, bool stream, bool mpirun) {
  ModeSet m = static_cast<ModeSet>(stream ? TrainMode::kLocalStream : TrainMode::kLocalMemory);
  if (o.parallel.towers > 1) m = m | TrainMode::kTowers;
  if (o.parallel.hogwild > 0) m = m | TrainMode::kHogwild;
  if (mpirun) m = m | TrainMode::kMpirun;
  if (!o.data_service.address.empty()) m = m | TrainMode::kDataService;
  if (o.ps.enabled()) m = m | (o.ps.sync_replicas ? TrainMode::kPsSync : TrainMode::kPsAsync);
  return m;
}

Status CheckOptionModes(const nlohmann::ordered_json& given_values, ModeSet modes) {
  // The options that make the modes are checked last, so that a refusal names the option that does not fit
  // the mode ("--towers is not supported with parameter servers"), not the mode's own switch.
  auto rank = [](const std::string& name) {
    if (name == "ps" || name == "data_service" || name == "sync_replicas") return 2;
    if (name == "towers" || name == "hogwild") return 1;
    return 0;
  };
  for (int pass = 0; pass < 3; ++pass)
    for (auto it = given_values.begin(); it != given_values.end(); ++it) {
      const OptionSpec* s = FindTrainOption(it.key());
      if (s == nullptr || rank(s->name) != pass) continue;
      for (TrainMode m : AllTrainModes()) {
        if (!Has(modes, m) || Has(s->modes, m)) continue;
        std::string why = s->not_supported_why;
        for (const auto& [mode, text] : s->not_supported_why_in)
          if (mode == m) why = text;
        return InvalidArgumentError(s->flag() + " is not supported with " + std::string(TrainModeName(m)) +
                                    (why.empty() ? "" : ": " + why) + " (docs/training.md#modes)");
      }
      if (s->needs != 0 && (s->needs & modes) == 0) {
        std::string need;
        for (TrainMode m : AllTrainModes())
          if (Has(s->needs, m)) need += (need.empty() ? "" : " or ") + std::string(TrainModeName(m));
        std::string now;
        for (TrainMode m : AllTrainModes())
          if (Has(modes, m)) now += (now.empty() ? "" : ", ") + std::string(TrainModeName(m));
        return InvalidArgumentError(s->flag() + " applies to " + need + " only (this run: " + now +
                                    "); leave it out (docs/training.md#modes)");
      }
    }
  return Status::OK();
}

Status CheckOptionModels(const nlohmann::ordered_json& given_values, const std::string& kind) {
  CTRAIN_RETURN_IF_ERROR(model::CheckModelKind(kind).WithContext("--model"));
  for (auto it = given_values.begin(); it != given_values.end(); ++it) {
    const OptionSpec* s = FindTrainOption(it.key());
    if (s == nullptr || s->models.empty()) continue;
    bool reads = false;
    std::string kinds;
    for (const std::string& k : s->models) {
      reads = reads || k == kind;
      kinds += (kinds.empty() ? "" : "|") + k;
    }
    if (!reads)
      return InvalidArgumentError(s->flag() + " applies to --model " + kinds + " (this run: --model " + kind +
                                  "); leave it out (docs/model.md)");
  }
  return Status::OK();
}

}  // namespace ctrain::job
