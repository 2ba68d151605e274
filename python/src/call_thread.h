// CallThread: runs blocking C++ calls (a pipeline's Next, a data-service wait,
// training) off the Python thread that asked for them, so that this thread can
// wait with the GIL released and still see Ctrl-C.
//
// Python runs signal handlers only on the main thread, and only when it gets
// there: a thread blocked inside C++ never notices SIGINT. Run() posts the
// call to a dedicated thread and waits for it in slices of kSliceMs, taking
// the GIL between slices to call PyErr_CheckSignals(). When a handler raised
// (KeyboardInterrupt), `on_interrupt` is called (it sets the call's stop flag,
// if it has one) and:
//   * kReturnAtOnce: the Python exception propagates now; the call is still in
//     flight and the owner must call Join() before it destroys what the call
//     uses (a pipeline's Next ends when its next batch is ready);
//   * kFinishCall: Run() waits (without checking signals again) for the call
//     to end, e.g. a trainer that stops between two steps and writes its
//     checkpoint, then raises the exception.
// Thread safety: Run() and Join() from one Python thread at a time (callers
// hold the GIL when they enter).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <nanobind/nanobind.h>

#include "ctrain/base/signals.h"

namespace ctrain::python {

class CallThread {
 public:
  enum class OnInterrupt { kReturnAtOnce, kFinishCall };
  static constexpr int kSliceMs = 50;

  CallThread() : thread_([this] { Loop(); }) {}
  ~CallThread() {
    {
      std::lock_guard<std::mutex> l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CallThread(const CallThread&) = delete;
  CallThread& operator=(const CallThread&) = delete;

  // Runs `fn` on the call thread; returns when it returned. Throws
  // nb::python_error when a signal handler raised (see the file comment).
  // REQUIRES: the GIL is held; no call is in flight (Join() first).
  void Run(std::function<void()> fn, const std::function<void()>& on_interrupt = nullptr,
           OnInterrupt mode = OnInterrupt::kReturnAtOnce) {
    Post(std::move(fn));
    Wait(on_interrupt, mode);
  }

  // Starts `fn` on the call thread. REQUIRES: !busy().
  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> l(mu_);
      task_ = std::move(fn);
      busy_ = true;
    }
    cv_.notify_all();
  }

  // Waits for the posted call as Run() does (returns at once when none is in flight).
  void Wait(const std::function<void()>& on_interrupt = nullptr, OnInterrupt mode = OnInterrupt::kReturnAtOnce) {
    for (;;) {
      bool done;
      {
        nanobind::gil_scoped_release nogil;
        std::unique_lock<std::mutex> l(mu_);
        done = cv_.wait_for(l, std::chrono::milliseconds(kSliceMs), [this] { return !busy_; });
      }
      if (done) return;
      if (PyErr_CheckSignals() != 0) {
        nanobind::python_error err;  // fetches and clears the exception
        if (on_interrupt) on_interrupt();
        if (mode == OnInterrupt::kFinishCall) Join();
        throw err;
      }
    }
  }

  // Waits (GIL released) for a call left in flight by an interrupt.
  void Join() {
    nanobind::gil_scoped_release nogil;
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return !busy_; });
  }
  bool busy() const {
    std::lock_guard<std::mutex> l(mu_);
    return busy_;
  }

 private:
  void Loop() {
    // Python's handlers run on its main thread; a signal that landed here, inside a GEMM kernel, would write
    // its frame into the heap (base/signals.h).
    BlockAsyncSignalsOnThisThread();
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return quit_ || task_ != nullptr; });
      if (quit_ && task_ == nullptr) return;
      std::function<void()> fn = std::move(task_);
      task_ = nullptr;
      l.unlock();
      fn();  // must not throw (callers capture a Status)
      l.lock();
      busy_ = false;
      cv_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool busy_ = false, quit_ = false;
  std::thread thread_;  // last: started after the fields it reads
};

}  // namespace ctrain::python
