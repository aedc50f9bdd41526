#include "compiler/targets/npu/npu_config.h"

#include "gtest/gtest.h"

namespace osprey::compiler::npu {
namespace {

TEST(NpuConfigTest, DefaultsMatchTheDevice) {
  auto c = parseNpuConfig("npu-v1");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->peCount, 128u);
  EXPECT_EQ(c->sramBytes, 512u * 1024);
  EXPECT_EQ(c->poolBytes, 128u * 1024);
  EXPECT_EQ(c->weightBytes, 256u * 1024);
  EXPECT_EQ(c->dmaBytesPerCycle, 16u);
  EXPECT_EQ(c->dmaSetupCycles, 64u);
  EXPECT_EQ(c->mapping, PeMapping::OutputParallel);
  EXPECT_EQ(c->arrayRows(), 8u);
  EXPECT_EQ(c->arrayCols(), 16u);
  drivers::npu::sim::HardwareConfig hw = toSimConfig(*c);
  drivers::npu::sim::HardwareConfig reset;
  EXPECT_EQ(hw.pe_count, reset.pe_count);
  EXPECT_EQ(hw.sram_bytes, reset.sram_bytes);
  EXPECT_EQ(hw.weight_memory_bytes, reset.weight_memory_bytes);
  EXPECT_EQ(hw.dma_bytes_per_cycle, reset.dma_bytes_per_cycle);
  EXPECT_EQ(hw.dma_setup_cycles, reset.dma_setup_cycles);
  EXPECT_TRUE(drivers::npu::sim::ValidateHardwareConfig(hw).ok());
}

TEST(NpuConfigTest, ParsesEveryKey) {
  auto c = parseNpuConfig("npu-v1:pes=256,sram=1MiB,pool=64KiB,wmem=32768,"
                          "dma_bw=32,dma_setup=0,mode=input");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->peCount, 256u);
  EXPECT_EQ(c->arrayRows(), 16u);
  EXPECT_EQ(c->arrayCols(), 16u);
  EXPECT_EQ(c->sramBytes, 1024u * 1024);
  EXPECT_EQ(c->poolBytes, 64u * 1024);
  EXPECT_EQ(c->streamSramBytes(), 960u * 1024);
  EXPECT_EQ(c->weightBytes, 32u * 1024);
  EXPECT_EQ(c->dmaBytesPerCycle, 32u);
  EXPECT_EQ(c->dmaSetupCycles, 0u);
  EXPECT_EQ(c->mapping, PeMapping::InputParallel);
  EXPECT_EQ(c->toString(), "npu-v1:pes=256,sram=1MiB,pool=64KiB,wmem=32KiB,"
                           "dma_bw=32,dma_setup=0,mode=input");
  auto again = parseNpuConfig(c->toString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->toString(), c->toString());
  // The pool defaults to a quarter of the SRAM given.
  auto d = parseNpuConfig("npu-v1:pes=64,sram=256KiB,wmem=1MiB");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->poolBytes, 64u * 1024);
  EXPECT_EQ(d->streamSramBytes(), 192u * 1024);
  EXPECT_EQ(d->arrayRows(), 8u);
  EXPECT_EQ(d->arrayCols(), 8u);
  EXPECT_TRUE(drivers::npu::sim::ValidateHardwareConfig(toSimConfig(*d)).ok());
}

TEST(NpuConfigTest, ErrorsNameTheKey) {
  struct Bad {
    const char *spec;
    const char *mentions;
  } cases[] = {
      {"npu-v2", "npu-v2"},
      {"npu-v1:pes=100", "'pes'"},
      {"npu-v1:pes=", "'pes'"},
      {"npu-v1:sram=128KiB", "'sram'"},
      {"npu-v1:sram=512MiB", "'sram'"},
      {"npu-v1:sram=300000", "'sram'"},
      {"npu-v1:sram=1GiB", "'sram'"},
      {"npu-v1:wmem=8KiB", "'wmem'"},
      {"npu-v1:dma_bw=0", "'dma_bw'"},
      {"npu-v1:dma_bw=-1", "'dma_bw'"},
      {"npu-v1:dma_setup=70000", "'dma_setup'"},
      {"npu-v1:mode=sideways", "'mode'"},
      {"npu-v1:sram=256KiB,pool=256KiB", "'pool'"},
      {"npu-v1:frobnicate=1", "'frobnicate'"},
      {"npu-v1:pes=64,pes=64", "'pes'"},
      {"npu-v1:pes", "'pes'"},
  };
  for (const Bad &b : cases) {
    auto c = parseNpuConfig(b.spec);
    ASSERT_FALSE(c.ok()) << b.spec;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << b.spec;
    EXPECT_NE(c.status().message().find(b.mentions), std::string::npos)
        << b.spec << ": " << c.status();
  }
}

} // namespace
} // namespace osprey::compiler::npu
