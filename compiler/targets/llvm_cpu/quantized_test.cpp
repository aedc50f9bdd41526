// Runs the canonical quantized ops (QConv, QMatMul, QAdd, QMul, QRescale,
// QAveragePool, MaxPool on i8, QuantizeLinear, DequantizeLinear) compiled
// for the host against drivers/npu/reference (and the compiler's own
// QuantizeLinear arithmetic) on random shapes and parameters, bit for bit,
// including saturating requantization; and builds them for the embedded
// targets, whose links admit no runtime helper.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/graph/quantization.h"
#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "drivers/npu/reference/reference.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

namespace ref = ::osprey::drivers::npu::reference;
using testing::CompiledGraph;
using testing::dims;
using graph::ElementType;

class Rng {
public:
  explicit Rng(unsigned seed) : gen_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }
  // int8 values; zero points are often at the ends of the range.
  int32_t zeroPoint() {
    int64_t pick = uniform(0, 5);
    return pick == 0 ? -128 : pick == 1 ? 127 : int32_t(uniform(-128, 127));
  }
  std::vector<int8_t> int8s(size_t n) {
    std::vector<int8_t> v(n);
    for (int8_t &x : v) {
      x = int8_t(uniform(-128, 127));
    }
    return v;
  }
  // (multiplier, shift): mostly factors below one as real models use,
  // powers of two (ties), and the extremes: multipliers of 0, 1 and
  // 2^31 - 1, shifts of -31 and of 30 (the left shift saturates).
  std::pair<int32_t, int32_t> multiplier() {
    switch (uniform(0, 9)) {
    case 0: return {int32_t(2147483647), int32_t(uniform(-31, 30))};
    case 1: return {0, int32_t(uniform(-31, 30))};
    case 2: return {1, int32_t(uniform(-5, 30))};
    case 3: return {int32_t(uniform(1 << 30, 2147483647)), 30};
    case 4: return {int32_t(uniform(1 << 30, 2147483647)), -31};
    case 5: return {int32_t(uniform(0, 2147483647)), int32_t(uniform(-31, 30))};
    // Powers of two: exact halves, where the rounding rules differ.
    case 6: return {1 << 30, int32_t(uniform(-8, 1))};
    default:
      return {int32_t(uniform(1 << 30, 2147483647)), int32_t(uniform(-14, 1))};
    }
  }
  std::mt19937 &gen() { return gen_; }

private:
  std::mt19937 gen_;
};

template <typename T> std::string join(const std::vector<T> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(int64_t(v[i]));
  }
  return s;
}

template <typename T>
std::string constant(const std::string &name, const std::vector<T> &v,
                     const std::string &shape, const char *type) {
  return "  %" + name + " = Constant() {value = dense<[" + join(v) +
         "]>} : tensor<" + shape + type + ">\n";
}

std::vector<uint8_t> bytesOf(const std::vector<int8_t> &v) {
  return std::vector<uint8_t>(v.begin(), v.end());
}

std::vector<int8_t> int8sOf(const std::vector<uint8_t> &v) {
  return std::vector<int8_t>(v.begin(), v.end());
}

// Output range: full, or clamped like a fused ReLU/ReLU6.
std::pair<int32_t, int32_t> activationRange(Rng &rng, int32_t zp) {
  if (rng.chance(50)) {
    return {-128, 127};
  }
  int32_t lo = std::max<int32_t>(-128, zp);
  return {lo, int32_t(rng.uniform(lo, 127))};
}

std::string requantAttrs(int32_t zx, int32_t zy, int32_t lo, int32_t hi) {
  return "act_max = " + std::to_string(hi) + ", act_min = " +
         std::to_string(lo) + ", x_zero_point = " + std::to_string(zx) +
         ", y_zero_point = " + std::to_string(zy);
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

struct ConvCase {
  int c, h, w, m, kh, kw, sh, sw, pt, pl, pb, pr, group;
  int oh() const { return (h + pt + pb - kh) / sh + 1; }
  int ow() const { return (w + pl + pr - kw) / sw + 1; }
};

ConvCase randomConv(Rng &rng, bool depthwise) {
  ConvCase t;
  t.kh = int(rng.uniform(1, 3));
  t.kw = int(rng.uniform(1, 4));
  t.h = int(rng.uniform(t.kh, 9));
  t.w = int(rng.uniform(t.kw, 11));
  t.sh = int(rng.uniform(1, 2));
  t.sw = int(rng.uniform(1, 3));
  t.pt = int(rng.uniform(0, t.kh - 1));
  t.pb = int(rng.uniform(0, t.kh - 1));
  t.pl = int(rng.uniform(0, t.kw - 1));
  t.pr = int(rng.uniform(0, t.kw - 1));
  if (depthwise) {
    t.c = t.m = t.group = int(rng.uniform(1, 13));
  } else {
    t.group = rng.chance(25) ? 2 : 1;
    t.c = t.group * int(rng.uniform(1, 5));
    t.m = t.group * int(rng.uniform(1, 7));
  }
  return t;
}

// Runs one random convolution through QConv and the reference.
void checkConv(Rng &rng, const ConvCase &t, const char *target = "host") {
  int cg = t.c / t.group, mg = t.m / t.group;
  std::vector<int8_t> x = rng.int8s(size_t(t.c) * t.h * t.w);
  std::vector<int8_t> w = rng.int8s(size_t(t.m) * cg * t.kh * t.kw);
  std::vector<int32_t> bias(t.m), mult(t.m), shift(t.m);
  for (int m = 0; m < t.m; ++m) {
    bias[m] = rng.chance(10) ? int32_t(rng.uniform(-2147483647, 2147483647))
                             : int32_t(rng.uniform(-40000, 40000));
    std::tie(mult[m], shift[m]) = rng.multiplier();
  }
  int32_t zx = rng.zeroPoint(), zy = rng.zeroPoint();
  auto [lo, hi] = activationRange(rng, zy);
  std::string y = dims({1, t.m, t.oh(), t.ow()});
  std::string text =
      "graph @conv(%x: tensor<" + dims({1, t.c, t.h, t.w}) + "xi8>) {\n" +
      constant("w", w, dims({t.m, cg, t.kh, t.kw}) + "x", "i8") +
      constant("b", bias, std::to_string(t.m) + "x", "i32") +
      constant("mult", mult, std::to_string(t.m) + "x", "i32") +
      constant("shift", shift, std::to_string(t.m) + "x", "i32") +
      "  %y = QConv(%x, %w, %b, %mult, %shift) {" +
      requantAttrs(zx, zy, lo, hi) + ", group = " + std::to_string(t.group) +
      ", pads = [" + join(std::vector<int>{t.pt, t.pl, t.pb, t.pr}) +
      "], strides = [" + join(std::vector<int>{t.sh, t.sw}) + "]} : tensor<" +
      y + "xi8> loc(\"qconv\")\n  return %y\n}\n";
  CompiledGraph g;
  ASSERT_TRUE(g.compile(text, target).ok()) << text;

  // Reference: HWC input, OHWI weights, one Conv2D per group (or
  // DepthwiseConv2D), HWC output.
  std::vector<int8_t> expected(size_t(t.m) * t.oh() * t.ow());
  for (int gi = 0; gi < t.group; ++gi) {
    ref::ConvParams p;
    p.in_h = t.h, p.in_w = t.w, p.in_c = cg;
    p.out_h = t.oh(), p.out_w = t.ow(), p.out_c = mg;
    p.kernel_h = t.kh, p.kernel_w = t.kw;
    p.stride_h = t.sh, p.stride_w = t.sw;
    p.pad_top = t.pt, p.pad_left = t.pl;
    p.input_zp = zx, p.output_zp = zy, p.act_min = lo, p.act_max = hi;
    std::vector<int8_t> in(size_t(t.h) * t.w * cg), wr(size_t(mg) * t.kh * t.kw * cg);
    for (int yy = 0; yy < t.h; ++yy) {
      for (int xx = 0; xx < t.w; ++xx) {
        for (int c = 0; c < cg; ++c) {
          in[(yy * t.w + xx) * cg + c] = x[((gi * cg + c) * t.h + yy) * t.w + xx];
        }
      }
    }
    for (int m = 0; m < mg; ++m) {
      for (int i = 0; i < t.kh; ++i) {
        for (int j = 0; j < t.kw; ++j) {
          for (int c = 0; c < cg; ++c) {
            wr[((m * t.kh + i) * t.kw + j) * cg + c] =
                w[(((gi * mg + m) * cg + c) * t.kh + i) * t.kw + j];
          }
        }
      }
    }
    std::vector<int8_t> out(size_t(t.oh()) * t.ow() * mg);
    ref::ChannelParams ch{bias.data() + gi * mg, mult.data() + gi * mg,
                          shift.data() + gi * mg};
    ref::Conv2D(p, in.data(), wr.data(), ch, /*relu=*/false, out.data());
    for (int m = 0; m < mg; ++m) {
      for (int i = 0; i < t.oh() * t.ow(); ++i) {
        expected[size_t(gi * mg + m) * t.oh() * t.ow() + i] = out[i * mg + m];
      }
    }
  }
  if (t.group == t.c && t.m == t.c) {
    // Depthwise: the reference's depthwise kernel gives the same numbers.
    ref::ConvParams p;
    p.in_h = t.h, p.in_w = t.w, p.in_c = t.c;
    p.out_h = t.oh(), p.out_w = t.ow(), p.out_c = t.c;
    p.kernel_h = t.kh, p.kernel_w = t.kw;
    p.stride_h = t.sh, p.stride_w = t.sw;
    p.pad_top = t.pt, p.pad_left = t.pl;
    p.input_zp = zx, p.output_zp = zy, p.act_min = lo, p.act_max = hi;
    std::vector<int8_t> in(x.size()), wr(w.size()), out(expected.size());
    for (int c = 0; c < t.c; ++c) {
      for (int i = 0; i < t.h * t.w; ++i) {
        in[i * t.c + c] = x[c * t.h * t.w + i];
      }
      for (int i = 0; i < t.kh * t.kw; ++i) {
        wr[i * t.c + c] = w[c * t.kh * t.kw + i];
      }
    }
    ref::DepthwiseConv2D(p, in.data(), wr.data(),
                         {bias.data(), mult.data(), shift.data()}, out.data());
    for (int c = 0; c < t.c; ++c) {
      for (int i = 0; i < t.oh() * t.ow(); ++i) {
        ASSERT_EQ(out[i * t.c + c], expected[size_t(c) * t.oh() * t.ow() + i]);
      }
    }
  }
  std::vector<int8_t> actual = int8sOf(g.runBytes({bytesOf(x)})[0]);
  ASSERT_EQ(actual, expected) << text;
}

TEST(QuantizedTest, ConvMatchesReference) {
  Rng rng(11);
  for (int trial = 0; trial < 16; ++trial) {
    SCOPED_TRACE(trial);
    checkConv(rng, randomConv(rng, false));
  }
}

TEST(QuantizedTest, DepthwiseConvMatchesReference) {
  Rng rng(12);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    ConvCase t = randomConv(rng, true);
    checkConv(rng, t);
  }
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

// Shapes: m in [1, mMax], k in [kMin, kMax], n in [1, 20]. With |extreme|,
// every input and weight is -128 (the largest products).
void checkMatMul(Rng &rng, bool constantB, int mMax = 9, int kMin = 1,
                 int kMax = 40, bool extreme = false) {
  int m = int(rng.uniform(1, mMax)), k = int(rng.uniform(kMin, kMax)),
      n = int(rng.uniform(1, 21));
  std::vector<int8_t> a = rng.int8s(size_t(m) * k), b = rng.int8s(size_t(k) * n);
  if (extreme) {
    std::fill(a.begin(), a.end(), int8_t(-128));
    std::fill(b.begin(), b.end(), int8_t(-128));
  }
  std::vector<int32_t> bias(n), mult(n), shift(n);
  for (int c = 0; c < n; ++c) {
    bias[c] = int32_t(rng.uniform(-100000, 100000));
    std::tie(mult[c], shift[c]) = rng.multiplier();
  }
  int32_t za = rng.zeroPoint(), zb = constantB ? 0 : rng.zeroPoint();
  int32_t zy = rng.zeroPoint();
  auto [lo, hi] = activationRange(rng, zy);
  std::string inputs = "%a: tensor<" + dims({m, k}) + "xi8>";
  std::string body;
  if (constantB) {
    body += constant("b", b, dims({k, n}) + "x", "i8");
  } else {
    inputs += ", %b: tensor<" + dims({k, n}) + "xi8>";
  }
  std::string text =
      "graph @mm(" + inputs + ") {\n" + body +
      constant("bias", bias, std::to_string(n) + "x", "i32") +
      constant("mult", mult, std::to_string(n) + "x", "i32") +
      constant("shift", shift, std::to_string(n) + "x", "i32") +
      "  %y = QMatMul(%a, %b, %bias, %mult, %shift) {a_zero_point = " +
      std::to_string(za) + ", act_max = " + std::to_string(hi) +
      ", act_min = " + std::to_string(lo) +
      ", b_zero_point = " + std::to_string(zb) +
      ", y_zero_point = " + std::to_string(zy) + "} : tensor<" + dims({m, n}) +
      "xi8>\n  return %y\n}\n";
  CompiledGraph g;
  ASSERT_TRUE(g.compile(text, "host").ok()) << text;
  std::vector<int8_t> weights(size_t(n) * k); // reference layout [n][k]
  for (int r = 0; r < k; ++r) {
    for (int c = 0; c < n; ++c) {
      weights[c * k + r] = b[r * n + c];
    }
  }
  ref::MatMulParams p;
  p.m = m, p.k = k, p.n = n;
  p.input_zp = za, p.weight_zp = zb, p.output_zp = zy;
  p.act_min = lo, p.act_max = hi;
  std::vector<int8_t> expected(size_t(m) * n);
  ref::MatMul(p, a.data(), weights.data(), {bias.data(), mult.data(), shift.data()},
              expected.data());
  std::vector<std::vector<uint8_t>> ins = {bytesOf(a)};
  if (!constantB) {
    ins.push_back(bytesOf(b));
  }
  ASSERT_EQ(int8sOf(g.runBytes(ins)[0]), expected) << text;
}

TEST(QuantizedTest, MatMulMatchesReference) {
  Rng rng(21);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    checkMatMul(rng, /*constantB=*/trial % 3 != 0);
  }
}

// Reductions longer than one packed chunk (512 steps), of lengths that are
// not whole words or vectors, and single rows (matrix-vector products, with
// their weights laid out as rows of k), including all-extreme operands.
TEST(QuantizedTest, LongReductionsMatchReference) {
  Rng rng(22);
  for (int trial = 0; trial < 8; ++trial) {
    SCOPED_TRACE(trial);
    checkMatMul(rng, /*constantB=*/trial != 3, /*mMax=*/trial % 2 ? 1 : 12,
                /*kMin=*/450, /*kMax=*/1300, /*extreme=*/trial == 5);
  }
  for (int trial = 0; trial < 3; ++trial) {
    SCOPED_TRACE(trial);
    ConvCase t = randomConv(rng, false);
    t.group = 1;
    t.c = int(rng.uniform(56, 90));
    t.kh = 3;
    t.h = std::max(t.h, 3);
    t.pt = t.pb = 1;
    checkConv(rng, t);
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

std::string multiplierAttrs(const std::string &prefix,
                            std::pair<int32_t, int32_t> m) {
  return prefix + "multiplier = " + std::to_string(m.first) + ", " + prefix +
         "shift = " + std::to_string(m.second);
}

TEST(QuantizedTest, AddMatchesReference) {
  Rng rng(31);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    int count = int(rng.uniform(1, 300));
    ref::AddParams p;
    p.a_zp = rng.zeroPoint(), p.b_zp = rng.zeroPoint(), p.output_zp = rng.zeroPoint();
    p.left_shift = trial == 0 ? 0 : 20;
    std::tie(p.a_multiplier, p.a_shift) = rng.multiplier();
    std::tie(p.b_multiplier, p.b_shift) = rng.multiplier();
    std::tie(p.out_multiplier, p.out_shift) = rng.multiplier();
    std::tie(p.act_min, p.act_max) = activationRange(rng, p.output_zp);
    std::string shape = dims({1, count});
    std::string text =
        "graph @add(%a: tensor<" + shape + "xi8>, %b: tensor<" + shape +
        "xi8>) {\n  %y = QAdd(%a, %b) {" +
        multiplierAttrs("a_", {p.a_multiplier, p.a_shift}) +
        ", a_zero_point = " + std::to_string(p.a_zp) + ", act_max = " +
        std::to_string(p.act_max) + ", act_min = " + std::to_string(p.act_min) +
        ", " + multiplierAttrs("b_", {p.b_multiplier, p.b_shift}) +
        ", b_zero_point = " + std::to_string(p.b_zp) +
        ", left_shift = " + std::to_string(p.left_shift) + ", " +
        multiplierAttrs("", {p.out_multiplier, p.out_shift}) +
        ", y_zero_point = " + std::to_string(p.output_zp) + "} : tensor<" +
        shape + "xi8>\n  return %y\n}\n";
    CompiledGraph g;
    ASSERT_TRUE(g.compile(text, "host").ok()) << text;
    std::vector<int8_t> a = rng.int8s(count), b = rng.int8s(count);
    std::vector<int8_t> expected(count);
    ref::AddInt8(p, a.data(), b.data(), count, expected.data());
    ASSERT_EQ(int8sOf(g.runBytes({bytesOf(a), bytesOf(b)})[0]), expected)
        << text;
  }
}

TEST(QuantizedTest, MulMatchesReference) {
  Rng rng(41);
  for (int trial = 0; trial < 8; ++trial) {
    SCOPED_TRACE(trial);
    int count = int(rng.uniform(1, 200));
    ref::MulParams p;
    p.a_zp = rng.zeroPoint(), p.b_zp = rng.zeroPoint(), p.output_zp = rng.zeroPoint();
    std::tie(p.multiplier, p.shift) = rng.multiplier();
    std::tie(p.act_min, p.act_max) = activationRange(rng, p.output_zp);
    std::string shape = dims({count});
    std::string text =
        "graph @mul(%a: tensor<" + shape + "xi8>, %b: tensor<" + shape +
        "xi8>) {\n  %y = QMul(%a, %b) {a_zero_point = " +
        std::to_string(p.a_zp) + ", act_max = " + std::to_string(p.act_max) +
        ", act_min = " + std::to_string(p.act_min) +
        ", b_zero_point = " + std::to_string(p.b_zp) + ", " +
        multiplierAttrs("", {p.multiplier, p.shift}) +
        ", y_zero_point = " + std::to_string(p.output_zp) + "} : tensor<" +
        shape + "xi8>\n  return %y\n}\n";
    CompiledGraph g;
    ASSERT_TRUE(g.compile(text, "host").ok()) << text;
    std::vector<int8_t> a = rng.int8s(count), b = rng.int8s(count);
    std::vector<int8_t> expected(count);
    ref::MulInt8(p, a.data(), b.data(), count, expected.data());
    ASSERT_EQ(int8sOf(g.runBytes({bytesOf(a), bytesOf(b)})[0]), expected)
        << text;
  }
}

// Requantization's saturating cases through QRescale: every multiplier and
// shift extreme, zero points at the range ends, inputs covering all int8.
TEST(QuantizedTest, RescaleMatchesReferenceIncludingSaturation) {
  Rng rng(51);
  std::vector<int8_t> x(256);
  for (int i = 0; i < 256; ++i) {
    x[i] = int8_t(i - 128);
  }
  for (int trial = 0; trial < 16; ++trial) {
    SCOPED_TRACE(trial);
    ref::Rescale r;
    r.input_zp = rng.zeroPoint(), r.output_zp = rng.zeroPoint();
    std::tie(r.multiplier, r.shift) = rng.multiplier();
    std::tie(r.act_min, r.act_max) = activationRange(rng, r.output_zp);
    std::string text =
        "graph @rescale(%x: tensor<256xi8>) {\n  %y = QRescale(%x) {" +
        requantAttrs(r.input_zp, r.output_zp, r.act_min, r.act_max) + ", " +
        multiplierAttrs("", {r.multiplier, r.shift}) +
        "} : tensor<256xi8>\n  return %y\n}\n";
    CompiledGraph g;
    ASSERT_TRUE(g.compile(text, "host").ok()) << text;
    std::vector<int8_t> expected(256);
    ref::RescaleInt8(r, x.data(), 256, expected.data());
    ASSERT_EQ(int8sOf(g.runBytes({bytesOf(x)})[0]), expected) << text;
    // The compiler's compile-time requantize agrees with the reference.
    for (int v : {-2147483647 - 1, -65536, -255, -1, 0, 1, 255, 2147483647}) {
      ASSERT_EQ(graph::requantize(v, r.multiplier, r.shift),
                ref::Requantize(v, r.multiplier, r.shift))
          << v << " * " << r.multiplier << " shift " << r.shift;
    }
  }
}

// u8 <-> i8 conversions at graph edges are exact shifts by 128.
TEST(QuantizedTest, UnsignedConversionsShiftBy128) {
  std::string text = "graph @conv(%x: tensor<256xu8>) {\n"
                     "  %i = QRescale(%x) {to = \"i8\", x_zero_point = 0, "
                     "y_zero_point = -128} : tensor<256xi8>\n"
                     "  %u = QRescale(%i) {to = \"u8\", x_zero_point = 0, "
                     "y_zero_point = 128} : tensor<256xu8>\n"
                     "  return %i, %u\n}\n";
  CompiledGraph g;
  ASSERT_TRUE(g.compile(text, "host").ok());
  std::vector<uint8_t> x(256);
  for (int i = 0; i < 256; ++i) {
    x[i] = uint8_t(i);
  }
  auto out = g.runBytes({x});
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(int8_t(out[0][i]), i - 128);
    EXPECT_EQ(out[1][i], i);
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

TEST(QuantizedTest, PoolsMatchReference) {
  Rng rng(61);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    int c = int(rng.uniform(1, 6)), kh = int(rng.uniform(1, 3)),
        kw = int(rng.uniform(1, 3));
    int h = int(rng.uniform(kh, 9)), w = int(rng.uniform(kw, 9));
    int s = int(rng.uniform(1, 2));
    int pt = int(rng.uniform(0, kh - 1)), pl = int(rng.uniform(0, kw - 1));
    int pb = int(rng.uniform(0, kh - 1)), pr = int(rng.uniform(0, kw - 1));
    int oh = (h + pt + pb - kh) / s + 1, ow = (w + pl + pr - kw) / s + 1;
    auto [lo, hi] = activationRange(rng, rng.zeroPoint());
    std::string window = "kernel_shape = [" + std::to_string(kh) + ", " +
                         std::to_string(kw) + "], pads = [" +
                         join(std::vector<int>{pt, pl, pb, pr}) +
                         "], strides = [" + std::to_string(s) + ", " +
                         std::to_string(s) + "]";
    std::string y = dims({1, c, oh, ow});
    std::string text =
        "graph @pool(%x: tensor<" + dims({1, c, h, w}) + "xi8>) {\n" +
        "  %a = QAveragePool(%x) {act_max = " + std::to_string(hi) +
        ", act_min = " + std::to_string(lo) + ", " + window + "} : tensor<" +
        y + "xi8>\n  %m = MaxPool(%x) {" + window + "} : tensor<" + y +
        "xi8>\n  return %a, %m\n}\n";
    CompiledGraph g;
    ASSERT_TRUE(g.compile(text, "host").ok()) << text;
    std::vector<int8_t> x = rng.int8s(size_t(c) * h * w);
    ref::ConvParams p;
    p.in_h = h, p.in_w = w, p.in_c = c, p.out_h = oh, p.out_w = ow, p.out_c = c;
    p.kernel_h = kh, p.kernel_w = kw, p.stride_h = p.stride_w = s;
    p.pad_top = pt, p.pad_left = pl;
    std::vector<int8_t> in(x.size()), avg(size_t(c) * oh * ow), mx(avg.size());
    for (int ci = 0; ci < c; ++ci) {
      for (int i = 0; i < h * w; ++i) {
        in[i * c + ci] = x[ci * h * w + i];
      }
    }
    p.act_min = lo, p.act_max = hi;
    ref::AvgPool(p, in.data(), avg.data());
    p.act_min = -128, p.act_max = 127;
    ref::MaxPool(p, in.data(), mx.data());
    auto out = g.runBytes({bytesOf(x)});
    for (int ci = 0; ci < c; ++ci) {
      for (int i = 0; i < oh * ow; ++i) {
        ASSERT_EQ(int8_t(out[0][ci * oh * ow + i]), avg[i * c + ci]) << text;
        ASSERT_EQ(int8_t(out[1][ci * oh * ow + i]), mx[i * c + ci]) << text;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// QuantizeLinear / DequantizeLinear
//===----------------------------------------------------------------------===//

TEST(QuantizedTest, QuantizeAndDequantizeMatchOnnxArithmetic) {
  Rng rng(71);
  // Per-axis parameters over 3 channels; values include ties (k + 0.5
  // times the scale), huge values, infinities and NaN.
  std::vector<float> scales = {0.5f, 0.037f, 3.0f};
  std::vector<int64_t> zps = {-128, 3, 127};
  const int perChannel = 40;
  std::vector<float> x;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < perChannel; ++i) {
      float v;
      switch (i % 8) {
      case 0: v = (float(rng.uniform(-300, 300)) + 0.5f) * scales[c]; break;
      case 1: v = float(rng.uniform(-1000000, 1000000)); break;
      case 2: v = i % 16 == 2 ? INFINITY : -INFINITY; break;
      case 3: v = NAN; break;
      default:
        v = std::uniform_real_distribution<float>(-200, 200)(rng.gen());
      }
      x.push_back(v);
    }
  }
  std::string text =
      "graph @qdq(%x: tensor<3x" + std::to_string(perChannel) + "xf32>) {\n" +
      "  %s = Constant() {value = dense<[0.5, 0.037, 3.0]>} : tensor<3xf32>\n" +
      constant("z", zps, "3x", "i8") +
      "  %q = QuantizeLinear(%x, %s, %z) {axis = 0} : tensor<3x" +
      std::to_string(perChannel) + "xi8>\n" +
      "  %d = DequantizeLinear(%q, %s, %z) {axis = 0} : tensor<3x" +
      std::to_string(perChannel) + "xf32>\n" +
      "  %s1 = Constant() {value = dense<[0.25]>} : tensor<f32>\n" +
      "  %z1 = Constant() {value = dense<[100]>} : tensor<u8>\n" +
      "  %u = QuantizeLinear(%x, %s1, %z1) : tensor<3x" +
      std::to_string(perChannel) + "xu8>\n  return %q, %d, %u\n}\n";
  CompiledGraph g;
  ASSERT_TRUE(g.compile(text, "host").ok()) << text;
  std::vector<uint8_t> in(x.size() * 4);
  std::memcpy(in.data(), x.data(), in.size());
  auto out = g.runBytes({in});
  for (size_t i = 0; i < x.size(); ++i) {
    int c = int(i) / perChannel;
    int64_t q = graph::quantizeValue(x[i], scales[c], zps[c], ElementType::I8);
    ASSERT_EQ(int8_t(out[0][i]), q) << x[i] << " / " << scales[c];
    float d;
    std::memcpy(&d, out[1].data() + 4 * i, 4);
    ASSERT_EQ(d, graph::dequantizeValue(q, scales[c], zps[c]));
    ASSERT_EQ(out[2][i], graph::quantizeValue(x[i], 0.25f, 100, ElementType::U8))
        << x[i];
  }
}

// Every quantized op builds for the 32-bit embedded targets: the library
// links with --no-undefined against nothing, so the requantization's 64-bit
// product and the rounding need no compiler-runtime helper.
TEST(QuantizedTest, EmbeddedTargetsNeedNoHelpers) {
  std::string text =
      "graph @all(%f: tensor<1x4x6x6xf32>, %b: tensor<1x8x6x6xi8>) {\n"
      "  %s = Constant() {value = dense<[0.05]>} : tensor<f32>\n"
      "  %z = Constant() {value = dense<[-3]>} : tensor<i8>\n"
      "  %x = QuantizeLinear(%f, %s, %z) : tensor<1x4x6x6xi8>\n" +
      constant("w", std::vector<int>(8 * 4 * 9, 3), "8x4x3x3x", "i8") +
      constant("bias", std::vector<int>(8, -7), "8x", "i32") +
      constant("mult", std::vector<int>{1518500250, 1073741824, 2147483647,
                                        1, 0, 1900000000, 1200000000,
                                        1300000000},
               "8x", "i32") +
      constant("shift", std::vector<int>{-5, -7, 3, 30, 0, -31, -9, -1}, "8x",
               "i32") +
      "  %c = QConv(%x, %w, %bias, %mult, %shift) {act_max = 127, act_min = "
      "-3, pads = [1, 1, 1, 1], x_zero_point = -3, y_zero_point = -3} : "
      "tensor<1x8x6x6xi8>\n"
      "  %a = QAdd(%c, %b) {a_multiplier = 1073741824, a_shift = 0, "
      "a_zero_point = -3, b_multiplier = 1431655765, b_shift = -1, "
      "b_zero_point = 7, left_shift = 20, multiplier = 1288490189, shift = "
      "-18, y_zero_point = 1} : tensor<1x8x6x6xi8>\n"
      "  %p = QAveragePool(%a) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], "
      "strides = [2, 2]} : tensor<1x8x3x3xi8>\n"
      "  %d = DequantizeLinear(%p, %s, %z) : tensor<1x8x3x3xf32>\n"
      "  return %d\n}\n";
  for (const char *target : {"armv7em", "riscv32"}) {
    SCOPED_TRACE(target);
    testing::CompileOptions options;
    options.target = target;
    options.load = false;
    CompiledGraph g;
    absl::Status s = g.compile(text, options);
    ASSERT_TRUE(s.ok()) << s.message();
    // Only intrinsics (they lower to instructions) and functions of the
    // module itself (the matrix-product kernels) are called.
    llvm::StringRef ir = g.ir();
    for (size_t at = ir.find("call "); at != llvm::StringRef::npos;
         at = ir.find("call ", at + 1)) {
      llvm::StringRef line = ir.substr(at, ir.find('\n', at) - at);
      size_t name = line.find('@');
      ASSERT_NE(name, llvm::StringRef::npos) << line.str();
      llvm::StringRef callee = line.substr(name, line.find('(', name) - name);
      bool defined = ir.contains(
          "define internal fastcc void " + callee.str() + "(");
      EXPECT_TRUE(callee.starts_with("@llvm.") || defined) << line.str();
    }
  }
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
