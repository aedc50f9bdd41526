// End-to-end tests of the embedding C API: the simple_add module (built by
// make_test_modules.cc) dispatches the vector_add library compiled from C.
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/embed/osprey.h"
#include "tools/common/npy.h"

namespace {

using ::testing::HasSubstr;

const std::string kDir = OSPREY_E2E_DIR;

// Owns an osprey_status_t* for assertions.
struct StatusHolder {
  explicit StatusHolder(osprey_status_t* s) : status(s) {}
  ~StatusHolder() { osprey_status_free(status); }
  bool ok() const { return status == nullptr; }
  osprey_status_code_t code() const { return osprey_status_code(status); }
  std::string message() const { return osprey_status_message(status); }
  osprey_status_t* status;
};
#define ASSERT_OSPREY_OK(expr)                  \
  do {                                          \
    StatusHolder holder_(expr);                 \
    ASSERT_TRUE(holder_.ok()) << holder_.message(); \
  } while (false)

class RuntimeE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OSPREY_OK(osprey_instance_create(&instance_));
    ASSERT_OSPREY_OK(osprey_device_create(instance_, "cpu-sync", nullptr, 0, &device_));
    ASSERT_OSPREY_OK(osprey_session_create(instance_, device_, &session_));
  }
  void TearDown() override {
    for (osprey_buffer_view_t* view : views_) osprey_buffer_view_release(view);
    osprey_function_release(function_);
    osprey_session_release(session_);
    osprey_device_release(device_);
    osprey_instance_release(instance_);
  }

  osprey_buffer_view_t* Vector(std::vector<float> values) {
    const int64_t shape[1] = {int64_t(values.size())};
    osprey_buffer_view_t* view = nullptr;
    StatusHolder status(osprey_buffer_view_create(device_, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32,
                                                  values.data(), values.size() * 4, &view));
    EXPECT_TRUE(status.ok()) << status.message();
    views_.push_back(view);
    return view;
  }

  std::vector<float> Read(osprey_buffer_view_t* view) {
    std::vector<float> values(osprey_buffer_view_element_count(view));
    StatusHolder status(osprey_buffer_view_read(view, values.data(), values.size() * 4));
    EXPECT_TRUE(status.ok()) << status.message();
    return values;
  }

  osprey_instance_t* instance_ = nullptr;
  osprey_device_t* device_ = nullptr;
  osprey_session_t* session_ = nullptr;
  osprey_function_t* function_ = nullptr;
  std::vector<osprey_buffer_view_t*> views_;
};

TEST_F(RuntimeE2ETest, AddsOnTheDevice) {
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session_, (kDir + "/simple_add.osp").c_str()));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "main", &function_));
  EXPECT_STREQ(osprey_function_name(function_), "simple_add.main");
  EXPECT_STREQ(osprey_function_signature(function_), "rr:r");
  EXPECT_EQ(osprey_function_input_count(function_), 2u);
  EXPECT_EQ(osprey_function_output_count(function_), 1u);

  osprey_buffer_view_t* inputs[2] = {Vector({1, 2, 3, 4}), Vector({10, 20, 30, 40})};
  // Twice: the second call reuses the executable prepared by the first.
  for (int round = 0; round < 2; ++round) {
    osprey_buffer_view_t* output = nullptr;
    size_t count = 0;
    ASSERT_OSPREY_OK(osprey_function_call(function_, inputs, 2, &output, 1, &count));
    ASSERT_EQ(count, 1u);
    views_.push_back(output);
    char shape[32];
    osprey_buffer_view_format_shape(output, shape, sizeof(shape));
    EXPECT_STREQ(shape, "4xf32");
    EXPECT_EQ(Read(output), (std::vector<float>{11, 22, 33, 44}));
  }
}

TEST_F(RuntimeE2ETest, ScalesWithAScalarArgument) {
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session_, (kDir + "/simple_add.osp").c_str()));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "simple_add.scale", &function_));
  osprey_buffer_view_t* x = Vector({1, -2, 3, 0.5f});
  osprey_value_t inputs[2] = {};
  inputs[0].type = OSPREY_VALUE_TYPE_BUFFER_VIEW;
  inputs[0].u.buffer_view = x;
  inputs[1].type = OSPREY_VALUE_TYPE_F32;
  inputs[1].u.f32 = 3.0f;
  osprey_value_t outputs[1];
  size_t count = 0;
  ASSERT_OSPREY_OK(osprey_function_call_values(function_, inputs, 2, outputs, 1, &count));
  ASSERT_EQ(count, 1u);
  ASSERT_EQ(outputs[0].type, OSPREY_VALUE_TYPE_BUFFER_VIEW);
  views_.push_back(outputs[0].u.buffer_view);
  EXPECT_EQ(Read(outputs[0].u.buffer_view), (std::vector<float>{3, -6, 9, 1.5f}));
  // The input was copied, not scaled in place.
  EXPECT_EQ(Read(x), (std::vector<float>{1, -2, 3, 0.5f}));

  // A scalar function through the tensor-only entry point.
  osprey_buffer_view_t* out = nullptr;
  StatusHolder status(osprey_function_call(function_, &x, 1, &out, 1, &count));
  EXPECT_EQ(status.code(), OSPREY_STATUS_UNIMPLEMENTED);
  EXPECT_THAT(status.message(), HasSubstr("osprey_function_call_values"));

  // A mistyped scalar.
  inputs[1].type = OSPREY_VALUE_TYPE_I32;
  StatusHolder mistyped(osprey_function_call_values(function_, inputs, 2, outputs, 1, &count));
  EXPECT_EQ(mistyped.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(mistyped.message(), HasSubstr("input 1 must be an f32"));
}

TEST_F(RuntimeE2ETest, WrongShapeNamesTheArgument) {
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session_, (kDir + "/simple_add.osp").c_str()));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "main", &function_));
  const int64_t shape[2] = {2, 2};
  const float data[4] = {1, 2, 3, 4};
  osprey_buffer_view_t* square = nullptr;
  ASSERT_OSPREY_OK(osprey_buffer_view_create(device_, shape, 2, OSPREY_ELEMENT_TYPE_FLOAT32, data,
                                             sizeof(data), &square));
  views_.push_back(square);
  osprey_buffer_view_t* inputs[2] = {Vector({1, 2, 3, 4}), square};
  osprey_buffer_view_t* output = nullptr;
  size_t count = 0;
  StatusHolder status(osprey_function_call(function_, inputs, 2, &output, 1, &count));
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("input 'b' has shape 2x2xf32, expected 4xf32"));
  EXPECT_THAT(status.message(), HasSubstr("calling 'simple_add.main'"));
  EXPECT_EQ(count, 0u);

  StatusHolder too_few(osprey_function_call(function_, inputs, 1, &output, 1, &count));
  EXPECT_EQ(too_few.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(too_few.message(), HasSubstr("takes 2 inputs, got 1"));

  StatusHolder no_room(osprey_function_call(function_, inputs, 2, &output, 0, &count));
  EXPECT_EQ(no_room.code(), OSPREY_STATUS_INVALID_ARGUMENT);
}

// Loading from memory uses the bytes in place and releases them when the
// session is done with them.
TEST_F(RuntimeE2ETest, LoadsFromMemoryWithoutCopying) {
  auto bytes = osprey::tools::ReadFileBytes(kDir + "/simple_add.osp");
  ASSERT_TRUE(bytes.ok());
  void* memory = std::aligned_alloc(4096, (bytes->size() + 4095) / 4096 * 4096);
  std::memcpy(memory, bytes->data(), bytes->size());
  struct Released {
    int count = 0;
    void* memory = nullptr;
  } released;
  auto release = [](void* user_data, void* data) {
    auto* r = static_cast<Released*>(user_data);
    ++r->count;
    r->memory = data;
  };
  ASSERT_OSPREY_OK(
      osprey_session_load_module_memory(session_, memory, bytes->size(), release, &released));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "main", &function_));
  osprey_buffer_view_t* inputs[2] = {Vector({1, 1, 1, 1}), Vector({2, 3, 4, 5})};
  osprey_buffer_view_t* output = nullptr;
  size_t count = 0;
  ASSERT_OSPREY_OK(osprey_function_call(function_, inputs, 2, &output, 1, &count));
  views_.push_back(output);
  EXPECT_EQ(Read(output), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(released.count, 0);
  osprey_function_release(function_);
  function_ = nullptr;
  osprey_session_release(session_);
  session_ = nullptr;
  EXPECT_EQ(released.count, 1);
  EXPECT_EQ(released.memory, memory);
  std::free(memory);

  // Misaligned memory is refused up front.
  ASSERT_OSPREY_OK(osprey_session_create(instance_, device_, &session_));
  std::vector<uint8_t> copy(bytes->size() + 1);
  StatusHolder misaligned(osprey_session_load_module_memory(
      session_, copy.data() + (reinterpret_cast<uintptr_t>(copy.data()) % 16 == 0 ? 1 : 0),
      bytes->size(), nullptr, nullptr));
  EXPECT_EQ(misaligned.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(misaligned.message(), HasSubstr("not 16-byte aligned"));
}

// Wrapped inputs are used in place: the dispatch reads the caller's memory.
TEST_F(RuntimeE2ETest, WrapsHostMemoryWithoutCopying) {
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session_, (kDir + "/simple_add.osp").c_str()));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "main", &function_));
  alignas(64) float a[4] = {1, 2, 3, 4};
  alignas(64) float b[4] = {5, 5, 5, 5};
  int releases = 0;
  auto release = [](void* user_data, void*) { ++*static_cast<int*>(user_data); };
  const int64_t shape[1] = {4};
  osprey_buffer_view_t* inputs[2] = {};
  ASSERT_OSPREY_OK(osprey_buffer_view_wrap(device_, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, a,
                                           sizeof(a), release, &releases, &inputs[0]));
  ASSERT_OSPREY_OK(osprey_buffer_view_wrap(device_, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, b,
                                           sizeof(b), release, &releases, &inputs[1]));
  b[3] = 100;  // Seen by the call: the memory is not copied.
  osprey_buffer_view_t* output = nullptr;
  size_t count = 0;
  ASSERT_OSPREY_OK(osprey_function_call(function_, inputs, 2, &output, 1, &count));
  views_.push_back(output);
  EXPECT_EQ(Read(output), (std::vector<float>{6, 7, 8, 104}));
  osprey_buffer_view_release(inputs[0]);
  osprey_buffer_view_release(inputs[1]);
  EXPECT_EQ(releases, 2);

  StatusHolder bad_size(osprey_buffer_view_wrap(device_, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, a,
                                                8, nullptr, nullptr, &inputs[0]));
  EXPECT_EQ(bad_size.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(bad_size.message(), HasSubstr("shape needs 16 bytes but 8 were given"));
}

TEST_F(RuntimeE2ETest, CorruptModulesFailCleanly) {
  struct Case {
    const char* file;
    const char* message;
  } cases[] = {
      {"simple_add_truncated.osp", "simple_add_truncated.osp"},
      {"simple_add_corrupt.osp", "simple_add_corrupt.osp"},
      {"not_a_module.osp", "not_a_module.osp"},
      {"bad_bytecode.osp", "bad_bytecode.osp"},
      {"missing.osp", "cannot open"},
  };
  for (const Case& c : cases) {
    StatusHolder status(osprey_session_load_module_file(session_, (kDir + "/" + c.file).c_str()));
    EXPECT_FALSE(status.ok()) << c.file;
    EXPECT_THAT(status.message(), HasSubstr(c.message));
    EXPECT_TRUE(status.code() == OSPREY_STATUS_DATA_LOSS ||
                status.code() == OSPREY_STATUS_INVALID_ARGUMENT ||
                status.code() == OSPREY_STATUS_NOT_FOUND)
        << status.message();
  }
  // A failed load leaves the session usable.
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session_, (kDir + "/simple_add.osp").c_str()));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "main", &function_));
}

// A broken executable inside a valid module fails the call that first
// needs it, with the executable and module named, and nothing else.
TEST_F(RuntimeE2ETest, BadExecutableFailsTheCall) {
  ASSERT_OSPREY_OK(
      osprey_session_load_module_file(session_, (kDir + "/bad_executable.osp").c_str()));
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session_, "main", &function_));
  osprey_buffer_view_t* inputs[2] = {Vector({1, 2, 3, 4}), Vector({1, 2, 3, 4})};
  osprey_buffer_view_t* output = nullptr;
  size_t count = 0;
  for (int round = 0; round < 2; ++round) {
    StatusHolder status(osprey_function_call(function_, inputs, 2, &output, 1, &count));
    EXPECT_FALSE(status.ok());
    EXPECT_THAT(status.message(), HasSubstr("preparing executable 0 ('vector_add'"));
    EXPECT_THAT(status.message(), HasSubstr("of module 'simple_add'"));
    EXPECT_EQ(count, 0u);
  }
}

// Every truncation and a sweep of byte corruptions of the FlatBuffer part
// are rejected or load a module that still links; none crashes.
TEST_F(RuntimeE2ETest, MutatedModulesNeverCrashTheLoader) {
  auto bytes = osprey::tools::ReadFileBytes(kDir + "/simple_add.osp");
  ASSERT_TRUE(bytes.ok());
  const size_t size = bytes->size();
  void* memory = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  int rejected = 0, loaded = 0;
  auto try_load = [&](size_t length) {
    osprey_session_t* session = nullptr;
    StatusHolder created(osprey_session_create(instance_, device_, &session));
    ASSERT_TRUE(created.ok());
    StatusHolder status(osprey_session_load_module_memory(session, memory, length, nullptr,
                                                          nullptr));
    (status.ok() ? loaded : rejected)++;
    osprey_session_release(session);
  };
  for (size_t length = 1; length < size; length += 7) {
    std::memcpy(memory, bytes->data(), size);
    try_load(length);
  }
  for (size_t i = 0; i < size; i += 3) {
    std::memcpy(memory, bytes->data(), size);
    static_cast<uint8_t*>(memory)[i] ^= 0xFF;
    try_load(size);
  }
  std::free(memory);
  EXPECT_GT(rejected, 0);
  RecordProperty("rejected", rejected);
  RecordProperty("loaded", loaded);
}

TEST_F(RuntimeE2ETest, ReportsUnknownNames) {
  osprey_device_t* device = nullptr;
  StatusHolder unknown_driver(osprey_device_create(instance_, "gpu", nullptr, 0, &device));
  EXPECT_EQ(unknown_driver.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(unknown_driver.message(), HasSubstr("cpu-sync"));

  const osprey_device_param_t params[] = {{"bogus_param", "1"}};
  StatusHolder bad_param(osprey_device_create(instance_, "cpu-sync", params, 1, &device));
  EXPECT_EQ(bad_param.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(bad_param.message(), HasSubstr("bogus_param"));

  StatusHolder nothing_loaded(osprey_session_lookup_function(session_, "main", &function_));
  EXPECT_EQ(nothing_loaded.code(), OSPREY_STATUS_FAILED_PRECONDITION);
  EXPECT_THAT(nothing_loaded.message(), HasSubstr("no module is loaded"));

  ASSERT_OSPREY_OK(osprey_session_load_module_file(session_, (kDir + "/simple_add.osp").c_str()));
  StatusHolder unknown_function(osprey_session_lookup_function(session_, "mian", &function_));
  EXPECT_EQ(unknown_function.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(unknown_function.message(), HasSubstr("exports: main, scale"));

  bool found_cpu_sync = false;
  for (size_t i = 0; i < osprey_instance_driver_count(instance_); ++i) {
    if (std::strcmp(osprey_instance_driver_name(instance_, i), "cpu-sync") == 0) {
      found_cpu_sync = true;
    }
  }
  EXPECT_TRUE(found_cpu_sync);
  EXPECT_EQ(osprey_instance_driver_name(instance_, 1000), nullptr);
}

// The same module on the multi-threaded CPU driver, when it is built in.
TEST_F(RuntimeE2ETest, RunsOnCpuTask) {
  bool have_cpu_task = false;
  for (size_t i = 0; i < osprey_instance_driver_count(instance_); ++i) {
    if (std::strcmp(osprey_instance_driver_name(instance_, i), "cpu-task") == 0) {
      have_cpu_task = true;
    }
  }
  if (!have_cpu_task) GTEST_SKIP() << "cpu-task is not part of this build";
  const osprey_device_param_t params[] = {{"task_workers", "2"}};
  osprey_device_t* device = nullptr;
  ASSERT_OSPREY_OK(osprey_device_create(instance_, "cpu-task", params, 1, &device));
  osprey_session_t* session = nullptr;
  ASSERT_OSPREY_OK(osprey_session_create(instance_, device, &session));
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session, (kDir + "/simple_add.osp").c_str()));
  osprey_function_t* function = nullptr;
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session, "main", &function));
  const int64_t shape[1] = {4};
  const float a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1};
  osprey_buffer_view_t* inputs[2] = {};
  ASSERT_OSPREY_OK(osprey_buffer_view_create(device, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, a, 16,
                                             &inputs[0]));
  ASSERT_OSPREY_OK(osprey_buffer_view_create(device, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, b, 16,
                                             &inputs[1]));
  osprey_buffer_view_t* output = nullptr;
  size_t count = 0;
  ASSERT_OSPREY_OK(osprey_function_call(function, inputs, 2, &output, 1, &count));
  EXPECT_EQ(Read(output), (std::vector<float>{5, 5, 5, 5}));
  osprey_buffer_view_release(output);
  osprey_buffer_view_release(inputs[0]);
  osprey_buffer_view_release(inputs[1]);
  osprey_function_release(function);
  osprey_session_release(session);
  osprey_device_release(device);
}

// Counts what the runtime allocates through an application allocator.
struct CountingAllocator {
  static void* Allocate(void* user_data, size_t size, size_t alignment) {
    auto* self = static_cast<CountingAllocator*>(user_data);
    ++self->allocations;
    self->bytes += size;
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  }
  static void Free(void* user_data, void* ptr) {
    ++static_cast<CountingAllocator*>(user_data)->frees;
    std::free(ptr);
  }
  size_t allocations = 0;
  size_t frees = 0;
  size_t bytes = 0;
};

// All host memory of the stack (devices, sessions, VM contexts, HAL
// objects, buffers) comes from the application's allocator, and all of it
// is returned: nothing leaks. Also measures what one call allocates.
TEST(CustomAllocatorTest, EverythingIsReturned) {
  CountingAllocator counter;
  osprey_allocator_t allocator = {&counter, &CountingAllocator::Allocate,
                                  &CountingAllocator::Free, {}};
  osprey_instance_t* instance = nullptr;
  ASSERT_OSPREY_OK(osprey_instance_create_with_allocator(&allocator, &instance));
  osprey_device_t* device = nullptr;
  ASSERT_OSPREY_OK(osprey_device_create(instance, "cpu-sync", nullptr, 0, &device));
  osprey_session_t* session = nullptr;
  ASSERT_OSPREY_OK(osprey_session_create(instance, device, &session));
  ASSERT_OSPREY_OK(osprey_session_load_module_file(session, (kDir + "/simple_add.osp").c_str()));
  osprey_function_t* function = nullptr;
  ASSERT_OSPREY_OK(osprey_session_lookup_function(session, "main", &function));
  const int64_t shape[1] = {4};
  const float a[4] = {1, 2, 3, 4};
  osprey_buffer_view_t* inputs[2] = {};
  for (auto*& input : inputs) {
    ASSERT_OSPREY_OK(osprey_buffer_view_create(device, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32, a,
                                               sizeof(a), &input));
  }
  auto call = [&]() {
    osprey_buffer_view_t* output = nullptr;
    size_t count = 0;
    ASSERT_OSPREY_OK(osprey_function_call(function, inputs, 2, &output, 1, &count));
    float result[4];
    ASSERT_OSPREY_OK(osprey_buffer_view_read(output, result, sizeof(result)));
    EXPECT_EQ(result[3], 8.0f);
    osprey_buffer_view_release(output);
  };
  call();  // Prepares and caches the executable.
  const size_t allocations_before = counter.allocations;
  const size_t live_before = counter.allocations - counter.frees;
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) call();
  const double per_call = double(counter.allocations - allocations_before) / kCalls;
  EXPECT_EQ(counter.allocations - counter.frees, live_before) << "steady-state calls leak";
  // What main itself creates (result buffer and view, command buffer and
  // its recording, bindings list) plus the VM's result marshalling; the
  // executable and the submission semaphore are reused.
  EXPECT_LE(per_call, 7.0);
  RecordProperty("allocations_per_call", std::to_string(per_call));
  printf("host allocations per simple_add.main call: %.1f\n", per_call);

  osprey_buffer_view_release(inputs[0]);
  osprey_buffer_view_release(inputs[1]);
  osprey_function_release(function);
  osprey_session_release(session);
  osprey_device_release(device);
  osprey_instance_release(instance);
  EXPECT_GT(counter.allocations, 10u);
  EXPECT_EQ(counter.allocations, counter.frees);

  allocator.free = nullptr;
  StatusHolder missing(osprey_instance_create_with_allocator(&allocator, &instance));
  EXPECT_EQ(missing.code(), OSPREY_STATUS_INVALID_ARGUMENT);
}

// One session per thread on a shared device: the documented way to run
// calls concurrently.
TEST_F(RuntimeE2ETest, SessionsPerThreadShareADevice) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 50;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t]() {
      osprey_session_t* session = nullptr;
      osprey_function_t* function = nullptr;
      osprey_buffer_view_t* inputs[2] = {};
      const int64_t shape[1] = {4};
      const float a[4] = {float(t), 1, 2, 3}, b[4] = {1, 1, 1, 1};
      bool ok =
          StatusHolder(osprey_session_create(instance_, device_, &session)).ok() &&
          StatusHolder(osprey_session_load_module_file(
                           session, (kDir + "/simple_add.osp").c_str()))
              .ok() &&
          StatusHolder(osprey_session_lookup_function(session, "main", &function)).ok() &&
          StatusHolder(osprey_buffer_view_create(device_, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32,
                                                 a, 16, &inputs[0]))
              .ok() &&
          StatusHolder(osprey_buffer_view_create(device_, shape, 1, OSPREY_ELEMENT_TYPE_FLOAT32,
                                                 b, 16, &inputs[1]))
              .ok();
      for (int i = 0; ok && i < kCalls; ++i) {
        osprey_buffer_view_t* output = nullptr;
        size_t count = 0;
        float result[4] = {};
        ok = StatusHolder(osprey_function_call(function, inputs, 2, &output, 1, &count)).ok() &&
             StatusHolder(osprey_buffer_view_read(output, result, sizeof(result))).ok() &&
             result[0] == float(t) + 1 && result[3] == 4;
        osprey_buffer_view_release(output);
      }
      failures[t] = ok ? 0 : 1;
      osprey_buffer_view_release(inputs[0]);
      osprey_buffer_view_release(inputs[1]);
      osprey_function_release(function);
      osprey_session_release(session);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(StatusTest, NullIsOk) {
  EXPECT_EQ(osprey_status_code(nullptr), OSPREY_STATUS_OK);
  EXPECT_STREQ(osprey_status_message(nullptr), "OK");
  osprey_status_free(nullptr);
  EXPECT_STREQ(osprey_status_code_name(OSPREY_STATUS_DATA_LOSS), "DATA_LOSS");
}

}  // namespace
