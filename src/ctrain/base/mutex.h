// Mutex, SharedMutex and their scoped locks, annotated for Clang's
// thread-safety analysis (base/thread_annotations.h): the lock rules of a
// class are written as CTRAIN_GUARDED_BY(mu_) on its members and CTRAIN_REQUIRES(mu_) on
// its helpers, and checked by the -Wthread-safety stage of CI.
//
//   class Queue {
//     Mutex mu_;
//     std::condition_variable cv_;
//     std::deque<int> items_ CTRAIN_GUARDED_BY(mu_);
//     void Push(int x) CTRAIN_EXCLUDES(mu_) { MutexLock l(mu_); items_.push_back(x); cv_.notify_one(); }
//     int Pop() CTRAIN_EXCLUDES(mu_) {
//       MutexLock l(mu_);
//       l.Wait(cv_, [&] { return !items_.empty(); });  // a predicate lambda: see Wait
//       ...
//
// Thread safety: these are the synchronisation primitives.
#pragma once

#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "ctrain/base/thread_annotations.h"

namespace ctrain {

class CTRAIN_CAPABILITY("mutex") Mutex {
 public:
  void lock() CTRAIN_ACQUIRE() { mu_.lock(); }
  void unlock() CTRAIN_RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class CTRAIN_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() CTRAIN_ACQUIRE() { mu_.lock(); }
  void unlock() CTRAIN_RELEASE() { mu_.unlock(); }
  void lock_shared() CTRAIN_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() CTRAIN_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` for its scope; Wait/WaitFor/WaitUntil hand it to a condition variable.
class CTRAIN_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) CTRAIN_ACQUIRE(mu) : lock_(mu.native()) {}
  ~MutexLock() CTRAIN_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // The analysis treats the mutex as held throughout (it is, whenever the
  // predicate runs). The predicate is analysed as a lambda of its own: members
  // it reads are annotated through the caller's CTRAIN_REQUIRES, not here.
  template <class Pred>
  void Wait(std::condition_variable& cv, Pred pred) CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    cv.wait(lock_, pred);
  }
  template <class Rep, class Period, class Pred>
  bool WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> d, Pred pred)
      CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_for(lock_, d, pred);
  }
  template <class Rep, class Period>
  void WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> d) CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    cv.wait_for(lock_, d);
  }
  template <class Clock, class Duration, class Pred>
  bool WaitUntil(std::condition_variable& cv, std::chrono::time_point<Clock, Duration> t, Pred pred)
      CTRAIN_NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_until(lock_, t, pred);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

class CTRAIN_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) CTRAIN_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() CTRAIN_RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class CTRAIN_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) CTRAIN_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() CTRAIN_RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace ctrain
