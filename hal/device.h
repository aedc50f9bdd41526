// Devices: one logical accelerator (or the CPU) with its allocator, its
// command buffers, executables and semaphores, and one queue.
#ifndef OSPREY_HAL_DEVICE_H_
#define OSPREY_HAL_DEVICE_H_

#include <cstdint>
#include <span>

#include "hal/allocator.h"
#include "hal/command_buffer.h"
#include "hal/executable.h"
#include "hal/resource.h"
#include "hal/semaphore.h"

namespace osprey::hal {

enum class WaitMode : uint32_t {
  kAll = 0,  // Wait until every semaphore reaches its value.
  kAny = 1,  // Wait until one does.
};

class Device : public Resource {
 public:
  // "cpu-sync", "cpu-task", "npu", ...; borrowed, never null.
  virtual const char* id() const = 0;
  // Borrowed; valid while the device lives.
  virtual Allocator* allocator() const = 0;
  virtual osprey::Allocator* host_allocator() const = 0;

  virtual StatusOr<ref_ptr<CommandBuffer>> CreateCommandBuffer(CommandBufferMode mode) = 0;
  virtual StatusOr<ref_ptr<Semaphore>> CreateSemaphore(uint64_t initial_value) = 0;
  virtual StatusOr<ref_ptr<ExecutableCache>> CreateExecutableCache() = 0;

  // Waits for |wait| semaphores, runs |command_buffers| in order, then
  // signals |signal| semaphores. Drivers may return before the work is
  // done. If the work fails, the signal semaphores fail with the error
  // (and later waits see it); the call itself only returns errors found
  // before submission (bad arguments, command buffer not ended).
  virtual Status QueueExecute(const SemaphoreList& wait,
                              std::span<CommandBuffer* const> command_buffers,
                              const SemaphoreList& signal) = 0;

  // Blocks until the semaphores reach their values (all or any) or the
  // absolute |deadline_ns| passes (DEADLINE_EXCEEDED).
  virtual Status WaitSemaphores(WaitMode mode, const SemaphoreList& semaphores,
                                int64_t deadline_ns);

  // A fact or counter of the device by key ("npu.total_cycles", ...; each
  // driver documents its keys). NOT_FOUND for keys the device does not
  // know (the default for every key). Thread-safe.
  virtual StatusOr<int64_t> QueryI64(const char* key);

  // Waits for work already submitted to retire (a semaphore a submission
  // signals may be reached while the device still holds the submission's
  // resources), then frees memory the device keeps for reuse (e.g.
  // cpu-task's pool of submission records and their scratch), so an
  // application that unloaded a model gets the model's share back. Do not
  // call it while submitted work waits on semaphores nobody will signal.
  // Later work allocates again. The default keeps nothing: OK at once.
  virtual Status Trim() { return OkStatus(); }
};

// A key=value option passed at device creation (e.g. "task_workers=2").
struct DeviceParam {
  const char* key;
  const char* value;
};

// Parses a device param value as a decimal integer in [0, |max|]. Returns
// false for null, empty, non-digit or out-of-range text.
bool ParseDeviceParamUint64(const char* text, uint64_t max, uint64_t* out_value);

}  // namespace osprey::hal

#endif  // OSPREY_HAL_DEVICE_H_
