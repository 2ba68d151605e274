// TensorBoard event files: TFRecord-framed `tensorflow.Event` protos
// (tensorflow/core/util/event.proto, summary.proto) holding scalar summaries,
// the format tf.summary / SummaryWriter write and TensorBoard reads.
//
// Encoded by hand (no protobuf dependency), with TensorFlow's field numbers:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// A file starts with Event{wall_time, file_version: "brain.Event:2"}; every
// Write adds one Event whose summary holds the given scalars.
//
// File name: "<dir>/events.out.tfevents.<unix seconds>.<hostname>.<pid>" (TensorBoard
// loads every file whose name contains "tfevents"). Records reach the file on
// Flush (the monitor flushes after every sample), so a live TensorBoard sees them.
//
// Thread safety: one writer per thread (Monitor serialises its calls).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctrain/base/status.h"
#include "ctrain/io/tfrecord.h"

namespace ctrain::monitor {

// One scalar: a TensorBoard tag ("cpu/process_percent") and its value.
using Scalar = std::pair<std::string, double>;

// The serialized tensorflow.Event (exposed for tests).
std::string EncodeScalarEvent(double wall_time, int64_t step, const std::vector<Scalar>& scalars);
std::string EncodeFileVersionEvent(double wall_time);

class EventFileWriter {
 public:
  // Creates `dir` (and parents) and a new event file in it. Errors: the file system's, naming the path.
  static StatusOr<std::unique_ptr<EventFileWriter>> Open(const std::string& dir);
  ~EventFileWriter();

  // Appends one Event with `scalars` at `step` (wall_time in seconds since the epoch).
  Status Write(double wall_time, int64_t step, const std::vector<Scalar>& scalars);
  Status Flush();
  Status Close();
  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::unique_ptr<io::TFRecordWriter> w) : path_(std::move(path)), w_(std::move(w)) {}
  std::string path_;
  std::unique_ptr<io::TFRecordWriter> w_;
};

}  // namespace ctrain::monitor
