// The per-invocation limits of a context: memory bytecode allocates, the
// instruction budget, the time limit and interrupts from another thread.
// Each failure is clean (code, message, backtrace) and leaves the context
// usable.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/base/platform/platform.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using ::testing::HasSubstr;
using testing::LoadAssembly;
using testing::StatusText;

constexpr char kProgram[] = R"asm(
module @m
globals ref=1

// list.resize with an i32 size argument (2^31-1 asks for 32 GiB).
func @resize(i32) -> (i32) regs(i=2, r=1) export {
  const.i32 %i1, 0
  list.alloc %r0, %i1
  list.resize %r0, %i0
  list.size %i1, %r0
  return %i1
}

// A buffer of |n| bytes kept in a global (it outlives the call).
func @keep_buffer(i64) regs(r=1) export {
  buffer.alloc %r0, %l0
  global.store.ref %r0, 0
  return
}

func @drop_buffer() regs(r=1) export {
  const.ref.null %r0
  global.store.ref %r0, 0
  return
}

// Sums 0..n-1 in 2 + 4n + 1 instructions (for n >= 1): two constants, n
// rounds of add, add.imm, cmp, br_if, and the return.
func @loop(i32) -> (i32) regs(i=4) export {
  const.i32 %i1, 0
  const.i32 %i2, 0
^loop:
  add.i32 %i1, %i1, %i2
  add.imm.i32 %i2, %i2, 1
  cmp.lt.i32.s %i3, %i2, %i0
  br_if %i3, ^loop
  return %i1
}

func @forever() regs(i=1) export {
^top:
  add.imm.i32 %i0, %i0, 1
  br ^top
}

func @answer() -> (i32) regs(i=1) export {
  const.i32 %i0, 42
  return %i0
}
)asm";

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create(Allocator::Default());
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(*instance);
    auto app = LoadAssembly(kProgram);
    ASSERT_TRUE(app.ok()) << StatusText(app.status());
    app_ = std::move(*app);
  }

  ref_ptr<Context> Link(const ContextOptions& options) {
    auto context = Context::Create(instance_.get(), std::vector<Module*>{app_.module.get()},
                                   options, Allocator::Default());
    EXPECT_TRUE(context.ok()) << StatusText(context.status());
    return context.ok() ? std::move(*context) : nullptr;
  }

  Status Call(Context* context, const char* name, std::vector<Value> args,
              std::vector<Value>* results) {
    auto fn = context->LookupFunction("m", name);
    if (!fn.ok()) return std::move(fn).status();
    results->assign(fn->signature().result_count, Value());
    return context->Invoke(*fn, args, *results);
  }

  // The context still runs code after a failure.
  void ExpectUsable(Context* context) {
    std::vector<Value> results;
    Status status = Call(context, "answer", {}, &results);
    ASSERT_TRUE(status.ok()) << StatusText(status);
    EXPECT_EQ(results[0].i32, 42);
  }

  ref_ptr<Instance> instance_;
  testing::LoadedModule app_;
};

TEST_F(LimitsTest, HugeListResizeFailsQuicklyWithinTheMemoryBudget) {
  ContextOptions options;
  options.max_memory = 1 << 20;
  ref_ptr<Context> context = Link(options);
  ASSERT_TRUE(context);
  std::vector<Value> results;
  const auto start = std::chrono::steady_clock::now();
  Status status = Call(context.get(), "resize", {Value::I32(2147483647)}, &results);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("VM memory budget exceeded"));
  EXPECT_THAT(status.message(), HasSubstr("of 1048576 bytes in use"));
  EXPECT_THAT(status.message(), HasSubstr("resizing a list of 0 elements to 2147483647"));
  EXPECT_THAT(status.message(), HasSubstr("at m.resize+0x"));  // The backtrace.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 1000);
  EXPECT_EQ(context->vm_memory_in_use(), 0u);  // The unwound list is gone.
  ExpectUsable(context.get());
  // Within the budget the same code works.
  status = Call(context.get(), "resize", {Value::I32(1000)}, &results);
  ASSERT_TRUE(status.ok()) << StatusText(status);
  EXPECT_EQ(results[0].i32, 1000);
}

TEST_F(LimitsTest, MemoryHeldAcrossCallsCounts) {
  ContextOptions options;
  options.max_memory = 100000;
  ref_ptr<Context> context = Link(options);
  ASSERT_TRUE(context);
  std::vector<Value> results;
  ASSERT_TRUE(Call(context.get(), "keep_buffer", {Value::I64(60000)}, &results).ok());
  EXPECT_GE(context->vm_memory_in_use(), 60000u);
  // The global still holds 60000 bytes: another 60000 do not fit.
  Status status = Call(context.get(), "keep_buffer", {Value::I64(60000)}, &results);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << StatusText(status);
  EXPECT_THAT(status.message(), HasSubstr("at m.keep_buffer+0x"));
  ASSERT_TRUE(Call(context.get(), "drop_buffer", {}, &results).ok());
  EXPECT_EQ(context->vm_memory_in_use(), 0u);
  ASSERT_TRUE(Call(context.get(), "keep_buffer", {Value::I64(60000)}, &results).ok());
}

TEST_F(LimitsTest, ObjectsMayOutliveTheirContext) {
  auto app = LoadAssembly(R"asm(
module @n
func @make(i32) -> (ref) regs(i=1, r=1) export {
  list.alloc %r0, %i0
  list.resize %r0, %i0
  return %r0
}
)asm");
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  ContextOptions options;
  options.max_memory = 1 << 16;
  auto context = Context::Create(instance_.get(), std::vector<Module*>{app->module.get()},
                                 options, Allocator::Default());
  ASSERT_TRUE(context.ok());
  auto fn = (*context)->LookupFunction("n.make");
  ASSERT_TRUE(fn.ok());
  Value args[] = {Value::I32(10)};
  Value results[1];
  ASSERT_TRUE((*context)->Invoke(*fn, args, results).ok());
  context->reset();  // The list keeps its budget alive.
  List* list = results[0].ref.As<List>(List::type());
  ASSERT_NE(list, nullptr);
  ASSERT_TRUE(list->Resize(20).ok());
  EXPECT_EQ(list->size(), 20u);
  results[0].ref.reset();
}

TEST_F(LimitsTest, CountsInstructionsExactly) {
  ContextOptions options;
  options.max_instructions = 2 + 4 * 10 + 1;
  ref_ptr<Context> context = Link(options);
  ASSERT_TRUE(context);
  std::vector<Value> results;
  Status status = Call(context.get(), "loop", {Value::I32(10)}, &results);
  ASSERT_TRUE(status.ok()) << StatusText(status);
  EXPECT_EQ(results[0].i32, 45);
  // The budget is per call, so the same call runs again...
  ASSERT_TRUE(Call(context.get(), "loop", {Value::I32(10)}, &results).ok());
  // ...but one more iteration does not fit.
  status = Call(context.get(), "loop", {Value::I32(11)}, &results);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("instruction budget of 43 instructions exhausted"));
  EXPECT_THAT(status.message(), HasSubstr("at m.loop+0x"));
  ExpectUsable(context.get());
}

TEST_F(LimitsTest, EndlessLoopHitsTheInstructionBudget) {
  ContextOptions options;
  options.max_instructions = 10000000;
  ref_ptr<Context> context = Link(options);
  ASSERT_TRUE(context);
  std::vector<Value> results;
  Status status = Call(context.get(), "forever", {}, &results);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("instruction budget of 10000000 instructions"));
  ExpectUsable(context.get());
}

TEST_F(LimitsTest, EndlessLoopHitsTheTimeLimit) {
  ContextOptions options;
  options.timeout_ns = 50 * 1000 * 1000;
  ref_ptr<Context> context = Link(options);
  ASSERT_TRUE(context);
  std::vector<Value> results;
  const int64_t start = platform::MonotonicNanos();
  Status status = Call(context.get(), "forever", {}, &results);
  const int64_t elapsed_ms = (platform::MonotonicNanos() - start) / 1000000;
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("call ran past its time limit of 50000 us"));
  EXPECT_THAT(status.message(), HasSubstr("at m.forever+0x"));
  EXPECT_GE(elapsed_ms, 50);
  EXPECT_LT(elapsed_ms, 5000);
  // The limit is per call: a short call afterwards is fine.
  ExpectUsable(context.get());
}

TEST_F(LimitsTest, InterruptFromAnotherThreadCancelsTheCall) {
  std::atomic<bool> interrupt{false};
  ContextOptions options;
  options.interrupt = &interrupt;
  ref_ptr<Context> context = Link(options);
  ASSERT_TRUE(context);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    context->Interrupt();
  });
  std::vector<Value> results;
  Status status = Call(context.get(), "forever", {}, &results);
  stopper.join();
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  EXPECT_THAT(status.message(), HasSubstr("interrupted by the application"));
  EXPECT_THAT(status.message(), HasSubstr("at m.forever+0x"));
  EXPECT_FALSE(interrupt.load());  // Consumed.
  ExpectUsable(context.get());

  // Raised between calls: the next call stops at once, the one after runs.
  interrupt.store(true);
  status = Call(context.get(), "answer", {}, &results);
  EXPECT_EQ(status.code(), StatusCode::kCancelled);
  ExpectUsable(context.get());
}

TEST_F(LimitsTest, StackSizeIsConfigurable) {
  ContextOptions options;
  options.stack_size = 512;
  auto context = Context::Create(instance_.get(), std::vector<Module*>{app_.module.get()},
                                 options, Allocator::Default());
  EXPECT_EQ(context.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(context.status().message(), HasSubstr("stack size 512 is too small"));
  options.stack_size = 1024;
  ref_ptr<Context> small = Link(options);
  ASSERT_TRUE(small);
  ExpectUsable(small.get());
}

}  // namespace
}  // namespace osprey::vm
