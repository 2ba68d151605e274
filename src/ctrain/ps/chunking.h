// Pulls and pushes larger than one message (docs/parameter-servers.md#message-size).
//
// Servers and workers share one message size limit: `ctrain ps
// --max-message-bytes` (what the server's gRPC sends and accepts; announced in
// InitResponse.max_message_bytes) and `ctrain train --ps-max-message-bytes` (the
// worker's own); a worker uses the smaller of its own and each server's. A
// Pull or Push of more rows than fit is split into chunks of consecutive rows:
//   Pull  one request per chunk (each chunk reads the rows as they are then;
//         the step's version is the oldest chunk's);
//   Push  num_chunks requests sharing a push_id; the shard stages chunks
//         0 .. n-2 (PushAssembler) and applies the whole push as ONE update when
//         chunk n-1 arrives, so the global step, sync rounds and staleness see
//         one push, as without chunks. A chunk that does not continue its
//         worker's staged push (a server restarted between chunks) is answered
//         `resend`: the worker sends the push again from chunk 0.
// The dense parameters (Pull) and their gradients (Push) travel whole in chunk
// 0; a model whose Init message (every dense parameter) does not fit is
// refused at Init, naming both options.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ctrain/base/mutex.h"
#include "ctrain/base/status.h"
#include "ctrain/ps/parameter_server.pb.h"

namespace ctrain::ps {

// 64 MiB: gRPC's own default is 4 MiB; a step of 256 examples x 39 fields x (1 + 64) floats is 2.6 MB.
inline constexpr int64_t kDefaultMaxMessageBytes = int64_t{64} << 20;
inline constexpr int64_t kMinMessageBytes = int64_t{64} << 10;
inline constexpr int64_t kMaxMessageBytes = (int64_t{1} << 31) - 1;  // gRPC's int limit
// What a chunk holds besides its rows: field tags and lengths, the scalars, the shard's life.
inline constexpr int64_t kChunkOverheadBytes = 4096;

// InvalidArgument naming `flag` unless kMinMessageBytes <= bytes <= kMaxMessageBytes.
Status CheckMaxMessageBytes(int64_t bytes, const std::string& flag);

// Bytes one row takes in a Pull or Push message at most: its id (a varint, <= 10 bytes) and its
// floats, 4 bytes each: 1 + K (w and V), times 1 + the optimizer's slots in an export.
inline int64_t RowBytes(int64_t floats_per_row) { return 10 + 4 * floats_per_row; }

// How many rows of `floats_per_row` floats fit in a message of `limit` bytes that also carries
// `extra` bytes (the dense parameters or their gradients; each tensor counted with 16 bytes of
// framing). 0 when none do.
int64_t RowsPerChunk(int64_t limit, int64_t floats_per_row, int64_t extra);

// The chunk boundaries of n rows: chunk c covers rows [bounds[c], bounds[c + 1]); chunk 0 also
// carries `extra` bytes. At least one chunk (of 0 rows when n = 0). REQUIRES:
// RowsPerChunk(limit, floats_per_row, 0) > 0.
std::vector<int64_t> ChunkBounds(int64_t n, int64_t limit, int64_t floats_per_row, int64_t extra);

// The server's side: stages the chunks of each worker's push until the last arrives.
// Thread safety: thread-safe.
class PushAssembler {
 public:
  enum class Result {
    kStaged,    // a chunk before the last, kept
    kComplete,  // *whole is the entire push
    kResend,    // this chunk does not continue the worker's staged push: dropped with it
  };
  // Adds `chunk` (num_chunks > 1; worker_index checked by the caller). On kComplete, *whole holds
  // the push (ids, w_grad, v_grad and dense_grad concatenated, scalars of chunk 0) for the usual
  // validation. Errors: InvalidArgument for a chunk index outside [0, num_chunks), a chunk whose
  // scalars (num_chunks, learning_rate, examples, pulled_version) differ from chunk 0's, ids that
  // do not follow the previous chunk's, w or V gradients in some chunks and not others, dense
  // gradients outside chunk 0; the staged push is dropped.
  StatusOr<Result> Add(proto::PushRequest&& chunk, proto::PushRequest* whole);
  // Pushes staged now (tests, status).
  int64_t staged() const;

 private:
  struct Staged {
    proto::PushRequest push;
    int32_t next = 0;     // the chunk expected next
    int64_t rows_w = 0;   // rows whose chunk carried a w gradient, and V
    int64_t rows_v = 0;
  };
  mutable Mutex mu_;
  std::map<int32_t, Staged> by_worker_ CTRAIN_GUARDED_BY(mu_);
};

}  // namespace ctrain::ps
