// Tests of the embedding API through its C++ wrapper: handles, statuses,
// buffer views, module loading from memory and calls of modules assembled
// in the test.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/embed/file_mapping.h"
#include "runtime/embed/osprey.hpp"
#include "tests/executables/test_executables.h"
#include "vm/asm/assembler.h"
#include "vm/builder/module_builder.h"

namespace osprey::embed {
namespace {

using ::testing::HasSubstr;

// Returns its input after checking it is a ?x3xf32 tensor, and a scalar
// computed from i32/i64/f32/f64 arguments.
constexpr char kEchoModule[] = R"(
module @echo version 1
import @hal.buffer_view.assert(ref, ref, i32, ref)
import @hal.buffer_view.dim(ref, i32) -> (i64)
rodata @shape align 8 hex "ffffffffffffffff0300000000000000"
rodata @name text "input 'rows'"

func @main(ref) -> (ref, i64) regs(i=2, l=1, r=3) export {
  const.i32 %i0, 50331680
  const.ref.rodata %r1, @shape
  const.ref.rodata %r2, @name
  call.import @hal.buffer_view.assert(%r0, %r2, %i0, %r1)
  const.i32 %i1, 0
  call.import @hal.buffer_view.dim(%r0, %i1) -> (%l0)
  return %r0, %l0
}

func @mix(i32, i64, f32, f64) -> (f64) regs(i=1, l=1, f=1, d=3) export {
  cast.si32.f64 %d1, %i0
  cast.si64.f64 %d2, %l0
  add.f64 %d1, %d1, %d2
  ext.f32.f64 %d2, %f0
  add.f64 %d1, %d1, %d2
  add.f64 %d0, %d1, %d0
  return %d0
}
)";

// Shaped like an osprey-compile module with a 64-byte arena: it records
// arena_size/arena_alignment and exports set_arena(hal.buffer), which checks
// the length and keeps the buffer in a module global. fill_arena writes a
// 4-byte pattern over the arena on the device; arena_length returns the
// length of the arena in use; fail_after_taking_arena empties the global and
// fails, as a compiled call that fails mid-way does.
constexpr char kArenaModule[] = R"(
module @arena version 1
import @hal.buffer.length(ref) -> (i64)
import @hal.device() -> (ref)
import @hal.command_buffer.create(ref, i32) -> (ref)
import @hal.command_buffer.begin(ref)
import @hal.command_buffer.fill_buffer(ref, ref, i64, i64, i32, i32)
import @hal.command_buffer.end(ref)
import @hal.device.queue.execute_sync(ref, ref)
attribute "arena_size" "64"
attribute "arena_alignment" "16"
globals ref=1

func @set_arena(ref) regs(i=1, l=2, r=1) export {
  call.import @hal.buffer.length(%r0) -> (%l0)
  const.i64 %l1, 64
  cmp.ge.i64.s %i0, %l0, %l1
  check.nz %i0, INVALID_ARGUMENT, "arena buffer of {} bytes is smaller than the {} bytes the module needs", %l0, %l1
  global.store.ref %r0, 0
  return
}

func @arena_length() -> (i64) regs(l=1, r=1) export {
  global.load.ref %r0, 0
  call.import @hal.buffer.length(%r0) -> (%l0)
  return %l0
}

func @fail_after_taking_arena() regs(r=1) export {
  const.ref.null %r0
  global.store.ref %r0, 0
  fail INTERNAL, "kernel failed"
}

func @fill_arena(i32) regs(i=3, l=2, r=3) export {
  global.load.ref %r0, 0
  call.import @hal.device() -> (%r1)
  const.i32 %i1, 1
  call.import @hal.command_buffer.create(%r1, %i1) -> (%r2)
  call.import @hal.command_buffer.begin(%r2)
  const.i64 %l0, 0
  const.i64 %l1, 64
  const.i32 %i2, 4
  call.import @hal.command_buffer.fill_buffer(%r2, %r0, %l0, %l1, %i0, %i2)
  call.import @hal.command_buffer.end(%r2)
  call.import @hal.device.queue.execute_sync(%r1, %r2)
  return
}
)";

// A module with attributes but no arena.
constexpr char kNoArenaModule[] = R"(
module @plain version 1
attribute "arena_size" "0"
attribute "arena_alignment" "1"
attribute "producer" "hand-written"

func @nothing() regs(i=1) export {
  return
}
)";

class EmbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Instance::Create(&instance_).ok());
    Status status = Device::Create(instance_, "cpu-sync", {}, &device_);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_TRUE(Session::Create(instance_, device_, &session_).ok());
    auto bytes = vm::AssembleModule(kEchoModule);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    module_ = vm::AlignedBytes(*bytes);
  }

  BufferView Matrix(int64_t rows, int64_t cols) {
    std::vector<float> data(size_t(rows * cols));
    for (size_t i = 0; i < data.size(); ++i) data[i] = float(i);
    const int64_t shape[2] = {rows, cols};
    BufferView view;
    Status status = BufferView::Create(device_, shape, OSPREY_ELEMENT_TYPE_FLOAT32, data.data(),
                                       data.size() * 4, &view);
    EXPECT_TRUE(status.ok()) << status.message();
    return view;
  }

  Instance instance_;
  Device device_;
  Session session_;
  vm::AlignedBytes module_;
};

TEST_F(EmbedTest, HandlesRetainAndRelease) {
  EXPECT_STREQ(device_.name(), "cpu-sync");
  Device copy = device_;  // Retains.
  EXPECT_EQ(copy.get(), device_.get());
  Device moved = std::move(copy);
  EXPECT_FALSE(copy);
  EXPECT_TRUE(moved);
  EXPECT_GE(instance_.driver_count(), 1u);
}

// A module compiled for another target is refused when it is loaded, with
// the formats it carries; one runnable variant is enough.
TEST_F(EmbedTest, RefusesModulesWhoseExecutablesTheDeviceCannotRun) {
  auto foreign = vm::AssembleModule(R"(
module @foreign version 1
executable "elf-notacpu" @k align 16 hex "7f454c46"
func @main() -> () regs() export {
  return
}
)");
  ASSERT_TRUE(foreign.ok()) << foreign.status().message();
  vm::AlignedBytes foreign_bytes(*foreign);
  Status status = session_.LoadModuleMemory(foreign_bytes.data(), foreign_bytes.size());
  EXPECT_EQ(status.code(), OSPREY_STATUS_UNIMPLEMENTED);
  EXPECT_THAT(status.message(),
              HasSubstr("no device of the session (1, the first 'cpu-sync') can run any of the 1 "
                        "executable(s) of module 'foreign' (formats: elf-notacpu)"));
  Function main_fn;
  EXPECT_EQ(session_.LookupFunction("foreign.main", &main_fn).code(),
            OSPREY_STATUS_FAILED_PRECONDITION);

  auto variants = vm::AssembleModule(R"(
module @variants version 1
executable "elf-notacpu" @k align 16 hex "7f454c46"
executable "static" @s align 16 text "embed_test_library"
func @main() -> () regs() export {
  return
}
)");
  ASSERT_TRUE(variants.ok()) << variants.status().message();
  vm::AlignedBytes variant_bytes(*variants);
  status = session_.LoadModuleMemory(variant_bytes.data(), variant_bytes.size());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST_F(EmbedTest, TrimsDevices) {
  EXPECT_EQ(osprey_status_code(osprey_device_trim(device_.get())), OSPREY_STATUS_OK);
  osprey_status_t* status = osprey_device_trim(nullptr);
  EXPECT_EQ(osprey_status_code(status), OSPREY_STATUS_INVALID_ARGUMENT);
  osprey_status_free(status);
}

TEST_F(EmbedTest, BufferViewsRoundTrip) {
  BufferView view = Matrix(2, 3);
  EXPECT_EQ(view.rank(), 2u);
  EXPECT_EQ(view.dim(0), 2);
  EXPECT_EQ(view.dim(5), -1);
  EXPECT_EQ(view.element_count(), 6);
  EXPECT_EQ(view.byte_length(), 24u);
  char shape[32];
  EXPECT_EQ(view.FormatShape(shape, sizeof(shape)), 7u);
  EXPECT_STREQ(shape, "2x3xf32");
  float data[6];
  ASSERT_TRUE(view.Read(data, sizeof(data)).ok());
  EXPECT_EQ(data[5], 5.0f);
  Status small = view.Read(data, 8);
  EXPECT_EQ(small.code(), OSPREY_STATUS_OUT_OF_RANGE);
  EXPECT_THAT(small.message(), HasSubstr("holds 24 bytes"));

  // Zero-filled when no data is given.
  const int64_t dims[1] = {3};
  BufferView zeros;
  ASSERT_TRUE(BufferView::Create(device_, dims, OSPREY_ELEMENT_TYPE_INT32, nullptr, 0, &zeros).ok());
  int32_t ints[3] = {7, 7, 7};
  ASSERT_TRUE(zeros.Read(ints, sizeof(ints)).ok());
  EXPECT_EQ(ints[0] | ints[1] | ints[2], 0);

  BufferView bad;
  const int64_t negative[1] = {-1};
  Status status =
      BufferView::Create(device_, negative, OSPREY_ELEMENT_TYPE_FLOAT32, nullptr, 0, &bad);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("dimension 0 is negative"));
  status = BufferView::Create(device_, dims, osprey_element_type_t(12345), nullptr, 0, &bad);
  EXPECT_THAT(status.message(), HasSubstr("element type 0x3039 is not valid"));
  const int64_t too_many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  status = BufferView::Create(device_, too_many, OSPREY_ELEMENT_TYPE_FLOAT32, nullptr, 0, &bad);
  EXPECT_THAT(status.message(), HasSubstr("rank 9 exceeds the maximum of 8"));
}

TEST_F(EmbedTest, CallsAnAssembledModuleFromMemory) {
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
  Function main_fn;
  Status status = session_.LookupFunction("echo.main", &main_fn);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_STREQ(main_fn.signature(), "r:rI");

  // Tensor and scalar results together need the value API.
  BufferView input = Matrix(5, 3);
  osprey_value_t in = {};
  in.type = OSPREY_VALUE_TYPE_BUFFER_VIEW;
  in.u.buffer_view = input.get();
  osprey_value_t out[2];
  size_t count = 0;
  Status call(osprey_function_call_values(main_fn.get(), &in, 1, out, 2, &count));
  ASSERT_TRUE(call.ok()) << call.message();
  ASSERT_EQ(count, 2u);
  BufferView echoed(out[0].u.buffer_view);
  EXPECT_EQ(echoed.get(), input.get());
  EXPECT_EQ(out[1].type, OSPREY_VALUE_TYPE_I64);
  EXPECT_EQ(out[1].u.i64, 5);

  BufferView wrong = Matrix(3, 5);
  in.u.buffer_view = wrong.get();
  Status mismatch(osprey_function_call_values(main_fn.get(), &in, 1, out, 2, &count));
  EXPECT_EQ(mismatch.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(mismatch.message(), HasSubstr("input 'rows' has shape 3x5xf32, expected ?x3xf32"));

  // The tensor-only call refuses the scalar result up front.
  BufferView outputs[2];
  Status unimplemented = main_fn.Call({&input, 1}, outputs, &count);
  EXPECT_EQ(unimplemented.code(), OSPREY_STATUS_UNIMPLEMENTED);
}

TEST_F(EmbedTest, PassesEveryScalarType) {
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
  Function mix;
  ASSERT_TRUE(session_.LookupFunction("mix", &mix).ok());
  osprey_value_t in[4] = {};
  in[0].type = OSPREY_VALUE_TYPE_I32;
  in[0].u.i32 = -3;
  in[1].type = OSPREY_VALUE_TYPE_I64;
  in[1].u.i64 = 10000000000;
  in[2].type = OSPREY_VALUE_TYPE_F32;
  in[2].u.f32 = 0.5f;
  in[3].type = OSPREY_VALUE_TYPE_F64;
  in[3].u.f64 = 0.25;
  osprey_value_t out[1];
  size_t count = 0;
  Status status(osprey_function_call_values(mix.get(), in, 4, out, 1, &count));
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(out[0].type, OSPREY_VALUE_TYPE_F64);
  EXPECT_DOUBLE_EQ(out[0].u.f64, 10000000000.0 - 3 + 0.5 + 0.25);
}

TEST_F(EmbedTest, LaterLoadsKeepEarlierFunctionsWorking) {
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
  Function before;
  ASSERT_TRUE(session_.LookupFunction("main", &before).ok());
  // A second module with the same name is refused and the session is
  // unchanged.
  Status duplicate = session_.LoadModuleMemory(module_.data(), module_.size());
  EXPECT_EQ(duplicate.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(duplicate.message(), HasSubstr("two modules are named 'echo'"));
  // A module that imports from the first one links against it.
  auto second = vm::AssembleModule(R"(
module @user version 1
import @echo.mix(i32, i64, f32, f64) -> (f64)
func @twice(f64) -> (f64) regs(i=1, l=1, f=1, d=2) export {
  const.i32 %i0, 0
  const.i64 %l0, 0
  const.f32 %f0, 0.0
  call.import @echo.mix(%i0, %l0, %f0, %d0) -> (%d1)
  add.f64 %d1, %d1, %d1
  return %d1
}
)");
  ASSERT_TRUE(second.ok()) << second.status().message();
  vm::AlignedBytes second_bytes(*second);
  Status load = session_.LoadModuleMemory(second_bytes.data(), second_bytes.size());
  ASSERT_TRUE(load.ok()) << load.message();
  Function twice;
  ASSERT_TRUE(session_.LookupFunction("twice", &twice).ok());
  osprey_value_t in = {OSPREY_VALUE_TYPE_F64, {}};
  in.u.f64 = 1.25;
  osprey_value_t out;
  size_t count = 0;
  ASSERT_TRUE(Status(osprey_function_call_values(twice.get(), &in, 1, &out, 1, &count)).ok());
  EXPECT_DOUBLE_EQ(out.u.f64, 2.5);
  // The function looked up before the second load still runs.
  BufferView input = Matrix(1, 3);
  osprey_value_t view_in = {OSPREY_VALUE_TYPE_BUFFER_VIEW, {}};
  view_in.u.buffer_view = input.get();
  osprey_value_t outs[2];
  ASSERT_TRUE(Status(osprey_function_call_values(before.get(), &view_in, 1, outs, 2, &count)).ok());
  osprey_buffer_view_release(outs[0].u.buffer_view);

  // A module whose import nobody provides is refused with the name.
  auto orphan = vm::AssembleModule(R"(
module @orphan version 1
import @nobody.thing(i32) -> (i32)
func @f(i32) -> (i32) regs(i=2) export {
  call.import @nobody.thing(%i0) -> (%i1)
  return %i1
}
)");
  ASSERT_TRUE(orphan.ok());
  vm::AlignedBytes orphan_bytes(*orphan);
  Status missing = session_.LoadModuleMemory(orphan_bytes.data(), orphan_bytes.size());
  EXPECT_EQ(missing.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(missing.message(), HasSubstr("nobody.thing"));
}

// A module built for another runtime: one of its imports (hal.device.allocatoX)
// does not exist. Linking fails after the session has already given the
// module's bytes back (the application's release callback runs, or the file
// is unmapped), and the error still names the module and the import.
constexpr char kMisspelledImportModule[] = R"(
module @misspelled version 1
import @hal.device() -> (ref)
import @hal.device.allocatoX(ref) -> (ref)
func @main() -> (ref) regs(r=2) export {
  call.import @hal.device() -> (%r0)
  call.import @hal.device.allocatoX(%r0) -> (%r1)
  return %r1
}
)";

// Overwrites the module bytes when the session releases them, so anything
// still reading them afterwards sees zeros (and ASan sees the access when
// the bytes live in a freed copy).
struct Scribbler {
  size_t size = 0;
  int calls = 0;
  static void Release(void* user_data, void* memory) {
    auto* self = static_cast<Scribbler*>(user_data);
    ++self->calls;
    std::memset(memory, 0, self->size);
  }
};

TEST_F(EmbedTest, UnlinkableModuleIsNamedAfterItsBytesAreReleased) {
  auto bytes = vm::AssembleModule(kMisspelledImportModule);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  vm::AlignedBytes module(*bytes);
  Scribbler scribbler{module.size()};
  Status status = session_.LoadModuleMemory(module.data(), module.size(), &Scribbler::Release,
                                            &scribbler);
  EXPECT_EQ(scribbler.calls, 1);
  EXPECT_EQ(status.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(status.message(), HasSubstr("import 'hal.device.allocatoX'"));
  EXPECT_THAT(status.message(), HasSubstr("linking module 'misspelled'"));

  // From a file: the mapping is gone before the error is formatted.
  const std::string path = ::testing::TempDir() + "/misspelled_import.osp";
  FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fwrite(bytes->data(), 1, bytes->size(), file), bytes->size());
  std::fclose(file);
  status = session_.LoadModuleFile(path.c_str());
  std::remove(path.c_str());
  EXPECT_EQ(status.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(status.message(), HasSubstr("linking module 'misspelled'"));
  EXPECT_THAT(status.message(), HasSubstr("module 'hal' has no export 'device.allocatoX'"));

  // The session is unchanged and still loads good modules.
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
}

// Limits from osprey_session_options_t and interrupts from another thread.
constexpr char kGreedyModule[] = R"(
module @greedy version 1
func @huge_list(i32) -> (i32) regs(i=2, r=1) export {
  const.i32 %i1, 0
  list.alloc %r0, %i1
  list.resize %r0, %i0
  list.size %i1, %r0
  return %i1
}
func @spin() regs(i=1) export {
^top:
  add.imm.i32 %i0, %i0, 1
  br ^top
}
)";

class SessionLimitsTest : public EmbedTest {
 protected:
  void Load(const osprey_session_options_t& options) {
    Status status = Session::Create(instance_, device_, options, &session_);
    ASSERT_TRUE(status.ok()) << status.message();
    auto bytes = vm::AssembleModule(kGreedyModule);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    greedy_ = vm::AlignedBytes(*bytes);
    status = session_.LoadModuleMemory(greedy_.data(), greedy_.size());
    ASSERT_TRUE(status.ok()) << status.message();
  }
  Status CallI32(const char* name, osprey_value_t* args, size_t arg_count,
                 osprey_value_t* result) {
    Function fn;
    Status status = session_.LookupFunction(name, &fn);
    if (!status.ok()) return status;
    size_t count = 0;
    return Status(osprey_function_call_values(fn.get(), args, arg_count, result, 1, &count));
  }
  vm::AlignedBytes greedy_;
};

TEST_F(SessionLimitsTest, MemoryBudgetStopsAHugeList) {
  osprey_session_options_t options = Session::Options();
  EXPECT_EQ(options.vm_stack_size, 64u * 1024);
  EXPECT_EQ(options.max_memory, size_t(64) << 20);
  options.max_memory = 1 << 20;
  Load(options);
  osprey_value_t size{OSPREY_VALUE_TYPE_I32, {.i32 = 2147483647}};
  osprey_value_t result{};
  Status status = CallI32("greedy.huge_list", &size, 1, &result);
  EXPECT_EQ(status.code(), OSPREY_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.message(), HasSubstr("VM memory budget exceeded"));
  EXPECT_THAT(status.message(), HasSubstr("at greedy.huge_list+0x"));
  size.u.i32 = 1000;
  status = CallI32("greedy.huge_list", &size, 1, &result);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(result.u.i32, 1000);
}

TEST_F(SessionLimitsTest, TimeoutAndInstructionBudgetStopASpin) {
  osprey_session_options_t options = Session::Options();
  options.timeout_ns = 30 * 1000 * 1000;
  Load(options);
  Function spin;
  ASSERT_TRUE(session_.LookupFunction("greedy.spin", &spin).ok());
  size_t count = 0;
  Status status(osprey_function_call_values(spin.get(), nullptr, 0, nullptr, 0, &count));
  EXPECT_EQ(status.code(), OSPREY_STATUS_DEADLINE_EXCEEDED);
  EXPECT_THAT(status.message(), HasSubstr("call ran past its time limit of 30000 us"));

  options = Session::Options();
  options.max_instructions = 5000;
  Load(options);
  ASSERT_TRUE(session_.LookupFunction("greedy.spin", &spin).ok());
  status = Status(osprey_function_call_values(spin.get(), nullptr, 0, nullptr, 0, &count));
  EXPECT_EQ(status.code(), OSPREY_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.message(), HasSubstr("instruction budget of 5000 instructions exhausted"));
}

TEST_F(SessionLimitsTest, InterruptStopsACallFromAnotherThread) {
  Load(Session::Options());
  Function spin;
  ASSERT_TRUE(session_.LookupFunction("greedy.spin", &spin).ok());
  // A later load relinks the session; the function looked up before it
  // still belongs to the old context and must still be interruptible.
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
  std::thread stopper([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    session_.Interrupt();
  });
  size_t count = 0;
  Status status(osprey_function_call_values(spin.get(), nullptr, 0, nullptr, 0, &count));
  stopper.join();
  EXPECT_EQ(status.code(), OSPREY_STATUS_CANCELLED);
  EXPECT_THAT(status.message(), HasSubstr("interrupted by the application"));
  EXPECT_THAT(status.message(), HasSubstr("at greedy.spin+0x"));
  osprey_value_t size{OSPREY_VALUE_TYPE_I32, {.i32 = 3}};
  osprey_value_t result{};
  ASSERT_TRUE(CallI32("greedy.huge_list", &size, 1, &result).ok());
  EXPECT_EQ(result.u.i32, 3);
}

TEST_F(EmbedTest, SessionOptionsAreChecked) {
  osprey_session_options_t options = Session::Options();
  options.vm_stack_size = 512;
  Session session;
  Status status = Session::Create(instance_, device_, options, &session);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("VM stack size 512 is too small"));
}

TEST_F(EmbedTest, SessionDeviceListsAreChecked) {
  Device npu;
  Status created = Device::Create(instance_, "npu", {}, &npu);
  ASSERT_TRUE(created.ok()) << created.message();
  const osprey_session_options_t options = Session::Options();
  Session session;
  const Device two[] = {device_, npu};
  Status status = Session::Create(instance_, two, options, &session);
  ASSERT_TRUE(status.ok()) << status.message();

  const Device five[] = {device_, npu, device_, npu, device_};
  status = Session::Create(instance_, five, options, &session);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("at most 4 devices, got 5"));
  const Device twice[] = {npu, npu};
  status = Session::Create(instance_, twice, options, &session);
  EXPECT_THAT(status.message(), HasSubstr("device 'npu' is given twice"));
  status = Session::Create(instance_, std::span<const Device>(), options, &session);
  EXPECT_THAT(status.message(), HasSubstr("instance and device are required"));

  Instance other_instance;
  ASSERT_TRUE(Instance::Create(&other_instance).ok());
  Device stranger;
  ASSERT_TRUE(Device::Create(other_instance, "cpu-sync", {}, &stranger).ok());
  const Device mixed[] = {device_, stranger};
  status = Session::Create(instance_, mixed, options, &session);
  EXPECT_THAT(status.message(), HasSubstr("device 1 ('cpu-sync') was created from another "
                                          "instance"));
}

// The hal_inline module: one call per dispatch, no command buffers in
// bytecode. Adds two 8-element vectors with the vector_add library.
constexpr char kInlineModule[] = R"(
module @inline_add version 1
import @hal_inline.buffer.allocate(i64) -> (ref)
import @hal_inline.buffer_view.byte_length(ref) -> (i64)
import @hal_inline.executable.create(i32) -> (ref)
import @hal_inline.dispatch(ref, i32, i32, i32, i32, ref, ref)
import @hal_inline.buffer_view.create(ref, i64, i64, i32, ref) -> (ref)
rodata @shape align 8 hex "0800000000000000"
rodata @constants align 4 hex "08000000"
func @main(ref, ref) -> (ref) regs(i=4, l=2, r=7) export {
  call.import @hal_inline.buffer_view.byte_length(%r0) -> (%l0)
  call.import @hal_inline.buffer.allocate(%l0) -> (%r2)
  const.i32 %i0, 0
  call.import @hal_inline.executable.create(%i0) -> (%r3)
  const.i32 %i1, 3
  list.alloc %r4, %i1
  list.resize %r4, %i1
  list.set.ref %r4, %i0, %r0
  const.i32 %i2, 1
  list.set.ref %r4, %i2, %r1
  const.i32 %i3, 2
  list.set.ref %r4, %i3, %r2
  const.ref.rodata %r5, @constants
  call.import @hal_inline.dispatch(%r3, %i0, %i2, %i2, %i2, %r5, %r4)
  const.i64 %l1, 0
  const.i32 %i1, 50331680
  const.ref.rodata %r6, @shape
  call.import @hal_inline.buffer_view.create(%r2, %l1, %l0, %i1, %r6) -> (%r5)
  return %r5
}
)";

TEST_F(EmbedTest, InlineModuleDispatchesSynchronously) {
#if defined(__x86_64__)
  const char* arch = "x86_64";
#elif defined(__aarch64__)
  const char* arch = "aarch64";
#else
  const char* arch = nullptr;
#endif
  std::span<const uint8_t> elf =
      arch ? osprey::testing::TestExecutable("vector_add", arch) : std::span<const uint8_t>();
  if (elf.empty()) GTEST_SKIP() << "no vector_add library for this host (needs clang-19)";
  std::string text = kInlineModule;
  text += "executable \"elf-" + std::string(arch) + "\" @vector_add align 16 hex \"";
  for (uint8_t byte : elf) {
    static const char kHex[] = "0123456789abcdef";
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  text += "\"\n";
  auto bytes = vm::AssembleModule(text);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  vm::AlignedBytes module(*bytes);
  ASSERT_TRUE(session_.LoadModuleMemory(module.data(), module.size()).ok());
  Function main_fn;
  ASSERT_TRUE(session_.LookupFunction("inline_add.main", &main_fn).ok());

  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8}, b(8, 0.5f);
  const int64_t shape[1] = {8};
  BufferView inputs[2];
  ASSERT_TRUE(BufferView::Create(device_, shape, OSPREY_ELEMENT_TYPE_FLOAT32, a.data(), 32,
                                 &inputs[0]).ok());
  ASSERT_TRUE(BufferView::Create(device_, shape, OSPREY_ELEMENT_TYPE_FLOAT32, b.data(), 32,
                                 &inputs[1]).ok());
  BufferView outputs[1];
  size_t count = 0;
  Status status = main_fn.Call(inputs, outputs, &count);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(count, 1u);
  float result[8];
  ASSERT_TRUE(outputs[0].Read(result, sizeof(result)).ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(result[i], a[i] + 0.5f) << i;

  // A null input is refused before anything runs.
  osprey_buffer_view_t* raw[2] = {inputs[0].get(), nullptr};
  osprey_buffer_view_t* out = nullptr;
  Status null_input(osprey_function_call(main_fn.get(), raw, 2, &out, 1, &count));
  EXPECT_EQ(null_input.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(null_input.message(), HasSubstr("input 1 must be a non-null buffer view"));
}

TEST(FileMappingTest, MapsFilesAndReportsErrors) {
  const std::string path = ::testing::TempDir() + "/file_mapping_test.bin";
  FILE* file = fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  fputs("osprey", file);
  fclose(file);
  auto mapping = FileMapping::Open(path.c_str(), osprey::Allocator::Default());
  ASSERT_TRUE(mapping.ok());
  EXPECT_EQ((*mapping)->contents().size(), 6u);
  EXPECT_EQ(memcmp((*mapping)->contents().data(), "osprey", 6), 0);
  EXPECT_TRUE((*mapping)->is_mapped());
  remove(path.c_str());

  auto missing = FileMapping::Open("/nonexistent/file.osp", osprey::Allocator::Default());
  EXPECT_EQ(missing.status().code(), osprey::StatusCode::kNotFound);
  auto directory = FileMapping::Open("/", osprey::Allocator::Default());
  EXPECT_EQ(directory.status().code(), osprey::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace osprey::embed

namespace osprey::embed {
namespace {

class ArenaTest : public EmbedTest {
 protected:
  void LoadArenaModule() {
    auto bytes = vm::AssembleModule(kArenaModule);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    arena_module_ = vm::AlignedBytes(*bytes);
    Status status = session_.LoadModuleMemory(arena_module_.data(), arena_module_.size());
    ASSERT_TRUE(status.ok()) << status.message();
    status = session_.LookupModule("arena", &module_handle_);
    ASSERT_TRUE(status.ok()) << status.message();
  }

  int64_t CallArenaLength(Status* status) {
    Function fn;
    *status = session_.LookupFunction("arena.arena_length", &fn);
    if (!status->ok()) return -1;
    osprey_value_t out = {};
    size_t count = 0;
    *status = Status(osprey_function_call_values(fn.get(), nullptr, 0, &out, 1, &count));
    return status->ok() ? out.u.i64 : -1;
  }

  vm::AlignedBytes arena_module_;
  Module module_handle_;
};

struct ReleaseCounter {
  int calls = 0;
  void* last = nullptr;
  static void Release(void* user_data, void* memory) {
    auto* counter = static_cast<ReleaseCounter*>(user_data);
    ++counter->calls;
    counter->last = memory;
  }
};

TEST_F(ArenaTest, LooksUpModulesAndAttributes) {
  Module none;
  Status status = session_.LookupModule(nullptr, &none);
  EXPECT_EQ(status.code(), OSPREY_STATUS_FAILED_PRECONDITION);
  LoadArenaModule();
  EXPECT_STREQ(module_handle_.name(), "arena");
  const char* value = nullptr;
  status = module_handle_.LookupAttribute("arena_size", &value);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_STREQ(value, "64");
  status = module_handle_.LookupAttribute("missing", &value);
  EXPECT_EQ(status.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(status.message(), HasSubstr("module 'arena' has no attribute 'missing'"));
  EXPECT_EQ(value, nullptr);
  size_t size = 0, alignment = 0;
  status = module_handle_.ArenaRequirement(&size, &alignment);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(size, 64u);
  EXPECT_EQ(alignment, 16u);

  // The most recent module by default; unknown names list the loaded ones.
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
  Module last;
  ASSERT_TRUE(session_.LookupModule(nullptr, &last).ok());
  EXPECT_STREQ(last.name(), "echo");
  status = session_.LookupModule("nope", &last);
  EXPECT_EQ(status.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(status.message(), HasSubstr("no module 'nope' in the session (loaded: arena, echo)"));
  // A module without arena_size (not compiled by osprey-compile).
  status = last.ArenaRequirement(&size, &alignment);
  EXPECT_EQ(status.code(), OSPREY_STATUS_NOT_FOUND);
  EXPECT_THAT(status.message(), HasSubstr("records no arena_size"));
}

TEST_F(ArenaTest, RunsInApplicationMemory) {
  LoadArenaModule();
  alignas(64) static uint8_t memory[96];
  memset(memory, 0, sizeof(memory));
  ReleaseCounter counter;
  Status status = module_handle_.SetArena(memory, sizeof(memory), &ReleaseCounter::Release,
                                          &counter);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(CallArenaLength(&status), 96);
  ASSERT_TRUE(status.ok()) << status.message();

  // The module writes through the arena into the caller's memory.
  Function fill;
  ASSERT_TRUE(session_.LookupFunction("arena.fill_arena", &fill).ok());
  osprey_value_t in = {};
  in.type = OSPREY_VALUE_TYPE_I32;
  in.u.i32 = 0x5a5a5a5a;
  size_t count = 0;
  status = Status(osprey_function_call_values(fill.get(), &in, 1, nullptr, 0, &count));
  ASSERT_TRUE(status.ok()) << status.message();
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(memory[i], 0x5a) << i;
  EXPECT_EQ(memory[64], 0);

  // A failed call drops the module's arena; the session gives it back.
  Function failing;
  ASSERT_TRUE(session_.LookupFunction("arena.fail_after_taking_arena", &failing).ok());
  status = Status(osprey_function_call_values(failing.get(), nullptr, 0, nullptr, 0, &count));
  EXPECT_EQ(status.code(), OSPREY_STATUS_INTERNAL);
  EXPECT_THAT(status.message(), HasSubstr("kernel failed"));
  EXPECT_EQ(CallArenaLength(&status), 96);
  ASSERT_TRUE(status.ok()) << status.message();
  failing = Function();

  // Loading another module relinks the session; the arena stays.
  ASSERT_TRUE(session_.LoadModuleMemory(module_.data(), module_.size()).ok());
  EXPECT_EQ(CallArenaLength(&status), 96);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(counter.calls, 0);

  // Released once nothing uses it.
  fill = Function();
  session_ = Session();
  module_handle_ = Module();
  EXPECT_EQ(counter.calls, 1);
  EXPECT_EQ(counter.last, memory);
}

TEST_F(ArenaTest, RejectsSmallMisalignedAndMissingArenas) {
  LoadArenaModule();
  alignas(64) static uint8_t memory[128];
  ReleaseCounter counter;
  Status status = module_handle_.SetArena(memory, 32, &ReleaseCounter::Release, &counter);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(),
              HasSubstr("arena memory of 32 bytes is smaller than the 64 bytes module 'arena' "
                        "needs"));
  EXPECT_EQ(counter.calls, 1);  // Released on failure, as documented.
  status = module_handle_.SetArena(memory + 8, 64, &ReleaseCounter::Release, &counter);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("is not aligned to the 16 bytes module 'arena' needs"));
  EXPECT_EQ(counter.calls, 2);
  // No arena was set: the module has nothing in its global.
  EXPECT_EQ(CallArenaLength(&status), -1);
  EXPECT_FALSE(status.ok());

  auto bytes = vm::AssembleModule(kNoArenaModule);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  vm::AlignedBytes plain(*bytes);
  ASSERT_TRUE(session_.LoadModuleMemory(plain.data(), plain.size()).ok());
  Module plain_module;
  ASSERT_TRUE(session_.LookupModule("plain", &plain_module).ok());
  size_t size = 1, alignment = 0;
  ASSERT_TRUE(plain_module.ArenaRequirement(&size, &alignment).ok());
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(alignment, 1u);
  const char* producer = nullptr;
  ASSERT_TRUE(plain_module.LookupAttribute("producer", &producer).ok());
  EXPECT_STREQ(producer, "hand-written");
  status = plain_module.SetArena(memory, sizeof(memory));
  EXPECT_EQ(status.code(), OSPREY_STATUS_FAILED_PRECONDITION);
  EXPECT_THAT(status.message(), HasSubstr("module 'plain' has no arena"));
}

}  // namespace
}  // namespace osprey::embed
