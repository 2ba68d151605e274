// The training job's refusals of modes and options that do not combine (job/train_steps.h).
#include <string>

#include "ctrain/job/option_schema.h"
#include "ctrain/job/train_steps.h"

namespace ctrain::job {

std::string InputMode(const TrainJobOptions& job) {
  if (job.input_mode != "auto") return job.input_mode;
  return job.train.empty() || !job.data.feature_spec.empty() || job.ps.enabled() ? "memory" : "stream";
}

Status CheckModes(TrainRun& run) {
  return CheckOptionModes(run.given_values, RunModes(run.job, InputMode(run.job) == "stream", run.dist.active()));
}

Status CheckCombinations(TrainRun& run) {
  TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  const bool spec = run.spec.has_value();
  std::string& mode = run.mode;
  mode = InputMode(job);
  if (spec && (job.train.empty() || mode != "memory" || !job.data_service.address.empty()))
    return InvalidArgumentError("--feature-spec reads --train in memory: give --train, and not --input-mode stream "
                                "or --data-service (they read the seed layout only)");
  if (job.ps.enabled() && mode != "memory")
    return InvalidArgumentError("--ps: a worker reads its training data in memory (--input-mode memory)");
  if (job.ps.enabled() && !job.data_service.address.empty())
    return InvalidArgumentError("--ps and --data-service cannot be combined yet (docs/parameter-servers.md#limits)");
  if (job.ps.enabled()) CTRAIN_RETURN_IF_ERROR(job.ps.Options({}, nullptr).status());  // before any data is read
  // A trainer is a client only: its certificate goes with TLS to the servers, which --tls-ca turns on.
  const service::SecurityOptions& sec = job.data_service.security;
  if ((!sec.tls_cert.empty() || !sec.tls_key.empty()) && sec.tls_ca.empty())
    return InvalidArgumentError(std::string(!sec.tls_cert.empty() ? "--tls-cert" : "--tls-key") +
                                " is this trainer's client certificate for TLS to the servers, and TLS is off without "
                                "--tls-ca: give --tls-ca (the CAs that verify the servers)");
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
