#include "ctrain/launch/hyperparameters.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "ctrain/base/edit_distance.h"

namespace ctrain::launch {
namespace {

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

}  // namespace

StatusOr<MappedHyperparameters> MapHyperparameters(const Hyperparameters& hps, const std::set<std::string>& train_flags,
                                                   const std::string& source) {
  MappedHyperparameters out;
  std::set<std::string> seen;
  for (const auto& [key, value] : hps) {
    if (key.rfind("sagemaker_", 0) == 0) {
      ++out.skipped_sagemaker_keys;
      continue;
    }
    const std::string flag = Hyphens(key);
    if (!seen.insert(flag).second)
      return InvalidArgumentError(source + ": hyperparameter \"" + key + "\" is given twice (hyphen and underscore spellings)");
    if (flag == "data-group") {
      if (value.empty()) return InvalidArgumentError(source + ": hyperparameter \"data_group\" is empty");
      out.data_group = value;
      continue;
    }
    if (auto r = Reserved().find(flag); r != Reserved().end())
      return InvalidArgumentError(source + ": hyperparameter \"" + key + "\" is set by ctrain launch from " + r->second +
                                  "; leave it out");
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
    if (flag == "epochs") {
      char* end = nullptr;
      const long e = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || e < 1)
        return InvalidArgumentError(source + ": hyperparameter \"" + key + "\" must be a whole number >= 1, got \"" + value + "\"");
      out.epochs = static_cast<int32_t>(e);
    }
    out.train_args.push_back("--" + flag + "=" + value);
  }
  return out;
}

}  // namespace ctrain::launch
