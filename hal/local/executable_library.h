/* The fixed ABI between the Osprey runtime and CPU executable libraries.
 *
 * A CPU executable is a position-independent shared object (or, for the
 * static loader, an object linked into the application) that exports exactly
 * one query function of type osprey_executable_library_query_fn_t. Shared
 * objects (ELF and system loaders) name it osprey_executable_library_query;
 * static libraries (osprey-compile --output-format=static-library) name it
 * <name>_library_query so several can link into one image, and the
 * application registers it by name (static_library_loader.h). The runtime
 * calls it with the ABI version it speaks and an environment; the library
 * answers with a
 * read-only description of its dispatch functions (exports) and of the host
 * functions it needs (imports). Libraries never link against the platform:
 * everything from the outside world arrives through the environment.
 *
 * This header is plain C99, depends on nothing but <stdint.h>/<stddef.h>, and
 * is versioned like a file format: fields are only ever appended in a new
 * version; see docs/executable-abi.md.
 */
#ifndef OSPREY_HAL_LOCAL_EXECUTABLE_LIBRARY_H_
#define OSPREY_HAL_LOCAL_EXECUTABLE_LIBRARY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 1 of the ABI. A library answers a query for version N with a
 * structure of version <= N or NULL if it cannot. */
#define OSPREY_EXECUTABLE_LIBRARY_VERSION_1 1u
#define OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST OSPREY_EXECUTABLE_LIBRARY_VERSION_1

/* Name of the exported query symbol of shared-object libraries (looked up by
 * the ELF and system loaders). Static libraries use <name>_library_query. */
#define OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME "osprey_executable_library_query"

/*===------------------------------------------------------------------===*/
/* Imports: host functions reached through a thunk                        */
/*===------------------------------------------------------------------===*/

/* A host function: |params| points at an import-specific argument struct
 * (results written back into it), |context| is the host's per-import data.
 * Returns 0 on success. */
typedef int (*osprey_import_fn_t)(void* params, void* context, void* reserved);

/* Calls |fn|; lets the host wrap every import call (tracing, stack switch). */
typedef int (*osprey_import_thunk_t)(osprey_import_fn_t fn, void* params,
                                     void* context, void* reserved);

/*===------------------------------------------------------------------===*/
/* Environment: what the runtime gives a library                          */
/*===------------------------------------------------------------------===*/

typedef struct osprey_executable_environment_v1_t {
  /* Thunk through which every import is called. */
  osprey_import_thunk_t import_thunk;
  /* Resolved imports, in the order the library listed them. An optional
   * import the host lacks is NULL. */
  const osprey_import_fn_t* import_funcs;
  void* const* import_contexts;
  /* Processor features the host detected (bit sets, architecture-defined). */
  uint64_t processor_features[2];
} osprey_executable_environment_v1_t;

/*===------------------------------------------------------------------===*/
/* Dispatch: the arguments of every dispatch function call                */
/*===------------------------------------------------------------------===*/

/* Shared by all workgroups of one dispatch; read-only. */
typedef struct osprey_dispatch_state_v1_t {
  uint32_t workgroup_size_x;
  uint32_t workgroup_size_y;
  uint32_t workgroup_size_z;
  uint32_t workgroup_count_x;
  uint32_t workgroup_count_y;
  uint32_t workgroup_count_z;
  /* Upper bound on workers running workgroups of this dispatch at once. */
  uint32_t max_concurrency;
  uint32_t constant_count;
  const uint32_t* constants;
  uint32_t binding_count;
  /* Base pointer and byte length of each binding. */
  void* const* binding_ptrs;
  const size_t* binding_lengths;
} osprey_dispatch_state_v1_t;

/* Per-workgroup call state. */
typedef struct osprey_workgroup_state_v1_t {
  uint32_t workgroup_id_x;
  uint32_t workgroup_id_y;
  uint32_t workgroup_id_z;
  /* Identifies the worker running this workgroup (0 on single-threaded). */
  uint32_t processor_id;
  /* Scratch memory of the size the export declared; not zeroed. */
  void* local_memory;
  uint32_t local_memory_size;
} osprey_workgroup_state_v1_t;

/* A dispatch function runs one workgroup. Returns 0 on success; any other
 * value fails the dispatch (the runtime reports it with context). */
/* Results for data-dependent failures a dispatch function detects before they
 * cause an out-of-bounds access or undefined behaviour; the runtime names them
 * in its report. Other non-zero values are library-specific. */
#define OSPREY_DISPATCH_INDEX_OUT_OF_RANGE 1 /* an index read from a tensor */
#define OSPREY_DISPATCH_DIVISION_BY_ZERO 2   /* integer division by zero */
typedef int (*osprey_dispatch_fn_t)(
    const osprey_executable_environment_v1_t* environment,
    const osprey_dispatch_state_v1_t* dispatch_state,
    const osprey_workgroup_state_v1_t* workgroup_state);

/* Static facts about one export, checked at record time. */
typedef struct osprey_dispatch_attrs_v1_t {
  /* Number of buffer bindings and 32-bit push constants it takes. */
  uint16_t binding_count;
  uint16_t constant_count;
  /* Bit i set: binding i is written by the dispatch (needs write access);
   * clear: only read. Bindings >= 64 are treated as written. */
  uint64_t binding_write_mask;
  /* Scratch bytes each workgroup needs (workgroup_state.local_memory). */
  uint32_t local_memory_size;
  /* Workgroup size the code was compiled for. */
  uint32_t workgroup_size[3];
} osprey_dispatch_attrs_v1_t;

/*===------------------------------------------------------------------===*/
/* Library description                                                    */
/*===------------------------------------------------------------------===*/

typedef struct osprey_executable_library_header_t {
  /* OSPREY_EXECUTABLE_LIBRARY_VERSION_* of the structure that follows. */
  uint32_t version;
  /* Library name, for diagnostics. */
  const char* name;
} osprey_executable_library_header_t;

typedef struct osprey_executable_library_v1_t {
  /* Must be first: the runtime reads it before anything else. */
  const osprey_executable_library_header_t* header;
  struct {
    uint32_t count;
    /* Host function names; a leading '?' marks an optional import. */
    const char* const* symbols;
  } imports;
  struct {
    uint32_t count;
    const osprey_dispatch_fn_t* ptrs;
    /* May be NULL: then every export takes no bindings and no constants. */
    const osprey_dispatch_attrs_v1_t* attrs;
    /* May be NULL; otherwise one name per export. */
    const char* const* names;
  } exports;
} osprey_executable_library_v1_t;

/* The query function every library exports (under the name described at the
 * top of this file). Returns NULL if the library
 * cannot serve |max_version|; otherwise a pointer to the library structure
 * (whose first member is the header), valid while the library is loaded. */
typedef const osprey_executable_library_header_t* const* (
    *osprey_executable_library_query_fn_t)(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* OSPREY_HAL_LOCAL_EXECUTABLE_LIBRARY_H_ */
