// The cpu-sync device: executes submissions inline on the calling thread.
//
// Queue semantics (there is no other thread to wait for, so nothing here
// ever blocks without a deadline):
//   1. Wait semaphores are waited for in order, each until the device's
//      wait timeout (CpuSyncDeviceOptions::wait_timeout_ns). On a build
//      without threads nobody else can signal them, so an unreached value
//      fails at once.
//   2. If a wait fails (timeout: DEADLINE_EXCEEDED; failed semaphore:
//      ABORTED) the command buffers are not run.
//   3. Command buffers run in order, commands in recorded order (barriers
//      are implicit), dispatches walk their 3-D grid x fastest.
//   4. On success the signal semaphores are signalled. On any failure they
//      are failed with the error and its context; with no signal semaphores
//      the error is returned from QueueExecute instead, as nothing else
//      could report it.
// Submissions are serialized by a device lock (they share the device's
// local memory and scratch arena).
#ifndef OSPREY_DRIVERS_CPU_SYNC_CPU_SYNC_DEVICE_H_
#define OSPREY_DRIVERS_CPU_SYNC_CPU_SYNC_DEVICE_H_

#include <cstdint>
#include <span>

#include "hal/device.h"
#include "hal/local/default_loaders.h"
#include "hal/local/executable_loader.h"
#include "hal/local/heap_allocator.h"
#include "hal/local/static_library_loader.h"
#include "runtime/base/arena.h"
#include "runtime/base/platform/platform.h"

namespace osprey::drivers::cpu_sync {

struct CpuSyncDeviceOptions {
  // Libraries of format "static"; borrowed, must outlive the device. Null:
  // none (loading a "static" executable is then NOT_FOUND).
  const hal::local::StaticLibraryRegistry* static_libraries = nullptr;
  // Host functions offered to executables; the entries are borrowed and
  // must outlive the device and every executable it loads.
  hal::local::ImportTable imports;
  // Local (scratch) memory for workgroups, allocated once per device.
  // Dispatches of exports declaring more fail at record time.
  uint32_t local_memory_size = 64 * 1024;
  // How long QueueExecute waits for each wait semaphore.
  int64_t wait_timeout_ns = 10'000'000'000;
};

class CpuSyncDevice final : public hal::Device {
 public:
  // |host_allocator| is borrowed for the device's lifetime.
  // Creates a device whose executables load with every loader in the build
  // (hal::local::DefaultLoaderSet::Create).
  static StatusOr<ref_ptr<CpuSyncDevice>> Create(const CpuSyncDeviceOptions& options,
                                                 osprey::Allocator* host_allocator);

  // Like Create, with the loaders made by |create_loaders|. An image that
  // runs only static libraries passes hal::local::DefaultLoaderSet::
  // CreateStaticOnly and, as long as it never calls Create, links neither
  // the ELF nor the system loader. INVALID_ARGUMENT for a null factory;
  // errors of the factory come back with context.
  static StatusOr<ref_ptr<CpuSyncDevice>> CreateWithLoaders(
      const CpuSyncDeviceOptions& options, hal::local::LoaderSetFactory create_loaders,
      osprey::Allocator* host_allocator);

  // Parses key=value params into |options|: "wait_timeout_ms" (integer,
  // >= 0) and "local_memory_size" (bytes). INVALID_ARGUMENT naming an
  // unknown key or a malformed value.
  static Status ParseParams(std::span<const hal::DeviceParam> params,
                            CpuSyncDeviceOptions* options);

  ~CpuSyncDevice() override;

  const char* id() const override { return "cpu-sync"; }
  hal::Allocator* allocator() const override { return allocator_.get(); }
  osprey::Allocator* host_allocator() const override { return host_allocator_; }

  StatusOr<ref_ptr<hal::CommandBuffer>> CreateCommandBuffer(hal::CommandBufferMode mode) override;
  StatusOr<ref_ptr<hal::Semaphore>> CreateSemaphore(uint64_t initial_value) override;
  StatusOr<ref_ptr<hal::ExecutableCache>> CreateExecutableCache() override;

  // See the file comment for the semantics. Returns INVALID_ARGUMENT for
  // mismatched semaphore lists, null or foreign command buffers, or a signal
  // value that does not advance its semaphore; FAILED_PRECONDITION for a
  // command buffer that has not ended (or a one-shot one submitted twice).
  Status QueueExecute(const hal::SemaphoreList& wait,
                      std::span<hal::CommandBuffer* const> command_buffers,
                      const hal::SemaphoreList& signal) override;

  // kAny over host semaphores waits on timepoints instead of polling.
  Status WaitSemaphores(hal::WaitMode mode, const hal::SemaphoreList& semaphores,
                        int64_t deadline_ns) override;

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  CpuSyncDevice(const CpuSyncDeviceOptions& options, osprey::Allocator* host_allocator)
      : options_(options), host_allocator_(host_allocator), scratch_(host_allocator) {}

  Status Execute(const hal::SemaphoreList& wait,
                 std::span<hal::CommandBuffer* const> command_buffers);

  CpuSyncDeviceOptions options_;
  osprey::Allocator* host_allocator_;
  ref_ptr<hal::local::HeapAllocator> allocator_;
  ref_ptr<hal::local::DefaultLoaderSet> loaders_;
  platform::Mutex mutex_;  // Serializes submissions.
  Arena scratch_;          // Per-submission scratch, reset each time.
  void* local_memory_ = nullptr;
};

}  // namespace osprey::drivers::cpu_sync

#endif  // OSPREY_DRIVERS_CPU_SYNC_CPU_SYNC_DEVICE_H_
