// CTS: CPU executable libraries in ELF form (tests/executables/), prepared
// through the device's executable cache and dispatched; corrupt and foreign
// ones are rejected. Skips on devices whose cache has no loader for the
// host's ELF format.
#include <string>
#include <vector>

#include "hal/cts/cts_test_base.h"
#include "tests/executables/test_executables.h"

namespace osprey::hal::cts {
namespace {

#if defined(__x86_64__)
constexpr const char* kHostArch = "x86_64";
#elif defined(__aarch64__)
constexpr const char* kHostArch = "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
constexpr const char* kHostArch = "riscv64";
#elif defined(__riscv) && __riscv_xlen == 32
constexpr const char* kHostArch = "riscv32";
#else
constexpr const char* kHostArch = "armv7em";
#endif

class ExecutableElfTest : public CtsTest {
 protected:
  void SetUp() override {
    CtsTest::SetUp();
    if (HasFailure()) return;
    if (!osprey::testing::TestExecutablesAvailable()) {
      GTEST_SKIP() << "test libraries were not built (clang-19/ld.lld-19 not found)";
    }
    format_ = std::string("elf-") + kHostArch;
    auto cache = device()->CreateExecutableCache();
    ASSERT_TRUE(cache.ok()) << StatusText(cache);
    cache_ = std::move(*cache);
    if (!cache_->CanPrepareFormat(format_.c_str())) {
      GTEST_SKIP() << "device's executable cache has no loader for " << format_;
    }
  }

  StatusOr<ref_ptr<Executable>> Prepare(std::span<const uint8_t> data,
                                        const char* format = nullptr) {
    ExecutableParams params;
    params.format = format ? format : format_.c_str();
    params.data = data;
    return cache_->PrepareExecutable(params);
  }
  StatusOr<ref_ptr<Executable>> Prepare(const char* name) {
    return Prepare(osprey::testing::TestExecutable(name, kHostArch));
  }

  std::string format_;
  ref_ptr<ExecutableCache> cache_;
};

TEST_P(ExecutableElfTest, VectorAddWithBindingsAndConstants) {
  auto executable = Prepare("vector_add");
  ASSERT_TRUE(executable.ok()) << StatusText(executable);
  ASSERT_EQ((*executable)->export_count(), 2u);
  const uint32_t add = Export(executable->get(), "add");
  const ExportInfo& info = (*executable)->export_info(add);
  EXPECT_EQ(info.binding_count, 3u);
  EXPECT_EQ(info.constant_count, 1u);
  EXPECT_TRUE(info.binding_is_written(2));
  EXPECT_FALSE(info.binding_is_written(0));

  const uint32_t n = 200;
  std::vector<float> a(n), b(n), zero(n, 0.0f);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.25f * static_cast<float>(i) - 7.0f;
  }
  auto a_buf = AllocateWith(a.data(), n * 4);
  auto b_buf = AllocateWith(b.data(), n * 4);
  auto c_buf = AllocateWith(zero.data(), n * 4);
  OSPREY_CTS_ASSERT_OK(a_buf);
  OSPREY_CTS_ASSERT_OK(b_buf);
  OSPREY_CTS_ASSERT_OK(c_buf);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {
      {a_buf->get(), 0, n * 4}, {b_buf->get(), 0, n * 4}, {c_buf->get(), 0, n * 4}};
  const uint32_t constants[] = {n};
  OSPREY_CTS_ASSERT_OK(
      (*cb)->Dispatch(executable->get(), add, {(n + 63) / 64, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  auto c = ReadAs<float>(c_buf->get());
  ASSERT_EQ(c.size(), n);
  for (uint32_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(c[i], a[i] + b[i]) << i;
}

TEST_P(ExecutableElfTest, WorkgroupIdsAndLocalMemory) {
  auto executable = Prepare("workgroups");
  ASSERT_TRUE(executable.ok()) << StatusText(executable);
  const uint32_t grid_ids = Export(executable->get(), "grid_ids");
  const uint32_t chunk_sum = Export(executable->get(), "chunk_sum");
  std::vector<uint32_t> init(3 * 2 * 2, 0xffffffffu);
  auto ids = AllocateWith(init.data(), init.size() * 4);
  std::vector<float> in(4 * 16);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7);
  std::vector<float> out_init(4, -1.0f);
  auto in_buf = AllocateWith(in.data(), in.size() * 4);
  auto out_buf = AllocateWith(out_init.data(), out_init.size() * 4);
  OSPREY_CTS_ASSERT_OK(ids);
  OSPREY_CTS_ASSERT_OK(in_buf);
  OSPREY_CTS_ASSERT_OK(out_buf);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef id_bindings[] = {{ids->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable->get(), grid_ids, {3, 2, 2}, {}, id_bindings));
  BufferRef sum_bindings[] = {{in_buf->get(), 0, kWholeBuffer}, {out_buf->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable->get(), chunk_sum, {4, 1, 1}, {}, sum_bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  auto got = ReadAs<uint32_t>(ids->get());
  for (uint32_t z = 0; z < 2; ++z) {
    for (uint32_t y = 0; y < 2; ++y) {
      for (uint32_t x = 0; x < 3; ++x) {
        EXPECT_EQ(got[(z * 2 + y) * 3 + x], x + 100 * y + 10000 * z);
      }
    }
  }
  auto sums = ReadAs<float>(out_buf->get());
  for (int x = 0; x < 4; ++x) {
    float expected = 0;
    for (int i = 0; i < 16; ++i) expected += in[x * 16 + i];
    EXPECT_FLOAT_EQ(sums[x], expected) << x;
  }
}

TEST_P(ExecutableElfTest, RelocatedPointerTables) {
  auto executable = Prepare("tables");
  ASSERT_TRUE(executable.ok()) << StatusText(executable);
  std::vector<int32_t> init(4, 0);
  auto out = AllocateWith(init.data(), 16);
  OSPREY_CTS_ASSERT_OK(out);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{out->get(), 0, 16}};
  const uint32_t constants[] = {2, 6, 7};  // ops[2] = multiply, words[2] = "gamma".
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable->get(), Export(executable->get(), "apply"),
                                       {1, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  auto got = ReadAs<int32_t>(out->get());
  EXPECT_EQ(got[0], 42);
  EXPECT_EQ(got[1], 'g');
  EXPECT_EQ(got[2], 5);
  EXPECT_EQ(got[3], 'e');
}

TEST_P(ExecutableElfTest, KernelFailureFailsTheSubmission) {
  auto executable = Prepare("failing");
  ASSERT_TRUE(executable.ok()) << StatusText(executable);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  const uint32_t constants[] = {2};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable->get(), Export(executable->get(), "fail_at"),
                                       {4, 1, 1}, constants, {}));
  Status status = SubmitAndWait(cb->get());
  EXPECT_FALSE(status.ok());
}

TEST_P(ExecutableElfTest, RequiredImportMissingFromDevice) {
  // The device offers the CTS imports, not the "test_add_i32" this library
  // requires.
  auto executable = Prepare("imports");
  EXPECT_EQ(CodeOf(executable), StatusCode::kNotFound) << StatusText(executable);
  EXPECT_NE(MessageOf(executable).find("test_add_i32"), std::string::npos);
}

TEST_P(ExecutableElfTest, RejectsCorruptExecutables) {
  auto good = osprey::testing::TestExecutable("vector_add", kHostArch);
  std::vector<uint8_t> truncated(good.begin(), good.begin() + good.size() / 4);
  auto t = Prepare(truncated);
  EXPECT_EQ(CodeOf(t), StatusCode::kDataLoss) << StatusText(t);
  std::vector<uint8_t> bad_machine(good.begin(), good.end());
  bad_machine[18] ^= 0x55;  // e_machine.
  auto m = Prepare(bad_machine);
  EXPECT_EQ(CodeOf(m), StatusCode::kInvalidArgument) << StatusText(m);
  std::vector<uint8_t> not_elf(512, 0xA5);
  EXPECT_FALSE(Prepare(not_elf).ok());
  // The cache still works afterwards.
  EXPECT_TRUE(Prepare(good).ok());
}

TEST_P(ExecutableElfTest, ForeignArchitectureIsNotPrepared) {
  const char* foreign = std::string(kHostArch) == "armv7em" ? "riscv32" : "armv7em";
  const std::string format = std::string("elf-") + foreign;
  EXPECT_FALSE(cache_->CanPrepareFormat(format.c_str()));
  auto executable = Prepare(osprey::testing::TestExecutable("vector_add", foreign), format.c_str());
  EXPECT_FALSE(executable.ok());
  EXPECT_TRUE(CodeOf(executable) == StatusCode::kUnimplemented ||
              CodeOf(executable) == StatusCode::kUnavailable)
      << StatusText(executable);
}

// The same bytes under "system-elf-<arch>" go through the platform's
// dynamic linker (hosted builds whose device has the system loader).
TEST_P(ExecutableElfTest, SystemLoaderFormatDispatches) {
  const std::string format = std::string("system-elf-") + kHostArch;
  if (!cache_->CanPrepareFormat(format.c_str())) {
    GTEST_SKIP() << "device's executable cache has no loader for " << format;
  }
  auto executable = Prepare(osprey::testing::TestExecutable("tables", kHostArch), format.c_str());
  ASSERT_TRUE(executable.ok()) << StatusText(executable);
  std::vector<int32_t> init(4, 0);
  auto out = AllocateWith(init.data(), 16);
  OSPREY_CTS_ASSERT_OK(out);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{out->get(), 0, 16}};
  const uint32_t constants[] = {1, 50, 8};  // ops[1] = subtract, words[1] = "beta".
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable->get(), Export(executable->get(), "apply"),
                                       {1, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  auto got = ReadAs<int32_t>(out->get());
  EXPECT_EQ(got[0], 42);
  EXPECT_EQ(got[1], 'b');
  EXPECT_EQ(got[2], 4);
  EXPECT_EQ(got[3], 'z');
  // Malformed bytes never reach the dynamic linker.
  auto good = osprey::testing::TestExecutable("tables", kHostArch);
  std::vector<uint8_t> cut(good.begin(), good.begin() + good.size() / 2);
  EXPECT_EQ(CodeOf(Prepare(cut, format.c_str())), StatusCode::kDataLoss);
}

OSPREY_CTS_INSTANTIATE(ExecutableElfTest);

}  // namespace
}  // namespace osprey::hal::cts
