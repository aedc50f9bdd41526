/* Osprey embedding API: load a compiled module (.osp) and call its functions
 * on a device, from C.
 *
 *   osprey_instance_t  the registered HAL drivers; one per application.
 *   osprey_device_t    one device ("cpu-sync", "cpu-task", "npu") of a driver.
 *   osprey_session_t   a VM context on one device: the HAL module plus the
 *                      modules the application loads into it.
 *   osprey_module_t    a module loaded into a session: its name, reflection
 *                      attributes and transient arena.
 *   osprey_function_t  an exported function of a loaded module.
 *   osprey_buffer_view_t  a shaped, typed tensor in device-visible memory.
 *
 * Errors: every fallible call returns an osprey_status_t*. NULL means OK.
 * Anything else is an error the caller owns and must free with
 * osprey_status_free(); osprey_status_message() gives "CODE: message" with
 * one line of context per layer, e.g.
 *   INVALID_ARGUMENT: input 0 of 'main' has shape 2x4xf32, expected 2x3xf32
 *
 * Ownership: objects are reference counted. A create/load/lookup call hands
 * the caller one reference; release it with the matching *_release(). Objects
 * keep alive what they depend on (a session retains its device and instance,
 * a function retains its session), so they may be released in any order.
 * Pointers passed in are borrowed for the duration of the call unless a
 * comment says otherwise.
 *
 * Thread-safety:
 *   - instance and device: thread-safe; buffer views may be created from
 *     several threads at once.
 *   - session: thread-compatible. Calls into one session (loading modules,
 *     lookups, osprey_function_call) must not overlap; use one session per
 *     thread for concurrent inference. Retain/release and
 *     osprey_session_interrupt are thread-safe.
 *   - module: as its session (set_arena is a call into the session).
 *   - buffer view: its shape and type never change. Reading its contents
 *     while a call that writes it is running is a data race.
 *   - status: owned by one thread at a time.
 *
 * The header is plain C99 and versioned with the library: new functions are
 * added, existing ones keep their signature within a major version.
 */
#ifndef OSPREY_RUNTIME_EMBED_OSPREY_H_
#define OSPREY_RUNTIME_EMBED_OSPREY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OSPREY_API_VERSION_MAJOR 0
#define OSPREY_API_VERSION_MINOR 4

/*===------------------------------------------------------------------===*/
/* Status                                                                 */
/*===------------------------------------------------------------------===*/

/* Canonical error codes (the same values and meanings as abseil/IREE). */
typedef enum osprey_status_code_e {
  OSPREY_STATUS_OK = 0,
  OSPREY_STATUS_CANCELLED = 1,
  OSPREY_STATUS_UNKNOWN = 2,
  OSPREY_STATUS_INVALID_ARGUMENT = 3,   /* bad call: wrong shape, bad name */
  OSPREY_STATUS_DEADLINE_EXCEEDED = 4,
  OSPREY_STATUS_NOT_FOUND = 5,          /* no such file, driver or export */
  OSPREY_STATUS_ALREADY_EXISTS = 6,
  OSPREY_STATUS_PERMISSION_DENIED = 7,
  OSPREY_STATUS_RESOURCE_EXHAUSTED = 8, /* out of memory */
  OSPREY_STATUS_FAILED_PRECONDITION = 9,
  OSPREY_STATUS_ABORTED = 10,
  OSPREY_STATUS_OUT_OF_RANGE = 11,
  OSPREY_STATUS_UNIMPLEMENTED = 12,
  OSPREY_STATUS_INTERNAL = 13,
  OSPREY_STATUS_UNAVAILABLE = 14,       /* driver/device not usable here */
  OSPREY_STATUS_DATA_LOSS = 15,         /* corrupt or truncated module */
} osprey_status_code_t;

typedef struct osprey_status_t osprey_status_t;

/* The code of |status|; OSPREY_STATUS_OK for NULL. */
osprey_status_code_t osprey_status_code(const osprey_status_t* status);
/* "CODE: message" (with context lines); "OK" for NULL. Owned by |status|:
 * valid until it is freed. Never NULL. */
const char* osprey_status_message(const osprey_status_t* status);
/* Frees |status|; NULL is ignored. */
void osprey_status_free(osprey_status_t* status);
/* "INVALID_ARGUMENT" etc.; never NULL. */
const char* osprey_status_code_name(osprey_status_code_t code);

/*===------------------------------------------------------------------===*/
/* Instance                                                               */
/*===------------------------------------------------------------------===*/

typedef struct osprey_instance_t osprey_instance_t;

/* Creates an instance with every driver compiled into the library
 * registered. Memory comes from the default host allocator. */
osprey_status_t* osprey_instance_create(osprey_instance_t** out_instance);

/* Host memory for everything created from an instance (devices, sessions,
 * modules, VM contexts, buffers of cpu devices, ...), e.g. a static arena
 * on a microcontroller without a heap. */
typedef struct osprey_allocator_t {
  void* user_data;
  /* Returns |size| bytes aligned to |alignment| (a power of two), or NULL
   * when out of memory (the runtime reports RESOURCE_EXHAUSTED). */
  void* (*allocate)(void* user_data, size_t size, size_t alignment);
  /* Frees memory from |allocate|; never called with NULL. */
  void (*free)(void* user_data, void* ptr);
  /* Used by the runtime; initialize to zero and leave alone. */
  void* reserved[2];
} osprey_allocator_t;

/* Like osprey_instance_create, with all host memory from |allocator|. The
 * struct is borrowed and written to (reserved fields): it must stay valid
 * and unmoved until every object created from the instance, including
 * buffer views, has been released. Status objects still use the default
 * allocator. INVALID_ARGUMENT if a function pointer is missing. */
osprey_status_t* osprey_instance_create_with_allocator(osprey_allocator_t* allocator,
                                                       osprey_instance_t** out_instance);
void osprey_instance_retain(osprey_instance_t* instance);
void osprey_instance_release(osprey_instance_t* instance);

/* Registered drivers: names such as "cpu-sync". The string is owned by the
 * instance. Returns NULL when |index| >= the driver count. */
size_t osprey_instance_driver_count(const osprey_instance_t* instance);
const char* osprey_instance_driver_name(const osprey_instance_t* instance, size_t index);

/*===------------------------------------------------------------------===*/
/* Device                                                                 */
/*===------------------------------------------------------------------===*/

typedef struct osprey_device_t osprey_device_t;

/* A driver-specific option, e.g. {"task_workers", "4"} for cpu-task. */
typedef struct osprey_device_param_t {
  const char* key;
  const char* value;
} osprey_device_param_t;

/* Creates a device of driver |name|. NOT_FOUND (listing the available
 * drivers) for an unknown name; INVALID_ARGUMENT for an unknown or bad
 * parameter; UNAVAILABLE if the device cannot be used on this machine. */
osprey_status_t* osprey_device_create(osprey_instance_t* instance, const char* name,
                                      const osprey_device_param_t* params, size_t param_count,
                                      osprey_device_t** out_device);
void osprey_device_retain(osprey_device_t* device);
void osprey_device_release(osprey_device_t* device);
/* The driver name of |device| ("cpu-sync"); owned by the device. */
const char* osprey_device_name(const osprey_device_t* device);
/* A fact or counter of |device| by key, e.g. the npu's "npu.total_cycles",
 * "npu.macs", "npu.mac_cycles", "npu.pes" (docs/npu.md lists them).
 * NOT_FOUND for keys the device does not know. */
osprey_status_t* osprey_device_query_i64(osprey_device_t* device, const char* key,
                                         int64_t* out_value);
/* Waits for the device's submitted work to retire, then frees memory the
 * device keeps for reuse (cpu-task: its pool of submission records), e.g.
 * after releasing the sessions of a model that is no longer needed: the
 * device then holds nothing of the model. Later calls allocate again. */
osprey_status_t* osprey_device_trim(osprey_device_t* device);

/*===------------------------------------------------------------------===*/
/* Buffer views                                                           */
/*===------------------------------------------------------------------===*/

/* Element types; the encoding is (kind << 24) | bit width. */
typedef enum osprey_element_type_e {
  OSPREY_ELEMENT_TYPE_NONE = 0,
  OSPREY_ELEMENT_TYPE_INT8 = (1 << 24) | 8,
  OSPREY_ELEMENT_TYPE_INT16 = (1 << 24) | 16,
  OSPREY_ELEMENT_TYPE_INT32 = (1 << 24) | 32,
  OSPREY_ELEMENT_TYPE_INT64 = (1 << 24) | 64,
  OSPREY_ELEMENT_TYPE_UINT8 = (2 << 24) | 8,
  OSPREY_ELEMENT_TYPE_UINT16 = (2 << 24) | 16,
  OSPREY_ELEMENT_TYPE_UINT32 = (2 << 24) | 32,
  OSPREY_ELEMENT_TYPE_UINT64 = (2 << 24) | 64,
  OSPREY_ELEMENT_TYPE_FLOAT16 = (3 << 24) | 16,
  OSPREY_ELEMENT_TYPE_FLOAT32 = (3 << 24) | 32,
  OSPREY_ELEMENT_TYPE_FLOAT64 = (3 << 24) | 64,
  OSPREY_ELEMENT_TYPE_BFLOAT16 = (4 << 24) | 16,
  OSPREY_ELEMENT_TYPE_BOOL8 = (5 << 24) | 8,
} osprey_element_type_t;

/* Bytes per element of |type| (0 for NONE). */
size_t osprey_element_type_byte_size(osprey_element_type_t type);

#define OSPREY_MAX_RANK 8

typedef struct osprey_buffer_view_t osprey_buffer_view_t;

/* Called when memory wrapped by osprey_buffer_view_wrap is no longer used. */
typedef void (*osprey_release_fn_t)(void* user_data, void* memory);

/* Allocates device memory for a |shape|/|element_type| tensor and copies
 * |byte_length| bytes of |data| into it (|data| may be NULL to leave the
 * contents zeroed). INVALID_ARGUMENT if |rank| > OSPREY_MAX_RANK, a
 * dimension is negative, the type is unknown, or |byte_length| does not
 * match the shape. */
osprey_status_t* osprey_buffer_view_create(osprey_device_t* device, const int64_t* shape,
                                           size_t rank, osprey_element_type_t element_type,
                                           const void* data, size_t byte_length,
                                           osprey_buffer_view_t** out_view);

/* Wraps caller memory without copying (zero-copy import). |data| must stay
 * valid and unmoved until |release| runs (or, with no |release|, until the
 * view and everything retaining it are released); the device reads and may
 * write it in place. INVALID_ARGUMENT as for osprey_buffer_view_create, or
 * if the device cannot import host memory with this alignment (use
 * osprey_buffer_view_create instead). */
osprey_status_t* osprey_buffer_view_wrap(osprey_device_t* device, const int64_t* shape,
                                         size_t rank, osprey_element_type_t element_type,
                                         void* data, size_t byte_length,
                                         osprey_release_fn_t release, void* release_user_data,
                                         osprey_buffer_view_t** out_view);

void osprey_buffer_view_retain(osprey_buffer_view_t* view);
void osprey_buffer_view_release(osprey_buffer_view_t* view);

size_t osprey_buffer_view_rank(const osprey_buffer_view_t* view);
/* Dimension |index| (< rank); -1 if out of range. */
int64_t osprey_buffer_view_dim(const osprey_buffer_view_t* view, size_t index);
osprey_element_type_t osprey_buffer_view_element_type(const osprey_buffer_view_t* view);
int64_t osprey_buffer_view_element_count(const osprey_buffer_view_t* view);
/* Bytes of the tensor contents (element count * element size). */
size_t osprey_buffer_view_byte_length(const osprey_buffer_view_t* view);
/* Writes "2x3xf32" into |buffer| (NUL-terminated if |capacity| > 0);
 * returns the length of the full text. */
size_t osprey_buffer_view_format_shape(const osprey_buffer_view_t* view, char* buffer,
                                       size_t capacity);

/* Copies the contents into |data|. OUT_OF_RANGE if |capacity| is smaller
 * than osprey_buffer_view_byte_length(); PERMISSION_DENIED if the memory is
 * not host-readable. */
osprey_status_t* osprey_buffer_view_read(const osprey_buffer_view_t* view, void* data,
                                         size_t capacity);

/*===------------------------------------------------------------------===*/
/* Sessions and modules                                                   */
/*===------------------------------------------------------------------===*/

typedef struct osprey_session_t osprey_session_t;

/* What loading a module checks against the digests it carries (catching
 * accidental corruption, not tampering: docs/security.md). */
typedef enum osprey_integrity_check_e {
  /* Every byte of the module: code, bytecode and weights. The default. */
  OSPREY_INTEGRITY_CHECK_MODULE = 0,
  /* Only the executables (the code mapped executable), not the weights. */
  OSPREY_INTEGRITY_CHECK_EXECUTABLES = 1,
  /* Nothing: modules executed in place from trusted flash, where reading
   * every byte at load costs too much. */
  OSPREY_INTEGRITY_CHECK_NONE = 2,
} osprey_integrity_check_t;

/* Limits on what the bytecode of the session's modules may take, per call
 * of an exported function (and per module initializer). A call that hits
 * one fails with the code below, a message naming the limit and the VM
 * backtrace ("at module.function+0xOFFSET"); the session stays usable and
 * the next call starts with the full budget. */
typedef struct osprey_session_options_t {
  /* Bytes of VM stack for call frames (at least 1024). Default 64 KiB.
   * Deeper call chains than fit fail with RESOURCE_EXHAUSTED. */
  size_t vm_stack_size;
  /* Bytes that lists and buffers allocated by bytecode may hold at once
   * (RESOURCE_EXHAUSTED past it). Compiled models need a few KiB; device
   * buffers (tensors, the arena) are not counted here. Default 64 MiB;
   * 0: no limit. */
  size_t max_memory;
  /* Bytecode instructions one call may execute (RESOURCE_EXHAUSTED past
   * it). 0 (default): no limit. */
  uint64_t max_instructions;
  /* Wall-clock time one call may take, in nanoseconds (DEADLINE_EXCEEDED
   * past it). Checked between bytecode instructions and after each device
   * operation; an operation already running finishes first. 0 (default):
   * no limit. Bare-metal builds need a clock (see docs/bare-metal.md). */
  uint64_t timeout_ns;
  /* Digest checks when a module is loaded into the session; a mismatch is
   * DATA_LOSS before any of the module's code is prepared. Default
   * OSPREY_INTEGRITY_CHECK_MODULE. */
  osprey_integrity_check_t integrity_check;
} osprey_session_options_t;

/* Fills |options| with the defaults above. */
void osprey_session_options_init(osprey_session_options_t* options);

/* Creates a session on |device| (retained) with the "hal" and "hal_inline"
 * modules registered and the default options. */
osprey_status_t* osprey_session_create(osprey_instance_t* instance, osprey_device_t* device,
                                       osprey_session_t** out_session);
/* Like osprey_session_create with |options| (copied; NULL: the defaults).
 * INVALID_ARGUMENT for a stack smaller than 1024 bytes. */
osprey_status_t* osprey_session_create_with_options(osprey_instance_t* instance,
                                                    osprey_device_t* device,
                                                    const osprey_session_options_t* options,
                                                    osprey_session_t** out_session);

/* Like osprey_session_create_with_options with several devices (1 to 4,
 * distinct, of |instance|; each retained). The first is the default
 * device: osprey_session_load_module_memory imports through its allocator
 * and programs compiled for one device run on it. Programs compiled for
 * several (e.g. a CPU and an NPU) find the device for each of their
 * executable formats among the others; loading such a module into a
 * session that lacks one is NOT_FOUND naming the missing format. */
osprey_status_t* osprey_session_create_with_devices(osprey_instance_t* instance,
                                                    osprey_device_t* const* devices,
                                                    size_t device_count,
                                                    const osprey_session_options_t* options,
                                                    osprey_session_t** out_session);

/* Stops the call running in |session| (or, if none is running, the next
 * one) with CANCELLED and its backtrace at the next bytecode instruction or
 * device-operation boundary. The call it stops consumes the request.
 * Thread-safe: the one session function meant to be called while another
 * thread is inside the session. */
void osprey_session_interrupt(osprey_session_t* session);
void osprey_session_retain(osprey_session_t* session);
void osprey_session_release(osprey_session_t* session);

/* Loads the module file at |path| into the session (memory-mapped where the
 * platform allows, read into memory otherwise), verifies it and runs its
 * initializer. NOT_FOUND if the file cannot be opened; DATA_LOSS (a digest
 * that does not match: see osprey_session_options_t.integrity_check) or
 * INVALID_ARGUMENT (naming what is wrong) for a corrupt or incompatible
 * module; UNIMPLEMENTED if the module has executables but the session's
 * device can run none of them (compiled for another target); NOT_FOUND for
 * an import no loaded module provides. */
osprey_status_t* osprey_session_load_module_file(osprey_session_t* session, const char* path);

/* Loads a module from |size| bytes at |data| without copying them. |data|
 * must be aligned to 16 bytes (64 if the module has large external
 * segments) and stay valid and unchanged until |release| runs, which
 * happens when the session no longer needs it; with no |release| the
 * caller keeps it alive until the session is released. Errors as for
 * osprey_session_load_module_file. */
osprey_status_t* osprey_session_load_module_memory(osprey_session_t* session, const void* data,
                                                   size_t size, osprey_release_fn_t release,
                                                   void* release_user_data);

/*===------------------------------------------------------------------===*/
/* Modules: attributes and the transient arena                            */
/*===------------------------------------------------------------------===*/

/* A module loaded into a session. The handle retains the session. */
typedef struct osprey_module_t osprey_module_t;

/* Finds the loaded module named |name|, or with |name| NULL the most
 * recently loaded one. FAILED_PRECONDITION if no module is loaded;
 * NOT_FOUND (listing the loaded modules) for an unknown name. */
osprey_status_t* osprey_session_lookup_module(osprey_session_t* session, const char* name,
                                              osprey_module_t** out_module);
void osprey_module_retain(osprey_module_t* module);
void osprey_module_release(osprey_module_t* module);
/* The module's name; owned by the module. */
const char* osprey_module_name(const osprey_module_t* module);

/* Sets |*out_value| to the value of the module's reflection attribute |key|
 * (a string owned by the module, valid while |module| lives). NOT_FOUND if
 * the module has no such attribute. Compiled modules record e.g.
 * "arena_size" and "arena_alignment". */
osprey_status_t* osprey_module_lookup_attribute(const osprey_module_t* module, const char* key,
                                                const char** out_value);

/* The transient memory (arena) one call of the module's functions needs,
 * from its "arena_size" and "arena_alignment" attributes, in bytes.
 * |*out_size| is 0 for a module that needs no arena. NOT_FOUND if the
 * module records no arena_size (it was not made by osprey-compile);
 * DATA_LOSS if an attribute is not a valid number or the alignment is not a
 * power of two. */
osprey_status_t* osprey_module_arena_requirement(const osprey_module_t* module,
                                                 size_t* out_size, size_t* out_alignment);

/* Makes the module use |size| bytes of caller memory at |memory| as its
 * arena in the module's session, instead of allocating one on the first
 * call. The memory is imported as a device buffer (no copy) and handed to
 * the module's exported set_arena. |memory| must stay valid until |release|
 * runs (it also runs when this call fails), or with no |release| until the
 * session and every function looked up from it are released. The session
 * keeps the arena across later module loads and gives it back to the module
 * after a call of a function looked up since the last load fails (compiled
 * modules drop their arena on failure). Calls of the module must not
 * overlap (the session is thread-compatible).
 * Errors: FAILED_PRECONDITION if the module has no arena (needs none or
 * exports no set_arena); INVALID_ARGUMENT if |size| is smaller than
 * osprey_module_arena_requirement's size or |memory| is not aligned to its
 * alignment; the device's error (with context) if it cannot import host
 * memory. */
osprey_status_t* osprey_module_set_arena(osprey_module_t* module, void* memory, size_t size,
                                         osprey_release_fn_t release, void* release_user_data);

/*===------------------------------------------------------------------===*/
/* Functions                                                              */
/*===------------------------------------------------------------------===*/

typedef struct osprey_function_t osprey_function_t;

/* Finds an exported function: "module.function" or just "function" (searched
 * in the modules loaded so far, most recent first). NOT_FOUND listing the
 * module's exports if there is no such function. */
osprey_status_t* osprey_session_lookup_function(osprey_session_t* session, const char* name,
                                                osprey_function_t** out_function);
void osprey_function_retain(osprey_function_t* function);
void osprey_function_release(osprey_function_t* function);

/* The function's name ("module.function"), owned by the function. */
const char* osprey_function_name(const osprey_function_t* function);
/* Numbers of arguments and results. */
size_t osprey_function_input_count(const osprey_function_t* function);
size_t osprey_function_output_count(const osprey_function_t* function);
/* The VM signature, e.g. "rr:r" (i=i32, I=i64, f=f32, F=f64, r=ref);
 * owned by the function. */
const char* osprey_function_signature(const osprey_function_t* function);

/* Calls |function| with |inputs| (borrowed; each argument the function
 * declares as a ref gets the corresponding view) and waits for it to
 * finish. On success |outputs[0..*out_output_count)| hold new references
 * the caller releases. INVALID_ARGUMENT if the input count is wrong, an
 * input has the wrong shape or type (the message names the input, the
 * expected and the actual shape) or |output_capacity| is too small;
 * UNIMPLEMENTED if the function takes or returns non-tensor values (use
 * osprey_function_call_values). Errors raised by the module's code come
 * back with the function name as context. */
osprey_status_t* osprey_function_call(osprey_function_t* function,
                                      osprey_buffer_view_t* const* inputs, size_t input_count,
                                      osprey_buffer_view_t** outputs, size_t output_capacity,
                                      size_t* out_output_count);

/* A value of any VM type, for functions with scalar arguments or results. */
typedef enum osprey_value_type_e {
  OSPREY_VALUE_TYPE_NONE = 0,
  OSPREY_VALUE_TYPE_I32 = 1,
  OSPREY_VALUE_TYPE_I64 = 2,
  OSPREY_VALUE_TYPE_F32 = 3,
  OSPREY_VALUE_TYPE_F64 = 4,
  OSPREY_VALUE_TYPE_BUFFER_VIEW = 5,
} osprey_value_type_t;

typedef struct osprey_value_t {
  osprey_value_type_t type;
  union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    /* Borrowed in inputs; a new reference (caller releases) in outputs. */
    osprey_buffer_view_t* buffer_view;
  } u;
} osprey_value_t;

/* Like osprey_function_call with typed values. INVALID_ARGUMENT if an
 * input's type does not match the signature. Outputs holding buffer views
 * carry references the caller releases. */
osprey_status_t* osprey_function_call_values(osprey_function_t* function,
                                             const osprey_value_t* inputs, size_t input_count,
                                             osprey_value_t* outputs, size_t output_capacity,
                                             size_t* out_output_count);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* OSPREY_RUNTIME_EMBED_OSPREY_H_ */
