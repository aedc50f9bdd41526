// Bare-metal image over the whole embedding stack (osprey.h: instance,
// cpu-sync device, session, VM module loading, function calls) with all
// runtime memory from a static arena. It checks on the target that bad
// module bytes are refused with a status and that every object is released
// back to the arena, and it is the image whose size shows what a complete
// application pays for the runtime. Exit code 0 = every check passed.
#include <stdio.h>
#include <string.h>

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/embed/osprey.h"

#if OSPREY_FIRMWARE_HAVE_MODULE
extern "C" const uint8_t osprey_firmware_module[];
extern "C" const size_t osprey_firmware_module_size;
#endif

namespace {

// Counts the image's checks and prints each failure with its location.
class CheckGroup {
 public:
  bool Expect(bool ok, const char* what, const char* file, int line) {
    ++checks_;
    if (!ok) {
      ++failures_;
      printf("  FAIL %s:%d: %s\n", file, line, what);
    }
    return ok;
  }
  int checks() const { return checks_; }
  int failures() const { return failures_; }

 private:
  int checks_ = 0;
  int failures_ = 0;
};

// The VM context takes a 64 KiB stack (vm::ContextOptions, not configurable
// through osprey.h) and is rebuilt while the previous one is alive on each
// module load.
alignas(16) uint8_t g_heap[192 * 1024];

void* ArenaAllocate(void* user_data, size_t size, size_t alignment) {
  void* ptr = nullptr;
  osprey::Status status =
      static_cast<osprey::StaticArenaAllocator*>(user_data)->Allocate(size, alignment, &ptr);
  if (!status.ok()) {
    status.IgnoreError();
    return nullptr;
  }
  return ptr;
}

void ArenaFree(void* user_data, void* ptr) {
  static_cast<osprey::StaticArenaAllocator*>(user_data)->Free(ptr);
}

// Records that |status| is an error (and frees it); false for OK.
bool ExpectError(CheckGroup& group, osprey_status_t* status, const char* what) {
  bool failed = status != nullptr;
  group.Expect(failed, what, __FILE__, __LINE__);
  if (status) {
    printf("  %s: %s\n", what, osprey_status_message(status));
    osprey_status_free(status);
  }
  return failed;
}

bool ExpectOk(CheckGroup& group, osprey_status_t* status, const char* what) {
  group.Expect(status == nullptr, what, __FILE__, __LINE__);
  if (status) {
    printf("  %s: %s\n", what, osprey_status_message(status));
    osprey_status_free(status);
    return false;
  }
  return true;
}

// Runs "main" of the loaded module on a 4-element tensor if it exists.
void CallMain(osprey_session_t* session, osprey_device_t* device, CheckGroup& group) {
  osprey_function_t* function = nullptr;
  if (ExpectError(group, osprey_session_lookup_function(session, "main", &function),
                  "lookup of a function no module exports")) {
    return;
  }
  const int64_t shape[] = {4};
  const float values[] = {1.0f, 2.0f, 3.0f, 4.0f};
  osprey_buffer_view_t* input = nullptr;
  if (ExpectOk(group,
               osprey_buffer_view_create(device, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, values,
                                         sizeof(values), &input),
               "creating an input tensor")) {
    osprey_buffer_view_t* outputs[2] = {};
    size_t output_count = 0;
    if (ExpectOk(group, osprey_function_call(function, &input, 1, outputs, 2, &output_count),
                 "calling main")) {
      float result[4] = {};
      ExpectOk(group, osprey_buffer_view_read(outputs[0], result, sizeof(result)),
               "reading the result");
      for (size_t i = 0; i < output_count; ++i) osprey_buffer_view_release(outputs[i]);
    }
    osprey_buffer_view_release(input);
  }
  osprey_function_release(function);
}

#if OSPREY_FIRMWARE_HAVE_MODULE
// Calls |name|(|argument|) of the loaded module; returns its i32 result, or
// -1 after recording a failure.
int32_t CallI32(osprey_session_t* session, const char* name, int32_t argument, CheckGroup& group) {
  osprey_function_t* function = nullptr;
  if (!ExpectOk(group, osprey_session_lookup_function(session, name, &function),
                "looking up a module function")) {
    return -1;
  }
  osprey_value_t input = {};
  input.type = OSPREY_VALUE_TYPE_I32;
  input.u.i32 = argument;
  osprey_value_t output = {};
  size_t output_count = 0;
  int32_t result = -1;
  if (ExpectOk(group,
               osprey_function_call_values(function, &input, 1, &output, 1, &output_count),
               "calling a module function")) {
    group.Expect(output_count == 1 && output.type == OSPREY_VALUE_TYPE_I32,
                 "one i32 result", __FILE__, __LINE__);
    result = output.u.i32;
  }
  osprey_function_release(function);
  return result;
}

// Loads the embedded module (firmware_module.vmasm) and runs its functions
// in the VM interpreter on the target.
void RunModule(osprey_session_t* session, CheckGroup& group) {
  if (!ExpectOk(group,
                osprey_session_load_module_memory(session, osprey_firmware_module,
                                                  osprey_firmware_module_size, nullptr, nullptr),
                "loading the embedded module")) {
    return;
  }
  group.Expect(CallI32(session, "sum_to", 100, group) == 4950, "sum_to(100) == 4950", __FILE__,
               __LINE__);
  group.Expect(CallI32(session, "firmware.fib", 20, group) == 6765, "fib(20) == 6765", __FILE__,
               __LINE__);
  printf("  module: %u bytes, sum_to and fib ran in the VM\n",
         static_cast<unsigned>(osprey_firmware_module_size));
}
#endif

}  // namespace

int main() {
  CheckGroup group;
  osprey::StaticArenaAllocator arena(g_heap, sizeof(g_heap));
  osprey_allocator_t allocator = {&arena, &ArenaAllocate, &ArenaFree, {nullptr, nullptr}};
  printf("osprey bare-metal embedding image\n");

  osprey_instance_t* instance = nullptr;
  if (ExpectOk(group, osprey_instance_create_with_allocator(&allocator, &instance),
               "creating the instance")) {
    osprey_device_t* device = nullptr;
    const osprey_device_param_t params[] = {{"local_memory_size", "1024"}};
    if (ExpectOk(group, osprey_device_create(instance, "cpu-sync", params, 1, &device),
                 "creating a cpu-sync device")) {
      osprey_session_t* session = nullptr;
      if (ExpectOk(group, osprey_session_create(instance, device, &session),
                   "creating a session")) {
        // Not a module: random-looking bytes, then a truncated header.
        static const uint8_t kGarbage[64] = {0x13, 0x37, 0xC0, 0xDE, 1, 2, 3, 4, 5, 6, 7, 8};
        ExpectError(group,
                    osprey_session_load_module_memory(session, kGarbage, sizeof(kGarbage),
                                                      nullptr, nullptr),
                    "loading bytes that are not a module");
        ExpectError(group,
                    osprey_session_load_module_memory(session, kGarbage, 3, nullptr, nullptr),
                    "loading a 3-byte module");
        ExpectError(group, osprey_session_load_module_file(session, "model.osp"),
                    "loading a module file that does not exist");
        CallMain(session, device, group);
#if OSPREY_FIRMWARE_HAVE_MODULE
        RunModule(session, group);
#endif
        osprey_session_release(session);
      }
      osprey_device_release(device);
    }
    osprey_instance_release(instance);
  }
  group.Expect(arena.bytes_in_use() == 0, "every object went back to the arena", __FILE__,
               __LINE__);
  printf("embed    %d checks, %d failed (arena peak %u bytes)\n", group.checks(), group.failures(),
         static_cast<unsigned>(arena.peak_bytes_in_use()));
  int exit_code = group.failures() == 0 ? 0 : 1;
  printf("%s (exit code %d)\n", exit_code == 0 ? "PASS" : "FAIL", exit_code);
  return exit_code;
}
