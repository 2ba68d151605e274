#include "ctrain/launch/hyperparameters.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "ctrain/base/edit_distance.h"

namespace ctrain::launch {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string Hyphens(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// Flags the launcher sets itself, and where their values come from.
const std::map<std::string, std::string>& Reserved() {
  static const auto* m = new std::map<std::string, std::string>{
      {"train", "the \"train\" channel (inputdataconfig.json)"},
      {"valid", "the \"validation\" channel (inputdataconfig.json)"},
      {"model-dir", "the checkpoint directory (/opt/ml/checkpoints, or ctrain launch --checkpoint-dir)"},
      {"metrics-json", "output/data/metrics.json"},
      {"monitor-dir", "output/data/monitor/<host>/<role>"},
      {"monitor-interval-ms", "ctrain launch --monitor-interval-ms"},
      {"data-service", "the data_group's first host"},
      {"config", "the hyperparameters themselves"},
  };
  return *m;
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

}  // namespace

std::string DecodeHyperparameterValue(const std::string& value) { return Decode(value).dump(); }

std::string HyperparameterText(const std::string& value) {
  const ordered_json v = Decode(value);
  if (v.is_number()) return Trim(value);
  if (v.is_string() || v.is_boolean()) return ScalarText(v);
  return value;
}

StatusOr<MappedHyperparameters> MapHyperparameters(const Hyperparameters& hps, const std::set<std::string>& train_flags,
                                                   const std::map<std::string, ListForm>& list_flags,
                                                   const std::string& source) {
  MappedHyperparameters out;
  ordered_json decoded = ordered_json::object();
  std::set<std::string> seen;
  for (const auto& [key, raw] : hps) decoded[key] = Decode(raw);
  out.decoded_json = decoded.dump();
  for (const auto& [key, raw] : hps) {
    const ordered_json v = Decode(raw);
    if (IsPlatformKey(key)) {
      ++out.skipped_platform_keys;
      out.skipped_keys.push_back(key);
      continue;
    }
    const std::string where = source + ": hyperparameter \"" + key + "\"";
    const std::string shown = " (value " + ordered_json(raw).dump() + ")";
    const std::string flag = Hyphens(key);
    if (!seen.insert(flag).second) return InvalidArgumentError(where + " is given twice (hyphen and underscore spellings)");
    if (v.is_object())
      return InvalidArgumentError(where + " is a JSON object" + shown + "; a flag takes a string, a number, true/false "
                                  "or (list flags) a list");
    if (v.is_null()) return InvalidArgumentError(where + " is null" + shown + "; give a value or leave the key out");
    // The flag's values: one, or a list's elements.
    std::vector<std::string> values;
    if (v.is_array()) {
      if (v.empty()) return InvalidArgumentError(where + " is an empty list" + shown);
      for (const ordered_json& e : v) {
        if (!e.is_string() && !e.is_number() && !e.is_boolean())
          return InvalidArgumentError(where + " is a list holding " + e.dump() + shown +
                                      "; list elements are strings, numbers or true/false");
        values.push_back(ScalarText(e));
      }
    } else {
      // A number keeps its text as written ("1e-3", 64-bit integers exactly).
      values.push_back(v.is_number() ? Trim(raw) : ScalarText(v));
    }
    for (const std::string& s : values)
      if (s.empty()) return InvalidArgumentError(where + " is empty" + shown + "; give a value or leave the key out");

    if (flag == "data-group") {
      if (v.is_array()) return InvalidArgumentError(where + " is a list" + shown + "; it names one instance group");
      out.data_group = values[0];
      continue;
    }
    if (auto r = Reserved().find(flag); r != Reserved().end())
      return InvalidArgumentError(where + " is set by ctrain launch from " + r->second + "; leave it out");
    if (train_flags.count(flag) == 0) {
      std::string best;
      size_t best_d = 4;
      for (const std::string& f : train_flags)
        if (size_t d = EditDistance(flag, f); d < best_d) best_d = d, best = f;
      std::string hint = best.empty() ? "" : "; did you mean " + best + "?";
      std::replace(hint.begin(), hint.end(), '-', '_');
      return InvalidArgumentError(source + ": unknown hyperparameter \"" + key + "\" (no ctrain train flag --" + flag +
                                  hint + ")");
    }
    const auto list = list_flags.find(flag);
    if (v.is_array() && list == list_flags.end())
      return InvalidArgumentError(where + " is a list" + shown + ", but --" + flag + " takes one value");
    if (flag == "epochs" || flag == "num-epochs") {
      const std::string& e = values[0];
      char* end = nullptr;
      const long n = std::strtol(e.c_str(), &end, 10);
      if (end == e.c_str() || *end != '\0' || n < 1)
        return InvalidArgumentError(where + " must be a whole number >= 1, got \"" + e + "\"");
      out.epochs = static_cast<int32_t>(n);
    }
    if (v.is_array() && list->second == ListForm::kCommaJoined) {
      std::string joined;
      for (const std::string& s : values) joined += (joined.empty() ? "" : ",") + s;
      values = {joined};
    }
    for (const std::string& s : values) out.train_args.push_back("--" + flag + "=" + s);
  }
  return out;
}

}  // namespace ctrain::launch
