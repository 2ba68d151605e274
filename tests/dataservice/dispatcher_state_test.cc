// DispatcherState (dataservice/dispatcher_state.h): the event builders'
// semantics, replay of Snapshot() and Apply's handling of malformed events.
#include "ctrain/dataservice/dispatcher_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace ctrain::dataservice {
namespace {

using json = nlohmann::json;

// Applies every event of a builder's result; fails the test on an error.
void ApplyAll(DispatcherState* s, const StatusOr<std::vector<json>>& events) {
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  for (const json& e : *events) ASSERT_TRUE(s->Apply(e).ok()) << e.dump();
}

DatasetInfo MakeDataset(const std::string& id) {
  DatasetInfo d;
  d.id = id;
  d.def.add_files("/data/a.libsvm");
  d.def.set_format("libsvm");
  d.def.set_batch_size(4);
  d.file_bytes = {123};
  return d;
}

proto::JoinJobRequest Join(const std::string& job, int32_t consumer, int32_t splits = 4, int64_t epochs = 2,
                           proto::ProcessingMode mode = proto::DISTRIBUTED_EPOCH, const std::string& dataset = "ds1") {
  proto::JoinJobRequest r;
  r.set_job_name(job);
  r.set_dataset_id(dataset);
  r.set_processing_mode(mode);
  r.set_num_splits(splits);
  r.set_epochs(epochs);
  r.set_consumer_index(consumer);
  return r;
}

class DispatcherStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(s_.Apply(DispatcherState::DatasetEvent(MakeDataset("ds1"))).ok());
    ASSERT_TRUE(s_.Apply(DispatcherState::DatasetEvent(MakeDataset("ds2"))).ok());
  }
  // Next unit for `consumer` in `epoch` (applied); -1 when none is left.
  int32_t Next(const std::string& job, int32_t consumer, int64_t epoch, int32_t live = 2,
               const std::set<int32_t>& active = {}) {
    int32_t unit = -1;
    bool found = false;
    auto ev = s_.NextUnitEvents(job, consumer, epoch, active, live, &unit, &found);
    EXPECT_TRUE(ev.ok()) << ev.status().ToString();
    if (!ev.ok()) return -2;
    for (const json& e : *ev) EXPECT_TRUE(s_.Apply(e).ok()) << e.dump();
    return found ? unit : -1;
  }
  void Complete(const std::string& job, int32_t consumer, int64_t epoch, int32_t unit, int64_t batches = 3) {
    proto::CompleteSplitRequest r;
    r.set_job_id(job);
    r.set_consumer_index(consumer);
    *r.mutable_split() = UnitSplit(*s_.job(job), epoch, unit);
    r.set_batches(batches);
    r.set_examples(batches * 4);
    ApplyAll(&s_, s_.CompleteEvents(r));
  }
  UnitState State(const std::string& job, int64_t epoch, int32_t unit) const {
    return s_.job(job)->epoch_units.at(epoch).units.at(unit).state;
  }
  int32_t Owner(const std::string& job, int64_t epoch, int32_t unit) const {
    return s_.job(job)->epoch_units.at(epoch).units.at(unit).consumer;
  }
  DispatcherState s_;
};

TEST_F(DispatcherStateTest, DistributedUnitsGoOutInOrderEachOnceAcrossTwoConsumers) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 5)));
  ApplyAll(&s_, s_.JoinEvents(Join("j", 1, 5)));
  std::vector<int32_t> order;
  std::multiset<int32_t> seen;
  for (int round = 0; round < 3; ++round) {
    for (int32_t k : {0, 1}) {
      const int32_t u = Next("j", k, 0);
      if (u < 0) continue;
      order.push_back(u);
      seen.insert(u);
      EXPECT_EQ(Owner("j", 0, u), k);
      EXPECT_EQ(State("j", 0, u), UnitState::kOwned);
      Complete("j", k, 0, u);
      EXPECT_EQ(State("j", 0, u), UnitState::kDone);
    }
  }
  EXPECT_EQ(order, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(seen, (std::multiset<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Next("j", 0, 0), -1);
  EXPECT_EQ(Next("j", 1, 0), -1);
  EXPECT_EQ(s_.job("j")->epoch_units.at(0).done(), 5);
}

TEST_F(DispatcherStateTest, OwnedUnitNotStreamingIsHandedBackFirst) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 3)));
  EXPECT_EQ(Next("j", 0, 0), 0);
  // Unit 0 is active (being streamed): the next is a pending one.
  EXPECT_EQ(Next("j", 0, 0, 2, {0}), 1);
  // Unit 1 not active any more (its worker died): it comes back before unit 2.
  EXPECT_EQ(Next("j", 0, 0, 2, {0}), 1);
}

TEST_F(DispatcherStateTest, ParallelEpochsSizedByLiveWorkers) {
  ApplyAll(&s_, s_.JoinEvents(Join("p", 0, 1, 1, proto::PARALLEL_EPOCHS)));
  int32_t unit = -1;
  bool found = true;
  auto none = s_.NextUnitEvents("p", 0, 0, {}, 0, &unit, &found);
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(found);
  EXPECT_EQ(s_.job("p")->epoch_units.count(0), 0u);
  EXPECT_EQ(Next("p", 0, 0, /*live=*/3), 0);
  EXPECT_EQ(s_.job("p")->epoch_units.at(0).units.size(), 3u);
  EXPECT_EQ(Next("p", 0, 0, 1, {0}), 1);
  EXPECT_EQ(Next("p", 0, 0, 1, {0, 1}), 2);
  EXPECT_EQ(Next("p", 0, 0, 1, {0, 1, 2}), -1);
  const proto::SplitId split = UnitSplit(*s_.job("p"), 0, 2);
  EXPECT_EQ(split.copy(), 2);
  EXPECT_EQ(split.num_splits(), 1);
  EXPECT_EQ(split.split_index(), 0);
  EXPECT_EQ(*SplitUnit(*s_.job("p"), split), 2);
}

TEST_F(DispatcherStateTest, EpochPastThePlanAndUnknownJobOrConsumer) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 2, 2)));
  int32_t unit;
  bool found;
  // The job's epochs are its first trainer's plan: a resumed run with --epochs 3 reads a third one.
  auto third = s_.NextUnitEvents("j", 0, 2, {}, 1, &unit, &found);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_TRUE(found);
  EXPECT_EQ(unit, 0);
  EXPECT_EQ(s_.NextUnitEvents("j", 0, -1, {}, 1, &unit, &found).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s_.NextUnitEvents("nope", 0, 0, {}, 1, &unit, &found).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s_.NextUnitEvents("j", 7, 0, {}, 1, &unit, &found).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s_.ReleaseEvents("nope", 0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s_.ReleaseEvents("j", 7).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(DispatcherStateTest, RejoinWithOtherOptionsIsFailedPreconditionNamingThem) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 4, 2)));
  struct Case {
    proto::JoinJobRequest r;
    std::string names;
  };
  const std::vector<Case> cases = {
      {Join("j", 1, 4, 2, proto::DISTRIBUTED_EPOCH, "ds2"), "dataset ds1"},
      {Join("j", 1, 1, 2, proto::PARALLEL_EPOCHS), "processing mode distributed_epoch"},
      {Join("j", 1, 3, 2), "4 splits per epoch"},
  };
  for (const Case& c : cases) {
    auto ev = s_.JoinEvents(c.r);
    ASSERT_EQ(ev.status().code(), StatusCode::kFailedPrecondition) << c.names;
    EXPECT_NE(std::string(ev.status().message()).find(c.names), std::string::npos) << ev.status().message();
    EXPECT_NE(std::string(ev.status().message()).find("\"j\""), std::string::npos) << ev.status().message();
  }
  EXPECT_TRUE(s_.JoinEvents(Join("j", 1, 4, 2)).ok());
  EXPECT_TRUE(s_.JoinEvents(Join("j", 1, 4, 5)).ok());  // more epochs than planned: a resume that trains longer
}

TEST_F(DispatcherStateTest, JoinRejectsBadRequests) {
  EXPECT_EQ(s_.JoinEvents(Join("", 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s_.JoinEvents(Join("j", -1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s_.JoinEvents(Join("j", 0, 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s_.JoinEvents(Join("j", 0, 4, 0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s_.JoinEvents(Join("j", 0, 4, 1, proto::DISTRIBUTED_EPOCH, "nope")).status().code(),
            StatusCode::kNotFound);
  proto::JoinJobRequest r = Join("j", 0);
  for (const char* cursor : {"{", "{\"epoch\": 0}", "{\"epoch\": \"x\", \"done\": []}", "{\"epoch\": -1, \"done\": []}",
                             "{\"epoch\": 0, \"done\": [\"a\"]}", "[]",
                             "{\"epoch\": 0, \"done\": [1e300]}", "{\"epoch\": 0, \"done\": 3}"}) {
    r.set_cursor_json(cursor);
    EXPECT_EQ(s_.JoinEvents(r).status().code(), StatusCode::kInvalidArgument) << cursor;
  }
}

TEST_F(DispatcherStateTest, CursorRulesOnRejoin) {
  // Consumers 0 and 1 share a 6-split job; epoch 0.
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 6, 3)));
  ApplyAll(&s_, s_.JoinEvents(Join("j", 1, 6, 3)));
  EXPECT_EQ(Next("j", 0, 0), 0);
  Complete("j", 0, 0, 0);  // in the checkpoint
  EXPECT_EQ(Next("j", 0, 0), 1);
  Complete("j", 0, 0, 1);  // after the checkpoint
  EXPECT_EQ(Next("j", 1, 0), 2);
  Complete("j", 1, 0, 2);  // another consumer's
  EXPECT_EQ(Next("j", 0, 0, 2, {}), 3);  // owned, in flight at the crash
  EXPECT_EQ(Next("j", 0, 0, 2, {3}), 4);
  // Unit 4 completed, and acknowledged in the checkpoint, but the ack was lost:
  // it is still owned. Consumer 0 also got a unit of epoch 1.
  EXPECT_EQ(Next("j", 0, 1), 0);
  EXPECT_EQ(State("j", 1, 0), UnitState::kOwned);

  proto::JoinJobRequest r = Join("j", 0, 6, 3);
  r.set_cursor_json(R"({"epoch": 0, "done": [0, 4]})");
  ApplyAll(&s_, s_.JoinEvents(r));
  EXPECT_EQ(State("j", 0, 0), UnitState::kDone);  // done in the cursor: stays done
  EXPECT_EQ(State("j", 0, 1), UnitState::kOwned);  // completed after the checkpoint: back to consumer 0
  EXPECT_EQ(Owner("j", 0, 1), 0);
  EXPECT_EQ(s_.job("j")->epoch_units.at(0).units[1].batches, 0);
  EXPECT_EQ(State("j", 0, 2), UnitState::kDone);  // consumer 1's: stays done
  EXPECT_EQ(Owner("j", 0, 2), 1);
  EXPECT_EQ(State("j", 0, 3), UnitState::kOwned);  // still consumer 0's
  EXPECT_EQ(Owner("j", 0, 3), 0);
  EXPECT_EQ(State("j", 0, 4), UnitState::kDone);  // the lost ack is taken from the cursor
  EXPECT_EQ(Owner("j", 0, 4), 0);
  EXPECT_EQ(State("j", 0, 5), UnitState::kPending);
  EXPECT_EQ(State("j", 1, 0), UnitState::kPending);  // a later epoch: back to pending
  EXPECT_EQ(s_.job("j")->consumers.at(0).epoch, 0);
  // Consumer 0 now re-reads its units 1 and 3 before any pending one.
  EXPECT_EQ(Next("j", 0, 0), 1);
  EXPECT_EQ(Next("j", 0, 0, 2, {1}), 3);
  EXPECT_EQ(Next("j", 0, 0, 2, {1, 3}), 5);
}

TEST_F(DispatcherStateTest, CompleteIsIdempotentAndChecksOwnership) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 2, 1)));
  ApplyAll(&s_, s_.JoinEvents(Join("j", 1, 2, 1)));
  EXPECT_EQ(Next("j", 0, 0), 0);
  proto::CompleteSplitRequest r;
  r.set_job_id("j");
  r.set_consumer_index(0);
  *r.mutable_split() = UnitSplit(*s_.job("j"), 0, 0);
  r.set_batches(7);
  r.set_examples(25);
  ApplyAll(&s_, s_.CompleteEvents(r));
  auto again = s_.CompleteEvents(r);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(s_.job("j")->epoch_units.at(0).units[0].batches, 7);
  EXPECT_EQ(s_.job("j")->epoch_units.at(0).units[0].examples, 25);
  // Consumer 1 does not own it; unit 1 is pending: nobody owns it.
  r.set_consumer_index(1);
  EXPECT_EQ(s_.CompleteEvents(r).status().code(), StatusCode::kFailedPrecondition);
  *r.mutable_split() = UnitSplit(*s_.job("j"), 0, 1);
  EXPECT_EQ(s_.CompleteEvents(r).status().code(), StatusCode::kFailedPrecondition);
  // Splits that are not the job's, unknown epoch, unknown job.
  r.mutable_split()->set_num_splits(3);
  EXPECT_EQ(s_.CompleteEvents(r).status().code(), StatusCode::kInvalidArgument);
  *r.mutable_split() = UnitSplit(*s_.job("j"), 5, 0);
  EXPECT_EQ(s_.CompleteEvents(r).status().code(), StatusCode::kInvalidArgument);
  r.set_job_id("nope");
  EXPECT_EQ(s_.CompleteEvents(r).status().code(), StatusCode::kNotFound);
}

TEST_F(DispatcherStateTest, ReclaimAndRelease) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 3, 1)));
  ApplyAll(&s_, s_.JoinEvents(Join("j", 1, 3, 1)));
  EXPECT_EQ(Next("j", 0, 0), 0);
  auto mine = s_.ReclaimEvents("j", 0, 0, 0);
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE(mine->empty());
  EXPECT_EQ(s_.ReclaimEvents("j", 1, 0, 0).status().code(), StatusCode::kFailedPrecondition);
  ApplyAll(&s_, s_.ReclaimEvents("j", 1, 0, 2));  // pending: becomes consumer 1's
  EXPECT_EQ(Owner("j", 0, 2), 1);
  Complete("j", 0, 0, 0);
  EXPECT_EQ(s_.ReclaimEvents("j", 0, 0, 0).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s_.ReclaimEvents("j", 0, 0, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s_.ReclaimEvents("j", 0, 4, 0).status().code(), StatusCode::kInvalidArgument);
  // A consumer that never joined cannot take a pending unit.
  EXPECT_EQ(s_.ReclaimEvents("j", 5, 0, 1).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(State("j", 0, 1), UnitState::kPending);

  EXPECT_FALSE(s_.all_jobs_finished());
  ApplyAll(&s_, s_.ReleaseEvents("j", 0));
  EXPECT_TRUE(s_.ReleaseEvents("j", 0)->empty());
  EXPECT_FALSE(s_.job("j")->finished());
  ApplyAll(&s_, s_.ReleaseEvents("j", 1));
  EXPECT_TRUE(s_.job("j")->finished());
  EXPECT_TRUE(s_.all_jobs_finished());
}

TEST_F(DispatcherStateTest, SnapshotReplaysToAnEqualState) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 4, 2)));
  ApplyAll(&s_, s_.JoinEvents(Join("j", 1, 4, 2)));
  ApplyAll(&s_, s_.JoinEvents(Join("p", 0, 1, 1, proto::PARALLEL_EPOCHS, "ds2")));
  EXPECT_EQ(Next("j", 0, 0), 0);
  Complete("j", 0, 0, 0, 9);
  EXPECT_EQ(Next("j", 1, 0), 1);
  EXPECT_EQ(Next("j", 0, 1), 0);
  EXPECT_EQ(Next("p", 0, 0, 3), 0);
  ApplyAll(&s_, s_.ReleaseEvents("p", 0));

  const std::vector<json> snap = s_.Snapshot();
  DispatcherState fresh;
  for (const json& e : snap) ASSERT_TRUE(fresh.Apply(e).ok()) << e.dump();
  EXPECT_EQ(fresh.Snapshot(), snap);
  // And through text, as the journal stores it.
  DispatcherState text;
  for (const json& e : snap) ASSERT_TRUE(text.Apply(json::parse(e.dump())).ok());
  EXPECT_EQ(text.Snapshot(), snap);
  ASSERT_NE(fresh.dataset("ds1"), nullptr);
  EXPECT_EQ(fresh.dataset("ds1")->def.files(0), "/data/a.libsvm");
  EXPECT_EQ(fresh.dataset("ds1")->file_bytes, std::vector<int64_t>{123});
  EXPECT_EQ(fresh.job("j")->epoch_units.at(0).units[0].batches, 9);
  EXPECT_TRUE(fresh.job("p")->finished());
}

TEST_F(DispatcherStateTest, MalformedEventsAreInvalidArgument) {
  ApplyAll(&s_, s_.JoinEvents(Join("j", 0, 2, 1)));
  EXPECT_EQ(Next("j", 0, 0), 0);
  const std::vector<json> snap = s_.Snapshot();
  const std::vector<std::string> bad = {
      R"({})",
      R"([])",
      R"(3)",
      R"({"type": 5})",
      R"({"type": "nonsense", "job": "j"})",
      R"({"type": "dataset"})",
      R"({"type": "dataset", "id": "x", "def": "zz", "file_bytes": []})",
      R"({"type": "dataset", "id": "x", "def": "0", "file_bytes": []})",
      R"({"type": "dataset", "id": "x", "def": "", "file_bytes": "no"})",
      R"({"type": "job", "job": "k"})",
      R"({"type": "job", "job": "k", "dataset": "ds1", "mode": "both", "num_splits": 1, "epochs": 1})",
      R"({"type": "job", "job": "k", "dataset": "ds1", "mode": "parallel_epochs", "num_splits": 0, "epochs": 1})",
      R"({"type": "job", "job": "k", "dataset": 1, "mode": "parallel_epochs", "num_splits": 1, "epochs": 1})",
      R"({"type": "epoch", "job": "nope", "epoch": 0, "units": 1})",
      R"({"type": "epoch", "job": "j", "epoch": -1, "units": 1})",
      R"({"type": "epoch", "job": "j", "epoch": 1, "units": 0})",
      R"({"type": "epoch", "job": "j", "epoch": 1, "units": 100000000})",
      R"({"type": "epoch", "job": "j", "epoch": 1})",
      R"({"type": "epoch", "job": "j", "epoch": 1, "units": 1e300})",
      R"({"type": "epoch", "job": "j", "epoch": 1.5, "units": 1})",
      R"({"type": "epoch", "job": "j", "epoch": 1, "units": 4294967297})",
      R"({"type": "dataset", "id": "x", "def": "", "file_bytes": {"a": 1}})",
      R"({"type": "consumer", "job": "j", "consumer": 1e300, "epoch": 0, "released": true})",
      R"({"type": "unit", "job": "j", "epoch": 0, "unit": 2, "state": "done", "consumer": 0, "batches": 1, "examples": 1})",
      R"({"type": "unit", "job": "j", "epoch": 0, "unit": -1, "state": "done", "consumer": 0, "batches": 1, "examples": 1})",
      R"({"type": "unit", "job": "j", "epoch": 9, "unit": 0, "state": "done", "consumer": 0, "batches": 1, "examples": 1})",
      R"({"type": "unit", "job": "j", "epoch": 0, "unit": 1, "state": "lost", "consumer": 0, "batches": 1, "examples": 1})",
      R"({"type": "unit", "job": "j", "epoch": 0, "unit": 1, "state": "done"})",
      R"({"type": "unit", "job": "j", "epoch": 0, "unit": 1, "state": "done", "consumer": "0", "batches": 1, "examples": 1})",
      R"({"type": "consumer", "job": "j", "consumer": 0, "epoch": 0, "released": "yes"})",
      R"({"type": "consumer", "job": "j", "consumer": 3})",
  };
  for (const std::string& text : bad) {
    Status st = s_.Apply(json::parse(text));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(std::string(st.message()).find("dispatcher event"), std::string::npos) << st.message();
    // A refused event leaves the state as it was.
    EXPECT_EQ(s_.Snapshot(), snap) << text;
  }
}

TEST(DispatcherStateNames, ProcessingModes) {
  EXPECT_EQ(*ParseProcessingMode("parallel_epochs"), proto::PARALLEL_EPOCHS);
  EXPECT_EQ(*ParseProcessingMode("distributed_epoch"), proto::DISTRIBUTED_EPOCH);
  EXPECT_EQ(ParseProcessingMode("dynamic").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ProcessingModeName(proto::PARALLEL_EPOCHS), "parallel_epochs");
}

}  // namespace
}  // namespace ctrain::dataservice
