// EpochFeed: where the trainer's epoch loop (trainer_loop.cc) takes a step's
// batch from. MemoryFeed: the rows of an in-memory Dataset in each epoch's
// order (a permutation of (seed, epoch)), this process's share of the batches
// (remote_parameters.h: step i takes batch i * W + k); StreamFeed: a
// BatchSource (the local pipeline or the data service), with the stream's
// input checks. Private to the trainer.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/train/dataset.h"
#include "ctrain/train/stream_input.h"
#include "ctrain/train/trainer.h"

namespace ctrain::train {

struct Replica;

class EpochFeed {
 public:
  virtual ~EpochFeed() = default;
  // Stream mode (the input wait is measured, the epoch's size learnt at its end).
  virtual bool streamed() const = 0;
  // Starts epoch `epoch` at its batch `batch` (a resumed run).
  virtual Status BeginEpoch(int64_t epoch, int64_t batch) = 0;
  // This process's steps per epoch; 0 while unknown (a stream's first epoch).
  virtual int64_t steps_per_epoch() const = 0;
  // True when step `batch` is known to be past the epoch's end without reading.
  virtual bool EndKnown(int64_t batch) const = 0;
  // Steps left in the epoch after `batch` (int64 max when unknown): bounds a hogwild segment.
  virtual int64_t RemainingInEpoch(int64_t batch) const { return std::numeric_limits<int64_t>::max(); }
  // Synchronous step `batch`: its row count (0: an empty sync round of a
  // parameter-server worker), or -1 at the epoch's end. The rows reach the
  // replicas through Fill.
  virtual StatusOr<int64_t> Next(int64_t batch) = 0;
  // Checks the batch Next returned (stream: field_size, fixed-length rows, input statistics, its format).
  virtual Status Check() { return Status::OK(); }
  // Rows [lo, hi) of the batch Next returned into rep.batch.
  virtual void Fill(Replica& rep, int64_t lo, int64_t hi) = 0;
  // Hogwild: step `batch` into *out; false at the epoch's end. Thread-safe.
  virtual StatusOr<bool> NextInto(int64_t batch, data::Batch* out) = 0;
  // Distributed: another rank ended the epoch with step `batch` (of `rows`
  // rows) pending here: the examples this rank leaves unused.
  virtual StatusOr<int64_t> Drain(int64_t batch, int64_t rows) = 0;
  // After the epoch's last step: its checks; *rows = the epoch's records (0: unchanged).
  virtual Status EndEpoch(int64_t epoch, int64_t* rows) = 0;
  // After the last epoch.
  virtual Status EndRun() { return Status::OK(); }
};

// The feeds over a trainer's state (trainer_impl.h); `impl` outlives them.
std::unique_ptr<EpochFeed> MakeMemoryFeed(Trainer::Impl& impl, const Dataset& train);
std::unique_ptr<EpochFeed> MakeStreamFeed(Trainer::Impl& impl, const StreamInput& input, BatchSource* src,
                                          TrainResult* result);

}  // namespace ctrain::train
