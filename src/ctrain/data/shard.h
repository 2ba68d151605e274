// Sharding the input of a distributed job (tf.data's Dataset.shard): worker
// `index` of `num_shards` reads a disjoint part; all parts together cover every
// record exactly once.
//
//   file level    (files >= num_shards): worker i reads files i, i+n, i+2n, ...
//                 (file list order, file_list.h). No file is opened twice.
//   record level  (files < num_shards, e.g. one big file or one stream): every
//                 worker reads every file and keeps record r of file f when
//                 (f + r) % n == i (r = 0-based record index within the file).
//                 Shard sizes then differ by at most one record per file.
//   byte range    (files < num_shards, ShardSpec::byte_ranges: the data
//                 service's splits): each file is cut into num_shards byte
//                 ranges and shard i reads only the records that start in its
//                 range of each file (record_index.h): about 1/n of the bytes
//                 instead of all of them. Record counts then differ with the
//                 records' sizes, so synchronous (MPI) training keeps the
//                 record level. An input that cannot be read from a byte
//                 offset (gzip/zlib, a stream, TFRecord with
//                 skip_corrupt_records) falls back to the record-level rule
//                 for that file: every shard reads all of it.
//
// Uneven shards are reported: file-level sharding of unequal files gives
// workers different step counts, which in synchronous (allreduce) training
// makes the early finishers wait at the end of each epoch (a hang when a
// collective is skipped). PlanShards returns a warning naming the per-shard
// record counts (when counted) or byte sizes (regular files).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/data/example_reader.h"

namespace ctrain::data {

struct ShardSpec {
  int32_t num_shards = 1;  // >= 1
  int32_t index = 0;       // in [0, num_shards)
  int32_t local_rank = 0;  // rank on this host (OMPI_COMM_WORLD_LOCAL_RANK), for per-host resources
  bool byte_ranges = false;  // byte-range level instead of record level (above)
};

// From Open MPI's environment: OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK
// (and OMPI_COMM_WORLD_LOCAL_RANK). Without them: {1, 0, 0}.
// Errors: InvalidArgument naming the variable when a value is not an integer,
// when only one of SIZE/RANK is set, or when rank is outside [0, size).
StatusOr<ShardSpec> ShardFromEnvironment();

Status ValidateShardSpec(const ShardSpec& spec);

enum class ShardLevel { kNone, kFile, kRecord, kByteRange };
std::string_view ShardLevelName(ShardLevel level);

struct ShardPlan {
  ShardLevel level = ShardLevel::kNone;
  ShardSpec spec;
  std::vector<uint32_t> files;  // indices (into the input list) this shard reads, ascending
  // Per shard (size num_shards): records when counted (else empty), and bytes
  // of regular files (-1 when a stream makes it unknown).
  std::vector<uint64_t> shard_records;
  std::vector<int64_t> shard_bytes;
  std::vector<std::string> warnings;

  // Record-level filter: does record `r` of input file `f` belong to this
  // shard? At byte-range level, for the inputs read whole (the fallback above).
  bool Keeps(uint32_t f, uint64_t r) const {
    return (level != ShardLevel::kRecord && level != ShardLevel::kByteRange) ||
           (f + r) % static_cast<uint64_t>(spec.num_shards) == static_cast<uint64_t>(spec.index);
  }
};

// Plans shard `spec` over `files`. With count_records, every file is read
// once to count its records (CountRecords) so the report and the balance check
// use record counts; otherwise byte sizes of regular files are used. A shard
// is "uneven" when max and min differ by more than 5% (and more than one
// record per file at record level). Errors: ValidateShardSpec; those of
// CountRecords.
StatusOr<ShardPlan> PlanShards(const std::vector<std::string>& files, const ShardSpec& spec,
                               const ExampleReaderOptions& reader_options, bool count_records);

}  // namespace ctrain::data
