// libFuzzer target: the npu-v1 blob parser and command-stream verifier, and
// the simulator running each verified stream against one small window
// (every access it makes is checked as the device would).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "drivers/npu/sim/command_stream.h"
#include "drivers/npu/sim/simulator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey::drivers::npu::sim;
  // Blobs are 4-byte aligned in modules.
  std::vector<uint32_t> aligned((size + 3) / 4);
  if (size) memcpy(aligned.data(), data, size);
  BlobView view;
  if (!BlobView::Parse(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(aligned.data()),
                                                size),
                       &view)
           .ok()) {
    return 0;
  }
  static osprey::ref_ptr<Simulator> simulator = [] {
    HardwareConfig config;
    return std::move(Simulator::Create(config, osprey::Allocator::Default()).value());
  }();
  std::vector<uint8_t> memory(4096);
  for (uint32_t e = 0; e < view.export_count() && e < 4; ++e) {
    ExportView ex = view.export_view(e);
    std::vector<uint32_t> bases(ex.binding_count, 0x1000);
    std::vector<uint32_t> words(ex.words.size());
    if (!ApplyRelocations(ex, bases, words).ok()) continue;
    MemoryWindow window{0x1000, uint32_t(memory.size()), memory.data(),
                        uint8_t(kWindowRead | kWindowWrite)};
    Fault fault;
    simulator->Execute(words, std::span<const MemoryWindow>(&window, 1), nullptr, &fault)
        .IgnoreError();
  }
  return 0;
}
