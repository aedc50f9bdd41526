// cpu-sync dispatch overhead: a pre-recorded command buffer re-submitted,
// with 1 and 1000 workgroups of an empty kernel.
#include <cstring>

#include "benchmark/benchmark.h"
#include "drivers/cpu_sync/cpu_sync_device.h"
#include "hal/cts/kernels/cts_kernels.h"

namespace osprey::drivers::cpu_sync {
namespace {

void BM_Dispatch(benchmark::State& state) {
  const uint32_t workgroups = uint32_t(state.range(0));
  hal::local::StaticLibraryRegistry libraries;
  if (!libraries.Register(OSPREY_CTS_KERNELS_LIBRARY_NAME, &osprey_cts_kernels_query).ok()) {
    state.SkipWithError("registering kernels");
    return;
  }
  CpuSyncDeviceOptions options;
  options.static_libraries = &libraries;
  auto device = CpuSyncDevice::Create(options, Allocator::Default());
  auto cache = (*device)->CreateExecutableCache();
  hal::ExecutableParams params;
  params.format = "static";
  params.data = {reinterpret_cast<const uint8_t*>(OSPREY_CTS_KERNELS_LIBRARY_NAME),
                 strlen(OSPREY_CTS_KERNELS_LIBRARY_NAME)};
  auto executable = (*cache)->PrepareExecutable(params);
  if (!executable.ok()) {
    state.SkipWithError(executable.status().message());
    return;
  }
  auto ordinal = (*executable)->LookupExport("empty");
  auto command_buffer = (*device)->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  if (!ordinal.ok() || !command_buffer.ok() || !(*command_buffer)->Begin().ok() ||
      !(*command_buffer)
           ->Dispatch(executable->get(), *ordinal, {workgroups, 1, 1}, {}, {})
           .ok() ||
      !(*command_buffer)->End().ok()) {
    state.SkipWithError("recording");
    return;
  }
  auto semaphore = (*device)->CreateSemaphore(0);
  hal::Semaphore* signal[] = {semaphore->get()};
  uint64_t value = 0;
  hal::CommandBuffer* buffers[] = {command_buffer->get()};
  for (auto _ : state) {
    ++value;
    Status status = (*device)->QueueExecute({}, buffers, {signal, {&value, 1}});
    if (!status.ok()) {
      state.SkipWithError(status.message());
      break;
    }
  }
  state.counters["ns_per_submission"] = benchmark::Counter(
      double(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns_per_workgroup"] =
      benchmark::Counter(double(state.iterations()) * workgroups,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Dispatch)->Arg(1)->Arg(1000);

}  // namespace
}  // namespace osprey::drivers::cpu_sync
