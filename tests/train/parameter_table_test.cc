#include "ctrain/train/parameter_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <thread>

namespace ctrain::train {
namespace {

std::unique_ptr<optim::Optimizer> Opt(const std::string& name, float lr) {
  optim::OptimizerConfig c;
  c.name = name;
  c.learning_rate = lr;
  return std::move(optim::MakeOptimizer(c)).value();
}

std::unique_ptr<LocalParameterTable> Table(int64_t rows, int32_t dim, const std::string& opt, float lr,
                                           TableConcurrency mode = TableConcurrency::kLocked) {
  auto t = LocalParameterTable::Create("embedding", rows, dim, Opt(opt, lr), LocalTableOptions{.concurrency = mode});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(ParameterTableTest, CreateAndInitialState) {
  auto t = Table(10, 4, "adagrad", 0.1f);
  EXPECT_EQ(t->rows(), 10);
  EXPECT_EQ(t->dim(), 4);
  EXPECT_EQ(t->num_slots(), 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % 64, 0u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(t->data()[i], 0.0f);
    EXPECT_EQ(t->slot(0)[i], 0.1f);  // Adagrad initial_accumulator_value
  }
  auto bad = LocalParameterTable::Create("e", 0, 4, Opt("sgd", 0.1f));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "parameter table 'e': rows 0 must be >= 1");
  EXPECT_EQ(LocalParameterTable::Create("e", 4, 0, Opt("sgd", 0.1f)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LocalParameterTable::Create("e", 4, 2, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(ParameterTableTest, PullCopiesRowsInRequestOrder) {
  for (auto mode : {TableConcurrency::kLocked, TableConcurrency::kHogwild}) {
    auto t = Table(5, 3, "sgd", 0.1f, mode);
    std::iota(t->data(), t->data() + 15, 0.0f);
    std::vector<int64_t> ids = {4, 0, 4, 2};
    std::vector<float> out(12, -1.0f);
    ASSERT_TRUE(t->Pull(ids, out.data()).ok());
    EXPECT_EQ(out, (std::vector<float>{12, 13, 14, 0, 1, 2, 12, 13, 14, 6, 7, 8}));
  }
}

TEST(ParameterTableTest, OutOfRangeIds) {
  auto t = Table(117581, 2, "sgd", 0.1f);
  std::vector<int64_t> ids = {5, 123456, 7};
  std::vector<float> out(6);
  Status s = t->Pull(ids, out.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "feature id 123456 out of range [0, 117581): increase --feature-size");
  std::vector<int64_t> neg = {-1};
  EXPECT_EQ(t->Pull(neg, out.data()).message(), "feature id -1 out of range [0, 117581): increase --feature-size");
  std::vector<int64_t> sorted = {5, 117581, 200000};
  std::vector<float> g(6, 1.0f);
  s = t->Push({sorted, g.data(), 2}, 1);
  EXPECT_EQ(s.message(), "feature id 117581 out of range [0, 117581): increase --feature-size");
  EXPECT_EQ(t->data()[10], 0.0f);  // row 5 untouched: nothing is applied on error
}

TEST(ParameterTableTest, PushAppliesOptimizerToGivenRows) {
  auto t = Table(6, 2, "adam", 0.01f);
  for (int i = 0; i < 12; ++i) t->data()[i] = 0.5f * i;
  // Reference: the same optimizer applied directly to copies.
  auto ref_opt = Opt("adam", 0.01f);
  std::vector<float> ref(t->data(), t->data() + 12), m(12, 0.0f), v(12, 0.0f);
  float* slots[] = {m.data(), v.data()};
  std::vector<int64_t> ids = {1, 4, 5};
  std::vector<float> g = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f};
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(t->Push({ids, g.data(), 2}, step).ok());
    ref_opt->ApplySparse(ref.data(), slots, 2, ids, g.data(), step);
  }
  EXPECT_EQ(std::vector<float>(t->data(), t->data() + 12), ref);
  EXPECT_EQ(std::vector<float>(t->slot(0), t->slot(0) + 12), m);
  EXPECT_EQ(std::vector<float>(t->slot(1), t->slot(1) + 12), v);
  EXPECT_EQ(t->data()[0], 0.0f);  // row 0 never pushed
  EXPECT_EQ(t->data()[4], 2.0f);  // row 2 never pushed
}

TEST(ParameterTableTest, PushValidation) {
  auto t = Table(10, 2, "sgd", 1.0f);
  std::vector<float> g(6, 1.0f);
  std::vector<int64_t> unsorted = {1, 3, 2}, dup = {1, 1, 2}, ok = {1, 2, 3};
  Status s = t->Push({unsorted, g.data(), 2}, 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "parameter table 'embedding': gradient ids not strictly increasing at index 2 (3 then 2)");
  EXPECT_EQ(t->Push({dup, g.data(), 2}, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Push({ok, g.data(), 3}, 1).message(), "parameter table 'embedding': gradient dim 3 != table dim 2");
  EXPECT_EQ(t->Push({ok, g.data(), 2}, 0).message(), "parameter table 'embedding': step 0 must be >= 1");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(t->data()[i], 0.0f);
  EXPECT_TRUE(t->Push({{}, nullptr, 2}, 1).ok());  // empty push is a no-op
}

// With locks, concurrent pushes to overlapping rows lose no update: SGD with
// lr 1 and gradient 1 leaves exactly -(number of pushes touching the row).
TEST(ParameterTableTest, LockedConcurrentPushesAreExact) {
  const int64_t rows = 200;
  const int32_t dim = 8;
  auto t = Table(rows, dim, "sgd", 1.0f, TableConcurrency::kLocked);
  const int kThreads = 4, kPushes = 300;
  std::vector<int> expected(rows, 0);
  std::vector<std::vector<int64_t>> id_sets(kThreads);
  for (int th = 0; th < kThreads; ++th) {
    for (int64_t r = th; r < rows; r += 1 + th) id_sets[th].push_back(r);  // overlapping, sorted
    for (int64_t r : id_sets[th]) expected[r] += kPushes;
  }
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::vector<float> g(id_sets[th].size() * dim, 1.0f);
      std::vector<float> pulled(id_sets[th].size() * dim);
      for (int p = 0; p < kPushes; ++p) {
        ASSERT_TRUE(t->Push({id_sets[th], g.data(), dim}, p + 1).ok());
        ASSERT_TRUE(t->Pull(id_sets[th], pulled.data()).ok());
        // A locked pull sees whole rows: all dim values of a row are equal.
        for (size_t i = 0; i < id_sets[th].size(); ++i)
          for (int d = 1; d < dim; ++d) ASSERT_EQ(pulled[i * dim + d], pulled[i * dim]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int64_t r = 0; r < rows; ++r)
    for (int d = 0; d < dim; ++d) ASSERT_EQ(t->data()[r * dim + d], -static_cast<float>(expected[r])) << r;
}

// Hogwild: concurrent pushes to disjoint rows are exact; to shared rows only
// bounded (races may lose updates by design).
TEST(ParameterTableTest, HogwildConcurrentPushes) {
  const int64_t rows = 400;
  const int32_t dim = 4;
  auto t = Table(rows, dim, "sgd", 1.0f, TableConcurrency::kHogwild);
  const int kThreads = 4, kPushes = 200;
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::vector<int64_t> ids;
      for (int64_t r = th; r < rows; r += kThreads) ids.push_back(r);  // disjoint
      std::vector<float> g(ids.size() * dim, 1.0f);
      for (int p = 0; p < kPushes; ++p) ASSERT_TRUE(t->Push({ids, g.data(), dim}, p + 1).ok());
    });
  }
  for (auto& th : threads) th.join();
  for (int64_t i = 0; i < rows * dim; ++i) ASSERT_EQ(t->data()[i], -static_cast<float>(kPushes));
}

TEST(ParameterTableTest, CheckpointRoundTrip) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("ctrain_ptable_test_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  auto t = Table(7, 3, "adam", 0.01f);
  std::iota(t->data(), t->data() + 21, 1.0f);
  std::vector<int64_t> ids = {0, 3, 6};
  std::vector<float> g(9, 0.25f);
  ASSERT_TRUE(t->Push({ids, g.data(), 3}, 1).ok());
  auto refs = t->CheckpointTensors();
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].name, "embedding");
  EXPECT_EQ(refs[1].name, "embedding/m");
  EXPECT_EQ(refs[2].name, "embedding/v");
  ASSERT_TRUE(SaveCheckpoint(dir, 1, refs, {}).ok());
  auto ck = LoadLatestCheckpoint(dir);
  ASSERT_TRUE(ck.ok());

  auto u = Table(7, 3, "adam", 0.01f);
  ASSERT_TRUE(u->Restore(*ck).ok());
  EXPECT_EQ(std::vector<float>(u->data(), u->data() + 21), std::vector<float>(t->data(), t->data() + 21));
  EXPECT_EQ(std::vector<float>(u->slot(1), u->slot(1) + 21), std::vector<float>(t->slot(1), t->slot(1) + 21));

  // Optimizer changed: slots missing unless restore_slots = false.
  auto w = Table(7, 3, "adagrad", 0.01f);
  Status s = w->Restore(*ck);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), ck->path + ": no tensor 'embedding/accumulator'");
  EXPECT_EQ(w->data()[0], 0.0f);  // nothing copied on error
  ASSERT_TRUE(w->Restore(*ck, /*restore_slots=*/false).ok());
  EXPECT_EQ(w->data()[1], t->data()[1]);
  EXPECT_EQ(w->slot(0)[0], 0.1f);

  auto bigger = Table(8, 3, "adam", 0.01f);
  s = bigger->Restore(*ck);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), ck->path + ": tensor 'embedding' is f32 [7, 3], table expects f32 [8, 3]");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ctrain::train
