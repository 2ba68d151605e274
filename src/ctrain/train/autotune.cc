#include "ctrain/train/autotune.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "ctrain/model/layers/bf16.h"
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

}  // namespace

std::vector<ParallelOptions> AutotuneCandidates(int32_t cores, bool affinity, bool deterministic,
                                                const AutotuneOptions& opts) {
  if (cores < 1) cores = 1;
  std::vector<ParallelOptions> out;
  auto add = [&](int32_t towers, int32_t hogwild, int32_t intra) {
    ParallelOptions p;
    p.towers = towers;
    p.hogwild = hogwild;
    p.intra_op_threads = intra;
    p.affinity = affinity;
    p.deterministic = deterministic;
    out.push_back(p);
  };
  auto intra_choices = [&](int32_t replicas) {
    return opts.fixed_intra_op_threads > 0 ? std::vector<int32_t>{opts.fixed_intra_op_threads}
                                           : IntraChoices(std::max(1, cores / replicas));
  };
  const bool fixed_hogwild = opts.fixed_hogwild > 0;
  if (!fixed_hogwild) {
    std::vector<int32_t> towers;
    if (opts.fixed_towers > 0) towers = {opts.fixed_towers};
    else
      for (int32_t t = 1; t <= cores; t *= 2) towers.push_back(t);
    for (int32_t t : towers)
      for (int32_t intra : intra_choices(t)) add(t, 0, intra);
  }
  const bool hogwild_rows = !deterministic && opts.fixed_towers == 0 && opts.fixed_hogwild != 0;
  if (hogwild_rows) {
    std::vector<int32_t> hogs;
    if (fixed_hogwild) hogs = {opts.fixed_hogwild};
    else
      for (int32_t h = 2; h <= cores; h *= 2) hogs.push_back(h);
    for (int32_t h : hogs)
      for (int32_t intra : intra_choices(h)) add(1, h, intra);
  }
  return out;
}

AutotuneRow MeasureLayout(const TrainOptions& base, const Dataset& train, const ParallelOptions& p,
                          model::DataType dtype, int64_t steps, Status* error) {
  TrainOptions o = base;
  o.parallel = p;
  o.parallel.inter_op_threads = base.parallel.inter_op_threads;
  o.model.gemm_dtype = dtype;
  o.model_dir.clear();
  o.progress = ProgressMode::kNone;
  AutotuneRow row;
  row.parallel = o.parallel;
  row.gemm_dtype = dtype;
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(o);
  StatusOr<double> eps = t.ok() ? (*t)->MeasureThroughput(train, steps) : StatusOr<double>(t.status());
  if (eps.ok()) row.examples_per_sec = *eps;
  else row.error = eps.status().ToString();
  if (error != nullptr) *error = eps.status();
  return row;
}

StatusOr<AutotuneResult> Autotune(const TrainOptions& base, const Dataset& train, const AutotuneOptions& opts) {
  if (opts.steps < 1) return InvalidArgumentError("autotune steps must be >= 1, got " + std::to_string(opts.steps));
  const bool deterministic = opts.deterministic || base.parallel.deterministic;
  AutotuneResult res;
  std::vector<model::DataType> dtypes{base.model.gemm_dtype};
  if (opts.try_bf16) {
    dtypes = {model::DataType::kF32};
    if (Status bf16 = model::Bf16GemmSupported(); bf16.ok())
      dtypes.push_back(model::DataType::kBF16);
    else
      res.notes.push_back("bf16 mixed precision not measured: " + std::string(bf16.message()));
  }
  if (deterministic) res.notes.push_back("hogwild layouts not measured (--deterministic: they are not deterministic)");
  {
    std::string kept;  // explicit thread flags are kept, not tuned
    if (opts.fixed_intra_op_threads > 0) kept += " --intra-op-threads " + std::to_string(opts.fixed_intra_op_threads);
    if (opts.fixed_towers > 0) kept += " --towers " + std::to_string(opts.fixed_towers);
    if (opts.fixed_hogwild >= 0) kept += " --hogwild " + std::to_string(opts.fixed_hogwild);
    if (!kept.empty()) res.notes.push_back("kept as given:" + kept + "; measured only the other settings");
  }
  if (deterministic && opts.fixed_hogwild > 0)
    return InvalidArgumentError("--hogwild " + std::to_string(opts.fixed_hogwild) +
                                " is not deterministic; --deterministic refuses it");
  Status first_error;
  double best_eps = -1;
  for (model::DataType dtype : dtypes)
    for (const ParallelOptions& p : AutotuneCandidates(AvailableCpus(), base.parallel.affinity, deterministic, opts)) {
      Status error;
      AutotuneRow row = MeasureLayout(base, train, p, dtype, opts.steps, &error);
      if (error.ok() && row.examples_per_sec > best_eps) {
        best_eps = row.examples_per_sec;
        res.best = res.rows.size();
      }
      first_error.Update(error);
      res.rows.push_back(row);
    }
  if (best_eps < 0) return first_error;
  for (std::string& n : WinnerNotes(res, opts.try_bf16)) res.notes.push_back(std::move(n));
  res.flags = WinnerFlags(res);
  return res;
}

std::string OtherWaitPolicy(const std::string& policy) { return policy == "ACTIVE" ? "PASSIVE" : "ACTIVE"; }

std::string EncodeAutotuneWait(const AutotuneWaitRecord& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s %.17g %.17g %d %d %d %s", r.decided ? "decided" : "trial", r.policy.c_str(),
                r.row.examples_per_sec, r.other_examples_per_sec, r.row.parallel.intra_op_threads,
                r.row.parallel.towers, r.row.parallel.hogwild, model::DataTypeName(r.row.gemm_dtype));
  return buf;
}

StatusOr<AutotuneWaitRecord> DecodeAutotuneWait(std::string_view text) {
  std::vector<std::string> w;
  for (size_t i = 0; i < text.size();) {
    while (i < text.size() && text[i] == ' ') ++i;
    const size_t b = i;
    while (i < text.size() && text[i] != ' ') ++i;
    if (i > b) w.emplace_back(text.substr(b, i - b));
  }
  const auto bad = [&](const std::string& why) {
    return InvalidArgumentError(std::string(kAutotuneWaitVar) + "='" + std::string(text) + "': " + why +
                                " (want 'trial|decided ACTIVE|PASSIVE EPS OTHER_EPS INTRA_OP TOWERS HOGWILD f32|bf16';"
                                " it is set by ctrain for its own re-exec, unset it)");
  };
  if (w.size() != 8) return bad(std::to_string(w.size()) + " words, want 8");
  AutotuneWaitRecord r;
  if (w[0] != "trial" && w[0] != "decided") return bad("stage '" + w[0] + "' is not trial or decided");
  r.decided = w[0] == "decided";
  if (w[1] != "ACTIVE" && w[1] != "PASSIVE") return bad("policy '" + w[1] + "' is not ACTIVE or PASSIVE");
  r.policy = w[1];
  auto number = [](const std::string& s, double* v) {
    auto res = std::from_chars(s.data(), s.data() + s.size(), *v);
    return res.ec == std::errc() && res.ptr == s.data() + s.size() && std::isfinite(*v) && *v >= 0;
  };
  auto count = [](const std::string& s, int32_t lo, int32_t* v) {
    auto res = std::from_chars(s.data(), s.data() + s.size(), *v);
    return res.ec == std::errc() && res.ptr == s.data() + s.size() && *v >= lo && *v <= 4096;
  };
  if (!number(w[2], &r.row.examples_per_sec)) return bad("examples/s '" + w[2] + "' is not a number >= 0");
  if (!number(w[3], &r.other_examples_per_sec)) return bad("other examples/s '" + w[3] + "' is not a number >= 0");
  if (!count(w[4], 1, &r.row.parallel.intra_op_threads)) return bad("intra_op '" + w[4] + "' is not in [1, 4096]");
  if (!count(w[5], 1, &r.row.parallel.towers)) return bad("towers '" + w[5] + "' is not in [1, 4096]");
  if (!count(w[6], 0, &r.row.parallel.hogwild)) return bad("hogwild '" + w[6] + "' is not in [0, 4096]");
  if (w[7] == "f32") r.row.gemm_dtype = model::DataType::kF32;
  else if (w[7] == "bf16") r.row.gemm_dtype = model::DataType::kBF16;
  else return bad("GEMM type '" + w[7] + "' is not f32 or bf16");
  return r;
}

std::vector<std::string> WinnerNotes(const AutotuneResult& res, bool try_bf16) {
  std::vector<std::string> notes;
  const AutotuneRow& b = res.rows[res.best];
  if (b.parallel.hogwild > 0)
    notes.push_back("picked hogwild (" + std::to_string(b.parallel.hogwild) +
                    " asynchronous replicas): NOT deterministic, two runs give different models; "
                    "--deterministic leaves hogwild out");
  if (try_bf16 && b.gemm_dtype == model::DataType::kBF16) {
    double best_f32 = 0;
    for (const AutotuneRow& r : res.rows)
      if (r.error.empty() && r.gemm_dtype == model::DataType::kF32 && r.examples_per_sec > best_f32)
        best_f32 = r.examples_per_sec;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "picked bf16 mixed precision (%.2fx the best f32 layout): bf16 GEMM operands, f32 accumulation "
                  "and weights; results differ slightly from f32 (docs/performance.md)",
                  best_f32 > 0 ? b.examples_per_sec / best_f32 : 0.0);
    notes.push_back(buf);
  }
  return notes;
}

std::string WinnerFlags(const AutotuneResult& res) {
  const AutotuneRow& b = res.rows[res.best];
  return "--intra-op-threads " + std::to_string(b.parallel.intra_op_threads) +
         (b.parallel.hogwild > 0 ? " --hogwild " + std::to_string(b.parallel.hogwild)
                                 : " --towers " + std::to_string(b.parallel.towers)) +
         " --mixed-precision " + model::DataTypeName(b.gemm_dtype);
}

void ApplyAutotune(const AutotuneResult& r, TrainOptions* o) {
  const AutotuneRow& b = r.rows[r.best];
  ParallelOptions p = b.parallel;
  p.inter_op_threads = o->parallel.inter_op_threads;
  p.affinity = o->parallel.affinity;
  p.deterministic = o->parallel.deterministic;
  o->parallel = p;
  o->model.gemm_dtype = b.gemm_dtype;
}

std::string FormatAutotuneTable(const AutotuneResult& r) {
  std::string s = "  intra_op  towers  hogwild  gemm  examples/s\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const AutotuneRow& row = r.rows[i];
    char buf[512];
    const char* gemm = model::DataTypeName(row.gemm_dtype);
    if (row.error.empty())
      std::snprintf(buf, sizeof buf, "%c %8d  %6d  %7d  %4s  %10.0f%s\n", i == r.best ? '*' : ' ',
                    row.parallel.intra_op_threads, row.parallel.towers, row.parallel.hogwild, gemm,
                    row.examples_per_sec, row.parallel.hogwild > 0 ? "  (not deterministic)" : "");
    else
      std::snprintf(buf, sizeof buf, "  %8d  %6d  %7d  %4s  failed: %s\n", row.parallel.intra_op_threads,
                    row.parallel.towers, row.parallel.hogwild, gemm, row.error.c_str());
    s += buf;
  }
  for (const std::string& n : r.notes) s += "note: " + n + "\n";
  if (!r.flags.empty()) s += "the same layout without autotune: " + r.flags + "\n";
  return s;
}

}  // namespace ctrain::train
