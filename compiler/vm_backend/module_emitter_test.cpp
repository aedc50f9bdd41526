// Compiles a small graph to an .osp module and runs it through the VM and
// the hal module on a cpu-sync device: constants are bound zero-copy from
// module rodata, and the transient arena is allocated once per context.
#include "compiler/vm_backend/module_emitter.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lowering/lower_graph.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "drivers/init.h"
#include "hal/api.h"
#include "runtime/modules/hal/hal_module.h"
#include "vm/api.h"
#include "vm/builder/module_builder.h"
#include "gtest/gtest.h"

namespace osprey::compiler::vm_backend {
namespace {

namespace mhal = ::osprey::modules::hal;

std::string statusText(const osprey::Status &s) {
  char buf[512];
  s.ToString(buf, sizeof(buf));
  return buf;
}

// Counts device allocations of one byte size (the arena's) on top of the
// default allocator.
class CountingAllocator final : public osprey::Allocator {
public:
  osprey::Status Allocate(size_t size, size_t alignment,
                          void **out_ptr) override {
    if (size == watched_size.load()) {
      ++watched_allocations;
    }
    return osprey::Allocator::Default()->Allocate(size, alignment, out_ptr);
  }
  void Free(void *ptr) override { osprey::Allocator::Default()->Free(ptr); }

  std::atomic<size_t> watched_size{0};
  std::atomic<int> watched_allocations{0};
};

constexpr int kIn = 64, kHidden = 128, kOut = 16;

float weight1(int k, int n) { return float((k * 7 + n * 3) % 11 - 5) / 8; }
float weight2(int k, int n) { return float((k * 5 + n) % 9 - 4) / 16; }

std::string denseOf(int rows, int cols, float (*f)(int, int)) {
  std::string s = "dense<[";
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      s += (r || c ? ", " : "") + std::to_string(f(r, c));
    }
  }
  return s + "]>";
}

// y = relu(x * W1) * W2: two regions, W1 (32 KiB) and W2 (8 KiB) bound as
// constants, the 512-byte hidden value in the arena.
std::string graphText() {
  return "graph @mlp(%x: tensor<1x64xf32>) {\n"
         "  %w1 = Constant() {value = " +
         denseOf(kIn, kHidden, weight1) +
         "} : tensor<64x128xf32>\n"
         "  %w2 = Constant() {value = " +
         denseOf(kHidden, kOut, weight2) +
         "} : tensor<128x16xf32>\n"
         "  %h = MatMul(%x, %w1) : tensor<1x128xf32>\n"
         "  %r = Relu(%h) : tensor<1x128xf32>\n"
         "  %y = MatMul(%r, %w2) : tensor<1x16xf32>\n"
         "  return %y\n"
         "}\n";
}

std::vector<float> reference(const std::vector<float> &x) {
  std::vector<float> h(kHidden, 0), y(kOut, 0);
  for (int n = 0; n < kHidden; ++n) {
    for (int k = 0; k < kIn; ++k) {
      h[n] += x[k] * weight1(k, n);
    }
    h[n] = h[n] > 0 ? h[n] : 0;
  }
  for (int n = 0; n < kOut; ++n) {
    for (int k = 0; k < kHidden; ++k) {
      y[n] += h[k] * weight2(k, n);
    }
  }
  return y;
}

class ModuleEmitterTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto graph = graph::parseGraph(graphText(), "test");
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    auto program = structured::lowering::lowerToStructured(**graph);
    ASSERT_TRUE(program.ok()) << program.status().message();
    ASSERT_TRUE(structured::fuseAndTile(*program).ok());
    auto d = dispatch::formDispatchRegions(std::move(*program));
    ASSERT_TRUE(d.ok()) << d.status().message();
    ASSERT_TRUE(dispatch::planMemory(*d).ok());
    program_ = std::move(*d);
    auto target = llvm_cpu::resolveCpuTarget("host");
    ASSERT_TRUE(target.ok());
    auto library = llvm_cpu::buildExecutableLibrary(program_, *target, {"mlp"});
    ASSERT_TRUE(library.ok()) << library.status().message();
    auto module = emitModule(program_, {target->elfFormat, *library}, "mlp");
    ASSERT_TRUE(module.ok()) << module.status().message();
    file_ = vm::AlignedBytes(*module);

    ASSERT_TRUE(drivers::RegisterEnabledDrivers(registry_).ok());
    auto device = registry_.CreateDevice("cpu-sync", {}, &counting_);
    ASSERT_TRUE(device.ok()) << statusText(device.status());
    device_ = std::move(*device);
    auto instance = vm::Instance::Create(allocator_);
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(*instance);
    ASSERT_TRUE(mhal::RegisterTypes(instance_.get()).ok());
    auto hal = mhal::CreateModule(device_, allocator_);
    ASSERT_TRUE(hal.ok());
    hal_ = std::move(*hal);
    auto loaded = vm::BytecodeModule::Load(file_.span(), nullptr, allocator_);
    ASSERT_TRUE(loaded.ok()) << statusText(loaded.status());
    module_ = std::move(*loaded);
  }

  ref_ptr<vm::Context> NewContext() {
    vm::Module *modules[] = {hal_.get(), module_.get()};
    auto context = vm::Context::Create(instance_.get(), modules, {}, allocator_);
    EXPECT_TRUE(context.ok()) << statusText(context.status());
    return context.ok() ? std::move(*context) : ref_ptr<vm::Context>();
  }

  // Calls main with |x| and returns its status.
  osprey::Status Call(vm::Context *context, const std::vector<float> &x) {
    hal::BufferParams params;
    auto buffer = device_->allocator()->AllocateBuffer(params, x.size() * 4);
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE((*buffer)->WriteData(0, x.data(), x.size() * 4).ok());
    const int64_t shape[] = {1, kIn};
    auto view = hal::BufferView::Create(
        std::move(*buffer), shape, hal::ElementType::kFloat32,
        hal::Encoding::kDenseRowMajor, allocator_);
    EXPECT_TRUE(view.ok());
    auto main = context->LookupFunction("mlp", "main");
    EXPECT_TRUE(main.ok());
    vm::Value args[] = {vm::Value::FromRef(mhal::WrapBufferView(view->get()))};
    vm::Value results[1];
    return context->Invoke(*main, args, results);
  }

  // Calls main with |x| and returns the output, or an empty vector.
  std::vector<float> Run(vm::Context *context, const std::vector<float> &x) {
    hal::BufferParams params;
    auto buffer = device_->allocator()->AllocateBuffer(params, x.size() * 4);
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE((*buffer)->WriteData(0, x.data(), x.size() * 4).ok());
    const int64_t shape[] = {1, kIn};
    auto view = hal::BufferView::Create(
        std::move(*buffer), shape, hal::ElementType::kFloat32,
        hal::Encoding::kDenseRowMajor, allocator_);
    EXPECT_TRUE(view.ok());
    auto main = context->LookupFunction("mlp", "main");
    EXPECT_TRUE(main.ok());
    vm::Value args[] = {vm::Value::FromRef(mhal::WrapBufferView(view->get()))};
    vm::Value results[1];
    osprey::Status status = context->Invoke(*main, args, results);
    EXPECT_TRUE(status.ok()) << statusText(status);
    if (!status.ok()) {
      return {};
    }
    auto *out = results[0].ref.As<hal::BufferView>(&mhal::kBufferViewType);
    EXPECT_NE(out, nullptr);
    std::vector<float> y(kOut);
    EXPECT_TRUE(out->buffer()->ReadData(0, y.data(), y.size() * 4).ok());
    return y;
  }

  static void ExpectNear(const std::vector<float> &a,
                         const std::vector<float> &b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], b[i], 1e-4f) << "element " << i;
    }
  }

  static std::vector<float> Input(float scale) {
    std::vector<float> x(kIn);
    for (int i = 0; i < kIn; ++i) {
      x[i] = scale * float(i % 13 - 6) / 4;
    }
    return x;
  }

  dispatch::DispatchProgram program_;
  vm::AlignedBytes file_;
  CountingAllocator counting_;
  osprey::Allocator *allocator_ = osprey::Allocator::Default();
  hal::DriverRegistry registry_;
  ref_ptr<hal::Device> device_;
  ref_ptr<vm::Instance> instance_;
  ref_ptr<vm::Module> hal_;
  ref_ptr<vm::BytecodeModule> module_;
};

TEST_F(ModuleEmitterTest, ConstantsAreRodataAndNotInTheExecutable) {
  ASSERT_EQ(module_->executable_count(), 1u);
  const vm::ExecutableInfo &exe = module_->executable(0);
  std::vector<float> w1;
  for (int k = 0; k < kIn; ++k) {
    for (int n = 0; n < kHidden; ++n) {
      w1.push_back(weight1(k, n));
    }
  }
  const uint8_t *begin = exe.data, *end = exe.data + exe.length;
  // The first 64 weights as bytes: not in the library, once in rodata.
  const auto *needle = reinterpret_cast<const uint8_t *>(w1.data());
  EXPECT_EQ(std::search(begin, end, needle, needle + 256), end)
      << "the executable library embeds the weights";
  int segments = 0;
  for (uint32_t i = 0; i < module_->rodata_count(); ++i) {
    const vm::SegmentInfo &seg = module_->rodata(i);
    if (seg.length == w1.size() * 4 &&
        memcmp(seg.data, w1.data(), seg.length) == 0) {
      ++segments;
      EXPECT_EQ(seg.alignment, 64u);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(seg.data) % 64, 0u);
    }
  }
  EXPECT_EQ(segments, 1);
  EXPECT_STREQ(module_->LookupAttribute("arena_size"),
               std::to_string(program_.arenaSize).c_str());
  EXPECT_EQ(program_.arenaSize, kHidden * 4);
}

TEST_F(ModuleEmitterTest, SecondCallReusesTheArena) {
  counting_.watched_size = size_t(program_.arenaSize);
  ref_ptr<vm::Context> context = NewContext();
  ASSERT_TRUE(context);
  ExpectNear(Run(context.get(), Input(1)), reference(Input(1)));
  EXPECT_EQ(counting_.watched_allocations.load(), 1);
  ExpectNear(Run(context.get(), Input(-2)), reference(Input(-2)));
  ExpectNear(Run(context.get(), Input(3)), reference(Input(3)));
  EXPECT_EQ(counting_.watched_allocations.load(), 1)
      << "later calls must reuse the context's arena";
  // Another context gets its own arena.
  ref_ptr<vm::Context> other = NewContext();
  ASSERT_TRUE(other);
  ExpectNear(Run(other.get(), Input(0.5f)), reference(Input(0.5f)));
  EXPECT_EQ(counting_.watched_allocations.load(), 2);
}

TEST_F(ModuleEmitterTest, ApplicationSuppliesTheArena) {
  counting_.watched_size = size_t(program_.arenaSize);
  ref_ptr<vm::Context> context = NewContext();
  ASSERT_TRUE(context);
  auto set_arena = context->LookupFunction("mlp", "set_arena");
  ASSERT_TRUE(set_arena.ok());
  auto call = [&](size_t bytes, float *memory) {
    hal::BufferParams params;
    params.type = hal::MemoryType::kHostLocal | hal::MemoryType::kDeviceVisible;
    auto buffer = device_->allocator()->ImportBuffer(params, memory, bytes, {});
    EXPECT_TRUE(buffer.ok());
    vm::Value args[] = {
        vm::Value::FromRef(mhal::WrapBuffer(buffer->get()))};
    return context->Invoke(*set_arena, args, {});
  };
  alignas(64) float small[8];
  osprey::Status too_small = call(sizeof(small), small);
  EXPECT_EQ(too_small.code(), osprey::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(too_small.message())
                .find("arena buffer of 32 bytes is smaller than the 512 bytes"),
            std::string::npos)
      << statusText(too_small);

  alignas(64) float memory[kHidden];
  std::fill(memory, memory + kHidden, -1.0f);
  ASSERT_TRUE(call(sizeof(memory), memory).ok());
  for (float scale : {1.0f, -0.5f}) {
    ExpectNear(Run(context.get(), Input(scale)), reference(Input(scale)));
  }
  EXPECT_EQ(counting_.watched_allocations.load(), 0)
      << "main must use the supplied arena";
  // The hidden activation (after relu, never negative) lives in the memory
  // the application supplied.
  for (int i = 0; i < kHidden; ++i) {
    EXPECT_GE(memory[i], 0.0f) << "element " << i;
  }
}

TEST_F(ModuleEmitterTest, AFailedCallDropsTheArenaItTook) {
  // An arena the dispatches may not write makes the call fail after main
  // took it out of the context; the next call must not see it again.
  counting_.watched_size = size_t(program_.arenaSize);
  ref_ptr<vm::Context> context = NewContext();
  ASSERT_TRUE(context);
  alignas(64) float memory[kHidden];
  hal::BufferParams params;
  params.type = hal::MemoryType::kHostLocal | hal::MemoryType::kDeviceVisible;
  params.usage = hal::BufferUsage::kDispatchStorageRead;
  auto read_only = device_->allocator()->ImportBuffer(params, memory,
                                                      sizeof(memory), {});
  ASSERT_TRUE(read_only.ok());
  auto set_arena = context->LookupFunction("mlp", "set_arena");
  ASSERT_TRUE(set_arena.ok());
  vm::Value args[] = {vm::Value::FromRef(mhal::WrapBuffer(read_only->get()))};
  ASSERT_TRUE(context->Invoke(*set_arena, args, {}).ok());
  osprey::Status failed = Call(context.get(), Input(1));
  EXPECT_EQ(failed.code(), osprey::StatusCode::kPermissionDenied)
      << statusText(failed);
  EXPECT_EQ(counting_.watched_allocations.load(), 0);
  ExpectNear(Run(context.get(), Input(2)), reference(Input(2)));
  EXPECT_EQ(counting_.watched_allocations.load(), 1);
}

TEST_F(ModuleEmitterTest, ContextsRunConcurrently) {
  constexpr int kThreads = 2, kCalls = 20;
  std::vector<ref_ptr<vm::Context>> contexts;
  for (int t = 0; t < kThreads; ++t) {
    contexts.push_back(NewContext());
    ASSERT_TRUE(contexts.back());
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const float scale = float(t * kCalls + i + 1) / 8;
        std::vector<float> y = Run(contexts[t].get(), Input(scale));
        std::vector<float> want = reference(Input(scale));
        for (int k = 0; k < kOut; ++k) {
          if (y.size() != size_t(kOut) || std::abs(y[k] - want[k]) > 1e-3f) {
            ++mismatches;
            break;
          }
        }
      }
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(ModuleEmitterTest, WrappedConstantsCannotBeWrittenByADispatch) {
  // Bind a wrapped rodata segment to export 0, whose last binding is
  // written: recording the dispatch must fail.
  ref_ptr<vm::Context> context = NewContext();
  ASSERT_TRUE(context);
  auto wrap = context->LookupFunction("hal", "buffer.wrap_rodata");
  ASSERT_TRUE(wrap.ok());
  uint32_t segment = module_->rodata_count();
  for (uint32_t i = 0; i < module_->rodata_count(); ++i) {
    if (module_->rodata(i).alignment == 64) {
      segment = i;
      break;
    }
  }
  ASSERT_LT(segment, module_->rodata_count());
  vm::Value args[] = {
      vm::Value::FromRef(vm::Ref(device_->allocator(), &mhal::kAllocatorType)),
      vm::Value::FromRef(module_->rodata_ref(segment))};
  vm::Value results[1];
  ASSERT_TRUE(context->Invoke(*wrap, args, results).ok());
  hal::Buffer *constant = results[0].ref.As<hal::Buffer>(&mhal::kBufferType);
  ASSERT_NE(constant, nullptr);

  auto cache = device_->CreateExecutableCache();
  ASSERT_TRUE(cache.ok());
  hal::ExecutableParams params;
  params.format = module_->executable(0).format;
  params.data = std::span<const uint8_t>(module_->executable(0).data,
                                         module_->executable(0).length);
  auto executable = (*cache)->PrepareExecutable(params);
  ASSERT_TRUE(executable.ok()) << statusText(executable.status());
  const hal::ExportInfo &info = (*executable)->export_info(0);
  auto command_buffer =
      device_->CreateCommandBuffer(hal::CommandBufferMode::kOneShot);
  ASSERT_TRUE(command_buffer.ok());
  ASSERT_TRUE((*command_buffer)->Begin().ok());
  std::vector<hal::BufferRef> bindings(info.binding_count,
                                       hal::BufferRef{constant, 0, 4});
  osprey::Status status = (*command_buffer)
                              ->Dispatch(executable->get(), 0, {1, 1, 1}, {},
                                         bindings);
  EXPECT_EQ(status.code(), osprey::StatusCode::kPermissionDenied)
      << statusText(status);
  EXPECT_NE(std::string(status.message()).find("read-only"), std::string::npos)
      << statusText(status);
}

} // namespace
} // namespace osprey::compiler::vm_backend

namespace osprey::compiler::vm_backend {
namespace {

// Each region in an executable of its own, the second found by format: two
// command buffers, the second waiting on the semaphore the first signals,
// give the same result as one.
TEST_F(ModuleEmitterTest, RegionsInTwoExecutablesRunInOrder) {
  ASSERT_EQ(program_.regions.size(), 2u);
  auto target = llvm_cpu::resolveCpuTarget("host");
  ASSERT_TRUE(target.ok());
  std::vector<targets::Executable> executables;
  for (unsigned r = 0; r < 2; ++r) {
    auto library = llvm_cpu::buildExecutableLibrary(
        targets::regionSubset(program_, {r}), *target,
        {"mlp_" + std::to_string(r)});
    ASSERT_TRUE(library.ok()) << library.status().message();
    executables.push_back({target->elfFormat, *library});
  }
  auto module = emitModule(program_,
                           {{&executables[0], {0}, false},
                            {&executables[1], {1}, true}},
                           "mlp");
  ASSERT_TRUE(module.ok()) << module.status().message();
  vm::AlignedBytes file(*module);
  auto loaded = vm::BytecodeModule::Load(file.span(), nullptr, allocator_);
  ASSERT_TRUE(loaded.ok()) << statusText(loaded.status());
  module_ = std::move(*loaded);
  ASSERT_EQ(module_->executable_count(), 2u);
  bool semaphores = false, select = false;
  for (uint32_t i = 0; i < module_->import_count(); ++i) {
    std::string name = module_->import(i).full_name;
    semaphores |= name == "hal.device.queue.execute";
    select |= name == "hal.devices.select";
  }
  EXPECT_TRUE(semaphores && select);
  ref_ptr<vm::Context> context = NewContext();
  ASSERT_TRUE(context);
  ExpectNear(Run(context.get(), Input(1)), reference(Input(1)));
  ExpectNear(Run(context.get(), Input(-3)), reference(Input(-3)));
}

TEST_F(ModuleEmitterTest, EveryRegionIsInExactlyOneExecutable) {
  targets::Executable exe{"elf-x86_64", {1, 2, 3}};
  auto missing = emitModule(program_, {{&exe, {0}, false}}, "mlp");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("is in no executable"),
            std::string::npos)
      << missing.status().message();
  auto twice =
      emitModule(program_, {{&exe, {0, 1}, false}, {&exe, {1}, true}}, "mlp");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(std::string(twice.status().message()).find("in two executables"),
            std::string::npos)
      << twice.status().message();
  auto none = emitModule(program_, std::vector<ModuleExecutable>{}, "mlp");
  EXPECT_FALSE(none.ok());
}

} // namespace
} // namespace osprey::compiler::vm_backend

namespace osprey::compiler::vm_backend {
namespace {

// Two variants of one program: the first selects its device by format, the
// second is the fallback. Both give the reference; badly formed variant
// lists are refused.
TEST_F(ModuleEmitterTest, VariantsShareArgumentsAndResults) {
  auto target = llvm_cpu::resolveCpuTarget("host");
  ASSERT_TRUE(target.ok());
  auto library = llvm_cpu::buildExecutableLibrary(program_, *target, {"mlp"});
  ASSERT_TRUE(library.ok()) << library.status().message();
  targets::Executable exe{target->elfFormat, *library};
  std::vector<unsigned> regions = {0, 1};
  auto module = emitModule({{&program_, {{&exe, regions, true}}},
                            {&program_, {{&exe, regions, false}}}},
                           "mlp");
  ASSERT_TRUE(module.ok()) << module.status().message();
  vm::AlignedBytes file(*module);
  auto loaded = vm::BytecodeModule::Load(file.span(), nullptr, allocator_);
  ASSERT_TRUE(loaded.ok()) << statusText(loaded.status());
  module_ = std::move(*loaded);
  ref_ptr<vm::Context> context = NewContext();
  ASSERT_TRUE(context);
  ExpectNear(Run(context.get(), Input(2)), reference(Input(2)));

  auto selecting = emitModule({{&program_, {{&exe, regions, false}}},
                               {&program_, {{&exe, regions, true}}}},
                              "mlp");
  ASSERT_FALSE(selecting.ok());
  EXPECT_NE(std::string(selecting.status().message()).find("default device"),
            std::string::npos);
  auto none = emitModule(std::vector<ModuleVariant>{}, "mlp");
  EXPECT_FALSE(none.ok());
}

} // namespace
} // namespace osprey::compiler::vm_backend
