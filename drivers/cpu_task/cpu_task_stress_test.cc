// Stress tests of the cpu-task device: concurrent pipelines with injected
// workgroup failures, and device destruction with pipelines in flight.
// Uses the HAL CTS kernels. Meant to run under TSan and ASan too.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "drivers/cpu_task/cpu_task_device.h"
#include "hal/cts/kernels/cts_kernels.h"
#include "hal/local/static_library_loader.h"

namespace osprey::drivers::cpu_task {
namespace {

std::string Str(const Status& s) {
  char buffer[2048];
  s.ToString(buffer, sizeof(buffer));
  return buffer;
}

int64_t Deadline(int64_t ms) { return platform::DeadlineFromTimeout(ms * 1000000); }

struct Rig {
  hal::local::StaticLibraryRegistry libraries;
  ref_ptr<CpuTaskDevice> device;
  ref_ptr<hal::Executable> executable;
  uint32_t fail_at = 0;
  uint32_t axpb = 0;

  void Init(osprey::Allocator* allocator) {
    ASSERT_TRUE(
        libraries.Register(OSPREY_CTS_KERNELS_LIBRARY_NAME, &osprey_cts_kernels_query).ok());
    CpuTaskDeviceOptions options;
    options.worker_count = 2;
    options.static_libraries = &libraries;
    auto created = CpuTaskDevice::Create(options, allocator);
    ASSERT_TRUE(created.ok()) << Str(created.status());
    device = std::move(created).value();
    auto cache = device->CreateExecutableCache();
    ASSERT_TRUE(cache.ok());
    hal::ExecutableParams params;
    params.format = "static";
    params.data = {reinterpret_cast<const uint8_t*>(OSPREY_CTS_KERNELS_LIBRARY_NAME),
                   strlen(OSPREY_CTS_KERNELS_LIBRARY_NAME)};
    auto prepared = (*cache)->PrepareExecutable(params);
    ASSERT_TRUE(prepared.ok()) << Str(prepared.status());
    executable = std::move(prepared).value();
    fail_at = *executable->LookupExport("fail_at");
    axpb = *executable->LookupExport("axpb");
  }

  ref_ptr<hal::Buffer> Allocate(size_t length) {
    auto buffer = device->allocator()->AllocateBuffer(hal::BufferParams{}, length);
    EXPECT_TRUE(buffer.ok());
    return std::move(buffer).value();
  }

  // Submits |command_buffer| after |timeline| reaches |value|, then signals
  // |value| + 1.
  Status SubmitStep(hal::Semaphore* timeline, uint64_t value, hal::CommandBuffer* command_buffer) {
    hal::Semaphore* semaphores[] = {timeline};
    uint64_t wait_value[] = {value};
    uint64_t signal_value[] = {value + 1};
    hal::CommandBuffer* buffers[] = {command_buffer};
    return device->QueueExecute({semaphores, wait_value}, buffers, {semaphores, signal_value});
  }
};

TEST(CpuTaskStressTest, ConcurrentPipelinesWithInjectedFailures) {
  CountingAllocator allocator(Allocator::Default());
  {
    Rig setup;
    setup.Init(&allocator);
    constexpr int kThreads = 4;
    constexpr int kEpochs = 60;
    constexpr int kSteps = 8;
    constexpr uint32_t kWorkgroups = 64;
    std::atomic<int> failed_epochs{0};
    std::atomic<int> good_epochs{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(1000 + t);
        auto out = setup.Allocate(kWorkgroups * 4);
        for (int epoch = 0; epoch < kEpochs; ++epoch) {
          auto timeline = setup.device->CreateSemaphore(0);
          ASSERT_TRUE(timeline.ok());
          bool inject = rng() % 3 == 0;
          int failing_step = inject ? int(rng() % kSteps) : -1;
          std::vector<ref_ptr<hal::CommandBuffer>> keep;
          for (int step = 0; step < kSteps; ++step) {
            auto cb = setup.device->CreateCommandBuffer(hal::CommandBufferMode::kOneShot);
            ASSERT_TRUE(cb.ok());
            uint32_t zero = 0;
            uint32_t k = step == failing_step ? uint32_t(rng() % kWorkgroups) : 1000u;
            hal::BufferRef bindings[] = {{out.get(), 0, kWorkgroups * 4}};
            ASSERT_TRUE((*cb)->Begin().ok());
            ASSERT_TRUE((*cb)->FillBuffer({out.get(), 0, kWorkgroups * 4}, &zero, 4).ok());
            ASSERT_TRUE((*cb)->ExecutionBarrier().ok());
            ASSERT_TRUE(
                (*cb)->Dispatch(setup.executable.get(), setup.fail_at, {kWorkgroups, 1, 1},
                                {&k, 1}, bindings)
                    .ok());
            ASSERT_TRUE((*cb)->End().ok());
            Status status = setup.SubmitStep(timeline->get(), uint64_t(step), cb->get());
            ASSERT_TRUE(status.ok()) << Str(status);
            keep.push_back(std::move(cb).value());
          }
          Status status = (*timeline)->Wait(kSteps, Deadline(60000));
          if (inject) {
            EXPECT_FALSE(status.ok());
            EXPECT_NE(Str(status).find("returned 7"), std::string::npos) << Str(status);
            failed_epochs.fetch_add(1);
          } else {
            ASSERT_TRUE(status.ok()) << Str(status);
            std::vector<uint32_t> values(kWorkgroups);
            ASSERT_TRUE(out->ReadData(0, values.data(), kWorkgroups * 4).ok());
            for (uint32_t v : values) ASSERT_EQ(v, 1u);
            good_epochs.fetch_add(1);
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(failed_epochs.load() + good_epochs.load(), kThreads * kEpochs);
    EXPECT_GT(failed_epochs.load(), 0);
    EXPECT_GT(good_epochs.load(), 0);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

TEST(CpuTaskStressTest, DestroyDeviceWithPipelinesInFlight) {
  CountingAllocator allocator(Allocator::Default());
  for (int round = 0; round < 50; ++round) {
    std::vector<ref_ptr<hal::Semaphore>> timelines;
    ref_ptr<hal::Semaphore> gate;
    {
      Rig setup;
      setup.Init(&allocator);
      constexpr uint32_t kElements = 64 * 64;
      // Each pipeline has its own buffers: pipelines are not ordered with
      // each other.
      std::vector<ref_ptr<hal::Buffer>> xs, ys;
      for (int t = 0; t < 3; ++t) {
        xs.push_back(setup.Allocate(kElements * 4));
        ys.push_back(setup.Allocate(kElements * 4));
      }
      gate = std::move(setup.device->CreateSemaphore(0)).value();
      for (int t = 0; t < 3; ++t) {
        timelines.push_back(std::move(setup.device->CreateSemaphore(0)).value());
      }
      std::vector<std::thread> threads;
      for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
          for (int step = 0; step < 20; ++step) {
            auto cb = setup.device->CreateCommandBuffer(hal::CommandBufferMode::kOneShot);
            float a = 2.0f, b = 1.0f;
            uint32_t constants[3];
            memcpy(&constants[0], &a, 4);
            memcpy(&constants[1], &b, 4);
            constants[2] = kElements;
            hal::BufferRef bindings[] = {{xs[t].get(), 0, kElements * 4},
                                         {ys[t].get(), 0, kElements * 4}};
            ASSERT_TRUE((*cb)->Begin().ok());
            ASSERT_TRUE((*cb)->Dispatch(setup.executable.get(), setup.axpb, {kElements / 64, 1, 1},
                                        constants, bindings)
                            .ok());
            ASSERT_TRUE((*cb)->End().ok());
            // Thread 0's last step also waits for a gate nobody signals.
            hal::Semaphore* waits[] = {timelines[t].get(), gate.get()};
            uint64_t wait_values[] = {uint64_t(step), 1};
            size_t wait_count = (t == 0 && step == 19) ? 2 : 1;
            hal::Semaphore* signals[] = {timelines[t].get()};
            uint64_t signal_values[] = {uint64_t(step + 1)};
            hal::CommandBuffer* buffers[] = {cb->get()};
            ASSERT_TRUE(setup.device
                            ->QueueExecute({{waits, wait_count}, {wait_values, wait_count}},
                                           buffers, {signals, signal_values})
                            .ok());
          }
        });
      }
      for (auto& thread : threads) thread.join();
      // The device goes away here with work in flight.
    }
    for (auto& timeline : timelines) {
      Status status = timeline->Wait(20, Deadline(30000));
      EXPECT_NE(status.code(), StatusCode::kDeadlineExceeded) << "hung: " << Str(status);
    }
    // The gated submission can only have been cancelled.
    EXPECT_FALSE(timelines[0]->Query().ok());
  }
  EXPECT_EQ(allocator.live(), 0u);
}

}  // namespace
}  // namespace osprey::drivers::cpu_task
