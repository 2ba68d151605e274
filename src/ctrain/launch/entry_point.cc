#include "ctrain/launch/entry_point.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "ctrain/io/file.h"

namespace ctrain::launch {
namespace fs = std::filesystem;
using json = nlohmann::json;  // sorted keys: the toolkit's json.dumps(sort_keys=True)

namespace {

// The toolkit's value format (mapping.to_env_vars): a string as it is, anything else as
// json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True).
std::string EnvText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump(-1, ' ', /*ensure_ascii=*/true);
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::toupper(ch); });
  return s;
}

// Python's repr() of a str: single quotes unless the text holds one and no double quote.
std::string PythonRepr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char ch : s) {
    if (ch == '\\' || ch == static_cast<unsigned char>(q)) out += '\\', out += static_cast<char>(ch);
    else if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else out += static_cast<char>(ch);
  }
  return out + q;
}

// Python's repr() of a decoded JSON value inside a list or dict.
std::string PythonReprOf(const json& v) {
  if (v.is_string()) return PythonRepr(v.get<std::string>());
  if (v.is_null()) return "None";
  if (v.is_object()) {
    std::string out = "{";
    for (auto it = v.begin(); it != v.end(); ++it)
      out += (out.size() > 1 ? ", " : "") + PythonRepr(it.key()) + ": " + PythonReprOf(it.value());
    return out + "}";
  }
  return PythonArgText(v);
}

// A config file's JSON (resourceconfig.json, inputdataconfig.json), or {} when it is absent.
json ConfigJson(const std::string& path) {
  StatusOr<std::string> text = io::ReadFileToString(path);
  if (!text.ok()) return json::object();
  json j = json::parse(*text, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// GPUs as the toolkit counts them (nvidia-smi --list-gpus): the NVIDIA device files.
int NumGpus() {
  int n = 0;
  std::error_code ec;
  static const std::regex kGpu("nvidia[0-9]+");
  for (const auto& e : fs::directory_iterator("/dev", ec))
    if (std::regex_match(e.path().filename().string(), kGpu)) ++n;
  return n;
}

}  // namespace

std::string PythonArgText(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d)) && std::abs(d) < 1e16) {
      std::string t = json(static_cast<int64_t>(d)).dump();
      return t + ".0";  // Python's repr of a whole float
    }
    return v.dump();
  }
  if (v.is_number()) return v.dump();
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + PythonReprOf(v[i]);
    return out + "]";
  }
  std::string out;  // an object: "k=v,k2=v2", sorted (mapping.to_cmd_args)
  for (auto it = v.begin(); it != v.end(); ++it) out += (out.empty() ? "" : ",") + it.key() + "=" + PythonArgText(it.value());
  return out;
}

StatusOr<std::string> FindOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  if (const char* path = std::getenv("PATH")) {
    const std::string p = path;
    for (size_t a = 0; a <= p.size();) {
      size_t b = p.find(':', a);
      if (b == std::string::npos) b = p.size();
      const std::string cand = (b > a ? p.substr(a, b - a) : std::string(".")) + "/" + name;
      if (::access(cand.c_str(), X_OK) == 0) return cand;
      a = b + 1;
    }
  }
  return NotFoundError(name + " is not on PATH");
}

StatusOr<EntryPoint> ResolveEntryPoint(const Contract& c, const MappedHyperparameters& hp, const LaunchOptions& o) {
  EntryPoint e;
  if (o.entry_point.empty() && hp.program.empty()) return e;
  if (!o.entry_point.empty() && !hp.program.empty())
    return InvalidArgumentError("--entry-point " + o.entry_point[0] + " and the hyperparameter sagemaker_program \"" +
                                hp.program + "\" both name the script to run: give one");
  if (hp.parameter_server)
    return InvalidArgumentError("a user entry point (" + (hp.program.empty() ? o.entry_point[0] : hp.program) +
                                ") with distribution parameter_server: the parameter-server layout runs ctrain's own "
                                "workers; leave one out");
  std::string script;
  if (!o.entry_point.empty()) {
    script = o.entry_point[0];
    e.user_entry_point = script;
    e.module_dir = fs::absolute(script).parent_path().string();
  } else {
    // The code directory: what sagemaker_submit_directory names here, else <root>/code.
    std::string dir = hp.submit_directory;
    if (dir.starts_with("file://")) dir = dir.substr(7);
    std::error_code ec;
    const bool local = !dir.empty() && dir.find("://") == std::string::npos;
    if (local && !fs::is_directory(dir, ec))
      return NotFoundError("hyperparameter sagemaker_submit_directory \"" + hp.submit_directory +
                           "\" is not a directory here (ctrain launch runs the code of a directory: extract a "
                           "source tarball first)");
    if (!local) dir = c.root + "/code";
    script = dir + "/" + hp.program;
    if (!fs::is_regular_file(script, ec))
      return NotFoundError("sagemaker_program \"" + hp.program + "\": " + script + " is not a file" +
                           (hp.submit_directory.find("://") != std::string::npos &&
                                    !hp.submit_directory.starts_with("file://")
                                ? " (sagemaker_submit_directory " + hp.submit_directory +
                                      ": ctrain launch downloads no code; the image must hold it in " + dir + ")"
                                : ""));
    e.dir = dir;
    e.user_entry_point = hp.program;
    e.module_dir = hp.submit_directory.empty() ? dir : hp.submit_directory;
  }
  std::error_code ec;
  if (!fs::is_regular_file(script, ec)) return NotFoundError("--entry-point " + script + ": no such file");
  e.name = fs::path(script).filename().string();
  const auto ends = [&](const char* ext) { return e.name.size() > std::strlen(ext) && e.name.ends_with(ext); };
  if (ends(".py")) {
    StatusOr<std::string> python = FindOnPath(o.python);
    if (!python.ok())
      return NotFoundError(script + " is a Python script, but " + o.python + " is not on PATH (--python)");
    e.argv = {*python, script};
  } else if (ends(".sh")) {
    e.argv = {"/bin/sh", script};
  } else {
    if (::access(script.c_str(), X_OK) != 0)
      return InvalidArgumentError(script + " is not executable (and not a .py or .sh script)");
    e.argv = {script.find('/') == std::string::npos ? "./" + script : script};
  }
  if (!o.entry_point.empty()) e.argv.insert(e.argv.end(), o.entry_point.begin() + 1, o.entry_point.end());
  // The hyperparameters, as mapping.to_cmd_args(env.hyperparameters) gives them.
  const json user = json::parse(hp.user.dump());  // sorted keys
  for (auto it = user.begin(); it != user.end(); ++it) {
    e.user_args.push_back(it.key().size() > 1 ? "--" + it.key() : "-" + it.key());
    e.user_args.push_back(PythonArgText(it.value()));
  }
  e.argv.insert(e.argv.end(), e.user_args.begin(), e.user_args.end());
  return e;
}

std::vector<std::pair<std::string, std::string>> ScriptEnvironment(const Contract& c, const MappedHyperparameters& hp,
                                                                   const EntryPoint& e, const std::string& training_job,
                                                                   const std::string& dispatcher,
                                                                   const std::string& train_path) {
  std::vector<std::pair<std::string, std::string>> env;
  const auto put = [&](const std::string& name, const json& v) { env.emplace_back(name, EnvText(v)); };
  const ResourceConfig& rc = c.resources;
  const json resource = ConfigJson(c.root + "/input/config/resourceconfig.json");
  const json input = ConfigJson(c.root + "/input/config/inputdataconfig.json");
  json groups = json::array(), group_hosts = json::array();
  if (resource.contains("instance_groups") && resource["instance_groups"].is_array())
    for (const json& g : resource["instance_groups"]) {
      groups.push_back(g.value("instance_group_name", ""));
      if (g.value("instance_group_name", "") == rc.current_group) group_hosts = g.value("hosts", json::array());
    }
  put("SM_HOSTS", rc.hosts);
  put("SM_CURRENT_HOST", rc.current_host);
  put("SM_CURRENT_INSTANCE_TYPE", rc.current_instance_type);
  put("SM_CURRENT_INSTANCE_GROUP", rc.current_group);
  put("SM_CURRENT_INSTANCE_GROUP_HOSTS", group_hosts);
  put("SM_INSTANCE_GROUPS", groups);
  put("SM_IS_HETERO", groups.size() > 1);
  put("SM_NETWORK_INTERFACE_NAME", resource.value("network_interface_name", "eth0"));
  const json user = json::parse(hp.user.dump());
  put("SM_HPS", user);
  for (auto it = user.begin(); it != user.end(); ++it) put("SM_HP_" + Upper(it.key()), it.value());
  put("SM_USER_ARGS", e.user_args);
  put("SM_USER_ENTRY_POINT", e.user_entry_point);
  put("SM_MODULE_DIR", e.module_dir);
  json channels = json::array();
  for (auto it = input.begin(); it != input.end(); ++it) channels.push_back(it.key());
  put("SM_CHANNELS", channels);  // (json's keys come sorted)
  for (const auto& name : channels) put("SM_CHANNEL_" + Upper(name), c.root + "/input/data/" + name.get<std::string>());
  put("SM_MODEL_DIR", c.model_dir);
  put("SM_INPUT_DIR", c.root + "/input");
  put("SM_INPUT_CONFIG_DIR", c.root + "/input/config");
  put("SM_OUTPUT_DIR", c.root + "/output");
  put("SM_OUTPUT_DATA_DIR", c.output_data_dir);
  put("SM_OUTPUT_INTERMEDIATE_DIR", c.root + "/output/intermediate");
  put("SM_RESOURCE_CONFIG", resource);
  put("SM_INPUT_DATA_CONFIG", input);
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  put("SM_NUM_CPUS", cpus > 0 ? cpus : 1);
  put("SM_NUM_GPUS", NumGpus());
  const json decoded = json::parse(hp.decoded_json);
  put("SM_LOG_LEVEL", decoded.contains("sagemaker_container_log_level") ? decoded["sagemaker_container_log_level"]
                                                                        : json(20));  // logging.INFO
  env.emplace_back("CTRAIN_TRAINING_JOB_NAME", training_job);
  if (!dispatcher.empty()) {
    env.emplace_back("CTRAIN_DATA_SERVICE", dispatcher);
    env.emplace_back("CTRAIN_DATA_SERVICE_TRAIN", train_path);
  }
  return env;
}

}  // namespace ctrain::launch
