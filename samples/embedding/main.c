/* The smallest useful embedding of the Osprey runtime in C: load a module,
 * call a function with two float vectors, print the result.
 *
 *   embedding_sample MODULE.osp [DEVICE] [FUNCTION]
 *
 * The function must take two 4xf32 tensors and return one tensor (the e2e
 * runtime test module "simple_add" does: it adds them on the device). A
 * module compiled by osprey-compile gets its transient arena from this
 * program's memory instead of a runtime allocation. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/embed/osprey.h"

/* Prints |status| if it is an error, frees it, and says whether it was OK. */
static int check(osprey_status_t* status, const char* what) {
  if (!status) return 1;
  fprintf(stderr, "embedding_sample: %s: %s\n", what, osprey_status_message(status));
  osprey_status_free(status);
  return 0;
}

/* Gives the most recently loaded module an arena of the size and alignment
 * it records, allocated here; *out_arena is freed by the caller after the
 * session and its functions are released. Modules without arena attributes
 * (not compiled by osprey-compile) or needing none are left alone. */
static int supply_arena(osprey_session_t* session, void** out_arena) {
  osprey_module_t* module = NULL;
  size_t size = 0;
  size_t alignment = 1;
  int ok = check(osprey_session_lookup_module(session, NULL, &module), "looking up module");
  if (ok) {
    osprey_status_t* status = osprey_module_arena_requirement(module, &size, &alignment);
    if (osprey_status_code(status) == OSPREY_STATUS_NOT_FOUND) {
      osprey_status_free(status);
      size = 0;
    } else {
      ok = check(status, "querying the arena");
    }
  }
  if (ok && size > 0) {
    /* aligned_alloc wants a multiple of the alignment. */
    *out_arena = aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (!*out_arena) {
      fprintf(stderr, "embedding_sample: no memory for a %zu-byte arena\n", size);
      ok = 0;
    } else {
      ok = check(osprey_module_set_arena(module, *out_arena, size, NULL, NULL), "setting arena");
      if (ok) printf("%s: arena of %zu bytes in application memory\n",
                     osprey_module_name(module), size);
    }
  }
  osprey_module_release(module);
  return ok;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODULE.osp [DEVICE] [FUNCTION]\n", argv[0]);
    return 2;
  }
  const char* module_path = argv[1];
  const char* device_name = argc > 2 ? argv[2] : "cpu-sync";
  const char* function_name = argc > 3 ? argv[3] : "main";
  int ok = 0;

  osprey_instance_t* instance = NULL;
  osprey_device_t* device = NULL;
  osprey_session_t* session = NULL;
  osprey_function_t* function = NULL;
  osprey_buffer_view_t* inputs[2] = {NULL, NULL};
  osprey_buffer_view_t* output = NULL;
  void* arena = NULL;

  if (!check(osprey_instance_create(&instance), "creating instance")) goto done;
  if (!check(osprey_device_create(instance, device_name, NULL, 0, &device), "creating device")) {
    goto done;
  }
  if (!check(osprey_session_create(instance, device, &session), "creating session")) goto done;
  if (!check(osprey_session_load_module_file(session, module_path), "loading module")) goto done;
  if (!supply_arena(session, &arena)) goto done;
  if (!check(osprey_session_lookup_function(session, function_name, &function), "lookup")) {
    goto done;
  }

  {
    const int64_t shape[1] = {4};
    const float a[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float b[4] = {10.0f, 20.0f, 30.0f, 40.0f};
    if (!check(osprey_buffer_view_create(device, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, a,
                                         sizeof(a), &inputs[0]),
               "creating input 0") ||
        !check(osprey_buffer_view_create(device, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, b,
                                         sizeof(b), &inputs[1]),
               "creating input 1")) {
      goto done;
    }
  }

  {
    size_t output_count = 0;
    if (!check(osprey_function_call(function, inputs, 2, &output, 1, &output_count),
               "calling function")) {
      goto done;
    }
    char shape_text[64];
    osprey_buffer_view_format_shape(output, shape_text, sizeof(shape_text));
    if (osprey_buffer_view_element_type(output) != OSPREY_ELEMENT_TYPE_FLOAT32 ||
        osprey_buffer_view_element_count(output) > 1024) {
      fprintf(stderr, "embedding_sample: unexpected output %s\n", shape_text);
      goto done;
    }
    float values[1024];
    if (!check(osprey_buffer_view_read(output, values, sizeof(values)), "reading output")) {
      goto done;
    }
    printf("%s(a, b) = %s [", osprey_function_name(function), shape_text);
    for (int64_t i = 0; i < osprey_buffer_view_element_count(output); ++i) {
      printf(i ? " %g" : "%g", values[i]);
    }
    printf("]\n");
    ok = 1;
  }

done:
  osprey_buffer_view_release(output);
  osprey_buffer_view_release(inputs[0]);
  osprey_buffer_view_release(inputs[1]);
  osprey_function_release(function);
  osprey_session_release(session);
  osprey_device_release(device);
  osprey_instance_release(instance);
  free(arena);
  return ok ? 0 : 1;
}
