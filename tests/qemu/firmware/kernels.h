/* Dispatch kernels of the firmware, as a CPU executable library (the ABI of
 * hal/local/executable_library.h). Linked into the image and reached through
 * the static loader; the same source is also built as a standalone ELF
 * library for the ELF loader. Plain C. */
#ifndef OSPREY_TESTS_QEMU_FIRMWARE_KERNELS_H_
#define OSPREY_TESTS_QEMU_FIRMWARE_KERNELS_H_

#include "hal/local/executable_library.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Name the firmware registers the library under with the static loader. */
#define OSPREY_FIRMWARE_KERNELS_NAME "firmware_kernels"

/* Workgroup size (elements per workgroup) of every export. */
#define OSPREY_FIRMWARE_KERNELS_WORKGROUP_SIZE 64u

/* Exports, in ordinal order:
 *   0 "add_f32":   out[i] = lhs[i] + rhs[i]         bindings lhs, rhs, out;
 *                  constants: element count
 *   1 "scale_i32": out[i] = in[i] * factor + bias   bindings in, out;
 *                  constants: element count, factor, bias
 * Each workgroup handles WORKGROUP_SIZE consecutive elements. A binding
 * shorter than the element count fails the dispatch (returns non-zero). */
const osprey_executable_library_header_t* const* osprey_firmware_kernels_query(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* OSPREY_TESTS_QEMU_FIRMWARE_KERNELS_H_ */
