// Tests of LibraryExecutable validation, import resolution, the static
// loader and the loader-list executable cache.
#include "hal/local/library_executable.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "hal/local/default_loaders.h"
#include "hal/local/local_executable_cache.h"
#include "hal/local/static_library_loader.h"

namespace osprey::hal::local {
namespace {

int AddOne(const osprey_executable_environment_v1_t*, const osprey_dispatch_state_v1_t* d,
           const osprey_workgroup_state_v1_t*) {
  auto* p = static_cast<uint32_t*>(d->binding_ptrs[0]);
  p[0] += 1;
  return 0;
}
int CallImport(const osprey_executable_environment_v1_t* env, const osprey_dispatch_state_v1_t*,
               const osprey_workgroup_state_v1_t*) {
  int value = 5;
  if (!env->import_funcs[0]) return 99;
  return env->import_thunk(env->import_funcs[0], &value, env->import_contexts[0], nullptr);
}

int HostDouble(void* params, void* context, void*) {
  *static_cast<int*>(params) *= 2;
  *static_cast<int*>(context) += 1;
  return 0;
}

// A mutable library description each test adjusts.
struct TestLibrary {
  osprey_executable_library_header_t header = {OSPREY_EXECUTABLE_LIBRARY_VERSION_1, "testlib"};
  osprey_dispatch_fn_t fns[2] = {&AddOne, &CallImport};
  osprey_dispatch_attrs_v1_t attrs[2] = {
      {1, 2, 0x1, 64, {4, 1, 1}},
      {0, 0, 0, 0, {1, 1, 1}},
  };
  const char* names[2] = {"add_one", "call_import"};
  const char* imports[1] = {"double"};
  osprey_executable_library_v1_t library = {};
  TestLibrary() {
    library.header = &header;
    library.imports.count = 1;
    library.imports.symbols = imports;
    library.exports.count = 2;
    library.exports.ptrs = fns;
    library.exports.attrs = attrs;
    library.exports.names = names;
  }
  const osprey_executable_library_header_t* const* get() const { return &library.header; }
};

class LibraryExecutableTest : public ::testing::Test {
 protected:
  int import_calls_ = 0;
  HostImport host_imports_[1] = {{"double", &HostDouble, &import_calls_}};
  ImportTable table_{host_imports_};
  LibraryExecutableOptions Options() {
    LibraryExecutableOptions options;
    options.imports = &table_;
    return options;
  }
  Allocator* allocator_ = Allocator::Default();
};

TEST_F(LibraryExecutableTest, ExposesExportInfoAndRuns) {
  TestLibrary lib;
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  auto& e = *executable;
  EXPECT_STREQ(e->library_name(), "testlib");
  ASSERT_EQ(e->export_count(), 2u);
  EXPECT_STREQ(e->export_info(0).name, "add_one");
  EXPECT_EQ(e->export_info(0).binding_count, 1u);
  EXPECT_EQ(e->export_info(0).constant_count, 2u);
  EXPECT_EQ(e->export_info(0).local_memory_size, 64u);
  EXPECT_EQ(e->export_info(0).workgroup_size[0], 4u);
  EXPECT_TRUE(e->export_info(0).binding_is_written(0));
  auto ordinal = e->LookupExport("call_import");
  ASSERT_TRUE(ordinal.ok());
  EXPECT_EQ(*ordinal, 1u);
  EXPECT_EQ(e->LookupExport("nope").status().code(), StatusCode::kNotFound);

  uint32_t value = 41;
  void* ptrs[1] = {&value};
  size_t lengths[1] = {4};
  osprey_dispatch_state_v1_t dispatch = {};
  dispatch.binding_count = 1;
  dispatch.binding_ptrs = ptrs;
  dispatch.binding_lengths = lengths;
  osprey_workgroup_state_v1_t workgroup = {};
  EXPECT_EQ(e->CallWorkgroup(0, &dispatch, &workgroup), 0);
  EXPECT_EQ(value, 42u);
  EXPECT_EQ(e->CallWorkgroup(1, &dispatch, &workgroup), 0);
  EXPECT_EQ(import_calls_, 1);
}

TEST_F(LibraryExecutableTest, MissingRequiredImportIsNotFound) {
  TestLibrary lib;
  lib.imports[0] = "missing_fn";
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  ASSERT_EQ(executable.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(executable.status().message()).find("missing_fn"), std::string::npos);
}

TEST_F(LibraryExecutableTest, MissingOptionalImportResolvesToNull) {
  TestLibrary lib;
  lib.imports[0] = "?missing_fn";
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  EXPECT_EQ((*executable)->environment()->import_funcs[0], nullptr);
  osprey_dispatch_state_v1_t dispatch = {};
  osprey_workgroup_state_v1_t workgroup = {};
  EXPECT_EQ((*executable)->CallWorkgroup(1, &dispatch, &workgroup), 99);
}

TEST_F(LibraryExecutableTest, PresentOptionalImportResolves) {
  TestLibrary lib;
  lib.imports[0] = "?double";
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  ASSERT_TRUE(executable.ok());
  EXPECT_EQ((*executable)->environment()->import_funcs[0], &HostDouble);
}

TEST_F(LibraryExecutableTest, RejectsBadVersion) {
  TestLibrary lib;
  lib.header.version = 7;
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  EXPECT_EQ(executable.status().code(), StatusCode::kInvalidArgument);
  lib.header.version = 0;
  EXPECT_EQ(LibraryExecutable::Create(lib.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LibraryExecutableTest, RejectsNullPointers) {
  EXPECT_EQ(LibraryExecutable::Create(nullptr, Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
  const osprey_executable_library_header_t* null_header = nullptr;
  EXPECT_EQ(LibraryExecutable::Create(&null_header, Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
  TestLibrary lib;
  lib.fns[1] = nullptr;
  EXPECT_EQ(LibraryExecutable::Create(lib.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
  TestLibrary lib2;
  lib2.library.exports.ptrs = nullptr;
  EXPECT_EQ(LibraryExecutable::Create(lib2.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
  TestLibrary lib3;
  lib3.imports[0] = nullptr;
  EXPECT_EQ(LibraryExecutable::Create(lib3.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LibraryExecutableTest, RejectsTooManyExports) {
  TestLibrary lib;
  lib.library.exports.count = LibraryExecutable::kMaxExports + 1;
  EXPECT_EQ(LibraryExecutable::Create(lib.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LibraryExecutableTest, RejectsZeroWorkgroupSize) {
  TestLibrary lib;
  lib.attrs[0].workgroup_size[2] = 0;
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  EXPECT_EQ(executable.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(executable.status().message()).find("add_one"), std::string::npos);
}

TEST_F(LibraryExecutableTest, NullNamesGetSynthesizedNames) {
  TestLibrary lib;
  lib.library.exports.names = nullptr;
  lib.header.name = nullptr;
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  EXPECT_STREQ((*executable)->library_name(), "unnamed");
  EXPECT_STREQ((*executable)->export_info(0).name, "export_0");
  EXPECT_STREQ((*executable)->export_info(1).name, "export_1");
  TestLibrary lib2;
  lib2.names[1] = nullptr;
  auto executable2 = LibraryExecutable::Create(lib2.get(), Options(), allocator_);
  ASSERT_TRUE(executable2.ok());
  EXPECT_STREQ((*executable2)->export_info(0).name, "add_one");
  EXPECT_STREQ((*executable2)->export_info(1).name, "export_1");
}

TEST_F(LibraryExecutableTest, NullAttrsMeanNoBindings) {
  TestLibrary lib;
  lib.library.exports.attrs = nullptr;
  auto executable = LibraryExecutable::Create(lib.get(), Options(), allocator_);
  ASSERT_TRUE(executable.ok());
  EXPECT_EQ((*executable)->export_info(0).binding_count, 0u);
  EXPECT_EQ((*executable)->export_info(0).workgroup_size[1], 1u);
}

TEST_F(LibraryExecutableTest, RejectsUnterminatedLongNames) {
  std::string long_name(LibraryExecutable::kMaxNameLength + 1, 'x');
  TestLibrary lib;
  lib.names[0] = long_name.c_str();
  EXPECT_EQ(LibraryExecutable::Create(lib.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
  TestLibrary lib2;
  lib2.header.name = long_name.c_str();
  EXPECT_EQ(LibraryExecutable::Create(lib2.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
  std::string ok_name(LibraryExecutable::kMaxNameLength, 'y');
  TestLibrary lib3;
  lib3.names[0] = ok_name.c_str();
  EXPECT_TRUE(LibraryExecutable::Create(lib3.get(), Options(), allocator_).ok());
}

TEST_F(LibraryExecutableTest, RejectsDuplicateExportNames) {
  TestLibrary lib;
  lib.names[1] = "add_one";
  EXPECT_EQ(LibraryExecutable::Create(lib.get(), Options(), allocator_).status().code(),
            StatusCode::kInvalidArgument);
}

struct Tracker : public RefObject {
  explicit Tracker(int* destroyed) : destroyed(destroyed) {}
  ~Tracker() override { ++*destroyed; }
  int* destroyed;
};

void CountRelease(void* user_data) { ++*static_cast<int*>(user_data); }

TEST_F(LibraryExecutableTest, KeepAliveAndReleaseRunOnDestruction) {
  int destroyed = 0, released = 0;
  {
    TestLibrary lib;
    LibraryExecutableOptions options = Options();
    auto tracker = MakeRef<Tracker>(allocator_, &destroyed);
    ASSERT_TRUE(tracker.ok());
    options.keep_alive = std::move(*tracker);
    options.release = {&CountRelease, &released};
    auto executable = LibraryExecutable::Create(lib.get(), std::move(options), allocator_);
    ASSERT_TRUE(executable.ok());
    EXPECT_EQ(destroyed, 0);
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(released, 1);
}

TEST_F(LibraryExecutableTest, ReleaseRunsOnValidationFailure) {
  int released = 0;
  TestLibrary lib;
  lib.header.version = 9;
  LibraryExecutableOptions options = Options();
  options.release = {&CountRelease, &released};
  EXPECT_FALSE(LibraryExecutable::Create(lib.get(), std::move(options), allocator_).ok());
  EXPECT_EQ(released, 1);
}

//===----------------------------------------------------------------------===//
// Static loader and executable cache
//===----------------------------------------------------------------------===//

TestLibrary* g_query_library = nullptr;
const osprey_executable_environment_v1_t* g_query_environment = nullptr;
const osprey_executable_library_header_t* const* QueryTest(
    uint32_t max_version, const osprey_executable_environment_v1_t* environment) {
  g_query_environment = environment;
  return max_version >= 1 ? g_query_library->get() : nullptr;
}
const osprey_executable_library_header_t* const* QueryNull(
    uint32_t, const osprey_executable_environment_v1_t*) {
  return nullptr;
}

TEST_F(LibraryExecutableTest, StaticLoaderFindsRegisteredLibraries) {
  TestLibrary lib;
  g_query_library = &lib;
  StaticLibraryRegistry registry;
  ASSERT_TRUE(registry.Register("testlib", &QueryTest).ok());
  EXPECT_EQ(registry.Register("testlib", &QueryTest).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Register("", &QueryTest).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(registry.Register("nulllib", &QueryNull).ok());

  auto set = DefaultLoaderSet::Create(&registry, allocator_);
  ASSERT_TRUE(set.ok());
  auto cache = LocalExecutableCache::Create((*set)->loaders(), table_, *set, allocator_);
  ASSERT_TRUE(cache.ok());
  EXPECT_TRUE((*cache)->CanPrepareFormat("static"));
  EXPECT_FALSE((*cache)->CanPrepareFormat("bogus"));

  ExecutableParams params;
  params.format = "static";
  params.data = {reinterpret_cast<const uint8_t*>("testlib"), 7};
  auto executable = (*cache)->PrepareExecutable(params);
  ASSERT_TRUE(executable.ok()) << executable.status().message();
  EXPECT_EQ((*executable)->export_count(), 2u);
  // The library was queried with the executable's own environment.
  EXPECT_EQ(g_query_environment,
            static_cast<LocalExecutable*>(executable->get())->environment());

  params.data = {reinterpret_cast<const uint8_t*>("otherlib"), 8};
  auto missing = (*cache)->PrepareExecutable(params);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.status().message()).find("'testlib'"), std::string::npos);

  params.data = {reinterpret_cast<const uint8_t*>("nulllib"), 7};
  EXPECT_EQ((*cache)->PrepareExecutable(params).status().code(), StatusCode::kUnavailable);

  params.data = {};
  EXPECT_EQ((*cache)->PrepareExecutable(params).status().code(), StatusCode::kInvalidArgument);

  params.format = "elf-bogus";
  auto unknown = (*cache)->PrepareExecutable(params);
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(std::string(unknown.status().message()).find("elf-bogus"), std::string::npos);
}

TEST(ImportTableTest, FindsByName) {
  HostImport imports[2] = {{"a", nullptr, nullptr}, {"b", nullptr, nullptr}};
  ImportTable table{imports};
  EXPECT_EQ(table.Find("b"), &imports[1]);
  EXPECT_EQ(table.Find("c"), nullptr);
  EXPECT_EQ(table.Find(nullptr), nullptr);
}

}  // namespace
}  // namespace osprey::hal::local
