// WorkerPool: N persistent replica threads (the caller is replica 0) that run
// one function per replica and wait for all — the thread layout behind towers
// and hogwild (train/trainer.h).
//
// Each pool thread sets its OpenMP thread count to `intra_op_threads` (OpenMP
// ICVs are per thread, so every replica's kernels and oneDNN GEMMs use that
// many threads) and, with `affinity`, pins itself and its OpenMP workers one
// per CPU to CPUs [r * intra, (r + 1) * intra) of the process's allowed set
// (wrapping around when the set is smaller). Threads persist for the pool's
// life, so their OpenMP teams are created once.
//
// Thread safety: Run() is called by one thread at a time (the owner).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "ctrain/base/mutex.h"

namespace ctrain::train {

class WorkerPool {
 public:
  WorkerPool(int32_t replicas, int32_t intra_op_threads, bool affinity);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int32_t size() const { return replicas_; }
  // Runs fn(r) for every replica r in [0, size()) concurrently (r = 0 on the
  // calling thread) and returns when all are done.
  void Run(const std::function<void(int32_t)>& fn);

  // Applies the thread settings of replica r to the calling thread (used for
  // replica 0 = the owner thread; pool threads do it themselves).
  void ConfigureThread(int32_t r) const;

 private:
  void Loop(int32_t r);

  int32_t replicas_, intra_;
  bool affinity_;
  std::vector<int> cpus_;  // allowed CPUs
  std::vector<std::thread> threads_;
  Mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(int32_t)>* job_ CTRAIN_GUARDED_BY(mu_) = nullptr;
  uint64_t generation_ CTRAIN_GUARDED_BY(mu_) = 0;
  int32_t pending_ CTRAIN_GUARDED_BY(mu_) = 0;
  bool stop_ CTRAIN_GUARDED_BY(mu_) = false;
};

}  // namespace ctrain::train
