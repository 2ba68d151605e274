#include "ctrain/launch/local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <sstream>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/io/file.h"
#include "ctrain/launch/hyperparameters.h"
#include "ctrain/launch/supervisor.h"

namespace ctrain::launch {
namespace fs = std::filesystem;

StatusOr<std::vector<int>> FreePorts(int n) {
  std::vector<int> fds, ports;
  Status err;
  for (int i = 0; i < n && err.ok(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = ErrnoError("socket", "free port", errno);
      break;
    }
    fds.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      err = ErrnoError("127.0.0.1:0", "bind", errno);
      break;
    }
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (!err.ok()) return err;
  return ports;
}

namespace {

Status Bad(const std::string& path, const std::string& what) { return InvalidArgumentError(path + ": " + what); }


// Writes one epoch's FIFO per epoch with the channel's files, until done or *stop.
void FeedPipe(const std::string& prefix, const std::vector<std::string>& files, int32_t epochs,
              const std::atomic<bool>* stop) {
  sigset_t pipe_only;  // a reader that goes away gives EPIPE here, not a SIGPIPE that ends the launcher
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
  for (int32_t e = 0; e < epochs && !stop->load(); ++e) {
    const std::string fifo = prefix + "_" + std::to_string(e);
    ::unlink(fifo.c_str());
    if (::mkfifo(fifo.c_str(), 0600) != 0) {
      Logf("launch: local cluster: mkfifo %s: %s\n", fifo.c_str(), std::strerror(errno));
      return;
    }
    int fd = -1;
    while (!stop->load()) {  // no reader yet: ENXIO
      fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (fd < 0) return;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    for (const std::string& f : files) {
      const int in = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (in < 0) break;
      char buf[1 << 16];
      ssize_t n;
      bool ok = true;
      while (ok && !stop->load() && (n = ::read(in, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
          const ssize_t w = ::write(fd, buf + off, static_cast<size_t>(n - off));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            ok = false;  // the reader went away (EPIPE: SIGPIPE is ignored while a launch is deferring signals)
            break;
          }
          off += w;
        }
      ::close(in);
      if (!ok) break;
    }
    ::close(fd);
  }
}

}  // namespace

StatusOr<LocalClusterSpec> ParseLocalClusterSpec(const std::string& text, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Bad(path, std::string("not TOML (line ") + std::to_string(e.source().begin.line) + "): " +
                         std::string(e.description()));
  }
  for (const auto& [k, v] : t)
    if (k != "group" && k != "hyperparameters" && k != "channels")
      return Bad(path, "unknown key \"" + std::string(k.str()) + "\" (keys: group, hyperparameters, channels)");
  const std::string base = fs::absolute(fs::path(path)).parent_path().string();
  LocalClusterSpec spec;
  const toml::array* groups = t["group"].as_array();
  if (groups == nullptr || groups->empty()) return Bad(path, "no [[group]] (each names an instance group)");
  for (size_t i = 0; i < groups->size(); ++i) {
    const toml::table* g = (*groups)[i].as_table();
    const std::string where = "group " + std::to_string(i + 1) + ": ";
    if (g == nullptr) return Bad(path, where + "must be a table");
    LocalGroup lg;
    auto name = (*g)["name"].value<std::string>();
    auto type = (*g)["instance_type"].value<std::string>();
    auto count = (*g)["count"].value<int64_t>();
    if (!name || name->empty()) return Bad(path, where + "\"name\" (a string) is missing");
    if (!type || type->empty()) return Bad(path, where + "\"instance_type\" (a string) is missing");
    if (!count || *count < 1 || *count > 64) return Bad(path, where + "\"count\" must be a whole number in [1, 64]");
    for (const auto& [k, v] : *g)
      if (k != "name" && k != "instance_type" && k != "count")
        return Bad(path, where + "unknown key \"" + std::string(k.str()) + "\"");
    for (const auto& other : spec.groups)
      if (other.name == *name) return Bad(path, where + "the name \"" + *name + "\" is taken");
    lg.name = *name, lg.instance_type = *type, lg.count = static_cast<int32_t>(*count);
    spec.groups.push_back(lg);
  }
  if (const toml::table* hp = t["hyperparameters"].as_table()) {
    for (const auto& [k, v] : *hp) {
      std::string s;
      if (auto x = v.value_exact<std::string>()) s = *x;
      else if (auto b = v.value_exact<bool>()) s = *b ? "true" : "false";
      else if (auto n = v.value_exact<int64_t>()) s = std::to_string(*n);
      else if (auto d = v.value_exact<double>()) {
        std::ostringstream o;
        o << *d;
        s = o.str();
      } else {
        return Bad(path, "hyperparameter \"" + std::string(k.str()) + "\" must be a string, number or boolean");
      }
      spec.hyperparameters.emplace_back(std::string(k.str()), s);
    }
  }
  if (const toml::table* chs = t["channels"].as_table()) {
    for (const auto& [k, v] : *chs) {
      const std::string name(k.str());
      const toml::table* c = v.as_table();
      if (c == nullptr) return Bad(path, "channels." + name + " must be a table");
      LocalChannel lc;
      lc.name = name;
      std::string mode = "File";
      if (auto m = (*c)["mode"].value<std::string>()) mode = *m;
      if (mode == "File") lc.mode = InputMode::kFile;
      else if (mode == "Pipe") lc.mode = InputMode::kPipe;
      else if (mode == "FastFile") lc.mode = InputMode::kFastFile;
      else return Bad(path, "channels." + name + ".mode \"" + mode + "\" is not File, Pipe or FastFile");
      const toml::array* files = (*c)["files"].as_array();
      if (files == nullptr || files->empty()) return Bad(path, "channels." + name + ".files: give a list of files");
      for (const auto& f : *files) {
        auto s = f.value<std::string>();
        if (!s) return Bad(path, "channels." + name + ".files: every entry must be a string");
        fs::path p(*s);
        if (p.is_relative()) p = fs::path(base) / p;
        std::error_code ec;
        p = fs::weakly_canonical(p, ec);
        if (!fs::exists(p)) return NotFoundError(path + ": channels." + name + ".files: " + p.string() + " does not exist");
        if (fs::is_directory(p)) {
          std::vector<std::string> in;
          for (const auto& e : fs::recursive_directory_iterator(p))
            if (e.is_regular_file()) in.push_back(e.path().string());
          std::sort(in.begin(), in.end());
          lc.files.insert(lc.files.end(), in.begin(), in.end());
        } else {
          lc.files.push_back(p.string());
        }
      }
      for (const auto& [kk, vv] : *c)
        if (kk != "mode" && kk != "files")
          return Bad(path, "channels." + name + ": unknown key \"" + std::string(kk.str()) + "\" (keys: mode, files)");
      spec.channels.push_back(std::move(lc));
    }
  }
  return spec;
}

namespace {

Status WriteHostTree(const std::string& root, const LocalClusterSpec& spec, const std::vector<std::string>& hosts,
                     const std::vector<std::string>& host_group, size_t me) {
  std::error_code ec;
  // Everything but the checkpoints is rebuilt (a relaunch resumes from them).
  for (const char* d : {"input", "model", "output"}) fs::remove_all(fs::path(root) / d, ec);
  for (const char* d : {"input/config", "input/data", "model", "output/data", "checkpoints"}) {
    fs::create_directories(fs::path(root) / d, ec);
    if (ec) return IOError(root + "/" + d + ": cannot create: " + ec.message());
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  std::string my_type;
  for (const LocalGroup& g : spec.groups) {
    nlohmann::ordered_json hs = nlohmann::ordered_json::array();
    for (size_t i = 0; i < hosts.size(); ++i)
      if (host_group[i] == g.name) hs.push_back(hosts[i]);
    groups.push_back({{"instance_group_name", g.name}, {"instance_type", g.instance_type}, {"hosts", hs}});
    if (g.name == host_group[me]) my_type = g.instance_type;
  }
  // SageMaker writes current_group_name, local mode current_instance_group: both, so either reader works.
  nlohmann::ordered_json rc{{"current_host", hosts[me]},
                            {"current_instance_type", my_type},
                            {"current_group_name", host_group[me]},
                            {"current_instance_group", host_group[me]},
                            {"hosts", hosts},
                            {"instance_groups", groups},
                            {"network_interface_name", "lo"}};
  nlohmann::ordered_json hp = nlohmann::ordered_json::object();
  for (const auto& [k, v] : spec.hyperparameters) hp[k] = v;  // strings, as SageMaker writes them
  nlohmann::ordered_json idc = nlohmann::ordered_json::object();
  for (const LocalChannel& c : spec.channels) {
    idc[c.name] = {{"TrainingInputMode", InputModeName(c.mode)}, {"S3DistributionType", "FullyReplicated"},
                   {"RecordWrapperType", "None"}};
    if (c.mode == InputMode::kPipe) continue;  // the feeder makes the FIFOs
    const fs::path dir = fs::path(root) / "input/data" / c.name;
    fs::create_directories(dir, ec);
    for (size_t i = 0; i < c.files.size(); ++i) {
      // Numbered so that names never collide and the order is the spec's.
      char prefix[32];
      std::snprintf(prefix, sizeof prefix, "%04zu-", i);
      fs::create_symlink(c.files[i], dir / (prefix + fs::path(c.files[i]).filename().string()), ec);
      if (ec) return IOError(dir.string() + ": cannot link " + c.files[i] + ": " + ec.message());
    }
  }
  const std::string cfg = root + "/input/config/";
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(cfg + "resourceconfig.json", rc.dump(2) + "\n"));
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(cfg + "hyperparameters.json", hp.dump(2) + "\n"));
  CTRAIN_RETURN_IF_ERROR(io::WriteStringToFileAtomic(cfg + "inputdataconfig.json", idc.dump(2) + "\n"));
  return Status::OK();
}

}  // namespace

int RunLocalCluster(const std::string& spec_path, const std::string& work_dir, const LaunchOptions& base) {
  auto fail = [](const Status& s) {
    Logf("launch: %s\n", s.ToString().c_str());
    return 1;
  };
  StatusOr<std::string> text = io::ReadFileToString(spec_path);
  if (!text.ok()) return fail(text.status());
  StatusOr<LocalClusterSpec> spec = ParseLocalClusterSpec(*text, spec_path);
  if (!spec.ok()) return fail(spec.status());
  if (work_dir.empty()) return fail(InvalidArgumentError("--local-cluster needs --work-dir DIR (the hosts' trees)"));
  std::vector<std::string> hosts, host_group;
  for (const LocalGroup& g : spec->groups)
    for (int32_t i = 0; i < g.count; ++i) {
      hosts.push_back("algo-" + std::to_string(hosts.size() + 1));
      host_group.push_back(g.name);
    }
  std::string data_group;
  int32_t epochs = 1;
  for (const auto& [k, v] : spec->hyperparameters) {
    // Decoded as the launcher decodes them (launch/hyperparameters.h): "\"data\"" is data.
    if (k == "data_group" || k == "data-group") data_group = HyperparameterText(v);
    if (k == "epochs" || k == "num_epochs" || k == "num-epochs")
      epochs = std::max(1, std::atoi(HyperparameterText(v).c_str()));
  }
  const std::string abs_work = fs::absolute(work_dir).lexically_normal().string();
  for (size_t i = 0; i < hosts.size(); ++i)
    if (Status s = WriteHostTree(abs_work + "/" + hosts[i], *spec, hosts, host_group, i); !s.ok()) return fail(s);
  StatusOr<std::vector<int>> ports = FreePorts(static_cast<int>(hosts.size()) + 1);
  if (!ports.ok()) return fail(ports.status());
  const std::string exe = base.exe.empty() ? SelfExe() : base.exe;

  std::atomic<bool> stop_feeders{false};
  std::vector<std::thread> feeders;
  for (size_t i = 0; i < hosts.size(); ++i)
    for (const LocalChannel& c : spec->channels)
      if (c.mode == InputMode::kPipe && host_group[i] != data_group)
        feeders.emplace_back(FeedPipe, abs_work + "/" + hosts[i] + "/input/data/" + c.name, c.files, epochs, &stop_feeders);

  Logf("launch: local cluster of %zu host(s) in %s\n", hosts.size(), abs_work.c_str());
  int rc = 0, stopped_by = 0, root_host = -1;
  std::vector<std::string> failures;
  {
    InterruptDeferral defer("stopping every host (their trainers checkpoint first)");
    Supervisor sup;
    for (size_t i = 0; i < hosts.size(); ++i) {
      std::vector<std::string> argv{exe, "launch", "--sm-root=" + abs_work + "/" + hosts[i],
                                    "--checkpoint-dir=" + abs_work + "/" + hosts[i] + "/checkpoints",
                                    "--dispatcher-port=" + std::to_string((*ports)[0]),
                                    "--worker-port=" + std::to_string((*ports)[i + 1]),
                                    "--monitor-interval-ms=" + std::to_string(base.monitor_interval_ms)};
      for (const std::string& h : hosts) argv.push_back("--host-address=" + h + "=127.0.0.1");
      // One machine: mpirun starts every rank itself, no daemon comes to the other hosts.
      argv.push_back("--mpi-host-wait-s=0");
      // Several ranks on one machine (Open MPI refuses more ranks than cores otherwise).
      argv.push_back("--mpirun-arg=--oversubscribe");
      if (base.insecure) argv.push_back("--insecure");  // (every host is on loopback: nothing to allow)
      for (const std::string& a : base.mpirun_args) argv.push_back("--mpirun-arg=" + a);
      argv.push_back("--python=" + base.python);
      if (!base.entry_point.empty()) {  // last: the script's own arguments follow it
        argv.push_back("--entry-point");
        argv.insert(argv.end(), base.entry_point.begin(), base.entry_point.end());
      }
      if (StatusOr<int> s = sup.Start(hosts[i], argv); !s.ok()) {
        failures.push_back("failed: " + s.status().ToString());
        rc = 1;
        break;
      }
    }
    bool stopping = rc != 0;
    if (stopping) sup.SignalAll(SIGTERM);
    for (;;) {
      bool all = true;
      for (int i = 0; i < sup.size(); ++i) {
        if (!sup.Exited(i)) {
          all = false;
          continue;
        }
        if (sup.status(i) != 0 && !stopping) {  // one host failed: SageMaker stops the job
          stopping = true;
          root_host = i;  // the root cause; the hosts stopped after it fail as its consequence
          Logf("launch: %s exited with status %d: stopping the other hosts\n",
                       sup.name(i).c_str(), sup.status(i));
          sup.SignalAll(SIGTERM);
        }
      }
      // (Before `all`: a signal that came as the hosts ended still sets the exit status.)
      if (int sig = PendingInterrupt(); sig != 0 && stopped_by == 0) {
        stopped_by = sig;
        stopping = true;
        sup.SignalAll(SIGTERM);
      }
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (int k = -1; k < sup.size(); ++k) {  // the root cause first
      const int i = k < 0 ? root_host : k;
      if (i < 0 || (k >= 0 && i == root_host) || sup.status(i) == 0) continue;
      rc = 1;
      StatusOr<std::string> why = io::ReadFileToString(abs_work + "/" + hosts[i] + "/output/failure");
      std::string line = why.ok() ? *why : "(no output/failure) " + sup.last_line(i);
      while (!line.empty() && line.back() == '\n') line.pop_back();
      failures.push_back((root_host >= 0 && i != root_host ? "stopped after " + hosts[root_host] + " failed: " : "failed: ") +
                         hosts[i] + " (status " + std::to_string(sup.status(i)) + "): " + line);
    }
  }
  stop_feeders = true;
  for (auto& t : feeders) t.join();
  for (const std::string& f : failures) Logf("launch: %s\n", f.c_str());
  if (rc == 0) Logf("launch: local cluster done: every host exited 0\n");
  if (stopped_by != 0) return 128 + stopped_by;
  return rc;
}

}  // namespace ctrain::launch
