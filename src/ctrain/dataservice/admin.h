// Client-side operations on a running data service besides training:
// `ctrain data-service read | status | shutdown` (docs/data-service.md).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ctrain/base/status.h"
#include "ctrain/dataservice/client.h"
#include "ctrain/train/stream_input.h"

namespace ctrain::dataservice {

struct ReadResult {
  int64_t examples = 0;
  int64_t batches = 0;
  int64_t bytes = 0;      // batch wire bytes received (before any zstd)
  double seconds = 0;
  nlohmann::json metrics; // the source's Metrics()
};

// Reads `epochs` epochs of `input` through the service (a job like a
// trainer's: same dataset definition, splits, cursor-free) and writes every
// example as a LibSVM line "label id:value ..." with the ids as the model sees
// them (0-based, io/libsvm.h AppendLibSvmLine with id_base 0) to `output`
// ("-" = stdout, "" = discard: only count). `pace_us` > 0 sleeps that long
// after each batch, standing in for a trainer's step time (tests, benchmarks). Errors: the client's; the output's I/O errors.
StatusOr<ReadResult> ReadThroughService(const DataServiceClientOptions& options, const train::StreamInput& input,
                                        int64_t batch_size, uint64_t seed, bool shuffle, int32_t epochs,
                                        const std::string& output, int64_t pace_us = 0);

// The dispatcher's status document (Dispatcher::StatusJson). Errors:
// Unavailable when it does not answer within `timeout_ms`; Unauthenticated.
StatusOr<nlohmann::json> GetServiceStatus(const std::string& address, const service::ChannelConfig& channel,
                                          int64_t timeout_ms = 5000);

// The status as text: workers, jobs with their splits done / in flight /
// pending, trainers' input wait, and the advice lines.
std::string FormatServiceStatus(const nlohmann::json& status);

// Asks the dispatcher to shut the service down (workers exit, then the dispatcher).
Status ShutdownService(const std::string& address, const service::ChannelConfig& channel, int64_t timeout_ms = 5000);

}  // namespace ctrain::dataservice
