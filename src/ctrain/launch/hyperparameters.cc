#include "ctrain/launch/hyperparameters.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ctrain/base/edit_distance.h"
#include "ctrain/job/option_schema.h"

namespace ctrain::launch {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string Hyphens(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// Keys SageMaker (the SDK, the service or the training toolkit) adds for itself: never ctrain
// flags. The toolkit's own list (sagemaker_training.params.SAGEMAKER_HYPERPARAMETERS) is covered
// by the two prefixes but for default_user_module_name.
bool IsPlatformKey(const std::string& key) {
  return key.rfind("sagemaker_", 0) == 0 || key.rfind('_', 0) == 0 || key == "default_user_module_name";
}

// json.loads(value), or the raw string where it is not a JSON text (the toolkit's rule).
// Python's json also reads NaN, Infinity and -Infinity (no JSON text): those stay raw
// strings here, which gives the flag the same text.
ordered_json Decode(const std::string& value) {
  ordered_json j = ordered_json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ordered_json(value);
  return j;
}

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";  // JSON's whitespace
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The flag text of a scalar (string, number, boolean); "" for anything else.
std::string ScalarText(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  return "";
}

bool Truthy(const ordered_json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) {
    std::string t = v.get<std::string>();
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    return t == "true" || t == "1";
  }
  return false;
}

// The SDK's distribution={...} keys (Framework._distribution_configuration): read where ctrain
// launch does the same thing, refused by name where it does not (never skipped).
Status ReadDistributionKey(const std::string& key, const ordered_json& v, const std::string& where,
                           MappedHyperparameters* out) {
  const std::string shown = " (value " + v.dump() + ")";
  if (key == "sagemaker_mpi_enabled") return Status::OK();  // mpirun whenever there is more than one rank
  if (key == "sagemaker_mpi_num_of_processes_per_host") {
    const std::string text = v.is_string() ? Trim(v.get<std::string>()) : v.dump();
    char* end = nullptr;
    const long n = std::strtol(text.c_str(), &end, 10);
    if ((!v.is_number_integer() && !v.is_string()) || text.empty() || *end != '\0' || n < 1 || n > 4096)
      return InvalidArgumentError(where + shown + ": distribution mpi processes_per_host must be a whole number "
                                  "in [1, 4096]");
    out->processes_per_host = static_cast<int32_t>(n);
    return Status::OK();
  }
  if (key == "sagemaker_mpi_custom_mpi_options") {
    if (!v.is_string()) return InvalidArgumentError(where + shown + ": distribution mpi custom_mpi_options is a string");
    // As the training toolkit's MPI runner: str.split(), no shell quoting.
    std::istringstream in(v.get<std::string>());
    for (std::string a; in >> a;) out->custom_mpi_options.push_back(a);
    return Status::OK();
  }
  if (key == "sagemaker_parameter_server_enabled") {  // one parameter server and one worker per host
    out->parameter_server = Truthy(v);
    return Status::OK();
  }
  if (key.rfind("sagemaker_", 0) == 0 && key.size() > 8 && key.compare(key.size() - 8, 8, "_enabled") == 0 && Truthy(v))
    return InvalidArgumentError(where + shown + ": this distribution is not supported by ctrain launch: a "
                                "homogeneous cluster trains under mpirun (distribution mpi, or none) or with parameter "
                                "servers (distribution parameter_server), a heterogeneous one through the data "
                                "service (data_group)");
  return Status::OK();
}

}  // namespace

std::string DecodeHyperparameterValue(const std::string& value) { return Decode(value).dump(); }

std::string HyperparameterText(const std::string& value) {
  const ordered_json v = Decode(value);
  if (v.is_number()) return Trim(value);
  if (v.is_string() || v.is_boolean()) return ScalarText(v);
  return value;
}

StatusOr<MappedHyperparameters> MapHyperparameters(const Hyperparameters& hps, const std::string& source,
                                                   bool entry_point) {
  MappedHyperparameters out;
  ordered_json decoded = ordered_json::object();
  std::map<std::string, std::string> seen;  // option name -> the key that gave it
  for (const auto& [key, raw] : hps) decoded[key] = Decode(raw);
  out.decoded_json = decoded.dump();
  out.values = ordered_json::object();
  for (const char* k : {"sagemaker_program", "sagemaker_submit_directory"})
    if (decoded.contains(k)) {
      const ordered_json& v = decoded[k];
      if (!v.is_string() || Trim(v.get<std::string>()).empty())
        return InvalidArgumentError(source + ": hyperparameter \"" + k + "\" (value " + v.dump() +
                                    ") must be a non-empty string");
      (std::string(k) == "sagemaker_program" ? out.program : out.submit_directory) = v.get<std::string>();
    }
  out.user_script = entry_point || !out.program.empty();
  for (const auto& [key, raw] : hps) {
    const ordered_json v = Decode(raw);
    if (IsPlatformKey(key)) {
      CTRAIN_RETURN_IF_ERROR(ReadDistributionKey(key, v, source + ": hyperparameter \"" + key + "\"", &out));
      ++out.skipped_platform_keys;
      out.skipped_keys.push_back(key);
      continue;
    }
    const std::string where = source + ": hyperparameter \"" + key + "\"";
    if (out.user_script) {  // the script's own: passed on as the toolkit passes them, never a ctrain flag
      out.user[key] = v;
      if (Hyphens(key) == "data-group") {
        if (!v.is_string() || Trim(v.get<std::string>()).empty())
          return InvalidArgumentError(where + " (value " + v.dump() + ") names one instance group: a string");
        out.data_group = v.get<std::string>();
      }
      continue;
    }
    const std::string shown = " (value " + ordered_json(raw).dump() + ")";
    const std::string flag = Hyphens(key);
    if (v.is_object())
      return InvalidArgumentError(where + " is a JSON object" + shown + "; a flag takes a string, a number, true/false "
                                  "or (list flags) a list");
    if (v.is_null()) return InvalidArgumentError(where + " is null" + shown + "; give a value or leave the key out");
    if (v.is_array()) {
      if (v.empty()) return InvalidArgumentError(where + " is an empty list" + shown);
      for (const ordered_json& e : v)
        if (!e.is_string() && !e.is_number() && !e.is_boolean())
          return InvalidArgumentError(where + " is a list holding " + e.dump() + shown +
                                      "; list elements are strings, numbers or true/false");
    }
    if ((v.is_string() && Trim(v.get<std::string>()).empty()) ||
        (v.is_array() && std::any_of(v.begin(), v.end(), [](const ordered_json& e) {
           return e.is_string() && Trim(e.get<std::string>()).empty();
         })))
      return InvalidArgumentError(where + " is empty" + shown + "; give a value or leave the key out");
    if (flag == "data-group") {
      if (v.is_array()) return InvalidArgumentError(where + " is a list" + shown + "; it names one instance group");
      out.data_group = ScalarText(v);
      continue;
    }
    const job::OptionSpec* spec = job::FindTrainOption(key);
    if (spec == nullptr) {
      std::string best;
      size_t best_d = 4;
      for (const job::OptionSpec& o : job::TrainOptionSchema())
        if (size_t d = EditDistance(flag, Hyphens(o.name)); d < best_d) best_d = d, best = o.name;
      return InvalidArgumentError(source + ": unknown hyperparameter \"" + key + "\" (no ctrain train flag --" + flag +
                                  (best.empty() ? "" : "; did you mean " + best + "?") + ")");
    }
    if (auto [at, fresh] = seen.emplace(spec->name, key); !fresh)
      return InvalidArgumentError(where + " is given twice (also as \"" + at->second + "\")");
    if (!spec->set_by_launch.empty())
      return InvalidArgumentError(where + " is set by ctrain launch from " + spec->set_by_launch + "; leave it out");
    const bool list = spec->type == job::OptionType::kIntList || spec->type == job::OptionType::kStringList;
    if (v.is_array() && !list)
      return InvalidArgumentError(where + " is a list" + shown + ", but " + spec->flag() + " takes one value");
    // The option's type (the toolkit's decoding gave JSON; a raw string is read as the flag's text).
    StatusOr<nlohmann::json> typed = job::CoerceOptionValue(*spec, nlohmann::json::parse(v.dump()));
    if (!typed.ok()) return InvalidArgumentError(where + shown + ": " + std::string(typed.status().message()));
    if (spec->name == "epochs") {
      if (typed->get<int64_t>() < 1)
        return InvalidArgumentError(where + " must be a whole number >= 1, got " + typed->dump());
      out.epochs = static_cast<int32_t>(typed->get<int64_t>());
    }
    for (const std::string& text : job::OptionTexts(*spec, *typed))
      out.train_args.push_back("--" + Hyphens(spec->name) + "=" + text);
    out.values[spec->name] = *typed;
  }
  return out;
}

}  // namespace ctrain::launch
