// ParameterTable: a sparse [rows, dim] float table (embeddings) that a trainer
// reads rows from (Pull) and sends row gradients to (Push). The interface is
// what the parameter servers implement (ps/client.h RemoteParameterTable, one
// batched call per server); LocalParameterTable keeps the table and its
// optimizer state in this process.
//
// Ids are row indices (feature ids after hashing / vocabulary lookup), valid
// in [0, rows()).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/optim/optimizer.h"
#include "ctrain/train/checkpoint.h"

namespace ctrain::train {

// Gradients of some rows: grad is [ids.size(), dim] row-major, row i belongs to
// ids[i]. For Push, ids must be strictly increasing (unique and sorted, as the
// model's SparseGrad produces them).
struct SparseRows {
  std::span<const int64_t> ids;
  const float* grad = nullptr;
  int32_t dim = 0;
};

class ParameterTable {
 public:
  virtual ~ParameterTable() = default;
  // Copies rows ids[i] into rows[i * dim() .. (i + 1) * dim()). Ids may repeat
  // and come in any order.
  // Errors: InvalidArgument for an id outside [0, rows()) (see IdRangeError).
  virtual Status Pull(std::span<const int64_t> ids, float* rows) = 0;
  // Applies the optimizer to the rows in `grad` at 1-based global step `step`.
  // Errors: InvalidArgument for a dim mismatch, ids not strictly increasing,
  // an id out of range or step < 1. Nothing is updated on error.
  virtual Status Push(const SparseRows& grad, int64_t step) = 0;
  virtual int64_t rows() const = 0;
  virtual int32_t dim() const = 0;
};

// InvalidArgument "feature id <id> out of range [0, <rows>): increase --feature-size".
Status IdRangeError(int64_t id, int64_t rows);

enum class TableConcurrency {
  // No locks: concurrent Pull/Push race on shared rows, by design (Hogwild!,
  // Recht et al. 2011). A Pull may see a row half-updated and two Pushes to
  // the same row may lose part of one update; with sparse CTR features the
  // collisions are rare and training tolerates them. Fastest.
  kHogwild,
  // Striped locks over groups of consecutive rows: each row's read or update
  // is atomic with respect to other Pull/Push calls. Pushes to different row
  // groups run in parallel.
  kLocked,
};

struct LocalTableOptions {
  TableConcurrency concurrency = TableConcurrency::kLocked;
  // kLocked: rows [k * rows_per_lock, (k + 1) * rows_per_lock) share lock
  // k % num_locks. More locks: less contention, more memory (64 B each).
  int32_t num_locks = 1024;
  int32_t rows_per_lock = 16;
  // Memory committed page by page on first write (base/lazy_alloc.h) and no
  // initial fill: the table and its slots read zero until ResetRow writes a
  // row. For tables whose rows are used sparsely (the keyed table's arena,
  // train/key_index.h).
  bool lazy = false;
};

// Owns table [rows, dim] and optimizer slots [num_slots, rows, dim], all
// 64-byte aligned. The table starts at zero (fill it through data(), e.g. with
// the model's initializer); slots start at optimizer->SlotInit(k).
//
// Thread safety: Pull and Push may be called from many threads (see
// TableConcurrency). data()/slot() give raw access with no locking: use them
// for initialisation, checkpoints and single-threaded fast paths only while no
// Push runs.
class LocalParameterTable final : public ParameterTable {
 public:
  // Errors: InvalidArgument for rows < 1, dim < 1, a null optimizer, or bad lock options.
  static StatusOr<std::unique_ptr<LocalParameterTable>> Create(std::string name, int64_t rows, int32_t dim,
                                                               std::unique_ptr<optim::Optimizer> optimizer,
                                                               const LocalTableOptions& options = {});
  ~LocalParameterTable() override;

  Status Pull(std::span<const int64_t> ids, float* rows) override;
  Status Push(const SparseRows& grad, int64_t step) override;
  int64_t rows() const override { return rows_; }
  int32_t dim() const override { return dim_; }

  const std::string& name() const { return name_; }
  const optim::Optimizer& optimizer() const { return *optimizer_; }
  optim::Optimizer& mutable_optimizer() { return *optimizer_; }  // learning-rate schedules
  // Raw [rows, dim] table and slot k's [rows, dim] table.
  float* data() { return table_; }
  const float* data() const { return table_; }
  int num_slots() const { return optimizer_->num_slots(); }
  float* slot(int k) { return slots_[k]; }
  const float* slot(int k) const { return slots_[k]; }

  // Sets row `row` to value[0, dim) (zeros when null) and its slots to their
  // SlotInit. Not synchronised: the caller owns the row (a keyed admission).
  void ResetRow(int64_t row, const float* value);

  // Tensors for SaveCheckpoint, borrowing this table's memory: "<name>" and
  // "<name>/<slot name>" (e.g. "embedding/m"), each [rows, dim] f32.
  std::vector<TensorRef> CheckpointTensors() const;
  // Copies those tensors back from a loaded checkpoint.
  // Errors: NotFound naming a missing tensor (a slot tensor is missing when the
  // optimizer changed: pass restore_slots = false to keep fresh slots);
  // InvalidArgument for a shape or dtype mismatch.
  Status Restore(const Checkpoint& ckpt, bool restore_slots = true);

 private:
  LocalParameterTable(std::string name, int64_t rows, int32_t dim, std::unique_ptr<optim::Optimizer> optimizer,
                      const LocalTableOptions& options);
  std::mutex& LockFor(int64_t id) { return locks_[(id / options_.rows_per_lock) % options_.num_locks].mu; }

  struct alignas(64) PaddedMutex {
    std::mutex mu;
  };

  std::string name_;
  int64_t rows_;
  int32_t dim_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  LocalTableOptions options_;
  float* table_ = nullptr;
  std::vector<float*> slots_;
  std::unique_ptr<PaddedMutex[]> locks_;
};

}  // namespace ctrain::train
