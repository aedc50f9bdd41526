// Tests of ElfLoader: host libraries loaded, queried and dispatched.
#include "hal/local/loaders/elf/elf_loader.h"

#include <stdio.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/library_executable.h"
#include "hal/local/loaders/elf/testing/elf_test_util.h"
#include "tests/executables/test_abi.h"
#include "tests/executables/test_executables.h"

namespace osprey::hal::local::loaders::elf {
namespace {

using testing::LibraryBytes;
using testing::StatusText;

const char* HostArch() {
  ElfMachine host;
  return ElfHostMachine(&host) ? ElfMachineName(host) : "none";
}

class ElfLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!osprey::testing::TestExecutablesAvailable()) {
      GTEST_SKIP() << "test libraries were not built (clang-19/ld.lld-19 not found)";
    }
    ElfMachine host;
    if (!ElfHostMachine(&host)) GTEST_SKIP() << "host machine has no ELF format";
    format_ = ElfMachineFormat(host);
  }

  StatusOr<ref_ptr<LocalExecutable>> Load(const char* name, const ImportTable& imports = {}) {
    bytes_ = LibraryBytes(name, HostArch());
    ExecutableParams params;
    params.format = format_;
    params.data = bytes_;
    return loader_.Load(params, imports, &allocator_);
  }

  // Runs every workgroup of |ordinal| over a grid; returns the first
  // non-zero result.
  int Dispatch(const LocalExecutable& executable, uint32_t ordinal, const uint32_t count[3],
               std::vector<void*> bindings, std::vector<size_t> lengths,
               std::vector<uint32_t> constants) {
    const ExportInfo& info = executable.export_info(ordinal);
    std::vector<uint8_t> local(info.local_memory_size);
    osprey_dispatch_state_v1_t state = {};
    state.workgroup_size_x = info.workgroup_size[0];
    state.workgroup_size_y = info.workgroup_size[1];
    state.workgroup_size_z = info.workgroup_size[2];
    state.workgroup_count_x = count[0];
    state.workgroup_count_y = count[1];
    state.workgroup_count_z = count[2];
    state.max_concurrency = 1;
    state.constant_count = static_cast<uint32_t>(constants.size());
    state.constants = constants.data();
    state.binding_count = static_cast<uint32_t>(bindings.size());
    state.binding_ptrs = bindings.data();
    state.binding_lengths = lengths.data();
    for (uint32_t z = 0; z < count[2]; ++z) {
      for (uint32_t y = 0; y < count[1]; ++y) {
        for (uint32_t x = 0; x < count[0]; ++x) {
          osprey_workgroup_state_v1_t wg = {};
          wg.workgroup_id_x = x;
          wg.workgroup_id_y = y;
          wg.workgroup_id_z = z;
          wg.local_memory = local.empty() ? nullptr : local.data();
          wg.local_memory_size = info.local_memory_size;
          int rc = executable.CallWorkgroup(ordinal, &state, &wg);
          if (rc != 0) return rc;
        }
      }
    }
    return 0;
  }

  const char* format_ = "";
  std::vector<uint8_t> bytes_;
  ElfLoader loader_;
  CountingAllocator allocator_{Allocator::Default()};
};

TEST_F(ElfLoaderTest, CanLoadOnlyTheHostFormat) {
  EXPECT_TRUE(loader_.CanLoad(format_));
  EXPECT_STREQ(loader_.name(), "elf");
  int accepted = 0;
  for (int i = 0; i < kElfMachineCount; ++i) {
    accepted += loader_.CanLoad(ElfMachineFormat(static_cast<ElfMachine>(i)));
  }
  EXPECT_EQ(accepted, 1);
  EXPECT_FALSE(loader_.CanLoad("static"));
  EXPECT_FALSE(loader_.CanLoad("elf"));
}

TEST_F(ElfLoaderTest, VectorAddWithBindingsAndConstants) {
  {
    auto executable = Load("vector_add");
    ASSERT_TRUE(executable.ok()) << StatusText(executable.status());
    const LocalExecutable& e = **executable;
    ASSERT_EQ(e.export_count(), 2u);
    EXPECT_STREQ(e.export_info(0).name, "add");
    EXPECT_EQ(e.export_info(0).binding_count, 3u);
    EXPECT_EQ(e.export_info(0).constant_count, 1u);
    EXPECT_FALSE(e.export_info(0).binding_is_written(0));
    EXPECT_TRUE(e.export_info(0).binding_is_written(2));
    EXPECT_EQ(e.export_info(0).workgroup_size[0], 64u);
    auto ordinal = e.LookupExport("scale");
    ASSERT_TRUE(ordinal.ok());
    EXPECT_EQ(*ordinal, 1u);

    const uint32_t n = 150;
    std::vector<float> a(n), b(n), c(n, -1.0f);
    for (uint32_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i) * 0.5f;
      b[i] = 100.0f - static_cast<float>(i);
    }
    const uint32_t count[3] = {(n + 63) / 64, 1, 1};
    ASSERT_EQ(Dispatch(e, 0, count, {a.data(), b.data(), c.data()},
                       {n * sizeof(float), n * sizeof(float), n * sizeof(float)}, {n}),
              0);
    for (uint32_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(c[i], a[i] + b[i]) << i;

    float factor = 3.0f;
    uint32_t bits;
    memcpy(&bits, &factor, 4);
    ASSERT_EQ(Dispatch(e, 1, count, {c.data()}, {n * sizeof(float)}, {n, bits}), 0);
    for (uint32_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(c[i], 3.0f * (a[i] + b[i])) << i;

    // The kernel's own bounds check reports a short binding.
    EXPECT_EQ(Dispatch(e, 0, count, {a.data(), b.data(), c.data()},
                       {n * sizeof(float), n * sizeof(float), 4}, {n}),
              1);
  }
  EXPECT_EQ(allocator_.live(), 0u) << "executable and image freed";
}

TEST_F(ElfLoaderTest, WorkgroupIdsAndLocalMemory) {
  auto executable = Load("workgroups");
  ASSERT_TRUE(executable.ok()) << StatusText(executable.status());
  const LocalExecutable& e = **executable;
  const uint32_t grid[3] = {4, 3, 2};
  std::vector<uint32_t> ids(4 * 3 * 2, 0xffffffffu);
  ASSERT_EQ(Dispatch(e, 0, grid, {ids.data()}, {ids.size() * 4}, {}), 0);
  for (uint32_t z = 0; z < 2; ++z) {
    for (uint32_t y = 0; y < 3; ++y) {
      for (uint32_t x = 0; x < 4; ++x) {
        EXPECT_EQ(ids[(z * 3 + y) * 4 + x], x + 100 * y + 10000 * z);
      }
    }
  }
  EXPECT_EQ(e.export_info(1).local_memory_size, 64u);
  std::vector<float> in(5 * 16), out(5, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  const uint32_t chunks[3] = {5, 1, 1};
  ASSERT_EQ(Dispatch(e, 1, chunks, {in.data(), out.data()}, {in.size() * 4, out.size() * 4}, {}),
            0);
  for (int x = 0; x < 5; ++x) {
    float expected = 0;
    for (int i = 0; i < 16; ++i) expected += in[x * 16 + i];
    EXPECT_FLOAT_EQ(out[x], expected);
  }
}

TEST_F(ElfLoaderTest, NonZeroResultsReachTheCaller) {
  auto executable = Load("failing");
  ASSERT_TRUE(executable.ok()) << StatusText(executable.status());
  const uint32_t grid[3] = {5, 1, 1};
  EXPECT_EQ(Dispatch(**executable, 0, grid, {}, {}, {3}), 7);
  EXPECT_EQ(Dispatch(**executable, 0, grid, {}, {}, {99}), 0);
  EXPECT_EQ(Dispatch(**executable, 1, grid, {}, {}, {}), -1);
}

int TestAddI32(void* params, void* context, void* reserved) {
  auto* p = static_cast<osprey_test_add_params_t*>(params);
  p->result = p->a + p->b + *static_cast<int32_t*>(context);
  return p->a < 0 ? 5 : 0;
}
int TestOptional(void*, void*, void*) { return 0; }

TEST_F(ElfLoaderTest, ImportsThroughTheThunk) {
  int32_t bias = 1000;
  const HostImport kImports[] = {{"test_add_i32", &TestAddI32, &bias}};
  auto executable = Load("imports", ImportTable{kImports});
  ASSERT_TRUE(executable.ok()) << StatusText(executable.status());
  const uint32_t one[3] = {1, 1, 1};
  int32_t out = 0;
  ASSERT_EQ(Dispatch(**executable, 0, one, {&out}, {4}, {20, 22}), 0);
  EXPECT_EQ(out, 1042);
  // The import's error comes back through the kernel.
  EXPECT_EQ(Dispatch(**executable, 0, one, {&out}, {4}, {static_cast<uint32_t>(-1), 0}), 5);
  ASSERT_EQ(Dispatch(**executable, 1, one, {&out}, {4}, {}), 0);
  EXPECT_EQ(out, 0) << "optional import is absent";

  const HostImport kBoth[] = {{"test_add_i32", &TestAddI32, &bias},
                              {"test_optional", &TestOptional, nullptr}};
  auto with_optional = Load("imports", ImportTable{kBoth});
  ASSERT_TRUE(with_optional.ok()) << StatusText(with_optional.status());
  ASSERT_EQ(Dispatch(**with_optional, 1, one, {&out}, {4}, {}), 0);
  EXPECT_EQ(out, 1);
}

TEST_F(ElfLoaderTest, MissingRequiredImportIsNotFound) {
  {
    auto executable = Load("imports");
    EXPECT_EQ(executable.status().code(), StatusCode::kNotFound);
    EXPECT_NE(StatusText(executable.status()).find("test_add_i32"), std::string::npos);
  }
  EXPECT_EQ(allocator_.live(), 0u) << "image freed on failure";
}

TEST_F(ElfLoaderTest, FunctionAndStringPointerTables) {
  for (const char* name : {"tables", "tables_preemptible", "tables_gnuld", "tables_relr"}) {
    SCOPED_TRACE(name);
    if (LibraryBytes(name, HostArch()).empty()) continue;
    auto executable = Load(name);
    ASSERT_TRUE(executable.ok()) << StatusText(executable.status());
    const uint32_t one[3] = {1, 1, 1};
    const struct {
      uint32_t op;
      int32_t result;
      char first;
      int32_t length;
      char mutable_first;
    } kCases[] = {{0, 9, 'a', 5, 'e'}, {1, 3, 'b', 4, 'z'}, {2, 18, 'g', 5, 'e'}};
    for (const auto& c : kCases) {
      int32_t out[4] = {};
      ASSERT_EQ(Dispatch(**executable, 0, one, {out}, {sizeof(out)}, {c.op, 6, 3}), 0);
      EXPECT_EQ(out[0], c.result);
      EXPECT_EQ(out[1], c.first);
      EXPECT_EQ(out[2], c.length);
      EXPECT_EQ(out[3], c.mutable_first);
    }
  }
}

// Code pages are r-x and relocated read-only data r--, never writable and
// executable at once.
TEST_F(ElfLoaderTest, SegmentsAreWriteXorExecute) {
  ElfImageOptions options;
  ElfHostMachine(&options.machine);
  options.executable = true;
  auto bytes = LibraryBytes("vector_add", HostArch());
  auto image = ElfImage::Load(bytes, options, Allocator::Default());
  ASSERT_TRUE(image.ok()) << StatusText(image.status());
  osprey_executable_environment_v1_t env = {};
  auto library = (*image)->query_function()(1, &env);
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) GTEST_SKIP() << "/proc/self/maps is not readable here";
  auto perms_of = [&](const void* p) {
    rewind(maps);
    char line[512];
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    while (fgets(line, sizeof(line), maps)) {
      unsigned long lo, hi;
      char perms[5] = {};
      if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
        return std::string(perms, 3);
      }
    }
    return std::string("none");
  };
  EXPECT_EQ(perms_of(reinterpret_cast<const void*>((*image)->query_function())), "r-x");
  EXPECT_EQ(perms_of(library), "r--");
  fclose(maps);
}

TEST_F(ElfLoaderTest, FormatAndMachineMismatch) {
  ExecutableParams params;
  auto bytes = LibraryBytes("vector_add", HostArch());
  params.data = bytes;
  params.format = "static";
  EXPECT_EQ(loader_.Load(params, {}, &allocator_).status().code(), StatusCode::kInvalidArgument);
  for (int i = 0; i < kElfMachineCount; ++i) {
    const ElfMachine m = static_cast<ElfMachine>(i);
    if (strcmp(ElfMachineFormat(m), format_) == 0) continue;
    SCOPED_TRACE(ElfMachineFormat(m));
    // Host code under another format name: mismatch.
    params.data = bytes;
    params.format = ElfMachineFormat(m);
    auto mismatch = loader_.Load(params, {}, &allocator_);
    EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
    // Foreign code under its own format: valid but cannot run here.
    auto foreign = LibraryBytes("vector_add", testing::kArches[i]);
    params.data = foreign;
    auto unavailable = loader_.Load(params, {}, &allocator_);
    EXPECT_EQ(unavailable.status().code(), StatusCode::kUnavailable);
  }
  EXPECT_EQ(allocator_.live(), 0u);
}

TEST(ElfLoaderFactoryTest, CreateAndDelete) {
  CountingAllocator allocator(Allocator::Default());
  ExecutableLoader* loader = nullptr;
  ASSERT_TRUE(CreateElfLoader(&allocator, &loader).ok());
  ASSERT_NE(loader, nullptr);
  EXPECT_STREQ(loader->name(), "elf");
  allocator.Delete(loader);
  EXPECT_EQ(allocator.live(), 0u);
}

}  // namespace
}  // namespace osprey::hal::local::loaders::elf
