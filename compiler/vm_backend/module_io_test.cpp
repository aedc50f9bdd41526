// Compiles small graphs to .osp modules and runs them on a cpu-sync device:
// the module records the model's input and output names, and empty tensors
// (as intermediates, operands or outputs) run instead of failing in the VM.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lowering/lower_graph.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "compiler/vm_backend/module_emitter.h"
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
  char buf[1024];
  s.ToString(buf, sizeof(buf));
  return buf;
}

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

class ModuleIoTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(drivers::RegisterEnabledDrivers(registry_).ok());
    auto device = registry_.CreateDevice("cpu-sync", {}, allocator_);
    ASSERT_TRUE(device.ok()) << statusText(device.status());
    device_ = std::move(*device);
    auto instance = vm::Instance::Create(allocator_);
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(*instance);
    ASSERT_TRUE(mhal::RegisterTypes(instance_.get()).ok());
    auto hal = mhal::CreateModule(device_, allocator_);
    ASSERT_TRUE(hal.ok());
    hal_ = std::move(*hal);
  }

  // Compiles |text| (graph IR) into module "m" and loads it with a context.
  void Compile(const std::string &text) {
    auto graph = graph::parseGraph(text, "test");
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    auto program = structured::lowering::lowerToStructured(**graph);
    ASSERT_TRUE(program.ok()) << program.status().message();
    ASSERT_TRUE(structured::fuseAndTile(*program).ok());
    auto d = dispatch::formDispatchRegions(std::move(*program));
    ASSERT_TRUE(d.ok()) << d.status().message();
    ASSERT_TRUE(dispatch::planMemory(*d).ok());
    auto target = llvm_cpu::resolveCpuTarget("host");
    ASSERT_TRUE(target.ok());
    auto library = llvm_cpu::buildExecutableLibrary(*d, *target, {"m"});
    ASSERT_TRUE(library.ok()) << library.status().message();
    auto module = emitModule(*d, {target->elfFormat, *library}, "m");
    ASSERT_TRUE(module.ok()) << module.status().message();
    file_ = vm::AlignedBytes(*module);
    auto loaded = vm::BytecodeModule::Load(file_.span(), nullptr, allocator_);
    ASSERT_TRUE(loaded.ok()) << statusText(loaded.status());
    module_ = std::move(*loaded);
    vm::Module *modules[] = {hal_.get(), module_.get()};
    auto context =
        vm::Context::Create(instance_.get(), modules, {}, allocator_);
    ASSERT_TRUE(context.ok()) << statusText(context.status());
    context_ = std::move(*context);
  }

  std::string Attribute(const char *key) {
    const char *value = module_->LookupAttribute(key);
    return value ? value : "<missing>";
  }

  // Calls main with |inputs|; fills |outputs| (shape and data of each
  // result) on success.
  osprey::Status Call(const std::vector<Tensor> &inputs,
                      std::vector<Tensor> *outputs, size_t resultCount) {
    std::vector<vm::Value> args;
    for (const Tensor &t : inputs) {
      hal::BufferParams params;
      auto buffer =
          device_->allocator()->AllocateBuffer(params, t.data.size() * 4);
      EXPECT_TRUE(buffer.ok());
      if (!t.data.empty()) {
        EXPECT_TRUE(
            (*buffer)->WriteData(0, t.data.data(), t.data.size() * 4).ok());
      }
      auto view = hal::BufferView::Create(
          std::move(*buffer), t.shape, hal::ElementType::kFloat32,
          hal::Encoding::kDenseRowMajor, allocator_);
      EXPECT_TRUE(view.ok());
      args.push_back(vm::Value::FromRef(mhal::WrapBufferView(view->get())));
    }
    auto main = context_->LookupFunction("m", "main");
    EXPECT_TRUE(main.ok());
    std::vector<vm::Value> results(resultCount);
    OSPREY_RETURN_IF_ERROR(context_->Invoke(*main, args, results));
    for (vm::Value &r : results) {
      auto *view = r.ref.As<hal::BufferView>(&mhal::kBufferViewType);
      EXPECT_NE(view, nullptr);
      if (!view) {
        continue;
      }
      Tensor t;
      t.shape.assign(view->shape().begin(), view->shape().end());
      int64_t count = 1;
      for (int64_t d : t.shape) {
        count *= d;
      }
      t.data.resize(count);
      if (count > 0) {
        EXPECT_TRUE(view->buffer()->ReadData(0, t.data.data(), count * 4).ok());
      }
      outputs->push_back(std::move(t));
    }
    return OkStatus();
  }

  static Tensor Iota(std::vector<int64_t> shape) {
    Tensor t{std::move(shape), {}};
    int64_t count = 1;
    for (int64_t d : t.shape) {
      count *= d;
    }
    for (int64_t i = 0; i < count; ++i) {
      t.data.push_back(float(i + 1));
    }
    return t;
  }

  osprey::Allocator *allocator_ = osprey::Allocator::Default();
  hal::DriverRegistry registry_;
  ref_ptr<hal::Device> device_;
  ref_ptr<vm::Instance> instance_;
  ref_ptr<vm::Module> hal_;
  vm::AlignedBytes file_;
  ref_ptr<vm::BytecodeModule> module_;
  ref_ptr<vm::Context> context_;
};

// The first four rows of a 4x5 input sliced away: an empty 0x5 value.
constexpr const char *kEmptySlice =
    "  %st = Constant() {value = dense<[4]>} : tensor<1xi64>\n"
    "  %en = Constant() {value = dense<[4]>} : tensor<1xi64>\n"
    "  %ax = Constant() {value = dense<[0]>} : tensor<1xi64>\n"
    "  %s = Slice(%x, %st, %en, %ax) : tensor<0x5xf32> loc(\"slice0\")\n";

TEST_F(ModuleIoTest, RecordsTheModelNamesAndTypesOfInputsAndOutputs) {
  ASSERT_NO_FATAL_FAILURE(Compile(
      "graph @m(%x as \"input:0\": tensor<2x3xf32>, %b as \"second in\": "
      "tensor<3xf32>) {\n"
      "  %r = Relu(%x) : tensor<2x3xf32>\n"
      "  %y = Add(%r, %b) : tensor<2x3xf32>\n"
      "  return %y as \"logits-out\", %r\n"
      "}\n"));
  EXPECT_EQ(Attribute("main.input.0.name"), "input:0");
  EXPECT_EQ(Attribute("main.input.0.type"), "2x3xf32");
  EXPECT_EQ(Attribute("main.input.1.name"), "second in");
  EXPECT_EQ(Attribute("main.input.1.type"), "3xf32");
  EXPECT_EQ(Attribute("main.output.0.name"), "logits-out");
  EXPECT_EQ(Attribute("main.output.0.type"), "2x3xf32");
  EXPECT_EQ(Attribute("main.output.1.name"), "r");
  EXPECT_EQ(Attribute("main.input.2.name"), "<missing>");
}

TEST_F(ModuleIoTest, ShapeCheckNamesTheModelInput) {
  ASSERT_NO_FATAL_FAILURE(Compile(
      "graph @m(%x as \"input:0\": tensor<2x3xf32>) {\n"
      "  %r = Relu(%x) : tensor<2x3xf32>\n"
      "  return %r\n"
      "}\n"));
  std::vector<Tensor> outputs;
  osprey::Status status = Call({Iota({3, 2})}, &outputs, 1);
  EXPECT_EQ(status.code(), osprey::StatusCode::kInvalidArgument);
  EXPECT_NE(statusText(status).find("input 0 ('input:0')"), std::string::npos)
      << statusText(status);
}

TEST_F(ModuleIoTest, EmptySliceFeedingPad) {
  ASSERT_NO_FATAL_FAILURE(Compile(
      std::string("graph @m(%x: tensor<4x5xf32>) {\n") + kEmptySlice +
      "  %p = Constant() {value = dense<[1, 0, 1, 0]>} : tensor<4xi64>\n"
      "  %v = Constant() {value = dense<[7.0]>} : tensor<f32>\n"
      "  %y = Pad(%s, %p, %v) : tensor<2x5xf32> loc(\"pad0\")\n"
      "  return %y\n"
      "}\n"));
  std::vector<Tensor> outputs;
  osprey::Status status = Call({Iota({4, 5})}, &outputs, 1);
  ASSERT_TRUE(status.ok()) << statusText(status);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(outputs[0].data, std::vector<float>(10, 7.0f));
}

TEST_F(ModuleIoTest, EmptyGraphOutput) {
  ASSERT_NO_FATAL_FAILURE(Compile(
      std::string("graph @m(%x: tensor<4x5xf32>) {\n") + kEmptySlice +
      "  %y = Relu(%s) : tensor<0x5xf32>\n"
      "  %z = Neg(%x) : tensor<4x5xf32>\n"
      "  return %y, %z\n"
      "}\n"));
  std::vector<Tensor> outputs;
  osprey::Status status = Call({Iota({4, 5})}, &outputs, 2);
  ASSERT_TRUE(status.ok()) << statusText(status);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{0, 5}));
  EXPECT_TRUE(outputs[0].data.empty());
  EXPECT_EQ(outputs[1].data[19], -20.0f);
}

TEST_F(ModuleIoTest, EmptyConcatOperand) {
  ASSERT_NO_FATAL_FAILURE(Compile(
      std::string("graph @m(%x: tensor<4x5xf32>) {\n") + kEmptySlice +
      "  %r = Relu(%s) : tensor<0x5xf32>\n"
      "  %y = Concat(%r, %x, %r) {axis = 0} : tensor<4x5xf32> loc(\"cat0\")\n"
      "  return %y\n"
      "}\n"));
  std::vector<Tensor> outputs;
  Tensor x = Iota({4, 5});
  osprey::Status status = Call({x}, &outputs, 1);
  ASSERT_TRUE(status.ok()) << statusText(status);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape, x.shape);
  EXPECT_EQ(outputs[0].data, x.data);
}

TEST_F(ModuleIoTest, EmptyReductionDimensionOfMatMul) {
  // x[:, 0:0] is 4x0; its product with a 0x3 matrix is all zeros.
  ASSERT_NO_FATAL_FAILURE(Compile(
      "graph @m(%x: tensor<4x5xf32>, %w: tensor<0x3xf32>) {\n"
      "  %st = Constant() {value = dense<[0]>} : tensor<1xi64>\n"
      "  %ax = Constant() {value = dense<[1]>} : tensor<1xi64>\n"
      "  %s = Slice(%x, %st, %st, %ax) : tensor<4x0xf32> loc(\"slice0\")\n"
      "  %e = Exp(%s) : tensor<4x0xf32>\n"
      "  %m = MatMul(%e, %w) : tensor<4x3xf32> loc(\"mm0\")\n"
      "  %one = Constant() {value = dense<[1.0]>} : tensor<f32>\n"
      "  %y = Add(%m, %one) : tensor<4x3xf32>\n"
      "  return %y\n"
      "}\n"));
  std::vector<Tensor> outputs;
  osprey::Status status = Call({Iota({4, 5}), Iota({0, 3})}, &outputs, 1);
  ASSERT_TRUE(status.ok()) << statusText(status);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(outputs[0].data, std::vector<float>(12, 1.0f));
}

} // namespace
} // namespace osprey::compiler::vm_backend
