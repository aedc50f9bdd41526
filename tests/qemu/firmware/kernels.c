/* The firmware's dispatch kernels: a CPU executable library in plain C. */
#include "tests/qemu/firmware/kernels.h"

#define WORKGROUP_SIZE OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE

/* Returns the [begin, end) element range of this workgroup, or 0 if a
 * binding is too short for |count| elements of |element_size| bytes. */
static int ElementRange(const osprey_dispatch_state_v1_t* dispatch,
                        const osprey_workgroup_state_v1_t* workgroup, uint32_t count,
                        size_t element_size, uint32_t* begin, uint32_t* end) {
  for (uint32_t i = 0; i < dispatch->binding_count; ++i) {
    if (dispatch->binding_lengths[i] / element_size < count) return 0;
  }
  *begin = workgroup->workgroup_id_x * WORKGROUP_SIZE;
  *end = *begin + WORKGROUP_SIZE;
  if (*begin > count) *begin = count;
  if (*end > count) *end = count;
  return 1;
}

static int AddF32(const osprey_executable_environment_v1_t* environment,
                  const osprey_dispatch_state_v1_t* dispatch,
                  const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  uint32_t begin, end;
  if (!ElementRange(dispatch, workgroup, dispatch->constants[0], sizeof(float), &begin, &end)) {
    return 1;
  }
  const float* lhs = (const float*)dispatch->binding_ptrs[0];
  const float* rhs = (const float*)dispatch->binding_ptrs[1];
  float* out = (float*)dispatch->binding_ptrs[2];
  for (uint32_t i = begin; i < end; ++i) out[i] = lhs[i] + rhs[i];
  return 0;
}

static int ScaleI32(const osprey_executable_environment_v1_t* environment,
                    const osprey_dispatch_state_v1_t* dispatch,
                    const osprey_workgroup_state_v1_t* workgroup) {
  (void)environment;
  uint32_t begin, end;
  if (!ElementRange(dispatch, workgroup, dispatch->constants[0], sizeof(int32_t), &begin, &end)) {
    return 1;
  }
  const int32_t* in = (const int32_t*)dispatch->binding_ptrs[0];
  int32_t* out = (int32_t*)dispatch->binding_ptrs[1];
  int32_t factor = (int32_t)dispatch->constants[1];
  int32_t bias = (int32_t)dispatch->constants[2];
  for (uint32_t i = begin; i < end; ++i) out[i] = in[i] * factor + bias;
  return 0;
}

static const osprey_dispatch_fn_t kExportPtrs[] = {AddF32, ScaleI32};
static const char* const kExportNames[] = {"add_f32", "scale_i32"};
static const osprey_dispatch_attrs_v1_t kExportAttrs[] = {
    {/*binding_count=*/3, /*constant_count=*/1, /*binding_write_mask=*/0x4,
     /*local_memory_size=*/0, /*workgroup_size=*/{WORKGROUP_SIZE, 1, 1}},
    {/*binding_count=*/2, /*constant_count=*/3, /*binding_write_mask=*/0x2,
     /*local_memory_size=*/0, /*workgroup_size=*/{WORKGROUP_SIZE, 1, 1}},
};
static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1, OSPREY_FIRMWARE_KERNELS_NAME};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader,
    {0, NULL},
    {2, kExportPtrs, kExportAttrs, kExportNames},
};

const osprey_executable_library_header_t* const* osprey_firmware_kernels_query(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment) {
  (void)environment;
  if (max_version < OSPREY_EXECUTABLE_LIBRARY_VERSION_1) return NULL;
  return (const osprey_executable_library_header_t* const*)&kLibrary;
}
