/* The exported function the tables library calls across files. */
#include "tests/executables/test_abi.h"

OSPREY_TEST_EXPORT int32_t osprey_test_negate(int32_t x) { return -x; }
