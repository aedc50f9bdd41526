// Tests of the hal module's functions, invoked directly through a VM
// context on a cpu-sync device.
#include "runtime/modules/hal/hal_module.h"

#include <cstring>
#include <vector>

#include "drivers/init.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/api.h"
#include "vm/asm/assembler.h"
#include "vm/builder/module_builder.h"

namespace osprey::modules::hal {
namespace {

namespace ohal = ::osprey::hal;
using ::testing::HasSubstr;

class HalModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(drivers::RegisterEnabledDrivers(registry_).ok());
    auto device = registry_.CreateDevice("cpu-sync", {}, allocator_);
    ASSERT_TRUE(device.ok()) << device.status().message();
    device_ = std::move(*device);
    auto instance = vm::Instance::Create(allocator_);
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(*instance);
    ASSERT_TRUE(RegisterTypes(instance_.get()).ok());
    ASSERT_TRUE(RegisterTypes(instance_.get()).ok()) << "registration is idempotent";
    auto module = CreateModule(device_, allocator_);
    ASSERT_TRUE(module.ok()) << module.status().message();
    module_ = std::move(*module);
    vm::Module* modules[] = {module_.get()};
    auto context = vm::Context::Create(instance_.get(), modules, {}, allocator_);
    ASSERT_TRUE(context.ok()) << context.status().message();
    context_ = std::move(*context);
  }

  // Calls hal.<name> with |args|; results land in |results| (sized from
  // the signature).
  Status Call(const char* name, std::vector<vm::Value> args, std::vector<vm::Value>* results) {
    OSPREY_ASSIGN_OR_RETURN(vm::Function function, context_->LookupFunction("hal", name));
    results->assign(function.signature().result_count, vm::Value());
    return context_->Invoke(function, args, *results);
  }
  vm::Value CallOne(const char* name, std::vector<vm::Value> args) {
    std::vector<vm::Value> results;
    Status status = Call(name, std::move(args), &results);
    EXPECT_TRUE(status.ok()) << name << ": " << status.message();
    return results.empty() ? vm::Value() : results[0];
  }

  vm::Value Device() { return CallOne("device", {}); }
  vm::Value Allocate(int64_t length) {
    vm::Value allocator = CallOne("device.allocator", {Device()});
    return CallOne("allocator.allocate",
                   {allocator,
                    vm::Value::I32(int32_t(ohal::MemoryType::kHostLocal |
                                           ohal::MemoryType::kDeviceVisible)),
                    vm::Value::I32(int32_t(ohal::BufferUsage::kDefault)), vm::Value::I32(0),
                    vm::Value::I64(length)});
  }
  // A vm.list of i64 dimensions.
  vm::Value Shape(std::vector<int64_t> dims) {
    auto list = vm::List::Create(dims.size(), allocator_);
    EXPECT_TRUE(list.ok());
    for (int64_t d : dims) EXPECT_TRUE((*list)->Push(vm::Value::I64(d)).ok());
    return vm::Value::FromRef(vm::Ref::FromRefPtr(std::move(*list), vm::List::type()));
  }
  // A read-only vm.buffer holding |text| (like a rodata string).
  vm::Value Text(const char* text) {
    auto buffer = vm::Buffer::WrapReadOnly(text, strlen(text), nullptr, allocator_);
    EXPECT_TRUE(buffer.ok());
    return vm::Value::FromRef(vm::Ref::FromRefPtr(std::move(*buffer), vm::Buffer::type()));
  }

  Allocator* allocator_ = Allocator::Default();
  ohal::DriverRegistry registry_;
  ref_ptr<ohal::Device> device_;
  ref_ptr<vm::Instance> instance_;
  ref_ptr<vm::Module> module_;
  ref_ptr<vm::Context> context_;
};

TEST_F(HalModuleTest, AllocatesAndSlicesBuffers) {
  vm::Value buffer = Allocate(64);
  ASSERT_NE(buffer.ref.As<ohal::Buffer>(&kBufferType), nullptr);
  EXPECT_EQ(CallOne("buffer.length", {buffer}).i64, 64);
  vm::Value tail = CallOne("buffer.subspan", {buffer, vm::Value::I64(16), vm::Value::I64(-1)});
  EXPECT_EQ(CallOne("buffer.length", {tail}).i64, 48);

  std::vector<vm::Value> results;
  Status past_end = Call("buffer.subspan", {buffer, vm::Value::I64(60), vm::Value::I64(8)}, &results);
  EXPECT_EQ(past_end.code(), StatusCode::kOutOfRange) << past_end.message();

  vm::Value allocator = CallOne("device.allocator", {Device()});
  Status negative = Call("allocator.allocate",
                         {allocator, vm::Value::I32(0), vm::Value::I32(0), vm::Value::I32(0),
                          vm::Value::I64(-4)},
                         &results);
  EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.message(), HasSubstr("argument 4 (length) is negative"));
}

TEST_F(HalModuleTest, ChecksRefTypesOfArguments) {
  std::vector<vm::Value> results;
  Status status = Call("device.allocator", {Allocate(4)}, &results);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("expected a 'hal.device' ref, got 'hal.buffer'"));
  Status null_ref = Call("buffer.length", {vm::Value::FromRef(vm::Ref())}, &results);
  EXPECT_THAT(null_ref.message(), HasSubstr("expected a 'hal.buffer' ref, got null"));
}

TEST_F(HalModuleTest, CreatesAndDescribesBufferViews) {
  vm::Value buffer = Allocate(2 * 3 * 4);
  const int32_t f32 = int32_t(ohal::ElementType::kFloat32);
  vm::Value view = CallOne("buffer_view.create", {buffer, vm::Value::I64(0), vm::Value::I64(-1),
                                                  vm::Value::I32(f32), Shape({2, 3})});
  EXPECT_EQ(CallOne("buffer_view.rank", {view}).i32, 2);
  EXPECT_EQ(CallOne("buffer_view.dim", {view, vm::Value::I32(1)}).i64, 3);
  EXPECT_EQ(CallOne("buffer_view.element_type", {view}).i32, f32);
  EXPECT_EQ(CallOne("buffer_view.byte_length", {view}).i64, 24);
  EXPECT_EQ(CallOne("buffer_view.buffer", {view}).ref.get(), buffer.ref.get());

  std::vector<vm::Value> results;
  Status dim = Call("buffer_view.dim", {view, vm::Value::I32(2)}, &results);
  EXPECT_EQ(dim.code(), StatusCode::kOutOfRange);

  // A shape as a vm.buffer of i64 (what a rodata segment holds).
  static const int64_t kDims[2] = {1, 6};
  auto dims = vm::Buffer::WrapReadOnly(kDims, sizeof(kDims), nullptr, allocator_);
  ASSERT_TRUE(dims.ok());
  vm::Value flat = CallOne(
      "buffer_view.create",
      {buffer, vm::Value::I64(0), vm::Value::I64(24), vm::Value::I32(f32),
       vm::Value::FromRef(vm::Ref::FromRefPtr(std::move(*dims), vm::Buffer::type()))});
  EXPECT_EQ(CallOne("buffer_view.dim", {flat, vm::Value::I32(1)}).i64, 6);

  Status too_big = Call("buffer_view.create", {buffer, vm::Value::I64(0), vm::Value::I64(-1),
                                               vm::Value::I32(f32), Shape({4, 4})},
                        &results);
  EXPECT_EQ(too_big.code(), StatusCode::kOutOfRange) << too_big.message();
  Status bad_shape = Call("buffer_view.create", {buffer, vm::Value::I64(0), vm::Value::I64(-1),
                                                 vm::Value::I32(f32), Text("abc")},
                          &results);
  EXPECT_THAT(bad_shape.message(), HasSubstr("not a whole number of 8-byte elements"));
}

TEST_F(HalModuleTest, AssertNamesTheArgumentAndBothShapes) {
  const int32_t f32 = int32_t(ohal::ElementType::kFloat32);
  vm::Value view = CallOne("buffer_view.create", {Allocate(24), vm::Value::I64(0),
                                                  vm::Value::I64(-1), vm::Value::I32(f32),
                                                  Shape({2, 3})});
  std::vector<vm::Value> results;
  EXPECT_TRUE(
      Call("buffer_view.assert", {view, Text("input 'x'"), vm::Value::I32(f32), Shape({2, 3})},
           &results)
          .ok());
  EXPECT_TRUE(
      Call("buffer_view.assert", {view, Text("input 'x'"), vm::Value::I32(f32), Shape({-1, 3})},
           &results)
          .ok());
  Status wrong = Call("buffer_view.assert",
                      {view, Text("input 'x'"), vm::Value::I32(f32), Shape({3, 2})}, &results);
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("input 'x' has shape 2x3xf32, expected 3x2xf32"));
  Status wrong_type = Call("buffer_view.assert",
                           {view, Text("weights"), vm::Value::I32(int32_t(ohal::ElementType::kInt8)),
                            Shape({-1, 3})},
                           &results);
  EXPECT_THAT(wrong_type.message(), HasSubstr("weights has shape 2x3xf32, expected ?x3xi8"));
  Status null_view = Call("buffer_view.assert",
                          {vm::Value::FromRef(vm::Ref()), Text("input 'y'"),
                           vm::Value::I32(f32), Shape({2})},
                          &results);
  EXPECT_THAT(null_view.message(), HasSubstr("input 'y': expected a 2xf32 tensor, got null"));
}

TEST_F(HalModuleTest, RecordsAndExecutesTransfers) {
  vm::Value device = Device();
  vm::Value source = Allocate(16);
  vm::Value target = Allocate(16);
  vm::Value command_buffer = CallOne("command_buffer.create", {device, vm::Value::I32(1)});
  CallOne("command_buffer.begin", {command_buffer});
  CallOne("command_buffer.fill_buffer", {command_buffer, source, vm::Value::I64(0),
                                         vm::Value::I64(-1), vm::Value::I32(0x01020304),
                                         vm::Value::I32(4)});
  CallOne("command_buffer.execution_barrier", {command_buffer});
  CallOne("command_buffer.copy_buffer", {command_buffer, source, vm::Value::I64(4), target,
                                         vm::Value::I64(0), vm::Value::I64(8)});
  std::vector<vm::Value> results;
  Status bad_pattern = Call("command_buffer.fill_buffer",
                            {command_buffer, source, vm::Value::I64(0), vm::Value::I64(-1),
                             vm::Value::I32(0), vm::Value::I32(3)},
                            &results);
  EXPECT_THAT(bad_pattern.message(), HasSubstr("must be 1, 2 or 4, got 3"));
  CallOne("command_buffer.end", {command_buffer});
  CallOne("device.queue.execute_sync", {device, command_buffer});

  uint32_t words[4] = {};
  ASSERT_TRUE(target.ref.As<ohal::Buffer>(&kBufferType)->ReadData(0, words, 16).ok());
  EXPECT_EQ(words[0], 0x01020304u);
  EXPECT_EQ(words[1], 0x01020304u);
}

TEST_F(HalModuleTest, SemaphoresAndQueueExecution) {
  vm::Value device = Device();
  vm::Value semaphore = CallOne("semaphore.create", {device, vm::Value::I64(0)});
  CallOne("semaphore.signal", {semaphore, vm::Value::I64(5)});
  EXPECT_EQ(CallOne("semaphore.query", {semaphore}).i64, 5);
  CallOne("semaphore.wait", {semaphore, vm::Value::I64(5)});
  std::vector<vm::Value> results;
  Status backwards = Call("semaphore.signal", {semaphore, vm::Value::I64(3)}, &results);
  EXPECT_EQ(backwards.code(), StatusCode::kInvalidArgument) << backwards.message();

  vm::Value buffer = Allocate(8);
  vm::Value command_buffer = CallOne("command_buffer.create", {device, vm::Value::I32(0)});
  CallOne("command_buffer.begin", {command_buffer});
  CallOne("command_buffer.fill_buffer", {command_buffer, buffer, vm::Value::I64(0),
                                         vm::Value::I64(-1), vm::Value::I32(0x7F),
                                         vm::Value::I32(1)});
  CallOne("command_buffer.end", {command_buffer});
  // Wait for 5 (already reached), signal 6.
  CallOne("device.queue.execute", {device, semaphore, vm::Value::I64(5), semaphore,
                                   vm::Value::I64(6), command_buffer});
  CallOne("semaphore.wait", {semaphore, vm::Value::I64(6)});
  uint8_t bytes[8] = {};
  ASSERT_TRUE(buffer.ref.As<ohal::Buffer>(&kBufferType)->ReadData(0, bytes, 8).ok());
  EXPECT_EQ(bytes[7], 0x7F);
}

TEST_F(HalModuleTest, QueriesTheDevice) {
  std::vector<vm::Value> results;
  ASSERT_TRUE(Call("device.query.i64", {Device(), Text("device.id=cpu-*")}, &results).ok());
  EXPECT_EQ(results[0].i32, 1);
  EXPECT_EQ(results[1].i64, 1);
  ASSERT_TRUE(Call("device.query.i64", {Device(), Text("device.id=npu")}, &results).ok());
  EXPECT_EQ(results[0].i32, 1);
  EXPECT_EQ(results[1].i64, 0);
  ASSERT_TRUE(Call("device.query.i64", {Device(), Text("no.such.key")}, &results).ok());
  EXPECT_EQ(results[0].i32, 0);
  ASSERT_TRUE(
      Call("device.query.i64", {Device(), Text("device.executable_format=npu-v1")}, &results)
          .ok());
  EXPECT_EQ(results[1].i64, 0);
  vm::Value allocation = Allocate(1000);
  ASSERT_TRUE(
      Call("device.query.i64", {Device(), Text("allocator.bytes_allocated")}, &results).ok());
  EXPECT_EQ(results[0].i32, 1);
  EXPECT_GE(results[1].i64, 0);
}

TEST_F(HalModuleTest, ExecutablesNeedABytecodeCaller) {
  std::vector<vm::Value> results;
  Status status = Call("executable.create", {Device(), vm::Value::I32(0)}, &results);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("must be called from bytecode"));
}

TEST_F(HalModuleTest, InlineModuleAllocatesAndChecksDispatchArguments) {
  auto module = CreateInlineModule(device_, allocator_);
  ASSERT_TRUE(module.ok()) << module.status().message();
  vm::Module* modules[] = {module->get()};
  auto context = vm::Context::Create(instance_.get(), modules, {}, allocator_);
  ASSERT_TRUE(context.ok()) << context.status().message();
  auto call = [&](const char* name, std::vector<vm::Value> args,
                  std::vector<vm::Value>* results) -> Status {
    OSPREY_ASSIGN_OR_RETURN(vm::Function function,
                            (*context)->LookupFunction("hal_inline", name));
    results->assign(function.signature().result_count, vm::Value());
    return (*context)->Invoke(function, args, *results);
  };
  std::vector<vm::Value> results;
  ASSERT_TRUE(call("buffer.allocate", {vm::Value::I64(32)}, &results).ok());
  auto* buffer = results[0].ref.As<ohal::Buffer>(&kBufferType);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->byte_length(), 32u);
  EXPECT_TRUE(ohal::AllBitsSet(buffer->memory_type(), ohal::MemoryType::kHostVisible));

  Status negative = call("buffer.allocate", {vm::Value::I64(-1)}, &results);
  EXPECT_THAT(negative.message(), HasSubstr("argument 0 (length) is negative"));
  Status no_executable =
      call("dispatch",
           {vm::Value::FromRef(vm::Ref()), vm::Value::I32(0), vm::Value::I32(1), vm::Value::I32(1),
            vm::Value::I32(1), vm::Value::FromRef(vm::Ref()), vm::Value::FromRef(vm::Ref())},
           &results);
  EXPECT_EQ(no_executable.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(no_executable.message(), HasSubstr("argument 0: expected a 'hal.executable' ref"));
  Status no_caller = call("executable.create", {vm::Value::I32(0)}, &results);
  EXPECT_EQ(no_caller.code(), StatusCode::kFailedPrecondition);
  EXPECT_LT(InlineModuleFunctions().size(), ModuleFunctions().size());
}

//===----------------------------------------------------------------------===//
// buffer.wrap_rodata
//===----------------------------------------------------------------------===//

// Owns module file bytes (at a 4096-aligned address) and counts its own
// destruction, so tests can see when the last user let go of them.
class FileBytes final : public RefObject {
 public:
  FileBytes(std::span<const uint8_t> bytes, int* destroyed)
      : bytes_(bytes), destroyed_(destroyed) {}
  ~FileBytes() override { ++*destroyed_; }
  std::span<const uint8_t> span() const { return bytes_.span(); }

 private:
  vm::AlignedBytes bytes_;
  int* destroyed_;
};

// A module whose `wrap` returns its 64-byte aligned segment @weights as a
// hal.buffer, and whose `wrap_writable` passes a writable vm.buffer.
constexpr char kRodataModule[] = R"(
module @consts version 1
import @hal.device() -> (ref)
import @hal.device.allocator(ref) -> (ref)
import @hal.buffer.wrap_rodata(ref, ref) -> (ref)
rodata @weights align 64 hex "0000803f000000400000404000008040"
func @wrap() -> (ref) regs(r=4) export {
  call @hal.device() -> (%r0)
  call @hal.device.allocator(%r0) -> (%r1)
  const.ref.rodata %r2, @weights
  call @hal.buffer.wrap_rodata(%r1, %r2) -> (%r3)
  return %r3
}
func @wrap_with(ref) -> (ref) regs(r=3) export {
  const.ref.rodata %r1, @weights
  call @hal.buffer.wrap_rodata(%r0, %r1) -> (%r2)
  return %r2
}
func @wrap_writable() -> (ref) regs(l=1, r=4) export {
  call @hal.device() -> (%r0)
  call @hal.device.allocator(%r0) -> (%r1)
  const.i64 %l0, 16
  buffer.alloc %r2, %l0
  call @hal.buffer.wrap_rodata(%r1, %r2) -> (%r3)
  return %r3
}
)";

class WrapRodataTest : public HalModuleTest {
 protected:
  void LoadModule(const char* text) {
    auto bytes = vm::AssembleModule(text);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto file = MakeRef<FileBytes>(allocator_, *bytes, &file_destroyed_);
    ASSERT_TRUE(file.ok());
    file_ = file->get();
    auto module = vm::BytecodeModule::Load(file_->span(), std::move(*file), allocator_);
    ASSERT_TRUE(module.ok()) << module.status().message();
    consts_ = std::move(*module);
    vm::Module* modules[] = {module_.get(), consts_.get()};
    auto context = vm::Context::Create(instance_.get(), modules, {}, allocator_);
    ASSERT_TRUE(context.ok()) << context.status().message();
    consts_context_ = std::move(*context);
  }
  Status Invoke(const char* name, vm::Value* result) {
    OSPREY_ASSIGN_OR_RETURN(vm::Function function,
                            consts_context_->LookupFunction("consts", name));
    return consts_context_->Invoke(function, {}, std::span<vm::Value>(result, 1));
  }

  int file_destroyed_ = 0;
  FileBytes* file_ = nullptr;  // Owned by the module (and what retains it).
  ref_ptr<vm::BytecodeModule> consts_;
  ref_ptr<vm::Context> consts_context_;
};

TEST_F(WrapRodataTest, WrapsTheSegmentInPlaceWithoutCopying) {
  ASSERT_NO_FATAL_FAILURE(LoadModule(kRodataModule));
  vm::Value result;
  ASSERT_TRUE(Invoke("wrap", &result).ok());
  ohal::Buffer* buffer = result.ref.As<ohal::Buffer>(&kBufferType);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->byte_length(), 16u);
  EXPECT_EQ(buffer->allowed_access(), ohal::MemoryAccess::kRead);
  EXPECT_TRUE(ohal::AnyBitSet(buffer->allowed_usage(), ohal::BufferUsage::kConstant));

  ohal::MappedMemory mapping;
  ASSERT_TRUE(buffer->MapRange(ohal::MemoryAccess::kRead, 0, ohal::kWholeBuffer, &mapping).ok());
  auto contents = mapping.Contents();
  ASSERT_TRUE(contents.ok());
  // The mapped bytes are the segment inside the module file itself.
  const uint8_t* file_begin = file_->span().data();
  const uint8_t* file_end = file_begin + file_->span().size();
  EXPECT_GE(contents->data(), file_begin);
  EXPECT_LE(contents->data() + contents->size(), file_end);
  EXPECT_EQ(contents->data(), consts_->rodata(0).data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(contents->data()) % 64, 0u);
  float values[4];
  memcpy(values, contents->data(), sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[3], 4.0f);
}

TEST_F(WrapRodataTest, WritingThroughTheBufferIsDenied) {
  ASSERT_NO_FATAL_FAILURE(LoadModule(kRodataModule));
  vm::Value wrapped;
  ASSERT_TRUE(Invoke("wrap", &wrapped).ok());
  ohal::Buffer* buffer = wrapped.ref.As<ohal::Buffer>(&kBufferType);
  ASSERT_NE(buffer, nullptr);
  ohal::MappedMemory mapping;
  EXPECT_EQ(buffer->MapRange(ohal::MemoryAccess::kWrite, 0, 4, &mapping).code(),
            StatusCode::kPermissionDenied);
  const uint32_t word = 7;
  EXPECT_EQ(buffer->WriteData(0, &word, 4).code(), StatusCode::kPermissionDenied);

  // Commands that write the buffer are rejected while recording.
  vm::Value device = Device();
  vm::Value command_buffer = CallOne("command_buffer.create", {device, vm::Value::I32(1)});
  CallOne("command_buffer.begin", {command_buffer});
  std::vector<vm::Value> results;
  Status fill = Call("command_buffer.fill_buffer",
                     {command_buffer, wrapped, vm::Value::I64(0), vm::Value::I64(-1),
                      vm::Value::I32(0), vm::Value::I32(4)},
                     &results);
  EXPECT_EQ(fill.code(), StatusCode::kPermissionDenied) << fill.message();
  vm::Value scratch = Allocate(16);
  Status copy_into = Call("command_buffer.copy_buffer",
                          {command_buffer, scratch, vm::Value::I64(0), wrapped,
                           vm::Value::I64(0), vm::Value::I64(16)},
                          &results);
  EXPECT_EQ(copy_into.code(), StatusCode::kPermissionDenied) << copy_into.message();
  // Reading it as a copy source is allowed.
  Status copy_from = Call("command_buffer.copy_buffer",
                          {command_buffer, wrapped, vm::Value::I64(0), scratch,
                           vm::Value::I64(0), vm::Value::I64(16)},
                          &results);
  EXPECT_TRUE(copy_from.ok()) << copy_from.message();
  CallOne("command_buffer.end", {command_buffer});
  CallOne("device.queue.execute_sync", {device, command_buffer});
  float values[4] = {};
  ASSERT_TRUE(scratch.ref.As<ohal::Buffer>(&kBufferType)->ReadData(0, values, 16).ok());
  EXPECT_EQ(values[1], 2.0f);
}

// A device allocator that cannot import host memory (like a device whose
// memory the host cannot share); allocations go to |inner|.
class NoImportAllocator final : public ohal::Allocator {
 public:
  explicit NoImportAllocator(ohal::Allocator* inner) : inner_(inner) {}
  osprey::Allocator* host_allocator() const override { return inner_->host_allocator(); }
  ohal::BufferCompatibility QueryCompatibility(ohal::BufferParams* params,
                                               ohal::DeviceSize length) const override {
    return inner_->QueryCompatibility(params, length) & ~ohal::BufferCompatibility::kImportable;
  }
  StatusOr<ref_ptr<ohal::Buffer>> AllocateBuffer(const ohal::BufferParams& params,
                                                 ohal::DeviceSize length) override {
    return inner_->AllocateBuffer(params, length);
  }
  StatusOr<ref_ptr<ohal::Buffer>> ImportBuffer(const ohal::BufferParams&, void*,
                                               ohal::DeviceSize, ohal::ReleaseCallback) override {
    return UnimplementedError("this allocator cannot import host memory");
  }

 private:
  ref_ptr<ohal::Allocator> inner_;
};

TEST_F(WrapRodataTest, AllocatorsThatCannotImportGetACopy) {
  ASSERT_NO_FATAL_FAILURE(LoadModule(kRodataModule));
  auto no_import = MakeRef<NoImportAllocator>(allocator_, device_->allocator());
  ASSERT_TRUE(no_import.ok());
  auto function = consts_context_->LookupFunction("consts", "wrap_with");
  ASSERT_TRUE(function.ok());
  vm::Value args[] = {vm::Value::FromRef(vm::Ref(no_import->get(), &kAllocatorType))};
  vm::Value result;
  Status status = consts_context_->Invoke(*function, args, std::span<vm::Value>(&result, 1));
  ASSERT_TRUE(status.ok()) << status.message();
  ohal::Buffer* buffer = result.ref.As<ohal::Buffer>(&kBufferType);
  ASSERT_NE(buffer, nullptr);
  ohal::MappedMemory mapping;
  ASSERT_TRUE(buffer->MapRange(ohal::MemoryAccess::kRead, 0, ohal::kWholeBuffer, &mapping).ok());
  auto contents = mapping.Contents();
  ASSERT_TRUE(contents.ok());
  const uint8_t* file_begin = file_->span().data();
  const uint8_t* file_end = file_begin + file_->span().size();
  EXPECT_TRUE(contents->data() >= file_end || contents->data() + contents->size() <= file_begin)
      << "the copy must not alias the module file";
  ASSERT_EQ(contents->size(), 16u);
  EXPECT_EQ(memcmp(contents->data(), consts_->rodata(0).data, 16), 0);
}

TEST_F(WrapRodataTest, RejectsWritableVmBuffers) {
  ASSERT_NO_FATAL_FAILURE(LoadModule(kRodataModule));
  vm::Value result;
  Status status = Invoke("wrap_writable", &result);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("expected a read-only vm.buffer"));
}

TEST_F(WrapRodataTest, TheBufferKeepsTheModuleFileAlive) {
  ASSERT_NO_FATAL_FAILURE(LoadModule(kRodataModule));
  vm::Value result;
  ASSERT_TRUE(Invoke("wrap", &result).ok());
  ref_ptr<ohal::Buffer> buffer(result.ref.As<ohal::Buffer>(&kBufferType));
  ASSERT_TRUE(buffer);
  result = vm::Value();
  consts_context_.reset();
  consts_.reset();
  file_ = nullptr;
  EXPECT_EQ(file_destroyed_, 0) << "the wrapped segment must keep the file bytes alive";
  float values[4] = {};
  ASSERT_TRUE(buffer->ReadData(0, values, 16).ok());
  EXPECT_EQ(values[2], 3.0f);
  buffer.reset();
  EXPECT_EQ(file_destroyed_, 1);
}

TEST_F(WrapRodataTest, VerifierRejectsARodataReferenceOutOfRange) {
  // The segment operand of const.ref.rodata is checked at load, so a module
  // cannot make wrap_rodata see memory outside its segments.
  vm::ModuleBuilder builder("bad");
  builder.AddImport("hal.device", ":r");
  uint32_t fn = builder.DeclareFunction("f", ":r");
  builder.AddRodata("weights", std::vector<uint8_t>(16, 0), 64);
  vm::BytecodeWriter w;
  w.Op(vm::Opcode::kConstRefRodata);
  w.Reg(0);
  w.U32(1);  // Only segment 0 exists.
  w.Op(vm::Opcode::kReturn);
  const uint16_t results[] = {0};
  w.RegList(results);
  auto code = w.Finish();
  ASSERT_TRUE(code.ok());
  builder.DefineFunction(fn, std::move(*code), {0, 0, 0, 0, 1});
  builder.AddExport("f", fn);
  auto bytes = builder.Build();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  vm::AlignedBytes aligned(*bytes);
  auto module = vm::BytecodeModule::Load(aligned.span(), nullptr, allocator_);
  EXPECT_EQ(module.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(module.status().message(), HasSubstr("rodata"));
}

// A context of a module bound to a cpu-sync and an npu device.
class MultiDeviceTest : public HalModuleTest {
 protected:
  void SetUp() override {
    HalModuleTest::SetUp();
    auto npu = registry_.CreateDevice("npu", {}, allocator_);
    ASSERT_TRUE(npu.ok()) << npu.status().message();
    npu_ = std::move(*npu);
    const ref_ptr<ohal::Device> devices[] = {device_, npu_};
    auto module = CreateModule(devices, allocator_);
    ASSERT_TRUE(module.ok()) << module.status().message();
    module_ = std::move(*module);
    vm::Module* modules[] = {module_.get()};
    auto context = vm::Context::Create(instance_.get(), modules, {}, allocator_);
    ASSERT_TRUE(context.ok()) << context.status().message();
    context_ = std::move(*context);
  }
  ref_ptr<ohal::Device> npu_;
};

TEST_F(MultiDeviceTest, ListsAndSelectsDevices) {
  EXPECT_EQ(CallOne("devices.count", {}).i32, 2);
  EXPECT_EQ(Device().ref.As<ohal::Device>(&kDeviceType), device_.get()) << "the first is default";
  EXPECT_EQ(CallOne("devices.get", {vm::Value::I32(1)}).ref.As<ohal::Device>(&kDeviceType),
            npu_.get());
  EXPECT_EQ(CallOne("devices.select", {Text("npu-v1")}).ref.As<ohal::Device>(&kDeviceType),
            npu_.get());

  std::vector<vm::Value> results;
  Status past_end = Call("devices.get", {vm::Value::I32(2)}, &results);
  EXPECT_EQ(past_end.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(past_end.message(), HasSubstr("device index 2 is out of range: the context has 2 "
                                            "(cpu-sync, npu)"));
  Status negative = Call("devices.get", {vm::Value::I32(-1)}, &results);
  EXPECT_EQ(negative.code(), StatusCode::kOutOfRange);
  ASSERT_TRUE(Call("device.query.i64",
                   {CallOne("devices.get", {vm::Value::I32(1)}), Text("npu.pes")}, &results)
                  .ok());
  EXPECT_EQ(results[0].i32, 1) << "device keys answer through device.query.i64";
  EXPECT_EQ(results[1].i64, 128);
  ASSERT_TRUE(Call("device.query.i64", {Device(), Text("npu.pes")}, &results).ok());
  EXPECT_EQ(results[0].i32, 0) << "the CPU has no npu counters";
  Status unknown = Call("devices.select", {Text("spirv")}, &results);
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.message(), HasSubstr("needs a device that runs 'spirv' executables and "
                                           "none of the context's devices (cpu-sync, npu)"));
}

TEST_F(MultiDeviceTest, QueuesOfBothDevicesShareBuffersAndSemaphores) {
  // The NPU copies a buffer the CPU device allocated and filled, after the
  // CPU's work signalled a semaphore the CPU device created.
  vm::Value cpu = Device();
  vm::Value npu = CallOne("devices.get", {vm::Value::I32(1)});
  vm::Value source = Allocate(64);
  vm::Value target = Allocate(64);
  vm::Value semaphore = CallOne("semaphore.create", {cpu, vm::Value::I64(0)});
  vm::Value fill = CallOne("command_buffer.create", {cpu, vm::Value::I32(1)});
  CallOne("command_buffer.begin", {fill});
  CallOne("command_buffer.fill_buffer", {fill, source, vm::Value::I64(0), vm::Value::I64(-1),
                                         vm::Value::I32(0x5A), vm::Value::I32(1)});
  CallOne("command_buffer.end", {fill});
  vm::Value copy = CallOne("command_buffer.create", {npu, vm::Value::I32(1)});
  CallOne("command_buffer.begin", {copy});
  CallOne("command_buffer.copy_buffer", {copy, source, vm::Value::I64(8), target,
                                         vm::Value::I64(0), vm::Value::I64(56)});
  CallOne("command_buffer.end", {copy});
  const vm::Value null = vm::Value::FromRef(vm::Ref());
  // Submitted in reverse order: the NPU waits for the CPU's signal.
  CallOne("device.queue.execute", {npu, semaphore, vm::Value::I64(1), semaphore,
                                   vm::Value::I64(2), copy});
  CallOne("device.queue.execute", {cpu, null, vm::Value::I64(0), semaphore, vm::Value::I64(1),
                                   fill});
  CallOne("semaphore.wait", {semaphore, vm::Value::I64(2)});
  uint8_t bytes[64] = {};
  ASSERT_TRUE(target.ref.As<ohal::Buffer>(&kBufferType)->ReadData(0, bytes, 64).ok());
  EXPECT_EQ(bytes[0], 0x5A);
  EXPECT_EQ(bytes[55], 0x5A);
  EXPECT_EQ(bytes[56], 0);

  // execute_sync works on either device.
  vm::Value again = CallOne("command_buffer.create", {npu, vm::Value::I32(1)});
  CallOne("command_buffer.begin", {again});
  CallOne("command_buffer.fill_buffer", {again, target, vm::Value::I64(0), vm::Value::I64(4),
                                         vm::Value::I32(0x11), vm::Value::I32(1)});
  CallOne("command_buffer.end", {again});
  CallOne("device.queue.execute_sync", {npu, again});
  ASSERT_TRUE(target.ref.As<ohal::Buffer>(&kBufferType)->ReadData(0, bytes, 4).ok());
  EXPECT_EQ(bytes[3], 0x11);
}

TEST_F(MultiDeviceTest, RefusesDevicesOfOtherContexts) {
  auto other = registry_.CreateDevice("cpu-sync", {}, allocator_);
  ASSERT_TRUE(other.ok());
  vm::Value stranger = vm::Value::FromRef(vm::Ref(other->get(), &kDeviceType));
  vm::Value command_buffer = CallOne("command_buffer.create", {stranger, vm::Value::I32(1)});
  CallOne("command_buffer.begin", {command_buffer});
  CallOne("command_buffer.end", {command_buffer});
  std::vector<vm::Value> results;
  Status status = Call("device.queue.execute_sync", {stranger, command_buffer}, &results);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("argument 0: device 'cpu-sync' is not one of this "
                                          "context's devices (cpu-sync, npu)"));
}

TEST(HalModuleCreateTest, DeviceListsAreChecked) {
  ohal::DriverRegistry registry;
  ASSERT_TRUE(drivers::RegisterEnabledDrivers(registry).ok());
  auto device = registry.CreateDevice("cpu-sync", {}, Allocator::Default());
  ASSERT_TRUE(device.ok());
  const ref_ptr<ohal::Device> twice[] = {*device, *device};
  auto duplicate = CreateModule(twice, Allocator::Default());
  EXPECT_EQ(duplicate.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(duplicate.status().message(), HasSubstr("device 'cpu-sync' is given twice"));
  const ref_ptr<ohal::Device> many[] = {*device, nullptr, nullptr, nullptr, nullptr};
  auto too_many = CreateModule(many, Allocator::Default());
  EXPECT_THAT(too_many.status().message(), HasSubstr("at most 4 devices, got 5"));
  const ref_ptr<ohal::Device> with_null[] = {*device, nullptr};
  auto null_device = CreateModule(with_null, Allocator::Default());
  EXPECT_THAT(null_device.status().message(), HasSubstr("device 1 is null"));
}

TEST(HalModuleCreateTest, NeedsADevice) {
  auto module = CreateModule(nullptr, Allocator::Default());
  EXPECT_EQ(module.status().code(), StatusCode::kInvalidArgument);
  EXPECT_GT(ModuleFunctions().size(), 20u);
}

}  // namespace
}  // namespace osprey::modules::hal
