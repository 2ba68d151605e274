// The parts of a `mpirun -np N ctrain train` job that are settled before
// training starts (docs/distributed.md): the learning-rate scaling, per-rank
// input channels, the shard of in-memory rows, and the line that describes
// the job.
//
// Thread safety: pure functions, except CheckDistinctChannels (a collective:
// every rank calls it once, in the same place).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/dist/mpi_exchange.h"
#include "ctrain/train/dataset.h"

namespace ctrain::dist {

// Horovod's learning-rate scaling for N ranks: none (lr), linear (lr * N),
// sqrt (lr * sqrt(N)). Errors: InvalidArgument naming --lr-scaling for any
// other mode.
StatusOr<float> ScaleLearningRate(float lr, int32_t ranks, std::string_view mode);

// `path` with "{local_rank}" and "{rank}" replaced by this rank's numbers
// (e.g. pipe:/data/train_{local_rank} -> pipe:/data/train_1).
std::string ExpandRankPattern(const std::string& path, int32_t rank, int32_t local_rank);
// True when `path` holds one of those patterns: the inputs are then per rank
// already and are not sharded again.
bool HasRankPattern(const std::string& path);

// A FIFO can be read by one process only: gathers every rank's channels
// (pipe:<prefix> entries and FIFO paths of `files`, made absolute) with its
// host and refuses (FailedPrecondition, the same message on every rank) two
// ranks on one host that would read the same channel, naming both ranks and
// the channel. "-" (stdin) is refused with more than one rank: mpirun gives
// stdin to rank 0 only. Collective.
Status CheckDistinctChannels(MpiExchange& exchange, const std::vector<std::string>& files);

// Rows r of `all` with r % ranks == rank (record-level sharding of the rows in
// load order, as data/shard.h shards one file). The source paths are not kept:
// row numbers no longer match input lines.
train::Dataset ShardRows(const train::Dataset& all, int32_t ranks, int32_t rank);

// The train command's settings one rank adjusts (in: as given; out: for this rank).
struct RankSettings {
  std::vector<std::string> train;  // out: {local_rank}/{rank} expanded
  std::string cache;               // --cache: out: {rank} expanded
  float learning_rate = 0;         // in: --learning-rate; out: scaled (--lr-scaling)
  std::string lr_scaling = "none";
  int64_t lr_warmup_steps = 0;     // in: --lr-warmup-steps; out: the same
  int64_t batch_size = 0;          // per rank
  bool autotune = false;
  // Out only:
  bool per_rank_inputs = false;    // --train named the rank: not sharded again
  float lr_warmup_from = 0;        // learning_rate / N (Horovod's warmup start)
  std::string job_line;            // DescribeJob (+ the warmup)
};

// Everything a rank settles before training, in this order: refuses
// --autotune with N > 1 (FailedPrecondition), scales the learning rate
// (ScaleLearningRate's error), expands rank patterns in --train and --cache,
// checks the channels (CheckDistinctChannels; collective), and refuses a
// --cache file without {rank} with N > 1 (InvalidArgument).
Status SetUpRank(MpiExchange& exchange, RankSettings* s);

// "mpirun: 2 ranks on 1 host x batch 256 = effective batch 512 per step; ..."
std::string DescribeJob(const MpiExchange& exchange, int64_t batch_size, float base_lr, float lr,
                        std::string_view lr_scaling);

// Bytes this process has written through write/send calls so far
// (/proc/self/io wchar; -1 when unreadable). With Open MPI's TCP transport
// (--mca btl self,tcp) and no other output, its growth over training is the
// bytes sent on the wire by this rank.
int64_t ProcessBytesWritten();

}  // namespace ctrain::dist
