// HAL value types: sizes, memory types, buffer usage, access and element
// types. Bit-flag enums support |, & and AllBitsSet().
#ifndef OSPREY_HAL_TYPES_H_
#define OSPREY_HAL_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace osprey::hal {

using DeviceSize = uint64_t;
// As a length: "from the offset to the end of the buffer".
inline constexpr DeviceSize kWholeBuffer = ~DeviceSize(0);

#define OSPREY_HAL_BITFLAGS(T)                                                   \
  constexpr T operator|(T a, T b) {                                              \
    return T(std::underlying_type_t<T>(a) | std::underlying_type_t<T>(b));       \
  }                                                                              \
  constexpr T operator&(T a, T b) {                                              \
    return T(std::underlying_type_t<T>(a) & std::underlying_type_t<T>(b));       \
  }                                                                              \
  constexpr T operator~(T a) { return T(~std::underlying_type_t<T>(a)); }        \
  constexpr T& operator|=(T& a, T b) { return a = a | b; }                       \
  constexpr T& operator&=(T& a, T b) { return a = a & b; }                       \
  constexpr bool AnyBitSet(T value, T bits) {                                    \
    return std::underlying_type_t<T>(value & bits) != 0;                         \
  }                                                                              \
  constexpr bool AllBitsSet(T value, T bits) { return (value & bits) == bits; }

// Where a buffer's memory lives and who can see it. Requested by the caller
// and enforced: a buffer whose type lacks kHostVisible cannot be mapped.
enum class MemoryType : uint32_t {
  kNone = 0,
  // Let the allocator choose the best placement for the usage (resolved by
  // Allocator::QueryCompatibility before allocation).
  kOptimal = 1u << 0,
  // The host can map it (Vulkan HOST_VISIBLE, CUDA host-mapped).
  kHostVisible = 1u << 1,
  // Host and device views stay in sync without flush/invalidate
  // (Vulkan HOST_COHERENT).
  kHostCoherent = 1u << 2,
  // Host reads are cached (Vulkan HOST_CACHED); may need invalidation.
  kHostCached = 1u << 3,
  // The device can access it (dispatches and transfers may bind it).
  kDeviceVisible = 1u << 4,
  // Placed in device memory (GPU VRAM, NPU SRAM). Implies device-visible.
  kDeviceLocalBit = 1u << 5,
  kDeviceLocal = kDeviceLocalBit | kDeviceVisible,
  // Placed in host memory (system RAM). Implies host-visible.
  kHostLocalBit = 1u << 6,
  kHostLocal = kHostLocalBit | kHostVisible,
};
OSPREY_HAL_BITFLAGS(MemoryType)

// What a buffer may be used for. Checked when recording commands.
enum class BufferUsage : uint32_t {
  kNone = 0,
  kTransferSource = 1u << 0,   // Source of copy commands.
  kTransferTarget = 1u << 1,   // Target of fill/update/copy commands.
  kTransfer = kTransferSource | kTransferTarget,
  kDispatchUniformRead = 1u << 2,   // Small read-only dispatch parameters.
  kDispatchStorageRead = 1u << 3,   // Read by dispatches.
  kDispatchStorageWrite = 1u << 4,  // Written by dispatches.
  kDispatchStorage = kDispatchStorageRead | kDispatchStorageWrite,
  kMappingScoped = 1u << 5,      // Host maps it for short periods.
  kMappingPersistent = 1u << 6,  // Host keeps it mapped.
  kMapping = kMappingScoped,
  // Contents are constant after initialization (weights); may be placed in
  // read-only memory or aliased from the module file.
  kConstant = 1u << 7,
  kDefault = kTransfer | kDispatchStorage | kMapping,
};
OSPREY_HAL_BITFLAGS(BufferUsage)

// How a buffer's contents may be accessed (host mapping and device binding).
enum class MemoryAccess : uint32_t {
  kNone = 0,
  kRead = 1u << 0,
  kWrite = 1u << 1,
  // The previous contents may be thrown away (write-only initialization).
  kDiscard = 1u << 2,
  kDiscardWrite = kDiscard | kWrite,
  kAll = kRead | kWrite | kDiscard,
};
OSPREY_HAL_BITFLAGS(MemoryAccess)

// Parameters of a buffer to allocate or import.
struct BufferParams {
  MemoryType type = MemoryType::kOptimal;
  BufferUsage usage = BufferUsage::kDefault;
  MemoryAccess access = MemoryAccess::kAll;
  // Minimum alignment of the allocation (0: the allocator's default).
  DeviceSize min_alignment = 0;
};

// Answer of Allocator::QueryCompatibility.
enum class BufferCompatibility : uint32_t {
  kNone = 0,
  kAllocatable = 1u << 0,  // Allocate() will succeed (memory permitting).
  kImportable = 1u << 1,   // Host memory with these params can be imported.
  kExportable = 1u << 2,   // The buffer can be exported to the host.
  kQueueTransfer = 1u << 3,  // Usable by transfer commands.
  kQueueDispatch = 1u << 4,  // Usable by dispatches.
  kLowPerformance = 1u << 5,  // Works, but slowly (e.g. host memory on NPU).
};
OSPREY_HAL_BITFLAGS(BufferCompatibility)

// Element types of buffer views. Encoded as (kind << 24) | bit width so the
// size can be derived without a table.
enum class ElementType : uint32_t {
  kNone = 0,
  kInt8 = (1u << 24) | 8,
  kInt16 = (1u << 24) | 16,
  kInt32 = (1u << 24) | 32,
  kInt64 = (1u << 24) | 64,
  kUint8 = (2u << 24) | 8,
  kUint16 = (2u << 24) | 16,
  kUint32 = (2u << 24) | 32,
  kUint64 = (2u << 24) | 64,
  kFloat16 = (3u << 24) | 16,
  kFloat32 = (3u << 24) | 32,
  kFloat64 = (3u << 24) | 64,
  kBFloat16 = (4u << 24) | 16,
  kBool8 = (5u << 24) | 8,  // One byte per element, 0 or 1.
};

constexpr uint32_t ElementBitWidth(ElementType type) { return uint32_t(type) & 0xFFFFFFu; }
constexpr DeviceSize ElementByteSize(ElementType type) {
  return (ElementBitWidth(type) + 7) / 8;
}
// "f32", "i8", ... ("unknown" for anything else).
const char* ElementTypeName(ElementType type);

// Data layout of a buffer view.
enum class Encoding : uint32_t {
  kDenseRowMajor = 0,
};

// Number of workgroups of a dispatch in each dimension.
struct WorkgroupCount {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_TYPES_H_
