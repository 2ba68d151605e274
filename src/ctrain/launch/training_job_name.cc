#include "ctrain/launch/training_job_name.h"

#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "ctrain/io/feature_hash.h"

namespace ctrain::launch {

std::string TrainingJobName(const Contract& c, const EnvLookup& getenv) {
  if (getenv) {
    const char* name = getenv("TRAINING_JOB_NAME");
    if (name != nullptr && *name != '\0') return name;
  }
  std::string key = "hyperparameters\n";
  for (const auto& [k, v] : c.hyperparameters) key += k + "=" + v + "\n";
  key += "hosts\n";
  for (const std::string& h : c.resources.hosts) key += h + "\n";
  key += "groups\n";
  for (const InstanceGroup& g : c.resources.groups) {
    key += g.name + ":" + g.instance_type + ":";
    for (const std::string& h : g.hosts) key += h + ",";
    key += "\n";
  }
  key += "trees in\n" + std::filesystem::absolute(c.root).lexically_normal().parent_path().string() + "\n";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(io::Hash64(key, 0)));
  return std::string("launch-") + hex;
}

}  // namespace ctrain::launch
