// CTS: dispatch results (push constants, 3-D grids, local memory, imports),
// failing kernels, ordering across barriers, and executable loading.
#include "hal/cts/cts_test_base.h"

namespace osprey::hal::cts {
namespace {

class DispatchTest : public CtsTest {
 protected:
  void SetUp() override {
    CtsTest::SetUp();
    if (HasFailure()) return;
    if (!HasCapability(kCapabilityCpuKernels)) {
      GTEST_SKIP() << "backend does not run the CTS CPU kernels";
    }
    auto executable = LoadKernels();
    ASSERT_TRUE(executable.ok()) << StatusText(executable);
    executable_ = std::move(*executable);
  }
  ref_ptr<Executable> executable_;
};

TEST_P(DispatchTest, ExportsAreDescribed) {
  EXPECT_EQ(executable_->export_count(), 6u);
  uint32_t axpb = Export(executable_.get(), "axpb");
  const ExportInfo& info = executable_->export_info(axpb);
  EXPECT_EQ(info.binding_count, 2u);
  EXPECT_EQ(info.constant_count, 3u);
  EXPECT_FALSE(info.binding_is_written(0));
  EXPECT_TRUE(info.binding_is_written(1));
  EXPECT_EQ(info.workgroup_size[0], 64u);
  EXPECT_EQ(CodeOf(executable_->LookupExport("no_such_export")), StatusCode::kNotFound);
}

TEST_P(DispatchTest, AxpbWithPushConstants) {
  const uint32_t n = 200;  // Four workgroups of 64, the last partial.
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i) * 0.5f;
  auto xb = AllocateWith(x.data(), n * 4);
  auto yb = Allocate(n * 4);
  OSPREY_CTS_ASSERT_OK(xb);
  OSPREY_CTS_ASSERT_OK(yb);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t constants[] = {FloatBits(3.0f), FloatBits(-2.0f), n};
  BufferRef bindings[] = {{xb->get(), 0, kWholeBuffer}, {yb->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), Export(executable_.get(), "axpb"),
                                       {4, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<float> y = ReadAs<float>(yb->get());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.0f * x[i] - 2.0f) << i;
}

TEST_P(DispatchTest, BindingsSeeTheirSubspan) {
  float x[8] = {0, 0, 0, 0, 1, 2, 3, 4};
  auto xb = AllocateWith(x, sizeof(x));
  auto yb = Allocate(64);
  OSPREY_CTS_ASSERT_OK(xb);
  OSPREY_CTS_ASSERT_OK(yb);
  std::vector<uint8_t> zeros(64, 0);
  OSPREY_CTS_ASSERT_OK((*yb)->WriteData(0, zeros.data(), 64));
  auto y_sub = Buffer::Subspan(*yb, 32, 32);
  OSPREY_CTS_ASSERT_OK(y_sub);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t constants[] = {FloatBits(1.0f), FloatBits(10.0f), 4};
  BufferRef bindings[] = {{xb->get(), 16, 16}, {y_sub->get(), 0, 16}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), Export(executable_.get(), "axpb"),
                                       {1, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<float> y = ReadAs<float>(yb->get());
  EXPECT_EQ(y[7], 0.0f);
  EXPECT_EQ(y[8], 11.0f);
  EXPECT_EQ(y[11], 14.0f);
  EXPECT_EQ(y[12], 0.0f);
}

TEST_P(DispatchTest, ThreeDimensionalGridVisitsEveryWorkgroupOnce) {
  const WorkgroupCount count = {5, 3, 4};
  const uint32_t total = count.x * count.y * count.z;
  std::vector<uint32_t> init(total * 4, 0xFFFFFFFFu);
  auto out = AllocateWith(init.data(), total * 16);
  OSPREY_CTS_ASSERT_OK(out);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{out->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(),
                                       Export(executable_.get(), "workgroup_ids"), count, {},
                                       bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<uint32_t> ids = ReadAs<uint32_t>(out->get());
  for (uint32_t z = 0; z < count.z; ++z) {
    for (uint32_t y = 0; y < count.y; ++y) {
      for (uint32_t x = 0; x < count.x; ++x) {
        const uint32_t l = (z * count.y + y) * count.x + x;
        ASSERT_EQ(ids[l * 4 + 0], x);
        ASSERT_EQ(ids[l * 4 + 1], y);
        ASSERT_EQ(ids[l * 4 + 2], z);
        ASSERT_EQ(ids[l * 4 + 3], total);
      }
    }
  }
}

TEST_P(DispatchTest, ZeroWorkgroupsRunNothing) {
  uint32_t init[4] = {9, 9, 9, 9};
  auto out = AllocateWith(init, 16);
  OSPREY_CTS_ASSERT_OK(out);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{out->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(),
                                       Export(executable_.get(), "workgroup_ids"), {0, 1, 1}, {},
                                       bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  EXPECT_EQ(ReadAs<uint32_t>(out->get())[0], 9u);
}

TEST_P(DispatchTest, LocalMemoryIsProvided) {
  auto out = Allocate(4 * 4);
  OSPREY_CTS_ASSERT_OK(out);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t constants[] = {10};
  BufferRef bindings[] = {{out->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), Export(executable_.get(), "local_sum"),
                                       {4, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  // sum(i + 10, i < 64) = 2016 + 640.
  EXPECT_EQ(ReadAs<uint32_t>(out->get()), std::vector<uint32_t>(4, 2656u));
}

TEST_P(DispatchTest, KernelCallsHostImport) {
  uint32_t in = 234;
  auto inb = AllocateWith(&in, 4);
  auto outb = Allocate(4);
  OSPREY_CTS_ASSERT_OK(inb);
  OSPREY_CTS_ASSERT_OK(outb);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{inb->get(), 0, 4}, {outb->get(), 0, 4}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(),
                                       Export(executable_.get(), "call_import"), {1, 1, 1}, {},
                                       bindings));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  EXPECT_EQ(ReadAs<uint32_t>(outb->get())[0], 1234u);
  EXPECT_EQ(host_add_calls_, 1u);
}

TEST_P(DispatchTest, FailingKernelFailsSignalSemaphoreWithContext) {
  auto out = Allocate(8 * 4);
  OSPREY_CTS_ASSERT_OK(out);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t constants[] = {5};
  BufferRef bindings[] = {{out->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), Export(executable_.get(), "fail_at"),
                                       {8, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK((*cb)->End());
  auto semaphore = device()->CreateSemaphore(0);
  OSPREY_CTS_ASSERT_OK(semaphore);
  Semaphore* signal[] = {semaphore->get()};
  uint64_t values[] = {1};
  CommandBuffer* buffers[] = {cb->get()};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({}, buffers, {signal, values}));
  Status status = (*semaphore)->Wait(1, DeadlineInMs(10000));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kAborted) << StatusText(status);
  const std::string message = status.message();
  EXPECT_NE(message.find("fail_at"), std::string::npos) << message;
  EXPECT_NE(message.find(OSPREY_CTS_KERNELS_LIBRARY_NAME), std::string::npos) << message;
  EXPECT_NE(message.find("returned 7"), std::string::npos) << message;
  EXPECT_NE(message.find("(5, 0, 0)"), std::string::npos) << message;
  // Query reports the failure too.
  EXPECT_FALSE((*semaphore)->Query().ok());
}

TEST_P(DispatchTest, BarrierOrdersDispatches) {
  // y = 2x + 1, then z = 3y + 0 over the same data: only correct if the
  // second dispatch sees all of the first's writes.
  const uint32_t n = 1024;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i % 17);
  auto xb = AllocateWith(x.data(), n * 4);
  auto yb = Allocate(n * 4);
  auto zb = Allocate(n * 4);
  OSPREY_CTS_ASSERT_OK(xb);
  OSPREY_CTS_ASSERT_OK(yb);
  OSPREY_CTS_ASSERT_OK(zb);
  const uint32_t axpb = Export(executable_.get(), "axpb");
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t c1[] = {FloatBits(2.0f), FloatBits(1.0f), n};
  uint32_t c2[] = {FloatBits(3.0f), FloatBits(0.0f), n};
  BufferRef b1[] = {{xb->get(), 0, kWholeBuffer}, {yb->get(), 0, kWholeBuffer}};
  BufferRef b2[] = {{yb->get(), 0, kWholeBuffer}, {zb->get(), 0, kWholeBuffer}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), axpb, {n / 64, 1, 1}, c1, b1));
  OSPREY_CTS_ASSERT_OK((*cb)->ExecutionBarrier());
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), axpb, {n / 64, 1, 1}, c2, b2));
  OSPREY_CTS_ASSERT_OK((*cb)->ExecutionBarrier());
  OSPREY_CTS_ASSERT_OK((*cb)->CopyBuffer({zb->get(), 0, kWholeBuffer}, {xb->get(), 0, kWholeBuffer}));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<float> result = ReadAs<float>(xb->get());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(result[i], 3.0f * (2.0f * float(i % 17) + 1.0f)) << i;
}

TEST_P(DispatchTest, ResubmittedCommandBufferRunsAgain) {
  float x = 1.0f;
  auto xb = AllocateWith(&x, 4);
  auto yb = Allocate(4);
  OSPREY_CTS_ASSERT_OK(xb);
  OSPREY_CTS_ASSERT_OK(yb);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t constants[] = {FloatBits(2.0f), FloatBits(0.0f), 1};
  BufferRef bindings[] = {{xb->get(), 0, 4}, {yb->get(), 0, 4}};
  OSPREY_CTS_ASSERT_OK((*cb)->Dispatch(executable_.get(), Export(executable_.get(), "axpb"),
                                       {1, 1, 1}, constants, bindings));
  OSPREY_CTS_ASSERT_OK((*cb)->ExecutionBarrier());
  OSPREY_CTS_ASSERT_OK((*cb)->CopyBuffer({yb->get(), 0, 4}, {xb->get(), 0, 4}));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  EXPECT_EQ(ReadAs<float>(xb->get())[0], 8.0f);
}

//===----------------------------------------------------------------------===//
// Executable loading
//===----------------------------------------------------------------------===//

class ExecutableCacheTest : public CtsTest {};

TEST_P(ExecutableCacheTest, UnknownFormatIsRejected) {
  auto cache = device()->CreateExecutableCache();
  OSPREY_CTS_ASSERT_OK(cache);
  EXPECT_FALSE((*cache)->CanPrepareFormat("no-such-format"));
  ExecutableParams params;
  params.format = "no-such-format";
  static const uint8_t kBytes[4] = {1, 2, 3, 4};
  params.data = kBytes;
  auto executable = (*cache)->PrepareExecutable(params);
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(CodeOf(executable), StatusCode::kUnimplemented) << StatusText(executable);
  EXPECT_NE(MessageOf(executable).find("no-such-format"), std::string::npos);
}

TEST_P(ExecutableCacheTest, UnregisteredStaticLibraryIsNotFound) {
  if (!HasCapability(kCapabilityCpuKernels)) {
    GTEST_SKIP() << "backend does not run static CPU libraries";
  }
  auto cache = device()->CreateExecutableCache();
  OSPREY_CTS_ASSERT_OK(cache);
  EXPECT_TRUE((*cache)->CanPrepareFormat(GetParam().executable_format.c_str()));
  ExecutableParams params;
  params.format = GetParam().executable_format.c_str();
  static const char kName[] = "not_a_registered_library";
  params.data = {reinterpret_cast<const uint8_t*>(kName), sizeof(kName) - 1};
  auto executable = (*cache)->PrepareExecutable(params);
  EXPECT_EQ(CodeOf(executable), StatusCode::kNotFound) << StatusText(executable);
  EXPECT_NE(MessageOf(executable).find(kName), std::string::npos);
}

OSPREY_CTS_INSTANTIATE(DispatchTest);
OSPREY_CTS_INSTANTIATE(ExecutableCacheTest);

}  // namespace
}  // namespace osprey::hal::cts
