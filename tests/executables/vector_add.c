/* Element-wise float kernels: bindings, push constants, workgroup tiling. */
#include "tests/executables/test_abi.h"

/* c[i] = a[i] + b[i] for i < constants[0]; one workgroup per 64 elements. */
static int add(const osprey_executable_environment_v1_t* environment,
               const osprey_dispatch_state_v1_t* dispatch,
               const osprey_workgroup_state_v1_t* workgroup) {
  const float* a = (const float*)dispatch->binding_ptrs[0];
  const float* b = (const float*)dispatch->binding_ptrs[1];
  float* c = (float*)dispatch->binding_ptrs[2];
  uint32_t n = dispatch->constants[0];
  uint32_t begin = workgroup->workgroup_id_x * dispatch->workgroup_size_x;
  uint32_t end = begin + dispatch->workgroup_size_x;
  if (end > n) end = n;
  if ((size_t)n * sizeof(float) > dispatch->binding_lengths[2]) return 1;
  for (uint32_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
  return 0;
}

/* x[i] *= bitcast<float>(constants[1]) for i < constants[0]. */
static int scale(const osprey_executable_environment_v1_t* environment,
                 const osprey_dispatch_state_v1_t* dispatch,
                 const osprey_workgroup_state_v1_t* workgroup) {
  float* x = (float*)dispatch->binding_ptrs[0];
  uint32_t n = dispatch->constants[0];
  union {
    uint32_t u;
    float f;
  } factor;
  factor.u = dispatch->constants[1];
  uint32_t begin = workgroup->workgroup_id_x * dispatch->workgroup_size_x;
  uint32_t end = begin + dispatch->workgroup_size_x;
  if (end > n) end = n;
  for (uint32_t i = begin; i < end; ++i) x[i] *= factor.f;
  return 0;
}

static const osprey_dispatch_fn_t kPtrs[] = {add, scale};
static const char* const kNames[] = {"add", "scale"};
static const osprey_dispatch_attrs_v1_t kAttrs[] = {
    {/*binding_count=*/3, /*constant_count=*/1, /*binding_write_mask=*/0x4,
     /*local_memory_size=*/0, /*workgroup_size=*/{64, 1, 1}},
    {1, 2, 0x1, 0, {64, 1, 1}},
};
static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1, "vector_add"};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {0, 0}, {2, kPtrs, kAttrs, kNames}};

OSPREY_TEST_DEFINE_QUERY(kLibrary)
