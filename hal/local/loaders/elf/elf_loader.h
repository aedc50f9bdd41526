// The embedded ELF loader: an ExecutableLoader for position-independent
// shared objects ("elf-x86_64", "elf-aarch64", "elf-armv7em", "elf-riscv32",
// "elf-riscv64") that maps them itself, without the system's dynamic
// linker, so it also works on bare metal. See docs/executable-abi.md.
#ifndef OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_LOADER_H_
#define OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_LOADER_H_

#include "hal/local/executable_loader.h"
#include "hal/local/loaders/elf/elf_image.h"
#include "runtime/base/allocator.h"
#include "runtime/base/status.h"

namespace osprey::hal::local::loaders::elf {

// Checks that everything a queried library description points at (header,
// name, export/import arrays, names, dispatch functions) lies inside the
// loaded segments of |image| with the right permissions and alignment, so
// reading the description cannot leave the image. INVALID_ARGUMENT naming
// the first bad pointer. |image| must be executable().
Status ValidateLibraryInImage(const ElfImage& image,
                              const osprey_executable_library_header_t* const* library);

// Thread-safe: Load() may be called from several threads at once.
class ElfLoader final : public ExecutableLoader {
 public:
  ElfLoader() = default;
  explicit ElfLoader(size_t max_image_size) : max_image_size_(max_image_size) {}

  const char* name() const override { return "elf"; }
  // True for the ELF format of the host's own machine; other ELF formats
  // are understood (Load reports UNAVAILABLE) but cannot run here.
  bool CanLoad(const char* format) const override;

  // Maps and relocates |params.data| (always copied; kAliasData is allowed
  // but not needed), checks the library description the query returns,
  // and wraps it in a LibraryExecutable that keeps the image mapped.
  // INVALID_ARGUMENT for a format that is not an ELF format or does not
  // match the file's machine; UNAVAILABLE for another machine's code;
  // otherwise the errors of ElfImage::Load and LibraryExecutable.
  StatusOr<ref_ptr<LocalExecutable>> Load(const ExecutableParams& params,
                                          const ImportTable& imports,
                                          osprey::Allocator* host_allocator) override;

 private:
  size_t max_image_size_ = ElfImageOptions().max_image_size;
};

// Creates an ElfLoader in memory from |allocator|; the caller deletes it
// with allocator->Delete(). RESOURCE_EXHAUSTED if the memory is not there.
Status CreateElfLoader(osprey::Allocator* allocator, ExecutableLoader** out_loader);

}  // namespace osprey::hal::local::loaders::elf

#endif  // OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_LOADER_H_
