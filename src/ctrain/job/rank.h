// DistributedRun: what the training job needs from mpirun (dist/, docs/distributed.md),
// behind one interface so that `#if CTRAIN_HAVE_MPI` lives in rank_mpi.cc alone.
//
// Started by mpirun in a build with MPI, it is one rank of a synchronous
// data-parallel job (dist::MpiExchange); otherwise it is a process of its own:
// every method is then a no-op, and SetUpRank refuses a build without MPI that
// mpirun started with more than one rank.
//
// Thread safety: the job's thread only.
#pragma once

#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/job/train_job.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/gradient_exchange.h"
#include "ctrain/train/trainer.h"

namespace ctrain::job {

class DistributedRun {
 public:
  // Under mpirun (a build with MPI): MPI_Init and the stall detector from
  // `options` (dist::MpiExchange::Create's errors), polling the stop flag.
  // Otherwise a run of one process.
  static StatusOr<std::unique_ptr<DistributedRun>> Start(const TrainJobOptions& options);
  ~DistributedRun();  // MPI_Finalize

  bool active() const;   // one rank of mpirun
  int32_t size() const;  // ranks (1 alone)

  // Settles this rank (dist::SetUpRank): per-rank --train/--cache, the scaled
  // learning rate and its warm-up onto job.train_options, *per_rank_inputs
  // (--train named the rank); refuses --early-stopping-metric with more than
  // one rank; on ranks other than 0 clears the outputs, validation and
  // progress and sets *report = false. Without MPI: refuses mpirun's ranks.
  Status SetUpRank(TrainJobOptions& job, bool* per_rank_inputs, bool* report);

  // Rank 0's `mine` on every rank (one collective under mpirun; `mine` itself
  // alone): a decision only rank 0 can take (it alone has the model dir).
  StatusOr<bool> RankZeroSays(bool mine, const char* what);

  // With more than one rank: keeps this rank's share of `rows` (dist::ShardRows);
  // `log` prints how many.
  void ShardRows(train::Dataset* rows, bool log) const;

  // Gives the trainer the gradient exchange, --check-replicas-every, and prints
  // the job line on rank 0.
  void Attach(train::Trainer& trainer, int64_t check_replicas_every);

  // Traffic counters before training, and after it: the "mpi" object of
  // --metrics-json (null when not active or no step ran), printing rank 0's
  // per-step traffic line.
  void SnapshotTraffic();
  nlohmann::json TrafficJson(const train::TrainResult& r, const train::Trainer& trainer) const;

  // A failing rank ends every rank (MPI_Abort) so that none waits for it; a
  // stop request (Cancelled) does not.
  void EndOnError(const Status& s);
  // Calls report(s) (if set) on this rank. After a stop request (Cancelled)
  // under mpirun every rank then waits for the others' reports: the first rank
  // to exit (with 128 + signal) makes mpirun end the rest, which must have
  // said by then where their checkpoint went.
  void Report(const Status& s, const std::function<void(const Status&)>& report);

 private:
  DistributedRun();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ctrain::job
