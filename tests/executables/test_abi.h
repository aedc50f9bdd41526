/* Declarations shared by the test dispatch libraries and the tests that run
 * them: import argument structs and a helper to declare a library. */
#ifndef OSPREY_TESTS_EXECUTABLES_TEST_ABI_H_
#define OSPREY_TESTS_EXECUTABLES_TEST_ABI_H_

#include "hal/local/executable_library.h"

/* Arguments of the "test_add_i32" host import (result written back). */
typedef struct osprey_test_add_params_t {
  int32_t a;
  int32_t b;
  int32_t result;
} osprey_test_add_params_t;

#define OSPREY_TEST_EXPORT __attribute__((visibility("default")))

/* Defines osprey_executable_library_query answering |library| for any
 * version >= 1. */
#define OSPREY_TEST_DEFINE_QUERY(library)                                      \
  OSPREY_TEST_EXPORT const osprey_executable_library_header_t* const*         \
  osprey_executable_library_query(                                             \
      uint32_t max_version,                                                    \
      const osprey_executable_environment_v1_t* environment) {                 \
    (void)environment;                                                         \
    if (max_version < OSPREY_EXECUTABLE_LIBRARY_VERSION_1) return 0;           \
    return (const osprey_executable_library_header_t* const*)&(library);      \
  }

#endif /* OSPREY_TESTS_EXECUTABLES_TEST_ABI_H_ */
