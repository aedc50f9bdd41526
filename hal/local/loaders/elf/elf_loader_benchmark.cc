// Benchmarks of the ELF loader: loading and querying a host library, and
// parsing and relocating a foreign one.
#include "benchmark/benchmark.h"
#include "hal/local/loaders/elf/elf_image.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "tests/executables/test_executables.h"

namespace osprey::hal::local::loaders::elf {
namespace {

void BM_LoadHostLibrary(benchmark::State& state) {
  ElfMachine host;
  if (!ElfHostMachine(&host)) {
    state.SkipWithError("host machine has no ELF format");
    return;
  }
  auto bytes = osprey::testing::TestExecutable("vector_add", ElfMachineName(host));
  if (bytes.empty()) {
    state.SkipWithError("test libraries were not built");
    return;
  }
  ElfLoader loader;
  ExecutableParams params;
  params.format = ElfMachineFormat(host);
  params.data = bytes;
  for (auto _ : state) {
    auto executable = loader.Load(params, {}, Allocator::Default());
    if (!executable.ok()) {
      state.SkipWithError("load failed");
      return;
    }
    benchmark::DoNotOptimize(executable->get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_LoadHostLibrary);

void BM_RelocateForeignLibrary(benchmark::State& state) {
  auto bytes = osprey::testing::TestExecutable("tables", "armv7em");
  if (bytes.empty()) {
    state.SkipWithError("test libraries were not built");
    return;
  }
  ElfImageOptions options;
  options.machine = ElfMachine::kArmv7em;
  for (auto _ : state) {
    auto image = ElfImage::Load(bytes, options, Allocator::Default());
    if (!image.ok()) {
      state.SkipWithError("load failed");
      return;
    }
    benchmark::DoNotOptimize(image->get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_RelocateForeignLibrary);

}  // namespace
}  // namespace osprey::hal::local::loaders::elf
