#include "ctrain/launch/ps_layout.h"

#include <nlohmann/json.hpp>

#include "ctrain/service/server.h"

namespace ctrain::launch {
namespace {

using json = nlohmann::json;

// A cluster list of "HOST:PORT" strings (absent: empty). Errors name the key and entry.
StatusOr<std::vector<std::string>> Addresses(const json& cluster, const char* key) {
  std::vector<std::string> out;
  if (!cluster.contains(key)) return out;
  const json& list = cluster[key];
  if (!list.is_array()) return InvalidArgumentError(std::string("TF_CONFIG: cluster.") + key + " is not a list");
  for (const json& a : list) {
    if (!a.is_string())
      return InvalidArgumentError(std::string("TF_CONFIG: cluster.") + key + " holds " + a.dump() + ", not HOST:PORT");
    CTRAIN_RETURN_IF_ERROR(service::CheckHostPort(a.get<std::string>(), std::string("TF_CONFIG cluster.") + key));
    out.push_back(a.get<std::string>());
  }
  return out;
}

}  // namespace

StatusOr<std::optional<PsLayout>> ReadTfConfig(const EnvLookup& getenv) {
  const char* text = getenv ? getenv("TF_CONFIG") : nullptr;
  if (text == nullptr || *text == '\0') return std::optional<PsLayout>();
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("TF_CONFIG is not a JSON object: " + std::string(text));
  if (!j.contains("cluster") || !j["cluster"].is_object())
    return InvalidArgumentError("TF_CONFIG has no \"cluster\" object");
  if (!j.contains("task") || !j["task"].is_object()) return InvalidArgumentError("TF_CONFIG has no \"task\" object");
  const json& cluster = j["cluster"];
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> chief, Addresses(cluster, "chief"));
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> master, Addresses(cluster, "master"));
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> workers, Addresses(cluster, "worker"));
  CTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> ps, Addresses(cluster, "ps"));
  chief.insert(chief.end(), master.begin(), master.end());
  if (chief.size() > 1)
    return InvalidArgumentError("TF_CONFIG names " + std::to_string(chief.size()) + " chiefs (chief and master): one at most");
  if (ps.empty()) return InvalidArgumentError("TF_CONFIG: cluster has no \"ps\": not a parameter-server job");
  if (chief.empty() && workers.empty()) return InvalidArgumentError("TF_CONFIG: cluster has no chief and no worker");
  const json& task = j["task"];
  const std::string type = task.value("type", "");
  if (!task.contains("index") || !task["index"].is_number_integer())
    return InvalidArgumentError("TF_CONFIG: task.index is not a whole number");
  const int64_t index = task["index"].get<int64_t>();
  PsLayout l;
  l.source = "TF_CONFIG";
  l.servers = ps;
  l.num_workers = static_cast<int32_t>(chief.size() + workers.size());
  auto in = [&](const std::vector<std::string>& list) -> Status {
    if (index < 0 || index >= static_cast<int64_t>(list.size()))
      return InvalidArgumentError("TF_CONFIG: task " + type + " index " + std::to_string(index) + " is not in [0, " +
                                  std::to_string(list.size()) + ")");
    return Status::OK();
  };
  if (type == "ps") {
    CTRAIN_RETURN_IF_ERROR(in(ps));
    l.shard = static_cast<int32_t>(index);
    const std::string& a = ps[index];
    const size_t colon = a.rfind(':');
    l.listen_host = a.substr(0, colon);
    if (l.listen_host.size() > 2 && l.listen_host.front() == '[') l.listen_host = l.listen_host.substr(1, l.listen_host.size() - 2);
    l.listen_port = std::stoi(a.substr(colon + 1));
  } else if (type == "chief" || type == "master") {
    CTRAIN_RETURN_IF_ERROR(in(chief));
    l.worker_index = 0;
  } else if (type == "worker") {
    CTRAIN_RETURN_IF_ERROR(in(workers));
    l.worker_index = static_cast<int32_t>(chief.size() + index);
  } else if (type == "evaluator") {
    return InvalidArgumentError("TF_CONFIG: task type \"evaluator\" is not run by ctrain launch: the chief evaluates "
                                "the validation channel itself");
  } else {
    return InvalidArgumentError("TF_CONFIG: task type \"" + type + "\" is none of chief, master, worker, ps");
  }
  return std::optional<PsLayout>(std::move(l));
}

PsLayout SageMakerPsLayout(const std::vector<std::string>& hosts, const std::vector<std::string>& addresses,
                           const std::string& current_host, int32_t port) {
  PsLayout l;
  l.source = "resourceconfig.json";
  l.num_workers = static_cast<int32_t>(hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    l.servers.push_back(service::JoinHostPort(addresses[i], port));
    if (hosts[i] == current_host) {
      l.shard = l.worker_index = static_cast<int32_t>(i);
      l.listen_host = addresses[i];
      l.listen_port = port;
    }
  }
  return l;
}

}  // namespace ctrain::launch
