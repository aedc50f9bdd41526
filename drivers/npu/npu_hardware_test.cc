// Tests of the NPU hardware model: registers, ring, doorbell, interrupt,
// faults, hang and reset, threaded and inline.
#include "drivers/npu/npu_hardware.h"

#include <vector>

#include "drivers/npu/schema/npu_isa.h"
#include "gtest/gtest.h"

namespace osprey::drivers::npu {
namespace {

constexpr uint32_t kEnd = NPU_MAKE_WORD(NPU_OP_END, 0, 0);
constexpr uint32_t kSync = NPU_MAKE_WORD(NPU_OP_SYNC, 0, 0);

class NpuHardwareTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    NpuHardwareOptions options;
    options.inline_execution = GetParam();
    Status s = NpuHardware::Create(sim::HardwareConfig{}, options, osprey::Allocator::Default(),
                                   &hw_);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  void TearDown() override { NpuHardware::Destroy(hw_); }
  int64_t Soon() { return platform::DeadlineFromTimeout(5'000'000'000); }

  NpuHardware* hw_ = nullptr;
};

TEST_P(NpuHardwareTest, JobsCompleteInOrderAndRaiseTheInterrupt) {
  EXPECT_EQ(hw_->ReadRegister(kHwRegId), kHwId);
  const uint32_t words[] = {kSync, kEnd};
  HwJob a, b;
  a.words = words;
  b.words = words;
  auto sa = hw_->Submit(&a);
  auto sb = hw_->Submit(&b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(*sa, 1u);
  EXPECT_EQ(*sb, 2u);
  ASSERT_TRUE(hw_->WaitForCompletion(*sb, Soon()).ok());
  EXPECT_TRUE(a.status.ok());
  EXPECT_TRUE(b.status.ok());
  EXPECT_EQ(hw_->ReadRegister(kHwRegCompleted), 2u);
  EXPECT_EQ(hw_->ReadRegister(kHwRegRingHead), hw_->ReadRegister(kHwRegRingTail));
  EXPECT_EQ(hw_->ReadRegister(kHwRegStatus) & kHwStatusBusy, 0u);
  // Read-only registers ignore writes.
  hw_->WriteRegister(kHwRegCompleted, 77);
  EXPECT_EQ(hw_->ReadRegister(kHwRegCompleted), 2u);
}

TEST_P(NpuHardwareTest, FaultIsLatchedInRegisters) {
  const uint32_t words[] = {0x7F, kEnd};  // Bad opcode.
  HwJob job;
  job.words = words;
  auto seq = hw_->Submit(&job);
  ASSERT_TRUE(seq.ok());
  // Observe the interrupt bits before WaitForCompletion clears them.
  int64_t deadline = Soon();
  while (hw_->ReadRegister(kHwRegCompleted) != *seq && platform::MonotonicNanos() < deadline) {
    platform::YieldProcessor();
  }
  EXPECT_NE(hw_->ReadRegister(kHwRegIrqStatus) & kHwIrqFault, 0u);
  ASSERT_TRUE(hw_->WaitForCompletion(*seq, Soon()).ok());
  EXPECT_EQ(job.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(job.fault.kind, sim::FaultKind::kBadOpcode);
  EXPECT_EQ(hw_->ReadRegister(kHwRegFaultJob), *seq);
  EXPECT_EQ(hw_->ReadRegister(kHwRegFaultKind), uint32_t(sim::FaultKind::kBadOpcode));
  // The device halts until the fault is acknowledged: work does not run.
  EXPECT_EQ(hw_->ReadRegister(kHwRegIrqStatus), kHwIrqFault);
  EXPECT_NE(hw_->ReadRegister(kHwRegStatus) & kHwStatusHalted, 0u);
  const uint32_t good[] = {kEnd};
  HwJob skipped;
  skipped.words = good;
  auto skipped_seq = hw_->Submit(&skipped);
  ASSERT_TRUE(skipped_seq.ok());
  ASSERT_TRUE(hw_->WaitForCompletion(*skipped_seq, Soon()).ok());
  EXPECT_EQ(skipped.status.code(), StatusCode::kAborted);
  hw_->WriteRegister(kHwRegIrqStatus, kHwIrqFault);
  EXPECT_EQ(hw_->ReadRegister(kHwRegIrqStatus), 0u);
  EXPECT_EQ(hw_->ReadRegister(kHwRegStatus) & kHwStatusHalted, 0u);
  HwJob runs;
  runs.words = good;
  auto runs_seq = hw_->Submit(&runs);
  ASSERT_TRUE(runs_seq.ok());
  ASSERT_TRUE(hw_->WaitForCompletion(*runs_seq, Soon()).ok());
  EXPECT_TRUE(runs.status.ok());
}

TEST_P(NpuHardwareTest, RingFullIsResourceExhausted) {
  NpuHardware::Destroy(hw_);
  NpuHardwareOptions options;
  options.inline_execution = GetParam();
  options.simulate_hang = true;  // Nothing drains the ring.
  ASSERT_TRUE(NpuHardware::Create(sim::HardwareConfig{}, options, osprey::Allocator::Default(),
                                  &hw_)
                  .ok());
  EXPECT_NE(hw_->ReadRegister(kHwRegStatus) & kHwStatusHung, 0u);
  const uint32_t words[] = {kEnd};
  std::vector<HwJob> jobs(NpuHardware::kRingSlots);
  for (uint32_t i = 0; i + 1 < NpuHardware::kRingSlots; ++i) {
    jobs[i].words = words;
    ASSERT_TRUE(hw_->Submit(&jobs[i]).ok()) << i;
  }
  jobs.back().words = words;
  EXPECT_EQ(hw_->Submit(&jobs.back()).status().code(), StatusCode::kResourceExhausted);
  Status timed_out = hw_->WaitForCompletion(1, platform::DeadlineFromTimeout(10'000'000));
  EXPECT_EQ(timed_out.code(), StatusCode::kDeadlineExceeded);
  // Reset empties the ring and clears the hang; new work runs.
  hw_->Reset();
  EXPECT_EQ(hw_->ReadRegister(kHwRegStatus), 0u);
  HwJob job;
  job.words = words;
  auto seq = hw_->Submit(&job);
  ASSERT_TRUE(seq.ok());
  EXPECT_TRUE(hw_->WaitForCompletion(*seq, Soon()).ok());
  EXPECT_TRUE(job.status.ok());
}

INSTANTIATE_TEST_SUITE_P(Modes, NpuHardwareTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Inline" : "Threaded";
                         });

}  // namespace
}  // namespace osprey::drivers::npu
