// The "custom" sample driver: transfers on the host, no executables.
#include "samples/custom_driver/custom_driver.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "hal/local/heap_allocator.h"
#include "hal/local/host_semaphore.h"
#include "hal/local/local_dispatch.h"
#include "hal/local/queue_submission.h"
#include "hal/local/recording_command_buffer.h"
#include "runtime/base/platform/platform.h"

namespace custom_driver {

using osprey::Allocator;
using osprey::OkStatus;
using osprey::ref_ptr;
using osprey::Status;
using osprey::StatusOr;
namespace hal = osprey::hal;

namespace {

// This device prepares no executable formats.
class CustomExecutableCache final : public hal::ExecutableCache {
 public:
  bool CanPrepareFormat(const char*) const override { return false; }
  StatusOr<ref_ptr<hal::Executable>> PrepareExecutable(
      const hal::ExecutableParams& params) override {
    return osprey::UnimplementedError(
        "the custom sample device runs no executables (format '%s')",
        params.format ? params.format : "");
  }
};

// Replays recorded commands on the calling thread.
class Executor final : public hal::local::CommandHandler {
 public:
  Status OnBarrier(const hal::local::BarrierCommand&) override { return OkStatus(); }
  Status OnFill(const hal::local::FillCommand& c) override { return hal::local::ExecuteFill(c); }
  Status OnUpdate(const hal::local::UpdateCommand& c) override {
    return hal::local::ExecuteUpdate(c);
  }
  Status OnCopy(const hal::local::CopyCommand& c) override { return hal::local::ExecuteCopy(c); }
  Status OnDispatch(const hal::local::DispatchCommand& c) override {
    return osprey::UnimplementedError("the custom sample device cannot dispatch export '%s'",
                                      c.executable->export_info(c.ordinal).name);
  }
};

class CustomDevice final : public hal::Device {
 public:
  CustomDevice(Allocator* host_allocator, int64_t wait_timeout_ns)
      : host_allocator_(host_allocator), wait_timeout_ns_(wait_timeout_ns) {}

  Status Initialize() {
    OSPREY_ASSIGN_OR_RETURN(allocator_, hal::local::HeapAllocator::Create(host_allocator_));
    return OkStatus();
  }

  const char* id() const override { return "custom"; }
  hal::Allocator* allocator() const override { return allocator_.get(); }
  Allocator* host_allocator() const override { return host_allocator_; }

  StatusOr<ref_ptr<hal::CommandBuffer>> CreateCommandBuffer(hal::CommandBufferMode mode) override {
    OSPREY_ASSIGN_OR_RETURN(auto cb,
                            hal::local::RecordingCommandBuffer::Create(mode, host_allocator_));
    return ref_ptr<hal::CommandBuffer>(std::move(cb));
  }
  StatusOr<ref_ptr<hal::Semaphore>> CreateSemaphore(uint64_t initial_value) override {
    OSPREY_ASSIGN_OR_RETURN(auto s, hal::local::HostSemaphore::Create(initial_value,
                                                                      host_allocator_));
    return ref_ptr<hal::Semaphore>(std::move(s));
  }
  StatusOr<ref_ptr<hal::ExecutableCache>> CreateExecutableCache() override {
    OSPREY_ASSIGN_OR_RETURN(auto cache, osprey::MakeRef<CustomExecutableCache>(host_allocator_));
    return ref_ptr<hal::ExecutableCache>(std::move(cache));
  }

  // Synchronous: checks the submission, then, under the device lock, waits
  // and runs; the signal semaphores are signalled on success and failed with
  // the error otherwise (with none, the error is returned).
  Status QueueExecute(const hal::SemaphoreList& wait,
                      std::span<hal::CommandBuffer* const> command_buffers,
                      const hal::SemaphoreList& signal) override {
    OSPREY_RETURN_IF_ERROR(
        hal::local::BeginQueueSubmission("custom", wait, command_buffers, signal));
    return hal::local::ExecuteAndSignal(mutex_, signal, [&] { return Run(wait, command_buffers); });
  }

 private:
  // Called with mutex_ held.
  Status Run(const hal::SemaphoreList& wait, std::span<hal::CommandBuffer* const> command_buffers) {
    const int64_t deadline = osprey::platform::DeadlineFromTimeout(wait_timeout_ns_);
    for (size_t i = 0; i < wait.size(); ++i) {
      OSPREY_RETURN_IF_ERROR(wait.semaphores[i]->Wait(wait.values[i], deadline),
                             "custom device waiting for semaphore %zu", i);
    }
    Executor executor;
    for (size_t i = 0; i < command_buffers.size(); ++i) {
      OSPREY_RETURN_IF_ERROR(
          hal::local::RecordingCommandBuffer::Cast(command_buffers[i])->Replay(executor),
          "custom device executing command buffer %zu", i);
    }
    return OkStatus();
  }

  Allocator* host_allocator_;
  int64_t wait_timeout_ns_;
  ref_ptr<hal::local::HeapAllocator> allocator_;
  osprey::platform::Mutex mutex_;
};

class CustomDriver final : public hal::Driver {
 public:
  explicit CustomDriver(Allocator* host_allocator) : host_allocator_(host_allocator) {}

  // One param: wait_timeout_ms.
  StatusOr<ref_ptr<hal::Device>> CreateDevice(std::span<const hal::DeviceParam> params) override {
    int64_t timeout_ns = 10'000'000'000;
    for (const hal::DeviceParam& p : params) {
      if (p.key && std::strcmp(p.key, "wait_timeout_ms") == 0 && p.value && *p.value) {
        char* end = nullptr;
        const long long ms = std::strtoll(p.value, &end, 10);
        if (*end != '\0' || ms < 0) {
          return osprey::InvalidArgumentError("custom param wait_timeout_ms='%s' is not a number",
                                              p.value);
        }
        timeout_ns = ms * 1000000;
      } else {
        return osprey::InvalidArgumentError(
            "unknown custom device param '%s' (known: wait_timeout_ms)", p.key ? p.key : "");
      }
    }
    return CreateCustomDevice(host_allocator_, timeout_ns);
  }

 private:
  Allocator* host_allocator_;
};

StatusOr<ref_ptr<hal::Driver>> CreateDriver(Allocator* host_allocator) {
  OSPREY_ASSIGN_OR_RETURN(auto driver, osprey::MakeRef<CustomDriver>(host_allocator,
                                                                     host_allocator));
  return ref_ptr<hal::Driver>(std::move(driver));
}

}  // namespace

StatusOr<ref_ptr<hal::Device>> CreateCustomDevice(Allocator* host_allocator,
                                                  int64_t wait_timeout_ns) {
  OSPREY_ASSIGN_OR_RETURN(auto device, osprey::MakeRef<CustomDevice>(host_allocator,
                                                                     host_allocator,
                                                                     wait_timeout_ns));
  OSPREY_RETURN_IF_ERROR(device->Initialize());
  return ref_ptr<hal::Device>(std::move(device));
}

Status RegisterCustomDriver(hal::DriverRegistry& registry) {
  static constexpr hal::DriverFactory kFactory{
      /*name=*/"custom",
      /*description=*/"Sample out-of-tree driver: host transfers, no executables",
      /*create=*/&CreateDriver,
  };
  return registry.Register(&kFactory);
}

}  // namespace custom_driver
