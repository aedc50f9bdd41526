// The platform part of the ELF loader: memory that can hold code. POSIX
// hosts map anonymous pages and protect each segment W^X; bare-metal builds
// take plain memory from the osprey::Allocator (no MMU, no protections).
#ifndef OSPREY_HAL_LOCAL_LOADERS_ELF_IMAGE_MEMORY_H_
#define OSPREY_HAL_LOCAL_LOADERS_ELF_IMAGE_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/status.h"

namespace osprey::hal::local::loaders::elf {

// A block of image memory. |mapped| says which Free path it takes.
struct ImageMemory {
  uint8_t* base = nullptr;
  size_t size = 0;
  bool mapped = false;
};

// Granularity of ProtectImageMemory (1 when the platform has no protection).
size_t ImageMemoryPageSize();

// Allocates |size| zeroed, readable and writable bytes that can later be
// made executable, aligned to at least |alignment| (a power of two; the
// platform may cap it at its page size). RESOURCE_EXHAUSTED when the memory
// is not there. |allocator| is used where the platform has no mapper and
// must be passed again to FreeExecutableMemory.
Status AllocateExecutableMemory(size_t size, size_t alignment, osprey::Allocator* allocator,
                                ImageMemory* out_memory);

// Sets the protection of [offset, offset + length) of |memory| (page
// aligned) to the ELF PF_R/PF_W/PF_X bits in |flags|. No-op without an MMU.
// INTERNAL if the platform refuses.
Status ProtectImageMemory(const ImageMemory& memory, size_t offset, size_t length, uint32_t flags);

// Makes code written to [begin, begin + length) visible to instruction fetch.
void FlushInstructionCache(void* begin, size_t length);

// Frees memory from AllocateExecutableMemory; an empty block is ignored.
void FreeExecutableMemory(ImageMemory* memory, osprey::Allocator* allocator);

}  // namespace osprey::hal::local::loaders::elf

#endif  // OSPREY_HAL_LOCAL_LOADERS_ELF_IMAGE_MEMORY_H_
