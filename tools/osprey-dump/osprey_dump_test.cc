// Tests of osprey-dump: the dump text of good, foreign and bad libraries,
// and the tool surviving a library whose code crashes.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/loaders/elf/elf_image.h"
#include "tests/executables/test_executables.h"
#include "tools/osprey-dump/dump.h"
#include "vm/builder/module_builder.h"
#include "vm/opcodes.h"

namespace osprey::tools::dump {
namespace {

using hal::local::loaders::elf::ElfHostMachine;
using hal::local::loaders::elf::ElfMachine;
using hal::local::loaders::elf::ElfMachineName;

class OspreyDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!osprey::testing::TestExecutablesAvailable()) {
      GTEST_SKIP() << "test libraries were not built (clang-19/ld.lld-19 not found)";
    }
    ElfMachine host;
    ASSERT_TRUE(ElfHostMachine(&host));
    arch_ = ElfMachineName(host);
  }

  // Runs the tool on |bytes| written to a temporary file; returns its exit
  // status (-1 if it did not exit normally) and its output.
  int RunTool(const std::vector<uint8_t>& bytes, std::string* output) {
    char path[] = "/tmp/osprey_dump_test_XXXXXX";
    int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
    std::string command = std::string(OSPREY_DUMP_PATH) + " " + path + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    char buffer[256];
    while (pipe && fgets(buffer, sizeof(buffer), pipe)) output->append(buffer);
    const int status = pipe ? pclose(pipe) : -1;
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  const char* arch_ = "";
};

TEST_F(OspreyDumpTest, DescribesHostLibrary) {
  auto bytes = osprey::testing::TestExecutable("workgroups", arch_);
  std::string out;
  ASSERT_TRUE(DumpFile(bytes, &out).ok()) << out;
  EXPECT_NE(out.find("name: workgroups"), std::string::npos) << out;
  EXPECT_NE(out.find("exports (2):"), std::string::npos) << out;
  EXPECT_NE(out.find("1: chunk_sum"), std::string::npos) << out;
  EXPECT_NE(out.find("bindings: 2 [0=read, 1=read-write]"), std::string::npos) << out;
  EXPECT_NE(out.find("workgroup size: 16x1x1"), std::string::npos) << out;
  EXPECT_NE(out.find("local memory: 64 bytes"), std::string::npos) << out;
}

TEST_F(OspreyDumpTest, DescribesForeignLibraryWithoutRunningIt) {
  auto bytes = osprey::testing::TestExecutable("vector_add", "riscv32");
  std::string out;
  ASSERT_TRUE(DumpFile(bytes, &out).ok()) << out;
  EXPECT_NE(out.find("format: elf-riscv32 (ELF32, riscv32)"), std::string::npos) << out;
  EXPECT_NE(out.find("(RELA)"), std::string::npos) << out;
  EXPECT_NE(out.find("not queried"), std::string::npos) << out;
}

TEST_F(OspreyDumpTest, ReportsLoaderErrors) {
  auto good = osprey::testing::TestExecutable("vector_add", arch_);
  std::vector<uint8_t> bytes(good.begin(), good.end());
  bytes[18] = 0x03;  // e_machine = EM_386.
  std::string out;
  Status status = DumpFile(bytes, &out);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> junk(64, 0);
  EXPECT_EQ(DumpFile(junk, &out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DumpFile({}, &out).code(), StatusCode::kInvalidArgument);
}

TEST_F(OspreyDumpTest, ToolExitsOneOnBadFileAndZeroOnGood) {
  auto good = osprey::testing::TestExecutable("vector_add", arch_);
  std::string out;
  EXPECT_EQ(RunTool(std::vector<uint8_t>(good.begin(), good.end()), &out), 0) << out;
  EXPECT_NE(out.find("0: add"), std::string::npos) << out;
  out.clear();
  std::vector<uint8_t> cut(good.begin(), good.begin() + good.size() - 1);
  EXPECT_EQ(RunTool(cut, &out), 1) << out;
  EXPECT_NE(out.find("DATA_LOSS"), std::string::npos) << out;
}

// A library whose query function traps: the tool reports it and exits 1
// instead of crashing.
TEST_F(OspreyDumpTest, SurvivesCrashingLibraryCode) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the trapping instruction used here is x86_64 (ud2)";
#else
  auto good = osprey::testing::TestExecutable("vector_add", arch_);
  hal::local::loaders::elf::ElfImageOptions options;
  options.machine = ElfMachine::kX86_64;
  auto image = hal::local::loaders::elf::ElfImage::Load(good, options, Allocator::Default());
  ASSERT_TRUE(image.ok());
  uint8_t code[16];
  ASSERT_TRUE((*image)->Read((*image)->query_address(), code, sizeof(code)).ok());
  std::vector<uint8_t> bytes(good.begin(), good.end());
  auto it = std::search(bytes.begin(), bytes.end(), code, code + sizeof(code));
  ASSERT_NE(it, bytes.end());
  it[0] = 0x0f;  // ud2
  it[1] = 0x0b;
  std::string out;
  EXPECT_EQ(RunTool(bytes, &out), 1) << out;
  EXPECT_NE(out.find("dumping crashed"), std::string::npos) << out;
#endif
}

TEST(OspreyDumpModuleTest, ListsModelInputsAndOutputsWithEscapedNames) {
  vm::ModuleBuilder b("m");
  uint32_t f = b.DeclareFunction("main", ":");
  b.DefineFunction(f, {uint8_t(vm::Opcode::kReturn), 0}, {});
  b.AddExport("main", f);
  b.SetAttribute("main.input.0.name", "x:0");
  b.SetAttribute("main.input.0.type", "2x3xf32");
  b.SetAttribute("main.input.1.name", "a\n\"b\"");
  b.SetAttribute("main.output.0.name", "y");
  b.SetAttribute("main.output.0.type", "4xf32");
  b.SetAttribute("main.output.2.name", "after a gap");
  auto file = b.Build();
  ASSERT_TRUE(file.ok());
  std::string out;
  Status status = DumpModule(*file, &out);
  ASSERT_TRUE(status.ok());
  EXPECT_NE(out.find("model inputs and outputs:\n"
                     "  main input 0: \"x:0\" 2x3xf32\n"
                     "  main input 1: \"a\\x0a\\\"b\\\"\"\n"
                     "  main output 0: \"y\" 4xf32\n"
                     "disassembly:"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("attribute: main.input.1.name = a\\x0a\\\"b\\\"\n"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace osprey::tools::dump
