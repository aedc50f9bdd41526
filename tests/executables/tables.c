/* Tables of function and string pointers, which need RELATIVE (or, without
 * -Bsymbolic, symbolic) relocations. The tables are exported as data
 * symbols so tests can check the relocated words of foreign images. */
#include "tests/executables/test_abi.h"

static int32_t op_add(int32_t a, int32_t b) { return a + b; }
static int32_t op_sub(int32_t a, int32_t b) { return a - b; }
static int32_t op_mul(int32_t a, int32_t b) { return a * b; }

OSPREY_TEST_EXPORT int32_t (*const osprey_test_ops[3])(int32_t, int32_t) = {
    op_add, op_sub, op_mul};
OSPREY_TEST_EXPORT const char* const osprey_test_words[4] = {"alpha", "beta",
                                                             "gamma", "delta"};
/* An exported function from another file, called directly and through an
 * exported table: without -Bsymbolic these need a PLT slot (JUMP_SLOT in
 * DT_JMPREL) and a symbolic word relocation. */
OSPREY_TEST_EXPORT int32_t osprey_test_negate(int32_t x);
OSPREY_TEST_EXPORT int32_t (*const osprey_test_exported_ops[1])(int32_t) = {osprey_test_negate};

/* A writable pointer table (lands in .data rather than .data.rel.ro). */
OSPREY_TEST_EXPORT const char* osprey_test_mutable_words[2] = {"epsilon", "zeta"};

/* out[0] = ops[constants[0]](constants[1], constants[2]); out[1] = first
 * character of words[constants[0]]; out[2] = length of that word. */
static int apply(const osprey_executable_environment_v1_t* environment,
                 const osprey_dispatch_state_v1_t* dispatch,
                 const osprey_workgroup_state_v1_t* workgroup) {
  uint32_t op = dispatch->constants[0];
  if (op >= 3) return 1;
  int32_t* out = (int32_t*)dispatch->binding_ptrs[0];
  int32_t r = osprey_test_ops[op]((int32_t)dispatch->constants[1], (int32_t)dispatch->constants[2]);
  out[0] = osprey_test_negate(osprey_test_exported_ops[0](r));
  const char* word = osprey_test_words[op];
  out[1] = word[0];
  int32_t n = 0;
  while (word[n]) ++n;
  out[2] = n;
  out[3] = osprey_test_mutable_words[op & 1][0];
  return 0;
}

static const osprey_dispatch_fn_t kPtrs[] = {apply};
static const char* const kNames[] = {"apply"};
static const osprey_dispatch_attrs_v1_t kAttrs[] = {{1, 3, 0x1, 0, {1, 1, 1}}};
static const osprey_executable_library_header_t kHeader = {
    OSPREY_EXECUTABLE_LIBRARY_VERSION_1, "tables"};
static const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {0, 0}, {1, kPtrs, kAttrs, kNames}};

OSPREY_TEST_DEFINE_QUERY(kLibrary)
