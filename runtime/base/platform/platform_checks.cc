// Conformance checks of a threaded platform port (see platform_checks.h).
#include "runtime/base/platform/platform_checks.h"

#include <stdio.h>
#include <string.h>

#include <cstdint>

#include "runtime/base/platform/platform.h"

namespace osprey::platform {

namespace {

constexpr int64_t kMillis = 1000000;
// Generous: waits that should end in microseconds must end within this.
constexpr int64_t kHangNanos = 10000 * kMillis;

struct Checker {
  const char* group = "";
  int failures = 0;
  void Expect(bool ok, int line, const char* what) {
    if (ok) return;
    printf("platform check failed: %s (platform_checks.cc:%d): %s\n", group, line, what);
    ++failures;
  }
};
#define EXPECT(checker, cond) (checker).Expect(bool(cond), __LINE__, #cond)

ThreadOptions Options(const PlatformCheckOptions& options, const char* name,
                      int32_t priority = -1) {
  ThreadOptions thread_options;
  thread_options.name = name;
  thread_options.stack_size = options.stack_size;
  thread_options.priority = priority;
  return thread_options;
}

//===----------------------------------------------------------------------===//

void CheckTime(Checker& c) {
  c.group = "time";
  EXPECT(c, ProcessorCount() >= 1);
  int64_t start = MonotonicNanos();
  SleepNanos(3 * kMillis);
  int64_t end = MonotonicNanos();
  EXPECT(c, end - start >= 3 * kMillis);
  SleepNanos(0);
  SleepNanos(-1);
  EXPECT(c, MonotonicNanos() >= end);
  EXPECT(c, DeadlineFromTimeout(kInfiniteFuture) == kInfiniteFuture);
  EXPECT(c, DeadlineFromTimeout(0) == kImmediatePast);
  EXPECT(c, DeadlineFromTimeout(-5) == kImmediatePast);
  // The clock has advanced past 0 by now, so this saturates.
  EXPECT(c, DeadlineFromTimeout(kInfiniteFuture - 1) == kInfiniteFuture);
  int64_t deadline = DeadlineFromTimeout(kMillis);
  EXPECT(c, deadline >= end + kMillis && deadline < kInfiniteFuture);
  YieldProcessor();
}

void CheckMemory(Checker& c) {
  c.group = "memory";
  const size_t alignments[] = {1, 8, 16, 64, 256, 4096};
  for (size_t alignment : alignments) {
    void* p = AllocateMemory(100, alignment);
    EXPECT(c, p != nullptr);
    if (!p) continue;
    EXPECT(c, reinterpret_cast<uintptr_t>(p) % alignment == 0);
    memset(p, 0xab, 100);
    FreeMemory(p);
  }
  void* empty = AllocateMemory(0, 16);
  EXPECT(c, empty != nullptr);
  FreeMemory(empty);
  FreeMemory(nullptr);
}

// Threads increment a counter with a yield between the read and the write:
// without mutual exclusion updates get lost.
struct Counter {
  Mutex mutex;
  int value = 0;
  int rounds = 0;
};

void CheckMutex(Checker& c, const PlatformCheckOptions& options) {
  c.group = "mutex";
  Counter counter;
  counter.rounds = 200;
  Thread threads[3];
  for (Thread& thread : threads) {
    Status started = thread.Start(
        Options(options, "count"),
        [](void* arg) {
          auto* counter = static_cast<Counter*>(arg);
          for (int i = 0; i < counter->rounds; ++i) {
            MutexLock lock(counter->mutex);
            int seen = counter->value;
            YieldProcessor();
            counter->value = seen + 1;
          }
        },
        &counter);
    EXPECT(c, started.ok());
  }
  for (Thread& thread : threads) thread.Join();
  EXPECT(c, counter.value == 3 * counter.rounds);
}

void CheckConditionTimeout(Checker& c) {
  c.group = "condition timeout";
  Mutex mutex;
  ConditionVariable cv;
  MutexLock lock(mutex);
  int64_t start = MonotonicNanos();
  EXPECT(c, !cv.WaitUntil(mutex, start + 5 * kMillis));
  EXPECT(c, MonotonicNanos() - start >= 5 * kMillis);
  EXPECT(c, !cv.WaitUntil(mutex, kImmediatePast));
  EXPECT(c, !cv.WaitUntil(mutex, MonotonicNanos() - 1));
  // Notifying with nobody waiting is harmless and not remembered.
  cv.NotifyOne();
  cv.NotifyAll();
  start = MonotonicNanos();
  EXPECT(c, !cv.WaitUntil(mutex, start + 2 * kMillis));
}

// Two threads hand a turn back and forth: every wake-up must arrive.
struct PingPong {
  Mutex mutex;
  ConditionVariable cv;
  int turn = 0;  // Whose turn: 0 or 1.
  int rounds = 0;
  int completed[2] = {0, 0};
  bool timed_out = false;
};

void PingPongSide(PingPong* p, int side) {
  int64_t deadline = DeadlineFromTimeout(kHangNanos);
  MutexLock lock(p->mutex);
  for (int i = 0; i < p->rounds; ++i) {
    while (p->turn != side) {
      if (!p->cv.WaitUntil(p->mutex, deadline) && MonotonicNanos() >= deadline) {
        p->timed_out = true;
        p->cv.NotifyAll();
        return;
      }
      if (p->timed_out) return;
    }
    ++p->completed[side];
    p->turn = 1 - side;
    p->cv.NotifyOne();
  }
}

void CheckPingPong(Checker& c, const PlatformCheckOptions& options) {
  c.group = "condition ping-pong";
  PingPong p;
  p.rounds = 50;
  Thread other;
  Status started = other.Start(
      Options(options, "pong"), [](void* arg) { PingPongSide(static_cast<PingPong*>(arg), 1); },
      &p);
  EXPECT(c, started.ok());
  if (started.ok()) PingPongSide(&p, 0);
  other.Join();
  EXPECT(c, !p.timed_out);
  EXPECT(c, p.completed[0] == p.rounds && p.completed[1] == p.rounds);
}

// NotifyAll releases every waiter; NotifyOne hands out tokens one by one.
struct Gate {
  Mutex mutex;
  ConditionVariable cv;
  int waiting = 0;
  bool open = false;
  int tokens = 0;
  int passed = 0;
  bool use_tokens = false;
};

void GateWaiter(void* arg) {
  auto* gate = static_cast<Gate*>(arg);
  int64_t deadline = DeadlineFromTimeout(kHangNanos);
  MutexLock lock(gate->mutex);
  ++gate->waiting;
  gate->cv.NotifyAll();  // Tell the checker another waiter is in place.
  while (gate->use_tokens ? gate->tokens == 0 : !gate->open) {
    if (!gate->cv.WaitUntil(gate->mutex, deadline) && MonotonicNanos() >= deadline) return;
  }
  if (gate->use_tokens) --gate->tokens;
  ++gate->passed;
  gate->cv.NotifyAll();
}

bool WaitFor(Gate& gate, int waiting, int passed) {
  int64_t deadline = DeadlineFromTimeout(kHangNanos);
  while (gate.waiting < waiting || gate.passed < passed) {
    if (!gate.cv.WaitUntil(gate.mutex, deadline) && MonotonicNanos() >= deadline) return false;
  }
  return true;
}

void CheckNotify(Checker& c, const PlatformCheckOptions& options) {
  c.group = "notify all";
  {
    Gate gate;
    Thread threads[3];
    for (Thread& thread : threads)
      EXPECT(c, thread.Start(Options(options, "gate"), &GateWaiter, &gate).ok());
    {
      MutexLock lock(gate.mutex);
      EXPECT(c, WaitFor(gate, 3, 0));
      gate.open = true;
      gate.cv.NotifyAll();
      EXPECT(c, WaitFor(gate, 3, 3));
    }
    for (Thread& thread : threads) thread.Join();
    EXPECT(c, gate.passed == 3);
  }
  c.group = "notify one";
  {
    Gate gate;
    gate.use_tokens = true;
    Thread threads[2];
    for (Thread& thread : threads)
      EXPECT(c, thread.Start(Options(options, "token"), &GateWaiter, &gate).ok());
    {
      MutexLock lock(gate.mutex);
      EXPECT(c, WaitFor(gate, 2, 0));
      for (int i = 1; i <= 2; ++i) {
        ++gate.tokens;
        gate.cv.NotifyOne();
        EXPECT(c, WaitFor(gate, 2, i));
      }
    }
    for (Thread& thread : threads) thread.Join();
    EXPECT(c, gate.passed == 2 && gate.tokens == 0);
  }
}

// The caller waits; a thread of lower priority wakes it. A wait that spun
// instead of blocking would keep the waker from ever running.
struct Wake {
  Mutex mutex;
  ConditionVariable cv;
  bool done = false;
};

void CheckBlockingWait(Checker& c, const PlatformCheckOptions& options) {
  c.group = "blocking wait";
  Wake wake;
  Thread waker;
  {
    MutexLock lock(wake.mutex);
    Status started = waker.Start(
        Options(options, "waker", options.lower_priority),
        [](void* arg) {
          auto* wake = static_cast<Wake*>(arg);
          MutexLock lock(wake->mutex);
          wake->done = true;
          wake->cv.NotifyAll();
        },
        &wake);
    EXPECT(c, started.ok());
    int64_t deadline = DeadlineFromTimeout(kHangNanos);
    while (started.ok() && !wake.done) {
      if (!wake.cv.WaitUntil(wake.mutex, deadline) && MonotonicNanos() >= deadline) break;
    }
    EXPECT(c, wake.done);
  }
  waker.Join();
}

// Floating-point registers are per thread: two threads run the same
// floating-point recurrence, switched by preemption or yields, and each
// must end with exactly the value one thread alone computes.
struct FloatWork {
  int64_t run_nanos = 0;
  uint32_t steps = 0;
  float result[8] = {};
  bool yield = false;
};

void FloatSteps(uint32_t begin, uint32_t end, float* acc, bool yield) {
  for (uint32_t i = begin; i < end; ++i) {
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] * 0.999f + float(k + 1) * 0.25f + float(i & 7);
    if (yield && (i & 255) == 0) YieldProcessor();
  }
}

void FloatWorker(void* arg) {
  auto* work = static_cast<FloatWork*>(arg);
  float acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = float(k);
  // Runs for a while (many scheduler ticks), in chunks.
  int64_t end = MonotonicNanos() + work->run_nanos;
  uint32_t steps = 0;
  do {
    FloatSteps(steps, steps + 1024, acc, work->yield);
    steps += 1024;
  } while (MonotonicNanos() < end);
  work->steps = steps;
  for (int k = 0; k < 8; ++k) work->result[k] = acc[k];
}

void CheckFloatState(Checker& c, const PlatformCheckOptions& options) {
  c.group = "floating-point state";
  for (bool yield : {false, true}) {
    FloatWork work[2];
    Thread threads[2];
    for (int i = 0; i < 2; ++i) {
      work[i].run_nanos = 30 * kMillis;
      work[i].yield = yield;
      EXPECT(c, threads[i].Start(Options(options, "float"), &FloatWorker, &work[i]).ok());
    }
    for (Thread& thread : threads) thread.Join();
    for (int i = 0; i < 2; ++i) {
      float acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = float(k);
      FloatSteps(0, work[i].steps, acc, false);
      EXPECT(c, work[i].steps > 0);
      EXPECT(c, memcmp(acc, work[i].result, sizeof(acc)) == 0);
    }
  }
}

// Threads: start/join rules, a deep stack, per-thread storage.
thread_local int t_value = 0;

struct Local {
  int seen_before = -1;
  int seen_after = -1;
  uint32_t stack_sum = 0;
};

void CheckThreads(Checker& c, const PlatformCheckOptions& options) {
  c.group = "threads";
  Thread idle;
  EXPECT(c, !idle.joinable());
  idle.Join();  // Not started: no-op.

  t_value = 7;
  Local locals[2];
  Thread threads[2];
  for (int i = 0; i < 2; ++i) {
    ThreadOptions thread_options = Options(options, "local");
    thread_options.stack_size = 12 * 1024;
    EXPECT(c, threads[i]
                  .Start(
                      thread_options,
                      [](void* arg) {
                        auto* local = static_cast<Local*>(arg);
                        local->seen_before = t_value;  // A new thread starts with its own copy.
                        t_value = 100 + int(reinterpret_cast<uintptr_t>(arg) & 0xff);
                        // Touch 4 KiB of the stack.
                        volatile uint8_t buffer[4096];
                        for (size_t j = 0; j < sizeof(buffer); ++j) buffer[j] = uint8_t(j);
                        uint32_t sum = 0;
                        for (size_t j = 0; j < sizeof(buffer); ++j) sum += buffer[j];
                        local->stack_sum = sum;
                        YieldProcessor();
                        local->seen_after = t_value;
                      },
                      &locals[i])
                  .ok());
    EXPECT(c, threads[i].joinable());
  }
  Status again = threads[0].Start(
      Options(options, "again"), [](void*) {}, nullptr);
  EXPECT(c, again.code() == StatusCode::kFailedPrecondition);
  for (Thread& thread : threads) {
    thread.Join();
    EXPECT(c, !thread.joinable());
    thread.Join();
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT(c, locals[i].seen_before == 0);
    EXPECT(c, locals[i].seen_after == 100 + int(reinterpret_cast<uintptr_t>(&locals[i]) & 0xff));
    EXPECT(c, locals[i].stack_sum == 16u * (255u * 256u / 2u));  // 16 runs of 0..255.
  }
  EXPECT(c, t_value == 7);
  // A joined thread object starts again; the destructor joins.
  int ran = 0;
  {
    Thread reused;
    EXPECT(c, reused
                  .Start(
                      Options(options, "once"), [](void* arg) { ++*static_cast<int*>(arg); }, &ran)
                  .ok());
    reused.Join();
    EXPECT(c, reused
                  .Start(
                      Options(options, "twice"), [](void* arg) { ++*static_cast<int*>(arg); }, &ran)
                  .ok());
  }
  EXPECT(c, ran == 2);
}

}  // namespace

int RunPlatformChecks(const PlatformCheckOptions& options) {
  Checker c;
  struct Step {
    const char* name;
    void (*run)(Checker&, const PlatformCheckOptions&);
  };
  const Step steps[] = {
      {"time", [](Checker& c, const PlatformCheckOptions&) { CheckTime(c); }},
      {"memory", [](Checker& c, const PlatformCheckOptions&) { CheckMemory(c); }},
      {"mutex", &CheckMutex},
      {"condition timeout",
       [](Checker& c, const PlatformCheckOptions&) { CheckConditionTimeout(c); }},
      {"condition ping-pong", &CheckPingPong},
      {"notify", &CheckNotify},
      {"blocking wait", &CheckBlockingWait},
      {"threads", &CheckThreads},
      {"floating-point state", &CheckFloatState},
  };
  for (const Step& step : steps) {
    if (options.verbose) printf("platform check: %s\n", step.name);
    step.run(c, options);
  }
  return c.failures;
}

}  // namespace osprey::platform
