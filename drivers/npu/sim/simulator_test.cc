// Bit-exact comparison of every npu-v1 instruction against the reference,
// tiled layers, faults and the cycle model.
#include "drivers/npu/sim/simulator.h"

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "drivers/npu/reference/reference.h"
#include "drivers/npu/sim/command_stream.h"
#include "drivers/npu/builder/stream_builder.h"
#include "gtest/gtest.h"

namespace osprey::drivers::npu::sim {
namespace {

using builder::PackQParams;
using builder::StreamBuilder;
namespace ref = ::osprey::drivers::npu::reference;

constexpr uint32_t kWindowStride = 0x01000000;  // Binding i at (i + 1) * 16 MiB.

struct Binding {
  std::vector<uint8_t>* data;
  uint8_t access;
};

// A simulated NPU plus host "system memory" bindings, like the driver does.
class TestDevice {
 public:
  explicit TestDevice(HardwareConfig config = {}) {
    auto sim = Simulator::Create(config, osprey::Allocator::Default());
    EXPECT_TRUE(sim.ok()) << sim.status().message();
    sim_ = std::move(sim).value();
  }

  Status Run(const StreamBuilder& b, const std::vector<Binding>& bindings,
             Counters* counters = nullptr, Fault* fault = nullptr) {
    std::vector<uint32_t> words = b.Finish();
    ExportView view;
    view.words = words;
    view.relocations = b.relocations();
    view.binding_count = static_cast<uint32_t>(bindings.size());
    OSPREY_RETURN_IF_ERROR(VerifyStream(view.words, view.relocations, view.binding_count));
    std::vector<uint32_t> addresses;
    std::vector<MemoryWindow> windows;
    for (size_t i = 0; i < bindings.size(); ++i) {
      uint32_t base = static_cast<uint32_t>((i + 1) * kWindowStride);
      addresses.push_back(base);
      MemoryWindow w;
      w.device_address = base;
      w.length = static_cast<uint32_t>(bindings[i].data->size());
      w.host = bindings[i].data->data();
      w.access = bindings[i].access;
      windows.push_back(w);
    }
    std::vector<uint32_t> patched(words.size());
    OSPREY_RETURN_IF_ERROR(ApplyRelocations(view, addresses, patched));
    return sim_->Execute(patched, windows, counters, fault);
  }

  Simulator* sim() { return sim_.get(); }

 private:
  ref_ptr<Simulator> sim_;
};

constexpr uint8_t kRO = kWindowRead;
constexpr uint8_t kWO = kWindowWrite;
constexpr uint8_t kRW = kWindowRead | kWindowWrite;

uint32_t Align(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

class Random {
 public:
  explicit Random(uint32_t seed) : gen_(seed) {}
  std::vector<int8_t> Int8(size_t n, int lo = -128, int hi = 127) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int8_t> v(n);
    for (auto& x : v) x = static_cast<int8_t>(d(gen_));
    return v;
  }
  std::vector<int32_t> Int32(size_t n, int32_t lo, int32_t hi) {
    std::uniform_int_distribution<int32_t> d(lo, hi);
    std::vector<int32_t> v(n);
    for (auto& x : v) x = d(gen_);
    return v;
  }
  int32_t One(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(gen_); }

 private:
  std::mt19937 gen_;
};

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> As(const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

//===----------------------------------------------------------------------===//
// Convolution-like layers
//===----------------------------------------------------------------------===//

struct ConvCase {
  int ih, iw, ic, oc, kh, kw, sh, sw, pt, pl;
  int OutH() const { return (ih + 2 * pt - kh) / sh + 1; }
  int OutW() const { return (iw + 2 * pl - kw) / sw + 1; }
};

enum class Kind { kConvInt32, kConvInt8, kConvRelu, kDepthInt32, kDepthInt8, kMaxPool, kAvgPool };

void CheckConvLike(const ConvCase& c, Kind kind, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "case " << c.ih << "x" << c.iw << "x" << c.ic << " -> "
                                    << c.oc << " k" << c.kh << "x" << c.kw << " s" << c.sh
                                    << " p" << c.pt << " kind " << static_cast<int>(kind));
  Random rnd(seed);
  const bool depth = kind == Kind::kDepthInt32 || kind == Kind::kDepthInt8;
  const bool pool = kind == Kind::kMaxPool || kind == Kind::kAvgPool;
  const bool int32_out = kind == Kind::kConvInt32 || kind == Kind::kDepthInt32;
  const int oc = depth || pool ? c.ic : c.oc;
  ref::ConvParams p;
  p.in_h = c.ih, p.in_w = c.iw, p.in_c = c.ic;
  p.out_h = c.OutH(), p.out_w = c.OutW(), p.out_c = oc;
  p.kernel_h = c.kh, p.kernel_w = c.kw, p.stride_h = c.sh, p.stride_w = c.sw;
  p.pad_top = c.pt, p.pad_left = c.pl;
  if (!pool) {
    p.input_zp = rnd.One(-20, 20);
    p.weight_zp = rnd.One(-3, 3);
    p.output_zp = rnd.One(-10, 10);
  }
  p.act_min = -100, p.act_max = 110;

  const size_t in_n = size_t(c.ih) * c.iw * c.ic;
  const size_t out_n = size_t(p.out_h) * p.out_w * oc;
  const size_t w_n = depth ? size_t(c.kh) * c.kw * c.ic : size_t(oc) * c.kh * c.kw * c.ic;
  auto input = rnd.Int8(in_n);
  auto weights = rnd.Int8(w_n);
  auto bias = rnd.Int32(oc, -5000, 5000);
  auto mult = rnd.Int32(oc, 1 << 30, 0x7FFFFFFF);
  auto shift = rnd.Int32(oc, depth ? -6 : -10, depth ? -3 : -7);

  std::vector<uint8_t> in_mem = Bytes(input);
  std::vector<uint8_t> w_mem = Bytes(weights);
  const uint32_t q_off = Align(static_cast<uint32_t>(w_mem.size()), 16);
  w_mem.resize(q_off);
  auto q = PackQParams(bias, mult, shift);
  w_mem.insert(w_mem.end(), q.begin(), q.end());
  const size_t out_bytes = out_n * (int32_out ? 4 : 1);
  std::vector<uint8_t> out_mem(out_bytes, 0xAA);

  const uint32_t ofm_addr = Align(static_cast<uint32_t>(in_n), 64);
  StreamBuilder b;
  b.DmaRead(0, 0, 0, static_cast<uint32_t>(in_n));
  b.DmaRead(1, 0, 0, static_cast<uint32_t>(w_mem.size()), 1, 0, 0, /*to_weights=*/true);
  b.Op(NPU_OP_SYNC);
  b.Ifm(0, c.ih, c.iw, c.ic, p.input_zp).Ofm(ofm_addr, p.out_h, p.out_w, oc, p.output_zp);
  b.Kernel(c.kh, c.kw, c.sh, c.sw, c.pt, c.pl);
  b.Set(NPU_REG_WGT_ADDR, 0).Set(NPU_REG_WGT_ZP, p.weight_zp).Set(NPU_REG_QPARAM_ADDR, q_off);
  b.Set(NPU_REG_ACT_MIN, p.act_min).Set(NPU_REG_ACT_MAX, p.act_max);
  switch (kind) {
    case Kind::kConvInt32: b.Op(NPU_OP_CONV); break;
    case Kind::kConvInt8: b.Op(NPU_OP_CONV, NPU_FLAG_REQUANT); break;
    case Kind::kConvRelu: b.Op(NPU_OP_CONV_RELU); break;
    case Kind::kDepthInt32: b.Op(NPU_OP_DEPTH_CONV); break;
    case Kind::kDepthInt8: b.Op(NPU_OP_DEPTH_CONV, NPU_FLAG_REQUANT); break;
    case Kind::kMaxPool: b.Op(NPU_OP_POOL); break;
    case Kind::kAvgPool: b.Op(NPU_OP_POOL, NPU_FLAG_POOL_AVG); break;
  }
  b.Op(NPU_OP_SYNC);
  b.DmaWrite(2, 0, ofm_addr, static_cast<uint32_t>(out_bytes));

  TestDevice dev;
  Counters counters;
  Status s = dev.Run(b, {{&in_mem, kRO}, {&w_mem, kRO}, {&out_mem, kWO}}, &counters);
  ASSERT_TRUE(s.ok()) << s.message();

  ref::ChannelParams ch{bias.data(), mult.data(), shift.data()};
  if (int32_out) {
    std::vector<int32_t> expected(out_n);
    if (depth) {
      ref::DepthwiseConv2DInt32(p, input.data(), weights.data(), bias.data(), expected.data());
    } else {
      ref::Conv2DInt32(p, input.data(), weights.data(), bias.data(), expected.data());
    }
    EXPECT_EQ(As<int32_t>(out_mem), expected);
  } else {
    std::vector<int8_t> expected(out_n);
    switch (kind) {
      case Kind::kConvInt8:
      case Kind::kConvRelu:
        ref::Conv2D(p, input.data(), weights.data(), ch, kind == Kind::kConvRelu,
                    expected.data());
        break;
      case Kind::kDepthInt8:
        ref::DepthwiseConv2D(p, input.data(), weights.data(), ch, expected.data());
        break;
      case Kind::kMaxPool: ref::MaxPool(p, input.data(), expected.data()); break;
      case Kind::kAvgPool: ref::AvgPool(p, input.data(), expected.data()); break;
      default: break;
    }
    EXPECT_EQ(As<int8_t>(out_mem), expected);
  }
  if (!pool) {
    const uint64_t taps = uint64_t(c.kh) * c.kw;
    EXPECT_EQ(counters.macs, uint64_t(p.out_h) * p.out_w * oc * taps * (depth ? 1 : c.ic));
  }
  EXPECT_EQ(counters.dma_bytes_read, in_n + w_mem.size());
  EXPECT_EQ(counters.dma_bytes_written, out_bytes);
}

const ConvCase kConvCases[] = {
    {8, 8, 3, 16, 3, 3, 1, 1, 1, 1},   {9, 7, 5, 6, 3, 3, 2, 2, 1, 1},
    {6, 6, 16, 8, 1, 1, 1, 1, 0, 0},   {10, 4, 1, 8, 10, 4, 2, 2, 4, 1},
    {5, 5, 4, 4, 2, 2, 2, 2, 0, 0},    {7, 9, 2, 3, 5, 3, 1, 2, 2, 1},
};

TEST(SimulatorTest, ConvInt32MatchesReference) {
  uint32_t seed = 1;
  for (const auto& c : kConvCases) CheckConvLike(c, Kind::kConvInt32, seed++);
}
TEST(SimulatorTest, ConvRequantMatchesReference) {
  uint32_t seed = 100;
  for (const auto& c : kConvCases) CheckConvLike(c, Kind::kConvInt8, seed++);
}
TEST(SimulatorTest, ConvReluMatchesReference) {
  uint32_t seed = 200;
  for (const auto& c : kConvCases) CheckConvLike(c, Kind::kConvRelu, seed++);
}
TEST(SimulatorTest, DepthConvMatchesReference) {
  uint32_t seed = 300;
  for (const auto& c : kConvCases) {
    CheckConvLike(c, Kind::kDepthInt32, seed++);
    CheckConvLike(c, Kind::kDepthInt8, seed++);
  }
}
TEST(SimulatorTest, PoolMatchesReference) {
  uint32_t seed = 400;
  for (const auto& c : kConvCases) {
    CheckConvLike(c, Kind::kMaxPool, seed++);
    CheckConvLike(c, Kind::kAvgPool, seed++);
  }
}

// A 1x1 conv whose reduction (40000 x 255 x 255) overflows int32: the
// accumulator wraps modulo 2^32 in both the device and the reference.
TEST(SimulatorTest, AccumulatorWrapsModulo2To32) {
  constexpr int kC = 40000;
  std::vector<int8_t> input(kC, -128), weights(kC, -128);
  std::vector<uint8_t> in_mem = Bytes(input), w_mem = Bytes(weights);
  auto q = PackQParams({0}, {1 << 30}, {0});
  const uint32_t q_off = uint32_t(w_mem.size());
  w_mem.insert(w_mem.end(), q.begin(), q.end());
  std::vector<uint8_t> out_mem(4);
  StreamBuilder b;
  b.DmaRead(0, 0, 0, kC).DmaRead(1, 0, 0, uint32_t(w_mem.size()), 1, 0, 0, true);
  b.Op(NPU_OP_SYNC).Ifm(0, 1, 1, kC, 127).Ofm(65536, 1, 1, 1).Set(NPU_REG_WGT_ZP, 127);
  b.Set(NPU_REG_QPARAM_ADDR, q_off).Op(NPU_OP_CONV).Op(NPU_OP_SYNC).DmaWrite(2, 0, 65536, 4);
  TestDevice dev;
  Status s = dev.Run(b, {{&in_mem, kRO}, {&w_mem, kRO}, {&out_mem, kWO}});
  ASSERT_TRUE(s.ok()) << s.message();
  ref::ConvParams p;
  p.in_c = kC, p.input_zp = 127, p.weight_zp = 127;
  const int32_t bias = 0;
  int32_t expected = 0;
  ref::Conv2DInt32(p, input.data(), weights.data(), &bias, &expected);
  EXPECT_EQ(As<int32_t>(out_mem)[0], expected);
  EXPECT_EQ(expected, static_cast<int32_t>(uint32_t(uint64_t(kC) * 65025)));
}

TEST(SimulatorTest, MatMulMatchesReference) {
  for (bool requant : {false, true}) {
    Random rnd(requant ? 7 : 8);
    ref::MatMulParams p;
    p.m = 5, p.k = 37, p.n = 11;
    p.input_zp = 3, p.weight_zp = -2, p.output_zp = 4;
    auto a = rnd.Int8(p.m * p.k);
    auto w = rnd.Int8(p.n * p.k);
    auto bias = rnd.Int32(p.n, -1000, 1000);
    auto mult = rnd.Int32(p.n, 1 << 30, 0x7FFFFFFF);
    auto shift = rnd.Int32(p.n, -9, -6);
    std::vector<uint8_t> in_mem = Bytes(a);
    std::vector<uint8_t> w_mem = Bytes(w);
    w_mem.resize(Align(uint32_t(w_mem.size()), 4));
    const uint32_t q_off = uint32_t(w_mem.size());
    auto q = PackQParams(bias, mult, shift);
    w_mem.insert(w_mem.end(), q.begin(), q.end());
    const uint32_t out_bytes = p.m * p.n * (requant ? 1 : 4);
    std::vector<uint8_t> out_mem(out_bytes);
    StreamBuilder b;
    b.DmaRead(0, 0, 0, uint32_t(in_mem.size()));
    b.DmaRead(1, 0, 0, uint32_t(w_mem.size()), 1, 0, 0, true);
    b.Op(NPU_OP_SYNC);
    b.Ifm(0, p.m, 1, p.k, p.input_zp).Ofm(4096, p.m, 1, p.n, p.output_zp);
    b.Set(NPU_REG_WGT_ZP, p.weight_zp).Set(NPU_REG_QPARAM_ADDR, q_off);
    b.Op(NPU_OP_MAT_MUL, requant ? NPU_FLAG_REQUANT : 0).Op(NPU_OP_SYNC);
    b.DmaWrite(2, 0, 4096, out_bytes);
    TestDevice dev;
    Status s = dev.Run(b, {{&in_mem, kRO}, {&w_mem, kRO}, {&out_mem, kRW}});
    ASSERT_TRUE(s.ok()) << s.message();
    if (requant) {
      std::vector<int8_t> expected(p.m * p.n);
      ref::MatMul(p, a.data(), w.data(), {bias.data(), mult.data(), shift.data()},
                  expected.data());
      EXPECT_EQ(As<int8_t>(out_mem), expected);
    } else {
      std::vector<int32_t> expected(p.m * p.n);
      ref::MatMulInt32(p, a.data(), w.data(), bias.data(), expected.data());
      EXPECT_EQ(As<int32_t>(out_mem), expected);
    }
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Runs one elementwise op on a 3x5x7 tensor: IFM at 0, IFM2 at 1024, OFM at
// 2048 (or in place when |in_place|).
std::vector<uint8_t> RunElementwise(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                    const std::vector<uint8_t>& weights, uint32_t out_bytes,
                                    const std::function<void(StreamBuilder&)>& setup,
                                    bool in_place = false) {
  std::vector<uint8_t> a_mem = a, b_mem = b, w_mem = weights, out_mem(out_bytes);
  if (b_mem.empty()) b_mem.resize(1);
  if (w_mem.empty()) w_mem.resize(1);
  const uint32_t ofm = in_place ? 0 : 2048;
  StreamBuilder s;
  s.DmaRead(0, 0, 0, uint32_t(a_mem.size()));
  s.DmaRead(1, 0, 1024, uint32_t(b_mem.size()));
  s.DmaRead(2, 0, 0, uint32_t(w_mem.size()), 1, 0, 0, true);
  s.Op(NPU_OP_SYNC);
  s.Ifm(0, 3, 5, 7).Ofm(ofm, 3, 5, 7).Set(NPU_REG_IFM2_ADDR, 1024);
  setup(s);
  s.Op(NPU_OP_SYNC);
  s.DmaWrite(3, 0, ofm, out_bytes);
  TestDevice dev;
  Status st = dev.Run(s, {{&a_mem, kRO}, {&b_mem, kRO}, {&w_mem, kRO}, {&out_mem, kWO}});
  EXPECT_TRUE(st.ok()) << st.message();
  return out_mem;
}

constexpr int kN = 3 * 5 * 7;

TEST(SimulatorTest, UnaryActivationsMatchReference) {
  Random rnd(11);
  auto x = rnd.Int8(kN);
  ref::Rescale r;
  r.input_zp = -7, r.output_zp = 5, r.multiplier = 1518500250, r.shift = 0;
  r.act_min = -120, r.act_max = 100;
  auto regs = [&](StreamBuilder& s) {
    s.Set(NPU_REG_IFM_ZP, r.input_zp).Set(NPU_REG_OFM_ZP, r.output_zp);
    s.Set(NPU_REG_OUT_MULT, r.multiplier).Set(NPU_REG_OUT_SHIFT, r.shift);
    s.Set(NPU_REG_ALPHA_MULT, 1288490189).Set(NPU_REG_ALPHA_SHIFT, -3);
    s.Set(NPU_REG_ACT_MIN, r.act_min).Set(NPU_REG_ACT_MAX, r.act_max);
  };
  std::vector<int8_t> expected(kN);
  for (bool in_place : {false, true}) {
    auto relu = RunElementwise(Bytes(x), {}, {}, kN, [&](StreamBuilder& s) {
      regs(s);
      s.Op(NPU_OP_ACT_RELU);
    }, in_place);
    ref::Relu(r, x.data(), kN, expected.data());
    EXPECT_EQ(As<int8_t>(relu), expected);
  }
  auto lrelu = RunElementwise(Bytes(x), {}, {}, kN, [&](StreamBuilder& s) {
    regs(s);
    s.Op(NPU_OP_ACT_LRELU);
  });
  ref::LeakyRelu(r, 1288490189, -3, x.data(), kN, expected.data());
  EXPECT_EQ(As<int8_t>(lrelu), expected);
  auto abs = RunElementwise(Bytes(x), {}, {}, kN, [&](StreamBuilder& s) {
    regs(s);
    s.Op(NPU_OP_E_ABS);
  });
  ref::Abs(r, x.data(), kN, expected.data());
  EXPECT_EQ(As<int8_t>(abs), expected);
}

TEST(SimulatorTest, MinMaxMatchReference) {
  Random rnd(12);
  auto a = rnd.Int8(kN), b = rnd.Int8(kN);
  std::vector<int8_t> expected(kN);
  auto mn = RunElementwise(Bytes(a), Bytes(b), {}, kN, [](StreamBuilder& s) {
    s.Set(NPU_REG_ACT_MIN, -100).Op(NPU_OP_C_MIN);
  });
  ref::Minimum(a.data(), b.data(), 0, -100, 127, kN, expected.data());
  EXPECT_EQ(As<int8_t>(mn), expected);
  auto mx = RunElementwise(Bytes(a), {}, {}, kN, [](StreamBuilder& s) {
    s.Set(NPU_REG_SCALAR, -3).Set(NPU_REG_ACT_MAX, 90).Op(NPU_OP_C_MAX, NPU_FLAG_SCALAR);
  });
  ref::Maximum(a.data(), nullptr, -3, -128, 90, kN, expected.data());
  EXPECT_EQ(As<int8_t>(mx), expected);
}

TEST(SimulatorTest, AddInt8MatchesReference) {
  Random rnd(13);
  auto a = rnd.Int8(kN), b = rnd.Int8(kN);
  ref::AddParams p;
  p.a_zp = 4, p.b_zp = -9, p.output_zp = -2, p.left_shift = 20;
  p.a_multiplier = 1717986918, p.a_shift = -1;
  p.b_multiplier = 1288490189, p.b_shift = -1;
  p.out_multiplier = 1431655765, p.out_shift = -19;
  p.act_min = -110, p.act_max = 120;
  auto out = RunElementwise(Bytes(a), Bytes(b), {}, kN, [&](StreamBuilder& s) {
    s.Set(NPU_REG_IFM_ZP, p.a_zp).Set(NPU_REG_IFM2_ZP, p.b_zp).Set(NPU_REG_OFM_ZP, p.output_zp);
    s.Set(NPU_REG_ADD_LSHIFT, p.left_shift);
    s.Set(NPU_REG_IN1_MULT, p.a_multiplier).Set(NPU_REG_IN1_SHIFT, p.a_shift);
    s.Set(NPU_REG_IN2_MULT, p.b_multiplier).Set(NPU_REG_IN2_SHIFT, p.b_shift);
    s.Set(NPU_REG_OUT_MULT, p.out_multiplier).Set(NPU_REG_OUT_SHIFT, p.out_shift);
    s.Set(NPU_REG_ACT_MIN, p.act_min).Set(NPU_REG_ACT_MAX, p.act_max);
    s.Op(NPU_OP_E_ADD);
  });
  std::vector<int8_t> expected(kN);
  ref::AddInt8(p, a.data(), b.data(), kN, expected.data());
  EXPECT_EQ(As<int8_t>(out), expected);
  // Not everything clamps: the test data must exercise the arithmetic.
  int distinct = 0;
  for (int i = 1; i < kN; ++i) distinct += expected[i] != expected[0];
  EXPECT_GT(distinct, kN / 2);
}

TEST(SimulatorTest, AddInt32MatchesReference) {
  Random rnd(14);
  auto a = rnd.Int32(kN, -2000000000, 2000000000), b = rnd.Int32(kN, -2000000000, 2000000000);
  a[0] = 0x7FFFFFFF, b[0] = 5;  // Saturates.
  auto out = RunElementwise(Bytes(a), Bytes(b), {}, kN * 4,
                            [](StreamBuilder& s) { s.Op(NPU_OP_E32_ADD); });
  std::vector<int32_t> expected(kN);
  ref::AddInt32(a.data(), b.data(), kN, expected.data());
  EXPECT_EQ(As<int32_t>(out), expected);
  EXPECT_EQ(expected[0], 0x7FFFFFFF);

  // Requantizing form: per-channel (7 channels) multipliers from weight memory.
  auto sa = rnd.Int32(kN, -100000, 100000), sb = rnd.Int32(kN, -100000, 100000);
  auto mult = rnd.Int32(7, 1 << 30, 0x7FFFFFFF);
  auto shift = rnd.Int32(7, -12, -9);
  std::vector<int32_t> zero(7, 0);
  auto q = PackQParams(zero, mult, shift);
  auto out8 = RunElementwise(Bytes(sa), Bytes(sb), q, kN, [](StreamBuilder& s) {
    s.Set(NPU_REG_OFM_ZP, 3).Set(NPU_REG_QPARAM_ADDR, 0).Op(NPU_OP_E32_ADD, NPU_FLAG_REQUANT);
  });
  std::vector<int8_t> expected8(kN);
  ref::AddInt32Requantize(sa.data(), sb.data(), kN, 7, {zero.data(), mult.data(), shift.data()},
                          3, -128, 127, expected8.data());
  EXPECT_EQ(As<int8_t>(out8), expected8);
}

//===----------------------------------------------------------------------===//
// Layers larger than SRAM, tiled by the stream
//===----------------------------------------------------------------------===//

// A 184x184x8 -> 184x184x8 3x3 conv (265 KiB in, 265 KiB out) on a 256 KiB
// SRAM: split into two halves of output channels and 32-row tiles with the
// halo rows and padding set per tile; the OFM slices go back with strided
// DMA. Also checks that the untiled layer does not fit.
TEST(SimulatorTest, TiledConvLargerThanSramMatchesReference) {
  constexpr int H = 184, W = 184, C = 8, OC = 8, kTile = 32, kHalf = OC / 2;
  Random rnd(21);
  ref::ConvParams p;
  p.in_h = H, p.in_w = W, p.in_c = C, p.out_h = H, p.out_w = W, p.out_c = OC;
  p.kernel_h = p.kernel_w = 3, p.pad_top = p.pad_left = 1;
  p.input_zp = -3, p.weight_zp = 1, p.output_zp = 2;
  auto input = rnd.Int8(H * W * C);
  auto weights = rnd.Int8(OC * 9 * C);
  auto bias = rnd.Int32(OC, -3000, 3000);
  auto mult = rnd.Int32(OC, 1 << 30, 0x7FFFFFFF);
  auto shift = rnd.Int32(OC, -10, -7);
  std::vector<uint8_t> in_mem = Bytes(input), w_mem = Bytes(weights);
  const uint32_t q_off = uint32_t(w_mem.size());
  auto q = PackQParams(bias, mult, shift);
  w_mem.insert(w_mem.end(), q.begin(), q.end());
  std::vector<uint8_t> out_mem(H * W * OC);

  HardwareConfig config;
  config.sram_bytes = 256 * 1024;
  ASSERT_GT(in_mem.size(), config.sram_bytes);

  StreamBuilder b;
  const uint32_t kOfm = 128 * 1024;
  for (int half = 0; half < 2; ++half) {
    // Weights and qparams of this half of the output channels.
    b.DmaRead(1, half * kHalf * 9 * C, 0, kHalf * 9 * C, 1, 0, 0, true);
    b.DmaRead(1, q_off + half * kHalf * 12, 4096, kHalf * 12, 1, 0, 0, true);
    for (int oy0 = 0; oy0 < H; oy0 += kTile) {
      const int rows = std::min(kTile, H - oy0);
      const int iy0 = std::max(0, oy0 - 1);
      const int iy1 = std::min(H, oy0 + rows + 1);
      b.DmaRead(0, iy0 * W * C, 0, (iy1 - iy0) * W * C);
      b.Op(NPU_OP_SYNC);
      b.Ifm(0, iy1 - iy0, W, C, p.input_zp).Ofm(kOfm, rows, W, kHalf, p.output_zp);
      b.Kernel(3, 3, 1, 1, oy0 == 0 ? 1 : 0, 1);
      b.Set(NPU_REG_WGT_ADDR, 0).Set(NPU_REG_WGT_ZP, p.weight_zp).Set(NPU_REG_QPARAM_ADDR, 4096);
      b.Op(NPU_OP_CONV, NPU_FLAG_REQUANT).Op(NPU_OP_SYNC);
      // Each output pixel's kHalf channels go to their slot of the full OFM.
      b.DmaWrite(2, (oy0 * W) * OC + half * kHalf, kOfm, kHalf, rows * W, OC, kHalf);
    }
  }
  TestDevice dev(config);
  Status s = dev.Run(b, {{&in_mem, kRO}, {&w_mem, kRO}, {&out_mem, kWO}});
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<int8_t> expected(H * W * OC);
  ref::Conv2D(p, input.data(), weights.data(), {bias.data(), mult.data(), shift.data()}, false,
              expected.data());
  EXPECT_EQ(As<int8_t>(out_mem), expected);

  // The same layer in one piece faults: the IFM alone exceeds the SRAM.
  StreamBuilder whole;
  whole.DmaRead(0, 0, 0, uint32_t(in_mem.size()));
  Fault fault;
  Status big = dev.Run(whole, {{&in_mem, kRO}}, nullptr, &fault);
  EXPECT_EQ(big.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(fault.kind, FaultKind::kSramOutOfBounds);
}

// Input-channel split: two partial int32 convolutions added with E32_ADD,
// which requantizes with the per-channel parameters.
TEST(SimulatorTest, InputChannelSplitWithInt32PartialSums) {
  constexpr int H = 6, W = 6, C = 16, OC = 5;
  Random rnd(22);
  ref::ConvParams p;
  p.in_h = H, p.in_w = W, p.in_c = C, p.out_h = H, p.out_w = W, p.out_c = OC;
  p.kernel_h = p.kernel_w = 3, p.pad_top = p.pad_left = 1;
  auto input = rnd.Int8(H * W * C);
  auto weights = rnd.Int8(OC * 9 * C);
  auto bias = rnd.Int32(OC, -3000, 3000);
  auto mult = rnd.Int32(OC, 1 << 30, 0x7FFFFFFF);
  auto shift = rnd.Int32(OC, -10, -7);
  // Host-side repacking: each half of the input channels as its own tensor
  // and its own OHWI weights; the second half's bias is zero.
  std::vector<uint8_t> in_mem(H * W * C), w_mem;
  for (int half = 0; half < 2; ++half) {
    for (int px = 0; px < H * W; ++px) {
      for (int c = 0; c < C / 2; ++c) {
        in_mem[half * H * W * C / 2 + px * C / 2 + c] = input[px * C + half * C / 2 + c];
      }
    }
  }
  for (int half = 0; half < 2; ++half) {
    for (int o = 0; o < OC; ++o) {
      for (int t = 0; t < 9; ++t) {
        for (int c = 0; c < C / 2; ++c) {
          w_mem.push_back(uint8_t(weights[(o * 9 + t) * C + half * C / 2 + c]));
        }
      }
    }
  }
  const uint32_t half_w = OC * 9 * C / 2;
  const uint32_t q0 = uint32_t(w_mem.size());
  auto qa = PackQParams(bias, mult, shift);
  auto qb = PackQParams(std::vector<int32_t>(OC, 0), mult, shift);
  w_mem.insert(w_mem.end(), qa.begin(), qa.end());
  w_mem.insert(w_mem.end(), qb.begin(), qb.end());
  std::vector<uint8_t> out_mem(H * W * OC);

  StreamBuilder b;
  b.DmaRead(0, 0, 0, uint32_t(in_mem.size()));
  b.DmaRead(1, 0, 0, uint32_t(w_mem.size()), 1, 0, 0, true);
  b.Op(NPU_OP_SYNC);
  const uint32_t acc0 = 4096, acc1 = 8192, out = 12288;
  for (int half = 0; half < 2; ++half) {
    b.Ifm(half * H * W * C / 2, H, W, C / 2).Ofm(half ? acc1 : acc0, H, W, OC);
    b.Kernel(3, 3, 1, 1, 1, 1);
    b.Set(NPU_REG_WGT_ADDR, half * half_w).Set(NPU_REG_QPARAM_ADDR, q0 + half * OC * 12);
    b.Op(NPU_OP_CONV);
  }
  b.Ifm(acc0, H, W, OC).Set(NPU_REG_IFM2_ADDR, acc1).Ofm(out, H, W, OC);
  b.Set(NPU_REG_QPARAM_ADDR, q0).Op(NPU_OP_E32_ADD, NPU_FLAG_REQUANT).Op(NPU_OP_SYNC);
  b.DmaWrite(2, 0, out, H * W * OC);
  TestDevice dev;
  Status s = dev.Run(b, {{&in_mem, kRO}, {&w_mem, kRO}, {&out_mem, kWO}});
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<int8_t> expected(H * W * OC);
  ref::Conv2D(p, input.data(), weights.data(), {bias.data(), mult.data(), shift.data()}, false,
              expected.data());
  EXPECT_EQ(As<int8_t>(out_mem), expected);
}

//===----------------------------------------------------------------------===//
// Faults
//===----------------------------------------------------------------------===//

struct FaultResult {
  StatusCode code;
  Fault fault;
  std::string message;
};

FaultResult RunRaw(const std::vector<uint32_t>& words, std::vector<Binding> bindings = {}) {
  TestDevice dev;
  std::vector<MemoryWindow> windows;
  for (size_t i = 0; i < bindings.size(); ++i) {
    windows.push_back({uint32_t((i + 1) * kWindowStride), uint32_t(bindings[i].data->size()),
                       bindings[i].data->data(), bindings[i].access});
  }
  FaultResult r;
  Status s = dev.sim()->Execute(words, windows, nullptr, &r.fault);
  r.code = s.code();
  r.message = s.message();
  return r;
}

uint32_t W(npu_opcode_t op, uint32_t flags = 0, uint32_t operand = 0) {
  return NPU_MAKE_WORD(op, flags, operand);
}
constexpr uint32_t kEnd = NPU_MAKE_WORD(NPU_OP_END, 0, 0);

TEST(SimulatorFaultTest, TruncatedStreams) {
  auto r = RunRaw({W(NPU_OP_SYNC)});
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(r.fault.kind, FaultKind::kMalformedStream);
  EXPECT_NE(r.message.find("without an END"), std::string::npos) << r.message;

  r = RunRaw({W(NPU_OP_SET_REG, 0, NPU_REG_IFM_H)});
  EXPECT_EQ(r.fault.kind, FaultKind::kMalformedStream);
  EXPECT_NE(r.message.find("no value word"), std::string::npos) << r.message;

  r = RunRaw({});
  EXPECT_EQ(r.fault.kind, FaultKind::kMalformedStream);

  r = RunRaw({kEnd, W(NPU_OP_SYNC)});
  EXPECT_EQ(r.fault.kind, FaultKind::kMalformedStream);
  EXPECT_NE(r.message.find("after END"), std::string::npos) << r.message;
}

TEST(SimulatorFaultTest, BadOpcodeFlagsAndOperands) {
  auto r = RunRaw({W(NPU_OP_SYNC), 0x7F, kEnd});
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(r.fault.kind, FaultKind::kBadOpcode);
  EXPECT_EQ(r.fault.instruction_index, 1u);
  EXPECT_EQ(r.fault.word_offset, 1u);
  EXPECT_NE(r.message.find("0x7f"), std::string::npos) << r.message;

  r = RunRaw({W(NPU_OP_SYNC, 0x80), kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kMalformedStream);
  r = RunRaw({W(NPU_OP_SYNC, 0, 3), kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kMalformedStream);
}

TEST(SimulatorFaultTest, BadRegisterIndexAndValue) {
  auto r = RunRaw({W(NPU_OP_SET_REG, 0, NPU_REG_COUNT), 0, kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kBadRegister);
  EXPECT_EQ(r.fault.opcode, NPU_OP_SET_REG);

  r = RunRaw({W(NPU_OP_SYNC), W(NPU_OP_SET_REG, 0, NPU_REG_KERNEL_H), 17, kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kRegisterValue);
  EXPECT_EQ(r.fault.instruction_index, 1u);
  EXPECT_NE(r.message.find("KERNEL_H = 17"), std::string::npos) << r.message;

  r = RunRaw({W(NPU_OP_SET_REG, 0, NPU_REG_IFM_ZP), uint32_t(-129), kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kRegisterValue);
  r = RunRaw({W(NPU_OP_SET_REG, 0, NPU_REG_OUT_SHIFT), 31, kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kRegisterValue);
  r = RunRaw({W(NPU_OP_SET_REG, 0, NPU_REG_IFM_C), 0, kEnd});
  EXPECT_EQ(r.fault.kind, FaultKind::kRegisterValue);
}

TEST(SimulatorFaultTest, SramAndWeightMemoryOutOfBounds) {
  StreamBuilder b;
  b.Ifm(512 * 1024 - 10, 2, 2, 3).Ofm(0, 2, 2, 3).Op(NPU_OP_ACT_RELU);
  TestDevice dev;
  Fault f;
  Status s = dev.Run(b, {}, nullptr, &f);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(f.kind, FaultKind::kSramOutOfBounds);
  EXPECT_EQ(f.opcode, NPU_OP_ACT_RELU);
  EXPECT_NE(std::string(s.message()).find("IFM"), std::string::npos) << s.message();

  StreamBuilder w;
  w.Ifm(0, 4, 4, 4).Ofm(1024, 4, 4, 4).Set(NPU_REG_WGT_ADDR, 256 * 1024 - 8);
  w.Op(NPU_OP_CONV, NPU_FLAG_REQUANT);
  s = dev.Run(w, {}, nullptr, &f);
  EXPECT_EQ(f.kind, FaultKind::kWeightOutOfBounds);

  // Conv whose output overlaps its input.
  StreamBuilder o;
  o.Ifm(0, 4, 4, 4).Ofm(32, 4, 4, 4).Op(NPU_OP_CONV, NPU_FLAG_REQUANT);
  s = dev.Run(o, {}, nullptr, &f);
  EXPECT_EQ(f.kind, FaultKind::kInvalidGeometry);

  // Output geometry needing windows past the input.
  StreamBuilder g;
  g.Ifm(0, 4, 4, 4).Ofm(1024, 6, 4, 4).Op(NPU_OP_POOL);
  s = dev.Run(g, {}, nullptr, &f);
  EXPECT_EQ(f.kind, FaultKind::kInvalidGeometry);
}

// Per-channel parameters are data (weight memory), not registers: a shift
// or multiplier outside the requantization's ranges is a fault, not
// undefined arithmetic (a fuzzer found a shift of 84215045).
TEST(SimulatorFaultTest, QparamsOutOfRange) {
  for (auto [mult, shift] : {std::pair<int32_t, int32_t>{1 << 30, 84215045},
                             {1 << 30, -32}, {1 << 30, 31}, {-1, 0}}) {
    std::vector<int32_t> bias = {0, 0}, mults = {1 << 30, mult}, shifts = {0, shift};
    std::vector<uint8_t> w_mem(16, 1);
    auto q = PackQParams(bias, mults, shifts);
    w_mem.insert(w_mem.end(), q.begin(), q.end());
    std::vector<uint8_t> in_mem(8, 3), out_mem(2);
    for (bool matmul : {false, true}) {
      StreamBuilder b;
      b.DmaRead(0, 0, 0, uint32_t(in_mem.size()));
      b.DmaRead(1, 0, 0, uint32_t(w_mem.size()), 1, 0, 0, true);
      b.Op(NPU_OP_SYNC);
      b.Ifm(0, 1, 1, 8).Ofm(4096, 1, 1, 2).Set(NPU_REG_QPARAM_ADDR, 16);
      b.Op(matmul ? NPU_OP_MAT_MUL : NPU_OP_CONV, NPU_FLAG_REQUANT).Op(NPU_OP_SYNC);
      b.DmaWrite(2, 0, 4096, 2);
      TestDevice dev;
      Fault f;
      Status s = dev.Run(b, {{&in_mem, kRO}, {&w_mem, kRO}, {&out_mem, kRW}}, nullptr, &f);
      EXPECT_FALSE(s.ok()) << "shift " << shift << ", multiplier " << mult;
      EXPECT_EQ(f.kind, FaultKind::kParameterValue) << s.message();
      EXPECT_NE(std::string(s.message()).find("qparam of channel 1"), std::string::npos)
          << s.message();
    }
  }
}

TEST(SimulatorFaultTest, UnmappedAndReadOnlyDma) {
  std::vector<uint8_t> ro(256, 1), rw(256, 2);
  TestDevice dev;
  Fault f;
  // Past the end of the mapping.
  StreamBuilder past;
  past.DmaRead(0, 200, 0, 100);
  Status s = dev.Run(past, {{&ro, kRO}}, nullptr, &f);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(f.kind, FaultKind::kUnmappedAccess);
  // An address nothing maps.
  StreamBuilder unmapped;
  unmapped.Set(NPU_REG_DMA_SYS_ADDR, 0x100).Op(NPU_OP_DMA_READ);
  s = dev.Run(unmapped, {{&ro, kRO}}, nullptr, &f);
  EXPECT_EQ(f.kind, FaultKind::kUnmappedAccess);
  EXPECT_NE(std::string(s.message()).find("0x00000100"), std::string::npos) << s.message();
  // DMA_WRITE through a read-only mapping; the host memory is untouched.
  StreamBuilder write;
  write.DmaWrite(0, 0, 0, 16);
  s = dev.Run(write, {{&ro, kRO}}, nullptr, &f);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(f.kind, FaultKind::kAccessViolation);
  EXPECT_NE(std::string(s.message()).find("read-only"), std::string::npos) << s.message();
  EXPECT_EQ(ro, std::vector<uint8_t>(256, 1));
  // DMA_READ of a write-only mapping.
  StreamBuilder read;
  read.DmaRead(0, 0, 0, 16);
  s = dev.Run(read, {{&rw, kWO}}, nullptr, &f);
  EXPECT_EQ(f.kind, FaultKind::kAccessViolation);
}

TEST(SimulatorFaultTest, MissingSyncIsAHazard) {
  std::vector<uint8_t> in(64, 3), out(64);
  TestDevice dev;
  Fault f;
  StreamBuilder b;
  b.DmaRead(0, 0, 0, 64).Ifm(0, 1, 1, 64).Ofm(128, 1, 1, 64).Op(NPU_OP_ACT_RELU);
  Status s = dev.Run(b, {{&in, kRO}}, nullptr, &f);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.kind, FaultKind::kHazard);
  // And the other way: DMA_WRITE of a compute result before SYNC.
  StreamBuilder c;
  c.DmaRead(0, 0, 0, 64).Op(NPU_OP_SYNC).Ifm(0, 1, 1, 64).Ofm(128, 1, 1, 64);
  c.Op(NPU_OP_ACT_RELU).DmaWrite(1, 0, 128, 64);
  s = dev.Run(c, {{&in, kRO}, {&out, kWO}}, nullptr, &f);
  EXPECT_EQ(f.kind, FaultKind::kHazard);
}

TEST(SimulatorFaultTest, ConfigValidation) {
  HardwareConfig c;
  EXPECT_TRUE(ValidateHardwareConfig(c).ok());
  c.pe_count = 100;
  EXPECT_EQ(ValidateHardwareConfig(c).code(), StatusCode::kInvalidArgument);
  c = {};
  c.sram_bytes = 128 * 1024;
  EXPECT_EQ(ValidateHardwareConfig(c).code(), StatusCode::kInvalidArgument);
  c = {};
  c.dma_bytes_per_cycle = 0;
  EXPECT_FALSE(Simulator::Create(c, osprey::Allocator::Default()).ok());
}

//===----------------------------------------------------------------------===//
// Cycle model
//===----------------------------------------------------------------------===//

TEST(SimulatorCycleTest, ConvCyclesFollowTheModel) {
  // 8x8x16 -> 8x8x32, 3x3, pad 1: 64 pixels, 32 oc, 9 taps, 16 ic.
  auto run = [](uint32_t pes, ParallelMode mode) {
    HardwareConfig config;
    config.pe_count = pes;
    config.mode = mode;
    TestDevice dev(config);
    StreamBuilder b;
    b.Ifm(0, 8, 8, 16).Ofm(4096, 8, 8, 32).Kernel(3, 3, 1, 1, 1, 1);
    b.Set(NPU_REG_QPARAM_ADDR, 8192).Op(NPU_OP_CONV, NPU_FLAG_REQUANT);
    Counters counters;
    Status s = dev.Run(b, {}, &counters);
    EXPECT_TRUE(s.ok()) << s.message();
    return counters;
  };
  // 64 PEs = 8x8, output-parallel: ceil(32/8) * ceil(64/8) * 9 * 16.
  Counters c = run(64, ParallelMode::kOutputParallel);
  EXPECT_EQ(c.macs, 64u * 32 * 9 * 16);
  EXPECT_EQ(c.mac_cycles, 4u * 8 * 9 * 16 + kComputeOverheadCycles);
  EXPECT_EQ(c.total_cycles, c.mac_cycles);
  EXPECT_GT(c.pe_utilization(64), 0.95);
  EXPECT_LE(c.pe_utilization(64), 1.0);
  // 256 PEs = 16x16, input-parallel: ceil(32/16) * 64 * 9 * ceil(16/16).
  c = run(256, ParallelMode::kInputParallel);
  EXPECT_EQ(c.mac_cycles, 2u * 64 * 9 + kComputeOverheadCycles);
  EXPECT_EQ(c.cycles_by_kind[kKindConv], c.mac_cycles);
  EXPECT_EQ(c.count_by_kind[kKindSetReg], 17u);  // 5 IFM + 5 OFM + 6 kernel + 1.
}

TEST(SimulatorCycleTest, DmaOverlapsComputeUntilSync) {
  HardwareConfig config;
  config.dma_bytes_per_cycle = 8;
  config.dma_setup_cycles = 10;
  std::vector<uint8_t> in(800, 1);
  TestDevice dev(config);
  // DMA of 800 bytes (10 + 100 cycles) overlapped with an unrelated ReLU
  // of 1600 elements (1600/16 + 16 cycles on 8x16 PEs).
  StreamBuilder b;
  b.DmaRead(0, 0, 0, 800).Ifm(4096, 1, 1, 1600).Ofm(4096, 1, 1, 1600).Op(NPU_OP_ACT_RELU);
  b.Op(NPU_OP_SYNC);
  Counters c;
  Status s = dev.Run(b, {{&in, kRO}}, &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.dma_cycles, 110u);
  EXPECT_EQ(c.compute_cycles, 116u);
  EXPECT_EQ(c.total_cycles, 116u);
  EXPECT_EQ(c.dma_bytes_read, 800u);
}

}  // namespace
}  // namespace osprey::drivers::npu::sim
