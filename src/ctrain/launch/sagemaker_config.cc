#include "ctrain/launch/sagemaker_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "ctrain/io/file.h"

namespace ctrain::launch {
namespace {

using nlohmann::ordered_json;

StatusOr<ordered_json> ParseJson(std::string_view text, const std::string& path) {
  try {
    return ordered_json::parse(text);
  } catch (const ordered_json::parse_error& e) {
    return InvalidArgumentError(path + ": not JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  }
}

Status BadConfig(const std::string& path, const std::string& what) { return InvalidArgumentError(path + ": " + what); }

StatusOr<std::string> GetString(const ordered_json& o, const char* key, const std::string& path, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) return BadConfig(path, where + "\"" + key + "\" is missing");
  if (!it->is_string()) return BadConfig(path, where + "\"" + key + "\" must be a string, got " + it->dump());
  return it->get<std::string>();
}

StatusOr<std::vector<std::string>> GetStrings(const ordered_json& o, const char* key, const std::string& path,
                                              const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) return BadConfig(path, where + "\"" + key + "\" is missing");
  if (!it->is_array()) return BadConfig(path, where + "\"" + key + "\" must be a list of strings, got " + it->dump());
  std::vector<std::string> out;
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      return BadConfig(path, where + "\"" + key + "\"[" + std::to_string(i) + "] must be a string, got " + (*it)[i].dump());
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string Upper(std::string s) {
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const InstanceGroup* ResourceConfig::FindGroup(const std::string& name) const {
  for (const auto& g : groups)
    if (g.name == name) return &g;
  return nullptr;
}

const InstanceGroup* ResourceConfig::GroupOf(const std::string& host) const {
  for (const auto& g : groups)
    if (std::find(g.hosts.begin(), g.hosts.end(), host) != g.hosts.end()) return &g;
  return nullptr;
}

const char* InputModeName(InputMode m) {
  switch (m) {
    case InputMode::kFile: return "File";
    case InputMode::kPipe: return "Pipe";
    case InputMode::kFastFile: return "FastFile";
  }
  return "?";
}

StatusOr<ResourceConfig> ParseResourceConfig(std::string_view text, const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(ordered_json j, ParseJson(text, path));
  if (!j.is_object()) return BadConfig(path, "must be a JSON object");
  ResourceConfig rc;
  CTRAIN_ASSIGN_OR_RETURN(rc.current_host, GetString(j, "current_host", path, ""));
  CTRAIN_ASSIGN_OR_RETURN(rc.hosts, GetStrings(j, "hosts", path, ""));
  if (rc.hosts.empty()) return BadConfig(path, "\"hosts\" is empty");
  if (std::find(rc.hosts.begin(), rc.hosts.end(), rc.current_host) == rc.hosts.end())
    return BadConfig(path, "current_host \"" + rc.current_host + "\" is not in \"hosts\"");
  const bool has_name = j.contains("current_group_name"), has_local = j.contains("current_instance_group");
  if (has_name) {
    CTRAIN_ASSIGN_OR_RETURN(rc.current_group, GetString(j, "current_group_name", path, ""));
  }
  if (has_local) {
    CTRAIN_ASSIGN_OR_RETURN(std::string local, GetString(j, "current_instance_group", path, ""));
    if (has_name && local != rc.current_group)
      return BadConfig(path, "current_group_name \"" + rc.current_group + "\" and current_instance_group \"" + local +
                           "\" disagree");
    rc.current_group = local;
  }
  if (j.contains("current_instance_type")) {
    CTRAIN_ASSIGN_OR_RETURN(rc.current_instance_type, GetString(j, "current_instance_type", path, ""));
  }
  if (auto it = j.find("instance_groups"); it != j.end()) {
    if (!it->is_array()) return BadConfig(path, "\"instance_groups\" must be a list, got " + it->dump());
    for (size_t i = 0; i < it->size(); ++i) {
      const ordered_json& g = (*it)[i];
      const std::string where = "instance_groups[" + std::to_string(i) + "].";
      if (!g.is_object()) return BadConfig(path, where.substr(0, where.size() - 1) + " must be an object");
      InstanceGroup ig;
      CTRAIN_ASSIGN_OR_RETURN(ig.name, GetString(g, "instance_group_name", path, where));
      CTRAIN_ASSIGN_OR_RETURN(ig.instance_type, GetString(g, "instance_type", path, where));
      CTRAIN_ASSIGN_OR_RETURN(ig.hosts, GetStrings(g, "hosts", path, where));
      if (rc.FindGroup(ig.name) != nullptr) return BadConfig(path, "instance group \"" + ig.name + "\" appears twice");
      for (const std::string& h : ig.hosts) {
        if (std::find(rc.hosts.begin(), rc.hosts.end(), h) == rc.hosts.end())
          return BadConfig(path, where + "hosts: \"" + h + "\" is not in \"hosts\"");
        if (const InstanceGroup* other = rc.GroupOf(h))
          return BadConfig(path, "host \"" + h + "\" is in two instance groups (\"" + other->name + "\", \"" + ig.name + "\")");
      }
      rc.groups.push_back(std::move(ig));
    }
  }
  if (rc.groups.empty()) {
    InstanceGroup g;
    g.name = rc.current_group.empty() ? "homogeneousCluster" : rc.current_group;
    g.instance_type = rc.current_instance_type;
    g.hosts = rc.hosts;
    rc.groups.push_back(std::move(g));
  }
  const InstanceGroup* mine = rc.GroupOf(rc.current_host);
  if (mine == nullptr) return BadConfig(path, "current_host \"" + rc.current_host + "\" is in no instance group");
  if (rc.current_group.empty()) rc.current_group = mine->name;
  if (rc.current_group != mine->name)
    return BadConfig(path, "current host \"" + rc.current_host + "\" is in instance group \"" + mine->name +
                         "\", not in the current group \"" + rc.current_group + "\"");
  if (rc.current_instance_type.empty()) rc.current_instance_type = mine->instance_type;
  for (const auto& h : rc.hosts)
    if (rc.GroupOf(h) == nullptr && rc.groups.size() > 1) return BadConfig(path, "host \"" + h + "\" is in no instance group");
  return rc;
}

StatusOr<Hyperparameters> ParseHyperparameters(std::string_view text, const std::string& path) {
  CTRAIN_ASSIGN_OR_RETURN(ordered_json j, ParseJson(text, path));
  if (!j.is_object()) return BadConfig(path, "must be a JSON object of strings");
  Hyperparameters out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string())
      return BadConfig(path, "hyperparameter \"" + it.key() + "\" must be a JSON string (SageMaker passes every value as one), got " +
                           it.value().dump());
    out.emplace_back(it.key(), it.value().get<std::string>());
  }
  return out;
}

StatusOr<std::vector<Channel>> ParseInputDataConfig(std::string_view text, const std::string& path,
                                                    const std::string& data_dir) {
  CTRAIN_ASSIGN_OR_RETURN(ordered_json j, ParseJson(text, path));
  if (!j.is_object()) return BadConfig(path, "must be a JSON object of channels");
  std::vector<Channel> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    Channel c;
    c.name = it.key();
    if (c.name.empty() || c.name.find('/') != std::string::npos || c.name[0] == '.')
      return BadConfig(path, "channel name \"" + c.name + "\" is not a plain name");
    if (!it.value().is_object()) return BadConfig(path, "channel \"" + c.name + "\" must be an object");
    CTRAIN_ASSIGN_OR_RETURN(std::string mode, GetString(it.value(), "TrainingInputMode", path, "channel \"" + c.name + "\": "));
    if (mode == "File") c.mode = InputMode::kFile;
    else if (mode == "Pipe") c.mode = InputMode::kPipe;
    else if (mode == "FastFile") c.mode = InputMode::kFastFile;
    else return BadConfig(path, "channel \"" + c.name + "\": TrainingInputMode \"" + mode + "\" is not File, Pipe or FastFile");
    c.dir = data_dir + "/" + c.name;
    if (it.value().contains("InstanceGroupNames")) {
      CTRAIN_ASSIGN_OR_RETURN(c.instance_group_names, GetStrings(it.value(), "InstanceGroupNames", path,
                                                                 "channel \"" + c.name + "\": "));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string ChannelDir(const std::string& root, const std::string& name, const EnvLookup& getenv) {
  const char* d = getenv ? getenv(("SM_CHANNEL_" + Upper(name)).c_str()) : nullptr;
  return d != nullptr && *d != '\0' ? std::string(d) : root + "/input/data/" + name;
}

StatusOr<Contract> LoadContract(const std::string& root, const EnvLookup& getenv) {
  auto env = [&](const std::string& name) -> std::string {
    const char* v = getenv ? getenv(name.c_str()) : nullptr;
    return v != nullptr ? std::string(v) : std::string();
  };
  Contract c;
  c.root = root;
  const std::string config = root + "/input/config/";
  const std::string rc_path = config + "resourceconfig.json";
  if (Exists(rc_path)) {
    CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(rc_path));
    CTRAIN_ASSIGN_OR_RETURN(c.resources, ParseResourceConfig(text, rc_path));
  } else if (!env("SM_CURRENT_HOST").empty()) {
    nlohmann::json j{{"current_host", env("SM_CURRENT_HOST")}};
    if (std::string hosts = env("SM_HOSTS"); !hosts.empty()) {
      nlohmann::json h = nlohmann::json::parse(hosts, nullptr, false);
      if (h.is_discarded()) return InvalidArgumentError("SM_HOSTS: not a JSON list: " + hosts);
      j["hosts"] = h;
    } else {
      j["hosts"] = {env("SM_CURRENT_HOST")};
    }
    if (std::string g = env("SM_CURRENT_INSTANCE_GROUP"); !g.empty()) j["current_group_name"] = g;
    if (std::string t = env("SM_CURRENT_INSTANCE_TYPE"); !t.empty()) j["current_instance_type"] = t;
    CTRAIN_ASSIGN_OR_RETURN(c.resources, ParseResourceConfig(j.dump(), "SM_CURRENT_HOST/SM_HOSTS"));
  } else {
    return NotFoundError(rc_path + ": missing (is this a SageMaker training container? give --sm-root)");
  }
  if (std::string h = env("SM_CURRENT_HOST"); !h.empty() && h != c.resources.current_host)
    return InvalidArgumentError("SM_CURRENT_HOST \"" + h + "\" disagrees with " + rc_path + " current_host \"" +
                                c.resources.current_host + "\"");
  if (const std::string hp = config + "hyperparameters.json"; Exists(hp)) {
    CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(hp));
    CTRAIN_ASSIGN_OR_RETURN(c.hyperparameters, ParseHyperparameters(text, hp));
  }
  if (const std::string idc = config + "inputdataconfig.json"; Exists(idc)) {
    CTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(idc));
    CTRAIN_ASSIGN_OR_RETURN(c.channels, ParseInputDataConfig(text, idc, root + "/input/data"));
  }
  for (Channel& ch : c.channels)
    if (ch.mode != InputMode::kPipe) ch.dir = ChannelDir(root, ch.name, getenv);
  c.model_dir = env("SM_MODEL_DIR").empty() ? root + "/model" : env("SM_MODEL_DIR");
  c.output_data_dir = env("SM_OUTPUT_DATA_DIR").empty() ? root + "/output/data" : env("SM_OUTPUT_DATA_DIR");
  c.failure_path = root + "/output/failure";
  return c;
}

}  // namespace ctrain::launch
