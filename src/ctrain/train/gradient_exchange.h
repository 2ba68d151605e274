// GradientExchange: the collectives a synchronous data-parallel Trainer needs
// to run as one of N ranks (Horovod's model: every rank holds a full replica,
// computes gradients on its own batch, and all ranks apply the same averaged
// update, so the replicas stay identical).
//
// train/ defines the interface; dist/ implements it over MPI
// (dist/mpi_exchange.h); cli/ wires it (Trainer::set_gradient_exchange).
// Without one, the Trainer is the single-process trainer.
//
// Contract: every rank calls the same methods in the same order with the same
// sizes (the Trainer guarantees it: one AgreeStep per step, then the
// gradient collectives). Results are identical on every rank and, for a fixed
// rank count and inputs, identical from run to run (the reduction order is
// fixed). Every call may fail with the implementation's error (Aborted when a
// peer stalled past the shutdown time, Cancelled when a stop request arrived
// while peers did not answer); after an error the exchange is unusable.
//
// Thread safety: called by the Trainer's driving thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctrain/base/status.h"

namespace ctrain::train {

class GradientExchange {
 public:
  virtual ~GradientExchange() = default;

  virtual int32_t rank() const = 0;  // in [0, size)
  virtual int32_t size() const = 0;  // >= 1
  // Rank 0 alone writes checkpoints and evaluates.
  bool is_chief() const { return rank() == 0; }
  // "rank 1 (host h, pid p)": how messages name a rank.
  virtual std::string RankName(int32_t rank) const = 0;

  // The per-step vote, before a step runs: *all_have_data = every rank has a
  // batch for this step (false ends the epoch on every rank: uneven shards
  // stop together); *stop_signal = the largest pending stop request (0 =
  // none; SIGINT/SIGTERM numbers) so all ranks stop at the same step.
  virtual Status AgreeStep(bool has_data, int stop_signal, bool* all_have_data, int* any_stop_signal) = 0;

  // In-place element-wise sum over ranks of `data` (one fused buffer; every
  // rank passes the same size). `what` names it in stall messages.
  virtual Status AllreduceSum(std::span<float> data, std::string_view what) = 0;

  // Gathers every rank's sparse rows: `ids` (n) and `rows` (n * width floats).
  // *all_ids / *all_rows hold rank 0's rows, then rank 1's, ...; counts[r] = n
  // of rank r.
  virtual Status AllgatherRows(std::span<const int64_t> ids, std::span<const float> rows, int32_t width,
                               std::vector<int64_t>* all_ids, std::vector<float>* all_rows,
                               std::vector<int64_t>* counts, std::string_view what) = 0;

  // Rank 0's bytes into every rank's `data` (same size everywhere).
  virtual Status Broadcast(std::span<std::byte> data, std::string_view what) = 0;

  // Every rank's value, in rank order.
  virtual Status AllgatherU64(uint64_t mine, std::vector<uint64_t>* all, std::string_view what) = 0;

  // Every rank's string (any length, each rank its own), in rank order.
  virtual Status AllgatherStrings(const std::string& mine, std::vector<std::string>* all, std::string_view what) = 0;

  // --check-replicas-every K: compare parameter hashes every K steps (0 = never).
  virtual int64_t check_replicas_every() const = 0;
};

}  // namespace ctrain::train
