// Context linking, native modules, ref types, the invocation API, failures
// with backtraces, stack limits and steady-state allocation.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using testing::LoadAssembly;
using testing::StatusText;

constexpr RefType kWidgetType{"test.widget"};
constexpr RefType kGadgetType{"test.gadget"};

class Widget final : public RefObject {
 public:
  explicit Widget(int32_t value) : value(value) {}
  int32_t value;
};

// test.make_widget(i32) -> ref, test.widget_value(ref) -> i32,
// test.add(i64, f32) -> (i64, f32), test.caller_rodata_count() -> i32.
Status MakeWidget(NativeCall& call) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<Widget> w, MakeRef<Widget>(call.allocator(), call.i32(0)));
  call.set_ref(0, Ref::FromRefPtr(std::move(w), &kWidgetType));
  return OkStatus();
}
Status WidgetValue(NativeCall& call) {
  Widget* w = nullptr;
  OSPREY_RETURN_IF_ERROR(call.GetRef(0, &kWidgetType, &w));
  call.set_i32(0, w->value);
  return OkStatus();
}
Status Add(NativeCall& call) {
  call.set_i64(0, call.i64(0) + 1);
  call.set_f32(1, call.f32(1) * 2);
  return OkStatus();
}
Status CallerRodataCount(NativeCall& call) {
  call.set_i32(0, call.caller() ? int32_t(call.caller()->rodata_count()) : -1);
  return OkStatus();
}
// Calls back into the VM: app.double(x) + 1.
Status Reenter(NativeCall& call) {
  OSPREY_ASSIGN_OR_RETURN(Function fn, call.context()->LookupFunction("app.double"));
  Value args[] = {Value::I32(call.i32(0))};
  Value results[1];
  OSPREY_RETURN_IF_ERROR(call.context()->Invoke(fn, args, results), "re-entering app.double");
  call.set_i32(0, results[0].i32 + 1);
  return OkStatus();
}
constexpr NativeFunction kTestFunctions[] = {
    {"reenter", "i:i", Reenter},
    {"make_widget", "i:r", MakeWidget},
    {"widget_value", "r:i", WidgetValue},
    {"add", "If:If", Add},
    {"caller_rodata_count", ":i", CallerRodataCount},
};

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create(Allocator::Default());
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(*instance);
    ASSERT_TRUE(instance_->RegisterRefType(&kWidgetType).ok());
    auto native = NativeModule::Create("test", kTestFunctions, Allocator::Default());
    ASSERT_TRUE(native.ok()) << StatusText(native.status());
    native_ = std::move(*native);
  }

  StatusOr<ref_ptr<Context>> Link(std::vector<Module*> modules, ContextOptions options = {}) {
    return Context::Create(instance_.get(), modules, options, Allocator::Default());
  }

  ref_ptr<Instance> instance_;
  ref_ptr<NativeModule> native_;
};

constexpr char kCaller[] = R"asm(
module @app version 3
import @test.make_widget(i32) -> (ref)
import @test.widget_value(ref) -> (i32)
import @test.add(i64, f32) -> (i64, f32)
import @test.caller_rodata_count() -> (i32)
rodata @blob align 16 text "abc"

func @roundtrip(i32) -> (i32) regs(i=2, r=1) export {
  call @test.make_widget(%i0) -> (%r0)
  call @test.widget_value(%r0) -> (%i1)
  return %i1
}
func @make(i32) -> (ref) regs(i=1, r=1) export {
  call @test.make_widget(%i0) -> (%r0)
  return %r0
}
func @value_of(ref) -> (i32) regs(i=1, r=1) export {
  call @test.widget_value(%r0) -> (%i0)
  return %i0
}
func @add(i64, f32) -> (i64, f32) regs(l=2, f=2) export {
  call @test.add(%l0, %f0) -> (%l1, %f1)
  return %l1, %f1
}
func @rodata_count() -> (i32) regs(i=1) export {
  call @test.caller_rodata_count() -> (%i0)
  return %i0
}
)asm";

TEST_F(ContextTest, CallsNativeFunctionsWithRefs) {
  auto app = LoadAssembly(kCaller);
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  auto context = Link({native_.get(), app->module.get()});
  ASSERT_TRUE(context.ok()) << StatusText(context.status());

  auto fn = (*context)->LookupFunction("app.roundtrip");
  ASSERT_TRUE(fn.ok());
  EXPECT_STREQ(fn->signature_text(), "i:i");
  Value args[] = {Value::I32(41)};
  Value results[1];
  ASSERT_TRUE((*context)->Invoke(*fn, args, results).ok());
  EXPECT_EQ(results[0].type, ValueType::kI32);
  EXPECT_EQ(results[0].i32, 41);

  // A ref result survives the call with exactly the caller's reference.
  auto make = (*context)->LookupFunction("app.make");
  ASSERT_TRUE(make.ok());
  ASSERT_TRUE((*context)->Invoke(*make, args, results).ok());
  ASSERT_EQ(results[0].type, ValueType::kRef);
  Widget* w = results[0].ref.As<Widget>(&kWidgetType);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->value, 41);
  EXPECT_EQ(w->ref_count(), 1u);

  auto add = (*context)->LookupFunction("app", "add");
  ASSERT_TRUE(add.ok());
  Value add_args[] = {Value::I64(9), Value::F32(1.5f)};
  Value add_results[2];
  ASSERT_TRUE((*context)->Invoke(*add, add_args, add_results).ok());
  EXPECT_EQ(add_results[0].i64, 10);
  EXPECT_EQ(add_results[1].f32, 3.0f);

  auto count = (*context)->LookupFunction("app.rodata_count");
  ASSERT_TRUE(count.ok());
  Value count_result[1];
  ASSERT_TRUE((*context)->Invoke(*count, {}, count_result).ok());
  EXPECT_EQ(count_result[0].i32, 1);  // NativeCall::caller() is the app module.

  // Native functions can be invoked directly too (no bytecode caller).
  auto direct = (*context)->LookupFunction("test.caller_rodata_count");
  ASSERT_TRUE(direct.ok());
  ASSERT_TRUE((*context)->Invoke(*direct, {}, count_result).ok());
  EXPECT_EQ(count_result[0].i32, -1);
}

TEST_F(ContextTest, NativeFunctionsMayReenterTheContext) {
  auto app = LoadAssembly(R"asm(
module @app
import @test.reenter(i32) -> (i32)
func @double(i32) -> (i32) regs(i=1) export {
  add.i32 %i0, %i0, %i0
  check.nz %i0, OUT_OF_RANGE, "zero"
  return %i0
}
func @main(i32) -> (i32) regs(i=2) export {
  call @test.reenter(%i0) -> (%i1)
  add.imm.i32 %i1, %i1, 100
  return %i1
}
)asm");
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  auto context = Link({native_.get(), app->module.get()});
  ASSERT_TRUE(context.ok()) << StatusText(context.status());
  auto main = (*context)->LookupFunction("app.main");
  ASSERT_TRUE(main.ok());
  Value args[] = {Value::I32(20)};
  Value results[1];
  ASSERT_TRUE((*context)->Invoke(*main, args, results).ok());
  EXPECT_EQ(results[0].i32, 141);
  // An error in the nested invocation carries both backtraces.
  Value zero[] = {Value::I32(0)};
  Status status = (*context)->Invoke(*main, zero, results);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  std::string message = status.message();
  EXPECT_NE(message.find("at app.double+0x"), std::string::npos) << message;
  EXPECT_NE(message.find("re-entering app.double"), std::string::npos) << message;
  EXPECT_NE(message.find("at app.main+0x0"), std::string::npos) << message;
  EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
}

TEST_F(ContextTest, WrongRefTypeIsInvalidArgument) {
  auto app = LoadAssembly(kCaller);
  ASSERT_TRUE(app.ok());
  auto context = Link({native_.get(), app->module.get()});
  ASSERT_TRUE(context.ok());
  auto fn = (*context)->LookupFunction("app.value_of");
  ASSERT_TRUE(fn.ok());
  auto list = List::Create(1, Allocator::Default());
  ASSERT_TRUE(list.ok());
  Value args[] = {Value::FromRef(Ref::FromRefPtr(std::move(*list), List::type()))};
  Value results[1];
  Status status = (*context)->Invoke(*fn, args, results);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  std::string message = status.message();
  EXPECT_NE(message.find("argument 0: expected a 'test.widget' ref, got 'vm.list'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("calling native function 'test.widget_value'"), std::string::npos);
  EXPECT_NE(message.find("at app.value_of+0x"), std::string::npos) << message;

  Value null_args[] = {Value::FromRef(Ref())};
  status = (*context)->Invoke(*fn, null_args, results);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("got null"), std::string::npos);
  EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
}

TEST_F(ContextTest, InvokeChecksArguments) {
  auto app = LoadAssembly(kCaller);
  ASSERT_TRUE(app.ok());
  auto context = Link({native_.get(), app->module.get()});
  ASSERT_TRUE(context.ok());
  auto fn = (*context)->LookupFunction("app.roundtrip");
  ASSERT_TRUE(fn.ok());
  Value results[1];
  Value two[] = {Value::I32(1), Value::I32(2)};
  Status status = (*context)->Invoke(*fn, two, results);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("takes 1 arguments, got 2"), std::string::npos);
  Value wrong[] = {Value::F32(1)};
  status = (*context)->Invoke(*fn, wrong, results);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("argument 0: expected i32, got f32"),
            std::string::npos)
      << status.message();
  Value one[] = {Value::I32(1)};
  status = (*context)->Invoke(*fn, one, {});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);

  EXPECT_EQ((*context)->LookupFunction("app.nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*context)->LookupFunction("nope.main").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*context)->LookupFunction("nodot").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ContextTest, MissingImportIsNotFound) {
  auto app = LoadAssembly(R"asm(
module @app
import @test.does_not_exist(i32) -> (i32)
func @f() {
  return
}
)asm");
  ASSERT_TRUE(app.ok());
  auto context = Link({native_.get(), app->module.get()});
  EXPECT_EQ(context.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(context.status().message()).find("import 'test.does_not_exist'"),
            std::string::npos)
      << context.status().message();

  // No module of that name at all.
  context = Link({app->module.get()});
  EXPECT_EQ(context.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(context.status().message()).find("no module named 'test'"),
            std::string::npos);
}

TEST_F(ContextTest, ImportSignatureMismatchIsInvalidArgument) {
  auto app = LoadAssembly(R"asm(
module @app
import @test.make_widget(i64) -> (ref)
func @f() {
  return
}
)asm");
  ASSERT_TRUE(app.ok());
  auto context = Link({native_.get(), app->module.get()});
  EXPECT_EQ(context.status().code(), StatusCode::kInvalidArgument);
  std::string message = context.status().message();
  EXPECT_NE(message.find("'I:r'"), std::string::npos) << message;
  EXPECT_NE(message.find("'i:r'"), std::string::npos) << message;
}

TEST_F(ContextTest, RejectsDuplicateModuleNamesAndBadNativeTables) {
  auto context = Link({native_.get(), native_.get()});
  EXPECT_EQ(context.status().code(), StatusCode::kInvalidArgument);

  static constexpr NativeFunction kDuplicate[] = {{"f", ":", CallerRodataCount},
                                                  {"f", ":", CallerRodataCount}};
  EXPECT_EQ(NativeModule::Create("dup", kDuplicate, Allocator::Default()).status().code(),
            StatusCode::kInvalidArgument);
  static constexpr NativeFunction kBadSignature[] = {{"f", "ix", CallerRodataCount}};
  EXPECT_EQ(NativeModule::Create("bad", kBadSignature, Allocator::Default()).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NativeModule::Create("a.b", kTestFunctions, Allocator::Default()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ContextTest, CallsAcrossBytecodeModules) {
  auto lib = LoadAssembly(R"asm(
module @lib
globals i32=1
func @twice(i32) -> (i32) regs(i=2) export {
  add.i32 %i1, %i0, %i0
  global.store.i32 %i1, 0
  return %i1
}
func @last() -> (i32) regs(i=1) export {
  global.load.i32 %i0, 0
  return %i0
}
)asm");
  ASSERT_TRUE(lib.ok()) << StatusText(lib.status());
  auto app = LoadAssembly(R"asm(
module @app
import @lib.twice(i32) -> (i32)
func @quad(i32) -> (i32) regs(i=1) export {
  call @lib.twice(%i0) -> (%i0)
  call @lib.twice(%i0) -> (%i0)
  return %i0
}
)asm");
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  auto context = Link({lib->module.get(), app->module.get()});
  ASSERT_TRUE(context.ok()) << StatusText(context.status());
  auto quad = (*context)->LookupFunction("app.quad");
  ASSERT_TRUE(quad.ok());
  Value args[] = {Value::I32(5)};
  Value results[1];
  ASSERT_TRUE((*context)->Invoke(*quad, args, results).ok());
  EXPECT_EQ(results[0].i32, 20);
  // The callee ran with its own module's globals.
  auto last = (*context)->LookupFunction("lib.last");
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE((*context)->Invoke(*last, {}, results).ok());
  EXPECT_EQ(results[0].i32, 20);
}

TEST_F(ContextTest, FailMessageInterpolatesRegistersWithLocationAndBacktrace) {
  auto app = LoadAssembly(R"asm(
module @model
func @check_input(i64) regs(l=2) {
  const.i64 %l1, 224
  .loc "node conv1 (input 0)"
  check.eq.i64 %l0, %l1, INVALID_ARGUMENT, "input 0 dim 2: expected {}, got {}", %l1, %l0
  return
}
func @main(i64) regs(l=1) export {
  .loc "graph entry"
  call @check_input(%l0)
  return
}
)asm");
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  auto context = Link({app->module.get()});
  ASSERT_TRUE(context.ok());
  auto main = (*context)->LookupFunction("model.main");
  ASSERT_TRUE(main.ok());
  Value ok_args[] = {Value::I64(224)};
  EXPECT_TRUE((*context)->Invoke(*main, ok_args, {}).ok());
  Value bad_args[] = {Value::I64(100)};
  Status status = (*context)->Invoke(*main, bad_args, {});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(status.message()),
            "input 0 dim 2: expected 224, got 100;\n"
            "  at model.check_input+0xb (node conv1 (input 0));\n"
            "  at model.main+0x0 (graph entry)")
      << status.message();
  EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
}

TEST_F(ContextTest, FailFormatsEveryBank) {
  auto app = LoadAssembly(R"asm(
module @m
func @f() regs(i=1, l=1, f=1, d=1, r=2) export {
  const.i32 %i0, -3
  const.i64 %l0, 5000000000
  const.f32 %f0, 0.5
  const.f64 %d0, 2.25
  const.i32 %i0, -3
  list.alloc %r1, %i0
  fail UNIMPLEMENTED, "{} {} {} {} {} {} {{}", %i0, %l0, %f0, %d0, %r0, %r1, %i0
}
)asm");
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  auto context = Link({app->module.get()});
  ASSERT_TRUE(context.ok());
  auto f = (*context)->LookupFunction("m.f");
  ASSERT_TRUE(f.ok());
  Status status = (*context)->Invoke(*f, {}, {});
  // list.alloc with a negative capacity fails first.
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("list capacity -3 is negative"), std::string::npos);

  auto app2 = LoadAssembly(R"asm(
module @m
func @f() regs(i=1, l=1, f=1, d=1, r=2) export {
  const.i32 %i0, -3
  const.i64 %l0, 5000000000
  const.f32 %f0, 0.5
  const.f64 %d0, 2.25
  const.i32 %i0, 2
  list.alloc %r1, %i0
  const.i32 %i0, -3
  fail UNIMPLEMENTED, "{} {} {} {} {} {} {{}", %i0, %l0, %f0, %d0, %r0, %r1, %i0
}
)asm");
  ASSERT_TRUE(app2.ok()) << StatusText(app2.status());
  context = Link({app2->module.get()});
  ASSERT_TRUE(context.ok());
  f = (*context)->LookupFunction("m.f");
  ASSERT_TRUE(f.ok());
  status = (*context)->Invoke(*f, {}, {});
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  std::string message = status.message();
  EXPECT_EQ(message.substr(0, message.find(';')), "-3 5000000000 0.5 2.25 null vm.list {-3");
}

constexpr char kRecursive[] = R"asm(
module @rec
func @depth(i32) -> (i32) regs(i=3) export {
  br_if %i0, ^recurse
  return %i0
^recurse:
  add.imm.i32 %i1, %i0, -1
  call @depth(%i1) -> (%i2)
  add.imm.i32 %i2, %i2, 1
  return %i2
}
)asm";

TEST_F(ContextTest, DeepRecursionHitsDepthLimitNotACrash) {
  auto app = LoadAssembly(kRecursive);
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  ContextOptions options;
  options.max_call_depth = 100;
  auto context = Link({app->module.get()}, options);
  ASSERT_TRUE(context.ok());
  auto fn = (*context)->LookupFunction("rec.depth");
  ASSERT_TRUE(fn.ok());
  Value results[1];
  Value args[] = {Value::I32(99)};  // 100 frames: fits exactly.
  ASSERT_TRUE((*context)->Invoke(*fn, args, results).ok());
  EXPECT_EQ(results[0].i32, 99);
  Value deep[] = {Value::I32(100)};
  Status status = (*context)->Invoke(*fn, deep, results);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(status.message()).find("VM stack overflow calling 'rec.depth'"),
            std::string::npos)
      << status.message();
  EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
  // The context stays usable.
  ASSERT_TRUE((*context)->Invoke(*fn, args, results).ok());
  EXPECT_EQ(results[0].i32, 99);
}

TEST_F(ContextTest, StackBytesLimitIsResourceExhausted) {
  auto app = LoadAssembly(kRecursive);
  ASSERT_TRUE(app.ok());
  ContextOptions options;
  options.stack_size = 4096;
  options.max_call_depth = 1u << 20;
  auto context = Link({app->module.get()}, options);
  ASSERT_TRUE(context.ok());
  auto fn = (*context)->LookupFunction("rec.depth");
  ASSERT_TRUE(fn.ok());
  Value args[] = {Value::I32(100000)};
  Value results[1];
  Status status = (*context)->Invoke(*fn, args, results);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << StatusText(status);
  EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
}

TEST_F(ContextTest, SteadyStateInvocationDoesNotAllocate) {
  auto app = LoadAssembly(R"asm(
module @m
func @work(i32, ref) -> (i32, ref) regs(i=3, r=2) export {
  const.i32 %i1, 0
^loop:
  add.imm.i32 %i1, %i1, 1
  cmp.lt.i32.s %i2, %i1, %i0
  br_if %i2, ^loop
  call @id(%r0) -> (%r1)
  return %i1, %r1
}
func @id(ref) -> (ref) regs(r=1) {
  return %r0
}
)asm");
  ASSERT_TRUE(app.ok());
  CountingAllocator counting(Allocator::Default());
  auto context = Context::Create(instance_.get(), std::vector<Module*>{app->module.get()}, {},
                                 &counting);
  ASSERT_TRUE(context.ok());
  auto fn = (*context)->LookupFunction("m.work");
  ASSERT_TRUE(fn.ok());
  auto list = List::Create(0, Allocator::Default());
  ASSERT_TRUE(list.ok());
  Value args[] = {Value::I32(50), Value::FromRef(Ref(list->get(), List::type()))};
  Value results[2];
  size_t before = counting.allocations();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE((*context)->Invoke(*fn, args, results).ok());
  }
  EXPECT_EQ(counting.allocations(), before);
  EXPECT_EQ(results[0].i32, 50);
  EXPECT_EQ(results[1].ref.get(), list->get());
  results[1].ref.reset();
  args[1].ref.reset();
  EXPECT_EQ((*list)->ref_count(), 1u);
}

TEST_F(ContextTest, InitializerFailureAbortsCreation) {
  auto app = LoadAssembly(R"asm(
module @m
func @init() {
  fail FAILED_PRECONDITION, "device not ready"
}
initializer @init
)asm");
  ASSERT_TRUE(app.ok()) << StatusText(app.status());
  auto context = Link({app->module.get()});
  EXPECT_EQ(context.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(context.status().message()).find("running initializer of module 'm'"),
            std::string::npos);
}

TEST_F(ContextTest, ExpectModuleReportsMismatches) {
  // Guards the assembly test harness: a wrong expectation must fail.
  auto app = LoadAssembly(R"asm(
module @m
import @expect.eq_i32(i32, i32)
func @f() regs(i=2) export {
  const.i32 %i0, 1
  const.i32 %i1, 2
  call @expect.eq_i32(%i0, %i1)
  return
}
)asm");
  ASSERT_TRUE(app.ok());
  ref_ptr<NativeModule> expect = testing::CreateExpectModule();
  auto context = Link({expect.get(), app->module.get()});
  ASSERT_TRUE(context.ok());
  auto f = (*context)->LookupFunction("m.f");
  ASSERT_TRUE(f.ok());
  Status status = (*context)->Invoke(*f, {}, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(status.message()).find("got 1, expected 2"), std::string::npos);
}

TEST(InstanceTest, RefTypeRegistry) {
  auto instance = Instance::Create(Allocator::Default());
  ASSERT_TRUE(instance.ok());
  EXPECT_EQ((*instance)->LookupRefType("vm.list"), List::type());
  EXPECT_EQ((*instance)->LookupRefType("vm.buffer"), Buffer::type());
  EXPECT_EQ((*instance)->LookupRefType("test.widget"), nullptr);
  ASSERT_TRUE((*instance)->RegisterRefType(&kWidgetType).ok());
  EXPECT_TRUE((*instance)->RegisterRefType(&kWidgetType).ok());  // Idempotent.
  EXPECT_EQ((*instance)->LookupRefType("test.widget"), &kWidgetType);
  static constexpr RefType kImpostor{"test.widget"};
  EXPECT_EQ((*instance)->RegisterRefType(&kImpostor).code(), StatusCode::kAlreadyExists);
  static constexpr RefType kNameless{""};
  EXPECT_EQ((*instance)->RegisterRefType(&kNameless).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*instance)->IsRegistered(&kWidgetType));
  EXPECT_FALSE((*instance)->IsRegistered(&kGadgetType));
}

}  // namespace
}  // namespace osprey::vm
