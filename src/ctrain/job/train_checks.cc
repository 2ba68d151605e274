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
  const TrainJobOptions& job = run.job;
  if (job.input_mode != "auto" && job.input_mode != "stream" && job.input_mode != "memory")
    return InvalidArgumentError("--input-mode must be stream or memory (or auto), got '" + job.input_mode + "'");
  CTRAIN_RETURN_IF_ERROR(
      CheckOptionModes(run.given_values, RunModes(job, InputMode(job) == "stream", run.dist.active())));
  return CheckOptionModels(run.given_values, job.model);
}

// What the schema's modes do not say: the combinations that need more than one option's value.
Status CheckCombinations(TrainRun& run) {
  TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  run.mode = InputMode(job);
  run.stream = run.mode == "stream";
  run.remote = !job.data_service.address.empty();
  if (run.spec && job.train.empty())
    return InvalidArgumentError("--feature-spec reads --train in memory: give --train (the built-in synthetic data "
                                "has the seed layout)");
  if (run.stream && job.train.empty())
    return InvalidArgumentError("--input-mode stream needs --train (the built-in synthetic data is generated in memory)");
  // --dropout and --batch-norm act on hidden layers: with --deep-layers empty, the kinds whose only MLP it is have none.
  const std::string& k = job.model;
  if ((k == "deepfm" || k == "wide_deep" || k == "dcn" || k == "dcn_v2" || k == "xdeepfm") &&
      job.deep_layers.find_first_not_of(" ") == std::string::npos)
    for (const char* name : {"dropout", "batch_norm"})
      if (run.given_values.contains(name))
        return InvalidArgumentError(FlagName(name) + " acts on the hidden layers of --deep-layers, which is empty "
                                    "(--model " + k + " has no hidden layer); leave it out or give --deep-layers");
  if (job.ps.enabled()) CTRAIN_RETURN_IF_ERROR(job.ps.Options({}, nullptr).status());  // before any data is read
  if (job.ps.enabled() && job.ps.worker_index != 0) o.model_dir.clear();  // the chief (worker 0) checkpoints
  // A trainer is a client only: its certificate goes with TLS to the servers, which --tls-ca turns on.
  const service::SecurityOptions& sec = job.data_service.security;
  if ((!sec.tls_cert.empty() || !sec.tls_key.empty()) && sec.tls_ca.empty())
    return InvalidArgumentError(std::string(!sec.tls_cert.empty() ? "--tls-cert" : "--tls-key") +
                                " is this trainer's client certificate for TLS to the servers, and TLS is off without "
                                "--tls-ca: give --tls-ca (the CAs that verify the servers)");
  return Status::OK();
}

Status CheckValidation(TrainRun& run) {
  const train::TrainOptions& o = run.o;
  CTRAIN_RETURN_IF_ERROR(o.Validate());
  if ((!o.early_stopping_metric.empty() || o.keep_best || o.group_field >= 0 || o.lr_plateau()) && !run.have_valid &&
      run.report)
    return InvalidArgumentError(std::string(!o.early_stopping_metric.empty() ? "--early-stopping-metric"
                                            : o.keep_best                    ? "--keep-best"
                                            : o.lr_plateau()                 ? "--lr-decay plateau"
                                                                             : "--gauc-field") +
                                " needs --valid (the validation data it measures)");
  return Status::OK();
}

}  // namespace ctrain::job
