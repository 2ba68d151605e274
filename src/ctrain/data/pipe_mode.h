// Pipe mode: reading the pipeline's input from streams that can be read once
// (stdin "-", a FIFO), including SageMaker Pipe mode channels, where the
// platform creates one FIFO per epoch named "<channel>_<epoch>" (e.g.
// /opt/ml/input/data/train_0, train_1, ...) and writes that epoch's bytes into it.
//
// In a file list, "pipe:<prefix>" names a channel: read pass (epoch) N opens
// the FIFO "<prefix>_<N>", waiting for it to appear (polling every 10 ms) up
// to a timeout. A plain FIFO path is re-opened for each pass (the writer
// writes the stream again); "-" cannot be re-read at all, so `repeat` over
// stdin needs `cache` (pipeline.h checks this at Create).
//
// Streams are read with poll(2) in 100 ms slices, so a reader thread that
// waits for a writer or for bytes notices cancellation (pipeline shutdown)
// within 100 ms instead of blocking in open(2)/read(2) forever.
//
// Errors:
//   DeadlineExceeded "pipe mode: FIFO /x/train_1 did not appear within 5000 ms
//                     (SageMaker creates one FIFO <channel>_<epoch> per epoch)"
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

// "<prefix>_<pass>" for a channel spec "pipe:<prefix>".
std::string ChannelFifoPath(const std::string& channel_spec, int64_t pass);

// Waits until `path` exists (any kind). DeadlineExceeded after timeout_ms.
Status WaitForPath(const std::string& path, int64_t timeout_ms, const std::atomic<bool>* cancel);

// Opens an input for one read pass: "-" (stdin), a FIFO or character device
// (cancellable polling reader), or a regular file (io::OpenSequentialFile).
StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputStream(const std::string& path,
                                                              const std::atomic<bool>* cancel);

// One read pass of any input spelling the tools accept: a file, "-", a FIFO,
// or a channel "pipe:<prefix>" (opens "<prefix>_<pass>" once it appears,
// DeadlineExceeded after timeout_ms). Used by inspect, convert and loaders
// that read an input once.
StatusOr<std::unique_ptr<io::SequentialFile>> OpenInputPass(const std::string& path, int64_t pass = 0,
                                                            int64_t timeout_ms = 60000);

}  // namespace ctrain::data
