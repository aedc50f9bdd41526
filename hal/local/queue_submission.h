// The submission path of devices that replay recorded command buffers on
// the host: the checks QueueExecute makes before anything runs, and running
// the work under the device lock with its outcome reported through the
// signal semaphores. A synchronous device's QueueExecute is
//
//   OSPREY_RETURN_IF_ERROR(hal::local::BeginQueueSubmission("my-device", wait,
//                                                            command_buffers, signal));
//   return hal::local::ExecuteAndSignal(mutex_, signal,
//                                       [&] { return Execute(wait, command_buffers); });
//
// where Execute waits for |wait| and replays the command buffers. A device
// with a queue thread (npu) calls ExecuteAndSignal from that thread; one
// that completes work elsewhere (cpu-task) shares only the checks.
#ifndef OSPREY_HAL_LOCAL_QUEUE_SUBMISSION_H_
#define OSPREY_HAL_LOCAL_QUEUE_SUBMISSION_H_

#include <span>
#include <utility>

#include "hal/command_buffer.h"
#include "hal/semaphore.h"
#include "runtime/base/platform/platform.h"
#include "runtime/base/status.h"

namespace osprey::hal::local {

// The checks before a submission, then marks each command buffer submitted
// (RecordingCommandBuffer::BeginSubmission). INVALID_ARGUMENT for a
// mismatched or null semaphore list, a command buffer that is null or not a
// RecordingCommandBuffer (|device| names the device in the message), or a
// signal value that would not advance its semaphore (a failed signal
// semaphore passes: the failure is reported through it);
// FAILED_PRECONDITION for a command buffer not ended or a one-shot command
// buffer submitted twice. Nothing has run when this fails.
Status BeginQueueSubmission(const char* device, const SemaphoreList& wait,
                            std::span<CommandBuffer* const> command_buffers,
                            const SemaphoreList& signal);

// Reports the outcome |status| of executed work through |signal|: OK
// signals every semaphore to its value, an error fails every one with (a
// copy of) it. Returns |status| when |signal| is empty, since nothing else
// carries it. A semaphore that refuses its signal (it failed meanwhile, or
// was signalled past the value) does not stop the others from being
// signalled; the first refusal is returned, with the semaphore's index.
Status SignalOrFail(const SemaphoreList& signal, Status status);

// Runs |execute| (a callable returning Status) with |mutex| held, then
// reports its result through |signal| (SignalOrFail) after the lock is
// released.
template <typename ExecuteFn>
Status ExecuteAndSignal(platform::Mutex& mutex, const SemaphoreList& signal, ExecuteFn&& execute) {
  Status status;
  {
    platform::MutexLock lock(mutex);
    status = std::forward<ExecuteFn>(execute)();
  }
  return SignalOrFail(signal, std::move(status));
}

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_QUEUE_SUBMISSION_H_
