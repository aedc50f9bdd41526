/* Links a static library written by osprey-compile into a host program
 * through its generated header and prints what its query function reports. */
#include <stdio.h>

#include "gemm-lib.h"

int main(void) {
  if (gemm_lib_library_query(0, NULL) != NULL) {
    printf("version 0 answered\n");
    return 1;
  }
  const osprey_executable_library_header_t* const* header =
      gemm_lib_library_query(OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST, NULL);
  if (!header) {
    printf("no library\n");
    return 1;
  }
  const osprey_executable_library_v1_t* library =
      (const osprey_executable_library_v1_t*)header;
  printf("registered as %s\n", gemm_lib_LIBRARY_NAME);
  printf("library %s version %u\n", (*header)->name, (unsigned)(*header)->version);
  printf("imports %u\n", (unsigned)library->imports.count);
  for (uint32_t i = 0; i < library->exports.count; ++i) {
    printf("export %u %s bindings %u\n", (unsigned)i, library->exports.names[i],
           (unsigned)library->exports.attrs[i].binding_count);
  }
  return 0;
}
