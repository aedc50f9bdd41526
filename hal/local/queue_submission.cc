// Shared submission checks and signalling for host-replaying devices.
#include "hal/local/queue_submission.h"

#include <utility>

#include "hal/local/recording_command_buffer.h"

namespace osprey::hal::local {

using ull = unsigned long long;

Status BeginQueueSubmission(const char* device, const SemaphoreList& wait,
                            std::span<CommandBuffer* const> command_buffers,
                            const SemaphoreList& signal) {
  OSPREY_RETURN_IF_ERROR(wait.Validate("wait"));
  OSPREY_RETURN_IF_ERROR(signal.Validate("signal"));
  for (size_t i = 0; i < command_buffers.size(); ++i) {
    if (!command_buffers[i]) return InvalidArgumentError("command buffer %zu is null", i);
    if (!RecordingCommandBuffer::Cast(command_buffers[i])) {
      return InvalidArgumentError(
          "command buffer %zu is foreign: the %s device runs only command buffers recorded by "
          "a local device",
          i, device);
    }
  }
  for (size_t i = 0; i < signal.size(); ++i) {
    StatusOr<uint64_t> current = signal.semaphores[i]->Query();
    if (!current.ok()) {
      // A failed semaphore stays failed; the failure is reported through it.
      std::move(current).status().IgnoreError();
      continue;
    }
    if (*current >= signal.values[i]) {
      return InvalidArgumentError(
          "signal semaphore %zu is at %llu; signalling %llu would not advance it", i, (ull)*current,
          (ull)signal.values[i]);
    }
  }
  for (size_t i = 0; i < command_buffers.size(); ++i) {
    OSPREY_RETURN_IF_ERROR(RecordingCommandBuffer::Cast(command_buffers[i])->BeginSubmission(),
                           "submitting command buffer %zu of %zu to the %s device", i,
                           command_buffers.size(), device);
  }
  return OkStatus();
}

Status SignalOrFail(const SemaphoreList& signal, Status status) {
  if (signal.size() == 0) return status;
  if (!status.ok()) {
    for (size_t i = 0; i < signal.size(); ++i) signal.semaphores[i]->Fail(status.Clone());
    status.IgnoreError();  // Carried by the semaphores.
    return OkStatus();
  }
  Status first_refusal;
  for (size_t i = 0; i < signal.size(); ++i) {
    Status signalled = signal.semaphores[i]->Signal(signal.values[i]);
    if (signalled.ok()) continue;
    if (first_refusal.ok()) {
      first_refusal = std::move(signalled).Annotate(
          "signalling semaphore %zu to %llu after execution", i, (ull)signal.values[i]);
    } else {
      signalled.IgnoreError();  // The first refusal is the one reported.
    }
  }
  return first_refusal;
}

}  // namespace osprey::hal::local
