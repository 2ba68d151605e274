#include "ctrain/train/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "ctrain/io/crc32c.h"
#include "ctrain/io/file.h"

namespace ctrain::train {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("ctrain_ckpt_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string Read(const std::string& name) const { return *io::ReadFileToString(Path(name)); }
  void Write(const std::string& name, const std::string& bytes) const {
    auto f = io::OpenWritableFile(Path(name));  // no fsync: test files only
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(bytes).ok());
    ASSERT_TRUE((*f)->Close().ok());
  }

  static std::vector<NamedTensor> Tensors(float base) {
    NamedTensor emb{"embedding", DType::kF32, {3, 2}, {base, base + 1, base + 2, base + 3, base + 4, base + 5}, {}};
    NamedTensor ids{"counters", DType::kI64, {2}, {}, {int64_t{1} << 40, -7}};
    NamedTensor scalar{"global_step", DType::kI64, {}, {}, {42}};
    NamedTensor empty{"empty", DType::kF32, {0, 4}, {}, {}};
    return {emb, ids, scalar, empty};
  }

  std::string dir_;
};

void ExpectSameTensors(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].dtype, b[i].dtype);
    EXPECT_EQ(a[i].shape, b[i].shape);
    EXPECT_EQ(a[i].f32, b[i].f32);
    EXPECT_EQ(a[i].i64, b[i].i64);
  }
}

TEST_F(CheckpointTest, RoundTrip) {
  const auto tensors = Tensors(1.5f);
  nlohmann::json meta = {{"epoch", 2}, {"record", 12345}, {"model", {{"embedding_dim", 2}}}};
  ASSERT_TRUE(SaveCheckpoint(dir_, 100, tensors, meta).ok());
  EXPECT_TRUE(fs::exists(Path("ckpt-100.bin")));
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ(ck->step, 100);
  EXPECT_EQ(ck->path, Path("ckpt-100.bin"));
  EXPECT_EQ(ck->meta, meta);
  ExpectSameTensors(ck->tensors, tensors);
  ASSERT_NE(ck->Find("counters"), nullptr);
  EXPECT_EQ(ck->Find("counters")->i64[0], int64_t{1} << 40);
  EXPECT_EQ(ck->Find("nope"), nullptr);
  // Index content.
  auto index = nlohmann::json::parse(Read("checkpoint"));
  EXPECT_EQ(index["latest"], "ckpt-100.bin");
  EXPECT_EQ(index["latest_step"], 100);
  EXPECT_EQ(index["format"], "ctrain-checkpoint-index");
}

TEST_F(CheckpointTest, ExactBytesOfSmallFile) {
  std::vector<NamedTensor> t = {{"w", DType::kF32, {2}, {1.0f, -2.0f}, {}}};
  ASSERT_TRUE(SaveCheckpoint(dir_, 7, t, nlohmann::json::object()).ok());
  const std::string b = Read("ckpt-7.bin");
  // 32 header + 2 meta "{}" + 4 crc + (8 + 1 name + 8 dim + 8 len + 4 crc) + 8 data + 4 crc + 16 footer.
  ASSERT_EQ(b.size(), 32u + 2 + 4 + 29 + 8 + 4 + 16);
  EXPECT_EQ(b.substr(0, 8), "CTRNCKPT");
  uint32_t u32;
  uint64_t u64;
  std::memcpy(&u32, b.data() + 8, 4);
  EXPECT_EQ(u32, 1u);  // version
  std::memcpy(&u32, b.data() + 12, 4);
  EXPECT_EQ(u32, 1u);  // tensors
  std::memcpy(&u64, b.data() + 16, 8);
  EXPECT_EQ(u64, 7u);  // step
  std::memcpy(&u32, b.data() + 24, 4);
  EXPECT_EQ(u32, 2u);  // meta length
  std::memcpy(&u32, b.data() + 28, 4);
  EXPECT_EQ(u32, io::Crc32c(b.data(), 28));
  EXPECT_EQ(b.substr(32, 2), "{}");
  const size_t rec = 38;
  std::memcpy(&u32, b.data() + rec, 4);
  EXPECT_EQ(u32, 1u);                              // name length
  EXPECT_EQ(b[rec + 4], 1);                        // dtype f32
  EXPECT_EQ(b[rec + 5], 1);                        // rank
  EXPECT_EQ(b.substr(rec + 8, 1), "w");
  std::memcpy(&u64, b.data() + rec + 9, 8);
  EXPECT_EQ(u64, 2u);                              // dim 0
  std::memcpy(&u64, b.data() + rec + 17, 8);
  EXPECT_EQ(u64, 8u);                              // data bytes
  std::memcpy(&u32, b.data() + rec + 25, 4);
  EXPECT_EQ(u32, io::Crc32c(b.data() + rec, 25));  // record header crc
  float f[2];
  std::memcpy(f, b.data() + rec + 29, 8);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  std::memcpy(&u64, b.data() + b.size() - 16, 8);
  EXPECT_EQ(u64, b.size());
  EXPECT_EQ(b.substr(b.size() - 8), "CTRNDONE");
}

TEST_F(CheckpointTest, KeepsLastN) {
  for (int64_t step : {10, 20, 30, 40, 50}) {
    ASSERT_TRUE(SaveCheckpoint(dir_, step, Tensors(step), {{"step", step}}, CheckpointOptions{.keep_last = 3, .base = {}}).ok());
  }
  EXPECT_FALSE(fs::exists(Path("ckpt-10.bin")));
  EXPECT_FALSE(fs::exists(Path("ckpt-20.bin")));
  for (const char* f : {"ckpt-30.bin", "ckpt-40.bin", "ckpt-50.bin"}) EXPECT_TRUE(fs::exists(Path(f))) << f;
  auto index = nlohmann::json::parse(Read("checkpoint"));
  ASSERT_EQ(index["checkpoints"].size(), 3u);
  EXPECT_EQ(index["checkpoints"][0]["file"], "ckpt-30.bin");
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(ck->step, 50);
  EXPECT_EQ(ck->Find("embedding")->f32[0], 50.0f);
  // Older kept ones load by path.
  auto old = LoadCheckpoint(Path("ckpt-30.bin"));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->meta["step"], 30);
  // keep_last 1 prunes to one; re-saving an existing step replaces it.
  ASSERT_TRUE(SaveCheckpoint(dir_, 50, Tensors(5), {}, CheckpointOptions{.keep_last = 1, .base = {}}).ok());
  EXPECT_FALSE(fs::exists(Path("ckpt-30.bin")));
  EXPECT_FALSE(fs::exists(Path("ckpt-40.bin")));
  EXPECT_EQ(LoadLatestCheckpoint(dir_)->Find("embedding")->f32[0], 5.0f);
}

// Incremental keyed-table checkpoints (CheckpointOptions::base): the index keeps a full checkpoint a kept
// incremental one needs, beyond keep_last, and drops an older incremental one together with its base.
TEST_F(CheckpointTest, KeepsTheBaseOfEveryKeptIncrementalCheckpoint) {
  auto save = [&](int64_t step, const std::string& base) {
    ASSERT_TRUE(SaveCheckpoint(dir_, step, Tensors(step), {{"step", step}},
                               CheckpointOptions{.keep_last = 2, .base = base})
                    .ok());
  };
  auto files = [&] {
    std::vector<std::string> f;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != "checkpoint") f.push_back(e.path().filename().string());
    std::sort(f.begin(), f.end());
    return f;
  };
  save(1, "");
  save(2, "ckpt-1.bin");
  save(3, "ckpt-1.bin");  // keep_last 2 is {2, 3}; both need 1
  EXPECT_EQ(files(), (std::vector<std::string>{"ckpt-1.bin", "ckpt-2.bin", "ckpt-3.bin"}));
  const std::string index = *io::ReadFileToString(dir_ + "/checkpoint");
  EXPECT_NE(index.find("\"base\": \"ckpt-1.bin\""), std::string::npos) << index;
  save(4, "");
  save(5, "ckpt-4.bin");  // {4, 5}: 1 is no longer needed, and 2 and 3 go with it
  EXPECT_EQ(files(), (std::vector<std::string>{"ckpt-4.bin", "ckpt-5.bin"}));
  auto latest = LatestCheckpointPath(dir_);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(fs::path(*latest).filename(), "ckpt-5.bin");
}

TEST_F(CheckpointTest, NoCheckpointIsNotFound) {
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kNotFound);
  fs::create_directories(dir_);
  ck = LoadLatestCheckpoint(dir_);
  EXPECT_EQ(ck.status().code(), StatusCode::kNotFound);
  EXPECT_NE(ck.status().message().find("no checkpoint index"), std::string_view::npos);
}

TEST_F(CheckpointTest, CrashLeavesTemporaryBehind) {
  ASSERT_TRUE(SaveCheckpoint(dir_, 10, Tensors(1), {}).ok());
  // A crash during the next save: a half-written temporary and a truncated,
  // never-indexed .bin (crash between rename and index update is a complete
  // file; a torn copy is worse, so test that).
  const std::string full = Read("ckpt-10.bin");
  Write("ckpt-20.bin.tmp.99999", full.substr(0, full.size() / 2));
  Write("ckpt-20.bin", full.substr(0, 40));
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ(ck->step, 10);
  // The next save removes the stale temporary.
  ASSERT_TRUE(SaveCheckpoint(dir_, 30, Tensors(3), {}).ok());
  EXPECT_FALSE(fs::exists(Path("ckpt-20.bin.tmp.99999")));
  EXPECT_EQ(LoadLatestCheckpoint(dir_)->step, 30);
}

TEST_F(CheckpointTest, IndexNamingMissingFileIsDataLoss) {
  ASSERT_TRUE(SaveCheckpoint(dir_, 10, Tensors(1), {}).ok());
  fs::remove(Path("ckpt-10.bin"));
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ck.status().message(), Path("checkpoint") + " names ckpt-10.bin but " + Path("ckpt-10.bin") +
                                       " does not exist (deleted or copied without it?)");
}

// A deleted index beside checkpoint files is not "nothing saved": a trainer would train afresh over them.
TEST_F(CheckpointTest, AMissingIndexBesideCheckpointFilesIsDataLoss) {
  ASSERT_TRUE(SaveCheckpoint(dir_, 10, Tensors(1), {}).ok());
  ASSERT_TRUE(SaveCheckpoint(dir_, 20, Tensors(1), {}).ok());
  fs::remove(Path("checkpoint"));
  for (auto ck : {LoadLatestCheckpoint(dir_).status(), LatestCheckpointPath(dir_).status()}) {
    EXPECT_EQ(ck.code(), StatusCode::kDataLoss);
    EXPECT_EQ(ck.message(), Path("checkpoint") + " does not exist, but " + dir_ +
                                " holds checkpoint files (ckpt-10.bin, ckpt-20.bin): the index was deleted, or the "
                                "directory copied without it. Restore it, or give another (empty) model dir; "
                                "nothing is trained over them");
  }
  fs::remove(Path("ckpt-10.bin"));
  fs::remove(Path("ckpt-20.bin"));
  EXPECT_EQ(LatestCheckpointPath(dir_).status().code(), StatusCode::kNotFound);  // nothing saved
}

TEST_F(CheckpointTest, MalformedIndexIsDataLoss) {
  fs::create_directories(dir_);
  Write("checkpoint", "{not json");
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ck.status().message(), Path("checkpoint") + ": bad checkpoint index: not a JSON object");
  // And a save refuses to overwrite it.
  EXPECT_EQ(SaveCheckpoint(dir_, 1, Tensors(1), {}).code(), StatusCode::kDataLoss);
}

TEST_F(CheckpointTest, EveryFlippedByteIsDetected) {
  ASSERT_TRUE(SaveCheckpoint(dir_, 5, Tensors(2), {{"k", "v"}}).ok());
  const std::string good = Read("ckpt-5.bin");
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    Write("bad.bin", bad);
    auto ck = LoadCheckpoint(Path("bad.bin"));
    ASSERT_FALSE(ck.ok()) << "flip at " << i << " not detected";
    EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss) << i << ": " << ck.status().ToString();
    EXPECT_EQ(ck.status().message().rfind(Path("bad.bin") + ": offset ", 0), 0u) << ck.status().ToString();
  }
}

TEST_F(CheckpointTest, CorruptDataNamesOffset) {
  ASSERT_TRUE(SaveCheckpoint(dir_, 5, Tensors(2), nlohmann::json::object()).ok());
  std::string b = Read("ckpt-5.bin");
  // First tensor "embedding": record at 38, header 8 + 9 + 16 + 8 = 41 bytes + 4 crc, data at 83 (24 bytes).
  b[83 + 5] ^= 1;
  Write("ckpt-5.bin", b);
  auto ck = LoadLatestCheckpoint(dir_);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss);
  const std::string msg(ck.status().message());
  EXPECT_EQ(msg.rfind(Path("ckpt-5.bin") + ": offset 107: tensor 0 'embedding' data crc mismatch (stored 0x", 0),
            0u)
      << msg;
}

TEST_F(CheckpointTest, TruncationIsDataLoss) {
  ASSERT_TRUE(SaveCheckpoint(dir_, 5, Tensors(2), {{"k", 1}}).ok());
  const std::string good = Read("ckpt-5.bin");
  for (size_t len = 0; len < good.size(); ++len) {
    Write("t.bin", good.substr(0, len));
    auto ck = LoadCheckpoint(Path("t.bin"));
    ASSERT_FALSE(ck.ok()) << len;
    EXPECT_EQ(ck.status().code(), StatusCode::kDataLoss) << len;
    EXPECT_NE(ck.status().message().find("truncated"), std::string_view::npos) << ck.status().ToString();
  }
  Write("t.bin", good.substr(0, 10));
  EXPECT_EQ(LoadCheckpoint(Path("t.bin")).status().message(),
            Path("t.bin") + ": offset 0: truncated: file header needs 32 bytes but the file has 10 left");
  Write("t.bin", good + "x");
  EXPECT_EQ(LoadCheckpoint(Path("t.bin")).status().message(),
            Path("t.bin") + ": offset " + std::to_string(good.size()) + ": trailing bytes after the footer");
  EXPECT_EQ(LoadCheckpoint(Path("missing.bin")).status().code(), StatusCode::kNotFound);
}

TEST_F(CheckpointTest, InvalidSaves) {
  std::vector<NamedTensor> dup = {{"a", DType::kF32, {1}, {1}, {}}, {"a", DType::kF32, {1}, {2}, {}}};
  Status s = SaveCheckpoint(dir_, 1, dup, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "checkpoint: tensor 1 'a': duplicate name");
  std::vector<NamedTensor> short_data = {{"a", DType::kF32, {3}, {1}, {}}};
  s = SaveCheckpoint(dir_, 1, short_data, {});
  EXPECT_EQ(s.message(), "checkpoint: tensor 0 'a': shape [3] needs 3 elements, has 1");
  EXPECT_EQ(SaveCheckpoint(dir_, -1, Tensors(1), {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SaveCheckpoint(dir_, 1, Tensors(1), {}, CheckpointOptions{.keep_last = 0, .base = {}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(Path("checkpoint")));
}

TEST_F(CheckpointTest, LargeTableIsFast) {
  // 117581 x 32 floats + two Adam slots, about 45 MB.
  const int64_t rows = 117581, dim = 32;
  std::vector<float> table(rows * dim), m(rows * dim), v(rows * dim);
  std::mt19937 rng(1);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(rng()) * 1e-9f;
  std::vector<TensorRef> refs = {TensorRef::F32("embedding", {rows, dim}, table.data()),
                                 TensorRef::F32("embedding/m", {rows, dim}, m.data()),
                                 TensorRef::F32("embedding/v", {rows, dim}, v.data())};
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(SaveCheckpoint(dir_, 1, refs, {{"epoch", 0}}).ok());
  auto t1 = std::chrono::steady_clock::now();
  auto ck = LoadLatestCheckpoint(dir_);
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(ck->Find("embedding")->f32, table);
  EXPECT_EQ(ck->Find("embedding")->shape, (std::vector<int64_t>{rows, dim}));
  const double save_s = std::chrono::duration<double>(t1 - t0).count();
  const double load_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf("save %.3f s, load %.3f s for %.1f MB\n", save_s, load_s, 3.0 * rows * dim * 4 / 1e6);
  EXPECT_LT(save_s, 5.0);  // generous for a shared CI machine; typically well under 0.5 s
  EXPECT_LT(load_s, 5.0);
}

}  // namespace
}  // namespace ctrain::train
