// Image memory on bare metal: plain allocator memory, no protections (the
// Cortex-M fetches instructions from SRAM as well as from flash).
#include <string.h>

#include "hal/local/loaders/elf/image_memory.h"

namespace osprey::hal::local::loaders::elf {

namespace {
// Segment alignments above this only pad the link-time layout; the data
// inside never needs more.
constexpr size_t kMaxAlignment = 64;
}  // namespace

size_t ImageMemoryPageSize() { return 1; }

Status AllocateExecutableMemory(size_t size, size_t alignment, osprey::Allocator* allocator,
                                ImageMemory* out_memory) {
  *out_memory = ImageMemory();
  if (alignment < 8) alignment = 8;
  if (alignment > kMaxAlignment) alignment = kMaxAlignment;
  void* p = nullptr;
  OSPREY_RETURN_IF_ERROR(allocator->AllocateZeroed(size, alignment, &p),
                         "allocating %zu bytes for an executable image", size);
  out_memory->base = static_cast<uint8_t*>(p);
  out_memory->size = size;
  out_memory->mapped = false;
  return OkStatus();
}

Status ProtectImageMemory(const ImageMemory& memory, size_t offset, size_t length, uint32_t flags) {
  return OkStatus();
}

void FlushInstructionCache(void* begin, size_t length) {
  char* b = static_cast<char*>(begin);
  __builtin___clear_cache(b, b + length);
}

void FreeExecutableMemory(ImageMemory* memory, osprey::Allocator* allocator) {
  if (memory->base && allocator) allocator->Free(memory->base);
  *memory = ImageMemory();
}

}  // namespace osprey::hal::local::loaders::elf
