#include "ctrain/train/partitioner.h"

namespace ctrain::train {

StatusOr<Partitioner> Partitioner::Create(std::string_view name, int64_t rows, int32_t num_shards) {
  Kind kind;
  if (name == "fixed_size")
    kind = Kind::kFixedSize;
  else if (name == "mod")
    kind = Kind::kMod;
  else
    return InvalidArgumentError("unknown partitioner '" + std::string(name) + "' (use fixed_size or mod)");
  if (num_shards < 1) return InvalidArgumentError("partitioner: num_shards " + std::to_string(num_shards) + " must be >= 1");
  if (rows < num_shards)
    return InvalidArgumentError("partitioner: " + std::to_string(rows) + " rows cannot fill " +
                                std::to_string(num_shards) + " shards (every shard needs a row)");
  return Partitioner(kind, rows, num_shards);
}

}  // namespace ctrain::train
