// libFuzzer target: the ELF loader (parsing, segment placement, dynamic
// relocation, symbol lookup) for every machine it knows, never executing
// the image.
#include <cstddef>
#include <cstdint>

#include "hal/local/loaders/elf/elf_image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey::hal::local::loaders::elf;
  for (int m = 0; m < kElfMachineCount; ++m) {
    ElfImageOptions options;
    options.machine = ElfMachine(m);
    options.executable = false;
    options.max_image_size = 16u << 20;
    auto image = ElfImage::Load(std::span<const uint8_t>(data, size), options,
                                osprey::Allocator::Default());
    if (!image.ok()) continue;
    auto symbol = (*image)->LookupSymbol("osprey_executable_library_query");
    (void)symbol.ok();
    uint8_t word[8];
    (*image)->Read((*image)->query_address(), word, sizeof(word)).IgnoreError();
  }
  return 0;
}
