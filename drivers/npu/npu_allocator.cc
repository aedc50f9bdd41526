// NPU buffers: host memory for DMA, and SRAM-resident device-local memory.
#include "drivers/npu/npu_allocator.h"

#include <utility>

#include "hal/local/host_buffer.h"
#include "hal/local/memory_types.h"

namespace osprey::drivers::npu {

using hal::BufferCompatibility;
using hal::BufferParams;
using hal::BufferUsage;
using hal::DeviceSize;
using hal::MemoryAccess;
using hal::MemoryType;
using ull = unsigned long long;

// A range of the SRAM pool. The host never maps it (its memory type lacks
// kHostVisible, which Buffer::MapRange checks); MapRangeImpl serves the
// driver's device mappings (Buffer::MapForDevice), which turn the address
// back into an SRAM offset.
class SramBuffer final : public hal::Buffer {
 public:
  SramBuffer(NpuAllocator* allocator, const BufferParams& params, DeviceSize length,
             uint8_t* data)
      : Buffer(allocator, params.type, params.usage, params.access, 0, length),
        allocator_(allocator),
        data_(data) {}
  ~SramBuffer() override { allocator_->FreeSram(data_, byte_length()); }

 protected:
  Status MapRangeImpl(MemoryAccess, DeviceSize offset, DeviceSize, uint8_t** out_data) override {
    *out_data = data_ + offset;
    return OkStatus();
  }

 private:
  ref_ptr<NpuAllocator> allocator_;
  uint8_t* data_;
};

StatusOr<ref_ptr<NpuAllocator>> NpuAllocator::Create(osprey::Allocator* host_allocator,
                                                     ref_ptr<RefObject> pool_owner, uint8_t* pool,
                                                     uint64_t pool_bytes) {
  if (!host_allocator) return InvalidArgumentError("npu allocator needs a host allocator");
  OSPREY_ASSIGN_OR_RETURN(auto allocator,
                          MakeRef<NpuAllocator>(host_allocator, host_allocator, pool, pool_bytes));
  allocator->pool_owner_ = std::move(pool_owner);
  return allocator;
}

NpuAllocator::~NpuAllocator() = default;

bool NpuAllocator::IsSram(const BufferParams& params) {
  return AnyBitSet(params.type, MemoryType::kDeviceLocalBit) &&
         !AnyBitSet(params.type, MemoryType::kHostVisible);
}

Status NpuAllocator::Check(const BufferParams& params, DeviceSize length) const {
  OSPREY_RETURN_IF_ERROR(hal::local::CheckMemoryType(params, "npu"));
  if (IsSram(params)) {
    if (params.min_alignment > 4096) {
      return InvalidArgumentError("npu SRAM buffers align to at most 4096 bytes, %llu requested",
                                  (ull)params.min_alignment);
    }
    if (length > pool_bytes_) {
      return InvalidArgumentError(
          "device-local buffer of %llu bytes exceeds the npu SRAM pool of %llu bytes",
          (ull)length, (ull)pool_bytes_);
    }
  } else if (length > DeviceSize(0xFFFFFFFFu)) {
    return InvalidArgumentError(
        "buffer of %llu bytes exceeds the npu's 32-bit device address space", (ull)length);
  }
  return OkStatus();
}

BufferCompatibility NpuAllocator::QueryCompatibility(BufferParams* params,
                                                     DeviceSize length) const {
  hal::local::ResolveMemoryType(params);
  Status status = Check(*params, length);
  if (!status.ok()) {
    status.IgnoreError();  // "Never works"; AllocateBuffer says why.
    return BufferCompatibility::kNone;
  }
  // SRAM holds no host memory to import.
  return hal::local::ResolvedCompatibility(*params, /*importable=*/!IsSram(*params));
}

StatusOr<ref_ptr<hal::Buffer>> NpuAllocator::AllocateBuffer(const BufferParams& params,
                                                            DeviceSize length) {
  BufferParams resolved = params;
  hal::local::ResolveMemoryType(&resolved);
  OSPREY_RETURN_IF_ERROR(Check(resolved, length), "allocating an npu buffer of %llu bytes",
                         (ull)length);
  const DeviceSize alignment = resolved.min_alignment > kDefaultBufferAlignment
                                   ? resolved.min_alignment
                                   : kDefaultBufferAlignment;
  void* data = nullptr;
  if (IsSram(resolved)) {
    {
      platform::MutexLock lock(pool_mutex_);
      OSPREY_RETURN_IF_ERROR(
          pool_allocator_.Allocate(length ? size_t(length) : 1, size_t(alignment), &data),
          "allocating %llu bytes of npu SRAM", (ull)length);
    }
    auto buffer =
        MakeRef<SramBuffer>(host_allocator_, this, resolved, length, static_cast<uint8_t*>(data));
    if (!buffer.ok()) {
      FreeSram(data, 0);
      return std::move(buffer).status();
    }
    bytes_allocated_.fetch_add(length);
    return ref_ptr<hal::Buffer>(std::move(*buffer));
  }
  OSPREY_RETURN_IF_ERROR(
      host_allocator_->Allocate(length ? size_t(length) : 1, size_t(alignment), &data),
      "allocating an npu host buffer of %llu bytes", (ull)length);
  auto buffer = MakeRef<hal::local::HostBuffer>(host_allocator_, this, resolved, length,
                                                 static_cast<uint8_t*>(data), host_allocator_,
                                                 &bytes_allocated_, hal::ReleaseCallback{});
  if (!buffer.ok()) {
    host_allocator_->Free(data);
    return std::move(buffer).status();
  }
  bytes_allocated_.fetch_add(length);
  return ref_ptr<hal::Buffer>(std::move(*buffer));
}

StatusOr<ref_ptr<hal::Buffer>> NpuAllocator::ImportBuffer(const BufferParams& params, void* memory,
                                                          DeviceSize length,
                                                          hal::ReleaseCallback release) {
  BufferParams resolved = params;
  hal::local::ResolveMemoryType(&resolved);
  OSPREY_RETURN_IF_ERROR(Check(resolved, length), "importing %llu bytes into the npu",
                         (ull)length);
  if (IsSram(resolved)) {
    return InvalidArgumentError("host memory cannot be imported as device-local npu SRAM");
  }
  if (!memory && length > 0) return InvalidArgumentError("imported memory is null");
  if (resolved.min_alignment && reinterpret_cast<uintptr_t>(memory) % resolved.min_alignment) {
    return InvalidArgumentError("imported memory at %p is not aligned to %llu bytes", memory,
                                (ull)resolved.min_alignment);
  }
  OSPREY_ASSIGN_OR_RETURN(auto buffer,
                          MakeRef<hal::local::HostBuffer>(host_allocator_, this, resolved, length,
                                                          static_cast<uint8_t*>(memory), nullptr,
                                                          nullptr, release));
  return ref_ptr<hal::Buffer>(std::move(buffer));
}

void NpuAllocator::FreeSram(void* data, DeviceSize length) {
  {
    platform::MutexLock lock(pool_mutex_);
    pool_allocator_.Free(data);
  }
  bytes_allocated_.fetch_sub(length);
}

bool NpuAllocator::InPool(const uint8_t* data, uint64_t length, uint64_t* out_offset) const {
  if (!pool_ || data < pool_ || data > pool_ + pool_bytes_) return false;
  const uint64_t offset = static_cast<uint64_t>(data - pool_);
  if (length > pool_bytes_ - offset) return false;
  *out_offset = offset;
  return true;
}

}  // namespace osprey::drivers::npu
