// BoundedQueue<T>: the one hand-off between pipeline threads. A mutex +
// two condition variables; Push blocks while `capacity` items are queued, Pop
// blocks while none are. Close() wakes everyone: later Pushes fail, Pops drain
// what is left (Close(/*discard=*/true) drops it) and then fail.
//
// Every queue measures itself (QueueStats): the average occupancy sampled at
// each Push and Pop, and the most items / bytes ever queued (bytes as declared
// by the pusher), so tests can assert that a buffer never exceeded its bound
// and `ctrain train` can report which stage starves.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "ctrain/base/mutex.h"

namespace ctrain::data {

struct QueueStats {
  std::string name;
  uint64_t capacity = 0;      // items
  double average_fill = 0;    // mean occupancy / capacity over all samples, in [0, 1]
  uint64_t max_items = 0;     // most items ever queued (<= capacity)
  uint64_t max_bytes = 0;     // most declared bytes ever queued
  uint64_t pushes = 0;        // items that went through
};

template <typename T>
class BoundedQueue {
 public:
  // CTRAIN_REQUIRES: capacity >= 1.
  BoundedQueue(std::string name, size_t capacity) : name_(std::move(name)), capacity_(std::max<size_t>(capacity, 1)) {}
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while full. Returns false (and drops `item`) once closed.
  bool Push(T item, uint64_t bytes = 0) {
    MutexLock lock(mu_);
    lock.Wait(not_full_, [&]() CTRAIN_REQUIRES(mu_) { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.emplace_back(std::move(item), bytes);
    bytes_ += bytes;
    ++pushes_;
    max_items_ = std::max<uint64_t>(max_items_, items_.size());
    max_bytes_ = std::max(max_bytes_, bytes_);
    Sample();
    not_empty_.notify_one();
    return true;
  }

  // Blocks while empty and open. nullopt once closed and drained.
  std::optional<T> Pop() {
    MutexLock lock(mu_);
    lock.Wait(not_empty_, [&]() CTRAIN_REQUIRES(mu_) { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    Sample();
    T item = std::move(items_.front().first);
    bytes_ -= items_.front().second;
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  // Non-blocking Pop: nullopt when empty (open or closed).
  std::optional<T> TryPop() {
    MutexLock lock(mu_);
    if (items_.empty()) return std::nullopt;
    Sample();
    T item = std::move(items_.front().first);
    bytes_ -= items_.front().second;
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  void Close(bool discard = false) {
    MutexLock lock(mu_);
    closed_ = true;
    if (discard) {
      items_.clear();
      bytes_ = 0;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool closed() const {
    MutexLock lock(mu_);
    return closed_;
  }
  size_t size() const {
    MutexLock lock(mu_);
    return items_.size();
  }
  size_t capacity() const { return capacity_; }

  QueueStats stats() const {
    MutexLock lock(mu_);
    QueueStats s;
    s.name = name_;
    s.capacity = capacity_;
    s.average_fill = samples_ == 0 ? 0.0 : static_cast<double>(fill_sum_) / samples_ / capacity_;
    s.max_items = max_items_;
    s.max_bytes = max_bytes_;
    s.pushes = pushes_;
    return s;
  }

 private:
  void Sample() CTRAIN_REQUIRES(mu_) {
    fill_sum_ += items_.size();
    ++samples_;
  }

  const std::string name_;
  const size_t capacity_;
  mutable Mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<std::pair<T, uint64_t>> items_ CTRAIN_GUARDED_BY(mu_);
  uint64_t bytes_ CTRAIN_GUARDED_BY(mu_) = 0;
  bool closed_ CTRAIN_GUARDED_BY(mu_) = false;
  uint64_t fill_sum_ CTRAIN_GUARDED_BY(mu_) = 0, samples_ CTRAIN_GUARDED_BY(mu_) = 0, pushes_ CTRAIN_GUARDED_BY(mu_) = 0,
           max_items_ CTRAIN_GUARDED_BY(mu_) = 0, max_bytes_ CTRAIN_GUARDED_BY(mu_) = 0;
};

}  // namespace ctrain::data
