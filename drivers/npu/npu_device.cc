// npu device: command buffers become command streams on the hardware ring.
#include "drivers/npu/npu_device.h"

#include <stdlib.h>

#include <cstring>
#include <new>
#include <utility>

#include "drivers/npu/npu_executable.h"
#include "drivers/npu/schema/npu_isa.h"
#include "drivers/npu/sim/command_stream.h"
#include "hal/local/host_semaphore.h"
#include "hal/local/local_dispatch.h"
#include "hal/local/queue_submission.h"
#include "hal/local/recording_command_buffer.h"

namespace osprey::drivers::npu {

using hal::local::CommandHandler;
using ull = unsigned long long;

namespace {

// Records like every local command buffer, but refuses at record time what
// the NPU cannot run: executables of other devices and workgroup grids.
class NpuCommandBuffer final : public hal::local::RecordingCommandBuffer {
 public:
  NpuCommandBuffer(hal::CommandBufferMode mode, osprey::Allocator* host_allocator)
      : RecordingCommandBuffer(mode, host_allocator, hal::local::RecordingOptions{}) {}

 protected:
  Status DispatchImpl(hal::Executable* executable, uint32_t ordinal,
                      hal::WorkgroupCount workgroup_count, std::span<const uint32_t> constants,
                      std::span<const hal::BufferRef> bindings) override {
    if (!NpuExecutable::Cast(executable)) {
      return InvalidArgumentError(
          "dispatch of export '%s': npu command buffers run only npu-v1 executables prepared "
          "by an npu device",
          executable->export_info(ordinal).name);
    }
    if (workgroup_count.x != 1 || workgroup_count.y != 1 || workgroup_count.z != 1) {
      return InvalidArgumentError(
          "dispatch of export '%s': npu command streams run once; workgroup count %ux%ux%u "
          "must be 1x1x1",
          executable->export_info(ordinal).name, workgroup_count.x, workgroup_count.y,
          workgroup_count.z);
    }
    return RecordingCommandBuffer::DispatchImpl(executable, ordinal, workgroup_count, constants,
                                                bindings);
  }

 private:
  friend class osprey::Allocator;
};

}  // namespace

//===----------------------------------------------------------------------===//
// Executor: recorded commands -> hardware jobs
//===----------------------------------------------------------------------===//

class NpuExecutor final : public CommandHandler {
 public:
  explicit NpuExecutor(NpuDevice* device) : device_(device) {}

  Status OnBarrier(const hal::local::BarrierCommand&) override { return OkStatus(); }

  // The NPU has no fill instruction: the driver writes the pattern through
  // its device mapping, after the jobs before it.
  Status OnFill(const hal::local::FillCommand& command) override {
    OSPREY_RETURN_IF_ERROR(Drain());  // Earlier jobs may touch the same memory.
    return hal::local::ExecuteFill(command);
  }

  // Updates and copies run on the NPU's DMA engine, staged through SRAM.
  Status OnUpdate(const hal::local::UpdateCommand& command) override {
    uint8_t* target = nullptr;
    OSPREY_RETURN_IF_ERROR(command.target.buffer->MapForDevice(
        hal::MemoryAccess::kWrite, command.target.offset, command.target.length, &target));
    return DmaCopy(const_cast<uint8_t*>(command.data), target, command.target.length);
  }

  Status OnCopy(const hal::local::CopyCommand& command) override {
    uint8_t* source = nullptr;
    uint8_t* target = nullptr;
    OSPREY_RETURN_IF_ERROR(command.source.buffer->MapForDevice(
        hal::MemoryAccess::kRead, command.source.offset, command.source.length, &source));
    OSPREY_RETURN_IF_ERROR(command.target.buffer->MapForDevice(
        hal::MemoryAccess::kWrite, command.target.offset, command.target.length, &target));
    return DmaCopy(source, target, command.target.length);
  }

  Status OnDispatch(const hal::local::DispatchCommand& command) override;

  // Waits for every job in flight; returns the first failure (annotated).
  Status Drain();

 private:
  // A job on the hardware ring and what it was for (error context).
  struct InFlight {
    HwJob* job;
    uint32_t sequence;
    const char* export_name;  // Null for DMA transfers.
  };

  // Puts |job| on the ring without waiting for it (the device runs it while
  // the driver prepares the next one); retires the oldest job first when
  // the ring is full.
  Status Submit(HwJob* job, const char* export_name);
  Status RetireOldest();
  // Places |length| bytes at |data| in the device address space: SRAM pool
  // memory at its aperture address, host memory in the next free window.
  Status MapWindow(uint8_t* data, uint64_t length, uint8_t access, sim::MemoryWindow* out);
  Status DmaCopy(uint8_t* source, uint8_t* target, uint64_t length);

  NpuDevice* device_;
  uint64_t next_window_ = kHostWindowBase;
  InFlight in_flight_[NpuHardware::kRingSlots - 1] = {};
  uint32_t in_flight_head_ = 0;
  uint32_t in_flight_count_ = 0;
};

Status NpuExecutor::Submit(HwJob* job, const char* export_name) {
  if (in_flight_count_ == NpuHardware::kRingSlots - 1) OSPREY_RETURN_IF_ERROR(RetireOldest());
  OSPREY_ASSIGN_OR_RETURN(uint32_t sequence, device_->hardware_->Submit(job));
  const uint32_t slot = (in_flight_head_ + in_flight_count_) % (NpuHardware::kRingSlots - 1);
  in_flight_[slot] = {job, sequence, export_name};
  ++in_flight_count_;
  return OkStatus();
}

Status NpuExecutor::RetireOldest() {
  const InFlight f = in_flight_[in_flight_head_];
  in_flight_head_ = (in_flight_head_ + 1) % (NpuHardware::kRingSlots - 1);
  --in_flight_count_;
  NpuHardware* hw = device_->hardware_;
  const int64_t timeout_ns = device_->options_.job_timeout_ns;
  Status waited = hw->WaitForCompletion(f.sequence, platform::DeadlineFromTimeout(timeout_ns));
  if (!waited.ok()) {
    // The device stops; jobs still queued are dropped with it.
    hw->Reset();
    in_flight_count_ = 0;
    return std::move(waited).Annotate("npu watchdog: job timed out after %lld ms; device reset",
                                      (long long)(timeout_ns / 1000000));
  }
  device_->counters_.Accumulate(f.job->counters);
  if (f.job->status.ok()) return OkStatus();
  Status failure = std::move(f.job->status);
  // The device halted on the fault: the jobs behind it complete unrun.
  // Collect them before the memory they use goes away, then resume it.
  while (in_flight_count_ > 0) {
    const InFlight rest = in_flight_[in_flight_head_];
    in_flight_head_ = (in_flight_head_ + 1) % (NpuHardware::kRingSlots - 1);
    --in_flight_count_;
    Status rest_waited =
        hw->WaitForCompletion(rest.sequence, platform::DeadlineFromTimeout(timeout_ns));
    if (!rest_waited.ok()) {
      rest_waited.IgnoreError();  // |failure| is the error to report.
      hw->Reset();
      in_flight_count_ = 0;
      break;
    }
    rest.job->status.IgnoreError();  // ABORTED: not run because of |failure|.
  }
  hw->WriteRegister(kHwRegIrqStatus, kHwIrqFault);
  if (f.export_name) {
    return std::move(failure).Annotate("running export '%s' of an npu-v1 executable",
                                       f.export_name);
  }
  return std::move(failure).Annotate("running a DMA transfer");
}

Status NpuExecutor::Drain() {
  while (in_flight_count_ > 0) OSPREY_RETURN_IF_ERROR(RetireOldest());
  return OkStatus();
}

Status NpuExecutor::MapWindow(uint8_t* data, uint64_t length, uint8_t access,
                              sim::MemoryWindow* out) {
  if (length > 0xFFFFFFFFull) {
    return InvalidArgumentError("a %llu-byte range does not fit the npu's 32-bit address space",
                                (ull)length);
  }
  out->host = data;
  out->length = static_cast<uint32_t>(length);
  out->access = access;
  uint64_t pool_offset = 0;
  NpuAllocator* allocator = device_->allocator_.get();
  if (allocator->InPool(data, length, &pool_offset)) {
    const uint64_t sram_offset =
        device_->options_.hardware.sram_bytes - allocator->pool_bytes() + pool_offset;
    out->device_address = static_cast<uint32_t>(kSramAperture + sram_offset);
    return OkStatus();
  }
  const uint64_t base = (next_window_ + 4095) & ~uint64_t{4095};
  if (base + length > kSramAperture) {
    return ResourceExhaustedError(
        "npu device address space exhausted: %llu more bytes of host memory do not fit below "
        "the SRAM aperture",
        (ull)length);
  }
  out->device_address = static_cast<uint32_t>(base);
  next_window_ = base + length;
  return OkStatus();
}

Status NpuExecutor::DmaCopy(uint8_t* source, uint8_t* target, uint64_t length) {
  if (length == 0) return OkStatus();
  next_window_ = kHostWindowBase;
  Arena& scratch = device_->scratch_;
  OSPREY_ASSIGN_OR_RETURN(sim::MemoryWindow * windows, scratch.NewArray<sim::MemoryWindow>(2));
  OSPREY_RETURN_IF_ERROR(MapWindow(source, length, sim::kWindowRead, &windows[0]));
  OSPREY_RETURN_IF_ERROR(MapWindow(target, length, sim::kWindowWrite, &windows[1]));
  const uint64_t staging = device_->hardware_->simulator()->stream_sram_bytes();
  const uint64_t chunk = staging < (uint64_t{1} << 24) ? staging : (uint64_t{1} << 24);
  if (chunk == 0) {
    return FailedPreconditionError("npu has no stream SRAM to stage a DMA copy through");
  }
  const uint64_t chunks = (length + chunk - 1) / chunk;
  // Per chunk: 2 x (6 SET_REG + DMA) + 2 SYNC = 28 words; plus END.
  constexpr uint64_t kWordsPerChunk = 28;
  OSPREY_ASSIGN_OR_RETURN(uint32_t * words, scratch.NewArray<uint32_t>(chunks * kWordsPerChunk + 1));
  uint32_t* w = words;
  auto set = [&w](npu_register_t reg, uint64_t value) {
    *w++ = NPU_MAKE_WORD(NPU_OP_SET_REG, 0, reg);
    *w++ = static_cast<uint32_t>(value);
  };
  for (uint64_t i = 0; i < chunks; ++i) {
    const uint64_t offset = i * chunk;
    const uint64_t bytes = length - offset < chunk ? length - offset : chunk;
    for (int direction = 0; direction < 2; ++direction) {
      set(NPU_REG_DMA_SYS_ADDR, windows[direction].device_address + offset);
      set(NPU_REG_DMA_LOC_ADDR, 0);
      set(NPU_REG_DMA_LEN, bytes);
      set(NPU_REG_DMA_ROWS, 1);
      set(NPU_REG_DMA_SYS_STRIDE, 0);
      set(NPU_REG_DMA_LOC_STRIDE, 0);
      *w++ = NPU_MAKE_WORD(direction == 0 ? NPU_OP_DMA_READ : NPU_OP_DMA_WRITE, 0, 0);
      *w++ = NPU_MAKE_WORD(NPU_OP_SYNC, 0, 0);
    }
  }
  *w++ = NPU_MAKE_WORD(NPU_OP_END, 0, 0);
  OSPREY_ASSIGN_OR_RETURN(HwJob * job, scratch.New<HwJob>());
  job->words = {words, static_cast<size_t>(w - words)};
  job->windows = {windows, 2};
  return Submit(job, nullptr);
}

Status NpuExecutor::OnDispatch(const hal::local::DispatchCommand& command) {
  NpuExecutable* executable = NpuExecutable::Cast(command.executable);
  if (!executable || command.ordinal >= executable->export_count()) {
    return InvalidArgumentError("dispatch of a non-npu executable or a bad export ordinal");
  }
  const sim::ExportView view = executable->export_view(command.ordinal);
  if (command.bindings.size() < view.binding_count) {
    return InvalidArgumentError("export '%s' binds %u buffers, dispatch passes %zu", view.name,
                                view.binding_count, command.bindings.size());
  }
  next_window_ = kHostWindowBase;
  Arena& scratch = device_->scratch_;
  const uint32_t count = view.binding_count;
  sim::MemoryWindow* windows = nullptr;
  uint32_t* addresses = nullptr;
  if (count > 0) {
    OSPREY_ASSIGN_OR_RETURN(windows, scratch.NewArray<sim::MemoryWindow>(count));
    OSPREY_ASSIGN_OR_RETURN(addresses, scratch.NewArray<uint32_t>(count));
  }
  for (unsigned i = 0; i < count; ++i) {
    const hal::BufferRef& ref = command.bindings[i];
    const bool written = (view.binding_write_mask >> i) & 1u;
    const bool readable =
        AnyBitSet(ref.buffer->allowed_access(), hal::MemoryAccess::kRead) || !written;
    const hal::MemoryAccess access =
        written ? (readable ? hal::MemoryAccess::kRead | hal::MemoryAccess::kWrite
                            : hal::MemoryAccess::kWrite)
                : hal::MemoryAccess::kRead;
    uint8_t* data = nullptr;
    OSPREY_RETURN_IF_ERROR(ref.buffer->MapForDevice(access, ref.offset, ref.length, &data),
                           "mapping binding %u of export '%s' for the npu", i, view.name);
    const uint8_t window_access = static_cast<uint8_t>(
        (readable ? sim::kWindowRead : 0) | (written ? sim::kWindowWrite : 0));
    OSPREY_RETURN_IF_ERROR(MapWindow(data, ref.length, window_access, &windows[i]),
                           "mapping binding %u of export '%s' for the npu", i, view.name);
    addresses[i] = windows[i].device_address;
  }
  OSPREY_ASSIGN_OR_RETURN(uint32_t * words, scratch.NewArray<uint32_t>(view.words.size()));
  OSPREY_RETURN_IF_ERROR(
      sim::ApplyRelocations(view, {addresses, count}, {words, view.words.size()}),
      "relocating export '%s'", view.name);
  OSPREY_ASSIGN_OR_RETURN(HwJob * job, scratch.New<HwJob>());
  job->words = {words, view.words.size()};
  job->windows = {windows, count};
  return Submit(job, view.name);
}

//===----------------------------------------------------------------------===//
// NpuDevice
//===----------------------------------------------------------------------===//

Status NpuDevice::ParseParams(std::span<const hal::DeviceParam> params,
                              NpuDeviceOptions* options) {
  for (const hal::DeviceParam& param : params) {
    const char* key = param.key ? param.key : "";
    const char* text = param.value ? param.value : "";
    uint64_t value = 0;
    const bool numeric = hal::ParseDeviceParamUint64(text, UINT64_MAX, &value);
    auto bad = [&](const char* what) {
      return InvalidArgumentError("npu device param %s='%s' is not %s", key, text, what);
    };
    if (strcmp(key, "mode") == 0) {
      if (strcmp(text, "output") == 0) {
        options->hardware.mode = sim::ParallelMode::kOutputParallel;
      } else if (strcmp(text, "input") == 0) {
        options->hardware.mode = sim::ParallelMode::kInputParallel;
      } else {
        return bad("'output' or 'input'");
      }
      continue;
    }
    if (strcmp(key, "pes") == 0) {
      if (!numeric || (value != 64 && value != 128 && value != 256)) return bad("64, 128 or 256");
      options->hardware.pe_count = uint32_t(value);
    } else if (strcmp(key, "sram_kib") == 0) {
      if (!numeric || value < 256 || value > 256 * 1024) return bad("256..262144 KiB");
      options->hardware.sram_bytes = value * 1024;
    } else if (strcmp(key, "weight_kib") == 0) {
      if (!numeric || value < 16 || value > 256 * 1024) return bad("16..262144 KiB");
      options->hardware.weight_memory_bytes = value * 1024;
    } else if (strcmp(key, "dma_bytes_per_cycle") == 0) {
      if (!numeric || value < 1 || value > 256) return bad("1..256");
      options->hardware.dma_bytes_per_cycle = uint32_t(value);
    } else if (strcmp(key, "dma_setup_cycles") == 0) {
      if (!numeric || value > 65536) return bad("0..65536");
      options->hardware.dma_setup_cycles = uint32_t(value);
    } else if (strcmp(key, "sram_pool_kib") == 0) {
      if (!numeric || value > 256 * 1024) return bad("a size in KiB");
      options->sram_pool_bytes = value * 1024;
    } else if (strcmp(key, "wait_timeout_ms") == 0) {
      if (!numeric || value > uint64_t(INT64_MAX / 1000000)) return bad("milliseconds");
      options->wait_timeout_ns = int64_t(value) * 1000000;
    } else if (strcmp(key, "job_timeout_ms") == 0) {
      if (!numeric || value > uint64_t(INT64_MAX / 1000000)) return bad("milliseconds");
      options->job_timeout_ns = int64_t(value) * 1000000;
    } else if (strcmp(key, "inline") == 0) {
      if (!numeric || value > 1) return bad("0 or 1");
      options->hardware_options.inline_execution = value == 1;
    } else if (strcmp(key, "async") == 0) {
      if (!numeric || value > 1) return bad("0 or 1");
      options->async_queue = value == 1;
    } else {
      return InvalidArgumentError(
          "unknown npu device param '%s' (known: pes, sram_kib, weight_kib, dma_bytes_per_cycle, "
          "dma_setup_cycles, mode, sram_pool_kib, wait_timeout_ms, job_timeout_ms, inline, async)",
          key);
    }
  }
  return OkStatus();
}

StatusOr<ref_ptr<NpuDevice>> NpuDevice::Create(const NpuDeviceOptions& options,
                                               osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("npu device needs a host allocator");
  OSPREY_RETURN_IF_ERROR(sim::ValidateHardwareConfig(options.hardware), "creating an npu device");
  if (options.sram_pool_bytes >= options.hardware.sram_bytes) {
    return InvalidArgumentError(
        "npu SRAM pool of %llu bytes leaves no SRAM for command streams (SRAM is %llu bytes)",
        (ull)options.sram_pool_bytes, (ull)options.hardware.sram_bytes);
  }
  OSPREY_ASSIGN_OR_RETURN(auto device, MakeRef<NpuDevice>(host_allocator, options, host_allocator));
  OSPREY_RETURN_IF_ERROR(NpuHardware::Create(options.hardware, options.hardware_options,
                                             host_allocator, &device->hardware_));
  sim::Simulator* sim = device->hardware_->simulator();
  const uint64_t stream_bytes = options.hardware.sram_bytes - options.sram_pool_bytes;
  sim->set_stream_sram_bytes(stream_bytes);
  OSPREY_ASSIGN_OR_RETURN(
      device->allocator_,
      NpuAllocator::Create(host_allocator, ref_ptr<RefObject>(sim),
                           sim->sram().data() + stream_bytes, options.sram_pool_bytes));
#if OSPREY_HAVE_THREADS
  if (options.async_queue) {
    platform::ThreadOptions thread_options;
    thread_options.name = "osprey-npu-queue";
    OSPREY_RETURN_IF_ERROR(
        device->queue_thread_.Start(thread_options, &NpuDevice::QueueMain, device.get()),
        "starting the npu queue thread");
    device->async_ = true;
  }
#endif
  return device;
}

NpuDevice::~NpuDevice() {
  {
    platform::MutexLock lock(queue_mutex_);
    queue_shutdown_ = true;
    queue_cv_.NotifyAll();
  }
  queue_thread_.Join();  // Runs what is still queued first.
  // Buffers still alive keep the allocator, and through it the SRAM.
  allocator_.reset();
  NpuHardware::Destroy(hardware_);
}

StatusOr<ref_ptr<hal::CommandBuffer>> NpuDevice::CreateCommandBuffer(
    hal::CommandBufferMode mode) {
  OSPREY_ASSIGN_OR_RETURN(auto command_buffer,
                          MakeRef<NpuCommandBuffer>(host_allocator_, mode, host_allocator_));
  return ref_ptr<hal::CommandBuffer>(std::move(command_buffer));
}

StatusOr<ref_ptr<hal::Semaphore>> NpuDevice::CreateSemaphore(uint64_t initial_value) {
  OSPREY_ASSIGN_OR_RETURN(auto semaphore,
                          hal::local::HostSemaphore::Create(initial_value, host_allocator_));
  return ref_ptr<hal::Semaphore>(std::move(semaphore));
}

StatusOr<ref_ptr<hal::ExecutableCache>> NpuDevice::CreateExecutableCache() {
  OSPREY_ASSIGN_OR_RETURN(auto cache, NpuExecutableCache::Create(host_allocator_));
  return ref_ptr<hal::ExecutableCache>(std::move(cache));
}

sim::Counters NpuDevice::counters() {
  platform::MutexLock lock(mutex_);
  return counters_;
}

StatusOr<int64_t> NpuDevice::QueryI64(const char* key) {
  const sim::Counters c = counters();
  const sim::HardwareConfig& config = options_.hardware;
  const struct {
    const char* key;
    uint64_t value;
  } kValues[] = {
      {"npu.total_cycles", c.total_cycles},
      {"npu.compute_cycles", c.compute_cycles},
      {"npu.dma_cycles", c.dma_cycles},
      {"npu.mac_cycles", c.mac_cycles},
      {"npu.macs", c.macs},
      {"npu.dma_bytes_read", c.dma_bytes_read},
      {"npu.dma_bytes_written", c.dma_bytes_written},
      {"npu.instructions", c.instructions},
      {"npu.pes", config.pe_count},
      {"npu.sram_bytes", config.sram_bytes},
      {"npu.weight_memory_bytes", config.weight_memory_bytes},
      // SRAM command streams may address (the rest is the allocator's pool).
      {"npu.stream_sram_bytes", config.sram_bytes - options_.sram_pool_bytes},
  };
  for (const auto& entry : kValues) {
    if (strcmp(entry.key, key) == 0) return int64_t(entry.value);
  }
  return hal::Device::QueryI64(key);
}

Status NpuDevice::Execute(const hal::SemaphoreList& wait,
                          std::span<hal::CommandBuffer* const> command_buffers) {
  const int64_t deadline = platform::DeadlineFromTimeout(options_.wait_timeout_ns);
  for (size_t i = 0; i < wait.size(); ++i) {
    OSPREY_RETURN_IF_ERROR(wait.semaphores[i]->Wait(wait.values[i], deadline),
                           "npu waiting for wait semaphore %zu to reach %llu", i,
                           (ull)wait.values[i]);
  }
  scratch_.Reset();
  NpuExecutor executor(this);
  for (size_t i = 0; i < command_buffers.size(); ++i) {
    auto* recording = hal::local::RecordingCommandBuffer::Cast(command_buffers[i]);
    // Jobs stay in flight while later commands are prepared; whatever
    // happens, they finish before their scratch memory is reused.
    Status replayed = recording->Replay(executor);
    Status drained = executor.Drain();
    if (!replayed.ok()) {
      drained.IgnoreError();  // Reported through |replayed| (or caused by it).
      return std::move(replayed).Annotate("npu executing command buffer %zu", i);
    }
    OSPREY_RETURN_IF_ERROR(std::move(drained), "npu executing command buffer %zu", i);
  }
  return OkStatus();
}

// A queued submission: retained semaphores and command buffers, in one
// host allocation.
struct NpuDevice::Submission {
  Submission* next = nullptr;
  size_t wait_count = 0, command_buffer_count = 0, signal_count = 0;
  hal::Semaphore** waits = nullptr;
  uint64_t* wait_values = nullptr;
  hal::CommandBuffer** command_buffers = nullptr;
  hal::Semaphore** signals = nullptr;
  uint64_t* signal_values = nullptr;
};

Status NpuDevice::Enqueue(const hal::SemaphoreList& wait,
                          std::span<hal::CommandBuffer* const> command_buffers,
                          const hal::SemaphoreList& signal) {
  const size_t pointers = wait.size() + command_buffers.size() + signal.size();
  const size_t values = wait.size() + signal.size();
  const size_t bytes =
      sizeof(Submission) + pointers * sizeof(void*) + values * sizeof(uint64_t);
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(host_allocator_->Allocate(bytes, alignof(Submission), &memory),
                         "queueing an npu submission");
  auto* sub = new (memory) Submission();
  auto* cursor = reinterpret_cast<uint8_t*>(sub + 1);
  auto take = [&cursor](size_t size) {
    void* p = cursor;
    cursor += size;
    return p;
  };
  sub->wait_count = wait.size();
  sub->command_buffer_count = command_buffers.size();
  sub->signal_count = signal.size();
  sub->wait_values = static_cast<uint64_t*>(take(wait.size() * sizeof(uint64_t)));
  sub->signal_values = static_cast<uint64_t*>(take(signal.size() * sizeof(uint64_t)));
  sub->waits = static_cast<hal::Semaphore**>(take(wait.size() * sizeof(void*)));
  sub->command_buffers =
      static_cast<hal::CommandBuffer**>(take(command_buffers.size() * sizeof(void*)));
  sub->signals = static_cast<hal::Semaphore**>(take(signal.size() * sizeof(void*)));
  for (size_t i = 0; i < wait.size(); ++i) {
    sub->waits[i] = wait.semaphores[i];
    sub->waits[i]->Retain();
    sub->wait_values[i] = wait.values[i];
  }
  for (size_t i = 0; i < command_buffers.size(); ++i) {
    sub->command_buffers[i] = command_buffers[i];
    static_cast<RefObject*>(sub->command_buffers[i])->Retain();  // Not CommandBuffer::Retain.
  }
  for (size_t i = 0; i < signal.size(); ++i) {
    sub->signals[i] = signal.semaphores[i];
    sub->signals[i]->Retain();
    sub->signal_values[i] = signal.values[i];
  }
  platform::MutexLock lock(queue_mutex_);
  if (queue_tail_) {
    queue_tail_->next = sub;
  } else {
    queue_head_ = sub;
  }
  queue_tail_ = sub;
  queue_cv_.NotifyAll();
  return OkStatus();
}

void NpuDevice::QueueMain(void* arg) {
  auto* device = static_cast<NpuDevice*>(arg);
  platform::MutexLock lock(device->queue_mutex_);
  while (true) {
    while (!device->queue_head_ && !device->queue_shutdown_) {
      device->queue_cv_.WaitUntil(device->queue_mutex_, platform::kInfiniteFuture);
    }
    Submission* sub = device->queue_head_;
    if (!sub) break;  // Shut down with nothing left.
    device->queue_head_ = sub->next;
    if (!device->queue_head_) device->queue_tail_ = nullptr;
    device->queue_busy_ = true;
    device->queue_mutex_.Unlock();
    // Errors travel through the signal semaphores (every queued submission
    // has at least one), so the returned status is empty here.
    device
        ->ExecuteAndSignal({{sub->waits, sub->wait_count}, {sub->wait_values, sub->wait_count}},
                           {sub->command_buffers, sub->command_buffer_count},
                           {{sub->signals, sub->signal_count},
                            {sub->signal_values, sub->signal_count}})
        .IgnoreError();
    for (size_t i = 0; i < sub->wait_count; ++i) sub->waits[i]->Release();
    for (size_t i = 0; i < sub->command_buffer_count; ++i) {
      static_cast<RefObject*>(sub->command_buffers[i])->Release();
    }
    for (size_t i = 0; i < sub->signal_count; ++i) sub->signals[i]->Release();
    sub->~Submission();
    device->host_allocator_->Free(sub);
    device->queue_mutex_.Lock();
    device->queue_busy_ = false;
    device->queue_cv_.NotifyAll();
  }
}

void NpuDevice::DrainQueue() {
  platform::MutexLock lock(queue_mutex_);
  while (queue_head_ || queue_busy_) {
    queue_cv_.WaitUntil(queue_mutex_, platform::kInfiniteFuture);
  }
}

Status NpuDevice::ExecuteAndSignal(const hal::SemaphoreList& wait,
                                   std::span<hal::CommandBuffer* const> command_buffers,
                                   const hal::SemaphoreList& signal) {
  return hal::local::ExecuteAndSignal(mutex_, signal,
                                      [&] { return Execute(wait, command_buffers); });
}

Status NpuDevice::QueueExecute(const hal::SemaphoreList& wait,
                               std::span<hal::CommandBuffer* const> command_buffers,
                               const hal::SemaphoreList& signal) {
  OSPREY_RETURN_IF_ERROR(hal::local::BeginQueueSubmission("npu", wait, command_buffers, signal));
  if (async_ && signal.size() > 0) return Enqueue(wait, command_buffers, signal);
  // Inline: after everything queued before it, so order is kept.
  if (async_) DrainQueue();
  return ExecuteAndSignal(wait, command_buffers, signal);
}

}  // namespace osprey::drivers::npu
