// Streaming training input: the trainer's view of data::Pipeline
// (data/pipeline.h), one epoch at a time (docs/training.md#input-modes).
//
// Two ways to run the pipeline:
//   * Without a cache (default): one pipeline per epoch (epochs = 1). Epoch e
//     shuffles with shuffle_seed ^ Mix64(e + 1) ^ Mix64(1), which is exactly
//     the seed data::Pipeline would use for pass e of a single pipeline with
//     reshuffle_each_iteration (pipeline_stages.cc PassSeed), so the order is
//     a pure function of (seed, epoch) and an epoch can be replayed on its
//     own. A channel "pipe:<dir>/<ch>" reads the FIFO "<dir>/<ch>_<epoch>"
//     (waiting up to pipe_timeout_ms for it to appear); "-" (stdin) can only
//     be read for one epoch per run.
//   * With PipelineOptions::cache ("memory" or a file): one pipeline for all
//     epochs, so later epochs replay the cache. Its prefetch stage is left
//     out (the parse threads still work ahead) so that the pass of every
//     batch is known exactly from stats().epochs_completed.
//
// Resume: BeginEpoch(e, skip) replays epoch e (with a cache: the run from the
// first epoch) and skips the batches a checkpoint already applied. With the
// same files, seed and deterministic = true this gives the same batches as an
// uninterrupted run. A stream (stdin, FIFO, channel) cannot be replayed, so
// Create refuses a mid-epoch position over one (FailedPrecondition).
//
// Thread safety: one thread at a time (the hogwild trainer serialises calls
// with a mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/data/batch.h"
#include "ctrain/data/example_reader.h"
#include "ctrain/data/pipeline.h"

namespace ctrain::train {

// What `ctrain train` streams from.
struct StreamInput {
  // Files, globs, directories, "-" (stdin), FIFOs or "pipe:<dir>/<channel>"
  // (data/file_list.h, data/pipe_mode.h).
  std::vector<std::string> files;
  // Format, compression, field_size, id_base, feature_size, feature map
  // (a vocabulary must outlive the trainer's use of this input).
  data::ExampleReaderOptions reader;
  // Pipeline knobs. The trainer overrides batch_size (TrainOptions::batch_size),
  // epochs (see above), shuffle_seed (TrainOptions::seed) and, when
  // TrainOptions::shuffle is false, shuffle_buffer_size = 0.
  data::PipelineOptions pipeline;
};

// What a stream run trains on, for checkpoint meta ("train_inputs"): the
// expanded file list (data/file_list.h) with each regular file's absolute path
// and byte size, or for stdin, a FIFO or a pipe: channel just its name as
// given; plus num_shards and shard_index.
//   {"files": [{"path": "/abs/a.libsvm", "bytes": 1234}, {"path": "-"}],
//    "num_shards": 1, "shard_index": 0}
// Errors: ExpandFileList's (NotFound for a missing file or empty glob).
StatusOr<nlohmann::json> DescribeStreamInputs(const StreamInput& input);

// Compares a checkpoint's description (`have`) with this run's (`want`).
// Errors: FailedPrecondition "<checkpoint>: this run's training inputs differ
// from the checkpoint's: <the first difference> ..." naming the file and its
// old and new size, a file added or missing, or the shard.
Status CheckSameStreamInputs(const nlohmann::json& have, const nlohmann::json& want, const std::string& checkpoint);

// FailedPrecondition-free checks that an input can give examples at all:
// InvalidArgument "no examples in <file>, <file> (0-byte files)" naming every
// regular file of `inputs` (DescribeStreamInputs) that holds 0 bytes.
Status CheckNoEmptyFiles(const nlohmann::json& inputs);

// The error for an epoch that delivered no batch, naming the inputs and the
// reason from the pass's stats: nothing read ("no examples in ... (epoch E
// read 0 records)"), --drop-remainder dropping every record (the batch size
// is larger than the epoch), or the shard receiving none of the records.
// With several shards, the shard's own inputs are named (stats.inputs).
// `kept`: appended when an earlier epoch was trained (e.g. "; training
// stopped there: the checkpoint of step 8 in m stays"); empty = nothing was
// trained and no checkpoint written.
Status EmptyEpochError(const StreamInput& input, int64_t epoch, int64_t batch_size, const data::PipelineStats& stats,
                       const std::string& kept = "");

// InvalidArgument "no examples in <input>, <input> (epoch E read no records
// from them; K of N inputs are empty)" for every input the epoch read to its
// end that held no record (stats.inputs), although others did.
Status CheckEveryInputGaveRecords(const data::PipelineStats& stats, int64_t epoch);

// Where TrainStream takes its batches from, one epoch at a time: the local
// pipeline (EpochBatchSource below) or a remote one (the data service client,
// dataservice/client.h). Thread safety: one thread at a time.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Starts epoch `epoch`. `skip`: batches of it a checkpoint already applied
  // (sources with a Cursor() resume from the cursor instead).
  virtual Status BeginEpoch(int64_t epoch, int64_t skip) = 0;
  // The next batch of the current epoch; false at its end. Errors are sticky.
  virtual StatusOr<bool> Next(data::Batch* batch) = 0;
  // Records of the current epoch delivered so far.
  virtual int64_t epoch_records() const = 0;
  // Stats of the current epoch's pipeline (inputs as opened, records, waits).
  virtual data::PipelineStats stats() const = 0;
  // The inputs for checkpoint meta "train_inputs" (DescribeStreamInputs' shape).
  virtual StatusOr<nlohmann::json> DescribeInputs() const = 0;
  // The position of the batches delivered so far, saved in checkpoint meta
  // "data_cursor" and handed back on resume; null when (epoch, batch) is enough.
  virtual nlohmann::json Cursor() const { return nullptr; }
  // Training ended (successfully): release what the source holds remotely.
  virtual Status Finish() { return Status::OK(); }
  // Figures for --metrics-json ("input_source"); null = none.
  virtual nlohmann::json Metrics() const { return nullptr; }
};

// What a BatchSourceFactory gets: the input and the position to resume at.
struct BatchSourceParams {
  const StreamInput* input = nullptr;
  int64_t batch_size = 0;
  int32_t epochs = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t start_epoch = 0, start_batch = 0;
  nlohmann::json cursor;  // the checkpoint's "data_cursor" (null if none)
};
using BatchSourceFactory = std::function<StatusOr<std::unique_ptr<BatchSource>>(const BatchSourceParams&)>;

class EpochBatchSource : public BatchSource {
 public:
  // `start_epoch`/`start_batch`: the position training resumes at.
  // Errors: FailedPrecondition for stdin with epochs > 1 and no cache, and for
  // a mid-epoch position (or, with a cache, a position past the first epoch)
  // over a stream input; InvalidArgument from ValidatePipelineOptions.
  static StatusOr<std::unique_ptr<EpochBatchSource>> Create(const StreamInput& input, int64_t batch_size,
                                                            int32_t epochs, uint64_t seed, bool shuffle,
                                                            int64_t start_epoch, int64_t start_batch);

  // Starts epoch `epoch` and skips its first `skip` batches (counted in
  // epoch_records()). Errors: the pipeline's; FailedPrecondition when the
  // input ends before the position (different data than the checkpoint's).
  Status BeginEpoch(int64_t epoch, int64_t skip) override;
  // The next batch of the current epoch (moved into *batch, whose buffers are
  // recycled); false at the end of the epoch. Errors: the pipeline's (sticky).
  StatusOr<bool> Next(data::Batch* batch) override;

  // Records of the current epoch delivered so far, skipped ones included.
  int64_t epoch_records() const override { return epoch_records_; }
  // Stats of the current pipeline (one epoch's, or all epochs' with a cache).
  data::PipelineStats stats() const override;
  StatusOr<nlohmann::json> DescribeInputs() const override { return DescribeStreamInputs(input_); }
  bool cached() const { return cached_; }
  bool is_stream() const { return stream_; }

 private:
  EpochBatchSource() = default;
  StatusOr<bool> Fetch(data::Batch* batch, int64_t* pass);

  StreamInput input_;
  int32_t epochs_ = 1;
  uint64_t seed_ = 0;
  bool cached_ = false, stream_ = false, stdin_read_ = false;
  std::unique_ptr<data::Pipeline> pipe_;
  int64_t epoch_ = -1;
  int64_t epoch_records_ = 0;
  data::Batch pending_, scratch_;  // cache mode: the first batch of the next pass
  bool has_pending_ = false;
  int64_t pending_pass_ = 0;
};

}  // namespace ctrain::train
