#include "ctrain/report/report.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "ctrain/io/file.h"

namespace ctrain::report {
namespace fs = std::filesystem;
namespace {

// Runs `gnuplot script` and returns its wait status and its stdout and stderr together. The child starts
// with an empty signal mask and default dispositions: this process blocks its interrupts on every thread
// (base/signals.h), and a popen(3) child would inherit that.
StatusOr<std::pair<int, std::string>> RunGnuplot(const std::string& gnuplot, const std::string& script) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError(script, "pipe", errno);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string g = gnuplot, sc = script;
  char* argv[] = {g.data(), sc.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, gnuplot.c_str(), &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return ErrnoError(gnuplot, "cannot run gnuplot", rc);
  }
  std::string out;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return std::make_pair(st, out);
}

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
std::string Pct(double v) { return v < 0 ? "-" : Fmt("%.0f %%", v); }
std::string Money(double v) { return v < 0 ? "-" : Fmt("$%.3f", v); }
// A cost per million examples: 4 significant digits (a fast job's is a fraction of a cent).
std::string UnitCost(double v) {
  if (v < 0) return "-";
  const int decimals = v > 0 ? std::clamp(3 - static_cast<int>(std::floor(std::log10(v))), 3, 9) : 3;
  return Fmt(("$%." + std::to_string(decimals) + "f").c_str(), v);
}

// Per host: per 1 s bucket, the sum over its roles of each role's mean cpu/process_percent in that
// second (a role sampled every 200 ms, or twice in one second at its exit, counts once).
void HostCpu(const std::vector<const RoleSeries*>& roles, double* mean, double* peak) {
  std::map<int64_t, double> buckets;
  for (const RoleSeries* r : roles) {
    std::map<int64_t, std::pair<double, int>> own;  // second -> (sum, samples)
    for (const Sample& s : r->system)
      if (auto it = s.values.find("cpu/process_percent"); it != s.values.end()) {
        auto& [sum, n] = own[static_cast<int64_t>(s.time)];
        sum += it->second, ++n;
      }
    for (const auto& [t, sn] : own) buckets[t] += sn.first / sn.second;
  }
  double sum = 0;
  *peak = 0;
  for (const auto& [t, v] : buckets) sum += v, *peak = std::max(*peak, v);
  *mean = buckets.empty() ? 0 : sum / buckets.size();
}

// A trainer's step time (ms per step), examples/s and input wait (%) over its train lines, the first
// dropped (warm-up); unchanged when there is no other line.
void TrainRate(const RoleSeries& r, double* step_ms, double* examples_per_sec, double* input_wait_percent) {
  double secs = 0, examples = 0, wait = 0;
  int64_t n = 0;
  for (size_t i = 1; i < r.train.size(); ++i) {
    const auto& v = r.train[i].values;
    auto get = [&](const char* k) {
      auto it = v.find(k);
      return it == v.end() ? 0.0 : it->second;
    };
    const double t = get("train/step_time_ms") / 1000.0;
    secs += t, examples += get("train/examples_per_sec") * t, wait += get("train/input_wait_percent") * t, ++n;
  }
  if (n > 0 && secs > 0) {
    *step_ms = 1000.0 * secs / n;
    *examples_per_sec = examples / secs;
    *input_wait_percent = wait / secs;
  }
}

// Whether any of a trainer's lines has a loss (ctrain's trainer: every line; a script's: none).
bool HasLoss(const RoleSeries& r) {
  for (const Sample& x : r.train)
    if (x.values.count("train/loss")) return true;
  return false;
}

// Mean and peak of the gpu*/utilization_percent samples of `roles` (-1 if none).
void HostGpu(const std::vector<const RoleSeries*>& roles, double* mean, double* peak) {
  double sum = 0;
  int64_t n = 0;
  *peak = -1;
  for (const RoleSeries* r : roles)
    for (const Sample& s : r->system)
      for (const auto& [k, v] : s.values)
        if (k.rfind("gpu", 0) == 0 && k.find("/utilization_percent") != std::string::npos)
          sum += v, ++n, *peak = std::max(*peak, v);
  *mean = n ? sum / n : -1;
}

}  // namespace

StatusOr<Prices> ParsePrices(const std::string& text, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return InvalidArgumentError(path + ": not TOML (line " + std::to_string(e.source().begin.line) + "): " +
                                std::string(e.description()));
  }
  Prices p;
  p.source = path;
  p.region = t["region"].value_or(std::string());
  p.date = t["date"].value_or(std::string());
  p.currency = t["currency"].value_or(std::string("USD"));
  const toml::table* od = t["on_demand_per_hour"].as_table();
  if (od == nullptr) return InvalidArgumentError(path + ": no [on_demand_per_hour] table (\"instance type\" = price)");
  for (const auto& [k, v] : *od) {
    std::optional<double> d = v.value<double>();
    if (!d || *d < 0)
      return InvalidArgumentError(path + ": on_demand_per_hour.\"" + std::string(k.str()) + "\" must be a number >= 0");
    p.per_hour[std::string(k.str())] = *d;
  }
  return p;
}

RunSummary Summarize(const RunData& run, const Prices& prices) {
  RunSummary s;
  s.name = run.name;
  s.dir = run.dir;
  std::vector<std::string> order;  // groups in host order
  std::map<std::string, std::vector<const RoleSeries*>> by_group;
  for (const RoleSeries& r : run.roles) {
    if (by_group.find(r.instance_group) == by_group.end()) order.push_back(r.instance_group);
    by_group[r.instance_group].push_back(&r);
  }
  bool priced = true;
  for (const std::string& g : order) {
    GroupRow row;
    row.group = g;
    std::map<std::string, std::vector<const RoleSeries*>> hosts;
    std::set<std::string> roles;
    for (const RoleSeries* r : by_group[g]) {
      hosts[r->host].push_back(r);
      roles.insert(r->role);
      row.instance_type = r->instance_type;
      row.count = std::max(row.count, r->group_hosts);
    }
    for (const std::string& r : roles) row.roles += (row.roles.empty() ? "" : "+") + r;
    double cpu_sum = 0, gpu_sum = 0;
    int gpu_hosts = 0;
    for (const auto& [h, rs] : hosts) {
      double m, p;
      HostCpu(rs, &m, &p);
      cpu_sum += m, row.cpu_peak = std::max(row.cpu_peak, p);
      HostGpu(rs, &m, &p);
      if (m >= 0) gpu_sum += m, ++gpu_hosts, row.gpu_peak = std::max(row.gpu_peak, p);
    }
    row.cpu_mean = hosts.empty() ? 0 : cpu_sum / hosts.size();
    row.gpu_mean = gpu_hosts ? gpu_sum / gpu_hosts : -1;
    double fill = 0;
    int64_t fills = 0;
    std::vector<const RoleSeries*> other_ranks;  // trainer ranks other than 0
    bool script = false;
    for (const RoleSeries* r : by_group[g]) {
      if (r->role == "data-worker") {
        ++s.data_workers;
        for (const Sample& x : r->system)
          if (auto it = x.values.find("data/queue_fill_percent"); it != x.values.end()) fill += it->second, ++fills;
      }
      if (r->role != "trainer" || r->train.empty()) continue;
      if (r->rank != 0) {
        other_ranks.push_back(r);
        continue;
      }
      row.trains = true;
      script = !HasLoss(*r);
      TrainRate(*r, &row.step_ms, &row.examples_per_sec, &row.input_wait_percent);
      if (!r->eval.empty())
        if (auto it = r->eval.back().values.find("eval/auc"); it != r->eval.back().values.end()) s.final_auc = it->second;
    }
    // ctrain's trainer counts every rank's examples in each step; a user's script (steps without a loss:
    // python/src/script_monitor.h) counts its own rank's, so its ranks' rates add up.
    if (row.trains && script)
      for (const RoleSeries* r : other_ranks) {
        double step_ms = 0, rate = 0, wait = 0;
        TrainRate(*r, &step_ms, &rate, &wait);
        row.examples_per_sec += rate;
      }
    if (fills > 0) row.data_queue_fill_percent = fill / fills;
    if (auto it = prices.per_hour.find(row.instance_type); it != prices.per_hour.end()) {
      row.price_per_hour = it->second;
      row.cost_per_hour = it->second * row.count;
    } else {
      priced = false;
    }
    if (row.trains) s.examples_per_sec = row.examples_per_sec, s.step_ms = row.step_ms,
                    s.input_wait_percent = row.input_wait_percent;
    s.cluster += (s.cluster.empty() ? "" : " + ") + std::to_string(row.count) + " x " + row.instance_type + " (" + g + ")";
    s.groups.push_back(row);
  }
  if (priced) {
    s.cost_per_hour = 0;
    for (const GroupRow& g : s.groups) s.cost_per_hour += g.cost_per_hour;
    if (s.examples_per_sec > 0) s.cost_per_million = s.cost_per_hour / (s.examples_per_sec * 3600.0) * 1e6;
  }
  s.verdict = Verdict(s);
  return s;
}

std::string Verdict(const RunSummary& s) {
  const double w = s.input_wait_percent / 100.0;
  const GroupRow* data = nullptr;
  for (const GroupRow& g : s.groups)  // a data group: ctrain's workers (queue fill), or any data-worker role
    if (!g.trains && (g.data_queue_fill_percent >= 0 || g.roles.find("data-worker") != std::string::npos)) data = &g;
  if (s.examples_per_sec <= 0) return "no verdict: no training steps were recorded";
  const std::string wait = Fmt("%.0f %%", 100 * w);
  if (w < 0.10) {
    std::string v = "compute-bound: the trainer waits only " + wait + " on input";
    if (data != nullptr && data->data_queue_fill_percent >= 50)
      v += "; the data workers run ahead (queues " + Pct(data->data_queue_fill_percent) + " full, CPU " +
           Pct(data->cpu_mean) + "): fewer or smaller data hosts would cost less";
    else if (data != nullptr && data->data_queue_fill_percent < 0)
      v += "; the data hosts keep up (CPU " + Pct(data->cpu_mean) + ")";
    else if (data != nullptr)
      v += "; the data workers keep up (CPU " + Pct(data->cpu_mean) + ", queues " +
           Pct(data->data_queue_fill_percent) + " full)";
    else
      v += "; a faster trainer instance (or more trainers) would speed it up";
    return v;
  }
  if (data == nullptr)
    return "input-bound: the trainer waits " + wait +
           " on input on its own CPUs: move the input pipeline to data hosts (hyperparameter data_group) or raise "
           "--num-parallel-calls";
  if (data->data_queue_fill_percent < 0)  // data hosts that record no queues (another data service)
    return "input-bound: the trainer waits " + wait + " on input from its data hosts (CPU " + Pct(data->cpu_mean) +
           "; their queues are not recorded): more or faster data hosts, or a faster input service";
  if (data->data_queue_fill_percent >= 50)
    return "input-bound: the trainer waits " + wait + " on input although the data workers' queues are " +
           Pct(data->data_queue_fill_percent) + " full: the limit is the transfer or the trainer, not the workers";
  const int32_t W = std::max(1, s.data_workers);
  const int32_t need = static_cast<int32_t>(std::ceil(W / std::max(0.01, 1.0 - w) - 1e-9));
  return "input-bound: the trainer waits " + wait + " on input while the data workers are saturated (queue fill " +
         Pct(data->data_queue_fill_percent) + ", CPU " + Pct(data->cpu_mean) + "): add " +
         std::to_string(std::max(1, need - W)) + " data worker" + (need - W > 1 ? "s" : "");
}

std::string FormatMarkdown(const std::vector<RunSummary>& runs, const Prices& prices) {
  std::ostringstream o;
  o << "# ctrain report\n\n";
  if (!prices.source.empty())
    o << "Prices: " << prices.source << " (on-demand, " << prices.currency << " per hour"
      << (prices.region.empty() ? "" : ", " + prices.region) << (prices.date.empty() ? "" : ", as of " + prices.date)
      << ").\n\n";
  for (const RunSummary& s : runs) {
    o << "## " << s.name << ": " << s.cluster << "\n\n";
    o << "| instance group | instance type | count | roles | CPU mean | CPU peak | GPU mean | GPU peak | step time | "
         "examples/s | input wait | $/hour |\n";
    o << "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const GroupRow& g : s.groups)
      o << "| " << g.group << " | " << g.instance_type << " | " << g.count << " | " << g.roles << " | "
        << Pct(g.cpu_mean) << " | " << Pct(g.cpu_peak) << " | " << Pct(g.gpu_mean) << " | " << Pct(g.gpu_peak) << " | "
        << (g.trains ? Fmt("%.1f ms", g.step_ms) : "-") << " | " << (g.trains ? Fmt("%.0f", g.examples_per_sec) : "-")
        << " | " << (g.trains ? Pct(g.input_wait_percent) : "-") << " | " << Money(g.cost_per_hour) << " |\n";
    o << "\nCluster: " << Money(s.cost_per_hour) << " per hour, " << Fmt("%.0f", s.examples_per_sec)
      << " examples/s, " << UnitCost(s.cost_per_million) << " per million examples"
      << (s.final_auc >= 0 ? Fmt(", final validation AUC %.4f", s.final_auc) : "") << ".\n\n";
    o << "Verdict: " << s.verdict << "\n\n";
  }
  if (runs.size() >= 2) {
    o << "## Side by side\n\n| | ";
    for (const RunSummary& s : runs) o << s.name << " | ";
    o << "\n|---|";
    for (size_t i = 0; i < runs.size(); ++i) o << "---:|";
    o << "\n";
    auto row = [&](const char* label, auto f) {
      o << "| " << label << " | ";
      for (const RunSummary& s : runs) o << f(s) << " | ";
      o << "\n";
    };
    row("cluster", [](const RunSummary& s) { return s.cluster; });
    row("$/hour", [](const RunSummary& s) { return Money(s.cost_per_hour); });
    row("examples/s", [](const RunSummary& s) { return Fmt("%.0f", s.examples_per_sec); });
    row("step time", [](const RunSummary& s) { return Fmt("%.1f ms", s.step_ms); });
    row("input wait", [](const RunSummary& s) { return Pct(s.input_wait_percent); });
    row("$ per million examples", [](const RunSummary& s) { return UnitCost(s.cost_per_million); });
    const double base = runs[0].cost_per_million;
    row("vs the first run", [&](const RunSummary& s) -> std::string {
      if (&s == &runs[0]) return "baseline";
      if (base <= 0 || s.cost_per_million < 0) return "-";
      const double d = 100.0 * (1.0 - s.cost_per_million / base);
      return d >= 0 ? Fmt("%.0f %% cheaper", d) : Fmt("%.0f %% dearer", -d);
    });
    row("verdict", [](const RunSummary& s) { return s.verdict.substr(0, s.verdict.find(':')); });
    o << "\n";
  }
  return o.str();
}

std::string FormatCsv(const std::vector<RunSummary>& runs) {
  std::ostringstream o;
  o << "run,instance_group,instance_type,count,roles,cpu_mean_percent,cpu_peak_percent,gpu_mean_percent,gpu_peak_percent,"
       "step_time_ms,examples_per_sec,input_wait_percent,price_per_hour,cost_per_hour,cluster_cost_per_hour,"
       "cluster_cost_per_million_examples,verdict\n";
  auto num = [](double v) { return v < 0 ? std::string() : Fmt("%.6g", v); };
  for (const RunSummary& s : runs)
    for (const GroupRow& g : s.groups) {
      std::string verdict = s.verdict;
      std::string q;
      for (char c : verdict) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      o << s.name << "," << g.group << "," << g.instance_type << "," << g.count << "," << g.roles << ","
        << num(g.cpu_mean) << "," << num(g.cpu_peak) << "," << num(g.gpu_mean) << "," << num(g.gpu_peak) << ","
        << (g.trains ? num(g.step_ms) : "") << "," << (g.trains ? num(g.examples_per_sec) : "") << ","
        << (g.trains ? num(g.input_wait_percent) : "") << "," << num(g.price_per_hour) << "," << num(g.cost_per_hour)
        << "," << num(s.cost_per_hour) << "," << num(s.cost_per_million) << ",\"" << q << "\"\n";
    }
  return o.str();
}

StatusOr<std::vector<std::string>> WriteCharts(const RunData& run, const std::string& out_dir) {
  std::string gnuplot;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    std::string d;
    while (std::getline(in, d, ':'))
      if (::access((d + "/gnuplot").c_str(), X_OK) == 0) {
        gnuplot = d + "/gnuplot";
        break;
      }
  }
  if (gnuplot.empty())
    return FailedPreconditionError("gnuplot is not on PATH: no PNG charts (Debian: apt-get install gnuplot-nox, "
                                   "scripts/install-deps.sh)");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return IOError(out_dir + ": cannot create: " + ec.message());
  const std::string base = out_dir + "/" + run.name;
  std::vector<std::string> pngs;
  // Step time of each trainer over elapsed seconds.
  {
    std::string plots;
    int k = 0;
    for (const RoleSeries& r : run.roles) {
      if (r.train.empty()) continue;
      const std::string dat = base + "_step_time_" + std::to_string(k) + ".dat";
      std::ofstream d(dat);
      for (const Sample& s : r.train)
        if (auto it = s.values.find("train/step_time_ms"); it != s.values.end())
          d << (s.time - run.start_time) << " " << it->second << "\n";
      plots += (plots.empty() ? "" : ", ") + ("'" + dat + "' using 1:2 with lines title '" + r.host + " " + r.role +
                                               (r.rank ? " rank " + std::to_string(r.rank) : "") + "'");
      ++k;
    }
    if (!plots.empty()) {
      const std::string png = base + "_step_time.png";
      const std::string gp = base + "_step_time.gp";
      std::ofstream g(gp);
      g << "set terminal pngcairo size 1000,500\nset output '" << png << "'\nset title 'step time (" << run.name
        << ")'\nset xlabel 'seconds since start'\nset ylabel 'ms per step'\nset grid\nset key outside\nplot " << plots
        << "\n";
      g.close();
      pngs.push_back(png);
    }
  }
  // CPU (and GPU) utilisation of each role over elapsed seconds.
  {
    std::string plots;
    int k = 0;
    for (const RoleSeries& r : run.roles) {
      const std::string dat = base + "_util_" + std::to_string(k) + ".dat";
      std::ofstream d(dat);
      bool gpu = false;
      for (const Sample& s : r.system) {
        auto c = s.values.find("cpu/process_percent");
        auto u = s.values.find("gpu0/utilization_percent");
        gpu |= u != s.values.end();
        d << (s.time - run.start_time) << " " << (c == s.values.end() ? 0.0 : c->second) << " "
          << (u == s.values.end() ? 0.0 : u->second) << "\n";
      }
      const std::string who = r.host + " " + r.role + (r.rank ? " rank " + std::to_string(r.rank) : "");
      plots += (plots.empty() ? "" : ", ") + ("'" + dat + "' using 1:2 with lines title '" + who + " CPU'");
      if (gpu) plots += ", '" + dat + "' using 1:3 with lines dashtype 2 title '" + who + " GPU'";
      ++k;
    }
    const std::string png = base + "_utilization.png";
    const std::string gp = base + "_utilization.gp";
    std::ofstream g(gp);
    g << "set terminal pngcairo size 1000,500\nset output '" << png << "'\nset title 'utilisation (" << run.name
      << "): process CPU as % of the host cores'\nset xlabel 'seconds since start'\nset ylabel 'percent'\n"
         "set yrange [0:*]\nset grid\nset key outside\nplot "
      << plots << "\n";
    g.close();
    pngs.push_back(png);
  }
  for (const std::string& png : pngs) {
    const std::string gp = png.substr(0, png.size() - 4) + ".gp";
    CTRAIN_ASSIGN_OR_RETURN(auto run, RunGnuplot(gnuplot, gp));
    const auto& [st, out] = run;
    if (st != 0 || !fs::exists(png)) return InternalError(gp + ": gnuplot failed: " + out);
  }
  return pngs;
}

}  // namespace ctrain::report
