// Runs the assembly tests in vm/test/*.vmasm: every export named test_*
// must succeed and make at least one expect.* call; every export named
// error_<code>__<what> must fail with status <code>. Each file must also
// survive a print/parse round trip unchanged.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using testing::LoadAssembly;

std::vector<std::string> AssemblyFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(OSPREY_VM_TEST_DIR)) {
    if (entry.path().extension() == ".vmasm") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& name) {
  std::ifstream in(std::string(OSPREY_VM_TEST_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class AssemblyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AssemblyTest, RunsExports) {
  std::string text = ReadFile(GetParam());
  ASSERT_FALSE(text.empty());
  auto loaded = LoadAssembly(text);
  ASSERT_TRUE(loaded.ok()) << testing::StatusText(loaded.status());
  auto instance = Instance::Create(Allocator::Default());
  ASSERT_TRUE(instance.ok());
  ref_ptr<NativeModule> expect = testing::CreateExpectModule();
  Module* modules[] = {expect.get(), loaded->module.get()};
  auto context = Context::Create(instance->get(), modules, {}, Allocator::Default());
  ASSERT_TRUE(context.ok()) << testing::StatusText(context.status());

  const BytecodeModule& module = *loaded->module;
  int tests = 0;
  for (uint32_t i = 0; i < module.export_count(); ++i) {
    std::string name = module.export_info(i).name;
    bool is_test = name.rfind("test_", 0) == 0;
    bool is_error = name.rfind("error_", 0) == 0;
    if (!is_test && !is_error) continue;
    ++tests;
    SCOPED_TRACE(name);
    auto fn = (*context)->LookupFunction(module.name(), name.c_str());
    ASSERT_TRUE(fn.ok());
    int before = testing::ExpectationCount();
    Status status = (*context)->Invoke(*fn, {}, {});
    if (is_test) {
      EXPECT_TRUE(status.ok()) << testing::StatusText(status);
      EXPECT_GT(testing::ExpectationCount(), before) << "test made no expect.* calls";
    } else {
      size_t end = name.find("__");
      ASSERT_NE(end, std::string::npos) << "error tests are named error_<code>__<what>";
      std::string code = name.substr(6, end - 6);
      std::transform(code.begin(), code.end(), code.begin(), ::toupper);
      EXPECT_EQ(StatusCodeName(status.code()), code) << testing::StatusText(status);
      // The backtrace names the failing function.
      EXPECT_NE(std::string(status.message()).find(module.name() + std::string(".") + name),
                std::string::npos)
          << status.message();
    }
    EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
  }
  EXPECT_GT(tests, 0) << "no test_* or error_* exports in " << GetParam();
}

TEST_P(AssemblyTest, PrintParseRoundTrip) {
  std::string text = ReadFile(GetParam());
  auto file = AssembleModule(text);
  ASSERT_TRUE(file.ok()) << testing::StatusText(file.status());
  AlignedBytes aligned(*file);
  auto printed = Disassemble(aligned.span());
  ASSERT_TRUE(printed.ok()) << testing::StatusText(printed.status());
  auto reassembled = AssembleModule(*printed);
  ASSERT_TRUE(reassembled.ok()) << testing::StatusText(reassembled.status()) << "\n" << *printed;
  EXPECT_EQ(*reassembled, *file) << *printed;
}

INSTANTIATE_TEST_SUITE_P(Files, AssemblyTest, ::testing::ValuesIn(AssemblyFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           for (char& c : name) {
                             if (!isalnum(uint8_t(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace osprey::vm
