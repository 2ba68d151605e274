// Input pipeline: sharding, shuffle, repeat/cache, pipe mode, bounds, errors.
#include "ctrain/data/pipeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "ctrain/data/example_reader.h"
#include "ctrain/data/file_list.h"
#include "ctrain/data/raw_record_reader.h"
#include "ctrain/io/example.h"
#include "ctrain/io/file.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::data {
namespace {

namespace fs = std::filesystem;
constexpr int32_t kF = 3;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ctrain_pipeline_test.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Record with unique id `uid`: "label uid:1 1:0.5 2:0.25" (field 0 identifies it).
std::string LibSvmLines(int64_t first_uid, int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t uid = first_uid + i;
    s += std::to_string(uid % 2) + " " + std::to_string(uid) + ":1 1:0.5 2:0.25\n";
  }
  return s;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(io::WriteStringToFileAtomic(path, bytes).ok()) << path;
}

std::string TFRecordBytes(int64_t first_uid, int64_t n) {
  std::string out, rec;
  io::SeedSchema schema;
  schema.field_size = kF;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t uid = first_uid + i;
    const int64_t ids[kF] = {uid, 1, 2};
    const float vals[kF] = {1.f, 0.5f, 0.25f};
    rec.clear();
    io::EncodeSeedExample(static_cast<float>(uid % 2), ids, vals, schema, &rec);
    io::AppendTFRecord(&out, rec);
  }
  return out;
}

ExampleReaderOptions SmallReader() {
  ExampleReaderOptions r;
  r.field_size = kF;
  return r;
}

PipelineOptions Quiet() {
  PipelineOptions o;
  o.print_warnings = false;
  o.batch_size = 4;
  return o;
}

// All uids (field 0) in delivery order; checks labels match the uid.
StatusOr<std::vector<int64_t>> Drain(Pipeline* p) {
  std::vector<int64_t> uids;
  Batch b;
  while (true) {
    CTRAIN_ASSIGN_OR_RETURN(bool more, p->Next(&b));
    if (!more) break;
    EXPECT_EQ(b.field_size, kF);
    for (int64_t r = 0; r < b.size(); ++r) {
      uids.push_back(b.ids[r * kF]);
      EXPECT_EQ(b.labels[r], static_cast<float>(b.ids[r * kF] % 2));
    }
  }
  return uids;
}

std::vector<int64_t> RunAll(const std::vector<std::string>& files, const PipelineOptions& o,
                         const ExampleReaderOptions& r = SmallReader()) {
  auto p = Pipeline::Create(files, r, o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return {};
  auto u = Drain(p->get());
  EXPECT_TRUE(u.ok()) << u.status().ToString();
  return u.ok() ? *u : std::vector<int64_t>{};
}

std::vector<int64_t> Iota(int64_t first, int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = first + i;
  return v;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// 3 files of 10, 11, 17 records: uids 0..9, 100..110, 200..216.
struct UnevenFiles {
  TempDir dir;
  std::vector<std::string> files;
  std::vector<int64_t> all;
  UnevenFiles(bool tfrecord = false) {
    const int64_t counts[3] = {10, 11, 17};
    for (int i = 0; i < 3; ++i) {
      std::string path = dir / ("part-" + std::to_string(i) + (tfrecord ? ".tfrecord" : ".libsvm"));
      WriteFile(path, tfrecord ? TFRecordBytes(100 * i, counts[i]) : LibSvmLines(100 * i, counts[i]));
      files.push_back(path);
      for (int64_t u : Iota(100 * i, counts[i])) all.push_back(u);
    }
  }
};

TEST(FileListTest, GlobsDirectoriesSortedAndErrors) {
  UnevenFiles u;
  auto dir = ExpandFileList({u.dir.path()});
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(*dir, u.files);
  auto glob = ExpandFileList({u.dir.path() + "/part-*.libsvm"});
  ASSERT_TRUE(glob.ok());
  EXPECT_EQ(*glob, u.files);
  auto none = ExpandFileList({u.dir.path() + "/nothing-*"});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("glob matched no files"), std::string_view::npos);
  auto twice = ExpandFileList({u.files[0], u.dir.path()});
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("listed twice"), std::string_view::npos);
}

TEST(PipelineTest, ReadsEverythingInOrderWithoutShuffle) {
  UnevenFiles u;
  PipelineOptions o = Quiet();
  EXPECT_EQ(RunAll(u.files, o), u.all);
  // Parallel reads + parse stay deterministic (round-robin per chunk).
  o.num_parallel_reads = 3;
  o.num_parallel_calls = 2;
  o.read_chunk_records = 4;
  std::vector<int64_t> a = RunAll(u.files, o), b = RunAll(u.files, o);
  EXPECT_EQ(a, b);
  EXPECT_EQ(Sorted(a), Sorted(u.all));
  // Round-robin: first chunk of file 0, then of file 1, then of file 2.
  ASSERT_GE(a.size(), 12u);
  EXPECT_EQ(std::vector<int64_t>(a.begin(), a.begin() + 12),
            (std::vector<int64_t>{0, 1, 2, 3, 100, 101, 102, 103, 200, 201, 202, 203}));
  o.deterministic = false;
  EXPECT_EQ(Sorted(RunAll(u.files, o)), Sorted(u.all));
}

TEST(PipelineTest, TFRecordAndGzipMatchLibSvm) {
  UnevenFiles t(/*tfrecord=*/true);
  PipelineOptions o = Quiet();
  o.num_parallel_calls = 2;
  EXPECT_EQ(RunAll(t.files, o), t.all);
  TempDir d;
  auto w = io::TFRecordWriter::Open(d / "g.tfrecord", io::Compression::kGzip);
  ASSERT_TRUE(w.ok());
  io::SeedSchema schema;
  schema.field_size = kF;
  std::string rec;
  for (int64_t uid = 0; uid < 50; ++uid) {
    const int64_t ids[kF] = {uid, 1, 2};
    const float vals[kF] = {1, 0.5f, 0.25f};
    rec.clear();
    io::EncodeSeedExample(static_cast<float>(uid % 2), ids, vals, schema, &rec);
    ASSERT_TRUE((*w)->Write(rec).ok());
  }
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(RunAll({d / "g.tfrecord"}, o), Iota(0, 50));
}

TEST(PipelineTest, StatsNameEachInputWithItsDetectedFormatCompressionAndRecords) {
  TempDir d;
  WriteFile(d / "a.libsvm", LibSvmLines(0, 5));
  WriteFile(d / "b.tfrecord", TFRecordBytes(100, 3));
  WriteFile(d / "blank.libsvm", "\n\n");
  auto w = io::TFRecordWriter::Open(d / "g.tfrecord", io::Compression::kGzip);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Close().ok());  // gzip of no records
  PipelineOptions o = Quiet();
  o.num_parallel_reads = 2;
  auto p = Pipeline::Create({d / "a.libsvm", d / "b.tfrecord", d / "blank.libsvm", d / "g.tfrecord"}, SmallReader(), o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(Drain(p->get()).ok());
  const std::vector<InputReadStats> in = (*p)->stats().inputs;
  ASSERT_EQ(in.size(), 4u);
  EXPECT_EQ(in[0].name, d / "a.libsvm");
  EXPECT_EQ(in[0].format, "libsvm");
  EXPECT_EQ(in[0].compression, "none");
  EXPECT_EQ(in[0].records, 5u);
  EXPECT_EQ(in[1].format, "tfrecord");
  EXPECT_EQ(in[1].records, 3u);
  EXPECT_EQ(in[2].records, 0u);
  EXPECT_EQ(in[3].file, 3u);
  EXPECT_EQ(in[3].compression, "gzip");
  EXPECT_EQ(in[3].records, 0u);
  for (const InputReadStats& s : in) EXPECT_TRUE(s.finished) << s.name;
}

void CheckShards(const std::vector<std::string>& files, const std::vector<int64_t>& all, int32_t n,
                 ShardLevel level, bool tfrecord) {
  std::vector<int64_t> uni;
  std::set<int64_t> seen;
  for (int32_t i = 0; i < n; ++i) {
    PipelineOptions o = Quiet();
    o.num_shards = n;
    o.shard_index = i;
    o.num_parallel_reads = 2;
    auto p = Pipeline::Create(files, SmallReader(), o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->shard_plan().level, level);
    auto u = Drain(p->get());
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    for (int64_t x : *u) {
      EXPECT_TRUE(seen.insert(x).second) << "uid " << x << " in two shards (n=" << n << ", tfrecord=" << tfrecord << ")";
      uni.push_back(x);
    }
  }
  EXPECT_EQ(Sorted(uni), Sorted(all)) << "n=" << n;
}

TEST(ShardTest, DisjointAndCompleteFileAndRecordLevel) {
  for (bool tfrecord : {false, true}) {
    UnevenFiles u(tfrecord);
    CheckShards(u.files, u.all, 2, ShardLevel::kFile, tfrecord);
    CheckShards(u.files, u.all, 3, ShardLevel::kFile, tfrecord);
    CheckShards(u.files, u.all, 4, ShardLevel::kRecord, tfrecord);
    CheckShards(u.files, u.all, 7, ShardLevel::kRecord, tfrecord);
  }
}

TEST(ShardTest, UnevenShardsAreReportedWithRecordCounts) {
  UnevenFiles u;
  PipelineOptions o = Quiet();
  o.num_shards = 2;
  o.count_shard_records = true;
  auto p = Pipeline::Create(u.files, SmallReader(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->shard_plan().shard_records, (std::vector<uint64_t>{27, 11}));
  ASSERT_EQ((*p)->warnings().size(), 1u);
  EXPECT_NE((*p)->warnings()[0].find("uneven shards: file-level sharding of 3 files into 2 shards gives record "
                                     "counts per shard [27, 11]"),
            std::string::npos)
      << (*p)->warnings()[0];
  // Record level over 4 shards: 10+11+17 records split within one record per file: no warning.
  o.num_shards = 4;
  auto q = Pipeline::Create(u.files, SmallReader(), o);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)->shard_plan().level, ShardLevel::kRecord);
  const auto& c = (*q)->shard_plan().shard_records;
  EXPECT_EQ(c[0] + c[1] + c[2] + c[3], 38u);
  EXPECT_TRUE((*q)->warnings().empty());
  // Without counting: bytes per shard.
  o.num_shards = 2;
  o.count_shard_records = false;
  auto b = Pipeline::Create(u.files, SmallReader(), o);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ((*b)->warnings().size(), 1u);
  EXPECT_NE((*b)->warnings()[0].find("bytes per shard"), std::string::npos);
}

TEST(ShardTest, FromEnvironment) {
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  auto none = ShardFromEnvironment();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->num_shards, 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  auto s = ShardFromEnvironment();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->num_shards, 4);
  EXPECT_EQ(s->index, 3);
  EXPECT_EQ(s->local_rank, 1);
  setenv("OMPI_COMM_WORLD_RANK", "4", 1);
  EXPECT_EQ(ShardFromEnvironment().status().code(), StatusCode::kInvalidArgument);
  setenv("OMPI_COMM_WORLD_RANK", "x", 1);
  EXPECT_NE(ShardFromEnvironment().status().message().find("OMPI_COMM_WORLD_RANK='x'"), std::string_view::npos);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
}

std::string Shared(const std::string& name) { return std::string(CTRAIN_SHARED_DATA_DIR) + "/" + name; }

TEST(ShardTest, RealCriteoLibSvmShardsCoverEveryRow) {
  if (!fs::exists(CTRAIN_SHARED_DATA_DIR)) GTEST_SKIP() << "no shared data dir " << CTRAIN_SHARED_DATA_DIR;
  ExampleReaderOptions r;
  r.field_size = 39;
  r.id_base = 1;
  // Reference: the sequential reader, row hashes as a multiset.
  auto hash_row = [](float label, const int64_t* ids, const float* vals) {
    uint64_t h = static_cast<uint64_t>(label);
    for (int f = 0; f < 39; ++f) h = h * 1000003 + static_cast<uint64_t>(ids[f]) * 31 + static_cast<uint64_t>(vals[f] * 1e6);
    return h;
  };
  std::multiset<uint64_t> want;
  {
    auto rd = OpenExampleReader(Shared("criteo_deepfm_va10k.libsvm"), r);
    ASSERT_TRUE(rd.ok());
    float l;
    int64_t ids[39];
    float v[39];
    while (true) {
      auto m = (*rd)->Next(&l, ids, v);
      ASSERT_TRUE(m.ok());
      if (!*m) break;
      want.insert(hash_row(l, ids, v));
    }
  }
  ASSERT_EQ(want.size(), 10040u);
  std::multiset<uint64_t> got;
  for (int i = 0; i < 3; ++i) {
    PipelineOptions o = Quiet();
    o.batch_size = 512;
    o.num_shards = 3;
    o.shard_index = i;
    o.num_parallel_calls = 2;
    o.shuffle_buffer_size = 1000;
    auto p = Pipeline::Create({Shared("criteo_deepfm_va10k.libsvm")}, r, o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    Batch b;
    uint64_t n = 0;
    while (true) {
      auto m = (*p)->Next(&b);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      if (!*m) break;
      for (int64_t k = 0; k < b.size(); ++k) got.insert(hash_row(b.labels[k], &b.ids[k * 39], &b.values[k * 39]));
      n += b.size();
    }
    EXPECT_EQ(n, 10040u / 3 + (i < 10040 % 3 ? 1 : 0)) << "shard " << i;
  }
  EXPECT_EQ(got, want);
}

TEST(ShardTest, RealTFRecordsShardCounts) {
  if (!fs::exists(CTRAIN_SHARED_DATA_DIR)) GTEST_SKIP() << "no shared data dir " << CTRAIN_SHARED_DATA_DIR;
  // Counts from SOURCES.md (DeepCTR's schema is not the seed's, so this checks the raw-record path).
  const std::vector<std::pair<std::string, uint64_t>> files = {
      {"criteo_deepctr_tr.tfrecords", 160},      {"criteo_deepctr_te.tfrecords", 40},
      {"criteo_paddlerec_wd.tfrecord", 100},     {"criteo_deepctr_tr.gzip.tfrecords", 160},
      {"criteo_deepctr_va.gzip.tfrecords", 20},  {"tfx_taxi_eval-00000-of-00012.tfrecord.gz", 424}};
  std::vector<std::string> paths;
  uint64_t total = 0;
  for (const auto& [name, n] : files) {
    paths.push_back(Shared(name));
    auto c = CountRecords(Shared(name), ExampleReaderOptions{});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(*c, n) << name;
    total += n;
  }
  for (int32_t n : {2, 4, 6, 9}) {
    auto plan = PlanShards(paths, ShardSpec{n, 0, 0}, ExampleReaderOptions{}, /*count_records=*/true);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->level, n <= 6 ? ShardLevel::kFile : ShardLevel::kRecord);
    uint64_t sum = 0;
    for (uint64_t c : plan->shard_records) sum += c;
    EXPECT_EQ(sum, total) << n;
  }
}

TEST(ShuffleTest, PermutationReproducibleAndReshuffled) {
  UnevenFiles u;
  PipelineOptions o = Quiet();
  o.shuffle_buffer_size = 16;
  o.shuffle_seed = 7;
  o.epochs = 3;
  std::vector<int64_t> a = RunAll(u.files, o);
  ASSERT_EQ(a.size(), 3 * u.all.size());
  const size_t n = u.all.size();
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    // Batches do not cross epochs (repeat after batch), so epoch e is a contiguous block.
    std::vector<int64_t> ep(a.begin() + e * n, a.begin() + (e + 1) * n);
    EXPECT_EQ(Sorted(ep), Sorted(u.all)) << "epoch " << e << " is not a permutation";
    EXPECT_NE(ep, u.all);
    epochs.push_back(ep);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_EQ(RunAll(u.files, o), a);  // same seed, same order
  o.shuffle_seed = 8;
  EXPECT_NE(RunAll(u.files, o), a);
  o.reshuffle_each_iteration = false;
  std::vector<int64_t> same = RunAll(u.files, o);
  EXPECT_TRUE(std::equal(same.begin(), same.begin() + n, same.begin() + n));
  // Shuffling whole batches keeps the rows of a batch together.
  o = Quiet();
  o.order = "interleave,batch,shuffle,parse,prefetch";
  o.shuffle_buffer_size = 4;
  auto p = Pipeline::Create({u.files[2]}, SmallReader(), o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Batch b;
  std::vector<int64_t> firsts;
  int64_t rows = 0;
  while (*(*p)->Next(&b)) {
    if (b.size() == 4) {
      EXPECT_EQ(b.ids[3 * kF] - b.ids[0], 3);
    }
    firsts.push_back(b.ids[0]);
    rows += b.size();
  }
  EXPECT_EQ(rows, 17);
  EXPECT_EQ(Sorted(firsts), (std::vector<int64_t>{200, 204, 208, 212, 216}));
}

TEST(RepeatCacheTest, IdenticalEpochs) {
  UnevenFiles u;
  for (std::string cache : {std::string(""), std::string("memory"), u.dir / "cache.bin"}) {
    PipelineOptions o = Quiet();
    o.epochs = 3;
    o.cache = cache;
    o.batch_size = 5;
    o.drop_remainder = true;
    auto p = Pipeline::Create(u.files, SmallReader(), o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    auto got = Drain(p->get());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<int64_t> one(u.all.begin(), u.all.begin() + 35);  // 38 -> 7 full batches of 5
    std::vector<int64_t> want;
    for (int e = 0; e < 3; ++e) want.insert(want.end(), one.begin(), one.end());
    EXPECT_EQ(*got, want) << "cache='" << cache << "'";
    PipelineStats s = (*p)->stats();
    EXPECT_EQ(s.dropped_remainder_records, 9u);
    EXPECT_EQ(s.epochs_completed, 3u);
    EXPECT_EQ(s.records_read, cache.empty() ? 3 * 38u : 38u) << "a cache reads the files once";
    if (!cache.empty()) {
      EXPECT_EQ(s.cache_records, 38u);
    }
    if (cache.size() > 6) {
      EXPECT_TRUE(fs::exists(cache));
    }
  }
}

TEST(RepeatCacheTest, MemoryCacheLimitIsResourceExhausted) {
  UnevenFiles u;
  PipelineOptions o = Quiet();
  o.cache = "memory";
  o.cache_max_bytes = 600;
  o.epochs = 2;
  auto p = Pipeline::Create(u.files, SmallReader(), o);
  ASSERT_TRUE(p.ok());
  auto r = Drain(p->get());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("cache_max_bytes=600"), std::string_view::npos) << r.status().ToString();
  // Sticky.
  Batch b;
  EXPECT_EQ((*p)->Next(&b).status().code(), StatusCode::kResourceExhausted);
}

TEST(WarningsTest, BadOrders) {
  PipelineOptions o = Quiet();
  EXPECT_TRUE(PipelineOrderWarnings(o).empty());
  o.cache = "memory";
  o.epochs = 3;
  o.order = "interleave,repeat,cache,shuffle,batch,parse,prefetch";
  auto w = PipelineOrderWarnings(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("cache after repeat"), std::string::npos);
  o = Quiet();
  o.shuffle_buffer_size = 1;
  w = PipelineOrderWarnings(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("shuffle_buffer_size 1 shuffles nothing"), std::string::npos);
  o.order = "interleave,batch,shuffle,parse,repeat,prefetch";
  w = PipelineOrderWarnings(o);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("shuffle after batch with a buffer <= 1"), std::string::npos);
  // Create returns them too; cache after repeat actually grows across epochs.
  UnevenFiles u;
  o = Quiet();
  o.cache = "memory";
  o.epochs = 2;
  o.order = "interleave,repeat,cache,batch,parse,prefetch";
  auto p = Pipeline::Create(u.files, SmallReader(), o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->warnings().size(), 1u);
  auto got = Drain(p->get());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 76u);
  EXPECT_EQ((*p)->stats().cache_records, 76u);
  // Invalid orders.
  o.order = "interleave,parse,batch";
  EXPECT_EQ(ValidatePipelineOptions(o).code(), StatusCode::kInvalidArgument);
  o.order = "batch,interleave,parse";
  EXPECT_EQ(ValidatePipelineOptions(o).code(), StatusCode::kInvalidArgument);
  o.order = "interleave,batch,parse,prefetch,repeat";
  EXPECT_NE(ValidatePipelineOptions(o).message().find("prefetch must be the last stage"), std::string_view::npos);
  o = Quiet();
  o.order = "interleave,batch,parse";
  o.shuffle_buffer_size = 10;
  EXPECT_NE(ValidatePipelineOptions(o).message().find("'shuffle' is not in the order"), std::string_view::npos);
}

TEST(OptionsTest, ConfigNames) {
  PipelineOptions o;
  ASSERT_TRUE(SetPipelineOption(&o, "num-parallel-reads", "4").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "num_parallel_calls", "3").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "shuffle_buffer_size", "10000").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "reshuffle_each_iteration", "false").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "batch_size", "256").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "drop_remainder", "true").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "prefetch_buffer_size", "8").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "cache", "memory").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "cache_max_bytes", "1000").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "num_shards", "2").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "shard_index", "1").ok());
  ASSERT_TRUE(SetPipelineOption(&o, "epochs", "-1").ok());
  EXPECT_EQ(o.num_parallel_reads, 4);
  EXPECT_EQ(o.num_parallel_calls, 3);
  EXPECT_EQ(o.shuffle_buffer_size, 10000);
  EXPECT_FALSE(o.reshuffle_each_iteration);
  EXPECT_EQ(o.batch_size, 256);
  EXPECT_TRUE(o.drop_remainder);
  EXPECT_EQ(o.prefetch_buffer_size, 8);
  EXPECT_EQ(o.cache, "memory");
  EXPECT_EQ(o.cache_max_bytes, 1000u);
  EXPECT_EQ(o.shard_index, 1);
  EXPECT_EQ(o.epochs, -1);
  EXPECT_TRUE(ValidatePipelineOptions(o).ok());
  EXPECT_EQ(SetPipelineOption(&o, "batch_size", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_NE(SetPipelineOption(&o, "bogus", "1").message().find("unknown pipeline option 'bogus'"),
            std::string_view::npos);
  // PipelineOptionNames (the Python Pipeline checks names against it) is what SetPipelineOption takes.
  ASSERT_EQ(PipelineOptionNames().size(), 17u);
  for (const std::string& n : PipelineOptionNames()) {
    PipelineOptions p;
    EXPECT_TRUE(SetPipelineOption(&p, n, "1").ok()) << n;
  }
  EXPECT_NE(SetPipelineOption(&o, "bogus", "1").message().find("(expected num_parallel_reads, deterministic,"),
            std::string_view::npos);
}

TEST(ErrorTest, ParseErrorNamesFileAndLine) {
  TempDir d;
  std::string bytes = LibSvmLines(0, 4) + "1 5:1 abc 2:1\n" + LibSvmLines(10, 20);
  WriteFile(d / "bad.libsvm", bytes);
  PipelineOptions o = Quiet();
  o.num_parallel_calls = 2;
  auto p = Pipeline::Create({d / "bad.libsvm"}, SmallReader(), o);
  ASSERT_TRUE(p.ok());
  auto r = Drain(p->get());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(d / "bad.libsvm:5:"), std::string_view::npos) << r.status().ToString();
  // TFRecord: a corrupt payload names the file, record index and offset.
  std::string t = TFRecordBytes(0, 3);
  io::AppendTFRecord(&t, "\xff\xff");
  WriteFile(d / "bad.tfrecord", t);
  auto q = Pipeline::Create({d / "bad.tfrecord"}, SmallReader(), o);
  ASSERT_TRUE(q.ok());
  auto e = Drain(q->get());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(d / "bad.tfrecord: record 3 at offset "), std::string_view::npos)
      << e.status().ToString();
  auto missing = Pipeline::Create({d / "nope.libsvm"}, SmallReader(), o);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// trial/10: with shuffling, the reported parse error is the first bad line in
// file order, whatever the seed, the number of parse threads or the input kind.
TEST(ErrorTest, FirstBadLineInFileOrderWhateverTheShuffle) {
  TempDir d;
  // Bad lines at 600, 900 and 1700: past the reader's in-order probe of the
  // first records, so the shuffled parse meets them in random order.
  std::string bytes;
  for (int64_t line = 1; line <= 2000; ++line)
    bytes += (line == 600 || line == 900 || line == 1700) ? "1 5:1 abc 2:1\n" : LibSvmLines(line, 1);
  WriteFile(d / "late.libsvm", bytes);
  // Every line bad (a wrong field size).
  std::string all_bad;
  for (int i = 0; i < 3000; ++i) all_bad += "1 1:1 2:1\n";
  WriteFile(d / "all_bad.libsvm", all_bad);
  for (uint64_t seed : {1u, 5u, 991u}) {
    for (int32_t calls : {1, 3}) {
      PipelineOptions o = Quiet();
      o.shuffle_buffer_size = 10000;
      o.shuffle_seed = seed;
      o.batch_size = 64;
      o.num_parallel_calls = calls;
      auto p = Pipeline::Create({d / "late.libsvm"}, SmallReader(), o);
      ASSERT_TRUE(p.ok());
      auto e = Drain(p->get());
      ASSERT_FALSE(e.ok());
      EXPECT_EQ(std::string(e.status().message()), d / "late.libsvm:600:7: expected 'id:value', found 'abc'")
          << "seed " << seed << " calls " << calls;
      auto q = Pipeline::Create({d / "all_bad.libsvm"}, SmallReader(), o);
      ASSERT_TRUE(q.ok());
      auto f = Drain(q->get());
      ASSERT_FALSE(f.ok());
      EXPECT_EQ(std::string(f.status().message()), d / "all_bad.libsvm:1:10: expected 3 'id:value' pairs, found 2 (if every line has 2 pairs, pass --field-size 2; lines with a varying number of pairs: give a --feature-spec with a field map, docs/feature-spec.md)")
          << "seed " << seed << " calls " << calls;
    }
  }
  // Two files read in parallel: the earlier file in the list wins, even when
  // its bad line comes later than the other file's.
  std::string a, b;
  for (int64_t line = 1; line <= 1000; ++line) {
    a += line == 800 ? "1 x:1 1:1 2:1\n" : LibSvmLines(line, 1);
    b += line == 400 ? "1 y:1 1:1 2:1\n" : LibSvmLines(line, 1);
  }
  WriteFile(d / "a.libsvm", a);
  WriteFile(d / "b.libsvm", b);
  for (uint64_t seed : {2u, 3u}) {
    PipelineOptions o = Quiet();
    o.num_parallel_reads = 2;
    o.shuffle_buffer_size = 5000;
    o.shuffle_seed = seed;
    o.batch_size = 32;
    auto p = Pipeline::Create({d / "a.libsvm", d / "b.libsvm"}, SmallReader(), o);
    ASSERT_TRUE(p.ok());
    auto e = Drain(p->get());
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().message().substr(0, (d / "a.libsvm:800:3:").size()), d / "a.libsvm:800:3:")
        << e.status().ToString();
  }
}

// A writer thread that writes `bytes` into a FIFO (opening blocks until the reader opens).
std::thread FifoWriter(const std::string& path, std::string bytes) {
  return std::thread([path, bytes] {
    int fd = open(path.c_str(), O_WRONLY);
    if (fd < 0) return;
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = write(fd, bytes.data() + off, std::min<size_t>(bytes.size() - off, 4096));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  });
}

// The same through a FIFO (a stream: cannot be re-read, the in-order probe of
// the first records still names line 1).
TEST(ErrorTest, AllBadLinesThroughFifoNameLineOne) {
  TempDir d;
  const std::string fifo = d / "in.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string all_bad;
  for (int i = 0; i < 3000; ++i) all_bad += "1 1:1 2:1\n";
  std::thread w = FifoWriter(fifo, all_bad);
  PipelineOptions o = Quiet();
  o.shuffle_buffer_size = 10000;
  o.shuffle_seed = 5;
  auto p = Pipeline::Create({fifo}, SmallReader(), o);
  ASSERT_TRUE(p.ok());
  auto e = Drain(p->get());
  p->reset();
  w.join();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(std::string(e.status().message()), fifo + ":1:10: expected 3 'id:value' pairs, found 2 (if every line has 2 pairs, pass --field-size 2; lines with a varying number of pairs: give a --feature-spec with a field map, docs/feature-spec.md)");
}


TEST(PipeModeTest, FifoGivesTheSameRecordsAsTheFile) {
  TempDir d;
  for (bool tfrecord : {false, true}) {
    const std::string bytes = tfrecord ? TFRecordBytes(0, 300) : LibSvmLines(0, 300);
    const std::string fifo = d / (tfrecord ? "in.tfrecord" : "in.libsvm");
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::thread w = FifoWriter(fifo, bytes);
    PipelineOptions o = Quiet();
    o.batch_size = 32;
    EXPECT_EQ(RunAll({fifo}, o), Iota(0, 300));
    w.join();
  }
}

TEST(PipeModeTest, StdinPipeWithCacheReplaysEpochs) {
  const std::string bytes = LibSvmLines(0, 500);
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fds[2];
    if (pipe(fds) != 0 || dup2(fds[0], 0) < 0) _exit(2);
    close(fds[0]);
    std::thread w([&] {
      size_t off = 0;
      while (off < bytes.size()) {
        ssize_t n = write(fds[1], bytes.data() + off, bytes.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      close(fds[1]);
    });
    // Every object (pipeline threads included) is gone before _exit.
    auto check = [&]() -> int {
      PipelineOptions o = Quiet();
      o.epochs = 2;
      // Without a cache stdin cannot be repeated.
      auto bad = Pipeline::Create({"-"}, SmallReader(), o);
      if (bad.ok() || bad.status().code() != StatusCode::kFailedPrecondition) return 3;
      o.cache = "memory";
      auto p = Pipeline::Create({"-"}, SmallReader(), o);
      if (!p.ok()) return 4;
      auto u = Drain(p->get());
      std::vector<int64_t> want = Iota(0, 500);
      want.insert(want.end(), want.begin(), want.end());
      if (!u.ok()) return 5;
      return *u == want ? 0 : 6;
    };
    const int code = check();
    w.join();
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(PipeModeTest, SageMakerChannelOneFifoPerEpoch) {
  TempDir d;
  ASSERT_EQ(mkfifo((d / "train_0").c_str(), 0600), 0);
  std::thread w0 = FifoWriter(d / "train_0", LibSvmLines(0, 100));
  // train_1 appears later, while epoch 0 is read.
  std::thread w1([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (mkfifo((d / "train_1").c_str(), 0600) != 0) return;
    FifoWriter(d / "train_1", LibSvmLines(1000, 70)).join();
  });
  PipelineOptions o = Quiet();
  o.epochs = 2;
  o.batch_size = 16;
  o.pipe_timeout_ms = 10000;
  std::vector<int64_t> want = Iota(0, 100);
  for (int64_t x : Iota(1000, 70)) want.push_back(x);
  EXPECT_EQ(RunAll({"pipe:" + d / "train"}, o), want);
  w0.join();
  w1.join();
  // A missing epoch FIFO: DeadlineExceeded naming the path.
  o.epochs = 1;
  o.pipe_timeout_ms = 100;
  auto p = Pipeline::Create({"pipe:" + d / "valid"}, SmallReader(), o);
  ASSERT_TRUE(p.ok());
  auto r = Drain(p->get());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find(d / "valid_0 did not appear within 100 ms"), std::string_view::npos)
      << r.status().ToString();
}

TEST(ShutdownTest, EarlyStopAndWriterlessFifoDoNotHang) {
  TempDir d;
  WriteFile(d / "big.libsvm", LibSvmLines(0, 50000));
  PipelineOptions o = Quiet();
  o.num_parallel_reads = 2;
  o.num_parallel_calls = 2;
  o.shuffle_buffer_size = 100;
  o.epochs = -1;
  {
    auto p = Pipeline::Create({d / "big.libsvm"}, SmallReader(), o);
    ASSERT_TRUE(p.ok());
    Batch b;
    ASSERT_TRUE(*(*p)->Next(&b));
  }  // destroyed mid-stream
  ASSERT_EQ(mkfifo((d / "idle").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto p = Pipeline::Create({d / "idle"}, SmallReader(), Quiet());
    ASSERT_TRUE(p.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }  // no writer ever connects
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST(BoundsTest, SlowConsumerKeepsEveryBufferWithinItsBound) {
  TempDir d;
  WriteFile(d / "a.libsvm", LibSvmLines(0, 60000));
  WriteFile(d / "b.libsvm", LibSvmLines(100000, 60000));
  PipelineOptions o = Quiet();
  o.batch_size = 64;
  o.num_parallel_reads = 2;
  o.num_parallel_calls = 2;
  o.prefetch_buffer_size = 3;
  o.shuffle_buffer_size = 500;
  o.read_chunk_records = 128;
  o.queue_chunks = 2;
  o.epochs = 3;
  auto p = Pipeline::Create({d / "a.libsvm", d / "b.libsvm"}, SmallReader(), o);
  ASSERT_TRUE(p.ok());
  Batch b;
  uint64_t rows = 0;
  for (int i = 0; i < 40; ++i) {  // slow: the producers fill every queue and must block
    ASSERT_TRUE(*(*p)->Next(&b));
    rows += b.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  while (*(*p)->Next(&b)) rows += b.size();
  EXPECT_EQ(rows, 3 * 120000u);
  PipelineStats s = (*p)->stats();
  EXPECT_EQ(s.records, 3 * 120000u);
  EXPECT_LE(s.shuffle_buffer_max, 500u);
  ASSERT_EQ(s.queues.size(), 4u);  // read[0], read[1], parse, prefetch
  for (const QueueStats& q : s.queues) {
    EXPECT_LE(q.max_items, q.capacity) << q.name;
    EXPECT_GE(q.average_fill, 0.0);
    EXPECT_LE(q.average_fill, 1.0);
    if (q.name.starts_with("read")) {
      EXPECT_EQ(q.capacity, 2u);
      // 2 chunks of <= 128 records (each line < 40 bytes + 48 bytes bookkeeping).
      EXPECT_LE(q.max_bytes, 2u * 128 * (40 + 48)) << q.name;
    }
    if (q.name == "prefetch") {
      EXPECT_EQ(q.capacity, 3u);
      EXPECT_EQ(q.max_items, 3u) << "a slow consumer lets the prefetch queue fill up";
      EXPECT_LE(q.max_bytes, 3u * 64 * kF * 12 + 3u * 64 * 4);
    }
  }
  EXPECT_GT(s.steps, 0u);
  EXPECT_GT(s.compute_seconds, 0.05);
}

TEST(StatsTest, InputWaitSuggestion) {
  EXPECT_EQ(InputBoundSuggestion(0.05, 1, 2), "");
  EXPECT_EQ(InputBoundSuggestion(0.31, 1, 2),
            "input-bound: input_wait_fraction 0.31; try --num-parallel-calls 2 or a larger "
            "--prefetch-buffer-size (now 2); a data service can offload parsing");
  InputWaitMeter m;
  m.BeginWait();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  m.EndWait();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  m.BeginWait();
  m.EndWait();
  EXPECT_EQ(m.steps(), 2u);
  EXPECT_GT(m.input_wait_fraction(), 0.5);
  PipelineStats s;
  m.Fill(&s, 1, 2);
  EXPECT_NE(s.suggestion.find("input-bound"), std::string::npos);
  EXPECT_NE(s.ToJson().find("\"input_wait_fraction\":"), std::string::npos);
}

}  // namespace
}  // namespace ctrain::data
