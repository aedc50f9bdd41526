// Convolutions over single pixel tiles (7x7, 14x14 maps) with constant
// weights: the weights get a transposed compile-time copy and the packed
// path vectorizes along output channels. Runs the compiled libraries on
// this machine (host AVX-512 and x86_64 AVX2 code) against references
// computed here.
#include <algorithm>
#include <cmath>
#include <string>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::CompileOptions;
using testing::randomData;

struct ConvCase {
  int ci, h, co, k, stride, pad;
  int oh() const { return (h + 2 * pad - k) / stride + 1; }
};

std::string denseText(const std::vector<float> &v) {
  std::string s = "dense<[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "]>";
}

// Conv(x, constant w, constant b) + Relu as graph IR text.
std::string convGraph(const ConvCase &t, const std::vector<float> &w,
                      const std::vector<float> &b) {
  auto s = [](int v) { return std::to_string(v); };
  std::string y = "1x" + s(t.co) + "x" + s(t.oh()) + "x" + s(t.oh());
  std::string p = s(t.pad);
  return "graph @conv(%x: tensor<1x" + s(t.ci) + "x" + s(t.h) + "x" + s(t.h) +
         "xf32>) {\n  %w = Constant() {value = " + denseText(w) +
         "} : tensor<" + s(t.co) + "x" + s(t.ci) + "x" + s(t.k) + "x" +
         s(t.k) + "xf32>\n  %b = Constant() {value = " + denseText(b) +
         "} : tensor<" + s(t.co) + "xf32>\n  %c = Conv(%x, %w, %b) {pads = [" +
         p + ", " + p + ", " + p + ", " + p + "], strides = [" + s(t.stride) +
         ", " + s(t.stride) + "]} : tensor<" + y +
         "xf32> loc(\"conv\")\n  %y = Relu(%c) : tensor<" + y +
         "xf32>\n  return %y\n}";
}

// The convolution + Relu in double precision; |magnitude| receives, per
// output, the sum of the magnitudes of its terms (the scale of the f32
// rounding error).
std::vector<float> reference(const ConvCase &t, const std::vector<float> &x,
                             const std::vector<float> &w,
                             const std::vector<float> &b,
                             std::vector<double> &magnitude) {
  int o = t.oh();
  std::vector<float> y(t.co * o * o);
  magnitude.assign(y.size(), 0);
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < o; ++oh) {
      for (int ow = 0; ow < o; ++ow) {
        double acc = b[m], mag = std::fabs(b[m]);
        for (int c = 0; c < t.ci; ++c) {
          for (int kh = 0; kh < t.k; ++kh) {
            for (int kw = 0; kw < t.k; ++kw) {
              int ih = oh * t.stride + kh - t.pad;
              int iw = ow * t.stride + kw - t.pad;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.h) {
                continue;
              }
              double term = double(x[(c * t.h + ih) * t.h + iw]) *
                            w[((m * t.ci + c) * t.k + kh) * t.k + kw];
              acc += term;
              mag += std::fabs(term);
            }
          }
        }
        y[(m * o + oh) * o + ow] = float(std::max(acc, 0.0));
        magnitude[(m * o + oh) * o + ow] = mag;
      }
    }
  }
  return y;
}

// Compiles |t| for |target|, checks that the weights were transposed and
// which kernel is called (the transposed one unless |columnPanels| is off),
// runs every workgroup and compares with the reference.
void checkConv(const ConvCase &t, const char *target,
               bool columnPanels = true) {
  SCOPED_TRACE(std::string(target) + " ci " + std::to_string(t.ci) + " h " +
               std::to_string(t.h) + " co " + std::to_string(t.co) + " k " +
               std::to_string(t.k) + " stride " + std::to_string(t.stride));
  auto x = randomData(t.ci * t.h * t.h, 1);
  auto w = randomData(t.co * t.ci * t.k * t.k, 2);
  auto b = randomData(t.co, 3);
  CompiledGraph c;
  CompileOptions options;
  options.target = target;
  options.codegen.gemm.columnPanels = columnPanels;
  absl::Status s = c.compile(convGraph(t, w, b), options);
  ASSERT_TRUE(s.ok()) << s.message();
  const dispatch::DispatchProgram &d = c.program();
  ASSERT_EQ(d.regions.size(), 1u) << "bias and relu are fused";
  bool transposed = false;
  for (const auto &info : d.program.tensors) {
    transposed |= llvm::StringRef(info.name).ends_with("_kxm");
  }
  EXPECT_TRUE(transposed) << "the weights have a transposed copy";
  EXPECT_EQ(c.ir().find("call fastcc void @osprey_gemmt_") != std::string::npos,
            columnPanels)
      << "the transposed kernel runs";
  EXPECT_EQ(c.ir().find("call fastcc void @osprey_gemm_") != std::string::npos,
            !columnPanels)
      << "the kernel along pixels runs";
  for (const dispatch::Binding &binding : d.regions[0].bindings) {
    ASSERT_NE(d.buffers[d.storageOf(binding.tensor)].kind,
              dispatch::BufferKind::Transient)
        << "no transients in one region";
  }
  std::vector<float> got = c.run({x})[0];
  std::vector<double> magnitude;
  std::vector<float> want = reference(t, x, w, b, magnitude);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + magnitude[i]))
        << "element " << i;
  }
}

// At least 128 reduction steps each (fewer keep the kernel along pixels).
const ConvCase kCases[] = {
    // 3x3, padding 1, 7x7 map: 49 pixels in 7 blocks of 7; 48 channels (a
    // last panel of 16: the one-vector kernel).
    {40, 7, 48, 3, 1, 1},
    // Pointwise (B read in place, no panel); 40 channels: a last panel of 8.
    {160, 7, 40, 1, 1, 0},
    // Stride 2 onto a 7x7 map; reduction of 36 * 9 = 324 > one chunk.
    {36, 14, 64, 3, 2, 1},
    // 5x5 window with padding 2 on a 6x6 map (36 pixels); 20 channels.
    {6, 6, 20, 5, 1, 2},
    // 544 channels: M tiles of 272 (the second starts mid-panel).
    {16, 7, 544, 3, 1, 1},
    // 5x5 map (25 pixels), pointwise, channels not a multiple of 16.
    {130, 5, 33, 1, 1, 0},
    // 14x14 maps (196 pixels, 28 blocks of 7): 3x3 and pointwise.
    {16, 14, 48, 3, 1, 1},
    {130, 14, 40, 1, 1, 0},
};

TEST(GemmTransposedTest, Avx512MatchesReference) {
  for (const ConvCase &t : kCases) {
    checkConv(t, "host");
  }
  // Weights over 1 MiB: rows padded to an odd number of 16-float groups.
  checkConv({64, 7, 512, 3, 1, 1}, "host");
}

bool hostHasAvx512() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto it = features.find("avx512f");
  return it != features.end() && it->second;
}

// AVX-512 tiles whose channels fit fewer 48-wide panels than 32-wide ones
// run the 3-vector kernel, with 1- or 2-vector kernels for a narrower last
// panel; 64 channels stay 2 x 32. AVX2 keeps 2 vectors. The kernels are
// read from the code compiled for an AVX-512 CPU on any host; the results
// are compared where the host runs that code.
TEST(GemmTransposedTest, ChannelPanelWidths) {
  struct WidthCase {
    ConvCase conv;
    const char *cpu;
    std::vector<std::string> called, absent;
  };
  const char *avx512 = "skylake-avx512", *avx2 = "x86-64-v3";
  const WidthCase cases[] = {
      // 96 channels: 2 x 48.
      {{130, 7, 96, 1, 1, 0}, avx512, {"osprey_gemmt_7x48_"},
       {"osprey_gemmt_7x32_", "osprey_gemmt_7x16_"}},
      // 80 channels: 48 + 32 (3x3, packed panel, 14x14 map).
      {{16, 14, 80, 3, 1, 1}, avx512,
       {"osprey_gemmt_7x48_", "osprey_gemmt_7x32_"}, {}},
      // 170 channels: 3 x 48 + 26 (2 vectors, 6 lanes unused); 6x6 map.
      {{140, 6, 170, 1, 1, 0}, avx512,
       {"osprey_gemmt_6x48_", "osprey_gemmt_6x32_"}, {}},
      // 100 channels, 5x5 map: 2 x 48 + 4 (one vector).
      {{130, 5, 100, 1, 1, 0}, avx512,
       {"osprey_gemmt_5x48_", "osprey_gemmt_5x16_"}, {}},
      // 64 channels: 2 x 32.
      {{130, 7, 64, 1, 1, 0}, avx512, {"osprey_gemmt_7x32_"},
       {"osprey_gemmt_7x48_"}},
      // AVX2: 16 channels per panel (no narrower last one), 5 pixels per
      // block.
      {{130, 7, 96, 1, 1, 0}, avx2, {"osprey_gemmt_5x16_"},
       {"osprey_gemmt_5x8_", "osprey_gemmt_5x24_"}},
  };
  for (const WidthCase &w : cases) {
    bool runs = w.cpu == avx2 || hostHasAvx512();
    if (runs) {
      checkConv(w.conv, w.cpu == avx2 ? "x86_64" : "host");
    }
    CompiledGraph c;
    CompileOptions options;
    options.target = "x86_64";
    options.cpu = w.cpu;
    options.load = false;
    auto wt = randomData(w.conv.co * w.conv.ci * w.conv.k * w.conv.k, 2);
    auto b = randomData(w.conv.co, 3);
    ASSERT_TRUE(c.compile(convGraph(w.conv, wt, b), options).ok());
    for (const std::string &name : w.called) {
      EXPECT_NE(c.ir().find("call fastcc void @" + name), std::string::npos)
          << w.cpu << " co " << w.conv.co << ": " << name << " runs";
    }
    for (const std::string &name : w.absent) {
      EXPECT_EQ(c.ir().find("@" + name), std::string::npos)
          << w.cpu << " co " << w.conv.co << ": no " << name;
    }
  }
}

TEST(GemmTransposedTest, Avx2MatchesReference) {
  for (const ConvCase &t : kCases) {
    checkConv(t, "x86_64");
  }
}

// Scalar targets keep the kernel along pixels and read the transposed
// weights with unit row stride; the same code on vectors here.
TEST(GemmTransposedTest, TransposedWeightsAlongPixels) {
  for (const ConvCase &t : kCases) {
    checkConv(t, "host", /*columnPanels=*/false);
  }
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
