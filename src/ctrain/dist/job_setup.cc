#include "ctrain/dist/job_setup.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <set>

namespace ctrain::dist {

StatusOr<float> ScaleLearningRate(float lr, int32_t ranks, std::string_view mode) {
  if (mode == "none") return lr;
  if (mode == "linear") return lr * static_cast<float>(ranks);
  if (mode == "sqrt") return lr * std::sqrt(static_cast<float>(ranks));
  return InvalidArgumentError("--lr-scaling must be none, linear or sqrt, got '" + std::string(mode) + "'");
}

namespace {
void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size())) s->replace(p, from.size(), to);
}

// The absolute form of a channel path (the directory resolved; the FIFO itself may not exist yet).
std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (::realpath(dir.c_str(), buf) != nullptr) return std::string(buf) + (std::string(buf) == "/" ? "" : "/") + name;
  return path;
}
}  // namespace

std::string ExpandRankPattern(const std::string& path, int32_t rank, int32_t local_rank) {
  std::string s = path;
  ReplaceAll(&s, "{local_rank}", std::to_string(local_rank));
  ReplaceAll(&s, "{rank}", std::to_string(rank));
  return s;
}

bool HasRankPattern(const std::string& path) {
  return path.find("{local_rank}") != std::string::npos || path.find("{rank}") != std::string::npos;
}

Status CheckDistinctChannels(MpiExchange& exchange, const std::vector<std::string>& files) {
  std::string mine;  // one channel per line
  for (const std::string& f : files) {
    if (f == "-") {
      if (exchange.size() > 1)
        return FailedPreconditionError("--train -: under mpirun only rank 0 receives stdin; give each rank its own "
                                       "input (e.g. pipe:DIR/train_{local_rank})");
      continue;
    }
    if (f.rfind("pipe:", 0) == 0) {
      mine += "pipe:" + Absolute(f.substr(5)) + "\n";
      continue;
    }
    struct stat st;
    if (::stat(f.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) mine += Absolute(f) + "\n";
  }
  std::vector<std::string> all;
  CTRAIN_RETURN_IF_ERROR(exchange.AllgatherStrings(mine, &all, "input channels"));
  // channel + host -> first rank
  std::vector<std::pair<std::string, int32_t>> seen;
  for (int32_t r = 0; r < static_cast<int32_t>(all.size()); ++r) {
    size_t a = 0;
    while (a < all[r].size()) {
      const size_t b = all[r].find('\n', a);
      const std::string ch = all[r].substr(a, b - a);
      a = b + 1;
      const std::string key = exchange.host(r) + "\t" + ch;
      for (const auto& [k, first] : seen)
        if (k == key && first != r)
          return FailedPreconditionError(
              "input channel " + ch + " would be opened by " + exchange.RankName(first) + " and " +
              exchange.RankName(r) +
              " on one host; a FIFO is read by one process only (they would hang): give each local rank its own "
              "channel, e.g. pipe:DIR/train_{local_rank}");
      seen.emplace_back(key, r);
    }
  }
  return Status::OK();
}

train::Dataset ShardRows(const train::Dataset& all, int32_t ranks, int32_t rank) {
  train::Dataset out(all.field_size());
  if (!all.multi_hot()) out.Reserve(all.size() / ranks + 1);
  for (int64_t r = rank; r < all.size(); r += ranks) out.AppendRowOf(all, r);
  return out;
}

std::string DescribeJob(const MpiExchange& exchange, int64_t batch_size, float base_lr, float lr,
                        std::string_view lr_scaling) {
  std::set<std::string> hosts;
  for (int32_t r = 0; r < exchange.size(); ++r) hosts.insert(exchange.host(r));
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "mpirun: %d rank(s) on %zu host(s) x batch %lld = effective batch %lld per step; learning rate %g "
                "(--lr-scaling %.*s from %g); rank 0 writes checkpoints and validates",
                exchange.size(), hosts.size(), static_cast<long long>(batch_size),
                static_cast<long long>(batch_size * exchange.size()), lr, static_cast<int>(lr_scaling.size()),
                lr_scaling.data(), base_lr);
  return buf;
}

Status SetUpRank(MpiExchange& x, RankSettings* s) {
  if (s->autotune && x.size() > 1)
    return FailedPreconditionError("--autotune under mpirun: ranks share the cores they would measure; give the "
                                   "thread layout (--intra-op-parallelism-threads) instead");
  const float base = s->learning_rate;
  CTRAIN_ASSIGN_OR_RETURN(s->learning_rate, ScaleLearningRate(base, x.size(), s->lr_scaling));
  s->job_line = DescribeJob(x, s->batch_size, base, s->learning_rate, s->lr_scaling);
  if (s->lr_warmup_steps > 0) {  // Horovod's warmup: from lr / N up to the (scaled) lr
    s->lr_warmup_from = s->learning_rate / static_cast<float>(x.size());
    char buf[96];
    std::snprintf(buf, sizeof buf, "; warmup from %g over %lld steps", s->lr_warmup_from,
                  static_cast<long long>(s->lr_warmup_steps));
    s->job_line += buf;
  }
  for (std::string& f : s->train) {  // per-rank inputs are this rank's already
    s->per_rank_inputs = s->per_rank_inputs || HasRankPattern(f);
    f = ExpandRankPattern(f, x.rank(), x.local_rank());
  }
  CTRAIN_RETURN_IF_ERROR(CheckDistinctChannels(x, s->train));
  if (!s->cache.empty() && s->cache != "memory") {  // one cache file per rank
    if (x.size() > 1 && !HasRankPattern(s->cache))
      return InvalidArgumentError("--cache " + s->cache + " under mpirun: every rank would write the same file; put "
                                  "{rank} in its name (e.g. --cache /tmp/train_cache_{rank})");
    s->cache = ExpandRankPattern(s->cache, x.rank(), x.local_rank());
  }
  return Status::OK();
}

int64_t ProcessBytesWritten() {
  FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return -1;
  char line[128];
  long long v = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "wchar: %lld", &v) == 1) break;
  std::fclose(f);
  return v;
}

}  // namespace ctrain::dist
