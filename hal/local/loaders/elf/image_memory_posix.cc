// Image memory on POSIX hosts: anonymous mappings protected per segment.
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hal/local/loaders/elf/elf_status.h"
#include "hal/local/loaders/elf/image_memory.h"

namespace osprey::hal::local::loaders::elf {

size_t ImageMemoryPageSize() {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<size_t>(page) : 4096;
}

Status AllocateExecutableMemory(size_t size, size_t alignment, osprey::Allocator* allocator,
                                ImageMemory* out_memory) {
  *out_memory = ImageMemory();
  const size_t page = ImageMemoryPageSize();
  if (size == 0 || size > SIZE_MAX - page) {
    return OSPREY_ELF_ERROR(kResourceExhausted, "cannot map an image of %zu bytes", size);
  }
  const size_t rounded = (size + page - 1) & ~(page - 1);
  // Anonymous mappings are page aligned and zero-filled; larger segment
  // alignments only matter for the link-time layout, which is preserved.
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return OSPREY_ELF_ERROR(kResourceExhausted,
                            "mapping %zu bytes for an executable image failed: %s", rounded,
                            strerror(errno));
  }
  out_memory->base = static_cast<uint8_t*>(p);
  out_memory->size = rounded;
  out_memory->mapped = true;
  return OkStatus();
}

Status ProtectImageMemory(const ImageMemory& memory, size_t offset, size_t length, uint32_t flags) {
  if (!memory.mapped || length == 0) return OkStatus();
  int prot = 0;
  if (flags & 4u) prot |= PROT_READ;
  if (flags & 2u) prot |= PROT_WRITE;
  if (flags & 1u) prot |= PROT_EXEC;
  if (mprotect(memory.base + offset, length, prot) != 0) {
    return OSPREY_ELF_ERROR(kInternal, "mprotect of %zu bytes at image offset %zu failed: %s",
                            length, offset, strerror(errno));
  }
  return OkStatus();
}

void FlushInstructionCache(void* begin, size_t length) {
  char* b = static_cast<char*>(begin);
  __builtin___clear_cache(b, b + length);
}

void FreeExecutableMemory(ImageMemory* memory, osprey::Allocator* allocator) {
  if (!memory->base) return;
  if (memory->mapped) {
    munmap(memory->base, memory->size);
  } else if (allocator) {
    allocator->Free(memory->base);
  }
  *memory = ImageMemory();
}

}  // namespace osprey::hal::local::loaders::elf
