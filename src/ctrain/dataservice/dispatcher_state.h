// DispatcherState: the dispatcher's bookkeeping of datasets, jobs, epochs and
// splits, as a replayable state machine (no RPC, no clock, no files).
//
// Every change is an event (a JSON object) that the dispatcher first appends
// to its journal (service/journal.h) and then applies; replaying the journal's
// events into a fresh state rebuilds it exactly (docs/data-service.md).
//
// Units: an epoch of a job has U units. distributed_epoch: U = num_splits and
// unit u is split u of U (every example once per epoch over all units).
// parallel_epochs: U = the live workers when the epoch began and unit u is
// copy u of the whole dataset. A unit is pending, owned by one consumer (the
// trainer streaming it) or done (acknowledged by its consumer: only then).
//
// Consumer restarts: Join with the trainer's checkpointed cursor
// {"epoch": E, "done": [units]} hands back to that consumer every unit it
// owned or completed in epoch E that is not in "done" (it re-reads them,
// skipping the batches its cursor says it consumed), and returns its units of
// later epochs to pending. Units done by other consumers stay done.
//
// Thread safety: none; the dispatcher holds a mutex around it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/dataservice/data_service.pb.h"

namespace ctrain::dataservice {

enum class UnitState { kPending, kOwned, kDone };

struct UnitInfo {
  UnitState state = UnitState::kPending;
  int32_t consumer = -1;  // owner (kOwned) or the consumer that completed it (kDone)
  int64_t batches = 0, examples = 0;  // kDone: as acknowledged
};

struct EpochInfo {
  std::vector<UnitInfo> units;
  int32_t pending() const;
  int32_t owned() const;
  int32_t done() const;
};

struct ConsumerInfo {
  bool released = false;
  int64_t epoch = 0;  // the latest epoch it asked for
};

struct JobInfo {
  std::string name;
  std::string dataset_id;
  proto::ProcessingMode mode = proto::DISTRIBUTED_EPOCH;
  int32_t num_splits = 1;  // distributed_epoch
  int64_t epochs = 1;  // as its first trainer planned (shown in status; later epochs may still be read)
  std::map<int64_t, EpochInfo> epoch_units;
  std::map<int32_t, ConsumerInfo> consumers;
  // Every consumer that joined has released the job.
  bool finished() const;
};

struct DatasetInfo {
  std::string id;
  proto::DatasetDef def;  // files expanded by the dispatcher
  std::vector<int64_t> file_bytes;
};

// The SplitId a unit stands for.
proto::SplitId UnitSplit(const JobInfo& job, int64_t epoch, int32_t unit);
// The unit a SplitId stands for in `job`. Errors: InvalidArgument when the
// split does not belong to the job's mode / number of splits.
StatusOr<int32_t> SplitUnit(const JobInfo& job, const proto::SplitId& split);

class DispatcherState {
 public:
  // Applies one event. Errors: InvalidArgument naming the event for a
  // malformed or inconsistent one (a journal from another version, or damaged).
  Status Apply(const nlohmann::json& event);

  // ---- event builders: each checks the request against the state and
  // returns the events to journal and apply (possibly none). ----

  // dataset: {"type": "dataset", "id", "def" (proto text as base64), "file_bytes"}.
  static nlohmann::json DatasetEvent(const DatasetInfo& dataset);
  // Join: creates the job on first use. Errors: FailedPrecondition when the
  // job exists with another dataset, mode or num_splits (named);
  // NotFound for an unknown dataset; InvalidArgument for a bad cursor.
  StatusOr<std::vector<nlohmann::json>> JoinEvents(const proto::JoinJobRequest& request) const;
  // Which unit to hand to `consumer` for `epoch`: a unit it owns that it is not
  // streaming (`active`), else a pending one. `live_workers` sizes a new
  // parallel_epochs epoch. Returns false in *found when the consumer has
  // nothing left in the epoch. Errors: NotFound job; FailedPrecondition for a
  // consumer that has not joined; Unavailable for a new parallel_epochs epoch
  // with no live worker (retry).
  StatusOr<std::vector<nlohmann::json>> NextUnitEvents(const std::string& job, int32_t consumer, int64_t epoch,
                                                       const std::set<int32_t>& active, int32_t live_workers,
                                                       int32_t* unit, bool* found) const;
  // Reclaiming a unit the consumer owns (after a worker failure). Errors:
  // FailedPrecondition when another consumer owns it or it is done, or the
  // consumer has not joined the job.
  StatusOr<std::vector<nlohmann::json>> ReclaimEvents(const std::string& job, int32_t consumer, int64_t epoch,
                                                      int32_t unit) const;
  StatusOr<std::vector<nlohmann::json>> CompleteEvents(const proto::CompleteSplitRequest& request) const;
  StatusOr<std::vector<nlohmann::json>> ReleaseEvents(const std::string& job, int32_t consumer) const;

  const std::map<std::string, DatasetInfo>& datasets() const { return datasets_; }
  const std::map<std::string, JobInfo>& jobs() const { return jobs_; }
  const DatasetInfo* dataset(const std::string& id) const;
  const JobInfo* job(const std::string& name) const;
  // At least one job, and every job finished.
  bool all_jobs_finished() const;

  // Events that rebuild this state (journal compaction).
  std::vector<nlohmann::json> Snapshot() const;

 private:
  std::map<std::string, DatasetInfo> datasets_;
  std::map<std::string, JobInfo> jobs_;
};

// "job J epoch E split U/N" or "job J epoch E copy U", for messages.
std::string SplitDescription(const JobInfo& job, int64_t epoch, int32_t unit);

// "parallel_epochs" / "distributed_epoch".
std::string ProcessingModeName(proto::ProcessingMode mode);
StatusOr<proto::ProcessingMode> ParseProcessingMode(const std::string& name);

}  // namespace ctrain::dataservice
