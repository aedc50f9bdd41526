// The NPU's device allocator: host memory the device reaches by DMA, and
// device-local buffers in the SRAM that the host cannot map.
//
// Placement follows the requested memory type exactly:
//   - kDeviceLocal without kHostVisible: carved from the SRAM pool (the part
//     of the SRAM command streams cannot address directly). Only the NPU's
//     DMA reaches it; MapRange fails with PERMISSION_DENIED. Not importable.
//   - anything host-visible (and kOptimal, which resolves to host-local,
//     coherent, device-visible): host memory, mapped for the device per
//     submission with the access each binding needs.
// Thread-safe.
#ifndef OSPREY_DRIVERS_NPU_NPU_ALLOCATOR_H_
#define OSPREY_DRIVERS_NPU_NPU_ALLOCATOR_H_

#include <atomic>
#include <cstdint>

#include "hal/allocator.h"
#include "runtime/base/allocator.h"
#include "runtime/base/platform/platform.h"

namespace osprey::drivers::npu {

class NpuAllocator final : public hal::Allocator {
 public:
  static constexpr hal::DeviceSize kDefaultBufferAlignment = 64;

  // |pool| (|pool_bytes| of SRAM) belongs to |pool_owner|, which the
  // allocator retains (buffers retain the allocator, so the SRAM outlives
  // every buffer in it). |host_allocator| (borrowed) holds buffer objects
  // and host-memory contents. |pool_bytes| may be 0 (no device-local memory).
  static StatusOr<ref_ptr<NpuAllocator>> Create(osprey::Allocator* host_allocator,
                                                ref_ptr<RefObject> pool_owner, uint8_t* pool,
                                                uint64_t pool_bytes);
  ~NpuAllocator() override;

  osprey::Allocator* host_allocator() const override { return host_allocator_; }
  hal::BufferCompatibility QueryCompatibility(hal::BufferParams* params,
                                              hal::DeviceSize length) const override;
  // INVALID_ARGUMENT for incompatible params (the message says why),
  // RESOURCE_EXHAUSTED when host memory or the SRAM pool is full.
  StatusOr<ref_ptr<hal::Buffer>> AllocateBuffer(const hal::BufferParams& params,
                                                hal::DeviceSize length) override;
  // Host memory only (INVALID_ARGUMENT for device-local params).
  StatusOr<ref_ptr<hal::Buffer>> ImportBuffer(const hal::BufferParams& params, void* memory,
                                              hal::DeviceSize length,
                                              hal::ReleaseCallback release) override;
  hal::DeviceSize bytes_allocated() const override { return bytes_allocated_.load(); }

  // True if [data, data + length) lies in the SRAM pool; |out_offset| gets
  // its offset from the pool start.
  bool InPool(const uint8_t* data, uint64_t length, uint64_t* out_offset) const;
  uint64_t pool_bytes() const { return pool_bytes_; }

 private:
  friend class SramBuffer;
  friend class osprey::Allocator;
  NpuAllocator(osprey::Allocator* host_allocator, uint8_t* pool, uint64_t pool_bytes)
      : host_allocator_(host_allocator),
        pool_(pool),
        pool_bytes_(pool_bytes),
        pool_allocator_(pool, pool_bytes) {}

  static bool IsSram(const hal::BufferParams& params);
  Status Check(const hal::BufferParams& params, hal::DeviceSize length) const;
  void FreeSram(void* data, hal::DeviceSize length);

  osprey::Allocator* host_allocator_;
  ref_ptr<RefObject> pool_owner_;
  uint8_t* pool_;
  uint64_t pool_bytes_;
  platform::Mutex pool_mutex_;
  StaticArenaAllocator pool_allocator_;  // Guarded by pool_mutex_.
  std::atomic<hal::DeviceSize> bytes_allocated_{0};
};

}  // namespace osprey::drivers::npu

#endif  // OSPREY_DRIVERS_NPU_NPU_ALLOCATOR_H_
