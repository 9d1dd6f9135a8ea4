#include "runtime/stream.h"

#include <exception>
#include <utility>

#include "base/error.h"

namespace gradkit::rt {
namespace {
thread_local bool isWorkerThread = false;
}

Stream::Stream() : worker_([this] { workerLoop(); }) {}

Stream::~Stream() {
  close();
  // Only reachable if the last owner let go inside one of this stream's own tasks.
  if (worker_.joinable()) worker_.detach();
}

bool Stream::push(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return false;
    queue_.push_back(std::move(task));
    ++pushed_;
  }
  workReady_.notify_one();
  return true;
}

aclError Stream::drain(std::string* message) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Wait only for the work pushed so far, so that concurrent producers cannot starve this caller.
  const uint64_t target = pushed_;
  workDone_.wait(lock, [&] { return completed_ >= target; });
  const aclError error = error_;
  error_ = ACL_SUCCESS;
  if (message != nullptr) *message = std::move(errorText_);
  errorText_.clear();
  return error;
}

void Stream::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  workReady_.notify_one();
  if (worker_.joinable() && !onWorkerThread()) worker_.join();
}

bool Stream::onWorkerThread() const { return worker_.get_id() == std::this_thread::get_id(); }

bool Stream::onAnyWorkerThread() { return isWorkerThread; }

void Stream::workerLoop() {
  isWorkerThread = true;
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      workReady_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    runOne(task);
  }
}

void Stream::runOne(Task& task) {
  aclError status = ACL_SUCCESS;
  try {
    status = task ? task() : ACL_SUCCESS;
  } catch (const std::exception& e) {
    status = ACL_ERROR_RT_INTERNAL_ERROR;
    failText(status, "stream task", std::string("threw an exception: ") + e.what());
  } catch (...) {
    status = ACL_ERROR_RT_INTERNAL_ERROR;
    failText(status, "stream task", "threw an exception of unknown type");
  }
  // The task's messages live in this worker thread; keep them only when the task failed.
  std::string text = takeRecentErrors();
  task = nullptr;  // release captured state before reporting completion
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status != ACL_SUCCESS) {
      if (error_ == ACL_SUCCESS) error_ = status;
      if (text.empty()) text = "a task on the stream failed with status " + std::to_string(status);
      if (!errorText_.empty()) errorText_ += '\n';
      errorText_ += text;
    }
    ++completed_;
  }
  workDone_.notify_all();
}

}  // namespace gradkit::rt
