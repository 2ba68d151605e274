// MpiExchange: train::GradientExchange over MPI (Open MPI 4.1 from Debian),
// for `mpirun -np N ctrain train ...` (docs/distributed.md).
//
// Collectives: the dense gradients go through one fused MPI_Iallreduce (sum);
// sparse rows through MPI_Iallgather (counts) + two MPI_Iallgatherv (ids,
// rows); the initial state through MPI_Ibcast from rank 0. For a fixed rank
// count and message size Open MPI picks the same algorithm every time, so a
// run is bit-reproducible; the trainer merges gathered rows in rank order.
//
// Stall detection (Horovod's HOROVOD_STALL_CHECK_TIME_SECONDS /
// HOROVOD_STALL_SHUTDOWN_TIME_SECONDS): before each collective a rank sends
// an "arrived at collective #k" message to every peer (on its own
// communicator) and then polls the non-blocking collective. A collective not
// complete after stall_warning_secs prints, once, which ranks have not
// arrived (rank, host, pid) and what the waiting rank is doing; after
// stall_shutdown_secs (0 = never) it prints the same with "shutting down" and
// calls MPI_Abort, which ends every rank (mpirun exits non-zero). A rank that
// dies (kill -9) is also noticed by mpirun itself, which ends the job. A stop
// request (SIGINT/SIGTERM, `stop_flag`) while peers do not arrive returns
// Cancelled after kStopGraceSecs instead of waiting for the shutdown time.
//
// Thread safety: one thread (the trainer's driver) calls everything;
// MPI_THREAD_FUNNELED.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/train/gradient_exchange.h"

namespace ctrain::dist {

struct DistOptions {
  // Seconds a collective may wait for missing ranks before a warning naming
  // them (0 = no warning). Horovod's default: 60.
  double stall_warning_secs = 60;
  // Seconds before the job is aborted with that message (0 = never; a dead
  // rank still ends the job through mpirun).
  double stall_shutdown_secs = 0;
  // Compare parameter hashes every K steps (0 = never; a debug mode).
  int64_t check_replicas_every = 0;
};

// True when this process was started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE is set).
bool LaunchedByMpirun();

class MpiExchange final : public train::GradientExchange {
 public:
  // MPI_Init_thread, the world size/rank, every rank's host name and pid
  // (one MPI_Allgather). Call once per process. Errors: Internal when MPI
  // fails to initialise.
  static StatusOr<std::unique_ptr<MpiExchange>> Create(const DistOptions& options);
  ~MpiExchange() override;  // MPI_Finalize

  // Polled while waiting (null = never).
  void set_stop_flag(const std::atomic<int>* flag) { stop_flag_ = flag; }
  void set_check_replicas_every(int64_t k) { options_.check_replicas_every = k; }

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  int32_t local_rank() const { return local_rank_; }
  const std::string& host(int32_t r) const { return hosts_[r]; }
  std::string RankName(int32_t rank) const override;

  Status AgreeStep(bool has_data, int stop_signal, bool* all_have_data, int* any_stop_signal) override;
  Status AllreduceSum(std::span<float> data, std::string_view what) override;
  Status AllgatherRows(std::span<const int64_t> ids, std::span<const float> rows, int32_t width,
                       std::vector<int64_t>* all_ids, std::vector<float>* all_rows, std::vector<int64_t>* counts,
                       std::string_view what) override;
  Status Broadcast(std::span<std::byte> data, std::string_view what) override;
  Status AllgatherU64(uint64_t mine, std::vector<uint64_t>* all, std::string_view what) override;
  int64_t check_replicas_every() const override { return options_.check_replicas_every; }

  // Every rank's string, in rank order (MPI_Allgather of the lengths, then MPI_Allgatherv).
  Status AllgatherStrings(const std::string& mine, std::vector<std::string>* all, std::string_view what) override;

  // Prints "ctrain: error: <rank name>: <message>" and ends every rank
  // (MPI_Abort with `code`).
  [[noreturn]] void Abort(const std::string& message, int code);

  // Payload bytes this rank handed to collectives since Create, by kind
  // (sent side): the dense allreduce buffers, the sparse allgathers (row
  // counts, ids, rows), the step votes and replica hashes, and broadcasts (as
  // root). And the collectives run.
  enum Traffic { kDense, kSparse, kControl, kBroadcast, kTrafficKinds };
  int64_t payload_bytes(Traffic kind) const { return payload_bytes_[kind]; }
  int64_t collectives() const { return seq_; }
  // Seconds spent inside collectives (posting to completion, waits for peers included).
  double collective_seconds() const { return collective_seconds_; }

 private:
  MpiExchange() = default;
  struct Impl;
  // Runs one non-blocking collective started by `start` with stall detection.
  template <typename Start>
  Status Run(std::string_view what, Start&& start);

  DistOptions options_;
  int32_t rank_ = 0, size_ = 1, local_rank_ = 0;
  std::vector<std::string> hosts_;
  std::vector<int64_t> pids_;
  const std::atomic<int>* stop_flag_ = nullptr;
  uint64_t seq_ = 0;
  int64_t payload_bytes_[kTrafficKinds] = {};
  double collective_seconds_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ctrain::dist
