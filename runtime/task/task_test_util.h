// Test helpers for the task system: completion latches and a manually
// signalled wait source. Test-only (uses the standard library).
#ifndef OSPREY_RUNTIME_TASK_TASK_TEST_UTIL_H_
#define OSPREY_RUNTIME_TASK_TASK_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "runtime/task/api.h"

namespace osprey::task::testing {

// Receives one completion; Wait() returns its status.
class CompletionLatch {
 public:
  Completion completion() { return Completion{&Fn, this}; }

  // Returns the completion status, or DEADLINE_EXCEEDED after |timeout|.
  Status Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
      return DeadlineExceededError("completion did not arrive");
    }
    return std::move(status_);
  }
  bool done() {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  static void Fn(void* user_data, Status status) {
    auto* self = static_cast<CompletionLatch*>(user_data);
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->status_ = std::move(status);
    self->done_ = true;
    ++self->calls_;
    self->cv_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  int calls_ = 0;
  Status status_;
};

// A wait source resolved by Signal(); counts arm and disarm calls.
class ManualWait {
 public:
  WaitSource source(const char* name = "manual") {
    WaitSource source;
    source.arm = &Arm;
    source.disarm = &Disarm;
    source.user_data = this;
    source.name = name;
    return source;
  }

  // Resolves the armed wait with |status|; returns false if none is armed.
  bool Signal(Status status = OkStatus()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!token_) {
      pending_signal_ = true;
      pending_status_ = std::move(status);
      return false;
    }
    WaitTask* token = token_;
    token_ = nullptr;
    ResolveWait(token, std::move(status));
    return true;
  }
  bool armed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return token_ != nullptr;
  }
  int arms() {
    std::lock_guard<std::mutex> lock(mutex_);
    return arms_;
  }
  int disarms() {
    std::lock_guard<std::mutex> lock(mutex_);
    return disarms_;
  }

 private:
  static Status Arm(void* user_data, WaitTask* token) {
    auto* self = static_cast<ManualWait*>(user_data);
    std::lock_guard<std::mutex> lock(self->mutex_);
    ++self->arms_;
    if (self->pending_signal_) {
      // Signalled before the wait became ready: resolve at once.
      self->pending_signal_ = false;
      ResolveWait(token, std::move(self->pending_status_));
      return OkStatus();
    }
    self->token_ = token;
    return OkStatus();
  }
  static bool Disarm(void* user_data, WaitTask* token) {
    auto* self = static_cast<ManualWait*>(user_data);
    std::lock_guard<std::mutex> lock(self->mutex_);
    ++self->disarms_;
    if (self->token_ != token) return false;
    self->token_ = nullptr;
    return true;
  }

  std::mutex mutex_;
  WaitTask* token_ = nullptr;
  bool pending_signal_ = false;
  Status pending_status_;
  int arms_ = 0;
  int disarms_ = 0;
};

}  // namespace osprey::task::testing

#endif  // OSPREY_RUNTIME_TASK_TASK_TEST_UTIL_H_
