// Random and mutated command streams and blobs: the simulator and the blob
// parser must answer every input with OK or a described error, never crash,
// hang or touch memory outside what they were given (run under ASan to see).
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "drivers/npu/sim/command_stream.h"
#include "drivers/npu/sim/simulator.h"
#include "drivers/npu/builder/stream_builder.h"
#include "gtest/gtest.h"

namespace osprey::drivers::npu::sim {
namespace {

constexpr uint32_t kOpcodes[] = {
    NPU_OP_END,        NPU_OP_SET_REG,   NPU_OP_SYNC,      NPU_OP_DMA_READ, NPU_OP_DMA_WRITE,
    NPU_OP_CONV,       NPU_OP_CONV_RELU, NPU_OP_DEPTH_CONV, NPU_OP_MAT_MUL, NPU_OP_ACT_RELU,
    NPU_OP_ACT_LRELU,  NPU_OP_POOL,      NPU_OP_E_ABS,     NPU_OP_C_MIN,    NPU_OP_C_MAX,
    NPU_OP_E_ADD,      NPU_OP_E32_ADD,   0x7E};

uint32_t RandomValue(std::mt19937& gen, uint32_t reg) {
  std::uniform_int_distribution<int> pick(0, 9);
  const int p = pick(gen);
  if (p == 0) return gen();  // Anything, usually out of range.
  switch (reg) {
    case NPU_REG_IFM_H: case NPU_REG_IFM_W: case NPU_REG_IFM_C:
    case NPU_REG_OFM_H: case NPU_REG_OFM_W: case NPU_REG_OFM_C:
      return 1 + gen() % 8;
    case NPU_REG_KERNEL_H: case NPU_REG_KERNEL_W: return 1 + gen() % 3;
    case NPU_REG_STRIDE_H: case NPU_REG_STRIDE_W: return 1 + gen() % 2;
    case NPU_REG_PAD_TOP: case NPU_REG_PAD_LEFT: return gen() % 2;
    case NPU_REG_DMA_SYS_ADDR: return 0x10000000 + gen() % 600;
    case NPU_REG_DMA_LEN: return 1 + gen() % 300;
    case NPU_REG_DMA_ROWS: return 1 + gen() % 3;
    case NPU_REG_DMA_SYS_STRIDE: case NPU_REG_DMA_LOC_STRIDE: return gen() % 400;
    case NPU_REG_OUT_SHIFT: case NPU_REG_IN1_SHIFT: case NPU_REG_IN2_SHIFT:
    case NPU_REG_ALPHA_SHIFT:
      return static_cast<uint32_t>(static_cast<int32_t>(gen() % 62) - 31);
    default:
      return p < 5 ? gen() % 1024 : (512 * 1024 - gen() % 2048);  // Near the SRAM end too.
  }
}

TEST(SimulatorRobustnessTest, RandomStreamsFaultCleanly) {
  std::mt19937 gen(1234);
  auto sim = Simulator::Create(HardwareConfig{}, osprey::Allocator::Default());
  ASSERT_TRUE(sim.ok());
  std::vector<uint8_t> memory(512, 0x11);
  MemoryWindow window{0x10000000, 512, memory.data(), kWindowRead};
  int ok = 0, faulted = 0, computed = 0, dma = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::vector<uint32_t> words;
    if (gen() % 10 < 7) {  // Point the DMA at the mapped window most of the time.
      words.push_back(NPU_MAKE_WORD(NPU_OP_SET_REG, 0, NPU_REG_DMA_SYS_ADDR));
      words.push_back(0x10000000 + gen() % 256);
    }
    const int length = 1 + int(gen() % 40);
    for (int i = 0; i < length; ++i) {
      const uint32_t opcode = kOpcodes[gen() % std::size(kOpcodes)];
      if (opcode == NPU_OP_SET_REG || gen() % 3 == 0) {
        const uint32_t reg = gen() % 8 == 0 ? gen() % 64 : gen() % NPU_REG_COUNT;
        words.push_back(NPU_MAKE_WORD(NPU_OP_SET_REG, 0, reg));
        if (gen() % 50 != 0) words.push_back(RandomValue(gen, reg));
        continue;
      }
      const uint32_t flags = gen() % 6 == 0 ? gen() % 256 : gen() % 2;
      words.push_back(NPU_MAKE_WORD(opcode, flags, gen() % 40 == 0 ? 1 : 0));
    }
    if (gen() % 4 != 0) words.push_back(NPU_MAKE_WORD(NPU_OP_END, 0, 0));
    window.access = static_cast<uint8_t>(gen() % 4);
    Fault fault;
    Counters counters;
    Status s = (*sim)->Execute(words, {&window, 1}, &counters, &fault);
    computed += counters.compute_cycles > 0;
    dma += counters.dma_bytes_read + counters.dma_bytes_written > 0;
    if (s.ok()) {
      ++ok;
      EXPECT_EQ(fault.kind, FaultKind::kNone);
    } else {
      ++faulted;
      EXPECT_NE(fault.kind, FaultKind::kNone);
      EXPECT_GT(std::strlen(fault.message), 0u);
      EXPECT_LE(fault.instruction_index, words.size());
    }
  }
  // Both outcomes occur, and instructions really execute before faults.
  EXPECT_GT(ok, 20);
  EXPECT_GT(faulted, 1000);
  EXPECT_GT(computed, 100);
  EXPECT_GT(dma, 20);
}

TEST(SimulatorRobustnessTest, MutatedBlobsAreRejectedOrVerified) {
  builder::StreamBuilder b;
  b.DmaRead(0, 0, 0, 64).Op(NPU_OP_SYNC).Ifm(0, 1, 1, 64).Ofm(128, 1, 1, 64);
  b.Op(NPU_OP_ACT_RELU).Op(NPU_OP_SYNC).DmaWrite(1, 0, 128, 64);
  builder::BlobExport e;
  e.name = "relu";
  e.words = b.Finish();
  e.relocations = b.relocations();
  e.binding_count = 2;
  e.binding_write_mask = 2;
  const std::vector<uint8_t> blob = builder::BuildBlob({e, e});
  std::mt19937 gen(99);
  int accepted = 0;
  for (int iteration = 0; iteration < 5000; ++iteration) {
    std::vector<uint8_t> mutated = blob;
    const int flips = 1 + int(gen() % 4);
    for (int i = 0; i < flips; ++i) mutated[gen() % mutated.size()] ^= uint8_t(1u << (gen() % 8));
    if (gen() % 5 == 0) mutated.resize(gen() % mutated.size());
    std::vector<uint32_t> storage((mutated.size() + 3) / 4);
    std::memcpy(storage.data(), mutated.data(), mutated.size());
    BlobView view;
    Status s = BlobView::Parse({reinterpret_cast<const uint8_t*>(storage.data()), mutated.size()},
                               &view);
    if (!s.ok()) {
      EXPECT_GT(std::strlen(s.message()), 0u);
      continue;
    }
    ++accepted;
    // Whatever verified must relocate and run (or fault) safely.
    for (uint32_t x = 0; x < view.export_count(); ++x) {
      ExportView ev = view.export_view(x);
      std::vector<uint32_t> addresses(ev.binding_count, 0x10000000);
      std::vector<uint32_t> words(ev.words.size());
      if (!ApplyRelocations(ev, addresses, words).ok()) continue;
      auto sim = Simulator::Create(HardwareConfig{}, osprey::Allocator::Default());
      ASSERT_TRUE(sim.ok());
      std::vector<uint8_t> memory(256);
      MemoryWindow window{0x10000000, 256, memory.data(), kWindowRead | kWindowWrite};
      (*sim)->Execute(words, {&window, 1}, nullptr, nullptr).IgnoreError();
    }
  }
  EXPECT_GT(accepted, 0);  // Some flips land in data words and still verify.
}

}  // namespace
}  // namespace osprey::drivers::npu::sim
