/* Kernels that call host functions through the environment's thunk. */
#include "tests/executables/test_abi.h"

/* out[0] = test_add_i32(constants[0], constants[1]); returns the import's
 * error if it fails. */
static int call_add(const osprey_executable_environment_v1_t* environment,
                    const osprey_dispatch_state_v1_t* dispatch,
                    const osprey_workgroup_state_v1_t* workgroup) {
  osprey_test_add_params_t params;
  params.a = (int32_t)dispatch->constants[0];
  params.b = (int32_t)dispatch->constants[1];
  params.result = 0;
  int rc = environment->import_thunk(environment->import_funcs[0], &params,
                                     environment->import_contexts[0], 0);
  if (rc != 0) return rc;
  ((int32_t*)dispatch->binding_ptrs[0])[0] = params.result;
  return 0;
}

/* out[0] = 1 if the optional import resolved, else 0. */
static int has_optional(const osprey_executable_environment_v1_t* environment,
                        const osprey_dispatch_state_v1_t* dispatch,
                        const osprey_workgroup_state_v1_t* workgroup) {
  ((int32_t*)dispatch->binding_ptrs[0])[0] = environment->import_funcs[1] != 0;
  return 0;
}

static const char* const kImports[] = {"test_add_i32", "?test_optional"};
static const osprey_dispatch_fn_t kPtrs[] = {call_add, has_optional};
static const char* const kNames[] = {"call_add", "has_optional"};
static const osprey_dispatch_attrs_v1_t kAttrs[] = {
    {1, 2, 0x1, 0, {1, 1, 1}},
    {1, 0, 0x1, 0, {1, 1, 1}},
};
static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1, "imports"};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {2, kImports}, {2, kPtrs, kAttrs, kNames}};

OSPREY_TEST_DEFINE_QUERY(kLibrary)
