// The cpu-task device: command buffers run as task graphs on a pool of
// worker threads (runtime/task), asynchronously to the submitting thread.
#ifndef OSPREY_DRIVERS_CPU_TASK_CPU_TASK_DEVICE_H_
#define OSPREY_DRIVERS_CPU_TASK_CPU_TASK_DEVICE_H_

#include <cstdint>
#include <span>

#include "hal/device.h"
#include "hal/local/default_loaders.h"
#include "hal/local/heap_allocator.h"
#include "hal/local/static_library_loader.h"
#include "runtime/task/executor.h"

namespace osprey::drivers::cpu_task {

struct CpuTaskDeviceOptions {
  // Worker threads; 0 means one per processor ("task_workers=N").
  uint32_t worker_count = 0;
  // Pins worker i to processor (first_processor + i) % processors
  // ("task_affinity=N"; "none" leaves workers unpinned).
  bool pin_workers = false;
  uint32_t first_processor = 0;
  // Scratch memory per worker for dispatch local memory
  // ("task_local_memory=BYTES").
  uint32_t worker_local_memory_size = 64 * 1024;
  // Stack of each worker in bytes, 0 for the platform's default
  // ("task_stack_size=BYTES"); compiled dispatches keep their scratch on it.
  uint32_t worker_stack_size = 0;
  // Worker priority on platforms with priorities (FreeRTOS task priority),
  // -1 for that of the thread creating the device ("task_priority=N").
  int32_t worker_priority = -1;
  // Libraries for the "static" executable format; borrowed, must outlive
  // the device (null: none).
  const hal::local::StaticLibraryRegistry* static_libraries = nullptr;
  // Host functions offered to executables; the entries are borrowed and
  // must outlive the device and every executable it loads.
  hal::local::ImportTable imports;
};

// Parses device params (task_workers, task_affinity, task_local_memory,
// task_stack_size, task_priority) into |options|. INVALID_ARGUMENT naming the key for an unknown key or a
// malformed value.
Status ParseDeviceParams(std::span<const hal::DeviceParam> params, CpuTaskDeviceOptions* options);

// Thread-safe: any number of threads may submit, create resources and wait.
// QueueExecute returns once the work is scheduled. Semaphores passed to
// QueueExecute must be host semaphores (made by this or another CPU
// device). Submissions are ordered only by their semaphores. Destroying the
// device cancels work still in flight (its signal semaphores fail with
// CANCELLED) and joins the workers; it must not be destroyed on a worker.
class CpuTaskDevice final : public hal::Device {
 public:
  // Creates a device whose executables load with every loader in the build
  // (hal::local::DefaultLoaderSet::Create).
  static StatusOr<ref_ptr<CpuTaskDevice>> Create(const CpuTaskDeviceOptions& options,
                                                 osprey::Allocator* host_allocator);

  // Like Create, with the loaders made by |create_loaders|. An image that
  // runs only static libraries passes hal::local::DefaultLoaderSet::
  // CreateStaticOnly and, as long as it never calls Create, links neither
  // the ELF nor the system loader. INVALID_ARGUMENT for a null factory;
  // errors of the factory come back with context.
  static StatusOr<ref_ptr<CpuTaskDevice>> CreateWithLoaders(
      const CpuTaskDeviceOptions& options, hal::local::LoaderSetFactory create_loaders,
      osprey::Allocator* host_allocator);
  ~CpuTaskDevice() override;

  const char* id() const override { return "cpu-task"; }
  hal::Allocator* allocator() const override { return allocator_.get(); }
  osprey::Allocator* host_allocator() const override { return host_allocator_; }

  StatusOr<ref_ptr<hal::CommandBuffer>> CreateCommandBuffer(hal::CommandBufferMode mode) override;
  StatusOr<ref_ptr<hal::Semaphore>> CreateSemaphore(uint64_t initial_value) override;
  StatusOr<ref_ptr<hal::ExecutableCache>> CreateExecutableCache() override;

  // Validates, builds the task graph and returns without waiting.
  // INVALID_ARGUMENT for mismatched or null semaphore lists, null or foreign
  // command buffers, or a signal value the semaphore already reached;
  // FAILED_PRECONDITION for a command buffer that has not ended (or a
  // one-shot one submitted twice); errors preparing a dispatch, annotated
  // with its position. Execution failures fail the |signal| semaphores
  // (with no signal semaphores they are logged).
  Status QueueExecute(const hal::SemaphoreList& wait,
                      std::span<hal::CommandBuffer* const> command_buffers,
                      const hal::SemaphoreList& signal) override;

  // kAny waits use semaphore timepoints instead of polling.
  Status WaitSemaphores(hal::WaitMode mode, const hal::SemaphoreList& semaphores,
                        int64_t deadline_ns) override;

  // Waits until no submission is in flight (their completions release the
  // command buffers and semaphores they retained), then frees the
  // executor's pooled submissions (task records, prepared dispatches:
  // scratch sized by the largest submissions so far).
  Status Trim() override;

  task::Executor* executor() const { return executor_.get(); }

 private:
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  CpuTaskDevice(const CpuTaskDeviceOptions& options, osprey::Allocator* host_allocator)
      : options_(options), host_allocator_(host_allocator) {}

  CpuTaskDeviceOptions options_;
  osprey::Allocator* host_allocator_;
  ref_ptr<hal::local::HeapAllocator> allocator_;
  ref_ptr<hal::local::DefaultLoaderSet> loaders_;
  ref_ptr<task::Executor> executor_;
};

}  // namespace osprey::drivers::cpu_task

#endif  // OSPREY_DRIVERS_CPU_TASK_CPU_TASK_DEVICE_H_
