// The Trainer's distributed seam (train/gradient_exchange.h) without MPI:
// N trainers in N threads of this process joined by an in-memory exchange
// (every collective: deposit, rendezvous, combine in rank order). Checks what
// the trainer does with the collectives — weighted averaging, the merge of
// sparse rows, the has-data vote, the stop vote, the initial broadcast —
// independently of Open MPI (tests/dist/ runs the real mpirun).
#include "ctrain/train/gradient_exchange.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <csignal>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "ctrain/train/trainer.h"
#include "testing/temp_dir.h"

namespace ctrain::train {
namespace {

// Shared state of N LoopbackExchanges.
struct Hub {
  explicit Hub(int n) : n(n), bar(n), in(n), in_rows(n), in_ids(n), widths(n) {}
  int n;
  std::barrier<> bar;
  std::vector<std::vector<unsigned char>> in;        // each rank's deposit (bytes)
  std::vector<std::vector<float>> in_rows;
  std::vector<std::vector<int64_t>> in_ids;
  std::vector<int32_t> widths;
};

class LoopbackExchange final : public GradientExchange {
 public:
  LoopbackExchange(Hub* hub, int rank) : hub_(hub), rank_(rank) {}
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return hub_->n; }
  std::string RankName(int32_t r) const override { return "rank " + std::to_string(r); }
  int64_t check_replicas_every() const override { return 1; }

  Status AgreeStep(bool has_data, int stop_signal, bool* all, int* sig) override {
    const int64_t mine[2] = {has_data ? 0 : 1, stop_signal};
    Deposit(mine, sizeof mine);
    int64_t mx[2] = {0, 0};
    for (int r = 0; r < hub_->n; ++r)
      for (int k = 0; k < 2; ++k) mx[k] = std::max(mx[k], reinterpret_cast<const int64_t*>(hub_->in[r].data())[k]);
    hub_->bar.arrive_and_wait();
    *all = mx[0] == 0;
    *sig = static_cast<int>(mx[1]);
    return Status::OK();
  }
  Status AllreduceSum(std::span<float> data, std::string_view) override {
    Deposit(data.data(), data.size_bytes());
    std::vector<float> sum(data.size(), 0.0f);
    for (int r = 0; r < hub_->n; ++r) {
      const float* x = reinterpret_cast<const float*>(hub_->in[r].data());
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
    }
    hub_->bar.arrive_and_wait();
    std::memcpy(data.data(), sum.data(), data.size_bytes());
    return Status::OK();
  }
  Status AllgatherRows(std::span<const int64_t> ids, std::span<const float> rows, int32_t width,
                       std::vector<int64_t>* all_ids, std::vector<float>* all_rows, std::vector<int64_t>* counts,
                       std::string_view) override {
    hub_->in_ids[rank_].assign(ids.begin(), ids.end());
    hub_->in_rows[rank_].assign(rows.begin(), rows.end());
    hub_->bar.arrive_and_wait();
    all_ids->clear();
    all_rows->clear();
    counts->clear();
    for (int r = 0; r < hub_->n; ++r) {
      all_ids->insert(all_ids->end(), hub_->in_ids[r].begin(), hub_->in_ids[r].end());
      all_rows->insert(all_rows->end(), hub_->in_rows[r].begin(), hub_->in_rows[r].end());
      counts->push_back(static_cast<int64_t>(hub_->in_ids[r].size()));
    }
    hub_->bar.arrive_and_wait();
    return Status::OK();
  }
  Status Broadcast(std::span<std::byte> data, std::string_view) override {
    Deposit(data.data(), data.size_bytes());
    std::vector<unsigned char> root = hub_->in[0];
    hub_->bar.arrive_and_wait();
    std::memcpy(data.data(), root.data(), data.size_bytes());
    return Status::OK();
  }
  Status AllgatherU64(uint64_t mine, std::vector<uint64_t>* all, std::string_view) override {
    Deposit(&mine, sizeof mine);
    all->clear();
    for (int r = 0; r < hub_->n; ++r) all->push_back(*reinterpret_cast<const uint64_t*>(hub_->in[r].data()));
    hub_->bar.arrive_and_wait();
    ++hash_checks;
    return Status::OK();
  }
  Status AllgatherStrings(const std::string& mine, std::vector<std::string>* all, std::string_view) override {
    Deposit(mine.data(), mine.size());
    all->clear();
    for (int r = 0; r < hub_->n; ++r) all->emplace_back(hub_->in[r].begin(), hub_->in[r].end());
    hub_->bar.arrive_and_wait();
    return Status::OK();
  }
  int64_t hash_checks = 0;

 private:
  // Publishes this rank's bytes and waits until every rank did.
  void Deposit(const void* p, size_t n) {
    hub_->in[rank_].assign(static_cast<const unsigned char*>(p), static_cast<const unsigned char*>(p) + n);
    hub_->bar.arrive_and_wait();
  }
  Hub* hub_;
  int rank_;
};

TrainOptions Small(int64_t batch) {
  TrainOptions o;
  o.model.feature_size = 2000;
  o.model.field_size = 39;
  o.model.embedding_size = 4;
  o.model.deep_layers = {16, 16};
  o.model.dropout = 0.0f;
  o.optimizer.name = "sgd";
  o.optimizer.learning_rate = 0.05f;
  o.batch_size = batch;
  o.epochs = 2;
  o.shuffle = false;
  o.seed = 7;
  o.parallel.intra_op_threads = 1;
  o.progress = ProgressMode::kNone;
  return o;
}

const Dataset& All() {
  static const Dataset* d = new Dataset(*MakeSynthDataset(11, 0, 640, 2000));
  return *d;
}

// Rows [begin, end) of All() with index % n == r.
Dataset Shard(int n, int r, int64_t begin = 0, int64_t end = -1) {
  const Dataset& a = All();
  Dataset out(a.field_size());
  for (int64_t i = begin; i < (end < 0 ? a.size() : end); ++i)
    if (i % n == r) out.Append(a.labels()[i], a.ids() + i * 39, a.values() + i * 39);
  return out;
}

struct RankRun {
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<LoopbackExchange> exchange;
  TrainResult result;
  Status status;
};

// Trains shards[r] on rank r of a loopback job with options[r]; stop[r] (may be null) is rank r's stop flag.
std::vector<RankRun> RunJobWith(const std::vector<Dataset>& shards, const std::vector<TrainOptions>& options,
                                const std::vector<const std::atomic<int>*>& stop = {}, bool restore = false) {
  const int n = static_cast<int>(shards.size());
  Hub hub(n);
  std::vector<RankRun> runs(n);
  for (int r = 0; r < n; ++r) {
    StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(options[r]);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    runs[r].trainer = std::move(*t);
    if (restore && !options[r].model_dir.empty()) {  // as the CLI: rank 0 alone has the model dir
      bool restored = false;
      EXPECT_TRUE(runs[r].trainer->Restore(&restored).ok());
      EXPECT_TRUE(restored);
    }
    runs[r].exchange = std::make_unique<LoopbackExchange>(&hub, r);
    runs[r].trainer->set_gradient_exchange(runs[r].exchange.get());
    if (r < static_cast<int>(stop.size())) runs[r].trainer->set_stop_flag(stop[r]);
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { runs[r].status = runs[r].trainer->Train(shards[r], nullptr, &runs[r].result); });
  for (auto& t : threads) t.join();
  return runs;
}

// The same options on every rank.
std::vector<RankRun> RunJob(const std::vector<Dataset>& shards, const TrainOptions& o,
                            const std::vector<const std::atomic<int>*>& stop = {}) {
  return RunJobWith(shards, std::vector<TrainOptions>(shards.size(), o), stop);
}

// shared/cases/B42: ranks whose parameters differ in shape stop before the initial
// broadcast, every rank with the same error naming the parameter and each rank's shape.
TEST(GradientExchange, RanksWithParametersOfAnotherShapeStopBeforeAnyStepNamingTheParameter) {
  TrainOptions other = Small(32);
  other.model.deep_layers = {16, 17};
  std::vector<RankRun> runs = RunJobWith({Shard(2, 0), Shard(2, 1)}, {Small(32), other});
  for (auto& run : runs) {
    EXPECT_EQ(run.status.code(), StatusCode::kFailedPrecondition) << run.status.ToString();
    EXPECT_NE(run.status.message().find("the shapes of the parameters differ between the ranks, so no step ran"),
              std::string::npos)
        << run.status.ToString();
    EXPECT_NE(run.status.message().find(",16] (rank 0), ["), std::string::npos) << run.status.ToString();
    EXPECT_NE(run.status.message().find(",17] (rank 1)"), std::string::npos) << run.status.ToString();
    EXPECT_EQ(run.result.steps, 0);
    EXPECT_EQ(run.exchange->hash_checks, 0);  // no step: no replica check either
  }
  EXPECT_EQ(runs[0].status.message(), runs[1].status.message());
}

std::vector<float> Predictions(Trainer& t) {
  std::vector<float> p;
  EXPECT_TRUE(t.Predict(All(), &p).ok());
  return p;
}

TEST(GradientExchange, TwoRanksOfBatchBEqualOneTrainerOfBatch2B) {
  StatusOr<std::unique_ptr<Trainer>> one = Trainer::Create(Small(64));
  ASSERT_TRUE(one.ok());
  TrainResult r1;
  ASSERT_TRUE((*one)->Train(All(), nullptr, &r1).ok());
  std::vector<RankRun> two = RunJob({Shard(2, 0), Shard(2, 1)}, Small(32));
  for (auto& run : two) {
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    EXPECT_EQ(run.result.steps, r1.steps);        // 2 epochs x 640 / 64
    EXPECT_EQ(run.result.examples, r1.examples);  // counted over both ranks
    EXPECT_NEAR(run.result.last_loss, r1.last_loss, 1e-5);
    EXPECT_EQ(run.trainer->examples_left_over(), 0);
    EXPECT_EQ(run.exchange->hash_checks, r1.steps);  // check_replicas_every() == 1: every step, all equal
  }
  const std::vector<float> p1 = Predictions(**one), p2 = Predictions(*two[0].trainer);
  ASSERT_EQ(p1.size(), p2.size());
  double worst = 0;
  for (size_t i = 0; i < p1.size(); ++i) worst = std::max(worst, std::fabs(double{p1[i]} - p2[i]));
  EXPECT_LE(worst, 1e-5);
  EXPECT_GT(worst, 0.0);  // the sums run in another order: close, not identical
  EXPECT_EQ(Predictions(*two[0].trainer), Predictions(*two[1].trainer));  // the replicas are identical
}

TEST(GradientExchange, UnevenShardsStopTogetherAndCountTheLeftOver) {
  // Rank 0: 300 rows (5 batches of 64), rank 1: 200 rows (4 batches).
  std::vector<RankRun> runs = RunJob({Shard(1, 0, 0, 300), Shard(1, 0, 300, 500)}, Small(64));
  for (auto& run : runs) {
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    EXPECT_EQ(run.result.steps, 8);                   // 4 per epoch on both ranks
    EXPECT_EQ(run.result.examples, 2 * (256 + 200));  // both ranks' examples
  }
  EXPECT_EQ(runs[0].trainer->examples_left_over(), 2 * 44);  // 300 - 4 x 64 per epoch
  EXPECT_EQ(runs[1].trainer->examples_left_over(), 0);
}

TEST(GradientExchange, StopRequestOnOneRankStopsEveryRankAtTheSameStep) {
  std::atomic<int> none{0}, term{SIGTERM};
  std::vector<RankRun> runs = RunJob({Shard(2, 0), Shard(2, 1)}, Small(32), {&none, &term});
  for (auto& run : runs) {
    EXPECT_EQ(run.status.code(), StatusCode::kCancelled) << run.status.ToString();
    EXPECT_NE(run.status.ToString().find("interrupted by SIGTERM at step 0"), std::string::npos)
        << run.status.ToString();
  }
  EXPECT_EQ(runs[0].trainer->global_step(), 0);
  EXPECT_EQ(runs[1].trainer->global_step(), 0);
}

TEST(GradientExchange, RankZeroStateIsBroadcastAtTheStart) {
  // Rank 1 is created with another seed: after the broadcast both train from rank 0's initial values.
  Hub hub(2);
  TrainOptions o0 = Small(32), o1 = Small(32);
  o1.seed = 99;
  o0.max_steps = o1.max_steps = 1;
  StatusOr<std::unique_ptr<Trainer>> c0 = Trainer::Create(o0), c1 = Trainer::Create(o1);
  ASSERT_TRUE(c0.ok() && c1.ok());
  std::unique_ptr<Trainer> t0 = std::move(*c0), t1 = std::move(*c1);
  LoopbackExchange x0(&hub, 0), x1(&hub, 1);
  t0->set_gradient_exchange(&x0);
  t1->set_gradient_exchange(&x1);
  Dataset s0 = Shard(2, 0), s1 = Shard(2, 1);
  TrainResult r0, r1;
  Status st0, st1;
  std::thread a([&] { st0 = t0->Train(s0, nullptr, &r0); });
  std::thread b([&] { st1 = t1->Train(s1, nullptr, &r1); });
  a.join();
  b.join();
  ASSERT_TRUE(st0.ok()) << st0.ToString();
  ASSERT_TRUE(st1.ok()) << st1.ToString();
  EXPECT_EQ(Predictions(*t0), Predictions(*t1));
}

// Keyed tables under mpirun (docs/distributed.md#keyed-tables): all fields keyed, a live-row bound and
// steps-to-live that evict at every other step, so admission, eviction and row reuse all happen.
TrainOptions Keyed(int64_t batch, int32_t min_count) {
  TrainOptions o = Small(batch);
  o.table.embedding_table = "keyed";
  o.table.min_count = min_count;
  o.table.max_rows = 1000;  // between evictions up to 2000 rows: every key of the data fits, none refused
  o.table.steps_to_live = 3;
  o.save_checkpoints_steps = 2;  // eviction points (without a model dir nothing is written)
  o.model.embedding_initializer = "normal:0.01";
  return o;
}

// Each rank's keys are translated in one batch of every rank's keys, so a 2-rank job (with or without towers)
// admits, evicts and learns what one trainer of the combined batch does.
TEST(GradientExchange, TwoKeyedRanksOfBatchBEqualOneKeyedTrainerOfBatch2B) {
  for (const auto& [min_count, towers] : std::vector<std::pair<int32_t, int32_t>>{{1, 1}, {2, 1}, {1, 2}}) {
    SCOPED_TRACE("min_count " + std::to_string(min_count) + ", towers " + std::to_string(towers));
    StatusOr<std::unique_ptr<Trainer>> one = Trainer::Create(Keyed(64, min_count));
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    TrainResult r1;
    ASSERT_TRUE((*one)->Train(All(), nullptr, &r1).ok());
    ASSERT_GT(r1.keyed_table.evicted_steps + r1.keyed_table.evicted_lru, 0);
    if (min_count > 1) {
      ASSERT_GT(r1.keyed_table.filtered, 0);
    }
    // Rows of rank 0's shard then rank 1's per step: for min_count 2 the sighting that admits a key can be
    // another example's than in one trainer's batch, so the counts agree exactly but the models differ a little.
    TrainOptions o = Keyed(32, min_count);
    o.parallel.towers = towers;  // each rank's towers' keys, in tower order
    std::vector<RankRun> two = RunJob({Shard(2, 0), Shard(2, 1)}, o);
    for (auto& run : two) {
      ASSERT_TRUE(run.status.ok()) << run.status.ToString();
      EXPECT_EQ(run.result.steps, r1.steps);
      EXPECT_EQ(run.result.keyed_table.ToJson(), r1.keyed_table.ToJson());
      EXPECT_EQ(run.exchange->hash_checks, r1.steps);  // every step: same index, rows and slots on both ranks
      if (min_count == 1) {
        EXPECT_NEAR(run.result.last_loss, r1.last_loss, 1e-5);
      }
    }
    EXPECT_EQ(Predictions(*two[0].trainer), Predictions(*two[1].trainer));
    if (min_count == 1) {
      const std::vector<float> p1 = Predictions(**one), p2 = Predictions(*two[0].trainer);
      ASSERT_EQ(p1.size(), p2.size());
      double worst = 0;
      for (size_t i = 0; i < p1.size(); ++i) worst = std::max(worst, std::fabs(double{p1[i]} - p2[i]));
      EXPECT_LE(worst, 1e-5);
    }
  }
}

// Rank 1 starts with another seed and no checkpoint; rank 0 resumes a keyed checkpoint cut mid-run. Its index,
// rows and slots reach rank 1 (and its seed starts the rows admitted later), so the job ends as the
// uninterrupted one does, bit for bit.
TEST(GradientExchange, KeyedResumeOnRankZeroReachesEveryRank) {
  const std::string full = testing::TestTempDir("exchange", "keyed_full"),
                    cut = testing::TestTempDir("exchange", "keyed_cut");
  TrainOptions o0 = Keyed(32, 2), o1 = Keyed(32, 2);
  o1.seed = 99;
  o0.model_dir = full;
  std::vector<RankRun> a = RunJobWith({Shard(2, 0), Shard(2, 1)}, {o0, o1});
  ASSERT_TRUE(a[0].status.ok()) << a[0].status.ToString();
  ASSERT_TRUE(a[1].status.ok()) << a[1].status.ToString();
  EXPECT_EQ(Predictions(*a[0].trainer), Predictions(*a[1].trainer));
  o0.model_dir = cut;
  o0.max_steps = o1.max_steps = 7;  // after the checkpoint of step 6
  std::vector<RankRun> b = RunJobWith({Shard(2, 0), Shard(2, 1)}, {o0, o1});
  ASSERT_TRUE(b[0].status.ok()) << b[0].status.ToString();
  o0.max_steps = o1.max_steps = 0;
  std::vector<RankRun> c = RunJobWith({Shard(2, 0), Shard(2, 1)}, {o0, o1}, {}, /*restore=*/true);
  for (auto& run : c) {
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    EXPECT_EQ(run.result.keyed_table.ToJson(), a[0].result.keyed_table.ToJson());
    EXPECT_EQ(Predictions(*run.trainer), Predictions(*a[0].trainer));
  }
}

}  // namespace
}  // namespace ctrain::train
