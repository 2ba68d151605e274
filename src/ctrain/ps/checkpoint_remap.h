// What a parameter server restores when it starts on a --model-dir
// (docs/parameter-servers.md#restarting-with-another-layout).
//
// With a manifest (model_dir/ps_checkpoint.json, train/sharded_checkpoint.h):
//   same layout (shard count and partitioner)  the shard file the manifest names
//                                              for this shard (not the newest in
//                                              its directory: the manifest's files
//                                              are the consistent set);
//   another layout                             the rows this server now owns, read
//                                              by id from every old shard file, with
//                                              their optimizer slots; the dense
//                                              parameters (and slots) placed on it
//                                              (ps/dense_placement.h); shard 0 also
//                                              the BN state; the common global step.
//   A shard file the manifest names that does not exist (file or directory), or
//   old shards saved at different global steps (asynchronous training: no one
//   step to continue from), is refused: the server never starts fresh when a
//   manifest exists.
// Without a manifest: the newest checkpoint of the server's own directory
// (ps-shard-<I>-of-<S>/), as before manifests existed; none: a fresh start,
// unless shard directories of another shard count hold checkpoints (refused:
// nothing says which of their files belong together).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/train/checkpoint.h"
#include "ctrain/train/sharded_checkpoint.h"

namespace ctrain::ps {

// A server's place in the job: shard in [0, num_shards), partitioner "fixed_size" | "mod".
struct ShardLayout {
  int32_t shard = 0;
  int32_t num_shards = 1;
  std::string partitioner = "fixed_size";
};

// The checkpoint the server at `layout` starts from; nullopt: start fresh.
// The result has a shard file's tensors and meta, in `layout`'s terms (meta
// "shard", "num_shards", "partitioner" are the server's; a remap's path is the
// manifest's). `log` gets one line for a remap.
// Errors: FailedPrecondition (through RefuseToStartFresh) naming the manifest
// and the missing file, or both layouts when no remap is possible; DataLoss for a
// malformed manifest or a shard file that is not what the manifest says (file,
// shard, shard count, partitioner, feature size, spec, global step), the files'
// LoadCheckpoint errors.
// `force` (`ctrain ps --force`): nullopt whatever the directory holds; what the
// server would have restored, or the error it would have refused with, is
// logged ("--force: starting fresh; not restoring ..."), so that every server of
// a job given --force starts fresh alike and the job's next save replaces it.
StatusOr<std::optional<train::Checkpoint>> LoadStartCheckpoint(const std::string& model_dir,
                                                               const ShardLayout& layout,
                                                               const std::function<void(const std::string&)>& log,
                                                               bool force = false);

// The rows, slots, dense parameters and state `to` owns, read from the shard
// files of `manifest` (another layout); errors as LoadStartCheckpoint's.
StatusOr<train::Checkpoint> RemapShardCheckpoint(const train::ShardedManifest& manifest, const ShardLayout& to);

// The one place a server refuses to start fresh (or to start at all) over an
// existing checkpoint it cannot use; returns FailedPrecondition(why + advice,
// --force among the advice).
Status RefuseToStartFresh(const std::string& why);

}  // namespace ctrain::ps
