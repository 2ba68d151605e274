// Incremental checkpoints of a keyed embedding table (TrainOptions::
// incremental_checkpoints, docs/checkpoint.md#incremental-checkpoints).
//
// A full checkpoint holds every live key (docs/checkpoint.md#keyed-tables).
// An incremental one is an ordinary checkpoint file whose meta
// "keyed_delta" = {"base": "ckpt-<B>.bin", "base_step": B, "index": i} names
// the full checkpoint it extends, and whose keyed tensors hold only what
// changed since that full one:
//   embeddings/keys, key_rows, key_last_step, the rows and their slots   the keys read or made since
//   embeddings/evicted_keys                                              the keys evicted since
// Everything else (dense parameters and slots, BN state, the numeric rows,
// admission counters, the meta) is whole. Deltas are cumulative: restoring
// needs the base and the latest delta only; each delta is CRC-checked as any
// checkpoint file, and the checkpoint index keeps each kept delta's base
// (CheckpointOptions::base).
//
// Thread safety: pure functions.
#pragma once

#include "ctrain/base/status.h"
#include "ctrain/train/checkpoint.h"

namespace ctrain::train {

// The name of the evicted-keys tensor of an incremental checkpoint.
inline constexpr char kEvictedKeysTensor[] = "embeddings/evicted_keys";
// In a composed checkpoint: the delta's own changed keys (its evicted keys keep their name).
inline constexpr char kDeltaKeysTensor[] = "embeddings/delta_keys";

// The 1-D int64 tensor `name` of `c` (the keyed tables' index tensors), or
// nullptr when it is missing or of another dtype or rank.
const std::vector<int64_t>* FindI64Tensor(const Checkpoint& c, const char* name);

// True when `meta` is an incremental checkpoint's.
bool IsKeyedDelta(const nlohmann::json& meta);

// The full checkpoint equal to `base` + `delta`: the base's keys minus the
// evicted ones, then the delta's keys with their rows (new or replacing),
// sorted by key; every other tensor and the meta from the delta, plus the
// delta's changed keys as kDeltaKeysTensor. The result's path is the delta's.
// Errors: DataLoss naming both files when the base is not the one the delta
// names (another step), or their tensors do not fit together (shapes, a key
// given twice, a missing table tensor).
StatusOr<Checkpoint> ComposeKeyedDelta(const Checkpoint& base, const Checkpoint& delta);

// The checkpoint at `path` (LoadCheckpoint), an incremental one composed with
// its base from the same directory.
// Errors: LoadCheckpoint's; DataLoss "<delta>: its base checkpoint <base> ..."
// when the base is missing, torn or another step.
StatusOr<Checkpoint> LoadComposedCheckpoint(const std::string& path);
// The same for a checkpoint already loaded: `ck` itself unless it is incremental.
StatusOr<Checkpoint> WithKeyedBase(Checkpoint ck);

}  // namespace ctrain::train
