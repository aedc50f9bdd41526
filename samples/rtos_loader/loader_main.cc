// The module loader firmware: a FreeRTOS application that takes new models
// at run time while the rest of it keeps running (README.md).
//
// Tasks, highest priority first:
//   heartbeat (3)  counts ticks: the application work that must not stall.
//   loader (2)     the board's main task: receives module packages, verifies
//                  and loads them, runs them on cpu-task and cpu-sync,
//                  compares the outputs and unloads them.
//   cpu-task (1)   the two workers of the cpu-task device. They run below
//                  the loader, so they only get the CPU because the loader's
//                  waits for their results block instead of spinning.
//
// Steps come from the command line (semihosting), run in order:
//   model:PACKAGE:VECTORS  receive PACKAGE (module_package.h), load it on
//                          both devices, call main on the input of VECTORS
//                          (test_vectors.h) --runs times and compare the
//                          output with the reference (|out - ref| <= atol +
//                          rtol |ref|) and cpu-task's output with cpu-sync's
//                          bit for bit; then unload everything.
//   refuse:PACKAGE         the package must be refused on receipt or at load
//                          on both devices, with a message.
// After every step (and trimming the devices' reuse pools) the FreeRTOS
// heap must be back to its level before the step: all memory of the module
// freed. The heartbeat must have kept beating throughout.
//
// Options: --runs=N inferences per device and model (default 1),
// --loads=N extra load/unload rounds per model on the last device (for
// measuring the load cost; --loads-call: each round also calls main once,
// which prepares the executables), --device=cpu-task|cpu-sync (use only that
// device), --heartbeat-ticks=N (beat every N ticks instead of every tick),
// --inject-failure (the first model's reference is off by 1.0, so the image
// must report a mismatch).
//
// Exit code, a bit mask: 1 runtime error on a good module, 2 output mismatch,
// 4 heap not back to its level, 8 corrupt package accepted, 16 heartbeat
// stalled, 32 bad command line or unreadable test vectors; 0: all passed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cstdint>

#include "FreeRTOS.h"
#include "runtime/base/allocator.h"
#include "runtime/base/platform/platform.h"
#include "runtime/embed/osprey.h"
#include "samples/common/test_vectors.h"
#include "samples/rtos_loader/board/rtos_board.h"
#include "samples/rtos_loader/module_package.h"
#include "task.h"

namespace {

using osprey::Allocator;
using osprey::rtos_loader::ReceivedModule;
using osprey::rtos_loader::ReceivePackage;
using osprey::samples::ReadTestVectors;
using osprey::samples::TestVectors;

constexpr int kRuntimeError = 1;
constexpr int kMismatch = 2;
constexpr int kLeak = 4;
constexpr int kAcceptedCorrupt = 8;
constexpr int kHeartbeatStalled = 16;
constexpr int kUsage = 32;

constexpr UBaseType_t kHeartbeatPriority = OSPREY_RTOS_MAIN_PRIORITY + 1;
// The workers' priority, one below the loader's.
static_assert(OSPREY_RTOS_MAIN_PRIORITY == 2);
constexpr const char* kWorkerPriority = "1";
// Largest module the loader takes.
constexpr size_t kMaxModuleSize = 1024 * 1024;

//===----------------------------------------------------------------------===//
// The heartbeat: application work that keeps running
//===----------------------------------------------------------------------===//

volatile uint32_t g_beats = 0;
// Ticks between beats (--heartbeat-ticks).
TickType_t g_beat_ticks = 1;

void HeartbeatTask(void*) {
  TickType_t wake = xTaskGetTickCount();
  for (;;) {
    vTaskDelayUntil(&wake, g_beat_ticks);
    g_beats = g_beats + 1;
  }
}

// Where a step started: heartbeat, ticks, clock, heap.
struct Mark {
  uint32_t beats;
  TickType_t ticks;
  int64_t nanos;
  size_t free_heap;
};

Mark Now() {
  return {g_beats, xTaskGetTickCount(), osprey::platform::MonotonicNanos(), xPortGetFreeHeapSize()};
}

double MillisSince(const Mark& mark) {
  return double(osprey::platform::MonotonicNanos() - mark.nanos) / 1e6;
}

// The heartbeat must have given at least half of the beats due since |mark|
// (one every g_beat_ticks ticks; it runs above everything else).
int CheckHeartbeat(const Mark& mark) {
  uint32_t ticks = uint32_t(xTaskGetTickCount() - mark.ticks);
  uint32_t beats = g_beats - mark.beats;
  bool ok = beats * 2 * g_beat_ticks >= ticks && (ticks < 2 * g_beat_ticks || beats > 0);
  printf("  heartbeat: %u beats in %u ticks%s\n", unsigned(beats), unsigned(ticks),
         ok ? "" : " -- STALLED");
  return ok ? 0 : kHeartbeatStalled;
}

// The FreeRTOS heap must be back to |expected| free bytes.
int CheckHeap(const char* what, size_t expected) {
  size_t now = xPortGetFreeHeapSize();
  printf("  heap: %u bytes free %s (%u before; lowest ever %u)\n", unsigned(now), what,
         unsigned(expected), unsigned(xPortGetMinimumEverFreeHeapSize()));
  if (now == expected) return 0;
  printf("  error: %d bytes of the heap not given back\n", int(expected) - int(now));
  return kLeak;
}

//===----------------------------------------------------------------------===//
// Running a module
//===----------------------------------------------------------------------===//

// Takes |status|: true if OK, else prints it under |label| and frees it.
bool Ok(osprey_status_t* status, const char* label, const char* what) {
  if (!status) return true;
  printf("  %s: %s: %s\n", label, what, osprey_status_message(status));
  osprey_status_free(status);
  return false;
}

struct Device {
  const char* name;
  osprey_device_t* device = nullptr;
};

struct RunResult {
  double load_ms = 0;
  double ms_per_run = 0;
  float* output = nullptr;  // expected_count values, from the default allocator.
};

// Loads |module| in a new session on |device|, calls main |runs| times on
// the input and copies the last output into |result|. Everything but the
// output is released before returning.
int RunOnDevice(osprey_instance_t* instance, const Device& device, const ReceivedModule& module,
                const TestVectors& vectors, int runs, RunResult* result) {
  osprey_session_t* session = nullptr;
  osprey_function_t* function = nullptr;
  osprey_buffer_view_t* input = nullptr;
  int rc = 0;
  Mark load = Now();
  if (!Ok(osprey_session_create(instance, device.device, &session), "error",
          "creating a session") ||
      !Ok(osprey_session_load_module_memory(session, module.data(), module.size(), nullptr,
                                            nullptr),
          "error", "loading the module")) {
    rc = kRuntimeError;
  }
  result->load_ms = MillisSince(load);
  if (rc == 0 && (!Ok(osprey_session_lookup_function(session, "main", &function), "error",
                      "looking up main") ||
                  !Ok(osprey_buffer_view_create(device.device, vectors.shape, vectors.rank,
                                                OSPREY_ELEMENT_TYPE_FLOAT32, vectors.input,
                                                vectors.input_count * sizeof(float), &input),
                      "error", "creating the input"))) {
    rc = kRuntimeError;
  }
  Mark start = Now();
  for (int run = 0; rc == 0 && run < runs; ++run) {
    osprey_buffer_view_t* output = nullptr;
    size_t output_count = 0;
    if (!Ok(osprey_function_call(function, &input, 1, &output, 1, &output_count), "error",
            "calling main")) {
      rc = kRuntimeError;
      break;
    }
    if (output_count != 1 ||
        osprey_buffer_view_element_type(output) != OSPREY_ELEMENT_TYPE_FLOAT32 ||
        size_t(osprey_buffer_view_element_count(output)) != vectors.expected_count) {
      char shape[64] = "";
      if (output_count == 1) osprey_buffer_view_format_shape(output, shape, sizeof(shape));
      printf("  error: main returned %u outputs (%s); expected one of %u f32 values\n",
             unsigned(output_count), shape, unsigned(vectors.expected_count));
      rc = kMismatch;
    } else if (!Ok(osprey_buffer_view_read(output, result->output,
                                           vectors.expected_count * sizeof(float)),
                   "error", "reading the output")) {
      rc = kRuntimeError;
    }
    for (size_t i = 0; i < output_count; ++i) osprey_buffer_view_release(output);
  }
  if (rc == 0) result->ms_per_run = MillisSince(start) / runs;
  osprey_buffer_view_release(input);
  osprey_function_release(function);
  osprey_session_release(session);
  return rc;
}

// Outputs outside |out - ref| <= atol + rtol |ref| (reported: the first 5).
size_t CompareWithReference(const char* device, const float* actual, const TestVectors& vectors,
                            bool inject_failure) {
  size_t mismatches = 0;
  float max_error = 0;
  for (size_t i = 0; i < vectors.expected_count; ++i) {
    float expected = vectors.expected[i] + (inject_failure && i == 0 ? 1.0f : 0.0f);
    float error = fabsf(actual[i] - expected);
    if (error > max_error) max_error = error;
    if (!(error <= vectors.atol + vectors.rtol * fabsf(expected))) {
      if (mismatches < 5) {
        printf("  %s output[%u] = %.7g, expected %.7g\n", device, unsigned(i), double(actual[i]),
               double(expected));
      }
      ++mismatches;
    }
  }
  printf("  %s: %u values, max abs error %.3g (atol %.3g, rtol %.3g), %u outside\n", device,
         unsigned(vectors.expected_count), double(max_error), double(vectors.atol),
         double(vectors.rtol), unsigned(mismatches));
  return mismatches;
}

// FNV-1a of the output bytes: equal digests mean bit-identical outputs
// (the bare-metal model image prints the same digest).
uint32_t Digest(const float* values, size_t count) {
  uint32_t hash = 2166136261u;
  const auto* bytes = reinterpret_cast<const uint8_t*>(values);
  for (size_t i = 0; i < count * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}

struct Options {
  int runs = 1;
  int loads = 0;
  bool inject_failure = false;
  const char* device = nullptr;  // Only this device; null: both.
  bool loads_call = false;       // --loads rounds also call main once.
};

int ModelStep(osprey_instance_t* instance, const Device* devices, size_t device_count,
              const char* package, const char* vectors_path, const Options& options,
              bool inject_failure) {
  Allocator* allocator = Allocator::Default();
  TestVectors vectors;
  osprey::Status status = ReadTestVectors(vectors_path, allocator, &vectors);
  if (!status.ok()) {
    char text[256];
    status.ToString(text, sizeof(text));
    printf("  error: %s\n", text);
    return kUsage;
  }
  ReceivedModule module;
  Mark received = Now();
  status = ReceivePackage(package, kMaxModuleSize, allocator, &module);
  if (!status.ok()) {
    char text[256];
    status.ToString(text, sizeof(text));
    printf("  error: receiving: %s\n", text);
    return kRuntimeError;
  }
  printf("  received %u module bytes, CRC-32 ok, in %.1f ms\n", unsigned(module.size()),
         MillisSince(received));

  // Extra load/unload rounds: their cost shows in instruction counts. With
  // --loads-call each round also calls main once, which prepares the
  // module's executables (the ELF loader copies and relocates them).
  for (int i = 0; i < options.loads; ++i) {
    const Device& device = devices[device_count - 1];
    if (options.loads_call) {
      RunResult scratch;
      void* memory = nullptr;
      if (!allocator->Allocate(vectors.expected_count * sizeof(float), 16, &memory).ok()) {
        return kRuntimeError;
      }
      scratch.output = static_cast<float*>(memory);
      int load_rc = RunOnDevice(instance, device, module, vectors, 1, &scratch);
      allocator->Free(memory);
      if (load_rc != 0) return load_rc;
      continue;
    }
    osprey_session_t* session = nullptr;
    bool ok = Ok(osprey_session_create(instance, device.device, &session), "error",
                 "creating a session") &&
              Ok(osprey_session_load_module_memory(session, module.data(), module.size(), nullptr,
                                                   nullptr),
                 "error", "loading the module");
    osprey_session_release(session);
    if (!ok) return kRuntimeError;
  }

  int rc = 0;
  RunResult results[2];
  for (size_t d = 0; d < device_count; ++d) {
    void* memory = nullptr;
    if (!allocator->Allocate(vectors.expected_count * sizeof(float), 16, &memory).ok()) {
      rc |= kRuntimeError;
      break;
    }
    results[d].output = static_cast<float*>(memory);
    int device_rc = RunOnDevice(instance, devices[d], module, vectors, options.runs, &results[d]);
    rc |= device_rc;
    if (device_rc != 0) continue;
    printf("  %s: verified and loaded in %.1f ms; %d run(s), %.1f ms per inference\n",
           devices[d].name, results[d].load_ms, options.runs, results[d].ms_per_run);
    if (CompareWithReference(devices[d].name, results[d].output, vectors, inject_failure) != 0) {
      rc |= kMismatch;
    }
  }
  if (rc == 0) {
    uint32_t first = Digest(results[0].output, vectors.expected_count);
    bool identical = true;
    for (size_t d = 1; d < device_count; ++d) {
      identical &=
          memcmp(results[0].output, results[d].output, vectors.expected_count * sizeof(float)) == 0;
    }
    printf("  output digest 0x%08x%s\n", unsigned(first),
           device_count < 2 ? ""
           : identical      ? "; cpu-task and cpu-sync outputs bit-identical"
                            : "; cpu-task and cpu-sync outputs DIFFER");
    if (!identical) rc |= kMismatch;
  }
  for (RunResult& result : results) allocator->Free(result.output);
  return rc;
}

int RefuseStep(osprey_instance_t* instance, const Device* devices, size_t device_count,
               const char* package) {
  ReceivedModule module;
  osprey::Status status = ReceivePackage(package, kMaxModuleSize, Allocator::Default(), &module);
  if (!status.ok()) {
    char text[512];
    status.ToString(text, sizeof(text));
    // A package that is not there was not refused: the step is wrong.
    if (status.code() == osprey::StatusCode::kNotFound) {
      printf("  error: %s\n", text);
      return kUsage;
    }
    printf("  refused on receipt: %s\n", text);
    return 0;
  }
  printf("  received %u module bytes, CRC-32 ok\n", unsigned(module.size()));
  int rc = 0;
  for (size_t d = 0; d < device_count; ++d) {
    osprey_session_t* session = nullptr;
    if (!Ok(osprey_session_create(instance, devices[d].device, &session), "error",
            "creating a session")) {
      return kRuntimeError;
    }
    osprey_status_t* loaded =
        osprey_session_load_module_memory(session, module.data(), module.size(), nullptr, nullptr);
    if (loaded) {
      printf("  refused by %s: %s\n", devices[d].name, osprey_status_message(loaded));
      osprey_status_free(loaded);
    } else {
      printf("  error: %s loaded the corrupt module\n", devices[d].name);
      rc |= kAcceptedCorrupt;
    }
    osprey_session_release(session);
  }
  return rc;
}

bool StartsWith(const char* text, const char* prefix) {
  return strncmp(text, prefix, strlen(prefix)) == 0;
}

}  // namespace

extern "C" int osprey_rtos_main(int argc, char** argv) {
  Options options;
  int steps = 0;
  for (int i = 1; i < argc; ++i) {
    if (StartsWith(argv[i], "--runs=")) {
      options.runs = atoi(argv[i] + 7);
    } else if (StartsWith(argv[i], "--loads=")) {
      options.loads = atoi(argv[i] + 8);
    } else if (strcmp(argv[i], "--inject-failure") == 0) {
      options.inject_failure = true;
    } else if (strcmp(argv[i], "--loads-call") == 0) {
      options.loads_call = true;
    } else if (StartsWith(argv[i], "--heartbeat-ticks=") && atoi(argv[i] + 18) > 0) {
      g_beat_ticks = TickType_t(atoi(argv[i] + 18));
    } else if (strcmp(argv[i], "--device=cpu-task") == 0 ||
               strcmp(argv[i], "--device=cpu-sync") == 0) {
      options.device = argv[i] + 9;
    } else if (StartsWith(argv[i], "model:") || StartsWith(argv[i], "refuse:")) {
      ++steps;
    } else {
      printf("error: unknown argument '%s'\n", argv[i]);
      return kUsage;
    }
  }
  if (steps == 0 || options.runs < 1 || options.loads < 0) {
    printf(
        "usage: rtos_loader [--runs=N] [--loads=N] [--loads-call] "
        "[--device=cpu-task|cpu-sync] [--heartbeat-ticks=N] [--inject-failure] "
        "model:PACKAGE:VECTORS | refuse:PACKAGE ...\n");
    return kUsage;
  }

  static StaticTask_t heartbeat_tcb;
  static StackType_t heartbeat_stack[configMINIMAL_STACK_SIZE * 2];
  xTaskCreateStatic(&HeartbeatTask, "heartbeat", configMINIMAL_STACK_SIZE * 2, nullptr,
                    kHeartbeatPriority, heartbeat_stack, &heartbeat_tcb);

  vPortFree(pvPortMalloc(1));  // heap_4 sets itself up on first use.
  const size_t heap_at_start = xPortGetFreeHeapSize();
  printf("osprey rtos loader: FreeRTOS %s, %u-byte heap, %d step(s)\n", tskKERNEL_VERSION_NUMBER,
         unsigned(heap_at_start), steps);

  int rc = 0;
  osprey_instance_t* instance = nullptr;
  Device devices[2] = {{"cpu-task"}, {"cpu-sync"}};
  const osprey_device_param_t task_params[] = {
      {"task_workers", "2"},
      {"task_stack_size", "20480"},
      {"task_priority", kWorkerPriority},
  };
  if (!Ok(osprey_instance_create(&instance), "error", "creating the instance") ||
      !Ok(osprey_device_create(instance, "cpu-task", task_params, 3, &devices[0].device), "error",
          "creating the cpu-task device (2 workers)") ||
      !Ok(osprey_device_create(instance, "cpu-sync", nullptr, 0, &devices[1].device), "error",
          "creating the cpu-sync device")) {
    rc = kRuntimeError;
  }
  printf("devices ready: heap %u bytes free\n", unsigned(xPortGetFreeHeapSize()));
  // The devices the steps use.
  const Device* used = devices;
  size_t used_count = 2;
  if (options.device) {
    used = strcmp(options.device, "cpu-task") == 0 ? &devices[0] : &devices[1];
    used_count = 1;
  }

  bool first_model = true;
  int step = 0;
  for (int i = 1; rc == 0 && i < argc; ++i) {
    const bool model = StartsWith(argv[i], "model:");
    if (!model && !StartsWith(argv[i], "refuse:")) continue;
    ++step;
    char spec[256];
    snprintf(spec, sizeof(spec), "%s", strchr(argv[i], ':') + 1);
    printf("[beat %u] step %d/%d: %s %s\n", unsigned(g_beats), step, steps,
           model ? "load and run" : "refuse", spec);
    Mark mark = Now();
    int step_rc = 0;
    if (model) {
      char* vectors = strchr(spec, ':');
      if (!vectors) {
        printf("  error: expected model:PACKAGE:VECTORS\n");
        step_rc = kUsage;
      } else {
        *vectors++ = 0;
        step_rc = ModelStep(instance, used, used_count, spec, vectors, options,
                            options.inject_failure && first_model);
        first_model = false;
      }
    } else {
      step_rc = RefuseStep(instance, used, used_count, spec);
    }
    // Devices keep scratch sized by the largest work so far (cpu-task's
    // pool of submission records): give it back with the model.
    for (Device& device : devices) {
      if (!Ok(osprey_device_trim(device.device), "error", "trimming the device")) {
        step_rc |= kRuntimeError;
      }
    }
    step_rc |= CheckHeap("after unloading", mark.free_heap);
    step_rc |= CheckHeartbeat(mark);
    printf("  step took %.1f ms%s\n", MillisSince(mark), step_rc ? " -- FAILED" : "");
    rc |= step_rc;
  }

  for (Device& device : devices) osprey_device_release(device.device);
  osprey_instance_release(instance);
  // Workers joined, devices and instance gone: the heap is as it started.
  rc |= CheckHeap("at the end", heap_at_start);
  printf("%s (exit code %d)\n", rc == 0 ? "PASS" : "FAIL", rc);
  return rc;
}
