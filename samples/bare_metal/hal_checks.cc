// Dispatch checks: the firmware's kernel library loaded through the static
// loader and run workgroup by workgroup, with results checked element-wise.
#include "samples/bare_metal/hal_checks.h"

#include <stdio.h>

#include <cstdint>
#include <cstring>

#include "hal/local/executable_loader.h"
#include "hal/local/local_executable.h"
#include "hal/local/static_library_loader.h"
#include "runtime/base/allocator.h"
#include "samples/bare_metal/checks.h"
#include "samples/bare_metal/kernels.h"

namespace osprey::samples::bare_metal {

namespace {

constexpr uint32_t kElementCount = 200;  // Not a multiple of the workgroup size.

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

    hal::ExecutableParams params;
    params.format = hal::local::kStaticLibraryFormat;
    params.data = std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(OSPREY_FIRMWARE_KERNELS_NAME),
        strlen(OSPREY_FIRMWARE_KERNELS_NAME));
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
  printf("%-8s %d checks, %d failed\n", group.name(), group.checks(), group.failures());
  return group.failures() == 0 && group.checks() > 0 ? 0 : kLocalDispatchFailed;
}

}  // namespace

int RunHalChecks(void* memory, size_t size) {
  int failed = 0;
  failed |= RunLocalDispatchChecks(memory, size);
  return failed;
}

}  // namespace osprey::samples::bare_metal
