#include "ctrain/train/worker_pool.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

namespace ctrain::train {

namespace {

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace

WorkerPool::WorkerPool(int32_t replicas, int32_t intra_op_threads, bool affinity)
    : replicas_(replicas < 1 ? 1 : replicas), intra_(intra_op_threads < 1 ? 1 : intra_op_threads), affinity_(affinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus_.push_back(c);
  }
  if (cpus_.empty()) cpus_.push_back(0);
  for (int32_t r = 1; r < replicas_; ++r) threads_.emplace_back([this, r] { Loop(r); });
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::ConfigureThread(int32_t r) const {
  omp_set_num_threads(intra_);
  if (!affinity_) return;
  const int n = static_cast<int>(cpus_.size());
  const int base = r * intra_;
  PinTo(cpus_[base % n]);
  // Pin each OpenMP worker of this thread's team to its own CPU; libgomp keeps
  // the team's threads for later regions of the same size.
  const std::vector<int>& cpus = cpus_;
#pragma omp parallel num_threads(intra_)
  { PinTo(cpus[(base + omp_get_thread_num()) % n]); }
}

void WorkerPool::Loop(int32_t r) {
  ConfigureThread(r);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int32_t)>* job;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_start_, [&]() CTRAIN_REQUIRES(mu_) { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(r);
    {
      MutexLock lock(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

void WorkerPool::Run(const std::function<void(int32_t)>& fn) {
  if (replicas_ == 1) {
    fn(0);
    return;
  }
  {
    MutexLock lock(mu_);
    job_ = &fn;
    pending_ = replicas_ - 1;
    ++generation_;
  }
  cv_start_.notify_all();
  fn(0);
  MutexLock lock(mu_);
  lock.Wait(cv_done_, [&]() CTRAIN_REQUIRES(mu_) { return pending_ == 0; });
  job_ = nullptr;
}

}  // namespace ctrain::train
