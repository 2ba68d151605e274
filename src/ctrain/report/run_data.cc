#include "ctrain/report/run_data.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "ctrain/io/file.h"

namespace ctrain::report {
namespace fs = std::filesystem;

StatusOr<RunData> LoadRun(const std::string& dir) {
  RunData run;
  run.dir = dir;
  run.name = fs::path(dir).lexically_normal().filename().string();
  if (run.name.empty() || run.name == ".") run.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFoundError(dir + ": not a directory");
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().filename() == "metrics.jsonl") files.push_back(it->path().string());
  }
  if (ec) return IOError(dir + ": " + ec.message());
  if (files.empty()) return NotFoundError(dir + ": no metrics.jsonl below it (run `ctrain launch` with monitoring first)");
  std::sort(files.begin(), files.end());
  run.start_time = std::numeric_limits<double>::infinity();
  for (const std::string& f : files) {
    RoleSeries rs;
    const fs::path d = fs::path(f).parent_path();
    rs.dir = d.string();
    fs::path role_json = d / "role.json";
    if (!fs::exists(role_json) && d.filename().string().rfind("rank", 0) == 0) {
      role_json = d.parent_path() / "role.json";
      rs.rank = std::atoi(d.filename().string().c_str() + 4);
    }
    if (!fs::exists(role_json)) continue;  // not a launched role: nothing to group it by
    CTRAIN_ASSIGN_OR_RETURN(std::string rj, io::ReadFileToString(role_json.string()));
    nlohmann::json r = nlohmann::json::parse(rj, nullptr, false);
    if (r.is_discarded() || !r.is_object()) return InvalidArgumentError(role_json.string() + ": not a JSON object");
    rs.host = r.value("host", "");
    rs.role = r.value("role", "");
    rs.instance_group = r.value("instance_group", "");
    rs.instance_type = r.value("instance_type", "");
    rs.group_hosts = r.value("group_hosts", 1);
    std::ifstream in(f);
    std::string line;
    int64_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        return InvalidArgumentError(f + ":" + std::to_string(n) + ": not a JSON object");
      const std::string kind = j.value("kind", "");
      if (kind == "start") continue;
      Sample s;
      s.time = j.value("time", 0.0);
      s.step = j.value("step", int64_t{0});
      if (auto v = j.find("values"); v != j.end() && v->is_object())
        for (auto it = v->begin(); it != v->end(); ++it)
          if (it.value().is_number()) s.values[it.key()] = it.value().get<double>();
      run.start_time = std::min(run.start_time, s.time);
      if (kind == "system") rs.system.push_back(std::move(s));
      else if (kind == "train") rs.train.push_back(std::move(s));
      else if (kind == "eval") rs.eval.push_back(std::move(s));
    }
    run.roles.push_back(std::move(rs));
  }
  if (run.roles.empty()) return NotFoundError(dir + ": no metrics.jsonl with a role.json (launched by ctrain launch)");
  if (!std::isfinite(run.start_time)) run.start_time = 0;
  std::sort(run.roles.begin(), run.roles.end(), [](const RoleSeries& a, const RoleSeries& b) {
    return std::tie(a.host, a.role, a.rank) < std::tie(b.host, b.role, b.rank);
  });
  return run;
}

}  // namespace ctrain::report
