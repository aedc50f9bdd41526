/* Kernels that use workgroup ids, counts and local memory. */
#include "tests/executables/test_abi.h"

/* out[z][y][x] = x + 100 * y + 10000 * z over the workgroup grid (one
 * element per workgroup). Binding 0: uint32 output. */
static int grid_ids(const osprey_executable_environment_v1_t* environment,
                    const osprey_dispatch_state_v1_t* dispatch,
                    const osprey_workgroup_state_v1_t* workgroup) {
  uint32_t* out = (uint32_t*)dispatch->binding_ptrs[0];
  uint32_t cx = dispatch->workgroup_count_x, cy = dispatch->workgroup_count_y;
  uint32_t x = workgroup->workgroup_id_x, y = workgroup->workgroup_id_y,
           z = workgroup->workgroup_id_z;
  size_t index = ((size_t)z * cy + y) * cx + x;
  if ((index + 1) * sizeof(uint32_t) > dispatch->binding_lengths[0]) return 2;
  out[index] = x + 100u * y + 10000u * z;
  return 0;
}

/* Workgroup x sums in[x * 16 .. x * 16 + 15] through 16 floats of local
 * memory (copy, then tree reduction) into out[x]. */
static int chunk_sum(const osprey_executable_environment_v1_t* environment,
                     const osprey_dispatch_state_v1_t* dispatch,
                     const osprey_workgroup_state_v1_t* workgroup) {
  const float* in = (const float*)dispatch->binding_ptrs[0];
  float* out = (float*)dispatch->binding_ptrs[1];
  volatile float* scratch = (volatile float*)workgroup->local_memory;
  if (!scratch || workgroup->local_memory_size < 16 * sizeof(float)) return 3;
  uint32_t x = workgroup->workgroup_id_x;
  for (uint32_t i = 0; i < 16; ++i) scratch[i] = in[x * 16 + i];
  for (uint32_t width = 8; width > 0; width /= 2) {
    for (uint32_t i = 0; i < width; ++i) scratch[i] = scratch[i] + scratch[i + width];
  }
  out[x] = scratch[0];
  return 0;
}

static const osprey_dispatch_fn_t kPtrs[] = {grid_ids, chunk_sum};
static const char* const kNames[] = {"grid_ids", "chunk_sum"};
static const osprey_dispatch_attrs_v1_t kAttrs[] = {
    {1, 0, 0x1, 0, {1, 1, 1}},
    {2, 0, 0x2, 16 * sizeof(float), {16, 1, 1}},
};
static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1, "workgroups"};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {0, 0}, {2, kPtrs, kAttrs, kNames}};

OSPREY_TEST_DEFINE_QUERY(kLibrary)
