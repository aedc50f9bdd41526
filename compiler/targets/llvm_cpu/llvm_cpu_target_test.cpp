// Tests of the LLVM CPU target behind the target interface: formats,
// fusion options, binding layout and the executables it builds.
#include "compiler/targets/llvm_cpu/llvm_cpu_target.h"

#include <string>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

constexpr const char *kGraph = R"(graph @t(%x: tensor<1x64xf32>,
                                  %w: tensor<64x32xf32>) {
  %y = MatMul(%x, %w) : tensor<1x32xf32>
  %r = Relu(%y) : tensor<1x32xf32>
  return %r
})";

std::unique_ptr<LlvmCpuTarget> create(const char *cpu,
                                      LlvmCpuTargetOptions options = {}) {
  auto target = LlvmCpuTarget::create(cpu, "", std::move(options));
  EXPECT_TRUE(target.ok()) << target.status().message();
  return target.ok() ? std::move(*target) : nullptr;
}

TEST(LlvmCpuTargetTest, FormatsNameTheElfArchitectureOrTheStaticLoader) {
  EXPECT_EQ(create("x86_64")->executableFormat(), "elf-x86_64");
  EXPECT_EQ(create("armv7em")->executableFormat(), "elf-armv7em");
  EXPECT_EQ(create("riscv32")->executableFormat(), "elf-riscv32");
  LlvmCpuTargetOptions options;
  options.staticLibrary = true;
  EXPECT_EQ(create("armv7em", options)->executableFormat(), "static");
  EXPECT_EQ(create("x86_64")->name(), "llvm-cpu");
}

TEST(LlvmCpuTargetTest, UnknownCpuIsAnError) {
  auto target = LlvmCpuTarget::create("z80", "", {});
  EXPECT_EQ(target.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LlvmCpuTargetTest, FusionOptionsCarryTheMicrokernelAndTheTuning) {
  LlvmCpuTargetOptions options;
  options.fusion.winograd.enabled = false;
  options.fusion.vectorWidth = 99; // replaced by the CPU's
  structured::FusionOptions avx2 = create("x86_64", options)->fusionOptions();
  EXPECT_EQ(avx2.vectorWidth, 8u);
  EXPECT_FALSE(avx2.winograd.enabled);
  EXPECT_EQ(create("armv7em")->fusionOptions().vectorWidth, 1u);
}

TEST(LlvmCpuTargetTest, PlanOptionsFollowTheBindingLayout) {
  dispatch::PlanOptions plan = targets::planOptionsFor(*create("x86_64"));
  EXPECT_EQ(plan.maxBindings, 32u);
  EXPECT_EQ(plan.maxEmbeddedConstantBytes, 256);
}

TEST(LlvmCpuTargetTest, BuildsAnElfOrAStaticLibraryWithItsFiles) {
  auto program = testing::lowerGraphText(kGraph);
  ASSERT_TRUE(program.ok()) << program.status().message();
  targets::BuildOptions build;
  build.name = "kws";
  auto elf = create("armv7em")->buildExecutable(*program, build);
  ASSERT_TRUE(elf.ok()) << elf.status().message();
  EXPECT_EQ(elf->format, "elf-armv7em");
  ASSERT_GE(elf->data.size(), 4u);
  EXPECT_EQ(std::string(elf->data.begin(), elf->data.begin() + 4), "\x7f" "ELF");
  EXPECT_TRUE(elf->files.empty());

  LlvmCpuTargetOptions options;
  options.staticLibrary = true;
  std::string ir;
  build.irText = &ir;
  auto lib = create("riscv32", options)->buildExecutable(*program, build);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  EXPECT_EQ(lib->format, "static");
  EXPECT_EQ(std::string(lib->data.begin(), lib->data.end()), "kws");
  ASSERT_EQ(lib->files.size(), 2u);
  EXPECT_EQ(lib->files[0].extension, "o");
  EXPECT_EQ(lib->files[1].extension, "h");
  std::string header(lib->files[1].bytes.begin(), lib->files[1].bytes.end());
  EXPECT_NE(header.find("kws_library_query"), std::string::npos);
  EXPECT_NE(ir.find("define"), std::string::npos) << "the IR text is filled";
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
