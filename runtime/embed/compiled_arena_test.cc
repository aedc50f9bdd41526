// Application-supplied arenas with a module compiled by osprey-compile
// (testdata/make_arena_model.py): the arena requirement the compiler
// recorded, the errors for unusable memory, and calls that run in it.
//
//   compiled_arena_test MODULE.osp EXPECTED.bin
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/embed/osprey.hpp"

namespace osprey::embed {
namespace {

using ::testing::HasSubstr;

const char* g_module_path = nullptr;
const char* g_expected_path = nullptr;

constexpr float kA[4] = {1, 2, 3, 4};
constexpr float kB[4] = {0.5f, -1, 0.25f, -2};

class CompiledArenaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_module_path, nullptr) << "usage: compiled_arena_test MODULE.osp EXPECTED.bin";
    FILE* file = fopen(g_expected_path, "rb");
    ASSERT_NE(file, nullptr) << g_expected_path;
    ASSERT_EQ(fread(expected_, sizeof(float), 4, file), 4u);
    fclose(file);
    ASSERT_TRUE(Instance::Create(&instance_).ok());
    ASSERT_TRUE(Device::Create(instance_, "cpu-sync", {}, &device_).ok());
    ASSERT_TRUE(Session::Create(instance_, device_, &session_).ok());
    Status status = session_.LoadModuleFile(g_module_path);
    ASSERT_TRUE(status.ok()) << status.message();
    status = session_.LookupModule(nullptr, &module_);
    ASSERT_TRUE(status.ok()) << status.message();
  }

  // Calls main on the fixed inputs and checks the output.
  void CallAndCheck() {
    Function main_fn;
    Status status = session_.LookupFunction("main", &main_fn);
    ASSERT_TRUE(status.ok()) << status.message();
    const int64_t shape[1] = {4};
    BufferView inputs[2];
    ASSERT_TRUE(BufferView::Create(device_, shape, OSPREY_ELEMENT_TYPE_FLOAT32, kA, sizeof(kA),
                                   &inputs[0]).ok());
    ASSERT_TRUE(BufferView::Create(device_, shape, OSPREY_ELEMENT_TYPE_FLOAT32, kB, sizeof(kB),
                                   &inputs[1]).ok());
    BufferView outputs[1];
    size_t count = 0;
    status = main_fn.Call(inputs, outputs, &count);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_EQ(count, 1u);
    float actual[4] = {};
    ASSERT_TRUE(outputs[0].Read(actual, sizeof(actual)).ok());
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(actual[i], expected_[i], 1e-5f) << i;
  }

  float expected_[4] = {};
  Instance instance_;
  Device device_;
  Session session_;
  Module module_;
};

TEST_F(CompiledArenaTest, RecordsItsArena) {
  const char* text = nullptr;
  ASSERT_TRUE(module_.LookupAttribute("arena_size", &text).ok());
  size_t size = 0, alignment = 0;
  Status status = module_.ArenaRequirement(&size, &alignment);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(std::to_string(size), text);
  // Two 4xf32 transients at least (the sum and the matrix product).
  EXPECT_GE(size, 32u);
  EXPECT_GE(alignment, 16u);
  EXPECT_EQ(alignment & (alignment - 1), 0u);
}

TEST_F(CompiledArenaTest, RunsInApplicationMemory) {
  size_t size = 0, alignment = 0;
  ASSERT_TRUE(module_.ArenaRequirement(&size, &alignment).ok());
  std::vector<uint8_t> storage(size + alignment * 2);
  uint8_t* base = storage.data();
  base += (alignment - reinterpret_cast<uintptr_t>(base) % alignment) % alignment;
  memset(base, 0xcd, size);

  Status status = module_.SetArena(base, size - 1);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("smaller than the"));
  status = module_.SetArena(base + alignment / 2, size);
  EXPECT_EQ(status.code(), OSPREY_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(), HasSubstr("is not aligned to the"));

  status = module_.SetArena(base, size);
  ASSERT_TRUE(status.ok()) << status.message();
  CallAndCheck();
  // The transients went through the application's memory.
  size_t changed = 0;
  for (size_t i = 0; i < size; ++i) changed += base[i] != 0xcd;
  EXPECT_GT(changed, 0u);
  // Reused by the next call.
  memset(base, 0xcd, size);
  CallAndCheck();
  changed = 0;
  for (size_t i = 0; i < size; ++i) changed += base[i] != 0xcd;
  EXPECT_GT(changed, 0u);
}

TEST_F(CompiledArenaTest, RunsWithoutAnApplicationArena) { CallAndCheck(); }

}  // namespace
}  // namespace osprey::embed

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc >= 3) {
    osprey::embed::g_module_path = argv[1];
    osprey::embed::g_expected_path = argv[2];
  }
  return RUN_ALL_TESTS();
}
