// Stress tests of the task executor: many submissions, random DAGs with
// barriers, injected tile failures, concurrent submitters with waits and
// cancellation, and shutdown races. Meant to run under TSan and ASan too.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/task/executor.h"
#include "runtime/task/task_test_util.h"

namespace osprey::task {
namespace {

using testing::CompletionLatch;
using testing::ManualWait;

ref_ptr<Executor> MakeExecutor(osprey::Allocator* allocator, uint32_t workers) {
  ExecutorOptions options;
  options.worker_count = workers;
  options.worker_local_memory_size = 256;
  auto executor = Executor::Create(options, allocator);
  EXPECT_TRUE(executor.ok());
  return std::move(executor).value();
}

// Counts completions and remembers the first unexpected status.
struct CompletionCounter {
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  static void Fn(void* user_data, Status status) {
    auto* self = static_cast<CompletionCounter*>(user_data);
    (status.ok() ? self->ok : self->failed).fetch_add(1);
  }
  Completion completion() { return {&Fn, this}; }
  int total() const { return ok.load() + failed.load(); }
};

void WaitFor(const std::function<bool()>& predicate) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!predicate()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "timed out";
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Status CountCall(void* user_data, const TaskContext&) {
  static_cast<std::atomic<int>*>(user_data)->fetch_add(1, std::memory_order_relaxed);
  return OkStatus();
}
Status CountTiles(void* user_data, uint32_t begin, uint32_t end, const TaskContext&) {
  static_cast<std::atomic<int>*>(user_data)->fetch_add(int(end - begin),
                                                       std::memory_order_relaxed);
  return OkStatus();
}

TEST(ExecutorStressTest, ThousandsOfSubmissions) {
  CountingAllocator allocator(Allocator::Default());
  {
    auto executor = MakeExecutor(&allocator, 2);
    constexpr int kSubmissions = 4000;
    std::atomic<int> calls{0};
    std::atomic<int> tiles{0};
    CompletionCounter completions;
    for (int i = 0; i < kSubmissions; ++i) {
      Submission* submission = *executor->AcquireSubmission();
      Task* a = *submission->AddCall(&CountCall, &calls);
      DispatchParams params;
      params.fn = &CountTiles;
      params.user_data = &tiles;
      params.tile_count = 16;
      Task* d = *submission->AddDispatch(params);
      Task* b = *submission->AddCall(&CountCall, &calls);
      ASSERT_TRUE(submission->AddDependency(a, d).ok());
      ASSERT_TRUE(submission->AddDependency(d, b).ok());
      ASSERT_TRUE(executor->Submit(submission, completions.completion()).ok());
    }
    ASSERT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
    EXPECT_EQ(completions.ok.load(), kSubmissions);
    EXPECT_EQ(calls.load(), 2 * kSubmissions);
    EXPECT_EQ(tiles.load(), 16 * kSubmissions);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

// A random DAG whose tasks log start/end times; checked edge by edge.
struct RandomDag {
  struct Node {
    RandomDag* dag;
    int index;
  };
  std::atomic<int> clock{0};
  std::vector<std::atomic<int>> start, end;
  std::vector<Node> nodes;
  std::vector<std::pair<int, int>> edges;
  std::vector<int> kinds;  // 0 call, 1 dispatch, 2 barrier.
  explicit RandomDag(int n) : start(n), end(n), nodes(n) {
    for (int i = 0; i < n; ++i) {
      nodes[i] = {this, i};
      start[i] = -1;
      end[i] = -1;
    }
  }
  static Status Call(void* user_data, const TaskContext&) {
    auto* node = static_cast<Node*>(user_data);
    node->dag->start[node->index] = node->dag->clock.fetch_add(1);
    node->dag->end[node->index] = node->dag->clock.fetch_add(1);
    return OkStatus();
  }
  static Status Tiles(void* user_data, uint32_t begin, uint32_t, const TaskContext&) {
    auto* node = static_cast<Node*>(user_data);
    int now = node->dag->clock.fetch_add(1);
    int expected = -1;
    node->dag->start[node->index].compare_exchange_strong(expected, now);
    int latest = node->dag->end[node->index].load();
    int stamp = node->dag->clock.fetch_add(1);
    while (latest < stamp && !node->dag->end[node->index].compare_exchange_weak(latest, stamp)) {
    }
    return OkStatus();
  }
};

TEST(ExecutorStressTest, RandomDagsWithBarriersRespectEdges) {
  auto executor = MakeExecutor(Allocator::Default(), 2);
  std::mt19937 rng(1234);
  constexpr int kDags = 150;
  std::vector<std::unique_ptr<RandomDag>> dags;
  CompletionCounter completions;
  for (int d = 0; d < kDags; ++d) {
    int n = 5 + int(rng() % 60);
    dags.push_back(std::make_unique<RandomDag>(n));
    RandomDag& dag = *dags.back();
    Submission* submission = *executor->AcquireSubmission();
    std::vector<Task*> tasks;
    for (int i = 0; i < n; ++i) {
      int kind = int(rng() % 10);
      kind = kind < 6 ? 0 : kind < 9 ? 1 : 2;
      dag.kinds.push_back(kind);
      if (kind == 0) {
        tasks.push_back(*submission->AddCall(&RandomDag::Call, &dag.nodes[i]));
      } else if (kind == 1) {
        DispatchParams params;
        params.fn = &RandomDag::Tiles;
        params.user_data = &dag.nodes[i];
        params.tile_count = 1 + rng() % 50;
        tasks.push_back(*submission->AddDispatch(params));
      } else {
        tasks.push_back(*submission->AddBarrier());
        // A barrier joins everything before it.
        for (int j = 0; j < i; ++j) {
          ASSERT_TRUE(submission->AddDependency(tasks[j], tasks[i]).ok());
          dag.edges.push_back({j, i});
        }
        continue;
      }
      int preds = i == 0 ? 0 : int(rng() % 4);
      for (int p = 0; p < preds; ++p) {
        int j = int(rng() % i);
        ASSERT_TRUE(submission->AddDependency(tasks[j], tasks[i]).ok());
        dag.edges.push_back({j, i});
      }
    }
    ASSERT_TRUE(executor->Submit(submission, completions.completion()).ok());
  }
  ASSERT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
  EXPECT_EQ(completions.ok.load(), kDags);
  for (auto& dag : dags) {
    // Barriers record nothing; check transitively through them by looking
    // only at edges between recorded tasks plus barrier-joined pairs.
    std::vector<int> latest_end_before(dag->kinds.size(), -1);
    for (size_t i = 0; i < dag->kinds.size(); ++i) {
      if (dag->kinds[i] != 2) {
        ASSERT_GE(dag->start[i].load(), 0) << "task " << i << " never ran";
      }
    }
    for (auto [from, to] : dag->edges) {
      if (dag->kinds[from] == 2 || dag->kinds[to] == 2) continue;
      EXPECT_LT(dag->end[from].load(), dag->start[to].load()) << from << "->" << to;
    }
    // Anything before a barrier ends before anything after it starts that
    // depends on the barrier.
    for (auto [from, to] : dag->edges) {
      if (dag->kinds[to] != 2) continue;
      for (auto [b, after] : dag->edges) {
        if (b != to || dag->kinds[after] == 2 || dag->kinds[from] == 2) continue;
        EXPECT_LT(dag->end[from].load(), dag->start[after].load());
      }
    }
  }
}

struct InjectedFailure {
  uint32_t fail_tile;
  std::atomic<int>* after_failure_ran;
  static Status Fn(void* user_data, uint32_t begin, uint32_t end, const TaskContext&) {
    auto* self = static_cast<InjectedFailure*>(user_data);
    if (self->fail_tile >= begin && self->fail_tile < end) {
      return InternalError("injected failure at tile %u", self->fail_tile);
    }
    return OkStatus();
  }
};

struct ExpectFailure {
  std::atomic<int> failures{0};
  std::atomic<int> wrong{0};
  static void Fn(void* user_data, Status status) {
    auto* self = static_cast<ExpectFailure*>(user_data);
    char text[512];
    status.ToString(text, sizeof(text));
    if (status.code() == StatusCode::kInternal &&
        std::string(text).find("injected failure at tile") != std::string::npos) {
      self->failures.fetch_add(1);
    } else {
      self->wrong.fetch_add(1);
    }
  }
};

TEST(ExecutorStressTest, FailureInjectionInTiles) {
  CountingAllocator allocator(Allocator::Default());
  {
    auto executor = MakeExecutor(&allocator, 2);
    std::mt19937 rng(99);
    constexpr int kSubmissions = 500;
    std::vector<InjectedFailure> failures(kSubmissions);
    std::atomic<int> skipped_ran{0};
    std::atomic<int> tiles{0};
    ExpectFailure expect;
    for (int i = 0; i < kSubmissions; ++i) {
      Submission* submission = *executor->AcquireSubmission();
      DispatchParams ok_params;
      ok_params.fn = &CountTiles;
      ok_params.user_data = &tiles;
      ok_params.tile_count = 8;
      Task* before = *submission->AddDispatch(ok_params);
      failures[i] = {uint32_t(rng() % 200), &skipped_ran};
      DispatchParams params;
      params.fn = &InjectedFailure::Fn;
      params.user_data = &failures[i];
      params.tile_count = 200;
      Task* failing = *submission->AddDispatch(params);
      Task* barrier = *submission->AddBarrier();
      Task* after = *submission->AddCall(&CountCall, &skipped_ran);
      ASSERT_TRUE(submission->AddDependency(before, failing).ok());
      ASSERT_TRUE(submission->AddDependency(failing, barrier).ok());
      ASSERT_TRUE(submission->AddDependency(barrier, after).ok());
      ASSERT_TRUE(executor->Submit(submission, {&ExpectFailure::Fn, &expect}).ok());
    }
    ASSERT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
    EXPECT_EQ(expect.failures.load(), kSubmissions);
    EXPECT_EQ(expect.wrong.load(), 0);
    EXPECT_EQ(skipped_ran.load(), 0);
    EXPECT_EQ(tiles.load(), 8 * kSubmissions);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

TEST(ExecutorStressTest, ConcurrentSubmittersWithWaitsAndCancellation) {
  CountingAllocator allocator(Allocator::Default());
  {
    auto executor = MakeExecutor(&allocator, 2);
    constexpr int kThreads = 4;
    constexpr int kPerThread = 300;
    CompletionCounter completions;
    std::atomic<int> calls{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(t + 7);
        for (int i = 0; i < kPerThread; ++i) {
          auto wait = std::make_unique<ManualWait>();
          Submission* submission = *executor->AcquireSubmission();
          Task* w = *submission->AddWait(wait->source());
          DispatchParams params;
          params.fn = &CountTiles;
          params.user_data = &calls;
          params.tile_count = 1 + rng() % 32;
          Task* d = *submission->AddDispatch(params);
          Task* c = *submission->AddCall(&CountCall, &calls);
          EXPECT_TRUE(submission->AddDependency(w, d).ok());
          EXPECT_TRUE(submission->AddDependency(d, c).ok());
          uint64_t id = 0;
          CompletionLatch latch;
          EXPECT_TRUE(executor->Submit(submission, latch.completion(), &id).ok());
          switch (rng() % 3) {
            case 0:
              wait->Signal();
              break;
            case 1:
              executor->Cancel(id).IgnoreError();
              break;
            default:
              wait->Signal();
              executor->Cancel(id).IgnoreError();
              break;
          }
          Status status = latch.Wait();
          EXPECT_TRUE(status.ok() || status.code() == StatusCode::kCancelled);
          completions.Fn(&completions, std::move(status));
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(completions.total(), kThreads * kPerThread);
    // Completion callbacks may still be returning; then nothing is left.
    ASSERT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
    EXPECT_EQ(executor->in_flight(), 0u);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

TEST(ExecutorStressTest, ShutdownRaces) {
  CountingAllocator allocator(Allocator::Default());
  std::atomic<int> tiles{0};
  for (int round = 0; round < 100; ++round) {
    CompletionCounter completions;
    ManualWait wait;
    int submitted = 0;
    {
      auto executor = MakeExecutor(&allocator, 2);
      for (int i = 0; i < 10; ++i) {
        Submission* submission = *executor->AcquireSubmission();
        DispatchParams params;
        params.fn = &CountTiles;
        params.user_data = &tiles;
        params.tile_count = 500;
        params.tiles_per_batch = 1;
        Task* d = *submission->AddDispatch(params);
        if (i == 3) {
          Task* w = *submission->AddWait(wait.source());
          ASSERT_TRUE(submission->AddDependency(d, w).ok());
        }
        ASSERT_TRUE(executor->Submit(submission, completions.completion()).ok());
        ++submitted;
      }
      if (round % 2) std::this_thread::yield();
    }
    EXPECT_EQ(completions.total(), submitted);
    EXPECT_GE(completions.failed.load(), 1);  // The wait never resolves.
  }
  EXPECT_EQ(allocator.live(), 0u);
}

}  // namespace
}  // namespace osprey::task
