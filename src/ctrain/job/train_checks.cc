// The training job's refusals of modes and options that do not combine (job/train_steps.h).
#include <string>

#include "ctrain/job/train_steps.h"

namespace ctrain::job {

Status CheckCombinations(TrainRun& run) {
  TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  const bool spec = run.spec.has_value();
  std::string& mode = run.mode;
  mode = job.input_mode;
  if (mode == "auto") mode = job.train.empty() || spec || job.ps.enabled() ? "memory" : "stream";
  if (spec && (job.train.empty() || mode != "memory" || !job.data_service.address.empty()))
    return InvalidArgumentError("--feature-spec reads --train in memory: give --train, and not --input-mode stream "
                                "or --data-service (they read the seed layout only)");
  if (job.ps.enabled() && mode != "memory")
    return InvalidArgumentError("--ps: a worker reads its training data in memory (--input-mode memory)");
  if (job.ps.enabled() && !job.data_service.address.empty())
    return InvalidArgumentError("--ps and --data-service cannot be combined yet (docs/parameter-servers.md#limits)");
  if (job.ps.enabled()) CTRAIN_RETURN_IF_ERROR(job.ps.Options({}, nullptr).status());  // before any data is read
  if (job.ps.enabled() && run.dist.active())
    return InvalidArgumentError("--ps cannot run under mpirun: start each parameter-server worker as its own "
                                "process with --worker-index and --num-workers");
  if (job.ps.enabled() && job.autotune)
    return InvalidArgumentError("--autotune measures local thread layouts; with --ps give --intra-op-parallelism-threads");
  if (job.ps.enabled() && job.ps.worker_index != 0) o.model_dir.clear();  // the chief (worker 0) checkpoints
  if (mode != "stream" && mode != "memory")
    return InvalidArgumentError("--input-mode must be stream or memory (or auto), got '" + job.input_mode + "'");
  if (mode == "stream" && job.train.empty())
    return InvalidArgumentError("--input-mode stream needs --train (the built-in synthetic data is generated in memory)");
  run.remote = !job.data_service.address.empty();
  if (run.remote && (job.train.empty() || mode != "stream"))
    return InvalidArgumentError("--data-service streams --train through the service: give --train, and not "
                                "--input-mode memory");
  if (run.remote && job.autotune)
    return InvalidArgumentError("--autotune measures on local rows; with --data-service give the thread layout");
  run.stream = mode == "stream";
  return Status::OK();
}

Status CheckValidation(TrainRun& run) {
  const train::TrainOptions& o = run.o;
  CTRAIN_RETURN_IF_ERROR(o.Validate());
  if ((!o.early_stopping_metric.empty() || o.keep_best || o.group_field >= 0) && !run.have_valid && run.report)
    return InvalidArgumentError(std::string(!o.early_stopping_metric.empty() ? "--early-stopping-metric"
                                            : o.keep_best                    ? "--keep-best"
                                                                             : "--gauc-field") +
                                " needs --valid (the validation data it measures)");
  return Status::OK();
}

}  // namespace ctrain::job
