// Pipe mode: reading the pipeline's input from streams that can be read once
// (stdin "-", a FIFO), including SageMaker Pipe mode channels, where the
// platform creates one FIFO per epoch named "<channel>_<epoch>" (e.g.
// /opt/ml/input/data/train_0, train_1, ...) and writes that epoch's bytes into it.
//
// In a file list, "pipe:<prefix>" names a channel: read pass (epoch) N opens
// the FIFO "<prefix>_<N>", waiting for it to appear (polling every 10 ms). A
// plain FIFO path is re-opened for each pass (the writer writes the stream
// again); "-" cannot be re-read at all, so `repeat` over stdin needs `cache`
// (pipeline.h checks this at Create).
//
// One timeout (--pipe-timeout-ms, PipelineOptions::pipe_timeout_ms,
// ExampleReaderOptions::pipe_timeout_ms; default 60000 ms, 0 = no limit)
// bounds each of the three waits on a FIFO, so no input ever hangs for good:
//   1. the channel FIFO appearing,
//   2. a writer connecting to the FIFO,
//   3. the next byte from a writer that stalls mid-stream.
// Streams are opened with O_NONBLOCK and read with poll(2) in 100 ms slices
// (io::StreamWaitOptions), so a reader thread also notices cancellation
// (pipeline shutdown) and interrupts (base/signals.h) within 100 ms. While it
// waits, "ctrain: waiting for ... <fifo>" is logged after 1 s and every 5 s.
//
// Errors:
//   DeadlineExceeded "pipe mode: FIFO /x/train_1 did not appear within 5000 ms
//                     (SageMaker creates one FIFO <channel>_<epoch> per epoch)"
//   DeadlineExceeded "no writer connected to /x/train_0 within 5000 ms (pipe timeout)"
//   DeadlineExceeded "writer on /x/train_0 sent nothing for 5000 ms (after 812 bytes) (pipe timeout)"
//   Cancelled        "<path>: cancelled" when `cancel` becomes true
//   plus ErrnoError for open/read failures (NotFound, PermissionDenied, ...).
//
// Thread safety: a returned file is used by one thread at a time; `cancel`
// may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ctrain/base/status.h"
#include "ctrain/io/file.h"

namespace ctrain::data {

inline constexpr std::string_view kPipeChannelPrefix = "pipe:";
inline constexpr int64_t kDefaultPipeTimeoutMs = io::kDefaultStreamTimeoutMs;

// "<prefix>_<pass>" for a channel spec "pipe:<prefix>".
std::string ChannelFifoPath(const std::string& channel_spec, int64_t pass);

// Waits until `path` exists (any kind). DeadlineExceeded after timeout_ms
// (0 = no limit); Cancelled when `cancel` becomes true or an interrupt is pending.
Status WaitForPath(const std::string& path, int64_t timeout_ms, const std::atomic<bool>* cancel);

// Opens an input for one read pass: "-" (stdin), a FIFO or character device
// (polling reader: see the file comment), or a regular file.
StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputStream(const std::string& path,
                                                              const std::atomic<bool>* cancel,
                                                              int64_t timeout_ms = kDefaultPipeTimeoutMs);

// One read pass of any input spelling the tools accept: a file, "-", a FIFO,
// or a channel "pipe:<prefix>" (opens "<prefix>_<pass>" once it appears).
// timeout_ms bounds every wait as above. Used by inspect, convert and loaders
// that read an input once.
StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputPass(const std::string& path, int64_t pass = 0,
                                                            int64_t timeout_ms = kDefaultPipeTimeoutMs);

}  // namespace ctrain::data
