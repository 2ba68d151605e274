// What a run prints: log lines, warnings, the terminal progress bar, and the
// stop request's checkpoint and message.
#include "ctrain/train/trainer_impl.h"

#include <signal.h>

#include <cstdio>

#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/sharded_checkpoint.h"

namespace ctrain::train {
namespace {

std::string FormatDuration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600), static_cast<long long>(t / 60 % 60));
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t));
  return buf;
}

}  // namespace

Status Trainer::Impl::Stop(int64_t start_step, int signal) {
  const int sig = signal != 0 ? signal : StopSignal();
  const std::string what = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal " + std::to_string(sig);
  std::string msg = "interrupted by " + what + " at step " + std::to_string(pos.global_step) + ": ";
  if (exch != nullptr && !exch->is_chief()) {
    msg += "every rank stopped at this step; rank 0 writes the checkpoint";
  } else if (options.model_dir.empty()) {
    msg += "no --model-dir, nothing was saved";
  } else if (pos.global_step == start_step) {
    msg += "no step ran in this run, the checkpoint in " + options.model_dir + " is unchanged";
  } else {
    CTRAIN_RETURN_IF_ERROR(SaveFinal());
    // With parameter servers each server saved its shard and the chief the manifest (sharded_checkpoint.h).
    msg += "checkpoint " + options.model_dir + (options.model_dir.back() == '/' ? "" : "/") +
           (remote != nullptr ? std::string(kShardedManifestName) + " (the servers' shards)"
                              : CheckpointFileName(pos.global_step)) +
           " saved; run the same command to resume";
  }
  return CancelledError(msg);
}

void Trainer::Impl::Log(const std::string& line) {
  if (sink) {
    sink(line);
    return;
  }
  if (options.progress == ProgressMode::kNone) return;
  std::fprintf(stderr, "%s\n", line.c_str());
}

void Trainer::Impl::Warn(const std::string& w, TrainResult* result) {
  result->warnings.push_back(w);
  if (sink) sink((terminal ? "\r\033[K" : "") + std::string("warning: ") + w);
  else std::fprintf(stderr, "%sctrain: warning: %s\n", terminal ? "\r\033[K" : "", w.c_str());
}

void Trainer::Impl::WarnInputs(const InputStats& st, TrainResult* result, int64_t max_scan) {
  if (input_warned) return;
  input_warned = true;
  for (const std::string& w : st.Warnings("training examples", &source_paths, &source_reader, max_scan))
    Warn(w, result);
}

int64_t Trainer::Impl::ShownEpoch(const TrainPosition& p) {
  return p.batch_in_epoch == 0 && p.epoch > 0 ? p.epoch : p.epoch + 1;
}

void Trainer::Impl::PrintProgress(Progress& p, bool force) {
  if (!terminal) return;
  const auto now = Clock::now();
  if (!force && Seconds(p.last_print, now) < 0.25) return;
  p.last_print = now;
  const double el = Seconds(p.start, now);
  const int64_t done = pos.global_step - p.start_step;
  const double eps = el > 0 ? p.examples / el : 0;
  const double eta = done > 0 ? el / done * (p.total_steps - pos.global_step) : -1;
  char buf[320];
  char total[32] = "?";  // stream mode: unknown until an epoch completes
  if (p.total_steps > 0) std::snprintf(total, sizeof total, "%lld", static_cast<long long>(p.total_steps));
  char wait[48] = "";
  if (p.stream && p.wait + p.compute > 0)
    std::snprintf(wait, sizeof wait, " | input wait %.1f%%", 100.0 * p.wait / (p.wait + p.compute));
  std::snprintf(buf, sizeof buf, "\r\033[Kstep %lld/%s | epoch %lld/%d | %.0f ex/s | loss %.4f%s | ETA %s",
                static_cast<long long>(pos.global_step), total, static_cast<long long>(ShownEpoch(pos)),
                options.epochs, eps,
                p.loss_n ? p.loss_sum / p.loss_n : 0.0, wait,
                p.total_steps > 0 ? FormatDuration(eta).c_str() : "?");
  if (sink)
    sink(buf);
  else
    std::fputs(buf, stderr), std::fflush(stderr);
}

}  // namespace ctrain::train
