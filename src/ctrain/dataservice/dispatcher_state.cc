#include "ctrain/dataservice/dispatcher_state.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ctrain::dataservice {
namespace {

using json = nlohmann::json;

std::string Hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += d[c >> 4], out += d[c & 15];
  return out;
}

bool Unhex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  auto v = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out->resize(hex.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    const int hi = v(hex[2 * i]), lo = v(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<char>(hi * 16 + lo);
  }
  return true;
}

// A malformed event member (Apply turns it into InvalidArgument).
struct BadMember : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An integer member of an event, range-checked (json's own get<int> casts a
// float or an out-of-range number without a check).
template <typename T>
T Int(const json& v) {
  if (!v.is_number_integer()) throw BadMember("an integer is required, got " + v.dump().substr(0, 40));
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw BadMember("integer out of range");
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) throw BadMember("integer out of range");
  return static_cast<T>(i);
}
template <typename T>
T Int(const json& e, const char* key) {
  return Int<T>(e.at(key));
}

const char* StateName(UnitState s) {
  switch (s) {
    case UnitState::kPending: return "pending";
    case UnitState::kOwned: return "owned";
    case UnitState::kDone: return "done";
  }
  return "pending";
}

json UnitEvent(const std::string& job, int64_t epoch, int32_t unit, const UnitInfo& u) {
  return json{{"type", "unit"},       {"job", job},          {"epoch", epoch},
              {"unit", unit},         {"state", StateName(u.state)}, {"consumer", u.consumer},
              {"batches", u.batches}, {"examples", u.examples}};
}

json ConsumerEvent(const std::string& job, int32_t consumer, const ConsumerInfo& c) {
  return json{{"type", "consumer"}, {"job", job}, {"consumer", consumer}, {"epoch", c.epoch}, {"released", c.released}};
}

}  // namespace

int32_t EpochInfo::pending() const {
  return static_cast<int32_t>(std::count_if(units.begin(), units.end(), [](const UnitInfo& u) { return u.state == UnitState::kPending; }));
}
int32_t EpochInfo::owned() const {
  return static_cast<int32_t>(std::count_if(units.begin(), units.end(), [](const UnitInfo& u) { return u.state == UnitState::kOwned; }));
}
int32_t EpochInfo::done() const {
  return static_cast<int32_t>(std::count_if(units.begin(), units.end(), [](const UnitInfo& u) { return u.state == UnitState::kDone; }));
}

bool JobInfo::finished() const {
  if (consumers.empty()) return false;
  for (const auto& [k, c] : consumers)
    if (!c.released) return false;
  return true;
}

proto::SplitId UnitSplit(const JobInfo& job, int64_t epoch, int32_t unit) {
  proto::SplitId s;
  s.set_epoch(epoch);
  if (job.mode == proto::PARALLEL_EPOCHS) {
    s.set_num_splits(1);
    s.set_split_index(0);
    s.set_copy(unit);
  } else {
    s.set_num_splits(job.num_splits);
    s.set_split_index(unit);
    s.set_copy(0);
  }
  return s;
}

StatusOr<int32_t> SplitUnit(const JobInfo& job, const proto::SplitId& split) {
  if (job.mode == proto::PARALLEL_EPOCHS) {
    if (split.num_splits() != 1 || split.split_index() != 0 || split.copy() < 0)
      return InvalidArgumentError("job " + job.name + " is parallel_epochs: a split must be 0/1 with a copy number");
    return split.copy();
  }
  if (split.num_splits() != job.num_splits || split.copy() != 0 || split.split_index() < 0 ||
      split.split_index() >= job.num_splits)
    return InvalidArgumentError("job " + job.name + " has " + std::to_string(job.num_splits) +
                                " splits per epoch: split " + std::to_string(split.split_index()) + "/" +
                                std::to_string(split.num_splits()) + " is not one of them");
  return split.split_index();
}

std::string ProcessingModeName(proto::ProcessingMode mode) {
  return mode == proto::PARALLEL_EPOCHS ? "parallel_epochs" : "distributed_epoch";
}

StatusOr<proto::ProcessingMode> ParseProcessingMode(const std::string& name) {
  if (name == "parallel_epochs") return proto::PARALLEL_EPOCHS;
  if (name == "distributed_epoch") return proto::DISTRIBUTED_EPOCH;
  return InvalidArgumentError("--processing-mode must be parallel_epochs or distributed_epoch, got \"" + name + "\"");
}

const DatasetInfo* DispatcherState::dataset(const std::string& id) const {
  auto it = datasets_.find(id);
  return it == datasets_.end() ? nullptr : &it->second;
}

const JobInfo* DispatcherState::job(const std::string& name) const {
  auto it = jobs_.find(name);
  return it == jobs_.end() ? nullptr : &it->second;
}

bool DispatcherState::all_jobs_finished() const {
  if (jobs_.empty()) return false;
  for (const auto& [n, j] : jobs_)
    if (!j.finished()) return false;
  return true;
}

json DispatcherState::DatasetEvent(const DatasetInfo& d) {
  return json{{"type", "dataset"}, {"id", d.id}, {"def", Hex(d.def.SerializeAsString())}, {"file_bytes", d.file_bytes}};
}

Status DispatcherState::Apply(const json& e) {
  auto bad = [&e](const std::string& why) {
    return InvalidArgumentError("dispatcher event " + e.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200) + ": " + why);
  };
  try {
    const std::string type = e.at("type").get<std::string>();
    if (type == "dataset") {
      DatasetInfo d;
      d.id = e.at("id").get<std::string>();
      std::string bytes;
      if (!Unhex(e.at("def").get<std::string>(), &bytes) || !d.def.ParseFromString(bytes))
        return bad("the dataset definition does not decode");
      if (!e.at("file_bytes").is_array()) return bad("file_bytes must be an array");
      for (const json& b : e.at("file_bytes")) d.file_bytes.push_back(Int<int64_t>(b));
      datasets_[d.id] = std::move(d);
      return Status::OK();
    }
    const std::string name = e.at("job").get<std::string>();
    if (type == "job") {
      JobInfo j;
      j.name = name;
      j.dataset_id = e.at("dataset").get<std::string>();
      StatusOr<proto::ProcessingMode> mode = ParseProcessingMode(e.at("mode").get<std::string>());
      if (!mode.ok()) return bad(std::string(mode.status().message()));
      j.mode = *mode;
      j.num_splits = Int<int32_t>(e, "num_splits");
      j.epochs = Int<int64_t>(e, "epochs");
      if (j.num_splits < 1 || j.epochs < 1) return bad("num_splits and epochs must be >= 1");
      jobs_[name] = std::move(j);
      return Status::OK();
    }
    auto it = jobs_.find(name);
    if (it == jobs_.end()) return bad("unknown job");
    JobInfo& j = it->second;
    if (type == "epoch") {
      const int64_t epoch = Int<int64_t>(e, "epoch");
      const int32_t units = Int<int32_t>(e, "units");
      if (epoch < 0 || units < 1 || units > (1 << 16)) return bad("epoch or units out of range");
      j.epoch_units[epoch].units.assign(units, UnitInfo());
      return Status::OK();
    }
    if (type == "unit") {
      // Every field is read and checked before the state changes: a refused
      // event leaves the state as it was.
      auto ep = j.epoch_units.find(Int<int64_t>(e, "epoch"));
      const int32_t unit = Int<int32_t>(e, "unit");
      if (ep == j.epoch_units.end() || unit < 0 || unit >= static_cast<int32_t>(ep->second.units.size()))
        return bad("unknown epoch or unit");
      const std::string st = e.at("state").get<std::string>();
      if (st != "done" && st != "owned" && st != "pending") return bad("unknown unit state");
      UnitInfo next;
      next.state = st == "done" ? UnitState::kDone : st == "owned" ? UnitState::kOwned : UnitState::kPending;
      next.consumer = Int<int32_t>(e, "consumer");
      next.batches = Int<int64_t>(e, "batches");
      next.examples = Int<int64_t>(e, "examples");
      ep->second.units[unit] = next;
      return Status::OK();
    }
    if (type == "consumer") {
      const int32_t k = Int<int32_t>(e, "consumer");
      ConsumerInfo next;
      next.epoch = Int<int64_t>(e, "epoch");
      next.released = e.at("released").get<bool>();
      j.consumers[k] = next;
      return Status::OK();
    }
    return bad("unknown event type");
  } catch (const json::exception& ex) {
    return bad(ex.what());
  } catch (const BadMember& ex) {
    return bad(ex.what());
  }
}

StatusOr<std::vector<json>> DispatcherState::JoinEvents(const proto::JoinJobRequest& r) const {
  std::vector<json> events;
  if (r.job_name().empty() || r.job_name().size() > 256)
    return InvalidArgumentError("--job-name must hold 1 to 256 characters");
  if (r.consumer_index() < 0 || r.consumer_index() > 65535)
    return InvalidArgumentError("consumer_index must be in [0, 65535]");
  if (r.epochs() < 1) return InvalidArgumentError("epochs must be >= 1");
  if (dataset(r.dataset_id()) == nullptr) return NotFoundError("unknown dataset " + r.dataset_id());
  const proto::ProcessingMode mode =
      r.processing_mode() == proto::PARALLEL_EPOCHS ? proto::PARALLEL_EPOCHS : proto::DISTRIBUTED_EPOCH;
  const int32_t splits = mode == proto::PARALLEL_EPOCHS ? 1 : r.num_splits();
  if (splits < 1 || splits > (1 << 16)) return InvalidArgumentError("num_splits must be in [1, 65536]");
  const JobInfo* j = job(r.job_name());
  if (j == nullptr) {
    events.push_back(json{{"type", "job"},         {"job", r.job_name()},           {"dataset", r.dataset_id()},
                          {"mode", ProcessingModeName(mode)}, {"num_splits", splits}, {"epochs", r.epochs()}});
  } else {
    std::string diff;
    if (j->dataset_id != r.dataset_id()) diff = "dataset " + j->dataset_id + " (this trainer's is " + r.dataset_id() + ")";
    else if (j->mode != mode) diff = "processing mode " + ProcessingModeName(j->mode);
    else if (j->num_splits != splits) diff = std::to_string(j->num_splits) + " splits per epoch";
    if (!diff.empty())
      return FailedPreconditionError("job \"" + r.job_name() + "\" already exists with " + diff +
                                     ": give this run another --job-name, or the same data and options");
  }
  // The cursor: the checkpoint's epoch and the units it had completed.
  int64_t cursor_epoch = 0;
  std::set<int32_t> cursor_done;
  if (!r.cursor_json().empty()) {
    try {
      const json c = json::parse(r.cursor_json());
      cursor_epoch = Int<int64_t>(c, "epoch");
      if (!c.at("done").is_array()) return InvalidArgumentError("cursor: \"done\" must be an array of units");
      for (const json& u : c.at("done")) cursor_done.insert(Int<int32_t>(u));
    } catch (const json::exception& ex) {
      return InvalidArgumentError(std::string("cursor: ") + ex.what());
    } catch (const BadMember& ex) {
      return InvalidArgumentError(std::string("cursor: ") + ex.what());
    }
    if (cursor_epoch < 0) return InvalidArgumentError("cursor: epoch must be >= 0");
  }
  const int32_t k = r.consumer_index();
  if (j != nullptr) {
    for (const auto& [epoch, info] : j->epoch_units) {
      if (epoch < cursor_epoch) continue;
      for (int32_t u = 0; u < static_cast<int32_t>(info.units.size()); ++u) {
        const UnitInfo& ui = info.units[u];
        if (ui.state == UnitState::kPending || ui.consumer != k) continue;
        UnitInfo next = ui;
        if (epoch == cursor_epoch && cursor_done.count(u)) {
          if (ui.state == UnitState::kDone) continue;
          next.state = UnitState::kDone;  // acknowledged in the checkpoint; the ack itself was lost
        } else if (epoch == cursor_epoch) {
          if (ui.state == UnitState::kOwned) continue;
          next = UnitInfo{UnitState::kOwned, k, 0, 0};  // completed after the checkpoint: read again
        } else {
          next = UnitInfo();  // a later epoch: back to pending
        }
        events.push_back(UnitEvent(r.job_name(), epoch, u, next));
      }
    }
  }
  events.push_back(ConsumerEvent(r.job_name(), k, ConsumerInfo{false, cursor_epoch}));
  return events;
}

StatusOr<std::vector<json>> DispatcherState::NextUnitEvents(const std::string& name, int32_t consumer, int64_t epoch,
                                                            const std::set<int32_t>& active, int32_t live_workers,
                                                            int32_t* unit, bool* found) const {
  *found = false;
  const JobInfo* j = job(name);
  if (j == nullptr) return NotFoundError("unknown job " + name);
  if (!j->consumers.count(consumer)) return FailedPreconditionError("consumer " + std::to_string(consumer) + " has not joined job " + name);
  // A job's epochs are what its first trainer planned (status only): a resume may train more.
  if (epoch < 0 || epoch > (int64_t{1} << 40)) return InvalidArgumentError("epoch " + std::to_string(epoch) + " is out of range");
  std::vector<json> events;
  auto ep = j->epoch_units.find(epoch);
  EpochInfo fresh;
  const EpochInfo* info = nullptr;
  if (ep == j->epoch_units.end()) {
    int32_t units = j->num_splits;
    if (j->mode == proto::PARALLEL_EPOCHS) {
      if (live_workers < 1) return UnavailableError("no live worker to size the epoch");
      units = live_workers;
    }
    events.push_back(json{{"type", "epoch"}, {"job", name}, {"epoch", epoch}, {"units", units}});
    fresh.units.assign(units, UnitInfo());
    info = &fresh;
  } else {
    info = &ep->second;
  }
  const ConsumerInfo& c = j->consumers.at(consumer);
  if (c.epoch != epoch || c.released) events.push_back(ConsumerEvent(name, consumer, ConsumerInfo{false, epoch}));
  for (int32_t u = 0; u < static_cast<int32_t>(info->units.size()); ++u) {
    const UnitInfo& ui = info->units[u];
    if (ui.state == UnitState::kOwned && ui.consumer == consumer && !active.count(u)) {
      *unit = u, *found = true;
      return events;
    }
  }
  for (int32_t u = 0; u < static_cast<int32_t>(info->units.size()); ++u) {
    if (info->units[u].state == UnitState::kPending) {
      events.push_back(UnitEvent(name, epoch, u, UnitInfo{UnitState::kOwned, consumer, 0, 0}));
      *unit = u, *found = true;
      return events;
    }
  }
  return events;
}

StatusOr<std::vector<json>> DispatcherState::ReclaimEvents(const std::string& name, int32_t consumer, int64_t epoch,
                                                           int32_t unit) const {
  const JobInfo* j = job(name);
  if (j == nullptr) return NotFoundError("unknown job " + name);
  if (!j->consumers.count(consumer))
    return FailedPreconditionError("consumer " + std::to_string(consumer) + " has not joined job " + name);
  auto ep = j->epoch_units.find(epoch);
  if (ep == j->epoch_units.end() || unit < 0 || unit >= static_cast<int32_t>(ep->second.units.size()))
    return InvalidArgumentError("job " + name + " has no unit " + std::to_string(unit) + " in epoch " + std::to_string(epoch));
  const UnitInfo& u = ep->second.units[unit];
  if (u.state == UnitState::kOwned && u.consumer == consumer) return std::vector<json>{};
  if (u.state == UnitState::kPending)
    return std::vector<json>{UnitEvent(name, epoch, unit, UnitInfo{UnitState::kOwned, consumer, 0, 0})};
  return FailedPreconditionError("job " + name + " epoch " + std::to_string(epoch) + " unit " + std::to_string(unit) +
                                 (u.state == UnitState::kDone ? " is done" : " is owned by consumer " + std::to_string(u.consumer)));
}

StatusOr<std::vector<json>> DispatcherState::CompleteEvents(const proto::CompleteSplitRequest& r) const {
  const JobInfo* j = job(r.job_id());
  if (j == nullptr) return NotFoundError("unknown job " + r.job_id());
  CTRAIN_ASSIGN_OR_RETURN(int32_t unit, SplitUnit(*j, r.split()));
  auto ep = j->epoch_units.find(r.split().epoch());
  if (ep == j->epoch_units.end() || unit >= static_cast<int32_t>(ep->second.units.size()))
    return InvalidArgumentError("job " + r.job_id() + " has no unit " + std::to_string(unit) + " in epoch " +
                                std::to_string(r.split().epoch()));
  const UnitInfo& u = ep->second.units[unit];
  if (u.consumer != r.consumer_index() || u.state == UnitState::kPending)
    return FailedPreconditionError("consumer " + std::to_string(r.consumer_index()) + " does not own " +
                                   SplitDescription(*j, r.split().epoch(), unit));
  if (u.state == UnitState::kDone) return std::vector<json>{};  // a retried acknowledgement
  if (r.batches() < 0 || r.examples() < 0) return InvalidArgumentError("negative batch or example count");
  return std::vector<json>{UnitEvent(r.job_id(), r.split().epoch(), unit,
                                     UnitInfo{UnitState::kDone, r.consumer_index(), r.batches(), r.examples()})};
}

StatusOr<std::vector<json>> DispatcherState::ReleaseEvents(const std::string& name, int32_t consumer) const {
  const JobInfo* j = job(name);
  if (j == nullptr) return NotFoundError("unknown job " + name);
  auto it = j->consumers.find(consumer);
  if (it == j->consumers.end()) return FailedPreconditionError("consumer " + std::to_string(consumer) + " has not joined job " + name);
  if (it->second.released) return std::vector<json>{};
  return std::vector<json>{ConsumerEvent(name, consumer, ConsumerInfo{true, it->second.epoch})};
}

std::string SplitDescription(const JobInfo& job, int64_t epoch, int32_t unit) {
  return "job " + job.name + " " + (job.mode == proto::PARALLEL_EPOCHS ? "epoch " + std::to_string(epoch) + " copy " + std::to_string(unit)
                                                                        : "epoch " + std::to_string(epoch) + " split " + std::to_string(unit) + "/" + std::to_string(job.num_splits));
}

std::vector<json> DispatcherState::Snapshot() const {
  std::vector<json> out;
  for (const auto& [id, d] : datasets_) out.push_back(DatasetEvent(d));
  for (const auto& [name, j] : jobs_) {
    out.push_back(json{{"type", "job"},          {"job", name},
                       {"dataset", j.dataset_id}, {"mode", ProcessingModeName(j.mode)},
                       {"num_splits", j.num_splits}, {"epochs", j.epochs}});
    for (const auto& [epoch, info] : j.epoch_units) {
      out.push_back(json{{"type", "epoch"}, {"job", name}, {"epoch", epoch}, {"units", info.units.size()}});
      for (int32_t u = 0; u < static_cast<int32_t>(info.units.size()); ++u)
        if (info.units[u].state != UnitState::kPending) out.push_back(UnitEvent(name, epoch, u, info.units[u]));
    }
    for (const auto& [k, c] : j.consumers) out.push_back(ConsumerEvent(name, k, c));
  }
  return out;
}

}  // namespace ctrain::dataservice
