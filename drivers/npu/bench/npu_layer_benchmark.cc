// Simulated cycles and PE utilization of the convolution layers of MLPerf
// Tiny's ResNet-8 and DS-CNN on several NPU configurations.
//
// Run without arguments it prints the markdown tables of docs/npu.md and
// then times the simulator itself with Google Benchmark. Each layer runs as
// one command stream: weights and input in by DMA, the layer (row-tiled if
// it does not fit in SRAM), output out by DMA.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "drivers/npu/reference/reference.h"
#include "drivers/npu/sim/command_stream.h"
#include "drivers/npu/sim/simulator.h"
#include "drivers/npu/builder/stream_builder.h"

namespace osprey::drivers::npu {
namespace {

using sim::Counters;
using sim::HardwareConfig;
using sim::ParallelMode;
using builder::StreamBuilder;

struct Layer {
  const char* name;
  int ih, iw, ic, oc, kh, kw, stride, pad_top, pad_left;
  bool depthwise;
  int oh() const { return ih / stride + (ih % stride ? 1 : 0); }  // "same" padding
  int ow() const { return iw / stride + (iw % stride ? 1 : 0); }
  uint64_t macs() const {
    return uint64_t(oh()) * ow() * oc * kh * kw * (depthwise ? 1 : ic);
  }
};

// MLPerf Tiny ResNet-8 (CIFAR-10, 32x32x3).
const Layer kResNet8[] = {
    {"conv1 3x3 3->16", 32, 32, 3, 16, 3, 3, 1, 1, 1, false},
    {"s1 conv 3x3 16->16 (a)", 32, 32, 16, 16, 3, 3, 1, 1, 1, false},
    {"s1 conv 3x3 16->16 (b)", 32, 32, 16, 16, 3, 3, 1, 1, 1, false},
    {"s2 conv 3x3/2 16->32", 32, 32, 16, 32, 3, 3, 2, 0, 0, false},
    {"s2 conv 3x3 32->32", 16, 16, 32, 32, 3, 3, 1, 1, 1, false},
    {"s2 shortcut 1x1/2 16->32", 32, 32, 16, 32, 1, 1, 2, 0, 0, false},
    {"s3 conv 3x3/2 32->64", 16, 16, 32, 64, 3, 3, 2, 0, 0, false},
    {"s3 conv 3x3 64->64", 8, 8, 64, 64, 3, 3, 1, 1, 1, false},
    {"s3 shortcut 1x1/2 32->64", 16, 16, 32, 64, 1, 1, 2, 0, 0, false},
};

// MLPerf Tiny DS-CNN (keyword spotting, 49x10x1 MFCC).
const Layer kDsCnn[] = {
    {"conv1 10x4/2 1->64", 49, 10, 1, 64, 10, 4, 2, 4, 1, false},
    {"dw1 3x3 64", 25, 5, 64, 64, 3, 3, 1, 1, 1, true},
    {"pw1 1x1 64->64", 25, 5, 64, 64, 1, 1, 1, 0, 0, false},
    {"dw2 3x3 64", 25, 5, 64, 64, 3, 3, 1, 1, 1, true},
    {"pw2 1x1 64->64", 25, 5, 64, 64, 1, 1, 1, 0, 0, false},
    {"dw3 3x3 64", 25, 5, 64, 64, 3, 3, 1, 1, 1, true},
    {"pw3 1x1 64->64", 25, 5, 64, 64, 1, 1, 1, 0, 0, false},
    {"dw4 3x3 64", 25, 5, 64, 64, 3, 3, 1, 1, 1, true},
    {"pw4 1x1 64->64", 25, 5, 64, 64, 1, 1, 1, 0, 0, false},
};

struct Result {
  Counters counters;
  bool ok = false;
};

// Builds and runs the stream of one layer. Single-shot: output rows are
// tiled only as needed for one input tile (with halo) and one output tile to
// fit in SRAM, and DMA and compute alternate. Pipelined: about four row
// tiles, double-buffered, so loads and stores overlap compute.
Result RunLayer(const Layer& l, const HardwareConfig& config, bool pipelined = false) {
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> d(-128, 127);
  const size_t w_bytes = size_t(l.depthwise ? 1 : l.oc) * l.kh * l.kw * l.ic;
  std::vector<uint8_t> input(size_t(l.ih) * l.iw * l.ic), weights(w_bytes + 12 * l.oc);
  for (auto& x : input) x = uint8_t(d(gen));
  for (size_t i = 0; i < w_bytes; ++i) weights[i] = uint8_t(d(gen));
  std::vector<int32_t> bias(l.oc, 0), mult(l.oc, 1 << 30), shift(l.oc, -8);
  auto q = builder::PackQParams(bias, mult, shift);
  std::memcpy(weights.data() + w_bytes, q.data(), q.size());
  std::vector<uint8_t> output(size_t(l.oh()) * l.ow() * l.oc);

  const uint64_t in_row = uint64_t(l.iw) * l.ic, out_row = uint64_t(l.ow()) * l.oc;
  auto in_rows = [&l](int oy0, int rows, int* iy0, int* iy1) {
    *iy0 = std::max(0, oy0 * l.stride - l.pad_top);
    *iy1 = std::min(l.ih, (oy0 + rows - 1) * l.stride - l.pad_top + l.kh);
  };
  auto tile_bytes = [&](int rows) {
    return uint64_t((rows - 1) * l.stride + l.kh) * in_row + rows * out_row + 128;
  };
  // Single-shot: the largest row tile that fits. Pipelined: about four
  // tiles, two of each buffer in SRAM.
  const int buffers = pipelined ? 2 : 1;
  int tile = pipelined ? (l.oh() + 3) / 4 : l.oh();
  while (tile > 1 && buffers * tile_bytes(tile) > config.sram_bytes) --tile;
  const uint32_t in_slot = uint32_t(((tile - 1) * l.stride + l.kh) * in_row + 63) / 64 * 64;
  const uint32_t out_slot = uint32_t(tile * out_row + 63) / 64 * 64;
  auto in_addr = [&](int t) { return uint32_t((t % buffers) * in_slot); };
  auto out_addr = [&](int t) { return uint32_t(buffers * in_slot + (t % buffers) * out_slot); };
  auto load = [&](StreamBuilder& b, int t) {
    int iy0, iy1;
    in_rows(t * tile, std::min(tile, l.oh() - t * tile), &iy0, &iy1);
    b.DmaRead(0, uint32_t(iy0 * in_row), in_addr(t), uint32_t((iy1 - iy0) * in_row));
  };
  auto compute = [&](StreamBuilder& b, int t) {
    const int oy0 = t * tile, rows = std::min(tile, l.oh() - oy0);
    int iy0, iy1;
    in_rows(oy0, rows, &iy0, &iy1);
    b.Ifm(in_addr(t), iy1 - iy0, l.iw, l.ic).Ofm(out_addr(t), rows, l.ow(), l.oc);
    b.Kernel(l.kh, l.kw, l.stride, l.stride, oy0 == 0 ? l.pad_top : 0, l.pad_left);
    b.Set(NPU_REG_QPARAM_ADDR, uint32_t(w_bytes));
    b.Op(l.depthwise ? NPU_OP_DEPTH_CONV : NPU_OP_CONV_RELU, l.depthwise ? NPU_FLAG_REQUANT : 0);
  };
  auto store = [&](StreamBuilder& b, int t) {
    const int oy0 = t * tile, rows = std::min(tile, l.oh() - oy0);
    b.DmaWrite(2, uint32_t(oy0 * out_row), out_addr(t), uint32_t(rows * out_row));
  };
  const int tiles = (l.oh() + tile - 1) / tile;
  StreamBuilder b;
  b.DmaRead(1, 0, 0, uint32_t(weights.size()), 1, 0, 0, /*to_weights=*/true);
  if (pipelined) {
    // Tile t+1 loads and tile t-1 stores while tile t computes.
    load(b, 0);
    b.Op(NPU_OP_SYNC);
    for (int t = 0; t < tiles; ++t) {
      if (t + 1 < tiles) load(b, t + 1);
      compute(b, t);
      b.Op(NPU_OP_SYNC);
      store(b, t);
    }
    b.Op(NPU_OP_SYNC);
  } else {
    for (int t = 0; t < tiles; ++t) {
      load(b, t);
      b.Op(NPU_OP_SYNC);
      compute(b, t);
      b.Op(NPU_OP_SYNC);
      store(b, t);
    }
  }
  std::vector<uint32_t> words = b.Finish();
  sim::ExportView view;
  view.words = words;
  view.relocations = b.relocations();
  view.binding_count = 3;
  const uint32_t bases[3] = {0x10000000, 0x20000000, 0x30000000};
  std::vector<uint32_t> patched(words.size());
  Result r;
  if (!sim::ApplyRelocations(view, bases, patched).ok()) return r;
  sim::MemoryWindow windows[3] = {
      {bases[0], uint32_t(input.size()), input.data(), sim::kWindowRead},
      {bases[1], uint32_t(weights.size()), weights.data(), sim::kWindowRead},
      {bases[2], uint32_t(output.size()), output.data(), sim::kWindowWrite},
  };
  auto device = sim::Simulator::Create(config, osprey::Allocator::Default());
  if (!device.ok()) return r;
  Status s = (*device)->Execute(patched, windows, &r.counters, nullptr);
  if (!s.ok()) {
    char text[512];
    s.ToString(text, sizeof(text));
    fprintf(stderr, "%s: %s\n", l.name, text);
    return r;
  }
  // The numbers only count if the stream computed the right thing.
  reference::ConvParams p;
  p.in_h = l.ih, p.in_w = l.iw, p.in_c = l.ic;
  p.out_h = l.oh(), p.out_w = l.ow(), p.out_c = l.oc;
  p.kernel_h = l.kh, p.kernel_w = l.kw, p.stride_h = p.stride_w = l.stride;
  p.pad_top = l.pad_top, p.pad_left = l.pad_left;
  std::vector<int8_t> expected(output.size());
  const auto* in8 = reinterpret_cast<const int8_t*>(input.data());
  const auto* w8 = reinterpret_cast<const int8_t*>(weights.data());
  const reference::ChannelParams channels{bias.data(), mult.data(), shift.data()};
  if (l.depthwise) {
    reference::DepthwiseConv2D(p, in8, w8, channels, expected.data());
  } else {
    reference::Conv2D(p, in8, w8, channels, /*relu=*/true, expected.data());
  }
  if (std::memcmp(expected.data(), output.data(), output.size()) != 0) {
    fprintf(stderr, "%s: output differs from the reference\n", l.name);
    return r;
  }
  r.ok = true;
  return r;
}

HardwareConfig Config(uint32_t pes, uint64_t sram_kib, ParallelMode mode) {
  HardwareConfig c;
  c.pe_count = pes;
  c.sram_bytes = sram_kib * 1024;
  c.mode = mode;
  return c;
}

struct Column {
  const char* title;
  HardwareConfig config;
};

void PrintTable(const char* model, const Layer* layers, size_t count) {
  const Column columns[] = {
      {"64 PE, 256 KiB", Config(64, 256, ParallelMode::kOutputParallel)},
      {"64 PE, 512 KiB", Config(64, 512, ParallelMode::kOutputParallel)},
      {"256 PE, 256 KiB", Config(256, 256, ParallelMode::kOutputParallel)},
      {"256 PE, 512 KiB", Config(256, 512, ParallelMode::kOutputParallel)},
      {"256 PE, 512 KiB, input-parallel", Config(256, 512, ParallelMode::kInputParallel)},
  };
  printf("\n%s: compute cycles of the layer instruction / PE utilization "
         "(peak = MACs / PEs); last row: all layers, total cycles with DMA\n\n",
         model);
  printf("| layer | MACs | peak 64 | peak 256 |");
  for (const Column& c : columns) printf(" %s |", c.title);
  printf("\n|---|---:|---:|---:|");
  for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); ++i) printf("---:|");
  printf("\n");
  uint64_t total_macs = 0;
  Counters totals[sizeof(columns) / sizeof(columns[0])];
  for (size_t i = 0; i < count; ++i) {
    const Layer& l = layers[i];
    total_macs += l.macs();
    printf("| %s | %llu | %llu | %llu |", l.name, (unsigned long long)l.macs(),
           (unsigned long long)((l.macs() + 63) / 64), (unsigned long long)((l.macs() + 255) / 256));
    for (size_t c = 0; c < sizeof(columns) / sizeof(columns[0]); ++c) {
      Result r = RunLayer(l, columns[c].config);
      if (!r.ok) {
        printf(" fault |");
        continue;
      }
      totals[c].Accumulate(r.counters);
      printf(" %llu / %.0f%% |", (unsigned long long)r.counters.mac_cycles,
             100.0 * r.counters.pe_utilization(columns[c].config.pe_count));
    }
    printf("\n");
  }
  printf("| **total (with DMA)** | %llu | %llu | %llu |", (unsigned long long)total_macs,
         (unsigned long long)((total_macs + 63) / 64),
         (unsigned long long)((total_macs + 255) / 256));
  for (size_t c = 0; c < sizeof(columns) / sizeof(columns[0]); ++c) {
    printf(" %llu (MAC %llu) / %.0f%% |", (unsigned long long)totals[c].total_cycles,
           (unsigned long long)totals[c].mac_cycles,
           100.0 * totals[c].pe_utilization(columns[c].config.pe_count));
  }
  printf("\n");
}

// Whole-model totals (all conv layers, DMA included): single-shot streams
// against double-buffered ones.
void PrintOverlapTable() {
  struct Model {
    const char* name;
    const Layer* layers;
    size_t count;
  };
  const Model models[] = {{"ResNet-8", kResNet8, std::size(kResNet8)},
                          {"DS-CNN", kDsCnn, std::size(kDsCnn)}};
  const struct {
    const char* title;
    HardwareConfig config;
  } columns[] = {
      {"64 PE, 256 KiB", Config(64, 256, ParallelMode::kOutputParallel)},
      {"64 PE, 512 KiB", Config(64, 512, ParallelMode::kOutputParallel)},
      {"256 PE, 256 KiB", Config(256, 256, ParallelMode::kOutputParallel)},
      {"256 PE, 512 KiB", Config(256, 512, ParallelMode::kOutputParallel)},
  };
  printf("\nWhole model (conv layers), total cycles with DMA: single-shot -> double-buffered "
         "(MAC-instruction cycles; peak = MACs / PEs)\n\n");
  printf("| model | config | peak | MAC cycles | single-shot | double-buffered | DMA bytes |\n");
  printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (const Model& m : models) {
    uint64_t macs = 0;
    for (size_t i = 0; i < m.count; ++i) macs += m.layers[i].macs();
    for (const auto& c : columns) {
      Counters single, piped;
      for (size_t i = 0; i < m.count; ++i) {
        Result a = RunLayer(m.layers[i], c.config, false);
        Result b = RunLayer(m.layers[i], c.config, true);
        if (!a.ok || !b.ok) {
          printf("| %s | %s | fault |\n", m.name, c.title);
          return;
        }
        single.Accumulate(a.counters);
        piped.Accumulate(b.counters);
      }
      printf("| %s | %s | %llu | %llu | %llu | %llu | %llu |\n", m.name, c.title,
             (unsigned long long)((macs + c.config.pe_count - 1) / c.config.pe_count),
             (unsigned long long)piped.mac_cycles, (unsigned long long)single.total_cycles,
             (unsigned long long)piped.total_cycles,
             (unsigned long long)(piped.dma_bytes_read + piped.dma_bytes_written));
    }
  }
}

// Host time to simulate a whole model's conv layers (functional + timing).
void BM_SimulateModel(benchmark::State& state) {
  const bool resnet = state.range(0) == 0;
  const Layer* layers = resnet ? kResNet8 : kDsCnn;
  const size_t count = resnet ? std::size(kResNet8) : std::size(kDsCnn);
  HardwareConfig config = Config(uint32_t(state.range(1)), 512, ParallelMode::kOutputParallel);
  uint64_t cycles = 0, macs = 0;
  for (auto _ : state) {
    cycles = macs = 0;
    for (size_t i = 0; i < count; ++i) {
      Result r = RunLayer(layers[i], config);
      if (!r.ok) {
        state.SkipWithError("layer faulted");
        return;
      }
      cycles += r.counters.total_cycles;
      macs += r.counters.macs;
    }
  }
  state.counters["npu_cycles"] = double(cycles);
  state.counters["macs"] = double(macs);
  state.SetLabel(resnet ? "resnet8" : "ds-cnn");
}
BENCHMARK(BM_SimulateModel)->ArgsProduct({{0, 1}, {64, 256}})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace osprey::drivers::npu

int main(int argc, char** argv) {
  using namespace osprey::drivers::npu;
  PrintTable("ResNet-8", kResNet8, std::size(kResNet8));
  PrintTable("DS-CNN", kDsCnn, std::size(kDsCnn));
  PrintOverlapTable();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
