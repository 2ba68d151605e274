// The training job's outputs, checked before any work (job/train_steps.h).
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "ctrain/io/file.h"
#include "ctrain/job/train_steps.h"
#include "ctrain/train/model_dir_lock.h"

namespace ctrain::job {

Status PrepareOutputs(TrainRun& run) {
  const TrainJobOptions& job = run.job;
  const train::TrainOptions& o = run.o;
  if (!o.model_dir.empty()) {
    // Created now (checkpoints would create it later) so that a --metrics-json
    // inside it passes the up-front check, and an unusable directory fails early.
    std::error_code ec;
    std::filesystem::create_directories(o.model_dir, ec);
    if (ec) return ErrnoError(o.model_dir, "--model-dir: cannot create the directory", ec.value());
  }
  // One writer per model dir, and a read-only one fails now, not after an epoch.
  if (!o.model_dir.empty()) {
    CTRAIN_RETURN_IF_ERROR(io::CheckDirWritable("--model-dir", o.model_dir));
    CTRAIN_ASSIGN_OR_RETURN(run.model_dir_lock, train::ModelDirLock::Acquire(o.model_dir));
  }
  CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--metrics-json", job.metrics_json));
  const bool cache_file = !job.pipeline.cache.empty() && job.pipeline.cache != "memory";
  const bool stream_cache = run.stream && cache_file;
  if (stream_cache) CTRAIN_RETURN_IF_ERROR(io::CheckOutputWritable("--cache", job.pipeline.cache));
  {  // No output may overwrite an input (or another output), before any work.
    std::vector<io::FlagPath> in, out;
    for (const std::string& p : job.train) in.push_back({"--train", p});
    for (const std::string& p : job.valid) in.push_back({"--valid", p});
    in.push_back({"--feature-map", job.data.feature_map});
    in.push_back({"--feature-spec", job.data.feature_spec});
    in.push_back({"--config", job.config});
    if (stream_cache) out.push_back({"--cache", job.pipeline.cache});
    out.push_back({"--metrics-json", job.metrics_json});
    auto checkpoint_file = [](std::string_view name) {  // train/checkpoint.h, train/model_dir_lock.h
      return name == "checkpoint" || name == train::kModelDirLockName || name.starts_with("ckpt-");
    };
    CTRAIN_RETURN_IF_ERROR(io::CheckOutputsAreNotInputs(in, out, {{"--model-dir", o.model_dir, checkpoint_file}}));
  }
  return Status::OK();
}

}  // namespace ctrain::job
