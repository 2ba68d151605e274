// One writer per model directory: `ctrain train` holds an exclusive flock(2)
// on <model_dir>/.lock for the whole run. The kernel drops the lock when the
// process ends in any way (kill -9 included), so a lock is never stale; the
// file itself stays (deleting a lock file races with the next taker).
//
// The holder writes who it is into the file (one JSON line: pid, host,
// start time, command), so that a second training fails up front naming it:
//   FailedPrecondition "runs/a: model directory is in use by another training
//   (pid 4242 on host h1, started 2026-11-30T15:02:11Z: ctrain train ...);
//   wait for it to finish or use another --model-dir"
// eval and predict only read (the checkpoint index is replaced atomically),
// so they take no lock.
//
// Thread safety: a ModelDirLock is owned by one thread. flock locks belong to
// the open file description, so a second Acquire in the same process also
// fails while the first lock is held.
#pragma once

#include <memory>
#include <string>

#include "ctrain/base/status.h"

namespace ctrain::train {

class ModelDirLock {
 public:
  // Takes the lock on model_dir/.lock (creating the file; model_dir must
  // exist) without waiting and records the holder. `command` is shown to a
  // second taker; empty = this process's command line (/proc/self/cmdline).
  // Errors: FailedPrecondition naming the holder when another open file
  // description holds it; ErrnoError naming the lock file when it cannot be
  // created or opened for writing (a read-only model directory: EROFS/EACCES).
  // A file system without flock support (ENOLCK, EOPNOTSUPP) gets a warning on
  // stderr and an unguarded "lock".
  static StatusOr<std::unique_ptr<ModelDirLock>> Acquire(const std::string& model_dir,
                                                         const std::string& command = "");
  ~ModelDirLock();  // releases the lock
  ModelDirLock(const ModelDirLock&) = delete;
  ModelDirLock& operator=(const ModelDirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  ModelDirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

// File name of the lock inside a model directory.
inline constexpr const char* kModelDirLockName = ".lock";

}  // namespace ctrain::train
