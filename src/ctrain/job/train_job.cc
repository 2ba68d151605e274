// The training job: RunTrainJob runs the steps of job/train_steps.h in order.
#include "ctrain/job/train_job.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/job/finished_run.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/rank.h"
#include "ctrain/job/train_steps.h"
#include "ctrain/monitor/monitor.h"
#include "ctrain/monitor/train_monitor.h"
#include "ctrain/train/autotune.h"
#include "ctrain/train/openmp_wait.h"
#include "ctrain/train/threads.h"
#include "ctrain/train/trainer_state.h"

namespace ctrain::job {
namespace {

// Why --autotune cannot measure the other OpenMP wait policy in this run ("" when it can): the re-exec
// (train/autotune.h kAutotuneWaitVar) repeats the run's start, which must have nothing another process
// saw or consumed (mpirun ranks, parameter-server workers, the data service's splits, a stream cache file).
std::string WaitTrialRefusal(const TrainRun& run) {
  if (!train::OpenMPWaitFromSample())
    return "the policy was not chosen from an idle/busy sample (OMP_WAIT_POLICY or GOMP_SPINCOUNT set, one CPU, "
           "a CPU quota, or another ctrain process running)";
  if (run.dist.active()) return "mpirun ranks choose together (each looks before it starts)";
  if (run.job.ps.enabled()) return "a parameter-server worker does not restart";
  if (run.remote) return "the data service's splits are not read twice";
  if (run.stream && !run.job.pipeline.cache.empty() && run.job.pipeline.cache != "memory")
    return "a --cache file is being written";
  return "";
}

// The wait-policy trial's second and third processes (kAutotuneWaitVar set): measure the carried layout
// under this process's policy and keep the faster policy, re-executing once more when the first was.
Status AutotuneWaitCarried(TrainRun& run, const train::AutotuneWaitRecord& carried) {
  train::AutotuneResult one;
  one.rows.push_back(carried.row);
  train::AutotuneWaitRecord rec = carried;
  if (!carried.decided) {
    const char* now = std::getenv("OMP_WAIT_POLICY");
    const std::string policy = now != nullptr ? now : "";
    Status error;
    const train::AutotuneRow mine = train::MeasureLayout(run.o, run.tr, carried.row.parallel,
                                                         carried.row.gemm_dtype, run.job.autotune_steps, &error);
    CTRAIN_RETURN_IF_ERROR(error);
    Logf("autotune: the winning layout with OMP_WAIT_POLICY=%s %.0f examples/s, with %s %.0f\n",
         carried.policy.c_str(), carried.row.examples_per_sec, policy.c_str(), mine.examples_per_sec);
    if (mine.examples_per_sec < carried.row.examples_per_sec) {
      rec.decided = true;
      rec.other_examples_per_sec = mine.examples_per_sec;
      ::setenv(train::kAutotuneWaitVar, train::EncodeAutotuneWait(rec).c_str(), 1);
      char why[160];
      std::snprintf(why, sizeof why, "autotune: %.0f examples/s against %.0f with %s", carried.row.examples_per_sec,
                    mine.examples_per_sec, policy.c_str());
      Logf("autotune: re-executing with OMP_WAIT_POLICY=%s (the data loads again)\n", carried.policy.c_str());
      const Status s = train::ReexecWithOpenMPWait({carried.policy, why, true});
      ::unsetenv(train::kAutotuneWaitVar);
      Logf("autotune: %s; training with OMP_WAIT_POLICY=%s\n", s.ToString().c_str(), policy.c_str());
    }
    one.rows[0] = mine;
    char why[160];
    std::snprintf(why, sizeof why, "autotune: %.0f examples/s against %.0f with %s", mine.examples_per_sec,
                  carried.row.examples_per_sec, carried.policy.c_str());
    train::SetOpenMPWaitReason(why);
  }
  Logf("autotune: wait policy %s; the same without autotune: OMP_WAIT_POLICY=%s with %s\n",
       std::getenv("OMP_WAIT_POLICY"), std::getenv("OMP_WAIT_POLICY"), train::WinnerFlags(one).c_str());
  train::ApplyAutotune(one, &run.o);
  return Status::OK();
}

// --autotune (train/autotune.h) on the in-memory rows (or the stream's sample),
// then the intra_op threads each replica runs.
Status Autotune(TrainRun& run) {
  const TrainJobOptions& job = run.job;
  train::TrainOptions& o = run.o;
  std::optional<train::AutotuneWaitRecord> carried;
  if (const char* env = std::getenv(train::kAutotuneWaitVar)) {
    StatusOr<train::AutotuneWaitRecord> r = train::DecodeAutotuneWait(env);
    ::unsetenv(train::kAutotuneWaitVar);  // not for the processes this one starts
    if (!r.ok()) return r.status();
    if (!job.autotune) return InvalidArgumentError(std::string(train::kAutotuneWaitVar) + " is set without --autotune; unset it");
    carried = *r;
  }
  if (carried) {
    CTRAIN_RETURN_IF_ERROR(AutotuneWaitCarried(run, *carried));
  } else if (job.autotune) {
    Logf("autotune: measuring thread layouts on %d cores (%lld steps each)...\n",
                 train::AvailableCpus(), static_cast<long long>(job.autotune_steps));
    train::AutotuneOptions ao;
    ao.steps = job.autotune_steps;
    ao.try_bf16 = job.mixed_precision == "auto";
    if (job.given.Has("intra_op_parallelism_threads")) ao.fixed_intra_op_threads = job.parallel.intra_op_threads;
    if (job.given.Has("towers")) ao.fixed_towers = job.parallel.towers;
    if (job.given.Has("hogwild")) ao.fixed_hogwild = job.parallel.hogwild;
    CTRAIN_ASSIGN_OR_RETURN(train::AutotuneResult at, train::Autotune(o, run.tr, ao));
    std::fprintf(stderr, "%s", train::FormatAutotuneTable(at).c_str());
    train::ApplyAutotune(at, &o);
    if (const std::string refusal = WaitTrialRefusal(run); !refusal.empty()) {
      Logf("autotune: the OpenMP wait policy is not measured: %s\n", refusal.c_str());
    } else {
      const std::string policy = std::getenv("OMP_WAIT_POLICY");
      const std::string other = train::OtherWaitPolicy(policy);
      train::AutotuneWaitRecord rec;
      rec.policy = policy;
      rec.row = at.rows[at.best];
      ::setenv(train::kAutotuneWaitVar, train::EncodeAutotuneWait(rec).c_str(), 1);
      Logf("autotune: re-executing with OMP_WAIT_POLICY=%s to measure the winning layout with it (the data loads "
           "again)\n", other.c_str());
      const Status s = train::ReexecWithOpenMPWait({other, "autotune: measuring it against " + policy, true});
      ::unsetenv(train::kAutotuneWaitVar);
      Logf("autotune: the OpenMP wait policy is not measured: %s\n", s.ToString().c_str());
    }
  }
  const int32_t replicas = o.parallel.replicas();
  run.intra = o.parallel.intra_op_threads > 0 ? o.parallel.intra_op_threads
                                              : std::max(1, train::AvailableCpus() / replicas);
  return Status::OK();
}

// The trainer, resumed from the model dir. With --ps this process is worker
// job.ps.worker_index of a parameter-server job: the same trainer, its
// parameters on the servers (ps/ps_parameters.h).
Status CreateTrainer(TrainRun& run) {
  const TrainJobOptions& job = run.job;
  if (job.ps.enabled()) {
    CTRAIN_ASSIGN_OR_RETURN(service::ChannelConfig channel, job.data_service.security.Channel());
    CTRAIN_ASSIGN_OR_RETURN(ps::PsTrainOptions po, job.ps.Options(channel, PendingInterruptFlag()));
    CTRAIN_ASSIGN_OR_RETURN(run.ps_params, ps::PsParameters::Connect(run.o, po));
    std::string servers;
    for (const std::string& a : job.ps.addresses) servers += (servers.empty() ? "" : ",") + a;
    Logf("%s, parameter servers %s\n", run.ps_params->Describe().c_str(), servers.c_str());
    if (job.ps.worker_index != 0) run.have_valid = false;  // the chief validates
  }
  CTRAIN_ASSIGN_OR_RETURN(run.trainer, train::Trainer::Create(run.o, run.ps_params.get()));
  bool restored = false;
  CTRAIN_RETURN_IF_ERROR(run.trainer->Restore(&restored));
  if (restored && !run.ps_params)
    Logf("resumed from %s at step %lld\n", run.o.model_dir.c_str(),
                 static_cast<long long>(run.trainer->global_step()));
  return Status::OK();
}

// A rerun with nothing to do (job/finished_run.h): this run's record of its inputs and settings goes into
// its checkpoints; when --model-dir's latest checkpoint is a finished run with the same record (and no
// --force), nothing trains. Under mpirun rank 0 alone has the model dir: its decision holds on every rank.
Status CheckFinishedRun(TrainRun& run, bool* nothing_to_do) {
  std::string message;
  if (!run.o.model_dir.empty() && !run.job.ps.enabled()) {  // --ps: the servers keep the checkpoint
    CTRAIN_ASSIGN_OR_RETURN(run.o.run_record, RunRecord(run.job));
    if (!run.job.force && !run.o.run_record.is_null()) {
      CTRAIN_ASSIGN_OR_RETURN(std::optional<train::LoadedCheckpoint> ck,
                              train::ReadTrainerCheckpoint(run.o.model_dir));
      if (ck.has_value()) message = NothingToDoMessage(run.o.model_dir, ck->meta, run.o.run_record);
    }
  }
  CTRAIN_ASSIGN_OR_RETURN(*nothing_to_do, run.dist.RankZeroSays(!message.empty(), "rank 0's finished-run check"));
  if (!message.empty()) Logf("%s\n", message.c_str());
  return Status::OK();
}

// The stop flag, --monitor-dir, the validation formats and the data service's batches.
Status SetUpTrainer(TrainRun& run) {
  const TrainJobOptions& job = run.job;
  train::Trainer& trainer = *run.trainer;
  trainer.set_stop_flag(PendingInterruptFlag());
  if (!job.monitor_dir.empty()) {
    monitor::MonitorOptions mo;
    mo.dir = monitor::RankDir(job.monitor_dir);
    mo.role = "trainer";
    mo.interval_ms = job.monitor_interval_ms;
    CTRAIN_ASSIGN_OR_RETURN(run.mon, monitor::Monitor::Start(mo));
    run.train_mon = std::make_unique<monitor::TrainMonitor>(run.mon.get(), 1);
    trainer.set_observer(run.train_mon.get());
  }
  if (run.have_valid && !job.valid.empty()) trainer.set_valid_formats(train::InputFormatsRead(run.va_stats));
  if (run.data_service_factory) trainer.set_batch_source_factory(run.data_service_factory);
  return Status::OK();
}

Status Train(TrainRun& run) {
  InterruptDeferral defer;  // SIGINT/SIGTERM: checkpoint at the current step, then exit 130/143
  const train::Dataset* valid = run.have_valid ? &run.va : nullptr;
  if (run.stream) return run.trainer->TrainStream(run.si, valid, &run.r);
  return run.trainer->Train(run.tr, valid, &run.r);
}

Status RunTrainJob(TrainJobOptions& job, DistributedRun& dist, train::TrainResult* result) {
  TrainRun run(job, dist);
  run.given_values = EffectiveTrainOptions(job);  // every option away from its default, however it was set
  CTRAIN_RETURN_IF_ERROR(CheckModes(run));                                         // train_checks.cc
  CTRAIN_RETURN_IF_ERROR(ResolveModelOptions(run));                                // train_resolve.cc
  CTRAIN_RETURN_IF_ERROR(dist.SetUpRank(job, &run.per_rank_inputs, &run.report));  // rank_mpi.cc
  CTRAIN_RETURN_IF_ERROR(ResolveRunOptions(run));                                  // train_resolve.cc
  CTRAIN_RETURN_IF_ERROR(CheckCombinations(run));                                  // train_checks.cc
  CTRAIN_RETURN_IF_ERROR(FindFeatureMap(run));                                     // train_data.cc
  CTRAIN_RETURN_IF_ERROR(PrepareOutputs(run));                                     // train_outputs.cc
  bool nothing_to_do = false;
  CTRAIN_RETURN_IF_ERROR(CheckFinishedRun(run, &nothing_to_do));
  // Nothing to do: the finished checkpoint is resumed as it is (no warm start over it), which trains no step and
  // writes the run's outputs (--metrics-json, the report) from it, as any resumed finished run does.
  if (nothing_to_do) run.o.warm_start_from.clear();
  CTRAIN_RETURN_IF_ERROR(OpenData(run));                                           // train_data.cc
  CTRAIN_RETURN_IF_ERROR(DescribeData(run));                                       // train_data.cc
  CTRAIN_RETURN_IF_ERROR(CheckValidation(run));                                    // train_checks.cc
  CTRAIN_RETURN_IF_ERROR(SampleForAutotune(run));                                  // train_data.cc
  CTRAIN_RETURN_IF_ERROR(Autotune(run));
  PrintRunLine(run);                                                               // train_report.cc
  CTRAIN_RETURN_IF_ERROR(CreateTrainer(run));
  dist.Attach(*run.trainer, job.check_replicas_every);                            // rank_mpi.cc
  CTRAIN_RETURN_IF_ERROR(SetUpTrainer(run));
  dist.SnapshotTraffic();
  CTRAIN_RETURN_IF_ERROR(Train(run));
  if (run.ps_params) CTRAIN_RETURN_IF_ERROR(ps::FinishPsWorker(*run.ps_params, *run.trainer));  // export, Done
  ReportDone(run);                                                                 // train_report.cc
  const nlohmann::json mpi_json = dist.TrafficJson(run.r, *run.trainer);           // rank_mpi.cc
  const nlohmann::json ps_json = ReportPs(run);                                    // train_report.cc
  CTRAIN_RETURN_IF_ERROR(WriteTrainMetrics(run, mpi_json, ps_json));               // train_report.cc
  if (result != nullptr) *result = run.r;
  return Status::OK();
}

}  // namespace

Status RunTrain(TrainJobOptions& options, train::TrainResult* result,
                const std::function<void(const Status&)>& report) {
  CTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<DistributedRun> dist, DistributedRun::Start(options));
  const Status s = RunTrainJob(options, *dist, result);
  dist->EndOnError(s);  // a failing rank ends the whole job (MPI_Abort)
  dist->Report(s, report);
  return s;
}

}  // namespace ctrain::job
