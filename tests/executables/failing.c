/* Kernels that report failure through their return value. */
#include "tests/executables/test_abi.h"

/* Returns 7 from workgroup constants[0] (and 0 from the others). */
static int fail_at(const osprey_executable_environment_v1_t* environment,
                   const osprey_dispatch_state_v1_t* dispatch,
                   const osprey_workgroup_state_v1_t* workgroup) {
  return workgroup->workgroup_id_x == dispatch->constants[0] ? 7 : 0;
}

static int always_fail(const osprey_executable_environment_v1_t* environment,
                       const osprey_dispatch_state_v1_t* dispatch,
                       const osprey_workgroup_state_v1_t* workgroup) {
  return -1;
}

static const osprey_dispatch_fn_t kPtrs[] = {fail_at, always_fail};
/* Both declare their constants so recording can check them. */
static const char* const kNames[] = {"fail_at", "always_fail"};
static const osprey_dispatch_attrs_v1_t kAttrs[] = {
    {0, 1, 0, 0, {1, 1, 1}},
    {0, 0, 0, 0, {1, 1, 1}},
};
static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1, "failing"};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {0, 0}, {2, kPtrs, kAttrs, kNames}};

OSPREY_TEST_DEFINE_QUERY(kLibrary)
