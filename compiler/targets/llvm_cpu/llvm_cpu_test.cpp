// Compiles small graphs with the LLVM CPU backend, loads the libraries with
// the runtime's ELF loader and runs every dispatch against references
// computed here.
#include <cmath>
#include <cstring>
#include <map>

#include "compiler/targets/llvm_cpu/library.h"
#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"
#include "hal/local/loaders/elf/elf_loader.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::CompileOptions;
using testing::randomData;
using testing::statusText;

void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                float tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::fabs(want[i])))
        << "element " << i;
  }
}

TEST(LlvmCpuTest, LibraryExportsOneFunctionPerRegion) {
  CompiledGraph c;
  ASSERT_TRUE(c.compile(R"(
graph @two(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) {
  %a = MatMul(%x, %w) : tensor<4x4xf32>
  %b = MatMul(%a, %w) : tensor<4x4xf32>
  return %b
})")
                  .ok());
  const auto &exe = c.executable();
  ASSERT_EQ(exe.export_count(), 2u);
  EXPECT_STREQ(exe.export_info(0).name, "two_dispatch_0");
  EXPECT_EQ(exe.export_info(1).binding_count, 3u);
  EXPECT_EQ(exe.export_info(1).binding_write_mask, 0b100u);
}

TEST(LlvmCpuTest, GemmBiasReluMatchesReference) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @fc(%x: tensor<5x24xf32>, %w: tensor<24x19xf32>, %b: tensor<19xf32>) {
  %y = Gemm(%x, %w, %b) : tensor<5x19xf32> loc("fc")
  %r = Relu(%y) : tensor<5x19xf32> loc("relu")
  return %r
})");
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u) << "bias and relu are fused";
  auto x = randomData(5 * 24, -1, 1, 1);
  auto w = randomData(24 * 19, -1, 1, 2);
  auto b = randomData(19, -1, 1, 3);
  std::vector<float> want(5 * 19);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 19; ++j) {
      float acc = 0;
      for (int k = 0; k < 24; ++k) {
        acc += x[i * 24 + k] * w[k * 19 + j];
      }
      want[i * 19 + j] = std::max(acc + b[j], 0.0f);
    }
  }
  expectNear(c.run({x, w, b})[0], want, 1e-5f);
}

// A matmul takes the packed-panel path over several workgroups in x and y,
// with partial row blocks (80 rows, blocks of 6) and a narrow last column
// chunk (200 columns, chunks of 16).
TEST(LlvmCpuTest, PackedMatmulOverSeveralWorkgroups) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @mm(%a: tensor<160x40xf32>, %b: tensor<40x400xf32>) {
  %y = MatMul(%a, %b) : tensor<160x400xf32>
  return %y
})");
  ASSERT_TRUE(s.ok()) << s.message();
  const auto &region = c.program().regions[0];
  ASSERT_EQ(region.workgroupCount[0], 2);
  ASSERT_EQ(region.workgroupCount[1], 2);
  auto a = randomData(160 * 40, -1, 1, 10);
  auto b = randomData(40 * 400, -1, 1, 11);
  std::vector<float> want(160 * 400);
  for (int i = 0; i < 160; ++i) {
    for (int j = 0; j < 400; ++j) {
      double acc = 0;
      for (int k = 0; k < 40; ++k) {
        acc += double(a[i * 40 + k]) * b[k * 400 + j];
      }
      want[i * 400 + j] = float(acc);
    }
  }
  expectNear(c.run({a, b})[0], want, 1e-5f);
}

// Geometry of a 2-D convolution test case (batch 1, square kernel).
struct ConvCase {
  int ci, h, w, co, k, stride, dilation, pad, group;
  int oh() const { return (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  int ow() const { return (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
};

std::string convGraph(const ConvCase &t) {
  std::string x = "1x" + std::to_string(t.ci) + "x" + std::to_string(t.h) +
                  "x" + std::to_string(t.w);
  std::string w = std::to_string(t.co) + "x" + std::to_string(t.ci / t.group) +
                  "x" + std::to_string(t.k) + "x" + std::to_string(t.k);
  std::string y = "1x" + std::to_string(t.co) + "x" + std::to_string(t.oh()) +
                  "x" + std::to_string(t.ow());
  std::string p = std::to_string(t.pad);
  return "graph @conv(%x: tensor<" + x + "xf32>, %w: tensor<" + w +
         "xf32>, %b: tensor<" + std::to_string(t.co) +
         "xf32>) {\n  %c = Conv(%x, %w, %b) {pads = [" + p + ", " + p + ", " +
         p + ", " + p + "], strides = [" + std::to_string(t.stride) + ", " +
         std::to_string(t.stride) + "], dilations = [" +
         std::to_string(t.dilation) + ", " + std::to_string(t.dilation) +
         "], group = " + std::to_string(t.group) + "} : tensor<" + y +
         "xf32> loc(\"conv\")\n  %y = Relu(%c) : tensor<" + y +
         "xf32>\n  return %y\n}";
}

std::vector<float> referenceConvRelu(const ConvCase &t,
                                     const std::vector<float> &x,
                                     const std::vector<float> &w,
                                     const std::vector<float> &b) {
  int cig = t.ci / t.group, cog = t.co / t.group;
  std::vector<float> y(t.co * t.oh() * t.ow());
  for (int m = 0; m < t.co; ++m) {
    int g = m / cog;
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double acc = b[m];
        for (int c = 0; c < cig; ++c) {
          for (int kh = 0; kh < t.k; ++kh) {
            for (int kw = 0; kw < t.k; ++kw) {
              int ih = oh * t.stride + kh * t.dilation - t.pad;
              int iw = ow * t.stride + kw * t.dilation - t.pad;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              acc += double(x[((g * cig + c) * t.h + ih) * t.w + iw]) *
                     w[((m * cig + c) * t.k + kh) * t.k + kw];
            }
          }
        }
        y[(m * t.oh() + oh) * t.ow() + ow] = float(std::max(acc, 0.0));
      }
    }
  }
  return y;
}

void checkConv(const ConvCase &t, bool severalWorkgroups,
               const CompileOptions &options = {}) {
  CompiledGraph c;
  absl::Status s = c.compile(convGraph(t), options);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u) << "bias and relu are fused";
  const auto &wg = c.program().regions[0].workgroupCount;
  if (severalWorkgroups) {
    ASSERT_GT(wg[0] * wg[1] * wg[2], 1) << "the test must cover tiling";
  }
  auto x = randomData(t.ci * t.h * t.w, -1, 1, 4);
  auto w = randomData(t.co * (t.ci / t.group) * t.k * t.k, -1, 1, 5);
  auto b = randomData(t.co, -1, 1, 6);
  expectNear(c.run({x, w, b})[0], referenceConvRelu(t, x, w, b), 1e-5f);
}

TEST(LlvmCpuTest, StridedPaddedConvOverSeveralWorkgroups) {
  // 17x17 outputs: tiles of 6 rows, the last one partial; 4 channels (one
  // partial block of 6 rows of A).
  checkConv({/*ci=*/3, /*h=*/33, /*w=*/33, /*co=*/4, /*k=*/3, /*stride=*/2,
             /*dilation=*/1, /*pad=*/1, /*group=*/1},
            true);
}

TEST(LlvmCpuTest, ConvOddShapesMatchReference) {
  // Dilation with padding; 13x13 pixels (not a multiple of 16).
  checkConv({5, 13, 13, 7, 3, 1, 2, 2, 1}, false);
  // Reduction of 30*3*3 = 270 > one chunk of 256; 11 channels.
  checkConv({30, 9, 9, 11, 3, 1, 1, 1, 1}, false);
  // Grouped convolution, 3 output channels per group (batch loop over
  // groups); stride 2 with a 5x5 kernel.
  checkConv({8, 15, 15, 12, 5, 2, 1, 2, 4}, false);
  // 7x7 stride-2 stem-like convolution with several row tiles.
  checkConv({3, 40, 40, 16, 7, 2, 1, 3, 1}, true);
  // Pointwise convolution, 7x7 pixels (one column chunk of 1).
  checkConv({24, 7, 7, 40, 1, 1, 1, 0, 1}, false);
}

// Which dispatch functions of |text|'s library call a packed-path
// microkernel, by region name, from the optimized LLVM IR for x86_64.
std::map<std::string, bool> regionsCallingMicrokernels(llvm::StringRef text) {
  std::map<std::string, bool> calls;
  CompiledGraph c;
  CompileOptions options;
  options.target = "x86_64";
  options.load = false;
  absl::Status s = c.compile(text, options);
  EXPECT_TRUE(s.ok()) << s.message();
  const std::string &ir = c.ir();
  std::string current;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(ir).split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (line.starts_with("define ")) {
      size_t at = line.find('@');
      current = line.substr(at + 1, line.find('(', at) - at - 1).str();
      if (llvm::StringRef(current).contains("_dispatch_")) {
        calls[current] = false;
      }
    } else if (line.contains("call") && line.contains("@osprey_gemm_") &&
               calls.count(current)) {
      calls[current] = true;
    }
  }
  return calls;
}

// Only matrix-product roots call the microkernel: not a softmax (reductions
// and elementwise ops) or a GEMV with 2 rows.
TEST(LlvmCpuTest, MicrokernelOnlyForMatrixProducts) {
  auto calls = regionsCallingMicrokernels(R"(
graph @mix(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>, %v: tensor<2x32xf32>) {
  %y = MatMul(%a, %b) : tensor<64x48xf32>
  %s = Softmax(%y) {axis = 1} : tensor<64x48xf32>
  %g = MatMul(%v, %b) : tensor<2x48xf32>
  return %s, %g
})");
  ASSERT_GE(calls.size(), 3u);
  int calling = 0;
  for (const auto &[name, call] : calls) {
    calling += call;
  }
  EXPECT_EQ(calling, 1) << "only the 64x48 product takes the packed path";
  EXPECT_TRUE(calls["mix_dispatch_0"]) << "the first region is the product";
}

// With a small stack budget (as on embedded targets) a tile runs in
// sub-tiles of its outer pixel loop: here single rows of 17 pixels.
TEST(LlvmCpuTest, PackedConvInSubTilesMatchesReference) {
  CompileOptions options;
  options.codegen.gemm.maxScratch = 8192;
  checkConv({3, 33, 33, 16, 3, 2, 1, 1, 1}, true, options);
  checkConv({5, 13, 13, 7, 3, 1, 2, 2, 1}, false, options);
}

// Depthwise convolutions (one channel per group) have no matrix product to
// block: rows of at least 16 outputs run row by row (a weight times a strided
// input row, border and interior split), shorter rows take the generic path.
TEST(LlvmCpuTest, DepthwiseConvMatchesReference) {
  checkConv({6, 12, 12, 6, 3, 1, 1, 1, 6}, false);
  // Stride 2 with padding, 20-wide rows; several workgroups.
  checkConv({5, 40, 40, 5, 3, 2, 1, 1, 5}, true);
  // Dilation 2, 33-wide rows, a 5x5 window wider than the padding.
  checkConv({3, 33, 33, 3, 5, 1, 2, 2, 3}, true);
  // Channel multiplier 2 (two outputs per one-channel group), no padding.
  checkConv({4, 18, 18, 8, 3, 1, 1, 0, 4}, true);
}

TEST(LlvmCpuTest, InlineMathMatchesLibm) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @math(%x: tensor<5x16x130xf32>) {
  %e = Exp(%x) : tensor<5x16x130xf32>
  %t = Tanh(%x) : tensor<5x16x130xf32>
  %s = Sigmoid(%x) : tensor<5x16x130xf32>
  %f = Erf(%x) : tensor<5x16x130xf32>
  %a = Abs(%x) : tensor<5x16x130xf32>
  %l = Log(%a) : tensor<5x16x130xf32>
  return %e, %t, %s, %f, %l
})");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(c.program().regions[0].workgroupCount[2], 1)
      << "the test must cover the linearized z dimension";
  auto x = randomData(5 * 16 * 130, -9, 9, 7);
  x[0] = 0.0f;
  x[1] = 1e-4f;
  auto out = c.run({x});
  std::vector<float> e, t, sg, f, l;
  for (float v : x) {
    e.push_back(std::exp(v));
    t.push_back(std::tanh(v));
    sg.push_back(1 / (1 + std::exp(-v)));
    f.push_back(std::erf(v));
    l.push_back(std::log(std::fabs(v)));
  }
  expectNear(out[0], e, 2e-6f);
  expectNear(out[1], t, 1e-6f);
  expectNear(out[2], sg, 1e-6f);
  expectNear(out[3], f, 1e-6f);
  // log(0) = -inf is checked apart.
  EXPECT_TRUE(std::isinf(out[4][0]) && out[4][0] < 0);
  out[4][0] = l[0] = 0;
  expectNear(out[4], l, 2e-6f);
}

TEST(LlvmCpuTest, SoftmaxAcrossRegionsSharesTheArena) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @softmax(%x: tensor<4x33xf32>) {
  %y = Softmax(%x) {axis = -1} : tensor<4x33xf32> loc("sm")
  return %y
})");
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_GT(c.program().regions.size(), 2u);
  auto x = randomData(4 * 33, -5, 5, 8);
  std::vector<float> want(4 * 33);
  for (int i = 0; i < 4; ++i) {
    float mx = -INFINITY, sum = 0;
    for (int j = 0; j < 33; ++j) {
      mx = std::max(mx, x[i * 33 + j]);
    }
    for (int j = 0; j < 33; ++j) {
      sum += std::exp(x[i * 33 + j] - mx);
    }
    for (int j = 0; j < 33; ++j) {
      want[i * 33 + j] = std::exp(x[i * 33 + j] - mx) / sum;
    }
  }
  expectNear(c.run({x})[0], want, 1e-5f);
}

TEST(LlvmCpuTest, PaddedMaxPoolUsesNegativeInfinity) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @pool(%x: tensor<1x1x4x4xf32>) {
  %y = MaxPool(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : tensor<1x1x4x4xf32>
  return %y
})");
  ASSERT_TRUE(s.ok()) << s.message();
  auto x = randomData(16, -10, -1, 9); // all negative: padding must not win
  std::vector<float> want(16);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      float m = -INFINITY;
      for (int a = std::max(0, i - 1); a <= std::min(3, i + 1); ++a) {
        for (int b = std::max(0, j - 1); b <= std::min(3, j + 1); ++b) {
          m = std::max(m, x[a * 4 + b]);
        }
      }
      want[i * 4 + j] = m;
    }
  }
  expectNear(c.run({x})[0], want, 0);
}

TEST(LlvmCpuTest, ConstantsAreEmbeddedNotBound) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @weights(%x: tensor<1x2xf32>) {
  %w = Constant() {value = dense<[1.0, 2.0, 3.0, 4.0]>} : tensor<2x2xf32>
  %y = MatMul(%x, %w) : tensor<1x2xf32>
  return %y
})");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.executable().export_info(0).binding_count, 2u);
  expectNear(c.run({{0.5f, -2.0f}})[0], {0.5f - 6.0f, 1.0f - 8.0f}, 0);
}

// Libraries for the embedded targets cannot run here, but the runtime's ELF
// loader must accept them: machine, relocations, segment permissions and the
// query symbol.
TEST(LlvmCpuTest, EmbeddedLibrariesPassTheLoaderChecks) {
  auto d = testing::lowerGraphText(R"(
graph @emb(%x: tensor<2x8xf32>, %w: tensor<8x3xf32>) {
  %y = MatMul(%x, %w) : tensor<2x3xf32>
  %z = Tanh(%y) : tensor<2x3xf32>
  return %z
})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  using hal::local::loaders::elf::ElfImage;
  using hal::local::loaders::elf::ElfMachine;
  const std::pair<const char *, ElfMachine> kTargets[] = {
      {"armv7em", ElfMachine::kArmv7em}, {"riscv32", ElfMachine::kRiscv32}};
  for (const auto &[name, machine] : kTargets) {
    SCOPED_TRACE(name);
    auto target = resolveCpuTarget(name);
    ASSERT_TRUE(target.ok());
    auto bytes = buildExecutableLibrary(*d, *target, {"emb"});
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    auto identified = hal::local::loaders::elf::IdentifyElfMachine(*bytes);
    ASSERT_TRUE(identified.ok()) << statusText(identified.status());
    EXPECT_EQ(*identified, machine);
    hal::local::loaders::elf::ElfImageOptions options;
    options.machine = machine;
    options.executable = false;
    auto image = ElfImage::Load(*bytes, options, osprey::Allocator::Default());
    ASSERT_TRUE(image.ok()) << statusText(image.status());
    EXPECT_NE((*image)->query_address(), 0u);
  }
}

// Each f16 op rounds its result, as one op on half floats does, also when
// the ops are fused: 1 + 2^-11 is a tie that rounds to 1, twice; without
// the rounding in between the sum would be 1 + 2^-10 (0x3c01).
TEST(LlvmCpuTest, HalfFloatOpsRoundEachResult) {
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @halves(%x: tensor<4xf16>, %y: tensor<4xf16>) {
  %s = Add(%x, %y) : tensor<4xf16> loc("add0")
  %z = Add(%s, %y) : tensor<4xf16> loc("add1")
  return %z
})");
  ASSERT_TRUE(s.ok()) << s.message();
  // x = 1, 2048, 65504, 0; y = 2^-11, 1, 16, -0 (f16 bits).
  std::vector<uint16_t> x = {0x3c00, 0x6800, 0x7bff, 0x0000};
  std::vector<uint16_t> y = {0x1000, 0x3c00, 0x4c00, 0x8000};
  auto bytes = [](const std::vector<uint16_t> &v) {
    std::vector<uint8_t> b(2 * v.size());
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  auto out = c.runBytes({bytes(x), bytes(y)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<uint16_t> z(4);
  std::memcpy(z.data(), out[0].data(), 8);
  // 1 + 2^-11 rounds to 1 each time; 2048 + 1 is a tie (to 2048), twice;
  // 65504 + 16 is a tie that rounds up to infinity; 0 + -0 = 0.
  EXPECT_EQ(z[0], 0x3c00);
  EXPECT_EQ(z[1], 0x6800);
  EXPECT_EQ(z[2], 0x7c00);
  EXPECT_EQ(z[3], 0x0000);
}

TEST(LlvmCpuTest, IntegerArithmeticOnFloatConstantIsUnimplemented) {
  // LeakyRelu's slope 0.01 has no integer value: rejected, never rounded.
  CompiledGraph c;
  absl::Status s = c.compile(R"(
graph @ints(%x: tensor<4xi32>) {
  %z = LeakyRelu(%x) {alpha = 0.01} : tensor<4xi32> loc("leaky_i32")
  return %z
})");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(s.message()).find("non-integer constant"),
            std::string::npos)
      << s.message();
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
