// Sharded checkpoints: the checkpoint of a parameter-server job
// (docs/parameter-servers.md#checkpoints).
//
//   model_dir/
//     ps_checkpoint.json                  manifest, written last (atomic rename) by the chief
//     ps-shard-00000-of-00002/checkpoint  each PS's own train/checkpoint.h directory:
//     ps-shard-00000-of-00002/ckpt-N.bin    its rows of embeddings/w, embeddings/V and their
//     ps-shard-00001-of-00002/...           optimizer slots, its dense parameters and their
//                                           slots; shard 0 also the chief's BN state
//
// Manifest: {"format": "ctrain-ps-checkpoint-v1", "step", "partitioner",
// "num_shards", "feature_size", "shards": [file path per shard, relative to
// model_dir when inside it], "meta": the trainer meta (model, optimizer,
// seed, position) as a local checkpoint's}.
//
// ReadShardedCheckpoint puts the shards back together into the tensors of a
// local checkpoint (embeddings/w [feature_size], embeddings/V
// [feature_size, K], slots, dense), so `ctrain eval`, `ctrain predict` and a
// local resume load it like any other (train/trainer_state.h
// ReadTrainerCheckpoint falls back to it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/train/trainer_state.h"

namespace ctrain::train {

inline constexpr const char* kShardedManifestName = "ps_checkpoint.json";
inline constexpr const char* kShardedManifestFormat = "ctrain-ps-checkpoint-v1";
inline constexpr const char* kShardFormat = "ctrain-ps-shard-v1";

// "ps-shard-00001-of-00002".
std::string ShardDirName(int32_t shard, int32_t num_shards);

// The manifest's entry for a shard file: its path relative to model_dir
// ("ps-shard-00000-of-00002/ckpt-40.bin") when the file is inside model_dir,
// else its absolute path; both made lexically normal, so "run", "run/",
// "./run//" and an absolute model_dir give the same entry.
std::string ShardManifestEntry(const std::string& model_dir, const std::string& shard_file);

// Whether a shard file's tensor is rows of the id-keyed tables (embeddings/w,
// embeddings/V and their slots "embeddings/w/<slot>", split by the
// partitioner); the others (dense parameters, their slots, BN state) are whole.
bool IsShardTableTensor(const std::string& name);

// Writes model_dir/ps_checkpoint.json atomically. Errors: the file's (path named).
Status WriteShardedManifest(const std::string& model_dir, const nlohmann::json& manifest);

// A manifest as read, its shard entries resolved to paths a process can open.
struct ShardedManifest {
  std::string path;              // model_dir/ps_checkpoint.json
  int64_t step = 0;
  std::string partitioner;       // "fixed_size" | "mod" (checked)
  int32_t num_shards = 0;        // >= 1, == shard_files.size()
  int64_t feature_size = 0;
  std::vector<std::string> shard_files;  // shard s's file: model_dir/<entry> for a relative entry
  nlohmann::json meta;           // the trainer meta (an object)
};

// model_dir's manifest; nullopt when there is none. Errors: DataLoss naming the
// manifest for unreadable JSON, another format, a missing or mistyped key, a
// shard count that is not the number of files, an unknown partitioner; the
// file's read errors. Does not open the shard files.
StatusOr<std::optional<ShardedManifest>> ReadShardedManifest(const std::string& model_dir);

// The assembled checkpoint of model_dir's manifest; nullopt when there is no manifest.
// Errors: DataLoss for a malformed manifest or a shard file whose meta names
// another shard, partitioner or shard count; the shard files' LoadCheckpoint
// errors (NotFound, DataLoss naming file and offset); InvalidArgument for a
// shard tensor whose rows differ from what the partitioner assigns.
StatusOr<std::optional<LoadedCheckpoint>> ReadShardedCheckpoint(const std::string& model_dir);

}  // namespace ctrain::train
