#include "ctrain/job/config_file.h"

#include <sstream>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ctrain/io/file.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_job.h"

namespace ctrain::job {

Status ApplyTrainConfigFile(const std::string& path, TrainJobOptions* options, ExplicitOptions* given) {
  CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  nlohmann::json j;
  if (is_json) {
    j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgumentError(path + ": not a JSON object");
  } else {
    toml::table tbl;
    try {
      tbl = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      std::ostringstream os;
      os << e.description() << " (line " << e.source().begin.line << ", column " << e.source().begin.column << ")";
      return InvalidArgumentError(path + ": " + os.str());
    }
    std::ostringstream os;
    os << toml::json_formatter{tbl};
    j = nlohmann::json::parse(os.str(), nullptr, false);
    if (j.is_discarded()) return InternalError(path + ": could not convert TOML");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_object())
      return InvalidArgumentError(path + ": key '" + it.key() + "': nested tables are not supported (use flat keys)");
    const OptionSpec* spec = FindTrainOption(it.key());
    if (spec != nullptr && spec->name == "config")
      return InvalidArgumentError(path + ": 'config' cannot be set from a config file");
  }
  const ExplicitOptions before = *given;
  return ApplyTrainOptions(j, path, options, given, &before);
}

StatusOr<TrainJobOptions> TrainJobOptionsFromValues(const nlohmann::json& values, const std::string& source) {
  TrainJobOptions o;
  CTRAIN_RETURN_IF_ERROR(ApplyTrainOptions(values, source, &o, &o.given));
  if (!o.config.empty()) CTRAIN_RETURN_IF_ERROR(ApplyTrainConfigFile(o.config, &o, &o.given));
  return o;
}

}  // namespace ctrain::job
