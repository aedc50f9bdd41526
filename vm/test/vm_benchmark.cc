// VM benchmarks: cost of invoking an exported function from C++, of
// bytecode->bytecode and bytecode->native calls, and interpreter throughput
// on an arithmetic loop (reported as instructions per second).
#include <cstdio>
#include <cstdlib>

#include "benchmark/benchmark.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

constexpr char kBench[] = R"asm(
module @bench
import @native.nop(i32) -> (i32)

func @empty() export {
  return
}

func @identity(i32) -> (i32) export {
  return %i0
}

// 4 instructions per iteration: add, add.imm, cmp, br_if.
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

func @leaf(i32) -> (i32) {
  return %i0
}

// One internal call plus 3 loop instructions per iteration.
func @call_loop(i32) -> (i32) regs(i=4) export {
  const.i32 %i1, 0
^loop:
  call @leaf(%i1) -> (%i2)
  add.imm.i32 %i1, %i1, 1
  cmp.lt.i32.s %i3, %i1, %i0
  br_if %i3, ^loop
  return %i2
}

func @native_loop(i32) -> (i32) regs(i=4) export {
  const.i32 %i1, 0
^loop:
  call @native.nop(%i1) -> (%i2)
  add.imm.i32 %i1, %i1, 1
  cmp.lt.i32.s %i3, %i1, %i0
  br_if %i3, ^loop
  return %i2
}
)asm";

Status Nop(NativeCall& call) {
  call.set_i32(0, call.i32(0));
  return OkStatus();
}
constexpr NativeFunction kNative[] = {{"nop", "i:i", Nop}};

struct Fixture {
  testing::LoadedModule loaded;
  ref_ptr<Instance> instance;
  ref_ptr<NativeModule> native;
  ref_ptr<Context> context;

  Fixture() {
    auto l = testing::LoadAssembly(kBench);
    if (!l.ok()) Die(l.status());
    loaded = std::move(*l);
    instance = std::move(Instance::Create(Allocator::Default()).value());
    native = std::move(NativeModule::Create("native", kNative, Allocator::Default()).value());
    Module* modules[] = {native.get(), loaded.module.get()};
    auto c = Context::Create(instance.get(), modules, {}, Allocator::Default());
    if (!c.ok()) Die(c.status());
    context = std::move(*c);
  }
  Function Lookup(const char* name) { return std::move(context->LookupFunction(name).value()); }
  static void Die(const Status& status) {
    fprintf(stderr, "%s\n", testing::StatusText(status).c_str());
    abort();
  }
};

Fixture& GetFixture() {
  static Fixture* fixture = new Fixture();
  return *fixture;
}

void BM_InvokeEmptyFunction(benchmark::State& state) {
  Fixture& f = GetFixture();
  Function fn = f.Lookup("bench.empty");
  for (auto _ : state) {
    Status status = f.context->Invoke(fn, {}, {});
    if (!status.ok()) Fixture::Die(status);
  }
}
BENCHMARK(BM_InvokeEmptyFunction);

void BM_InvokeIdentityI32(benchmark::State& state) {
  Fixture& f = GetFixture();
  Function fn = f.Lookup("bench.identity");
  Value args[] = {Value::I32(7)};
  Value results[1];
  for (auto _ : state) {
    Status status = f.context->Invoke(fn, args, results);
    if (!status.ok()) Fixture::Die(status);
    benchmark::DoNotOptimize(results[0].i32);
  }
}
BENCHMARK(BM_InvokeIdentityI32);

void RunLoop(benchmark::State& state, const char* name, int64_t instructions_per_iteration) {
  Fixture& f = GetFixture();
  Function fn = f.Lookup(name);
  int32_t n = int32_t(state.range(0));
  Value args[] = {Value::I32(n)};
  Value results[1];
  for (auto _ : state) {
    Status status = f.context->Invoke(fn, args, results);
    if (!status.ok()) Fixture::Die(status);
    benchmark::DoNotOptimize(results[0].i32);
  }
  state.counters["instructions/s"] = benchmark::Counter(
      double(n) * double(instructions_per_iteration) * double(state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["iterations/s"] =
      benchmark::Counter(double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_ArithmeticLoop(benchmark::State& state) { RunLoop(state, "bench.loop", 4); }
BENCHMARK(BM_ArithmeticLoop)->Arg(100000);

// call + return + 3 loop instructions = 5 instructions per iteration.
void BM_InternalCallLoop(benchmark::State& state) { RunLoop(state, "bench.call_loop", 5); }
BENCHMARK(BM_InternalCallLoop)->Arg(100000);

// call.import + 3 loop instructions per iteration.
void BM_NativeCallLoop(benchmark::State& state) { RunLoop(state, "bench.native_loop", 4); }
BENCHMARK(BM_NativeCallLoop)->Arg(100000);

}  // namespace
}  // namespace osprey::vm
