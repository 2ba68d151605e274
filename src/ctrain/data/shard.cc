#include "ctrain/data/shard.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "ctrain/data/file_list.h"
#include "ctrain/data/raw_record_reader.h"
#include "ctrain/data/record_index.h"

namespace ctrain::data {
namespace {

StatusOr<int32_t> EnvInt(const char* name, bool* present) {
  const char* v = std::getenv(name);
  *present = v != nullptr;
  if (v == nullptr) return 0;
  std::string_view s(v);
  int32_t x = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec != std::errc() || p != s.data() + s.size() || x < 0)
    return InvalidArgumentError(std::string(name) + "='" + std::string(s) + "' is not a non-negative integer");
  return x;
}

template <typename T>
std::string Join(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string_view ShardLevelName(ShardLevel level) {
  switch (level) {
    case ShardLevel::kNone: return "none";
    case ShardLevel::kFile: return "file";
    case ShardLevel::kRecord: return "record";
    case ShardLevel::kByteRange: return "byte-range";
  }
  return "?";
}

Status ValidateShardSpec(const ShardSpec& spec) {
  if (spec.num_shards < 1)
    return InvalidArgumentError("num_shards must be >= 1, got " + std::to_string(spec.num_shards));
  if (spec.index < 0 || spec.index >= spec.num_shards)
    return InvalidArgumentError("shard_index " + std::to_string(spec.index) + " is outside [0, num_shards=" +
                                std::to_string(spec.num_shards) + ")");
  return Status::OK();
}

StatusOr<ShardSpec> ShardFromEnvironment() {
  bool has_size = false, has_rank = false, has_local = false;
  CTRAIN_ASSIGN_OR_RETURN(int32_t size, EnvInt("OMPI_COMM_WORLD_SIZE", &has_size));
  CTRAIN_ASSIGN_OR_RETURN(int32_t rank, EnvInt("OMPI_COMM_WORLD_RANK", &has_rank));
  CTRAIN_ASSIGN_OR_RETURN(int32_t local, EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", &has_local));
  ShardSpec spec;
  if (!has_size && !has_rank) {
    spec.local_rank = local;
    return spec;
  }
  if (has_size != has_rank)
    return InvalidArgumentError(std::string("sharding from the environment: ") +
                                (has_size ? "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"
                                          : "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"));
  spec.num_shards = size;
  spec.index = rank;
  spec.local_rank = local;
  Status s = ValidateShardSpec(spec);
  if (!s.ok()) return s.WithContext("OMPI_COMM_WORLD_SIZE/RANK");
  return spec;
}

StatusOr<ShardPlan> PlanShards(const std::vector<std::string>& files, const ShardSpec& spec,
                               const ExampleReaderOptions& reader_options, bool count_records) {
  CTRAIN_RETURN_IF_ERROR(ValidateShardSpec(spec));
  ShardPlan plan;
  plan.spec = spec;
  const uint32_t n = static_cast<uint32_t>(spec.num_shards);
  if (n == 1) {
    plan.level = ShardLevel::kNone;
  } else if (files.size() >= n) {
    plan.level = ShardLevel::kFile;
  } else {
    plan.level = spec.byte_ranges ? ShardLevel::kByteRange : ShardLevel::kRecord;
  }
  for (uint32_t f = 0; f < files.size(); ++f)
    if (plan.level != ShardLevel::kFile || f % n == static_cast<uint32_t>(spec.index)) plan.files.push_back(f);
  if (n == 1) return plan;

  // Per-shard sizes.
  plan.shard_bytes.assign(n, 0);
  std::vector<uint64_t> file_records;
  if (count_records) {
    plan.shard_records.assign(n, 0);
    for (const std::string& f : files) {
      if (IsStreamPath(f))
        return InvalidArgumentError(f + ": cannot count the records of a stream for the shard balance check");
      CTRAIN_ASSIGN_OR_RETURN(uint64_t c, CountRecords(f, reader_options));
      file_records.push_back(c);
    }
  }
  for (uint32_t f = 0; f < files.size(); ++f) {
    const int64_t bytes = RegularFileSize(files[f]);
    if (plan.level == ShardLevel::kByteRange) {
      for (uint32_t s = 0; s < n; ++s) {
        const auto [b, e] = SplitByteRange(bytes < 0 ? 0 : static_cast<uint64_t>(bytes), static_cast<int32_t>(s),
                                           static_cast<int32_t>(n));
        if (plan.shard_bytes[s] >= 0) plan.shard_bytes[s] = bytes < 0 ? -1 : plan.shard_bytes[s] + static_cast<int64_t>(e - b);
        if (!count_records) continue;
        const RawRecordReader::SplitRange range{static_cast<int32_t>(s), static_cast<int32_t>(n)};
        CTRAIN_ASSIGN_OR_RETURN(auto reader, RawRecordReader::Open(files[f], reader_options, nullptr, &range));
        if (!reader->ranged()) {  // read whole: every n-th record (Keeps)
          const uint64_t c = file_records[f], first = (s + n - f % n) % n;
          plan.shard_records[s] += c > first ? (c - first + n - 1) / n : 0;
          continue;
        }
        std::string_view rec;
        uint64_t index = 0, offset = 0;
        for (;;) {
          CTRAIN_ASSIGN_OR_RETURN(bool more, reader->Next(&rec, &index, &offset));
          if (!more) break;
          ++plan.shard_records[s];
        }
      }
    } else if (plan.level == ShardLevel::kFile) {
      const uint32_t s = f % n;
      if (plan.shard_bytes[s] >= 0) plan.shard_bytes[s] = bytes < 0 ? -1 : plan.shard_bytes[s] + bytes;
      if (count_records) plan.shard_records[s] += file_records[f];
    } else {
      if (count_records) {
        // Records r with (f + r) % n == s.
        const uint64_t c = file_records[f];
        for (uint32_t s = 0; s < n; ++s) {
          const uint64_t first = (s + n - f % n) % n;  // smallest r with (f + r) % n == s
          plan.shard_records[s] += c > first ? (c - first + n - 1) / n : 0;
        }
      }
    }
  }
  if (plan.level == ShardLevel::kRecord)
    for (int64_t& b : plan.shard_bytes) b = -1;  // every shard reads all bytes; per-shard bytes unknown

  // Balance check.
  std::string what;
  auto uneven = [&](auto lo, auto hi, double slack) { return hi > 0 && (hi - lo) > 0.05 * hi && (hi - lo) > slack; };
  if (!plan.shard_records.empty()) {
    auto [lo, hi] = std::minmax_element(plan.shard_records.begin(), plan.shard_records.end());
    const double slack = plan.level == ShardLevel::kRecord ? static_cast<double>(files.size()) : 0.0;
    if (uneven(static_cast<double>(*lo), static_cast<double>(*hi), slack))
      what = "record counts per shard " + Join(plan.shard_records);
  } else if (plan.level == ShardLevel::kFile &&
             std::none_of(plan.shard_bytes.begin(), plan.shard_bytes.end(), [](int64_t b) { return b < 0; })) {
    auto [lo, hi] = std::minmax_element(plan.shard_bytes.begin(), plan.shard_bytes.end());
    if (uneven(static_cast<double>(*lo), static_cast<double>(*hi), 0.0))
      what = "bytes per shard " + Join(plan.shard_bytes) + " (count_shard_records gives record counts)";
  }
  if (!what.empty())
    plan.warnings.push_back("uneven shards: " + std::string(ShardLevelName(plan.level)) + "-level sharding of " +
                            std::to_string(files.size()) + " files into " + std::to_string(n) + " shards gives " +
                            what + "; in synchronous training the workers with fewer records finish the epoch "
                            "early and wait (or hang in a collective): use equal-sized files, a file count "
                            "divisible by the shard count, or drop the remainder per epoch");
  return plan;
}

}  // namespace ctrain::data
