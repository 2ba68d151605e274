#include "ctrain/ps/chunking.h"

#include <algorithm>

namespace ctrain::ps {

Status CheckMaxMessageBytes(int64_t bytes, const std::string& flag) {
  if (bytes < kMinMessageBytes || bytes > kMaxMessageBytes)
    return InvalidArgumentError(flag + " " + std::to_string(bytes) + " is not in [" + std::to_string(kMinMessageBytes) +
                                ", " + std::to_string(kMaxMessageBytes) + "] bytes");
  return Status::OK();
}

int64_t RowsPerChunk(int64_t limit, int64_t floats_per_row, int64_t extra) {
  const int64_t room = limit - kChunkOverheadBytes - extra;
  return room > 0 ? room / RowBytes(floats_per_row) : 0;
}

std::vector<int64_t> ChunkBounds(int64_t n, int64_t limit, int64_t floats_per_row, int64_t extra) {
  const int64_t first = std::min(n, RowsPerChunk(limit, floats_per_row, extra));
  const int64_t per = std::max<int64_t>(1, RowsPerChunk(limit, floats_per_row, 0));
  std::vector<int64_t> b{0, first};
  while (b.back() < n) b.push_back(std::min(n, b.back() + per));
  return b;
}

StatusOr<PushAssembler::Result> PushAssembler::Add(proto::PushRequest&& chunk, proto::PushRequest* whole) {
  MutexLock l(mu_);
  const int32_t worker = chunk.worker_index();
  const int32_t c = chunk.chunk(), n = chunk.num_chunks();
  const std::string where = "Push: chunk " + std::to_string(c) + " of " + std::to_string(n) + " of worker " +
                            std::to_string(worker) + "'s push";
  // The worker's staged push is dropped with a refused chunk (callers erase it first).
  auto refuse = [&](const std::string& why) {
    return InvalidArgumentError(where + " " + why + " (nothing of this push is applied)");
  };
  if (c < 0 || c >= n) {
    by_worker_.erase(worker);
    return refuse("has a chunk index outside [0, " + std::to_string(n) + ")");
  }
  const int64_t rows = chunk.ids_size();
  const bool has_w = !chunk.w_grad().empty(), has_v = !chunk.v_grad().empty();
  if (c == 0) {
    Staged& s = by_worker_[worker];  // a push left unfinished before (its worker restarted it) is replaced
    s.push = std::move(chunk);
    s.next = 1;
    s.rows_w = has_w ? rows : 0;
    s.rows_v = has_v ? rows : 0;
    return Result::kStaged;
  }
  auto it = by_worker_.find(worker);
  if (it == by_worker_.end() || it->second.push.push_id() != chunk.push_id() || it->second.next != c) {
    if (it != by_worker_.end()) by_worker_.erase(it);
    return Result::kResend;
  }
  Staged& s = it->second;
  proto::PushRequest& p = s.push;
  std::string why;
  if (n != p.num_chunks() || chunk.learning_rate() != p.learning_rate() || chunk.examples() != p.examples() ||
      chunk.pulled_version() != p.pulled_version())
    why = "differs from chunk 0 in num_chunks, learning_rate, examples or pulled_version";
  else if (chunk.dense_grad_size() != 0 || chunk.dense_delta_size() != 0 || chunk.dense_value_size() != 0 ||
           chunk.dense_slot_size() != 0 || chunk.dense_only())
    why = "carries dense gradients or values (they travel in chunk 0)";
  else if (rows > 0 && p.ids_size() > 0 && chunk.ids(0) <= p.ids(p.ids_size() - 1))
    why = "has ids that do not follow the previous chunk's (id " + std::to_string(chunk.ids(0)) + " after " +
          std::to_string(p.ids(p.ids_size() - 1)) + ")";
  // A gradient of w (V) comes with every row or none.
  else if (rows > 0 && ((has_w ? s.rows_w : p.ids_size() - s.rows_w) != p.ids_size() ||
                        (has_v ? s.rows_v : p.ids_size() - s.rows_v) != p.ids_size()))
    why = "has w or V gradients where the earlier chunks have none, or none where they have";
  if (!why.empty()) {
    by_worker_.erase(it);
    return refuse(why);
  }
  p.mutable_ids()->Add(chunk.ids().begin(), chunk.ids().end());
  p.mutable_w_grad()->append(chunk.w_grad());
  p.mutable_v_grad()->append(chunk.v_grad());
  if (has_w) s.rows_w += rows;
  if (has_v) s.rows_v += rows;
  if (++s.next < n) return Result::kStaged;
  *whole = std::move(p);
  whole->set_chunk(0);
  whole->set_num_chunks(1);
  by_worker_.erase(it);
  return Result::kComplete;
}

int64_t PushAssembler::staged() const {
  MutexLock l(mu_);
  return static_cast<int64_t>(by_worker_.size());
}

}  // namespace ctrain::ps
