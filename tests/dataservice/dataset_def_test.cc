// The dataset definition (dataservice/dataset_def.h): MakeDatasetDef's
// refusals, ValidateDatasetDef's field names, the fingerprint, and the split
// plans: epoch seeds as the local trainer's, splits that partition a file, and
// one split giving the local trainer's batches.
#include "ctrain/dataservice/dataset_def.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ctrain/io/feature_hash.h"
#include "testing/temp_dir.h"

namespace ctrain::dataservice {
namespace {

constexpr int kRecords = 37;

// Record i: label i % 2, ids (i, 1000 + i, 2000 + i), values 1, 0.5, 2.
std::string WriteLibsvm(const std::string& dir, int records = kRecords) {
  const std::string path = dir + "/tiny.libsvm";
  std::ofstream out(path);
  for (int i = 0; i < records; ++i)
    out << (i % 2) << " " << i << ":1 " << 1000 + i << ":0.5 " << 2000 + i << ":2\n";
  return path;
}

train::StreamInput Input(const std::vector<std::string>& files) {
  train::StreamInput in;
  in.files = files;
  in.reader.format = data::RecordFormat::kLibSvm;
  in.reader.compression = io::Compression::kNone;
  in.reader.field_size = 3;
  in.reader.feature_size = 4096;
  in.pipeline.shuffle_buffer_size = 8;
  return in;
}

proto::DatasetDef GoodDef() {
  proto::DatasetDef d;
  d.add_files("/data/a.libsvm");
  d.set_format("libsvm");
  d.set_compression("none");
  d.set_field_size(3);
  d.set_feature_size(4096);
  d.set_max_line_bytes(1 << 20);
  d.set_num_parallel_reads(1);
  d.set_batch_size(4);
  d.set_order(std::string(data::kDefaultPipelineOrder));
  d.set_read_chunk_records(256);
  return d;
}

proto::SplitId Split(int64_t epoch, int32_t index, int32_t num, int32_t copy = 0) {
  proto::SplitId s;
  s.set_epoch(epoch);
  s.set_split_index(index);
  s.set_num_splits(num);
  s.set_copy(copy);
  return s;
}

// Every batch of one split, read as a worker reads it.
std::vector<data::Batch> ReadSplit(const proto::DatasetDef& def, const proto::SplitId& split) {
  std::vector<data::Batch> out;
  StatusOr<SplitReadPlan> plan = PlanSplitRead(def, split, 1);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return out;
  const std::vector<std::string> files(def.files().begin(), def.files().end());
  auto pipe = data::Pipeline::Create(files, plan->reader, plan->pipeline);
  EXPECT_TRUE(pipe.ok()) << pipe.status().ToString();
  if (!pipe.ok()) return out;
  data::Batch b;
  for (;;) {
    StatusOr<bool> more = (*pipe)->Next(&b);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(b);
  }
  return out;
}

// The records (first id) of a list of batches, in order.
std::vector<int64_t> Records(const std::vector<data::Batch>& batches) {
  std::vector<int64_t> r;
  for (const data::Batch& b : batches)
    for (int64_t i = 0; i < b.size(); ++i) r.push_back(b.row_ids(i)[0]);
  return r;
}

class DatasetDefTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ctrain::testing::TestTempDir("ds_def", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    file_ = WriteLibsvm(dir_);
  }
  std::string dir_, file_;
};

TEST_F(DatasetDefTest, MakeDatasetDefCopiesTheInputAndMakesPathsAbsolute) {
  const std::string cwd = std::filesystem::current_path().string();
  std::filesystem::create_directories(dir_ + "/sub");
  ASSERT_EQ(::chdir(dir_.c_str()), 0);
  StatusOr<proto::DatasetDef> def = MakeDatasetDef(Input({"./sub/../tiny.libsvm"}), "", 16, 99, true);
  ASSERT_EQ(::chdir(cwd.c_str()), 0);
  ASSERT_TRUE(def.ok()) << def.status().ToString();
  ASSERT_EQ(def->files_size(), 1);
  EXPECT_EQ(def->files(0), std::filesystem::path(file_).lexically_normal().string());
  EXPECT_EQ(def->format(), "libsvm");
  EXPECT_EQ(def->compression(), "none");
  EXPECT_EQ(def->field_size(), 3);
  EXPECT_EQ(def->feature_size(), 4096);
  EXPECT_EQ(def->batch_size(), 16);
  EXPECT_EQ(def->seed(), 99u);
  EXPECT_EQ(def->shuffle_buffer_size(), 8);
  EXPECT_TRUE(ValidateDatasetDef(*def).ok());
  // shuffle = false: no shuffle buffer.
  StatusOr<proto::DatasetDef> plain = MakeDatasetDef(Input({file_}), "", 16, 99, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->shuffle_buffer_size(), 0);
}

TEST_F(DatasetDefTest, MakeDatasetDefRefusesStreamsAndCache) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& f : {std::string("-"), fifo, "pipe:" + dir_ + "/ch"}) {
    StatusOr<proto::DatasetDef> def = MakeDatasetDef(Input({file_, f}), "", 16, 1, true);
    EXPECT_EQ(def.status().code(), StatusCode::kInvalidArgument) << f;
    EXPECT_NE(std::string(def.status().message()).find("data service"), std::string::npos) << def.status().message();
  }
  train::StreamInput cached = Input({file_});
  cached.pipeline.cache = "memory";
  StatusOr<proto::DatasetDef> def = MakeDatasetDef(cached, "", 16, 1, true);
  EXPECT_EQ(def.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(def.status().message()).find("--cache"), std::string::npos);
}

TEST_F(DatasetDefTest, APathThatNamesNothingHereIsLeftToTheDispatcher) {
  // A data host's channel the trainer's host does not have: sent as it is, for the dispatcher to
  // expand on its host; a path that is here is still expanded here.
  std::filesystem::create_directories(dir_ + "/here");
  std::filesystem::copy_file(file_, dir_ + "/here/a.libsvm");
  StatusOr<proto::DatasetDef> def =
      MakeDatasetDef(Input({dir_ + "/here", "/opt/ml/input/data/train-not-on-this-host"}), "", 16, 1, true);
  ASSERT_TRUE(def.ok()) << def.status().ToString();
  ASSERT_EQ(def->files_size(), 2);
  EXPECT_EQ(def->files(0), dir_ + "/here/a.libsvm");
  EXPECT_EQ(def->files(1), "/opt/ml/input/data/train-not-on-this-host");
}

TEST(ValidateDatasetDef, NamesEachBadField) {
  ASSERT_TRUE(ValidateDatasetDef(GoodDef()).ok()) << ValidateDatasetDef(GoodDef()).ToString();
  const std::vector<std::pair<std::string, std::function<void(proto::DatasetDef*)>>> cases = {
      {"no files", [](proto::DatasetDef* d) { d->clear_files(); }},
      {"\"rel/a\" is not an absolute path", [](proto::DatasetDef* d) { d->set_files(0, "rel/a"); }},
      {"file \"\"", [](proto::DatasetDef* d) { d->add_files(""); }},
      {"unknown format \"csvx\"", [](proto::DatasetDef* d) { d->set_format("csvx"); }},
      {"unknown compression \"lzma\"", [](proto::DatasetDef* d) { d->set_compression("lzma"); }},
      {"field_size 0", [](proto::DatasetDef* d) { d->set_field_size(0); }},
      {"field_size 2097152", [](proto::DatasetDef* d) { d->set_field_size(1 << 21); }},
      {"id_base", [](proto::DatasetDef* d) { d->set_id_base(-1); }},
      {"feature_size", [](proto::DatasetDef* d) { d->set_feature_size(0); }},
      {"id_limit", [](proto::DatasetDef* d) { d->set_id_limit(-5); }},
      {"oov_buckets needs an id_limit", [](proto::DatasetDef* d) { d->set_id_limit(0), d->set_oov_buckets(true); }},
      {"feature_map \"fm.txt\"", [](proto::DatasetDef* d) { d->set_feature_map("fm.txt"); }},
      {"max_line_bytes", [](proto::DatasetDef* d) { d->set_max_line_bytes(0); }},
      {"num_parallel_reads 0", [](proto::DatasetDef* d) { d->set_num_parallel_reads(0); }},
      {"num_parallel_reads 5000", [](proto::DatasetDef* d) { d->set_num_parallel_reads(5000); }},
      {"shuffle_buffer_size", [](proto::DatasetDef* d) { d->set_shuffle_buffer_size(-1); }},
      {"batch_size 0", [](proto::DatasetDef* d) { d->set_batch_size(0); }},
      {"batch_size 4194305", [](proto::DatasetDef* d) { d->set_batch_size(kMaxBatchSize + 1); }},
      {"read_chunk_records", [](proto::DatasetDef* d) { d->set_read_chunk_records(0); }},
      {"dataset definition: ", [](proto::DatasetDef* d) { d->set_order("batch,shuffle,nonsense"); }},
  };
  for (const auto& [name, mutate] : cases) {
    proto::DatasetDef d = GoodDef();
    mutate(&d);
    Status st = ValidateDatasetDef(d);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(std::string(st.message()).find(name), std::string::npos) << name << " not in: " << st.message();
  }
}

TEST(ValidateSplit, NamesEachBadField) {
  EXPECT_TRUE(ValidateSplit(Split(0, 0, 1)).ok());
  EXPECT_TRUE(ValidateSplit(Split(3, 6, 7, 2)).ok());
  const std::vector<std::pair<proto::SplitId, std::string>> cases = {
      {Split(0, 0, 0), "num_splits 0"},           {Split(0, 0, kMaxSplits + 1), "num_splits 65537"},
      {Split(0, 2, 2), "split_index 2"},          {Split(0, -1, 2), "split_index -1"},
      {Split(-1, 0, 1), "epoch"},                 {Split(0, 0, 1, -1), "copy"},
  };
  for (const auto& [split, name] : cases) {
    Status st = ValidateSplit(split);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(std::string(st.message()).find(name), std::string::npos) << st.message();
  }
  EXPECT_EQ(SplitName(Split(2, 1, 4)), "epoch 2 split 1/4");
  EXPECT_EQ(SplitName(Split(0, 0, 1, 3)), "epoch 0 split 0/1 copy 3");
}

TEST(DatasetFingerprint, StableAndSensitiveToEachField) {
  const proto::DatasetDef base = GoodDef();
  const std::string id = DatasetFingerprint(base);
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(DatasetFingerprint(GoodDef()), id);
  proto::DatasetDef reparsed;
  ASSERT_TRUE(reparsed.ParseFromString(base.SerializeAsString()));
  EXPECT_EQ(DatasetFingerprint(reparsed), id);

  const std::vector<std::function<void(proto::DatasetDef*)>> mutations = {
      [](proto::DatasetDef* d) { d->set_files(0, "/data/b.libsvm"); },
      [](proto::DatasetDef* d) { d->add_files("/data/b.libsvm"); },
      [](proto::DatasetDef* d) { d->set_format("criteo"); },
      [](proto::DatasetDef* d) { d->set_compression("gzip"); },
      [](proto::DatasetDef* d) { d->set_field_size(4); },
      [](proto::DatasetDef* d) { d->set_id_base(1); },
      [](proto::DatasetDef* d) { d->set_feature_size(4097); },
      [](proto::DatasetDef* d) { d->set_id_limit(10); },
      [](proto::DatasetDef* d) { d->set_feature_map("/fm.txt"); },
      [](proto::DatasetDef* d) { d->set_label_key("y"); },
      [](proto::DatasetDef* d) { d->set_ids_key("i"); },
      [](proto::DatasetDef* d) { d->set_values_key("v"); },
      [](proto::DatasetDef* d) { d->set_skip_corrupt_records(true); },
      [](proto::DatasetDef* d) { d->set_max_skipped_records(3); },
      [](proto::DatasetDef* d) { d->set_max_line_bytes(4096); },
      [](proto::DatasetDef* d) { d->set_oov_buckets(true); },
      [](proto::DatasetDef* d) { d->set_criteo_pad_missing_trailing(true); },
      [](proto::DatasetDef* d) { d->set_num_parallel_reads(2); },
      [](proto::DatasetDef* d) { d->set_shuffle_buffer_size(100); },
      [](proto::DatasetDef* d) { d->set_seed(1); },
      [](proto::DatasetDef* d) { d->set_reshuffle_each_iteration(true); },
      [](proto::DatasetDef* d) { d->set_batch_size(5); },
      [](proto::DatasetDef* d) { d->set_drop_remainder(true); },
      [](proto::DatasetDef* d) { d->set_order("shard,interleave,shuffle,batch,parse,prefetch"); },
      [](proto::DatasetDef* d) { d->set_read_chunk_records(64); },
      [](proto::DatasetDef* d) { d->set_feature_spec(R"({"input":"libffm"})"); },  // hashed as given
  };
  // Every field of DatasetDef (files twice: a changed and an added file).
  EXPECT_EQ(proto::DatasetDef::descriptor()->field_count() + 1, static_cast<int>(mutations.size()));
  std::set<std::string> ids{id};
  for (size_t i = 0; i < mutations.size(); ++i) {
    proto::DatasetDef d = base;
    mutations[i](&d);
    EXPECT_TRUE(ids.insert(DatasetFingerprint(d)).second) << "mutation " << i << " did not change the id";
  }
}

TEST(PlanSplitRead, EpochSeedsAreTheLocalTrainers) {
  proto::DatasetDef def = GoodDef();
  def.set_seed(12345);
  def.set_shuffle_buffer_size(64);
  def.set_reshuffle_each_iteration(true);
  std::set<uint64_t> seeds;
  for (int64_t e = 0; e < 4; ++e) {
    // train/stream_input.cc: seed ^ Mix64(epoch + 1) ^ Mix64(1).
    const uint64_t local = 12345 ^ io::Mix64(static_cast<uint64_t>(e) + 1) ^ io::Mix64(1);
    EXPECT_EQ(EpochShuffleSeed(12345, e), local);
    StatusOr<SplitReadPlan> plan = PlanSplitRead(def, Split(e, 1, 3), 2);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->pipeline.shuffle_seed, local);
    EXPECT_TRUE(plan->pipeline.reshuffle_each_iteration);
    EXPECT_EQ(plan->pipeline.num_shards, 3);
    EXPECT_EQ(plan->pipeline.shard_index, 1);
    EXPECT_EQ(plan->pipeline.epochs, 1);
    EXPECT_TRUE(plan->pipeline.deterministic);
    EXPECT_EQ(plan->pipeline.num_parallel_calls, 2);
    EXPECT_EQ(plan->pipeline.batch_size, 4);
    EXPECT_EQ(plan->reader.format, data::RecordFormat::kLibSvm);
    EXPECT_EQ(plan->reader.field_size, 3);
    seeds.insert(local);
    // Another copy (parallel_epochs) shuffles differently.
    StatusOr<SplitReadPlan> copy = PlanSplitRead(def, Split(e, 0, 1, 1), 1);
    ASSERT_TRUE(copy.ok());
    EXPECT_NE(copy->pipeline.shuffle_seed, local);
    EXPECT_EQ(copy->pipeline.shuffle_seed, local ^ io::Mix64(1));
  }
  EXPECT_EQ(seeds.size(), 4u);
  def.set_reshuffle_each_iteration(false);
  for (int64_t e = 0; e < 3; ++e) {
    StatusOr<SplitReadPlan> plan = PlanSplitRead(def, Split(e, 0, 1), 1);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->pipeline.shuffle_seed, 12345u);
    EXPECT_FALSE(plan->pipeline.reshuffle_each_iteration);
  }
  EXPECT_EQ(PlanSplitRead(def, Split(0, 3, 3), 1).status().code(), StatusCode::kInvalidArgument);
  def.set_batch_size(0);
  EXPECT_EQ(PlanSplitRead(def, Split(0, 0, 1), 1).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DatasetDefTest, SplitsPartitionTheFile) {
  StatusOr<proto::DatasetDef> def = MakeDatasetDef(Input({file_}), "", 5, 7, true);
  ASSERT_TRUE(def.ok()) << def.status().ToString();
  for (int32_t n : {1, 2, 3, 5, 8}) {
    for (int64_t epoch : {0, 1}) {
      std::multiset<int64_t> all;
      for (int32_t s = 0; s < n; ++s) {
        const std::vector<int64_t> r = Records(ReadSplit(*def, Split(epoch, s, n)));
        all.insert(r.begin(), r.end());
      }
      std::multiset<int64_t> want;
      for (int i = 0; i < kRecords; ++i) want.insert(i);
      EXPECT_EQ(all, want) << n << " splits, epoch " << epoch;  // every record once: a disjoint cover
    }
  }
  // The rows carry the file's values.
  const std::vector<data::Batch> one = ReadSplit(*def, Split(0, 0, 1));
  ASSERT_FALSE(one.empty());
  const data::Batch& b = one.front();
  const int64_t i = b.row_ids(0)[0];
  EXPECT_EQ(b.labels[0], static_cast<float>(i % 2));
  EXPECT_EQ(b.row_ids(0)[1], 1000 + i);
  EXPECT_EQ(b.row_values(0)[1], 0.5f);
}

TEST_F(DatasetDefTest, SplitsOfSeveralFilesPartitionThem) {
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    const std::string p = dir_ + "/part" + std::to_string(f) + ".libsvm";
    std::ofstream out(p);
    for (int i = 0; i < 10; ++i) out << "1 " << f * 100 + i << ":1 " << 1000 + i << ":1 " << 2000 + i << ":1\n";
    files.push_back(p);
  }
  StatusOr<proto::DatasetDef> def = MakeDatasetDef(Input(files), "", 4, 7, true);
  ASSERT_TRUE(def.ok());
  for (int32_t n : {2, 3}) {
    std::multiset<int64_t> all;
    for (int32_t s = 0; s < n; ++s) {
      const std::vector<int64_t> r = Records(ReadSplit(*def, Split(0, s, n)));
      all.insert(r.begin(), r.end());
    }
    std::multiset<int64_t> want;
    for (int f = 0; f < 3; ++f)
      for (int i = 0; i < 10; ++i) want.insert(f * 100 + i);
    EXPECT_EQ(all, want) << n << " splits";
  }
}

// One split of the whole dataset gives, epoch by epoch, the batches the local
// trainer reads (train/stream_input.h EpochBatchSource), with and without
// reshuffle_each_iteration.
TEST_F(DatasetDefTest, OneSplitReadsTheLocalTrainersBatches) {
  for (bool reshuffle : {true, false}) {
    train::StreamInput in = Input({file_});
    in.pipeline.reshuffle_each_iteration = reshuffle;
    StatusOr<proto::DatasetDef> def = MakeDatasetDef(in, "", 4, 31, true);
    ASSERT_TRUE(def.ok());
    auto local = train::EpochBatchSource::Create(in, 4, 2, 31, true, 0, 0);
    ASSERT_TRUE(local.ok()) << local.status().ToString();
    for (int64_t e = 0; e < 2; ++e) {
      ASSERT_TRUE((*local)->BeginEpoch(e, 0).ok());
      std::vector<data::Batch> want;
      data::Batch b;
      while (*(*local)->Next(&b)) want.push_back(b);
      const std::vector<data::Batch> got = ReadSplit(*def, Split(e, 0, 1));
      EXPECT_EQ(Records(got), Records(want)) << "reshuffle " << reshuffle << " epoch " << e;
      EXPECT_TRUE(got == want) << "reshuffle " << reshuffle << " epoch " << e;
    }
  }
}

}  // namespace
}  // namespace ctrain::dataservice
