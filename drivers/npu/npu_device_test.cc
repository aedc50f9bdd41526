// End-to-end tests of the npu HAL driver: dispatches of npu-v1 executables
// against the reference, device-local SRAM buffers, faults, timeouts, params.
#include "drivers/npu/npu_device.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "drivers/npu/npu_driver.h"
#include "drivers/npu/reference/reference.h"
#include "drivers/npu/registration/driver_module.h"
#include "drivers/npu/builder/stream_builder.h"
#include "gtest/gtest.h"
#include "hal/api.h"

namespace osprey::drivers::npu {
namespace {

using hal::BufferRef;
using hal::BufferUsage;
using hal::MemoryAccess;
using hal::MemoryType;
using builder::BlobExport;
using builder::StreamBuilder;
namespace ref = ::osprey::drivers::npu::reference;

#define ASSERT_OK(expr)                                         \
  do {                                                          \
    auto&& osprey_test_result_ = (expr);                        \
    ASSERT_TRUE(osprey_test_result_.ok()) << Text(osprey_test_result_); \
  } while (false)

std::string Text(const Status& s) {
  char buffer[1024];
  s.ToString(buffer, sizeof(buffer));
  return buffer;
}
template <typename T>
std::string Text(const StatusOr<T>& s) {
  return Text(s.status());
}

class NpuDeviceTest : public ::testing::Test {
 protected:
  void Create(NpuDeviceOptions options = {}) {
    auto device = NpuDevice::Create(options, osprey::Allocator::Default());
    ASSERT_TRUE(device.ok()) << Text(device);
    device_ = std::move(device).value();
  }

  // A host buffer (optimal placement, all access) holding |data| if given.
  ref_ptr<hal::Buffer> Host(const void* data, size_t length) {
    hal::BufferParams params;
    auto buffer = device_->allocator()->AllocateBuffer(params, length);
    EXPECT_TRUE(buffer.ok()) << Text(buffer);
    if (data) EXPECT_TRUE((*buffer)->WriteData(0, data, length).ok());
    return std::move(buffer).value();
  }

  StatusOr<ref_ptr<hal::Executable>> Load(const std::vector<BlobExport>& exports) {
    blob_ = builder::BuildBlob(exports);
    OSPREY_ASSIGN_OR_RETURN(auto cache, device_->CreateExecutableCache());
    hal::ExecutableParams params;
    params.format = "npu-v1";
    params.data = blob_;
    return cache->PrepareExecutable(params);
  }

  // Records |record| into a command buffer, submits it and waits.
  template <typename F>
  Status Submit(F record) {
    OSPREY_ASSIGN_OR_RETURN(auto cb, device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault));
    OSPREY_RETURN_IF_ERROR(cb->Begin());
    OSPREY_RETURN_IF_ERROR(record(cb.get()));
    OSPREY_RETURN_IF_ERROR(cb->End());
    OSPREY_ASSIGN_OR_RETURN(auto semaphore, device_->CreateSemaphore(0));
    hal::Semaphore* sems[] = {semaphore.get()};
    uint64_t values[] = {1};
    hal::CommandBuffer* cbs[] = {cb.get()};
    OSPREY_RETURN_IF_ERROR(device_->QueueExecute({}, cbs, {sems, values}));
    return semaphore->Wait(1, platform::DeadlineFromTimeout(5'000'000'000));
  }

  std::vector<uint8_t> Read(hal::Buffer* buffer) {
    std::vector<uint8_t> out(buffer->byte_length());
    EXPECT_TRUE(buffer->ReadData(0, out.data(), out.size()).ok());
    return out;
  }

  ref_ptr<NpuDevice> device_;
  std::vector<uint8_t> blob_;
};

// A 3x3 conv (8x8x4 -> 8x8x6, pad 1) as an npu-v1 export with bindings
// input (0, read), weights+qparams (1, read), output (2, written).
struct ConvFixture {
  static constexpr int H = 8, W = 8, C = 4, OC = 6;
  ref::ConvParams p;
  std::vector<int8_t> input, weights;
  std::vector<int32_t> bias, mult, shift;
  std::vector<uint8_t> weight_blob;
  uint32_t q_off = 0;

  ConvFixture() {
    std::mt19937 gen(5);
    std::uniform_int_distribution<int> d(-128, 127);
    p.in_h = H, p.in_w = W, p.in_c = C, p.out_h = H, p.out_w = W, p.out_c = OC;
    p.kernel_h = p.kernel_w = 3, p.pad_top = p.pad_left = 1;
    p.input_zp = 2, p.output_zp = -1;
    for (int i = 0; i < H * W * C; ++i) input.push_back(int8_t(d(gen)));
    for (int i = 0; i < OC * 9 * C; ++i) weights.push_back(int8_t(d(gen)));
    for (int i = 0; i < OC; ++i) {
      bias.push_back(d(gen) * 10);
      mult.push_back((1 << 30) + d(gen) * 1000000);
      shift.push_back(-8);
    }
    weight_blob.assign(weights.begin(), weights.end());
    q_off = uint32_t(weight_blob.size());
    auto q = builder::PackQParams(bias, mult, shift);
    weight_blob.insert(weight_blob.end(), q.begin(), q.end());
  }

  BlobExport Export(bool write_output = true) const {
    StreamBuilder b;
    b.DmaRead(0, 0, 0, H * W * C);
    b.DmaRead(1, 0, 0, uint32_t(weight_blob.size()), 1, 0, 0, true);
    b.Op(NPU_OP_SYNC);
    b.Ifm(0, H, W, C, p.input_zp).Ofm(1024, H, W, OC, p.output_zp).Kernel(3, 3, 1, 1, 1, 1);
    b.Set(NPU_REG_QPARAM_ADDR, q_off).Op(NPU_OP_CONV_RELU).Op(NPU_OP_SYNC);
    b.DmaWrite(2, 0, 1024, H * W * OC);
    BlobExport e;
    e.name = "conv";
    e.words = b.Finish();
    e.relocations = b.relocations();
    e.binding_count = 3;
    e.binding_write_mask = write_output ? 0x4 : 0x0;
    return e;
  }

  std::vector<uint8_t> Expected() const {
    std::vector<int8_t> out(H * W * OC);
    ref::Conv2D(p, input.data(), weights.data(), {bias.data(), mult.data(), shift.data()}, true,
                out.data());
    return std::vector<uint8_t>(out.begin(), out.end());
  }
};

TEST_F(NpuDeviceTest, ConvDispatchMatchesReference) {
  for (bool inline_execution : {false, true}) {
    NpuDeviceOptions options;
    options.hardware_options.inline_execution = inline_execution;
    Create(options);
    ConvFixture f;
    auto exe = Load({f.Export()});
    ASSERT_OK(exe);
    auto in = Host(f.input.data(), f.input.size());
    auto w = Host(f.weight_blob.data(), f.weight_blob.size());
    auto out = Host(nullptr, ConvFixture::H * ConvFixture::W * ConvFixture::OC);
    ASSERT_OK(Submit([&](hal::CommandBuffer* cb) {
      BufferRef bindings[] = {{in.get()}, {w.get()}, {out.get()}};
      return cb->Dispatch(exe->get(), 0, {}, {}, bindings);
    }));
    EXPECT_EQ(Read(out.get()), f.Expected());
    sim::Counters counters = device_->counters();
    EXPECT_EQ(counters.macs, uint64_t(8 * 8 * 6 * 9 * 4));
    EXPECT_GT(counters.total_cycles, 0u);
    // The same counters by key, through the HAL.
    hal::Device* device = device_.get();
    EXPECT_EQ(*device->QueryI64("npu.macs"), int64_t(counters.macs));
    EXPECT_EQ(*device->QueryI64("npu.total_cycles"), int64_t(counters.total_cycles));
    EXPECT_EQ(*device->QueryI64("npu.pes"), int64_t(options.hardware.pe_count));
    EXPECT_EQ(device->QueryI64("npu.nonsense").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(device_->hardware()->ReadRegister(kHwRegId), kHwId);
    EXPECT_EQ(device_->hardware()->ReadRegister(kHwRegCompleted), 1u);
  }
}

TEST_F(NpuDeviceTest, DeviceLocalSramBuffersRoundTripThroughDma) {
  Create();
  ConvFixture f;
  auto exe = Load({f.Export()});
  ASSERT_OK(exe);
  hal::BufferParams local;
  local.type = MemoryType::kDeviceLocal;
  local.usage = BufferUsage::kTransfer | BufferUsage::kDispatchStorage;
  auto sram_in = device_->allocator()->AllocateBuffer(local, f.input.size());
  ASSERT_OK(sram_in);
  auto sram_out = device_->allocator()->AllocateBuffer(local, 8 * 8 * 6);
  ASSERT_OK(sram_out);
  // The host cannot map SRAM.
  uint8_t byte = 0;
  EXPECT_EQ((*sram_in)->ReadData(0, &byte, 1).code(), StatusCode::kPermissionDenied);
  hal::BufferParams mappable = local;
  mappable.usage |= BufferUsage::kMapping;
  EXPECT_EQ(device_->allocator()->AllocateBuffer(mappable, 64).status().code(),
            StatusCode::kInvalidArgument);

  auto in = Host(f.input.data(), f.input.size());
  auto w = Host(f.weight_blob.data(), f.weight_blob.size());
  auto out = Host(nullptr, 8 * 8 * 6);
  ASSERT_OK(Submit([&](hal::CommandBuffer* cb) -> Status {
    OSPREY_RETURN_IF_ERROR(cb->CopyBuffer({in.get()}, {sram_in->get()}));
    OSPREY_RETURN_IF_ERROR(cb->ExecutionBarrier());
    BufferRef bindings[] = {{sram_in->get()}, {w.get()}, {sram_out->get()}};
    OSPREY_RETURN_IF_ERROR(cb->Dispatch(exe->get(), 0, {}, {}, bindings));
    OSPREY_RETURN_IF_ERROR(cb->ExecutionBarrier());
    return cb->CopyBuffer({sram_out->get()}, {out.get()});
  }));
  EXPECT_EQ(Read(out.get()), f.Expected());
  // Copies went through the NPU's DMA engine.
  EXPECT_GE(device_->counters().dma_bytes_read, f.input.size() * 2 + 8 * 8 * 6);
  EXPECT_GT(device_->allocator()->bytes_allocated(), 0u);
}

TEST_F(NpuDeviceTest, TransfersFillUpdateCopy) {
  Create();
  auto a = Host(nullptr, 4096);
  auto b = Host(nullptr, 4096);
  std::vector<uint8_t> update(100);
  for (int i = 0; i < 100; ++i) update[i] = uint8_t(i * 3);
  const uint32_t pattern = 0xA1B2C3D4;
  ASSERT_OK(Submit([&](hal::CommandBuffer* cb) -> Status {
    OSPREY_RETURN_IF_ERROR(cb->FillBuffer({a.get()}, &pattern, 4));
    OSPREY_RETURN_IF_ERROR(cb->UpdateBuffer(update.data(), {a.get(), 8, 100}));
    OSPREY_RETURN_IF_ERROR(cb->ExecutionBarrier());
    return cb->CopyBuffer({a.get()}, {b.get()});
  }));
  auto bytes = Read(b.get());
  uint32_t first;
  std::memcpy(&first, bytes.data(), 4);
  EXPECT_EQ(first, pattern);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 8, bytes.begin() + 108), update);
  std::memcpy(&first, bytes.data() + 4092, 4);
  EXPECT_EQ(first, pattern);
}

TEST_F(NpuDeviceTest, WriteThroughReadOnlyBindingFaultsWithContext) {
  Create();
  ConvFixture f;
  // The export does not declare binding 2 as written, so the driver maps it
  // read-only and the stream's DMA_WRITE faults like an MPU violation.
  auto exe = Load({f.Export(/*write_output=*/false)});
  ASSERT_OK(exe);
  auto in = Host(f.input.data(), f.input.size());
  auto w = Host(f.weight_blob.data(), f.weight_blob.size());
  std::vector<uint8_t> sentinel(8 * 8 * 6, 0x5A);
  auto out = Host(sentinel.data(), sentinel.size());
  Status s = Submit([&](hal::CommandBuffer* cb) {
    BufferRef bindings[] = {{in.get()}, {w.get()}, {out.get()}};
    return cb->Dispatch(exe->get(), 0, {}, {}, bindings);
  });
  EXPECT_FALSE(s.ok());
  const std::string text = Text(s);
  EXPECT_NE(text.find("read-only"), std::string::npos) << text;
  EXPECT_NE(text.find("DMA_WRITE"), std::string::npos) << text;
  EXPECT_NE(text.find("'conv'"), std::string::npos) << text;
  EXPECT_EQ(Read(out.get()), sentinel);  // Nothing written.
  EXPECT_NE(device_->hardware()->ReadRegister(kHwRegFaultJob), 0u);
}

TEST_F(NpuDeviceTest, FaultHaltsLaterJobsOfTheSubmission) {
  Create();
  ConvFixture f;
  StreamBuilder bad;
  bad.Ifm(0, 4, 4, 4).Ofm(0, 4, 4, 4).Op(NPU_OP_CONV);  // OFM overlaps IFM.
  BlobExport bad_export;
  bad_export.name = "overlapping";
  bad_export.words = bad.Finish();
  bad_export.binding_count = 0;
  auto exe = Load({bad_export, f.Export()});
  ASSERT_OK(exe);
  auto in = Host(f.input.data(), f.input.size());
  auto w = Host(f.weight_blob.data(), f.weight_blob.size());
  std::vector<uint8_t> sentinel(8 * 8 * 6, 0x5A);
  auto out = Host(sentinel.data(), sentinel.size());
  Status s = Submit([&](hal::CommandBuffer* cb) -> Status {
    OSPREY_RETURN_IF_ERROR(cb->Dispatch(exe->get(), 0, {}, {}, {}));
    BufferRef bindings[] = {{in.get()}, {w.get()}, {out.get()}};
    return cb->Dispatch(exe->get(), 1, {}, {}, bindings);
  });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(Text(s).find("'overlapping'"), std::string::npos) << Text(s);
  EXPECT_NE(Text(s).find("overlaps IFM"), std::string::npos) << Text(s);
  EXPECT_EQ(Read(out.get()), sentinel);  // The conv after the fault never ran.
  // The fault was acknowledged: the next submission runs.
  ASSERT_OK(Submit([&](hal::CommandBuffer* cb) {
    BufferRef bindings[] = {{in.get()}, {w.get()}, {out.get()}};
    return cb->Dispatch(exe->get(), 1, {}, {}, bindings);
  }));
  EXPECT_EQ(Read(out.get()), f.Expected());
}

TEST_F(NpuDeviceTest, ManyJobsCycleThroughTheRing) {
  Create();
  constexpr int kJobs = 3 * NpuHardware::kRingSlots + 1;
  std::vector<uint8_t> data(256);
  for (int i = 0; i < 256; ++i) data[i] = uint8_t(i);
  std::vector<ref_ptr<hal::Buffer>> buffers;
  buffers.push_back(Host(data.data(), data.size()));
  for (int i = 0; i < kJobs; ++i) buffers.push_back(Host(nullptr, data.size()));
  // A chain of copies: each reads the previous one's result.
  ASSERT_OK(Submit([&](hal::CommandBuffer* cb) -> Status {
    for (int i = 0; i < kJobs; ++i) {
      OSPREY_RETURN_IF_ERROR(cb->CopyBuffer({buffers[i].get()}, {buffers[i + 1].get()}));
      OSPREY_RETURN_IF_ERROR(cb->ExecutionBarrier());
    }
    return OkStatus();
  }));
  EXPECT_EQ(Read(buffers.back().get()), data);
  EXPECT_EQ(device_->hardware()->ReadRegister(kHwRegCompleted), uint32_t(kJobs));
}

TEST_F(NpuDeviceTest, HungDeviceTimesOutAndResets) {
  NpuDeviceOptions options;
  options.job_timeout_ns = 200'000'000;
  options.hardware_options.simulate_hang = true;
  Create(options);
  auto a = Host(nullptr, 64);
  auto b = Host(nullptr, 64);
  Status s = Submit([&](hal::CommandBuffer* cb) { return cb->CopyBuffer({a.get()}, {b.get()}); });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(Text(s).find("timed out"), std::string::npos) << Text(s);
  // The reset cleared the hang; the device works again.
  ASSERT_OK(Submit([&](hal::CommandBuffer* cb) { return cb->CopyBuffer({a.get()}, {b.get()}); }));
}

TEST_F(NpuDeviceTest, QueueRunsInOrderAndDrainsOnDestruction) {
  Create();  // Default wait timeout (10 s): the host signals well before.
  auto a = Host(nullptr, 64);
  auto b = Host(nullptr, 64);
  auto gate = device_->CreateSemaphore(0);
  auto done = device_->CreateSemaphore(0);
  ASSERT_OK(gate);
  ASSERT_OK(done);
  const uint32_t one = 1, two = 2;
  // Two submissions: the first waits for the host, the second (no waits)
  // must still run after it.
  auto first = device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  auto second = device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  ASSERT_OK(first);
  ASSERT_OK(second);
  ASSERT_OK((*first)->Begin());
  ASSERT_OK((*first)->UpdateBuffer(&one, {a.get(), 0, 4}));
  ASSERT_OK((*first)->End());
  ASSERT_OK((*second)->Begin());
  ASSERT_OK((*second)->CopyBuffer({a.get(), 0, 4}, {b.get(), 0, 4}));
  ASSERT_OK((*second)->UpdateBuffer(&two, {a.get(), 0, 4}));
  ASSERT_OK((*second)->End());
  hal::Semaphore* gates[] = {gate->get()};
  hal::Semaphore* dones[] = {done->get()};
  uint64_t v1[] = {1}, v2[] = {2};
  hal::CommandBuffer* c1[] = {first->get()};
  hal::CommandBuffer* c2[] = {second->get()};
  ASSERT_OK(device_->QueueExecute({gates, v1}, c1, {dones, v1}));
  ASSERT_OK(device_->QueueExecute({}, c2, {dones, v2}));
  EXPECT_EQ(*(*done)->Query(), 0u);  // Held by the gate.
  ASSERT_OK((*gate)->Signal(1));
  ASSERT_OK((*done)->Wait(2, platform::DeadlineFromTimeout(5'000'000'000)));
  uint32_t copied = 0, last = 0;
  ASSERT_OK(b->ReadData(0, &copied, 4));
  ASSERT_OK(a->ReadData(0, &last, 4));
  EXPECT_EQ(copied, 1u);
  EXPECT_EQ(last, 2u);

  // A submission whose wait is never reached is still pending when the
  // device goes away: destruction drains it, failing its semaphore after
  // the (short) wait timeout.
  NpuDeviceOptions options;
  options.wait_timeout_ns = 20'000'000;
  Create(options);
  auto cb = device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  auto never = device_->CreateSemaphore(0);
  auto failed = device_->CreateSemaphore(0);
  ASSERT_OK(cb);
  ASSERT_OK(never);
  ASSERT_OK(failed);
  ASSERT_OK((*cb)->Begin());
  ASSERT_OK((*cb)->End());
  hal::Semaphore* nevers[] = {never->get()};
  hal::Semaphore* faileds[] = {failed->get()};
  hal::CommandBuffer* c3[] = {cb->get()};
  ASSERT_OK(device_->QueueExecute({nevers, v1}, c3, {faileds, v1}));
  device_.reset();
  Status s = (*failed)->Wait(1, platform::DeadlineFromTimeout(5'000'000'000));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(Text(s).find("wait semaphore 0"), std::string::npos) << Text(s);
}

TEST_F(NpuDeviceTest, RejectsWhatTheNpuCannotRun) {
  Create();
  ConvFixture f;
  auto exe = Load({f.Export()});
  ASSERT_OK(exe);
  auto cb = device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  ASSERT_OK(cb);
  ASSERT_OK((*cb)->Begin());
  auto in = Host(nullptr, 1024);
  BufferRef bindings[] = {{in.get()}, {in.get()}, {in.get()}};
  EXPECT_EQ((*cb)->Dispatch(exe->get(), 0, {2, 1, 1}, {}, bindings).code(),
            StatusCode::kInvalidArgument);

  auto cache = device_->CreateExecutableCache();
  ASSERT_OK(cache);
  EXPECT_FALSE((*cache)->CanPrepareFormat("static"));
  hal::ExecutableParams params;
  params.format = "elf-x86_64";
  EXPECT_EQ((*cache)->PrepareExecutable(params).status().code(), StatusCode::kUnimplemented);
  std::vector<uint8_t> garbage(64, 7);
  params.format = "npu-v1";
  params.data = garbage;
  EXPECT_EQ((*cache)->PrepareExecutable(params).status().code(), StatusCode::kInvalidArgument);
}

TEST(NpuDriverTest, RegistersAndParsesParams) {
  hal::DriverRegistry registry;
  ASSERT_OK(RegisterDriver(registry));
  EXPECT_EQ(RegisterDriver(registry).code(), StatusCode::kAlreadyExists);
  hal::DeviceParam good[] = {{"pes", "256"}, {"sram_kib", "256"}, {"mode", "input"},
                             {"dma_bytes_per_cycle", "32"}, {"inline", "1"}};
  auto device = registry.CreateDevice("npu", good, osprey::Allocator::Default());
  ASSERT_OK(device);
  EXPECT_STREQ((*device)->id(), "npu");
  auto* npu = static_cast<NpuDevice*>(device->get());
  EXPECT_EQ(npu->options().hardware.pe_count, 256u);
  EXPECT_EQ(npu->options().hardware.sram_bytes, 256u * 1024);
  EXPECT_EQ(npu->options().sram_pool_bytes, 64u * 1024);
  EXPECT_EQ(npu->options().hardware.mode, sim::ParallelMode::kInputParallel);

  for (auto bad : std::vector<hal::DeviceParam>{
           {"pes", "100"}, {"sram_kib", "128"}, {"frobnicate", "1"}, {"mode", "sideways"},
           {"sram_pool_kib", "512"}, {"dma_bytes_per_cycle", "x"}}) {
    hal::DeviceParam params[] = {bad};
    auto result = registry.CreateDevice("npu", params, osprey::Allocator::Default());
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << bad.key;
  }
}

}  // namespace
}  // namespace osprey::drivers::npu
