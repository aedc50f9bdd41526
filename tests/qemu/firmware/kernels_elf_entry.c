/* Entry point of the firmware's kernels when built as a standalone ELF
 * library for the ELF loader: the one exported symbol every library has. */
#include "tests/qemu/firmware/kernels.h"

__attribute__((visibility("default")))
const osprey_executable_library_header_t* const* osprey_executable_library_query(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment) {
  return osprey_firmware_kernels_query(max_version, environment);
}
