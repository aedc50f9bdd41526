// The simulated NPU's register block, command ring and device thread.
#include "drivers/npu/npu_hardware.h"

#include <new>

namespace osprey::drivers::npu {

Status NpuHardware::Create(const sim::HardwareConfig& config, const NpuHardwareOptions& options,
                           osprey::Allocator* allocator, NpuHardware** out_hardware) {
  *out_hardware = nullptr;
  OSPREY_ASSIGN_OR_RETURN(auto sim, sim::Simulator::Create(config, allocator));
  OSPREY_ASSIGN_OR_RETURN(NpuHardware * hw, allocator->New<NpuHardware>(allocator, options));
  hw->sim_ = std::move(sim);
  hw->regs_[kHwRegId] = kHwId;
#if OSPREY_HAVE_THREADS
  hw->threaded_ = !options.inline_execution;
#else
  hw->threaded_ = false;
#endif
  if (options.simulate_hang) hw->regs_[kHwRegStatus] |= kHwStatusHung;
  if (hw->threaded_) {
    platform::ThreadOptions thread_options;
    thread_options.name = "osprey-npu";
    Status started = hw->thread_.Start(thread_options, &NpuHardware::ThreadMain, hw);
    if (!started.ok()) {
      allocator->Delete(hw);
      return std::move(started).Annotate("starting the simulated NPU's device thread");
    }
  }
  *out_hardware = hw;
  return OkStatus();
}

void NpuHardware::Destroy(NpuHardware* hw) {
  if (!hw) return;
  {
    platform::MutexLock lock(hw->mutex_);
    hw->shutdown_ = true;
    hw->doorbell_.NotifyAll();
  }
  hw->thread_.Join();
  hw->allocator_->Delete(hw);
}

uint32_t NpuHardware::ReadRegister(HwRegister reg) {
  platform::MutexLock lock(mutex_);
  if (reg >= kHwRegisterCount || reg == kHwRegDoorbell) return 0;
  return regs_[reg];
}

void NpuHardware::WriteRegister(HwRegister reg, uint32_t value) {
  platform::MutexLock lock(mutex_);
  switch (reg) {
    case kHwRegRingHead:
      regs_[kHwRegRingHead] = value % kRingSlots;
      break;
    case kHwRegIrqStatus:
      regs_[kHwRegIrqStatus] &= ~value;
      // Acknowledging the fault resumes the device.
      if (value & kHwIrqFault) regs_[kHwRegStatus] &= ~kHwStatusHalted;
      break;
    case kHwRegDoorbell:
      if (threaded_) {
        doorbell_.NotifyAll();
      } else {
        DrainLocked();
      }
      break;
    default:
      break;  // Read-only registers ignore writes, like the hardware.
  }
}

void NpuHardware::DrainLocked() {
  if (regs_[kHwRegStatus] & kHwStatusHung) return;
  while (regs_[kHwRegRingTail] != regs_[kHwRegRingHead]) {
    const uint32_t slot = regs_[kHwRegRingTail];
    HwJob* job = ring_[slot];
    const uint32_t sequence = tail_sequence_;
    busy_ = true;
    regs_[kHwRegStatus] |= kHwStatusBusy;
    bool faulted = false;
    if (regs_[kHwRegStatus] & kHwStatusHalted) {
      job->status = AbortedError("npu job %u not run: the device halted on a fault in job %u",
                                 static_cast<unsigned>(sequence),
                                 static_cast<unsigned>(regs_[kHwRegFaultJob]));
    } else {
      // The stream runs without the lock so the driver can poll registers.
      mutex_.Unlock();
      job->status = sim_->Execute(job->words, job->windows, &job->counters, &job->fault);
      faulted = !job->status.ok();
      mutex_.Lock();
    }
    ring_[slot] = nullptr;
    regs_[kHwRegRingTail] = (slot + 1) % kRingSlots;
    ++tail_sequence_;
    regs_[kHwRegCompleted] = sequence;
    if (faulted) {
      regs_[kHwRegFaultJob] = sequence;
      regs_[kHwRegFaultKind] = static_cast<uint32_t>(job->fault.kind);
      regs_[kHwRegIrqStatus] |= kHwIrqFault;
    }
    regs_[kHwRegIrqStatus] |= kHwIrqJobDone;
    busy_ = false;
    regs_[kHwRegStatus] &= ~kHwStatusBusy;
    if (faulted) regs_[kHwRegStatus] |= kHwStatusHalted;
    interrupt_.NotifyAll();
  }
}

void NpuHardware::ThreadMain(void* arg) {
  auto* hw = static_cast<NpuHardware*>(arg);
  platform::MutexLock lock(hw->mutex_);
  while (!hw->shutdown_) {
    hw->DrainLocked();
    if (hw->shutdown_) break;
    hw->doorbell_.WaitUntil(hw->mutex_, platform::kInfiniteFuture);
  }
}

StatusOr<uint32_t> NpuHardware::Submit(HwJob* job) {
  uint32_t sequence = 0;
  {
    platform::MutexLock lock(mutex_);
    const uint32_t head = regs_[kHwRegRingHead];
    if ((head + 1) % kRingSlots == regs_[kHwRegRingTail]) {
      return ResourceExhaustedError("npu command ring is full (%u slots)", kRingSlots - 1);
    }
    ring_[head] = job;
    sequence = next_sequence_++;
  }
  WriteRegister(kHwRegRingHead, ReadRegister(kHwRegRingHead) + 1);
  WriteRegister(kHwRegDoorbell, 1);
  return sequence;
}

Status NpuHardware::WaitForCompletion(uint32_t sequence, int64_t deadline_ns) {
  platform::MutexLock lock(mutex_);
  // Sequence numbers wrap at 2^32; compare by signed distance.
  while (static_cast<int32_t>(regs_[kHwRegCompleted] - sequence) < 0) {
    if (!threaded_) {
      return DeadlineExceededError("npu job %u did not complete (device %s)", sequence,
                                   (regs_[kHwRegStatus] & kHwStatusHung) ? "hung" : "idle");
    }
    if (!interrupt_.WaitUntil(mutex_, deadline_ns) &&
        static_cast<int32_t>(regs_[kHwRegCompleted] - sequence) < 0) {
      return DeadlineExceededError("npu job %u did not complete before the deadline (device %s)",
                                   sequence,
                                   (regs_[kHwRegStatus] & kHwStatusHung) ? "hung" : "busy");
    }
  }
  regs_[kHwRegIrqStatus] &= ~kHwIrqJobDone;
  return OkStatus();
}

void NpuHardware::Reset() {
  platform::MutexLock lock(mutex_);
  while (busy_) interrupt_.WaitUntil(mutex_, platform::kInfiniteFuture);
  for (uint32_t i = 0; i < kRingSlots; ++i) ring_[i] = nullptr;
  // Dropped jobs count as completed so sequence numbers stay monotonic.
  regs_[kHwRegCompleted] = next_sequence_ - 1;
  tail_sequence_ = next_sequence_;
  regs_[kHwRegRingTail] = regs_[kHwRegRingHead];
  regs_[kHwRegIrqStatus] = 0;
  regs_[kHwRegStatus] = 0;
}

}  // namespace osprey::drivers::npu
