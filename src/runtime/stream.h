// One emulated stream: an in-order task queue run by its own worker thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/runtime.h"

namespace gradkit::rt {

/**
 * Tasks run one after another on the worker, in the order they were pushed. The first non-zero status
 * a task returns (or ACL_ERROR_RT_INTERNAL_ERROR for a task that throws) is kept as the sticky error,
 * together with the error text the task left in the worker thread, until a drain() takes it.
 */
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /** Appends `task`; false when the stream is already closed (nothing is queued then). */
  bool push(Task task);

  /**
   * Waits until every task pushed before this call has run, then returns the sticky error (0 when none)
   * and moves its text into `message`, clearing both.
   */
  aclError drain(std::string* message);

  /** Stops accepting work, runs what is queued, and joins the worker. Idempotent. */
  void close();

  /** True when called from this stream's own worker (waiting on the stream there would deadlock). */
  bool onWorkerThread() const;

  /** True on any stream's worker: calls that wait for streams (reset, finalize) would deadlock there. */
  static bool onAnyWorkerThread();

 private:
  void workerLoop();
  void runOne(Task& task);

  mutable std::mutex mutex_;
  std::condition_variable workReady_;  // worker waits: queue not empty or closing
  std::condition_variable workDone_;   // drainers wait: completed_ advanced
  std::deque<Task> queue_;
  uint64_t pushed_ = 0;     // tasks ever pushed
  uint64_t completed_ = 0;  // tasks ever finished
  bool closing_ = false;
  aclError error_ = ACL_SUCCESS;
  std::string errorText_;
  std::thread worker_;  // last member: starts after everything above is initialised
};

}  // namespace gradkit::rt
