// libFuzzer target: arbitrary bytes as each request the data service's
// servers decode, run through the checks and state builders they run on it
// (dataservice/dispatcher.cc, worker.cc, client.cc).
//
// The same input is parsed as every message type it decodes as:
//   StreamRequest         -> ValidateDatasetDef, ValidateSplit,
//                            ParseFrameCompression, PlanSplitRead (no feature map:
//                            that would read a file the input names)
//   RegisterDatasetRequest-> ValidateDatasetDef, DatasetFingerprint
//   JoinJobRequest        -> DispatcherState::JoinEvents, then Apply of its events
//   GetSplitRequest       -> SplitUnit / ReclaimEvents or NextUnitEvents, then Apply
//   CompleteSplitRequest  -> CompleteEvents, then Apply
//   WorkerHeartbeatRequest-> CheckHostPort(worker_address)
//   BatchFrame            -> DecodeFrame (raw_bytes up to 16 MiB: a larger one
//                            is legal and only costs the allocation)
// and, parsed as JSON, as a journal event: DispatcherState::Apply.
// Each runs on a copy of a small prepared state (a dataset, a 4-split job with
// two consumers, a parallel_epochs job, units owned and done). Checks: no
// crash; events a builder returns always apply; Apply's errors are
// InvalidArgument; DecodeFrame's are DataLoss (or the batch's own errors).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/dataservice/data_service.pb.h"
#include "ctrain/dataservice/dataset_def.h"
#include "ctrain/dataservice/dispatcher_state.h"
#include "ctrain/dataservice/frame_codec.h"
#include "ctrain/service/server.h"

namespace {

using json = nlohmann::json;
namespace ds = ctrain::dataservice;
namespace proto = ctrain::dataservice::proto;
using ctrain::StatusCode;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void ApplyAll(ds::DispatcherState* s, const ctrain::StatusOr<std::vector<json>>& events) {
  if (!events.ok()) return;
  for (const json& e : *events) Check(s->Apply(e).ok());  // what a builder returns always applies
}

ds::DispatcherState Prepared() {
  ds::DispatcherState s;
  ds::DatasetInfo d;
  d.id = "0123456789abcdef";
  d.def.add_files("/data/a.libsvm");
  d.def.set_format("libsvm");
  d.def.set_batch_size(4);
  d.file_bytes = {100};
  Check(s.Apply(ds::DispatcherState::DatasetEvent(d)).ok());
  for (int32_t k : {0, 1}) {
    proto::JoinJobRequest j;
    j.set_job_name("job");
    j.set_dataset_id(d.id);
    j.set_processing_mode(proto::DISTRIBUTED_EPOCH);
    j.set_num_splits(4);
    j.set_epochs(2);
    j.set_consumer_index(k);
    ApplyAll(&s, s.JoinEvents(j));
  }
  proto::JoinJobRequest p;
  p.set_job_name("par");
  p.set_dataset_id(d.id);
  p.set_processing_mode(proto::PARALLEL_EPOCHS);
  p.set_epochs(1);
  ApplyAll(&s, s.JoinEvents(p));
  int32_t unit = 0;
  bool found = false;
  ApplyAll(&s, s.NextUnitEvents("job", 0, 0, {}, 2, &unit, &found));
  ApplyAll(&s, s.NextUnitEvents("job", 1, 0, {}, 2, &unit, &found));
  proto::CompleteSplitRequest c;
  c.set_job_id("job");
  c.set_consumer_index(1);
  *c.mutable_split() = ds::UnitSplit(*s.job("job"), 0, unit);
  c.set_batches(3);
  ApplyAll(&s, s.CompleteEvents(c));
  ApplyAll(&s, s.NextUnitEvents("par", 0, 0, {}, 3, &unit, &found));
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ds::DispatcherState prepared = Prepared();
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  if (proto::StreamRequest r; r.ParseFromString(bytes)) {
    (void)ds::ValidateDatasetDef(r.dataset());
    (void)ds::ValidateSplit(r.split());
    (void)ds::ParseFrameCompression(r.compression());
    (void)ds::SplitName(r.split());
    if (r.dataset().feature_map().empty()) {
      auto plan = ds::PlanSplitRead(r.dataset(), r.split(), 1);
      if (plan.ok()) Check(plan->pipeline.num_shards == r.split().num_splits());
    }
  }
  if (proto::RegisterDatasetRequest r; r.ParseFromString(bytes)) {
    if (ds::ValidateDatasetDef(r.dataset()).ok()) Check(ds::DatasetFingerprint(r.dataset()).size() == 16);
  }
  if (proto::JoinJobRequest r; r.ParseFromString(bytes)) {
    ds::DispatcherState s = prepared;
    ApplyAll(&s, s.JoinEvents(r));
  }
  if (proto::GetSplitRequest r; r.ParseFromString(bytes)) {
    ds::DispatcherState s = prepared;
    const ds::JobInfo* j = s.job(r.job_id());
    if (r.has_reclaim() && j != nullptr) {
      auto unit = ds::SplitUnit(*j, r.reclaim());
      if (unit.ok()) ApplyAll(&s, s.ReclaimEvents(r.job_id(), r.consumer_index(), r.reclaim().epoch(), *unit));
    } else {
      const std::set<int32_t> active(r.active().begin(), r.active().end());
      int32_t unit = -1;
      bool found = false;
      auto events = s.NextUnitEvents(r.job_id(), r.consumer_index(), r.epoch(), active,
                                     static_cast<int32_t>(r.failed_workers_size() % 5), &unit, &found);
      ApplyAll(&s, events);
      if (events.ok() && found) {
        const ds::JobInfo* jj = s.job(r.job_id());
        Check(jj != nullptr);
        const ds::UnitInfo& u = jj->epoch_units.at(r.epoch()).units.at(unit);
        Check(u.state == ds::UnitState::kOwned && u.consumer == r.consumer_index());
      }
    }
  }
  if (proto::CompleteSplitRequest r; r.ParseFromString(bytes)) {
    ds::DispatcherState s = prepared;
    ApplyAll(&s, s.CompleteEvents(r));
    (void)s.ReleaseEvents(r.job_id(), r.consumer_index());
  }
  if (proto::WorkerHeartbeatRequest r; r.ParseFromString(bytes)) {
    (void)ctrain::service::CheckHostPort(r.worker_address(), "worker_address");
  }
  if (proto::BatchFrame f; f.ParseFromString(bytes)) {
    if (f.raw_bytes() <= (int64_t{16} << 20)) {
      std::string scratch;
      ctrain::data::Batch batch;
      ctrain::Status st = ds::DecodeFrame(f, &scratch, &batch);
      if (st.ok()) Check(batch.size() == f.examples());
      else Check(st.code() == StatusCode::kDataLoss || st.code() == StatusCode::kInvalidArgument);
    }
  }
  const json e = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!e.is_discarded()) {
    ds::DispatcherState s = prepared;
    const ctrain::Status st = s.Apply(e);
    Check(st.ok() || st.code() == StatusCode::kInvalidArgument);
    (void)s.Snapshot();
    (void)s.all_jobs_finished();
  }
  return 0;
}
