// Tests of the cpu-task device: params, task-graph execution of command
// buffers, semaphore ordering, failures, host waits and teardown.
#include "drivers/cpu_task/cpu_task_device.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "drivers/cpu_task/registration/driver_module.h"
#include "hal/local/static_library_loader.h"

namespace osprey::drivers::cpu_task {
namespace {

std::string Str(const Status& s) {
  char buffer[2048];
  s.ToString(buffer, sizeof(buffer));
  return buffer;
}

#define ASSERT_OK(expr)                                 \
  do {                                                  \
    const Status& assert_status_ = (expr);              \
    ASSERT_TRUE(assert_status_.ok()) << Str(assert_status_); \
  } while (false)

//===----------------------------------------------------------------------===//
// A static executable library used by the tests
//===----------------------------------------------------------------------===//

uint32_t WorkgroupIndex(const osprey_dispatch_state_v1_t* d, const osprey_workgroup_state_v1_t* w) {
  return (w->workgroup_id_z * d->workgroup_count_y + w->workgroup_id_y) * d->workgroup_count_x +
         w->workgroup_id_x;
}

// out[i] = in[i] + constants[0] for the workgroup's element i.
int AddConstant(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
                const osprey_workgroup_state_v1_t* w) {
  uint32_t i = WorkgroupIndex(d, w);
  const auto* in = static_cast<const uint32_t*>(d->binding_ptrs[0]);
  auto* out = static_cast<uint32_t*>(d->binding_ptrs[1]);
  if ((i + 1) * sizeof(uint32_t) > d->binding_lengths[1]) return 2;
  out[i] = in[i] + d->constants[0];
  return 0;
}

// Fails at workgroup constants[0]; counts the others in binding 0.
int FailAt(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
           const osprey_workgroup_state_v1_t* w) {
  uint32_t i = WorkgroupIndex(d, w);
  if (i == d->constants[0]) return 7;
  __atomic_fetch_add(static_cast<uint32_t*>(d->binding_ptrs[0]), 1, __ATOMIC_RELAXED);
  return 0;
}

// Writes the workgroup index through local memory into out[i].
int ThroughLocal(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
                 const osprey_workgroup_state_v1_t* w) {
  uint32_t i = WorkgroupIndex(d, w);
  if (w->local_memory_size < 4096 || !w->local_memory) return 3;
  auto* scratch = static_cast<uint32_t*>(w->local_memory);
  for (int k = 0; k < 1024; ++k) scratch[k] = i;
  static_cast<uint32_t*>(d->binding_ptrs[0])[i] = scratch[1023];
  return 0;
}

const osprey_dispatch_fn_t kFunctions[] = {&AddConstant, &FailAt, &ThroughLocal};
const osprey_dispatch_attrs_v1_t kAttrs[] = {
    {/*binding_count=*/2, /*constant_count=*/1, /*binding_write_mask=*/0x2,
     /*local_memory_size=*/0, {1, 1, 1}},
    {1, 1, 0x1, 0, {1, 1, 1}},
    {1, 0, 0x1, 4096, {1, 1, 1}},
};
const char* const kNames[] = {"add_constant", "fail_at", "through_local"};
const osprey_executable_library_header_t kHeader = {OSPREY_EXECUTABLE_LIBRARY_VERSION_1,
                                                    "cpu_task_test"};
const osprey_executable_library_v1_t kLibrary = {
    &kHeader, {0, nullptr}, {3, kFunctions, kAttrs, kNames}};

const osprey_executable_library_header_t* const* QueryLibrary(
    uint32_t max_version, const osprey_executable_environment_v1_t*) {
  if (max_version < OSPREY_EXECUTABLE_LIBRARY_VERSION_1) return nullptr;
  return &kLibrary.header;
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

class CpuTaskDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(libraries_.Register("cpu_task_test", &QueryLibrary));
    CpuTaskDeviceOptions options;
    options.worker_count = 2;
    options.static_libraries = &libraries_;
    auto device = CpuTaskDevice::Create(options, &allocator_);
    ASSERT_OK(device.status());
    device_ = std::move(device).value();
    auto cache = device_->CreateExecutableCache();
    ASSERT_OK(cache.status());
    hal::ExecutableParams params;
    params.format = "static";
    params.data = {reinterpret_cast<const uint8_t*>("cpu_task_test"), 13};
    auto executable = (*cache)->PrepareExecutable(params);
    ASSERT_OK(executable.status());
    executable_ = std::move(executable).value();
  }
  void TearDown() override {
    executable_ = nullptr;
    device_ = nullptr;
    EXPECT_EQ(allocator_.live(), 0u);
  }

  ref_ptr<hal::Buffer> Allocate(size_t length) {
    hal::BufferParams params;
    auto buffer = device_->allocator()->AllocateBuffer(params, length);
    EXPECT_TRUE(buffer.ok()) << Str(buffer.status());
    return std::move(buffer).value();
  }
  ref_ptr<hal::CommandBuffer> NewCommandBuffer() {
    auto cb = device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
    EXPECT_TRUE(cb.ok());
    EXPECT_TRUE(cb.value()->Begin().ok());
    return std::move(cb).value();
  }
  ref_ptr<hal::Semaphore> NewSemaphore(uint64_t value = 0) {
    auto semaphore = device_->CreateSemaphore(value);
    EXPECT_TRUE(semaphore.ok());
    return std::move(semaphore).value();
  }
  Status Submit(std::vector<hal::Semaphore*> waits, std::vector<uint64_t> wait_values,
                std::vector<hal::CommandBuffer*> cbs, std::vector<hal::Semaphore*> signals,
                std::vector<uint64_t> signal_values) {
    hal::SemaphoreList wait{waits, wait_values};
    hal::SemaphoreList signal{signals, signal_values};
    return device_->QueueExecute(wait, cbs, signal);
  }
  static int64_t Deadline(int64_t ms) { return platform::DeadlineFromTimeout(ms * 1000000); }

  CountingAllocator allocator_{Allocator::Default()};
  hal::local::StaticLibraryRegistry libraries_;
  ref_ptr<CpuTaskDevice> device_;
  ref_ptr<hal::Executable> executable_;
};

TEST(CpuTaskParamsTest, ParsesKnownParams) {
  CpuTaskDeviceOptions options;
  hal::DeviceParam params[] = {
      {"task_workers", "3"}, {"task_affinity", "1"}, {"task_local_memory", "8192"}};
  ASSERT_OK(ParseDeviceParams(params, &options));
  EXPECT_EQ(options.worker_count, 3u);
  EXPECT_TRUE(options.pin_workers);
  EXPECT_EQ(options.first_processor, 1u);
  EXPECT_EQ(options.worker_local_memory_size, 8192u);
  hal::DeviceParam none[] = {{"task_affinity", "none"}};
  ASSERT_OK(ParseDeviceParams(none, &options));
  EXPECT_FALSE(options.pin_workers);
  EXPECT_EQ(options.worker_stack_size, 0u);
  EXPECT_EQ(options.worker_priority, -1);
  hal::DeviceParam threads[] = {{"task_stack_size", "20480"}, {"task_priority", "3"}};
  ASSERT_OK(ParseDeviceParams(threads, &options));
  EXPECT_EQ(options.worker_stack_size, 20480u);
  EXPECT_EQ(options.worker_priority, 3);
  hal::DeviceParam defaults[] = {{"task_stack_size", "0"}, {"task_priority", "default"}};
  ASSERT_OK(ParseDeviceParams(defaults, &options));
  EXPECT_EQ(options.worker_stack_size, 0u);
  EXPECT_EQ(options.worker_priority, -1);
}

// A device whose workers get an explicit stack and priority starts them
// (POSIX threads ignore the priority; samples/rtos_loader runs FreeRTOS
// workers below the submitting task's priority).
TEST(CpuTaskParamsTest, CreatesDeviceWithStackSizeAndPriority) {
  hal::DriverRegistry registry;
  ASSERT_OK(RegisterDriver(registry));
  hal::DeviceParam params[] = {
      {"task_workers", "2"}, {"task_stack_size", "262144"}, {"task_priority", "1"}};
  auto device = registry.CreateDevice("cpu-task", params, Allocator::Default());
  ASSERT_OK(device.status());
  auto* cpu_task = static_cast<CpuTaskDevice*>(device->get());
  EXPECT_EQ(cpu_task->executor()->worker_count(), 2u);
}

TEST(CpuTaskParamsTest, RejectsUnknownAndMalformedParams) {
  CpuTaskDeviceOptions options;
  for (hal::DeviceParam param : std::vector<hal::DeviceParam>{{"task_worker", "2"},
                                                              {"task_workers", "0"},
                                                              {"task_workers", "two"},
                                                              {"task_workers", "65"},
                                                              {"task_workers", ""},
                                                              {"task_affinity", "-1"},
                                                              {"task_local_memory", "1e6"},
                                                              {"task_stack_size", "100"},
                                                              {"task_stack_size", "1M"},
                                                              {"task_priority", "-1"},
                                                              {"task_priority", "high"},
                                                              {"task_priority", "5000"}}) {
    Status status = ParseDeviceParams({&param, 1}, &options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << param.key << "=" << param.value;
    EXPECT_NE(Str(status).find(param.key), std::string::npos) << Str(status);
  }
}

TEST(CpuTaskRegistrationTest, CreatesDeviceThroughRegistry) {
  hal::DriverRegistry registry;
  ASSERT_OK(RegisterDriver(registry));
  EXPECT_EQ(RegisterDriver(registry).code(), StatusCode::kAlreadyExists);
  hal::DeviceParam params[] = {{"task_workers", "2"}};
  auto device = registry.CreateDevice("cpu-task", params, Allocator::Default());
  ASSERT_OK(device.status());
  EXPECT_STREQ((*device)->id(), "cpu-task");
  hal::DeviceParam bad[] = {{"bogus", "1"}};
  EXPECT_EQ(registry.CreateDevice("cpu-task", bad, Allocator::Default()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(CpuTaskDeviceTest, BarrierOrdersFillBeforeCopy) {
  auto a = Allocate(4096);
  auto b = Allocate(4096);
  auto cb = NewCommandBuffer();
  uint32_t pattern = 0xA5A5A5A5u;
  ASSERT_OK(cb->FillBuffer({a.get(), 0, 4096}, &pattern, 4));
  ASSERT_OK(cb->ExecutionBarrier());
  ASSERT_OK(cb->CopyBuffer({a.get(), 0, 4096}, {b.get(), 0, 4096}));
  ASSERT_OK(cb->End());
  auto done = NewSemaphore();
  ASSERT_OK(Submit({}, {}, {cb.get()}, {done.get()}, {1}));
  ASSERT_OK(done->Wait(1, Deadline(10000)));
  std::vector<uint32_t> out(1024);
  ASSERT_OK(b->ReadData(0, out.data(), 4096));
  for (uint32_t v : out) ASSERT_EQ(v, pattern);
}

// Trim gives back the pooled submission records a finished submission
// left behind; the device keeps working.
TEST_F(CpuTaskDeviceTest, TrimFreesPooledSubmissions) {
  auto a = Allocate(4096);
  const size_t before = allocator_.live();
  uint32_t pattern = 0x5A5A5A5Au;
  for (int round = 0; round < 2; ++round) {
    auto cb = NewCommandBuffer();
    ASSERT_OK(cb->FillBuffer({a.get(), 0, 4096}, &pattern, 4));
    ASSERT_OK(cb->End());
    auto done = NewSemaphore();
    ASSERT_OK(Submit({}, {}, {cb.get()}, {done.get()}, {1}));
    ASSERT_OK(done->Wait(1, Deadline(10000)));
    ASSERT_OK(device_->executor()->WaitIdle(Deadline(10000)));
    cb = nullptr;
    done = nullptr;
    EXPECT_GT(allocator_.live(), before);  // The pooled submission.
    ASSERT_OK(device_->Trim());
    EXPECT_EQ(allocator_.live(), before);
  }
}

TEST_F(CpuTaskDeviceTest, DispatchRunsEveryWorkgroup) {
  constexpr uint32_t kCount = 3000;  // 30 x 10 x 10
  auto in = Allocate(kCount * 4);
  auto out = Allocate(kCount * 4);
  std::vector<uint32_t> values(kCount);
  for (uint32_t i = 0; i < kCount; ++i) values[i] = i * 3;
  ASSERT_OK(in->WriteData(0, values.data(), kCount * 4));
  auto cb = NewCommandBuffer();
  uint32_t constant = 11;
  hal::BufferRef bindings[] = {{in.get(), 0, kCount * 4}, {out.get(), 0, kCount * 4}};
  ASSERT_OK(cb->Dispatch(executable_.get(), 0, {30, 10, 10}, {&constant, 1}, bindings));
  ASSERT_OK(cb->End());
  auto done = NewSemaphore();
  ASSERT_OK(Submit({}, {}, {cb.get()}, {done.get()}, {5}));
  hal::Semaphore* wait_list[] = {done.get()};
  uint64_t wait_values[] = {5};
  ASSERT_OK(device_->WaitSemaphores(hal::WaitMode::kAll, {wait_list, wait_values},
                                    Deadline(10000)));
  std::vector<uint32_t> result(kCount);
  ASSERT_OK(out->ReadData(0, result.data(), kCount * 4));
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(result[i], i * 3 + 11) << i;
}

TEST_F(CpuTaskDeviceTest, DispatchGetsLocalMemory) {
  constexpr uint32_t kCount = 64;
  auto out = Allocate(kCount * 4);
  auto cb = NewCommandBuffer();
  hal::BufferRef bindings[] = {{out.get(), 0, kCount * 4}};
  ASSERT_OK(cb->Dispatch(executable_.get(), 2, {kCount, 1, 1}, {}, bindings));
  ASSERT_OK(cb->End());
  auto done = NewSemaphore();
  ASSERT_OK(Submit({}, {}, {cb.get()}, {done.get()}, {1}));
  ASSERT_OK(done->Wait(1, Deadline(10000)));
  std::vector<uint32_t> result(kCount);
  ASSERT_OK(out->ReadData(0, result.data(), kCount * 4));
  for (uint32_t i = 0; i < kCount; ++i) ASSERT_EQ(result[i], i);
}

TEST_F(CpuTaskDeviceTest, QueueExecuteReturnsBeforeWaitIsSatisfied) {
  auto a = Allocate(256);
  auto b = Allocate(256);
  auto first_done = NewSemaphore();
  auto second_done = NewSemaphore();
  // The second submission (copy a -> b) waits for the first (fill a).
  auto copy = NewCommandBuffer();
  ASSERT_OK(copy->CopyBuffer({a.get(), 0, 256}, {b.get(), 0, 256}));
  ASSERT_OK(copy->End());
  ASSERT_OK(Submit({first_done.get()}, {1}, {copy.get()}, {second_done.get()}, {1}));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(*second_done->Query(), 0u);
  EXPECT_EQ(second_done->Wait(1, Deadline(1)).code(), StatusCode::kDeadlineExceeded);

  auto fill = NewCommandBuffer();
  uint8_t pattern = 0x3C;
  ASSERT_OK(fill->FillBuffer({a.get(), 0, 256}, &pattern, 1));
  ASSERT_OK(fill->End());
  ASSERT_OK(Submit({}, {}, {fill.get()}, {first_done.get()}, {1}));
  ASSERT_OK(second_done->Wait(1, Deadline(10000)));
  std::vector<uint8_t> out(256);
  ASSERT_OK(b->ReadData(0, out.data(), 256));
  for (uint8_t v : out) ASSERT_EQ(v, 0x3C);
}

TEST_F(CpuTaskDeviceTest, HostSignalReleasesWaitingSubmission) {
  auto gate = NewSemaphore();
  auto done = NewSemaphore();
  auto cb = NewCommandBuffer();
  ASSERT_OK(cb->End());
  ASSERT_OK(Submit({gate.get()}, {3}, {cb.get()}, {done.get()}, {1}));
  ASSERT_OK(gate->Signal(2));
  EXPECT_EQ(done->Wait(1, Deadline(5)).code(), StatusCode::kDeadlineExceeded);
  ASSERT_OK(gate->Signal(3));
  ASSERT_OK(done->Wait(1, Deadline(10000)));
}

TEST_F(CpuTaskDeviceTest, LongTimelineChainCompletes) {
  // Each submission waits for the previous one's signal; releasing the head
  // must not recurse through thousands of completions on one stack.
  constexpr uint64_t kLength = 2000;
  auto timeline = NewSemaphore();
  for (uint64_t i = 1; i <= kLength; ++i) {
    ASSERT_OK(Submit({timeline.get()}, {i}, {}, {timeline.get()}, {i + 1}));
  }
  EXPECT_EQ(*timeline->Query(), 0u);
  ASSERT_OK(timeline->Signal(1));
  ASSERT_OK(timeline->Wait(kLength + 1, Deadline(30000)));
}

TEST_F(CpuTaskDeviceTest, FailingWorkgroupFailsSignalAndDownstream) {
  auto counter = Allocate(4);
  uint32_t zero = 0;
  ASSERT_OK(counter->WriteData(0, &zero, 4));
  auto cb = NewCommandBuffer();
  uint32_t fail_at = 37;
  hal::BufferRef bindings[] = {{counter.get(), 0, 4}};
  ASSERT_OK(cb->Dispatch(executable_.get(), 1, {100, 1, 1}, {&fail_at, 1}, bindings));
  ASSERT_OK(cb->End());
  auto first = NewSemaphore();
  auto second = NewSemaphore();
  ASSERT_OK(Submit({}, {}, {cb.get()}, {first.get()}, {1}));
  auto empty = NewCommandBuffer();
  ASSERT_OK(empty->End());
  ASSERT_OK(Submit({first.get()}, {1}, {empty.get()}, {second.get()}, {1}));

  Status status = first->Wait(1, Deadline(10000));
  EXPECT_FALSE(status.ok());
  // The workgroup's error carries the dispatch helper's message and the
  // task system's context.
  EXPECT_NE(Str(status).find("returned 7 at workgroup"), std::string::npos) << Str(status);
  EXPECT_NE(Str(status).find("in dispatch 'fail_at' (tiles ["), std::string::npos)
      << Str(status);
  EXPECT_FALSE(first->Query().ok());
  Status downstream = second->Wait(1, Deadline(10000));
  EXPECT_FALSE(downstream.ok()) << "failure must reach work waiting on the failed semaphore";
}

TEST_F(CpuTaskDeviceTest, RejectsUnendedCommandBufferAndBadLists) {
  auto cb = NewCommandBuffer();
  auto s = NewSemaphore();
  EXPECT_EQ(Submit({}, {}, {cb.get()}, {}, {}).code(), StatusCode::kFailedPrecondition);
  ASSERT_OK(cb->End());
  EXPECT_EQ(Submit({}, {}, {cb.get()}, {s.get()}, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Submit({nullptr}, {1}, {cb.get()}, {}, {}).code(), StatusCode::kInvalidArgument);
}

TEST_F(CpuTaskDeviceTest, WaitAnyReturnsWhenOneIsReached) {
  auto a = NewSemaphore();
  auto b = NewSemaphore();
  hal::Semaphore* list[] = {a.get(), b.get()};
  uint64_t values[] = {1, 1};
  EXPECT_EQ(device_->WaitSemaphores(hal::WaitMode::kAny, {list, values}, Deadline(2)).code(),
            StatusCode::kDeadlineExceeded);
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_TRUE(b->Signal(1).ok());
  });
  ASSERT_OK(device_->WaitSemaphores(hal::WaitMode::kAny, {list, values}, Deadline(10000)));
  signaller.join();
  a->Fail(InternalError("broken"));
  uint64_t later[] = {2, 2};
  EXPECT_EQ(device_->WaitSemaphores(hal::WaitMode::kAny, {list, later}, Deadline(10000)).code(),
            StatusCode::kAborted);
}

TEST_F(CpuTaskDeviceTest, DestroyingDeviceCancelsPendingWork) {
  auto gate = NewSemaphore();  // Never signalled.
  auto done = NewSemaphore();
  auto cb = NewCommandBuffer();
  ASSERT_OK(cb->End());
  ASSERT_OK(Submit({gate.get()}, {1}, {cb.get()}, {done.get()}, {1}));
  device_ = nullptr;
  Status status = done->Wait(1, Deadline(10000));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(Str(status).find("cancelled"), std::string::npos) << Str(status);
}

TEST_F(CpuTaskDeviceTest, ConcurrentSubmittersWithTimelines) {
  constexpr int kThreads = 3;
  constexpr int kSteps = 100;
  auto counters = Allocate(kThreads * 4);
  std::vector<uint32_t> zeros(kThreads, 0);
  ASSERT_OK(counters->WriteData(0, zeros.data(), kThreads * 4));
  std::vector<std::thread> threads;
  std::vector<ref_ptr<hal::Semaphore>> timelines;
  for (int t = 0; t < kThreads; ++t) timelines.push_back(NewSemaphore());
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each step: read counter, +1, write back (a dispatch), ordered only by
      // the thread's timeline semaphore.
      auto scratch = Allocate(4);
      for (int step = 0; step < kSteps; ++step) {
        auto cb = NewCommandBuffer();
        uint32_t one = 1;
        hal::BufferRef bindings[] = {{counters.get(), uint64_t(t) * 4, 4}, {scratch.get(), 0, 4}};
        EXPECT_TRUE(cb->Dispatch(executable_.get(), 0, {1, 1, 1}, {&one, 1}, bindings).ok());
        EXPECT_TRUE(cb->ExecutionBarrier().ok());
        EXPECT_TRUE(cb->CopyBuffer({scratch.get(), 0, 4}, {counters.get(), uint64_t(t) * 4, 4}).ok());
        EXPECT_TRUE(cb->End().ok());
        hal::Semaphore* timeline = timelines[t].get();
        EXPECT_TRUE(Submit({timeline}, {uint64_t(step)}, {cb.get()}, {timeline},
                           {uint64_t(step + 1)})
                        .ok());
      }
      EXPECT_TRUE(timelines[t]->Wait(kSteps, Deadline(30000)).ok());
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<uint32_t> result(kThreads);
  ASSERT_OK(counters->ReadData(0, result.data(), kThreads * 4));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(result[t], uint32_t(kSteps)) << t;
}

}  // namespace
}  // namespace osprey::drivers::cpu_task
