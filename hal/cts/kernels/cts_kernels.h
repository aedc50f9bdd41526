/* Dispatch kernels of the HAL conformance suite, written in C against
 * executable_library.h and linked into the test binaries as a static
 * library named OSPREY_CTS_KERNELS_LIBRARY_NAME.
 *
 * Exports (bindings: r = read, w = written; constants are 32-bit words):
 *   axpb          y[i] = a * x[i] + b (floats) for i < n. Bindings: x (r),
 *                 y (w). Constants: a bits, b bits, n. 64 elements per
 *                 workgroup along x.
 *   workgroup_ids For each workgroup writes 4 words at linear index
 *                 (z * count_y + y) * count_x + x: x, y, z, count_x *
 *                 count_y * count_z. Bindings: out (w).
 *   fail_at       Returns 7 at workgroup x == constant 0, otherwise
 *                 writes 1 to out[x]. Bindings: out (w). Constants: k.
 *   local_sum     Fills 64 words of local memory with i + constant 0 and
 *                 writes their sum to out[x]. Bindings: out (w).
 *                 Constants: c. Local memory: 256 bytes.
 *   call_import   Calls the optional import "cts_host_add" with
 *                 {value = in[0], result}; writes result to out[0], or
 *                 returns 3 if the host lacks it. Bindings: in (r), out (w).
 *   empty         Does nothing (benchmarks). No bindings.
 */
#ifndef OSPREY_HAL_CTS_KERNELS_CTS_KERNELS_H_
#define OSPREY_HAL_CTS_KERNELS_CTS_KERNELS_H_

#include "hal/local/executable_library.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OSPREY_CTS_KERNELS_LIBRARY_NAME "osprey_cts_kernels"

/* Arguments of the "cts_host_add" import: result = value + context's int. */
typedef struct osprey_cts_host_add_params_t {
  uint32_t value;
  uint32_t result;
} osprey_cts_host_add_params_t;

const osprey_executable_library_header_t* const* osprey_cts_kernels_query(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* OSPREY_HAL_CTS_KERNELS_CTS_KERNELS_H_ */
