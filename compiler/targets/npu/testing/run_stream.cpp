#include "compiler/targets/npu/testing/run_stream.h"

#include <algorithm>
#include <cmath>

#include "drivers/npu/reference/reference.h"
#include "drivers/npu/sim/command_stream.h"

namespace osprey::compiler::npu::testing {
namespace sim = drivers::npu::sim;
namespace ref = drivers::npu::reference;

namespace {
absl::Status toAbsl(const osprey::Status &s) {
  if (s.ok()) {
    return absl::OkStatus();
  }
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}
} // namespace

RunResult runStream(const CompiledStream &stream, const NpuConfig &config,
                    std::vector<std::vector<uint8_t>> &bindings,
                    uint64_t sramBytes) {
  RunResult result;
  if (bindings.size() < stream.bindingCount) {
    result.status = absl::InvalidArgumentError("too few bindings");
    return result;
  }
  sim::ExportView view;
  view.words = stream.words;
  view.relocations = stream.relocations;
  view.binding_count = stream.bindingCount;
  result.status = toAbsl(
      sim::VerifyStream(view.words, view.relocations, view.binding_count));
  if (!result.status.ok()) {
    return result;
  }
  auto created =
      sim::Simulator::Create(toSimConfig(config), osprey::Allocator::Default());
  if (!created.ok()) {
    result.status = toAbsl(created.status());
    return result;
  }
  auto simulator = std::move(created).value();
  simulator->set_stream_sram_bytes(sramBytes ? sramBytes
                                             : config.streamSramBytes());
  std::vector<uint32_t> addresses;
  std::vector<sim::MemoryWindow> windows;
  uint64_t next = 0x10000000;
  for (uint32_t i = 0; i < stream.bindingCount; ++i) {
    addresses.push_back(static_cast<uint32_t>(next));
    if (!bindings[i].empty()) {
      sim::MemoryWindow w;
      w.device_address = static_cast<uint32_t>(next);
      w.length = static_cast<uint32_t>(bindings[i].size());
      w.host = bindings[i].data();
      w.access = sim::kWindowRead;
      if (stream.bindingWriteMask & (1u << i)) {
        w.access |= sim::kWindowWrite;
      }
      windows.push_back(w);
    }
    next += (bindings[i].size() + 0xFFFF) / 0x10000 * 0x10000 + 0x10000;
  }
  std::vector<uint32_t> words(stream.words.size());
  result.status = toAbsl(sim::ApplyRelocations(view, addresses, words));
  if (!result.status.ok()) {
    return result;
  }
  result.status =
      toAbsl(simulator->Execute(words, windows, &result.counters, nullptr));
  return result;
}

std::vector<int8_t> referenceLayer(const NpuLayer &l,
                                   const std::vector<int8_t> &input,
                                   const std::vector<int8_t> &input2) {
  std::vector<int8_t> out(l.output.elements());
  int32_t actMin = l.relu ? std::max(l.actMin, l.outputZp) : l.actMin;
  ref::ConvParams p;
  p.in_h = l.input.h;
  p.in_w = l.input.w;
  p.in_c = l.input.c;
  p.out_h = l.output.h;
  p.out_w = l.output.w;
  p.out_c = l.output.c;
  p.kernel_h = l.kernelH;
  p.kernel_w = l.kernelW;
  p.stride_h = l.strideH;
  p.stride_w = l.strideW;
  p.pad_top = l.padTop;
  p.pad_left = l.padLeft;
  p.input_zp = l.inputZp;
  p.weight_zp = l.weightZp;
  p.output_zp = l.outputZp;
  p.act_min = actMin;
  p.act_max = l.actMax;
  ref::ChannelParams ch{l.bias.data(), l.multiplier.data(), l.shift.data()};
  ref::Rescale r;
  r.input_zp = l.inputZp;
  r.output_zp = l.outputZp;
  r.multiplier = l.out.multiplier;
  r.shift = l.out.shift;
  r.act_min = l.actMin;
  r.act_max = l.actMax;
  const int64_t n = l.output.elements();
  switch (l.kind) {
  case LayerKind::Conv:
    ref::Conv2D(p, input.data(), l.weights.data(), ch, false, out.data());
    break;
  case LayerKind::DepthwiseConv:
    ref::DepthwiseConv2D(p, input.data(), l.weights.data(), ch, out.data());
    break;
  case LayerKind::MatMul: {
    ref::MatMulParams m;
    m.m = l.input.h;
    m.k = l.input.c;
    m.n = l.output.c;
    m.input_zp = l.inputZp;
    m.weight_zp = l.weightZp;
    m.output_zp = l.outputZp;
    m.act_min = actMin;
    m.act_max = l.actMax;
    ref::MatMul(m, input.data(), l.weights.data(), ch, out.data());
    break;
  }
  case LayerKind::MaxPool:
    ref::MaxPool(p, input.data(), out.data());
    break;
  case LayerKind::AvgPool:
    ref::AvgPool(p, input.data(), out.data());
    break;
  case LayerKind::Add: {
    ref::AddParams a;
    a.a_zp = l.inputZp;
    a.b_zp = l.input2Zp;
    a.output_zp = l.outputZp;
    a.left_shift = l.addLeftShift;
    a.a_multiplier = l.inScale.multiplier;
    a.a_shift = l.inScale.shift;
    a.b_multiplier = l.in2Scale.multiplier;
    a.b_shift = l.in2Scale.shift;
    a.out_multiplier = l.out.multiplier;
    a.out_shift = l.out.shift;
    a.act_min = l.actMin;
    a.act_max = l.actMax;
    ref::AddInt8(a, input.data(), input2.data(), n, out.data());
    break;
  }
  case LayerKind::Relu:
    ref::Relu(r, input.data(), n, out.data());
    break;
  case LayerKind::LeakyRelu:
    ref::LeakyRelu(r, l.alpha.multiplier, l.alpha.shift, input.data(), n,
                   out.data());
    break;
  case LayerKind::Min:
    ref::Minimum(input.data(), l.useScalar ? nullptr : input2.data(), l.scalar,
                 l.actMin, l.actMax, n, out.data());
    break;
  case LayerKind::Max:
    ref::Maximum(input.data(), l.useScalar ? nullptr : input2.data(), l.scalar,
                 l.actMin, l.actMax, n, out.data());
    break;
  }
  return out;
}

std::vector<int8_t> randomTensor(int64_t n, std::mt19937 &rng) {
  std::vector<int8_t> v(n);
  std::uniform_int_distribution<int> value(-128, 127), mode(0, 15);
  for (int64_t i = 0; i < n;) {
    int m = mode(rng);
    int64_t run = std::min<int64_t>(n - i, 1 + mode(rng));
    for (int64_t j = 0; j < run; ++j, ++i) {
      v[i] = m == 0 ? -128 : m == 1 ? 127 : m == 2 ? 0 : value(rng);
    }
  }
  return v;
}

NpuLayer makeLayer(const LayerShape &s, std::mt19937 &rng) {
  NpuLayer l;
  l.kind = s.kind;
  l.name = layerKindName(s.kind);
  l.input = {s.h, s.w, s.ic};
  l.kernelH = s.kh;
  l.kernelW = s.kw;
  l.strideH = s.sh;
  l.strideW = s.sw;
  l.padTop = s.padTop;
  l.padLeft = s.padLeft;
  l.padBottom = s.padBottom;
  l.padRight = s.padRight;
  l.relu = s.relu;
  std::uniform_int_distribution<int> zp(-128, 127), small(-20, 20);
  std::uniform_int_distribution<int32_t> mult(1 << 29, INT32_MAX);
  l.inputZp = small(rng);
  l.input2Zp = small(rng);
  l.weightZp = small(rng) / 4;
  l.outputZp = small(rng);
  if (l.hasWindow()) {
    int64_t oh = (s.h + s.padTop + s.padBottom - s.kh) / s.sh + 1;
    int64_t ow = (s.w + s.padLeft + s.padRight - s.kw) / s.sw + 1;
    l.output = {oh, ow, s.kind == LayerKind::Conv ? s.oc : s.ic};
  } else if (s.kind == LayerKind::MatMul) {
    l.input = {s.h, 1, s.ic};
    l.output = {s.h, 1, s.oc};
  } else {
    l.output = l.input;
  }
  if (l.hasWeights()) {
    int64_t reduction = s.kind == LayerKind::Conv ? int64_t{s.kh} * s.kw * s.ic
                        : s.kind == LayerKind::MatMul ? s.ic
                                                      : int64_t{s.kh} * s.kw;
    int64_t count = s.kind == LayerKind::DepthwiseConv ? reduction * s.ic
                                                       : reduction * s.oc;
    l.weights.resize(count);
    std::uniform_int_distribution<int> w(-128, 127);
    for (int8_t &x : l.weights) {
      x = static_cast<int8_t>(w(rng));
    }
    // |acc| is around 128 * 128 * sqrt(reduction) / 2: scale it to ~64.
    int32_t base = -static_cast<int32_t>(
        std::lround(std::log2(128.0 * std::sqrt(double(reduction)))));
    int64_t oc = l.output.c;
    std::uniform_int_distribution<int32_t> bias(-5000, 5000);
    std::uniform_int_distribution<int> jitter(-2, 1);
    for (int64_t i = 0; i < oc; ++i) {
      l.bias.push_back(bias(rng));
      l.multiplier.push_back(mult(rng));
      l.shift.push_back(std::clamp(base + jitter(rng), -31, 30));
    }
  }
  l.out = {mult(rng), -std::uniform_int_distribution<int>(0, 2)(rng)};
  l.alpha = {mult(rng), -std::uniform_int_distribution<int>(1, 4)(rng)};
  l.inScale = {mult(rng), -std::uniform_int_distribution<int>(0, 2)(rng)};
  l.in2Scale = {mult(rng), -std::uniform_int_distribution<int>(0, 2)(rng)};
  l.addLeftShift = 20;
  l.out.shift = l.kind == LayerKind::Add
                    ? -20 + std::uniform_int_distribution<int>(0, 2)(rng)
                    : l.out.shift;
  if (l.kind == LayerKind::MaxPool || l.kind == LayerKind::AvgPool ||
      l.kind == LayerKind::Min || l.kind == LayerKind::Max) {
    l.inputZp = l.outputZp = l.input2Zp = 0;
  }
  std::uniform_int_distribution<int> clampLo(-128, -90), clampHi(90, 127);
  l.actMin = clampLo(rng);
  l.actMax = clampHi(rng);
  l.scalar = small(rng);
  return l;
}

} // namespace osprey::compiler::npu::testing
