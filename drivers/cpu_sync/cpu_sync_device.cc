// cpu-sync device: inline execution of recorded command buffers.
#include "drivers/cpu_sync/cpu_sync_device.h"

#include <stdlib.h>

#include <cstring>
#include <utility>

#include "hal/local/host_semaphore.h"
#include "hal/local/local_dispatch.h"
#include "hal/local/local_executable_cache.h"
#include "hal/local/queue_submission.h"
#include "hal/local/recording_command_buffer.h"

namespace osprey::drivers::cpu_sync {

using hal::local::CommandHandler;

namespace {

// Replays commands inline on the calling thread.
class InlineExecutor final : public CommandHandler {
 public:
  InlineExecutor(Arena* scratch, void* local_memory, uint32_t local_memory_size)
      : scratch_(scratch), local_memory_(local_memory), local_memory_size_(local_memory_size) {}

  // Commands run one after another, so every barrier is already honoured.
  Status OnBarrier(const hal::local::BarrierCommand&) override { return OkStatus(); }
  Status OnFill(const hal::local::FillCommand& command) override {
    return hal::local::ExecuteFill(command);
  }
  Status OnUpdate(const hal::local::UpdateCommand& command) override {
    return hal::local::ExecuteUpdate(command);
  }
  Status OnCopy(const hal::local::CopyCommand& command) override {
    return hal::local::ExecuteCopy(command);
  }
  Status OnDispatch(const hal::local::DispatchCommand& command) override {
    hal::local::LocalDispatch dispatch;
    OSPREY_RETURN_IF_ERROR(dispatch.Prepare(command, /*max_concurrency=*/1, scratch_));
    return dispatch.RunWorkgroups(0, dispatch.workgroup_total(), /*processor_id=*/0,
                                  local_memory_, local_memory_size_);
  }

 private:
  Arena* scratch_;
  void* local_memory_;
  uint32_t local_memory_size_;
};

}  // namespace

Status CpuSyncDevice::ParseParams(std::span<const hal::DeviceParam> params,
                                  CpuSyncDeviceOptions* options) {
  for (const hal::DeviceParam& param : params) {
    const char* key = param.key ? param.key : "";
    uint64_t value = 0;
    if (strcmp(key, "wait_timeout_ms") == 0) {
      if (!hal::ParseDeviceParamUint64(param.value, UINT64_MAX, &value) || value > uint64_t(INT64_MAX / 1000000)) {
        return InvalidArgumentError("cpu-sync param wait_timeout_ms='%s' is not a valid number "
                                    "of milliseconds",
                                    param.value ? param.value : "");
      }
      options->wait_timeout_ns = int64_t(value) * 1000000;
    } else if (strcmp(key, "local_memory_size") == 0) {
      if (!hal::ParseDeviceParamUint64(param.value, UINT64_MAX, &value) || value > UINT32_MAX) {
        return InvalidArgumentError("cpu-sync param local_memory_size='%s' is not a valid byte "
                                    "count",
                                    param.value ? param.value : "");
      }
      options->local_memory_size = uint32_t(value);
    } else {
      return InvalidArgumentError(
          "unknown cpu-sync device param '%s' (known: wait_timeout_ms, local_memory_size)", key);
    }
  }
  return OkStatus();
}

StatusOr<ref_ptr<CpuSyncDevice>> CpuSyncDevice::Create(const CpuSyncDeviceOptions& options,
                                                       osprey::Allocator* host_allocator) {
  return CreateWithLoaders(options, &hal::local::DefaultLoaderSet::Create, host_allocator);
}

StatusOr<ref_ptr<CpuSyncDevice>> CpuSyncDevice::CreateWithLoaders(
    const CpuSyncDeviceOptions& options, hal::local::LoaderSetFactory create_loaders,
    osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("cpu-sync device needs a host allocator");
  if (!create_loaders) {
    return InvalidArgumentError("cpu-sync device needs a loader set factory (got null)");
  }
  OSPREY_ASSIGN_OR_RETURN(auto device, MakeRef<CpuSyncDevice>(host_allocator, options,
                                                              host_allocator));
  OSPREY_ASSIGN_OR_RETURN(device->allocator_, hal::local::HeapAllocator::Create(host_allocator));
  OSPREY_ASSIGN_OR_RETURN(device->loaders_,
                          create_loaders(options.static_libraries, host_allocator),
                          "creating the cpu-sync executable loaders");
  if (options.local_memory_size > 0) {
    OSPREY_RETURN_IF_ERROR(host_allocator->Allocate(options.local_memory_size, kDefaultAlignment,
                                                    &device->local_memory_),
                           "allocating %u bytes of workgroup local memory",
                           unsigned(options.local_memory_size));
  }
  return device;
}

CpuSyncDevice::~CpuSyncDevice() {
  if (local_memory_) host_allocator_->Free(local_memory_);
}

StatusOr<ref_ptr<hal::CommandBuffer>> CpuSyncDevice::CreateCommandBuffer(
    hal::CommandBufferMode mode) {
  hal::local::RecordingOptions recording;
  recording.local_executables_only = true;
  recording.max_local_memory_size = options_.local_memory_size;
  OSPREY_ASSIGN_OR_RETURN(auto command_buffer, hal::local::RecordingCommandBuffer::Create(
                                                   mode, host_allocator_, recording));
  return ref_ptr<hal::CommandBuffer>(std::move(command_buffer));
}

StatusOr<ref_ptr<hal::Semaphore>> CpuSyncDevice::CreateSemaphore(uint64_t initial_value) {
  OSPREY_ASSIGN_OR_RETURN(auto semaphore,
                          hal::local::HostSemaphore::Create(initial_value, host_allocator_));
  return ref_ptr<hal::Semaphore>(std::move(semaphore));
}

StatusOr<ref_ptr<hal::ExecutableCache>> CpuSyncDevice::CreateExecutableCache() {
  OSPREY_ASSIGN_OR_RETURN(auto cache, hal::local::LocalExecutableCache::Create(
                                          loaders_->loaders(), options_.imports, loaders_,
                                          host_allocator_));
  return ref_ptr<hal::ExecutableCache>(std::move(cache));
}

Status CpuSyncDevice::WaitSemaphores(hal::WaitMode mode, const hal::SemaphoreList& semaphores,
                                     int64_t deadline_ns) {
  if (mode == hal::WaitMode::kAny && semaphores.size() > 1 &&
      semaphores.size() <= hal::local::kMaxWaitAny &&
      semaphores.values.size() == semaphores.size()) {
    bool all_host = true;
    for (hal::Semaphore* semaphore : semaphores.semaphores) {
      all_host = all_host && hal::local::HostSemaphore::Cast(semaphore) != nullptr;
    }
    if (all_host) return hal::local::WaitAnyHostSemaphores(semaphores, deadline_ns);
  }
  return hal::Device::WaitSemaphores(mode, semaphores, deadline_ns);
}

Status CpuSyncDevice::Execute(const hal::SemaphoreList& wait,
                              std::span<hal::CommandBuffer* const> command_buffers) {
  const int64_t deadline = platform::DeadlineFromTimeout(options_.wait_timeout_ns);
  for (size_t i = 0; i < wait.size(); ++i) {
    OSPREY_RETURN_IF_ERROR(wait.semaphores[i]->Wait(wait.values[i], deadline),
                           "cpu-sync waiting for wait semaphore %zu to reach %llu", i,
                           (unsigned long long)wait.values[i]);
  }
  scratch_.Reset();
  InlineExecutor executor(&scratch_, local_memory_, options_.local_memory_size);
  for (size_t i = 0; i < command_buffers.size(); ++i) {
    auto* recording = static_cast<hal::local::RecordingCommandBuffer*>(command_buffers[i]);
    OSPREY_RETURN_IF_ERROR(recording->Replay(executor), "cpu-sync executing command buffer %zu",
                           i);
  }
  return OkStatus();
}

Status CpuSyncDevice::QueueExecute(const hal::SemaphoreList& wait,
                                   std::span<hal::CommandBuffer* const> command_buffers,
                                   const hal::SemaphoreList& signal) {
  OSPREY_RETURN_IF_ERROR(
      hal::local::BeginQueueSubmission("cpu-sync", wait, command_buffers, signal));
  return hal::local::ExecuteAndSignal(mutex_, signal,
                                      [&] { return Execute(wait, command_buffers); });
}

}  // namespace osprey::drivers::cpu_sync
