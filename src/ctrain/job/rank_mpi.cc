// The one file of job/ that knows whether this build has MPI (-DCTRAIN_MPI=OFF leaves dist/ out).
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "ctrain/base/log.h"
#include "ctrain/base/signals.h"
#include "ctrain/job/option_schema.h"
#include "ctrain/job/rank.h"
#include "ctrain/train/rank_agreement.h"
#if CTRAIN_HAVE_MPI
#include "ctrain/dist/job_setup.h"
#include "ctrain/dist/mpi_exchange.h"
#endif

namespace ctrain::job {

#if CTRAIN_HAVE_MPI

struct DistributedRun::Impl {
  std::unique_ptr<dist::MpiExchange> mpi;  // null: not started by mpirun
  std::string job_line;
  std::vector<int64_t> bytes0;  // traffic before training, by kind
  int64_t colls0 = 0;
  double secs0 = 0;
  int64_t wchar0 = 0;
};

StatusOr<std::unique_ptr<DistributedRun>> DistributedRun::Start(const TrainJobOptions& options) {
  std::unique_ptr<DistributedRun> run(new DistributedRun());
  if (dist::LaunchedByMpirun()) {
    dist::DistOptions d;
    d.stall_warning_secs = options.stall_warning_secs;
    d.stall_shutdown_secs = options.stall_shutdown_secs;
    d.check_replicas_every = options.check_replicas_every;
    CTRAIN_ASSIGN_OR_RETURN(run->impl_->mpi, dist::MpiExchange::Create(d));
    run->impl_->mpi->set_stop_flag(PendingInterruptFlag());
  }
  return run;
}

bool DistributedRun::active() const { return impl_->mpi != nullptr; }

int32_t DistributedRun::size() const { return active() ? impl_->mpi->size() : 1; }

Status DistributedRun::SetUpRank(TrainJobOptions& job, bool* per_rank_inputs, bool* report) {
  dist::MpiExchange* mpi = impl_->mpi.get();
  if (mpi == nullptr) return Status::OK();
  // Before anything else runs over MPI: the options every rank must agree on (shared/cases/B42).
  CTRAIN_RETURN_IF_ERROR(train::CheckSameOnEveryRank(*mpi, AgreedTrainOptions(job), "the training options"));
  // One rank of `mpirun -np N ctrain train` (dist/job_setup.h).
  train::TrainOptions& o = job.train_options;
  dist::RankSettings rs;
  rs.train = job.train;
  rs.cache = job.pipeline.cache;
  rs.learning_rate = job.learning_rate;
  rs.lr_scaling = job.lr_scaling;
  rs.lr_warmup_steps = job.lr_warmup_steps;
  rs.batch_size = o.batch_size;
  rs.autotune = job.autotune;
  CTRAIN_RETURN_IF_ERROR(dist::SetUpRank(*mpi, &rs));
  job.train = rs.train;
  job.pipeline.cache = rs.cache;
  *per_rank_inputs = rs.per_rank_inputs;
  o.optimizer.learning_rate = rs.learning_rate;
  o.lr_warmup_steps = rs.lr_warmup_steps;
  o.lr_warmup_from = rs.lr_warmup_from;
  impl_->job_line = rs.job_line;
  if (!o.early_stopping_metric.empty() && mpi->size() > 1)
    return InvalidArgumentError("--early-stopping-metric under mpirun: rank 0 alone validates, so the other ranks "
                                "could not stop at its step; train without it (--keep-best works)");
  if (!mpi->is_chief()) {  // rank 0 alone checkpoints, validates and reports
    o.model_dir.clear();
    o.keep_best = false;  // rank 0 saves the best checkpoint and computes the validation metrics (--gauc-field
                          // stays: --lr-plateau-metric gauc needs it on every rank, which take rank 0's decisions)
    job.metrics_json.clear();
    job.valid.clear();
    job.progress = "none";
    *report = false;
  }
  return Status::OK();
}

StatusOr<bool> DistributedRun::RankZeroSays(bool mine, const char* what) {
  dist::MpiExchange* mpi = impl_->mpi.get();
  if (mpi == nullptr || mpi->size() <= 1) return mine;
  float v = mpi->is_chief() && mine ? 1.0f : 0.0f;  // the sum is rank 0's
  CTRAIN_RETURN_IF_ERROR(mpi->AllreduceSum(std::span<float>(&v, 1), what));
  return v > 0.5f;
}

void DistributedRun::ShardRows(train::Dataset* rows, bool log) const {
  const dist::MpiExchange* mpi = impl_->mpi.get();
  if (mpi == nullptr || mpi->size() <= 1) return;
  *rows = dist::ShardRows(*rows, mpi->size(), mpi->rank());
  if (log)
    Logf("%s: memory mode: %lld training rows (every %d-th row from %d)\n",
                 mpi->RankName(mpi->rank()).c_str(), static_cast<long long>(rows->size()), mpi->size(), mpi->rank());
}

void DistributedRun::Attach(train::Trainer& trainer, int64_t check_replicas_every) {
  dist::MpiExchange* mpi = impl_->mpi.get();
  if (mpi == nullptr) return;
  trainer.set_gradient_exchange(mpi);
  mpi->set_check_replicas_every(check_replicas_every);
  if (mpi->is_chief()) Logf("%s\n", impl_->job_line.c_str());
}

void DistributedRun::SnapshotTraffic() {
  const dist::MpiExchange* mpi = impl_->mpi.get();
  if (mpi == nullptr) return;
  for (int k = 0; k < dist::MpiExchange::kTrafficKinds; ++k)
    impl_->bytes0.push_back(mpi->payload_bytes(static_cast<dist::MpiExchange::Traffic>(k)));
  impl_->colls0 = mpi->collectives();
  impl_->secs0 = mpi->collective_seconds();
  impl_->wchar0 = dist::ProcessBytesWritten();
}

nlohmann::json DistributedRun::TrafficJson(const train::TrainResult& r, const train::Trainer& trainer) const {
  const dist::MpiExchange* mpi = impl_->mpi.get();
  if (mpi == nullptr || r.steps_this_run <= 0) return nullptr;
  // Traffic per step of this rank (docs/distributed.md#traffic).
  const std::vector<int64_t>& bytes0 = impl_->bytes0;
  const int64_t wchar0 = impl_->wchar0;
  const double steps = static_cast<double>(r.steps_this_run);
  const int64_t wchar1 = dist::ProcessBytesWritten();
  auto per_step = [&](dist::MpiExchange::Traffic k) {
    return static_cast<double>(mpi->payload_bytes(k) - bytes0[k]) / steps;
  };
  nlohmann::json j = {
      {"ranks", mpi->size()},
      {"collectives_per_step", static_cast<double>(mpi->collectives() - impl_->colls0) / steps},
      {"dense_bytes_per_step", per_step(dist::MpiExchange::kDense)},
      {"sparse_bytes_per_step", per_step(dist::MpiExchange::kSparse)},
      {"control_bytes_per_step", per_step(dist::MpiExchange::kControl)},
      {"broadcast_bytes", mpi->payload_bytes(dist::MpiExchange::kBroadcast) - bytes0[dist::MpiExchange::kBroadcast]},
      {"collective_seconds_per_step", (mpi->collective_seconds() - impl_->secs0) / steps},
      {"written_bytes_per_step", wchar0 >= 0 && wchar1 >= 0 ? (wchar1 - wchar0) / steps : -1.0},
      {"examples_left_over", trainer.examples_left_over()}};
  if (mpi->is_chief())
    std::fprintf(stderr,
                 "ctrain: mpirun: rank 0 per step: %.1f collectives, payload %.0f dense + %.0f sparse + %.0f control "
                 "bytes; %.0f bytes written to sockets (/proc/self/io, counting the initial broadcast of %lld "
                 "bytes spread over the steps; ~0 when Open MPI moves the data through shared memory)\n",
                 j["collectives_per_step"].get<double>(), j["dense_bytes_per_step"].get<double>(),
                 j["sparse_bytes_per_step"].get<double>(), j["control_bytes_per_step"].get<double>(),
                 j["written_bytes_per_step"].get<double>(), static_cast<long long>(j["broadcast_bytes"].get<int64_t>()));
  return j;
}

void DistributedRun::EndOnError(const Status& s) {
  if (impl_->mpi != nullptr && !s.ok() && s.code() != StatusCode::kCancelled && impl_->mpi->size() > 1)
    impl_->mpi->Abort(s.ToString(), 1);
}

void DistributedRun::Report(const Status& s, const std::function<void(const Status&)>& report) {
  if (report) report(s);
  if (impl_->mpi == nullptr || impl_->mpi->size() < 2 || s.code() != StatusCode::kCancelled) return;
  float reported = 1;  // a barrier: every rank stopped at the same step (the vote), none is gone
  (void)impl_->mpi->AllreduceSum(std::span<float>(&reported, 1), "the ranks' reports after the stop request");
}

#else  // built without MPI (-DCTRAIN_MPI=OFF or no libopenmpi-dev): a process of its own

struct DistributedRun::Impl {};

StatusOr<std::unique_ptr<DistributedRun>> DistributedRun::Start(const TrainJobOptions&) {
  return std::unique_ptr<DistributedRun>(new DistributedRun());
}

bool DistributedRun::active() const { return false; }

int32_t DistributedRun::size() const { return 1; }

Status DistributedRun::SetUpRank(TrainJobOptions&, bool*, bool*) {
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n != nullptr && std::atoi(n) > 1)
    return FailedPreconditionError("started by mpirun with " + std::string(n) +
                                   " ranks, but this ctrain was built without MPI (-DCTRAIN_MPI=OFF or no "
                                   "libopenmpi-dev): the ranks would train separate models");
  return Status::OK();
}

StatusOr<bool> DistributedRun::RankZeroSays(bool mine, const char*) { return mine; }

void DistributedRun::ShardRows(train::Dataset*, bool) const {}

void DistributedRun::Attach(train::Trainer&, int64_t) {}

void DistributedRun::SnapshotTraffic() {}

nlohmann::json DistributedRun::TrafficJson(const train::TrainResult&, const train::Trainer&) const { return nullptr; }

void DistributedRun::EndOnError(const Status&) {}

void DistributedRun::Report(const Status& s, const std::function<void(const Status&)>& report) {
  if (report) report(s);
}

#endif

DistributedRun::DistributedRun() : impl_(std::make_unique<Impl>()) {}

DistributedRun::~DistributedRun() = default;

}  // namespace ctrain::job
