// cpu-task against cpu-sync: empty and one-fill submission round trips,
// dispatch-to-dispatch latency of small dispatches, and a compute-bound
// dispatch on 1 and 2 workers. Every iteration waits for the submission.
#include <benchmark/benchmark.h>

#include <cstring>

#include "drivers/cpu_task/cpu_task_device.h"
#include "hal/local/static_library_loader.h"
#if OSPREY_CPU_TASK_BENCH_HAVE_CPU_SYNC
#include "drivers/cpu_sync/cpu_sync_device.h"
#endif

namespace osprey::drivers::cpu_task {
namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

// out[wg] = a dependent chain of constants[0] multiply-adds seeded by wg.
int Spin(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
         const osprey_workgroup_state_v1_t* w) {
  uint64_t x = w->workgroup_id_x + 1;
  for (uint32_t i = 0; i < d->constants[0]; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  static_cast<uint32_t*>(d->binding_ptrs[0])[w->workgroup_id_x] = uint32_t(x >> 32);
  return 0;
}

// out[wg] += 1: a small dispatch that touches memory.
int Touch(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
          const osprey_workgroup_state_v1_t* w) {
  static_cast<uint32_t*>(d->binding_ptrs[0])[w->workgroup_id_x] += 1;
  return 0;
}

const osprey_dispatch_fn_t kFunctions[] = {&Spin, &Touch};
const osprey_dispatch_attrs_v1_t kAttrs[] = {
    {/*binding_count=*/1, /*constant_count=*/1, /*binding_write_mask=*/0x1, 0, {1, 1, 1}},
    {1, 0, 0x1, 0, {1, 1, 1}},
};
const char* const kNames[] = {"spin", "touch"};
const osprey_executable_library_header_t kHeader = {OSPREY_EXECUTABLE_LIBRARY_VERSION_1,
                                                    "cpu_task_bench"};
const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {0, nullptr}, {2, kFunctions, kAttrs, kNames}};
const osprey_executable_library_header_t* const* QueryLibrary(
    uint32_t max_version, const osprey_executable_environment_v1_t*) {
  return max_version >= OSPREY_EXECUTABLE_LIBRARY_VERSION_1 ? &kLibrary.header : nullptr;
}

//===----------------------------------------------------------------------===//
// Harness
//===----------------------------------------------------------------------===//

enum DeviceKind : int64_t { kSync = 0, kTask1 = 1, kTask2 = 2 };

struct Harness {
  hal::local::StaticLibraryRegistry libraries;
  ref_ptr<hal::Device> device;
  ref_ptr<hal::Executable> executable;
  ref_ptr<hal::Semaphore> semaphore;
  uint64_t value = 0;

  Status Init(int64_t kind) {
    OSPREY_RETURN_IF_ERROR(libraries.Register("cpu_task_bench", &QueryLibrary));
    if (kind == kSync) {
#if OSPREY_CPU_TASK_BENCH_HAVE_CPU_SYNC
      cpu_sync::CpuSyncDeviceOptions options;
      options.static_libraries = &libraries;
      OSPREY_ASSIGN_OR_RETURN(auto sync, cpu_sync::CpuSyncDevice::Create(options,
                                                                         Allocator::Default()));
      device = std::move(sync);
#else
      return UnavailableError("cpu-sync is not part of this build");
#endif
    } else {
      CpuTaskDeviceOptions options;
      options.static_libraries = &libraries;
      options.worker_count = uint32_t(kind);
      OSPREY_ASSIGN_OR_RETURN(auto task, CpuTaskDevice::Create(options, Allocator::Default()));
      device = std::move(task);
    }
    OSPREY_ASSIGN_OR_RETURN(auto cache, device->CreateExecutableCache());
    hal::ExecutableParams params;
    params.format = "static";
    params.data = {reinterpret_cast<const uint8_t*>("cpu_task_bench"), 14};
    OSPREY_ASSIGN_OR_RETURN(executable, cache->PrepareExecutable(params));
    OSPREY_ASSIGN_OR_RETURN(semaphore, device->CreateSemaphore(0));
    return OkStatus();
  }

  // Submits |command_buffer| and waits for it.
  Status Run(hal::CommandBuffer* command_buffer) {
    ++value;
    hal::Semaphore* signal[] = {semaphore.get()};
    hal::CommandBuffer* buffers[] = {command_buffer};
    OSPREY_RETURN_IF_ERROR(device->QueueExecute({}, buffers, {signal, {&value, 1}}));
    return semaphore->Wait(value, platform::kInfiniteFuture);
  }
};

const char* KindName(int64_t kind) {
  return kind == kSync ? "cpu-sync" : kind == kTask1 ? "cpu-task/1 worker" : "cpu-task/2 workers";
}

#define BENCH_CHECK(expr)                              \
  do {                                                 \
    Status bench_status_ = (expr);                     \
    if (!bench_status_.ok()) {                         \
      state.SkipWithError(bench_status_.message());    \
      return;                                          \
    }                                                  \
  } while (false)

// Empty command buffer: submit-to-signal round trip (cpu-task completes an
// empty graph on the submitting thread).
void BM_EmptySubmission(benchmark::State& state) {
  Harness h;
  BENCH_CHECK(h.Init(state.range(0)));
  state.SetLabel(KindName(state.range(0)));
  auto command_buffer = h.device->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  BENCH_CHECK(command_buffer.status().ok() ? OkStatus() : InternalError("command buffer"));
  BENCH_CHECK((*command_buffer)->Begin());
  BENCH_CHECK((*command_buffer)->End());
  for (auto _ : state) BENCH_CHECK(h.Run(command_buffer->get()));
}
BENCHMARK(BM_EmptySubmission)->Arg(kSync)->Arg(kTask1)->Arg(kTask2)->UseRealTime();

// The smallest real work: one 4-byte fill, through the queue and back.
void BM_TinySubmission(benchmark::State& state) {
  Harness h;
  BENCH_CHECK(h.Init(state.range(0)));
  state.SetLabel(KindName(state.range(0)));
  auto buffer = h.device->allocator()->AllocateBuffer(hal::BufferParams{}, 4);
  BENCH_CHECK(buffer.status().ok() ? OkStatus() : InternalError("buffer"));
  auto command_buffer = h.device->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  BENCH_CHECK(command_buffer.status().ok() ? OkStatus() : InternalError("command buffer"));
  uint32_t pattern = 7;
  BENCH_CHECK((*command_buffer)->Begin());
  BENCH_CHECK((*command_buffer)->FillBuffer({buffer->get(), 0, 4}, &pattern, 4));
  BENCH_CHECK((*command_buffer)->End());
  for (auto _ : state) BENCH_CHECK(h.Run(command_buffer->get()));
}
BENCHMARK(BM_TinySubmission)->Arg(kSync)->Arg(kTask1)->Arg(kTask2)->UseRealTime();

// 64 dependent small dispatches (8 workgroups each, barrier between them):
// time per dispatch.
void BM_DispatchToDispatch(benchmark::State& state) {
  constexpr int kChain = 64;
  constexpr uint32_t kWorkgroups = 8;
  Harness h;
  BENCH_CHECK(h.Init(state.range(0)));
  state.SetLabel(KindName(state.range(0)));
  auto buffer = h.device->allocator()->AllocateBuffer(hal::BufferParams{}, kWorkgroups * 4);
  BENCH_CHECK(buffer.status().ok() ? OkStatus() : InternalError("buffer"));
  auto command_buffer = h.device->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  BENCH_CHECK(command_buffer.status().ok() ? OkStatus() : InternalError("command buffer"));
  hal::CommandBuffer* cb = command_buffer->get();
  BENCH_CHECK(cb->Begin());
  hal::BufferRef bindings[] = {{buffer->get(), 0, kWorkgroups * 4}};
  for (int i = 0; i < kChain; ++i) {
    BENCH_CHECK(cb->Dispatch(h.executable.get(), 1, {kWorkgroups, 1, 1}, {}, bindings));
    BENCH_CHECK(cb->ExecutionBarrier());
  }
  BENCH_CHECK(cb->End());
  for (auto _ : state) BENCH_CHECK(h.Run(cb));
  // Seconds per dispatch (printed with an SI prefix, e.g. 1.2u = 1.2 us).
  state.counters["per_dispatch"] = benchmark::Counter(
      kChain, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DispatchToDispatch)->Arg(kSync)->Arg(kTask1)->Arg(kTask2)->UseRealTime();

// One compute-bound dispatch: 512 workgroups x 40k dependent multiply-adds.
void BM_ComputeDispatch(benchmark::State& state) {
  constexpr uint32_t kWorkgroups = 512;
  uint32_t iterations = 40000;
  Harness h;
  BENCH_CHECK(h.Init(state.range(0)));
  state.SetLabel(KindName(state.range(0)));
  auto buffer = h.device->allocator()->AllocateBuffer(hal::BufferParams{}, kWorkgroups * 4);
  BENCH_CHECK(buffer.status().ok() ? OkStatus() : InternalError("buffer"));
  auto command_buffer = h.device->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  BENCH_CHECK(command_buffer.status().ok() ? OkStatus() : InternalError("command buffer"));
  hal::CommandBuffer* cb = command_buffer->get();
  BENCH_CHECK(cb->Begin());
  hal::BufferRef bindings[] = {{buffer->get(), 0, kWorkgroups * 4}};
  BENCH_CHECK(cb->Dispatch(h.executable.get(), 0, {kWorkgroups, 1, 1}, {&iterations, 1},
                           bindings));
  BENCH_CHECK(cb->End());
  for (auto _ : state) BENCH_CHECK(h.Run(cb));
}
BENCHMARK(BM_ComputeDispatch)
    ->Arg(kSync)
    ->Arg(kTask1)
    ->Arg(kTask2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace osprey::drivers::cpu_task
