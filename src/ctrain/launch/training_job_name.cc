#include "ctrain/launch/training_job_name.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "ctrain/io/feature_hash.h"

namespace ctrain::launch {
namespace {

namespace fs = std::filesystem;

// (path relative to `dir`, size) of every regular file below `dir`, sorted.
std::vector<std::pair<std::string, uintmax_t>> ChannelFiles(const std::string& dir) {
  std::vector<std::pair<std::string, uintmax_t>> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fe;
    if (!it->is_regular_file(fe)) continue;
    const uintmax_t size = it->file_size(fe);
    files.emplace_back(fs::relative(it->path(), dir, fe).string(), fe ? 0 : size);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

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
  key += "channels\n";
  for (const Channel& ch : c.channels) {
    key += ch.name + ":" + InputModeName(ch.mode) + "\n";
    if (ch.mode == InputMode::kPipe) continue;  // FIFOs: nothing to list
    for (const auto& [path, size] : ChannelFiles(ch.dir)) key += path + "\t" + std::to_string(size) + "\n";
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(io::Hash64(key, 0)));
  return std::string("launch-") + hex;
}

}  // namespace ctrain::launch
