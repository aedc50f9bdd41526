/* Dispatch kernels of the HAL conformance suite (see cts_kernels.h). */
#include "hal/cts/kernels/cts_kernels.h"

#include <string.h>

static float AsFloat(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static int Axpb(const osprey_executable_environment_v1_t* environment,
                const osprey_dispatch_state_v1_t* dispatch,
                const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  const float* x = (const float*)dispatch->binding_ptrs[0];
  float* y = (float*)dispatch->binding_ptrs[1];
  const float a = AsFloat(dispatch->constants[0]);
  const float b = AsFloat(dispatch->constants[1]);
  const uint32_t n = dispatch->constants[2];
  const uint32_t begin = workgroup->workgroup_id_x * 64u;
  for (uint32_t i = begin; i < begin + 64u && i < n; ++i) {
    if ((i + 1) * sizeof(float) > dispatch->binding_lengths[0] ||
        (i + 1) * sizeof(float) > dispatch->binding_lengths[1]) {
      return 2;
    }
    y[i] = a * x[i] + b;
  }
  return 0;
}

static int WorkgroupIds(const osprey_executable_environment_v1_t* environment,
                        const osprey_dispatch_state_v1_t* dispatch,
                        const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  uint32_t* out = (uint32_t*)dispatch->binding_ptrs[0];
  const uint32_t cx = dispatch->workgroup_count_x;
  const uint32_t cy = dispatch->workgroup_count_y;
  const uint32_t cz = dispatch->workgroup_count_z;
  const uint32_t linear =
      (workgroup->workgroup_id_z * cy + workgroup->workgroup_id_y) * cx + workgroup->workgroup_id_x;
  if ((size_t)(linear + 1) * 16u > dispatch->binding_lengths[0]) return 2;
  out[linear * 4 + 0] = workgroup->workgroup_id_x;
  out[linear * 4 + 1] = workgroup->workgroup_id_y;
  out[linear * 4 + 2] = workgroup->workgroup_id_z;
  out[linear * 4 + 3] = cx * cy * cz;
  return 0;
}

static int FailAt(const osprey_executable_environment_v1_t* environment,
                  const osprey_dispatch_state_v1_t* dispatch,
                  const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  if (workgroup->workgroup_id_x == dispatch->constants[0]) return 7;
  uint32_t* out = (uint32_t*)dispatch->binding_ptrs[0];
  if ((size_t)(workgroup->workgroup_id_x + 1) * 4u > dispatch->binding_lengths[0]) return 2;
  out[workgroup->workgroup_id_x] = 1;
  return 0;
}

static int LocalSum(const osprey_executable_environment_v1_t* environment,
                    const osprey_dispatch_state_v1_t* dispatch,
                    const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  if (!workgroup->local_memory || workgroup->local_memory_size < 256) return 4;
  uint32_t* scratch = (uint32_t*)workgroup->local_memory;
  for (uint32_t i = 0; i < 64; ++i) scratch[i] = i + dispatch->constants[0];
  uint32_t sum = 0;
  for (uint32_t i = 0; i < 64; ++i) sum += scratch[i];
  uint32_t* out = (uint32_t*)dispatch->binding_ptrs[0];
  if ((size_t)(workgroup->workgroup_id_x + 1) * 4u > dispatch->binding_lengths[0]) return 2;
  out[workgroup->workgroup_id_x] = sum;
  return 0;
}

static int CallImport(const osprey_executable_environment_v1_t* environment,
                      const osprey_dispatch_state_v1_t* dispatch,
                      const osprey_workgroup_state_v1_t* workgroup) {
  (void)workgroup;
  if (!environment->import_funcs[0]) return 3;
  osprey_cts_host_add_params_t params;
  params.value = ((const uint32_t*)dispatch->binding_ptrs[0])[0];
  params.result = 0;
  int result = environment->import_thunk(environment->import_funcs[0], &params,
                                         environment->import_contexts[0], NULL);
  if (result != 0) return result;
  ((uint32_t*)dispatch->binding_ptrs[1])[0] = params.result;
  return 0;
}

static int Empty(const osprey_executable_environment_v1_t* environment,
                 const osprey_dispatch_state_v1_t* dispatch,
                 const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  (void)dispatch;
  (void)workgroup;
  return 0;
}

static const osprey_dispatch_fn_t kFunctions[] = {
    Axpb, WorkgroupIds, FailAt, LocalSum, CallImport, Empty,
};
static const osprey_dispatch_attrs_v1_t kAttrs[] = {
    /* binding_count, constant_count, write mask, local memory, workgroup size */
    {2, 3, 0x2, 0, {64, 1, 1}},
    {1, 0, 0x1, 0, {1, 1, 1}},
    {1, 1, 0x1, 0, {1, 1, 1}},
    {1, 1, 0x1, 256, {1, 1, 1}},
    {2, 0, 0x2, 0, {1, 1, 1}},
    {0, 0, 0x0, 0, {1, 1, 1}},
};
static const char* const kNames[] = {
    "axpb", "workgroup_ids", "fail_at", "local_sum", "call_import", "empty",
};
static const char* const kImports[] = {"?cts_host_add"};

static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1,
    OSPREY_CTS_KERNELS_LIBRARY_NAME,
};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader,
    {1, kImports},
    {sizeof(kFunctions) / sizeof(kFunctions[0]), kFunctions, kAttrs, kNames},
};

const osprey_executable_library_header_t* const* osprey_cts_kernels_query(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment) {
  (void)environment;
  if (max_version < OSPREY_EXECUTABLE_LIBRARY_VERSION_1) return NULL;
  return &kLibrary.header;
}
