// The trainer's side of the data service: a train::BatchSource that reads its
// batches from data-service workers (docs/data-service.md).
//
//   ctrain train --data-service HOST:P [--processing-mode distributed_epoch|parallel_epochs]
//                [--job-name J] [--num-splits N] [--consumer-index K] ...
//
// Create() registers the dataset with the dispatcher (it expands the files on
// its host and returns the definition the workers will read), joins the job
// (created on first use; a restarted trainer hands in its checkpointed
// cursor), and each epoch asks for splits and streams each from the worker
// the dispatcher names, up to max_open_splits at a time.
//
// Delivery is exactly once per epoch and consumer: frames carry (split, seq);
// a frame whose seq is below the next expected one is a duplicate and is
// dropped (counted); a split is acknowledged to the dispatcher only after its
// last batch was handed to the trainer and the worker's end frame agreed on
// the count. When a worker's stream breaks (the worker died, or missed its
// heartbeats), the batches it sent that the trainer has not taken are dropped
// and the split is re-read from another worker, skipping the batches already
// consumed; the split's content is a pure function of (dataset, split), so the
// trainer sees exactly the batches an unbroken stream would have given.
//
// Flow control: each stream has credits (batches the worker may send ahead);
// the decoded batches waiting in this client are bounded by max_buffer_bytes
// (plus one frame per stream: a stream with nothing ready may always have
// one batch on the way, so an ordered read never starves).
//
// Order: with `ordered` (the default; the CLI always), batches are taken
// split by split in the order the dispatcher handed the splits out, so one
// worker gives the same sequence every run (bit-identical to local training
// with --num-splits 1 or parallel_epochs); otherwise the first ready stream
// wins.
//
// Cursor (checkpoint meta "data_cursor"):
//   {"job": J, "epoch": E, "done": [units], "partial": {"unit": batches}, "examples": N}
// Thread safety: one consumer thread (BatchSource's contract).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/dataservice/data_service.pb.h"
#include "ctrain/service/channel.h"
#include "ctrain/train/stream_input.h"

namespace ctrain::dataservice {

struct DataServiceClientOptions {
  std::string dispatcher;            // HOST:PORT
  service::ChannelConfig channel;
  std::string job_name;              // "" = "job-<dataset fingerprint>-<N>splits" or "-parallel"
  proto::ProcessingMode processing_mode = proto::DISTRIBUTED_EPOCH;
  int32_t num_splits = 8;            // distributed_epoch: splits per epoch
  int32_t consumer_index = 0;        // this trainer among the job's trainers
  std::string compression = "auto";  // none | zstd | auto (zstd unless the worker is on loopback)
  int64_t max_buffer_bytes = int64_t{256} << 20;
  int32_t max_open_splits = 4;
  bool ordered = true;
  // The longest this trainer waits for the dispatcher to answer, for a live
  // worker to take a split, and for the next batch of an open stream; past it
  // the read fails with DeadlineExceeded naming what it waited for and
  // --data-service-wait-seconds. 0 = no limit.
  std::chrono::seconds wait{600};
  std::string feature_map;           // the path input.reader.vocabulary came from ("" = none)
  // A feature spec's canonical JSON (FeatureSpec::ToJson; "" = none): the workers read the files
  // through it (split_source.h) and the batches have the spec's layout (one-hot or multi-hot rows).
  std::string feature_spec;
  const std::atomic<int>* stop = nullptr;  // stop waiting (SIGINT/SIGTERM)
  std::function<void(const std::string&)> log;  // null: stderr "ctrain: data service: ..."
};

// A BatchSourceFactory for Trainer::set_batch_source_factory.
train::BatchSourceFactory MakeDataServiceSourceFactory(const DataServiceClientOptions& options);

// The source itself, for `data-service read` and tests.
StatusOr<std::unique_ptr<train::BatchSource>> CreateDataServiceSource(const DataServiceClientOptions& options,
                                                                     const train::BatchSourceParams& params);

}  // namespace ctrain::dataservice
