// Dispatch checks: the firmware's kernel library loaded through the static
// loader (and the ELF loader, from an embedded image) and run directly
// workgroup by workgroup and through a cpu-sync device, with every result
// checked element-wise and every byte returned to the allocator.
#include "tests/qemu/firmware/hal_checks.h"

#include <stdio.h>

#include <cstdint>
#include <cstring>
#include <span>

#include "hal/local/executable_loader.h"
#include "hal/local/local_executable.h"
#include "hal/local/static_library_loader.h"
#include "runtime/base/allocator.h"
#include "tests/qemu/firmware/checks.h"
#include "tests/qemu/firmware/kernels.h"

#if OSPREY_FIRMWARE_HAVE_CPU_SYNC
#include "drivers/cpu_sync/api.h"
#include "hal/api.h"
#endif
#if OSPREY_FIRMWARE_HAVE_ELF
#include "hal/local/loaders/elf/elf_image.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "tests/qemu/firmware/kernels_elf.h"
#endif

namespace osprey::tests::qemu::firmware {

namespace {

constexpr uint32_t kElementCount = 200;  // Not a multiple of the workgroup size.

int Report(const CheckGroup& group, int bit) {
  printf("%-8s %d checks, %d failed\n", group.name(), group.checks(), group.failures());
  return group.failures() == 0 && group.checks() > 0 ? 0 : bit;
}

hal::ExecutableParams StaticKernelParams() {
  hal::ExecutableParams params;
  params.format = hal::local::kStaticLibraryFormat;
  params.data =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(OSPREY_FIRMWARE_KERNELS_NAME),
                               strlen(OSPREY_FIRMWARE_KERNELS_NAME));
  return params;
}

// Runs every workgroup of export |ordinal| over |count| elements; returns
// the first non-zero kernel result (0 if all succeeded).
int DispatchAll(const hal::local::LocalExecutable& executable, uint32_t ordinal, uint32_t count,
                const uint32_t* constants, uint32_t constant_count, void* const* bindings,
                const size_t* lengths, uint32_t binding_count) {
  osprey_dispatch_state_v1_t state = {};
  state.workgroup_size_x = OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE;
  state.workgroup_size_y = 1;
  state.workgroup_size_z = 1;
  state.workgroup_count_x =
      (count + OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE - 1) / OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE;
  state.workgroup_count_y = 1;
  state.workgroup_count_z = 1;
  state.max_concurrency = 1;
  state.constant_count = constant_count;
  state.constants = constants;
  state.binding_count = binding_count;
  state.binding_ptrs = bindings;
  state.binding_lengths = lengths;
  for (uint32_t x = 0; x < state.workgroup_count_x; ++x) {
    osprey_workgroup_state_v1_t workgroup = {};
    workgroup.workgroup_id_x = x;
    int result = executable.CallWorkgroup(ordinal, &state, &workgroup);
    if (result != 0) return result;
  }
  return 0;
}

// Loads the kernels with |loader| and checks both exports on buffers from
// |allocator|.
void CheckKernels(hal::local::ExecutableLoader& loader, const hal::ExecutableParams& params,
                  Allocator* allocator, CheckGroup& group) {
  hal::local::ImportTable no_imports{};
  StatusOr<ref_ptr<hal::local::LocalExecutable>> loaded =
      loader.Load(params, no_imports, allocator);
  if (!FW_EXPECT_OK(group, loaded.status())) return;
  ref_ptr<hal::local::LocalExecutable> executable = std::move(*loaded);
  FW_EXPECT(group, executable->export_count() == 2);

  StatusOr<uint32_t> add = executable->LookupExport("add_f32");
  StatusOr<uint32_t> scale = executable->LookupExport("scale_i32");
  if (!FW_EXPECT_OK(group, add.status()) || !FW_EXPECT_OK(group, scale.status())) return;
  const hal::ExportInfo& add_info = executable->export_info(*add);
  FW_EXPECT(group, add_info.binding_count == 3 && add_info.constant_count == 1);
  FW_EXPECT(group, add_info.binding_is_written(2) && !add_info.binding_is_written(0));
  FW_EXPECT(group, add_info.workgroup_size[0] == OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE);
  StatusOr<uint32_t> missing = executable->LookupExport("no_such_export");
  FW_EXPECT_CODE(group, missing.status(), StatusCode::kNotFound);

  // Three float buffers and two int buffers from the static arena.
  constexpr size_t kBytes = kElementCount * 4;
  void* memory[3] = {};
  for (void*& m : memory) {
    if (!FW_EXPECT_OK(group, allocator->Allocate(kBytes, 16, &m))) {
      for (void* p : memory) allocator->Free(p);
      return;
    }
  }
  float* lhs = static_cast<float*>(memory[0]);
  float* rhs = static_cast<float*>(memory[1]);
  float* out = static_cast<float*>(memory[2]);
  for (uint32_t i = 0; i < kElementCount; ++i) {
    lhs[i] = 0.5f * static_cast<float>(i);
    rhs[i] = 1000.0f - static_cast<float>(i);
    out[i] = -1.0f;
  }
  void* add_bindings[3] = {lhs, rhs, out};
  size_t add_lengths[3] = {kBytes, kBytes, kBytes};
  uint32_t add_constants[1] = {kElementCount};
  FW_EXPECT(group, DispatchAll(*executable, *add, kElementCount, add_constants, 1, add_bindings,
                               add_lengths, 3) == 0);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < kElementCount; ++i) {
    if (out[i] != 1000.0f - 0.5f * static_cast<float>(i)) ++wrong;
  }
  FW_EXPECT(group, wrong == 0);

  int32_t* in = static_cast<int32_t*>(memory[0]);
  int32_t* scaled = static_cast<int32_t*>(memory[1]);
  for (uint32_t i = 0; i < kElementCount; ++i) in[i] = static_cast<int32_t>(i) - 100;
  void* scale_bindings[2] = {in, scaled};
  size_t scale_lengths[2] = {kBytes, kBytes};
  uint32_t scale_constants[3] = {kElementCount, static_cast<uint32_t>(-3), 7};
  FW_EXPECT(group, DispatchAll(*executable, *scale, kElementCount, scale_constants, 3,
                               scale_bindings, scale_lengths, 2) == 0);
  wrong = 0;
  for (uint32_t i = 0; i < kElementCount; ++i) {
    if (scaled[i] != (static_cast<int32_t>(i) - 100) * -3 + 7) ++wrong;
  }
  FW_EXPECT(group, wrong == 0);

  // A binding too short for the element count fails the dispatch instead of
  // writing past the buffer.
  size_t short_lengths[2] = {kBytes, kBytes - 4};
  FW_EXPECT(group, DispatchAll(*executable, *scale, kElementCount, scale_constants, 3,
                               scale_bindings, short_lengths, 2) != 0);

  for (void* p : memory) allocator->Free(p);
}

int RunLocalDispatchChecks(void* memory, size_t size) {
  CheckGroup group("static");
  StaticArenaAllocator allocator(memory, size);
  {
    hal::local::StaticLibraryRegistry registry;
    FW_EXPECT_OK(group, registry.Register(OSPREY_FIRMWARE_KERNELS_NAME,
                                          &osprey_firmware_kernels_query));
    Status duplicate =
        registry.Register(OSPREY_FIRMWARE_KERNELS_NAME, &osprey_firmware_kernels_query);
    FW_EXPECT_CODE(group, duplicate, StatusCode::kAlreadyExists);
    duplicate.IgnoreError();

    hal::local::StaticLibraryLoader loader(&registry);
    FW_EXPECT(group, loader.CanLoad(hal::local::kStaticLibraryFormat) && !loader.CanLoad("elf"));

    hal::ExecutableParams params = StaticKernelParams();
    CheckKernels(loader, params, &allocator, group);

    static const char kUnknown[] = "not_registered";
    params.data = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kUnknown),
                                           sizeof(kUnknown) - 1);
    hal::local::ImportTable no_imports{};
    StatusOr<ref_ptr<hal::local::LocalExecutable>> unknown =
        loader.Load(params, no_imports, &allocator);
    FW_EXPECT_CODE(group, unknown.status(), StatusCode::kNotFound);
  }
  // Every executable and buffer went back to the arena.
  FW_EXPECT(group, allocator.bytes_in_use() == 0);
  return Report(group, kLocalDispatchFailed);
}

#if OSPREY_FIRMWARE_HAVE_CPU_SYNC

//===----------------------------------------------------------------------===//
// cpu-sync device
//===----------------------------------------------------------------------===//

StatusOr<ref_ptr<hal::Buffer>> AllocateBuffer(hal::Device& device, size_t length) {
  hal::BufferParams params;
  return device.allocator()->AllocateBuffer(params, length);
}

// Prepares |params| on |device|, records add_f32 then scale_i32 into one
// command buffer, submits it and checks the outputs; then checks that bad
// recordings are refused and that a failing kernel fails the signal
// semaphore.
void CheckDeviceDispatch(hal::Device& device, const hal::ExecutableParams& params,
                         CheckGroup& group) {
  StatusOr<ref_ptr<hal::ExecutableCache>> cache = device.CreateExecutableCache();
  if (!FW_EXPECT_OK(group, cache.status())) return;
  FW_EXPECT(group, (*cache)->CanPrepareFormat(params.format));
  StatusOr<ref_ptr<hal::Executable>> prepared = (*cache)->PrepareExecutable(params);
  if (!FW_EXPECT_OK(group, prepared.status())) return;
  ref_ptr<hal::Executable> executable = std::move(*prepared);
  StatusOr<uint32_t> add = executable->LookupExport("add_f32");
  StatusOr<uint32_t> scale = executable->LookupExport("scale_i32");
  if (!FW_EXPECT_OK(group, add.status()) || !FW_EXPECT_OK(group, scale.status())) return;

  constexpr size_t kBytes = kElementCount * 4;
  ref_ptr<hal::Buffer> buffers[5];
  for (ref_ptr<hal::Buffer>& buffer : buffers) {
    StatusOr<ref_ptr<hal::Buffer>> allocated = AllocateBuffer(device, kBytes);
    if (!FW_EXPECT_OK(group, allocated.status())) return;
    buffer = std::move(*allocated);
  }
  hal::Buffer* lhs = buffers[0].get();
  hal::Buffer* rhs = buffers[1].get();
  hal::Buffer* sum = buffers[2].get();
  hal::Buffer* in = buffers[3].get();
  hal::Buffer* scaled = buffers[4].get();
  {
    float lhs_values[kElementCount];
    float rhs_values[kElementCount];
    int32_t in_values[kElementCount];
    for (uint32_t i = 0; i < kElementCount; ++i) {
      lhs_values[i] = 0.25f * static_cast<float>(i);
      rhs_values[i] = 3.0f;
      in_values[i] = static_cast<int32_t>(i) * 7 - 500;
    }
    FW_EXPECT_OK(group, lhs->WriteData(0, lhs_values, kBytes));
    FW_EXPECT_OK(group, rhs->WriteData(0, rhs_values, kBytes));
    FW_EXPECT_OK(group, in->WriteData(0, in_values, kBytes));
  }

  const hal::WorkgroupCount grid{
      (kElementCount + OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE - 1) /
          OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE,
      1, 1};
  const uint32_t add_constants[] = {kElementCount};
  const hal::BufferRef add_bindings[] = {{lhs}, {rhs}, {sum}};
  const uint32_t scale_constants[] = {kElementCount, 5, static_cast<uint32_t>(-11)};
  const hal::BufferRef scale_bindings[] = {{in}, {scaled}};
  const uint32_t poison = 0xFFFFFFFFu;

  StatusOr<ref_ptr<hal::CommandBuffer>> recorded =
      device.CreateCommandBuffer(hal::CommandBufferMode::kOneShot);
  if (!FW_EXPECT_OK(group, recorded.status())) return;
  hal::CommandBuffer* commands = recorded->get();
  FW_EXPECT_OK(group, commands->Begin());
  FW_EXPECT_OK(group, commands->FillBuffer({sum}, &poison, sizeof(poison)));
  FW_EXPECT_OK(group, commands->FillBuffer({scaled}, &poison, sizeof(poison)));
  FW_EXPECT_OK(group, commands->ExecutionBarrier());
  FW_EXPECT_OK(group, commands->Dispatch(executable.get(), *add, grid, add_constants,
                                         add_bindings));
  FW_EXPECT_OK(group, commands->Dispatch(executable.get(), *scale, grid, scale_constants,
                                         scale_bindings));
  // Refused at record time: a missing binding, an ordinal past the end.
  Status missing_binding = commands->Dispatch(executable.get(), *add, grid, add_constants,
                                              std::span(add_bindings, 2));
  FW_EXPECT_CODE(group, missing_binding, StatusCode::kInvalidArgument);
  missing_binding.IgnoreError();
  Status bad_ordinal = commands->Dispatch(executable.get(), 7, grid, add_constants,
                                          add_bindings);
  FW_EXPECT_CODE(group, bad_ordinal, StatusCode::kInvalidArgument);
  bad_ordinal.IgnoreError();
  FW_EXPECT_OK(group, commands->End());

  StatusOr<ref_ptr<hal::Semaphore>> done = device.CreateSemaphore(0);
  if (!FW_EXPECT_OK(group, done.status())) return;
  hal::Semaphore* signals[] = {done->get()};
  const uint64_t one[] = {1};
  hal::CommandBuffer* const submit[] = {commands};
  FW_EXPECT_OK(group, device.QueueExecute({}, submit, {signals, one}));
  FW_EXPECT_OK(group, device.WaitSemaphores(hal::WaitMode::kAll, {signals, one},
                                            platform::kInfiniteFuture));
  StatusOr<uint64_t> value = (*done)->Query();
  FW_EXPECT(group, value.ok() && *value == 1);

  {
    float sum_values[kElementCount];
    int32_t scaled_values[kElementCount];
    FW_EXPECT_OK(group, sum->ReadData(0, sum_values, kBytes));
    FW_EXPECT_OK(group, scaled->ReadData(0, scaled_values, kBytes));
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < kElementCount; ++i) {
      if (sum_values[i] != 0.25f * static_cast<float>(i) + 3.0f) ++wrong;
      if (scaled_values[i] != (static_cast<int32_t>(i) * 7 - 500) * 5 - 11) ++wrong;
    }
    FW_EXPECT(group, wrong == 0);
  }

  // A kernel that refuses its bindings (a sub-range shorter than the
  // element count) fails the submission: the signal semaphore carries the
  // error instead of the value, and nothing hangs.
  StatusOr<ref_ptr<hal::CommandBuffer>> failing =
      device.CreateCommandBuffer(hal::CommandBufferMode::kOneShot);
  if (!FW_EXPECT_OK(group, failing.status())) return;
  const hal::BufferRef short_bindings[] = {{in, 0, kBytes - 64}, {scaled}};
  FW_EXPECT_OK(group, (*failing)->Begin());
  FW_EXPECT_OK(group, (*failing)->Dispatch(executable.get(), *scale, grid, scale_constants,
                                           short_bindings));
  FW_EXPECT_OK(group, (*failing)->End());
  StatusOr<ref_ptr<hal::Semaphore>> failed = device.CreateSemaphore(0);
  if (!FW_EXPECT_OK(group, failed.status())) return;
  hal::Semaphore* failed_signals[] = {failed->get()};
  hal::CommandBuffer* const failing_submit[] = {failing->get()};
  FW_EXPECT_OK(group, device.QueueExecute({}, failing_submit, {failed_signals, one}));
  Status wait = (*failed)->Wait(1, platform::kInfiniteFuture);
  FW_EXPECT(group, !wait.ok());
  wait.IgnoreError();
}

int RunDeviceChecks(void* memory, size_t size) {
  CheckGroup group("device");
  StaticArenaAllocator allocator(memory, size);
  {
    hal::local::StaticLibraryRegistry libraries;
    FW_EXPECT_OK(group, libraries.Register(OSPREY_FIRMWARE_KERNELS_NAME,
                                           &osprey_firmware_kernels_query));
    drivers::cpu_sync::CpuSyncDeviceOptions options;
    options.static_libraries = &libraries;
    options.local_memory_size = 1024;
    StatusOr<ref_ptr<drivers::cpu_sync::CpuSyncDevice>> device =
        drivers::cpu_sync::CpuSyncDevice::Create(options, &allocator);
    if (FW_EXPECT_OK(group, device.status())) {
      CheckDeviceDispatch(**device, StaticKernelParams(), group);
    }
  }
  {
    // The registry path an application without special options takes.
    hal::DriverRegistry registry;
    FW_EXPECT_OK(group, drivers::cpu_sync::RegisterDriver(registry));
    const hal::DeviceParam params[] = {{"local_memory_size", "512"}};
    StatusOr<ref_ptr<hal::Device>> device = registry.CreateDevice("cpu-sync", params, &allocator);
    FW_EXPECT(group, device.ok() && strcmp((*device)->id(), "cpu-sync") == 0);
  }
  // Devices, buffers, executables, command buffers and semaphores all freed.
  FW_EXPECT(group, allocator.bytes_in_use() == 0);
  printf("  device peak memory: %u bytes\n", static_cast<unsigned>(allocator.peak_bytes_in_use()));
  return Report(group, kDeviceDispatchFailed);
}

#endif  // OSPREY_FIRMWARE_HAVE_CPU_SYNC

#if OSPREY_FIRMWARE_HAVE_ELF

//===----------------------------------------------------------------------===//
// ELF loader
//===----------------------------------------------------------------------===//

int RunElfChecks(void* memory, size_t size) {
  CheckGroup group("elf");
  StaticArenaAllocator allocator(memory, size);
  std::span<const uint8_t> image(osprey_firmware_kernels_elf, osprey_firmware_kernels_elf_size);
  hal::local::loaders::elf::ElfMachine machine;
  if (!hal::local::loaders::elf::ElfHostMachine(&machine)) {
    // The loader does not run code for this CPU: it must say so.
    hal::local::loaders::elf::ElfLoader loader;
    hal::ExecutableParams params;
    params.format = "elf-armv7em";
    params.data = image;
    hal::local::ImportTable no_imports{};
    StatusOr<ref_ptr<hal::local::LocalExecutable>> loaded =
        loader.Load(params, no_imports, &allocator);
    FW_EXPECT(group, !loaded.ok());
    printf("  elf: the ELF loader runs no code for this CPU; checked that it refuses\n");
    return Report(group, kElfDispatchFailed);
  }
  hal::ExecutableParams params;
  params.format = hal::local::loaders::elf::ElfMachineFormat(machine);
  params.data = image;
  {
    hal::local::loaders::elf::ElfLoader loader;
    FW_EXPECT(group, loader.CanLoad(params.format));
    CheckKernels(loader, params, &allocator, group);

    // Damaged images are refused with a status, never run: cut inside the
    // program headers or inside the first segment, and with the program
    // header table moved past the end.
    hal::local::ImportTable no_imports{};
    for (size_t cut_at : {size_t{100}, size_t{300}}) {
      hal::ExecutableParams truncated = params;
      truncated.data = image.first(cut_at);
      StatusOr<ref_ptr<hal::local::LocalExecutable>> cut =
          loader.Load(truncated, no_imports, &allocator);
      FW_EXPECT(group, !cut.ok());
    }
    void* copy = nullptr;
    if (FW_EXPECT_OK(group, allocator.Allocate(image.size(), 16, &copy))) {
      memcpy(copy, image.data(), image.size());
      // e_phoff: offset 28 in a 32-bit ELF header, 32 in a 64-bit one.
      const size_t phoff = image[4] == 1 ? 28 : 32;
      memset(static_cast<uint8_t*>(copy) + phoff, 0x7F, 4);
      hal::ExecutableParams corrupt = params;
      corrupt.data = std::span<const uint8_t>(static_cast<const uint8_t*>(copy), image.size());
      StatusOr<ref_ptr<hal::local::LocalExecutable>> bad =
          loader.Load(corrupt, no_imports, &allocator);
      FW_EXPECT(group, !bad.ok());
      allocator.Free(copy);
    }
  }
#if OSPREY_FIRMWARE_HAVE_CPU_SYNC
  {
    // The device's default loaders include the ELF loader.
    drivers::cpu_sync::CpuSyncDeviceOptions options;
    options.local_memory_size = 1024;
    StatusOr<ref_ptr<drivers::cpu_sync::CpuSyncDevice>> device =
        drivers::cpu_sync::CpuSyncDevice::Create(options, &allocator);
    if (FW_EXPECT_OK(group, device.status())) {
      CheckDeviceDispatch(**device, params, group);
    }
  }
#endif
  FW_EXPECT(group, allocator.bytes_in_use() == 0);
  printf("  elf image: %u bytes (%s)\n", static_cast<unsigned>(image.size()), params.format);
  return Report(group, kElfDispatchFailed);
}

#endif  // OSPREY_FIRMWARE_HAVE_ELF

}  // namespace

int RunHalChecks(void* memory, size_t size) {
  int failed = 0;
  failed |= RunLocalDispatchChecks(memory, size);
#if OSPREY_FIRMWARE_HAVE_CPU_SYNC
  failed |= RunDeviceChecks(memory, size);
#endif
#if OSPREY_FIRMWARE_HAVE_ELF
  failed |= RunElfChecks(memory, size);
#endif
  return failed;
}

}  // namespace osprey::tests::qemu::firmware
