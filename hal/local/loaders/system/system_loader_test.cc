// Tests of SystemLoader: dlopen()ed libraries dispatch like embedded ones,
// bad input is rejected before the dynamic linker sees it, and temporary
// files are removed.
#include "hal/local/loaders/system/system_loader.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/loaders/elf/elf_image.h"
#include "tests/executables/test_executables.h"

namespace osprey::hal::local::loaders::system {
namespace {

class SystemLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!osprey::testing::TestExecutablesAvailable()) {
      GTEST_SKIP() << "test libraries were not built (clang-19/ld.lld-19 not found)";
    }
    elf::ElfMachine host;
    ASSERT_TRUE(elf::ElfHostMachine(&host));
    arch_ = elf::ElfMachineName(host);
    format_ = std::string("system-elf-") + arch_;
    char tmpl[] = "/tmp/osprey_system_loader_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loader_ = std::make_unique<SystemLoader>(dir_.c_str());
  }
  void TearDown() override {
    loader_.reset();
    if (!dir_.empty()) {
      EXPECT_EQ(FileCount(), 0) << "temporary files left behind";
      rmdir(dir_.c_str());
    }
    EXPECT_EQ(allocator_.live(), 0u);
  }

  int FileCount() const {
    int n = 0;
    DIR* d = opendir(dir_.c_str());
    if (!d) return -1;
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    return n;
  }

  StatusOr<ref_ptr<LocalExecutable>> Load(std::span<const uint8_t> data, const char* format) {
    ExecutableParams params;
    params.format = format;
    params.data = data;
    return loader_->Load(params, {}, &allocator_);
  }

  const char* arch_ = "";
  std::string format_;
  std::string dir_;
  std::unique_ptr<SystemLoader> loader_;
  CountingAllocator allocator_{Allocator::Default()};
};

TEST_F(SystemLoaderTest, CanLoadHostSystemFormatOnly) {
  EXPECT_TRUE(loader_->CanLoad(format_.c_str()));
  EXPECT_FALSE(loader_->CanLoad((std::string("elf-") + arch_).c_str()));
  EXPECT_FALSE(loader_->CanLoad("system-elf-armv7em"));
  EXPECT_FALSE(loader_->CanLoad(nullptr));
}

TEST_F(SystemLoaderTest, LoadsAndDispatchesVectorAdd) {
  auto bytes = osprey::testing::TestExecutable("vector_add", arch_);
  {
    auto executable = Load(bytes, format_.c_str());
    ASSERT_TRUE(executable.ok()) << executable.status().message();
    EXPECT_EQ(FileCount(), 1) << "file stays while loaded, for debuggers";
    ASSERT_EQ((*executable)->export_count(), 2u);
    EXPECT_STREQ((*executable)->export_info(0).name, "add");
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c[4] = {};
    void* ptrs[3] = {a, b, c};
    size_t lengths[3] = {sizeof(a), sizeof(b), sizeof(c)};
    uint32_t n = 4;
    osprey_dispatch_state_v1_t state = {};
    state.workgroup_size_x = 64;
    state.workgroup_size_y = state.workgroup_size_z = 1;
    state.workgroup_count_x = state.workgroup_count_y = state.workgroup_count_z = 1;
    state.constant_count = 1;
    state.constants = &n;
    state.binding_count = 3;
    state.binding_ptrs = ptrs;
    state.binding_lengths = lengths;
    osprey_workgroup_state_v1_t wg = {};
    ASSERT_EQ((*executable)->CallWorkgroup(0, &state, &wg), 0);
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(c[i], a[i] + b[i]);
  }
  EXPECT_EQ(FileCount(), 0);
}

TEST_F(SystemLoaderTest, RejectsBadInputBeforeDlopen) {
  auto bytes = osprey::testing::TestExecutable("vector_add", arch_);
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() / 3);
  EXPECT_EQ(Load(truncated, format_.c_str()).status().code(), StatusCode::kDataLoss);
  std::vector<uint8_t> junk(256, 0x5a);
  EXPECT_EQ(Load(junk, format_.c_str()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Load(bytes, "elf-x86_64").status().code(), StatusCode::kInvalidArgument);
  auto foreign = osprey::testing::TestExecutable("vector_add", "armv7em");
  EXPECT_EQ(Load(foreign, "system-elf-armv7em").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Load(foreign, format_.c_str()).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SystemLoaderTest, MissingImportReleasesTheFile) {
  auto bytes = osprey::testing::TestExecutable("imports", arch_);
  EXPECT_EQ(Load(bytes, format_.c_str()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FileCount(), 0);
}

TEST(SystemLoaderFactoryTest, CreateAndDelete) {
  CountingAllocator allocator(Allocator::Default());
  ExecutableLoader* loader = nullptr;
  ASSERT_TRUE(CreateSystemLoader(&allocator, &loader).ok());
  EXPECT_STREQ(loader->name(), "system");
  allocator.Delete(loader);
  EXPECT_EQ(allocator.live(), 0u);
}

}  // namespace
}  // namespace osprey::hal::local::loaders::system
