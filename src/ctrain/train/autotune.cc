#include "ctrain/train/autotune.h"

#include <cstdio>

#include "ctrain/train/threads.h"
#include "ctrain/train/trainer.h"

namespace ctrain::train {

namespace {

std::vector<int32_t> IntraChoices(int32_t max_threads) {
  std::vector<int32_t> v;
  for (int32_t t = 1; t < max_threads; t *= 2) v.push_back(t);
  v.push_back(max_threads);
  return v;
}

bool SameLayout(const ParallelOptions& a, const ParallelOptions& b) {
  return a.intra_op_threads == b.intra_op_threads && a.towers == b.towers && a.hogwild == b.hogwild;
}

}  // namespace

std::vector<ParallelOptions> AutotuneCandidates(int32_t cores, bool affinity) {
  if (cores < 1) cores = 1;
  std::vector<ParallelOptions> out;
  for (int32_t towers = 1; towers <= cores; towers *= 2)
    for (int32_t intra : IntraChoices(cores / towers)) {
      ParallelOptions p;
      p.towers = towers;
      p.intra_op_threads = intra;
      p.affinity = affinity;
      out.push_back(p);
    }
  for (int32_t hog = 2; hog <= cores; hog *= 2)
    for (int32_t intra : IntraChoices(cores / hog)) {
      ParallelOptions p;
      p.hogwild = hog;
      p.intra_op_threads = intra;
      p.affinity = affinity;
      out.push_back(p);
    }
  return out;
}

StatusOr<std::vector<AutotuneRow>> Autotune(const TrainOptions& base, const Dataset& train, int64_t steps,
                                            ParallelOptions* best) {
  std::vector<AutotuneRow> rows;
  Status first_error;
  double best_eps = -1;
  for (const ParallelOptions& p : AutotuneCandidates(AvailableCpus(), base.parallel.affinity)) {
    TrainOptions o = base;
    o.parallel = p;
    o.parallel.inter_op_threads = base.parallel.inter_op_threads;
    o.model_dir.clear();
    o.progress = ProgressMode::kNone;
    AutotuneRow row;
    row.parallel = o.parallel;
    StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
    StatusOr<double> eps = t.ok() ? (*t)->MeasureThroughput(train, steps) : StatusOr<double>(t.status());
    if (eps.ok()) {
      row.examples_per_sec = *eps;
      if (*eps > best_eps) {
        best_eps = *eps;
        *best = row.parallel;
      }
    } else {
      row.error = eps.status().ToString();
      first_error.Update(eps.status());
    }
    rows.push_back(row);
  }
  if (best_eps < 0) return first_error;
  return rows;
}

std::string FormatAutotuneTable(const std::vector<AutotuneRow>& rows, const ParallelOptions& best) {
  std::string s = "  intra_op  towers  hogwild  examples/s\n";
  for (const auto& r : rows) {
    char buf[256];
    if (r.error.empty())
      std::snprintf(buf, sizeof buf, "%c %8d  %6d  %7d  %10.0f\n", SameLayout(r.parallel, best) ? '*' : ' ',
                    r.parallel.intra_op_threads, r.parallel.towers, r.parallel.hogwild, r.examples_per_sec);
    else
      std::snprintf(buf, sizeof buf, "  %8d  %6d  %7d  failed: %s\n", r.parallel.intra_op_threads, r.parallel.towers,
                    r.parallel.hogwild, r.error.c_str());
    s += buf;
  }
  return s;
}

}  // namespace ctrain::train
