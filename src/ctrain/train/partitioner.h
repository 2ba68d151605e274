// Partitioner: which parameter-server shard holds each row of an embedding
// table [rows, dim], and at which local row (docs/parameter-servers.md).
//
//   fixed_size  S contiguous pieces, as TensorFlow's fixed_size_partitioner:
//               the first rows % S pieces are one row larger. Shard s holds
//               ids [first(s), first(s) + ShardRows(s)); local row = id - first(s).
//   mod         id % S (TF's embedding_lookup partition_strategy="mod");
//               local row = id / S. Spreads hot low ids (Zipf-ranked
//               vocabularies) over every shard.
//
// Either way the rows held per shard differ by at most one.
// Thread safety: immutable value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ctrain/base/status.h"

namespace ctrain::train {

class Partitioner {
 public:
  enum class Kind { kFixedSize, kMod };

  // Errors: InvalidArgument for an unknown name, num_shards < 1 or rows < num_shards.
  static StatusOr<Partitioner> Create(std::string_view name, int64_t rows, int32_t num_shards);

  int32_t ShardOf(int64_t id) const {
    if (kind_ == Kind::kMod) return static_cast<int32_t>(id % shards_);
    return id < big_ * (base_ + 1) ? static_cast<int32_t>(id / (base_ + 1))
                                   : static_cast<int32_t>(big_ + (id - big_ * (base_ + 1)) / base_);
  }
  int64_t LocalRow(int64_t id) const {
    if (kind_ == Kind::kMod) return id / shards_;
    return id - FirstRow(ShardOf(id));
  }
  int64_t GlobalId(int32_t shard, int64_t local) const {
    return kind_ == Kind::kMod ? local * shards_ + shard : FirstRow(shard) + local;
  }
  // Rows shard `shard` holds.
  int64_t ShardRows(int32_t shard) const {
    if (kind_ == Kind::kMod) return (rows_ - shard + shards_ - 1) / shards_;
    return base_ + (shard < big_ ? 1 : 0);
  }

  Kind kind() const { return kind_; }
  std::string_view name() const { return kind_ == Kind::kMod ? "mod" : "fixed_size"; }
  int64_t rows() const { return rows_; }
  int32_t num_shards() const { return static_cast<int32_t>(shards_); }

 private:
  Partitioner(Kind kind, int64_t rows, int32_t shards)
      : kind_(kind), rows_(rows), shards_(shards), base_(rows / shards), big_(rows % shards) {}
  // fixed_size: the first id of `shard`.
  int64_t FirstRow(int32_t shard) const {
    return shard < big_ ? shard * (base_ + 1) : big_ * (base_ + 1) + (shard - big_) * base_;
  }

  Kind kind_;
  int64_t rows_;
  int64_t shards_;
  int64_t base_;  // rows / shards
  int64_t big_;   // rows % shards: pieces with one more row
};

}  // namespace ctrain::train
