// Runs 3x3 stride-1 convolutions with constant weights compiled through the
// Winograd F(2x2, 3x3) and F(4x4, 3x3) paths (structured::
// transformWinogradWeights, winograd_conv.h) on AVX-512
// (host, when the CPU has it) and AVX2 (x86_64) against double-precision
// references, with bias, ReLU and residual epilogues, odd maps (partial
// tiles) and channel counts that are no multiple of a vector.
#include <algorithm>
#include <cmath>
#include <string>

#include "compiler/structured/structured_ir.h"
#include "compiler/targets/llvm_cpu/library.h"
#include "compiler/targets/llvm_cpu/target.h"
#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::CompileOptions;
using testing::dims;
using testing::randomData;

struct Case {
  int ci, h, w, co, pad;
  int oh() const { return h + 2 * pad - 2; }
  int ow() const { return w + 2 * pad - 2; }
};

std::string denseText(const std::vector<float> &v) {
  std::string s = "dense<[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "]>";
}

// Conv(x, constant w, constant b), then Relu ("relu") or + r then Relu
// ("residual", r a graph input of the output's shape).
std::string graphText(const Case &t, const std::string &epilogue,
                      const std::vector<float> &w,
                      const std::vector<float> &b) {
  std::string y = dims({1, t.co, t.oh(), t.ow()});
  std::string p = std::to_string(t.pad);
  std::string text =
      "graph @wino(%x: tensor<" + dims({1, t.ci, t.h, t.w}) + "xf32>" +
      (epilogue == "residual" ? ", %r: tensor<" + y + "xf32>" : "") +
      ") {\n  %w = Constant() {value = " + denseText(w) + "} : tensor<" +
      dims({t.co, t.ci, 3, 3}) +
      "xf32>\n  %b = Constant() {value = " + denseText(b) + "} : tensor<" +
      std::to_string(t.co) + "xf32>\n  %c = Conv(%x, %w, %b) {pads = [" + p +
      ", " + p + ", " + p + ", " + p + "], strides = [1, 1]} : tensor<" + y +
      "xf32> loc(\"conv\")\n";
  if (epilogue == "residual") {
    text += "  %s = Add(%c, %r) : tensor<" + y + "xf32>\n";
    text += "  %y = Relu(%s) : tensor<" + y + "xf32>\n";
  } else {
    text += "  %y = Relu(%c) : tensor<" + y + "xf32>\n";
  }
  return text + "  return %y\n}";
}

// The values the graph computes, in double precision; |magnitude| receives
// per output the sum of the magnitudes of its terms (the scale of the f32
// rounding error).
std::vector<double> reference(const Case &t, const std::vector<float> &x,
                              const std::vector<float> &w,
                              const std::vector<float> &b,
                              const std::vector<float> &r,
                              std::vector<double> &magnitude) {
  std::vector<double> y(size_t(t.co) * t.oh() * t.ow());
  magnitude.assign(y.size(), 0);
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double acc = b[m], mag = std::fabs(b[m]);
        for (int c = 0; c < t.ci; ++c) {
          for (int kh = 0; kh < 3; ++kh) {
            for (int kw = 0; kw < 3; ++kw) {
              int ih = oh + kh - t.pad, iw = ow + kw - t.pad;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              double term = double(x[(size_t(c) * t.h + ih) * t.w + iw]) *
                            w[((size_t(m) * t.ci + c) * 3 + kh) * 3 + kw];
              acc += term;
              mag += std::fabs(term);
            }
          }
        }
        size_t at = (size_t(m) * t.oh() + oh) * t.ow() + ow;
        if (!r.empty()) {
          acc += r[at];
          mag += std::fabs(r[at]);
        }
        y[at] = std::max(acc, 0.0);
        magnitude[at] = mag;
      }
    }
  }
  return y;
}

// The Winograd marker of the root of |c|'s region |r|, or null.
const structured::WinogradRoot *winogradOf(const CompiledGraph &c,
                                           size_t r = 0) {
  const dispatch::DispatchProgram &p = c.program();
  const structured::StructuredOp &root = p.program.ops[p.regions[r].ops[0]];
  return root.winograd ? &*root.winograd : nullptr;
}

// Whether an op of |c| reads a tensor of shape |shape| (the 3x3 weights).
bool readsShape(const CompiledGraph &c, const std::vector<int64_t> &shape) {
  const structured::StructuredProgram &p = c.program().program;
  for (const structured::StructuredOp &op : p.ops) {
    for (const structured::OperandAccess &in : op.inputs) {
      if (p.tensors[in.tensor].type.dims().vec() == shape) {
        return true;
      }
    }
  }
  return false;
}

// Compiles |t| for |target| with the Winograd path for maps of any size,
// checks that it generated the convolution from transformed weights only
// (the root is marked, reads a positions x channels constant, and nothing
// reads the 3x3 weights) and compares with the reference.
void check(const Case &t, const char *target,
           const std::string &epilogue = "relu", bool transposed = true,
           unsigned blockRows = 0, unsigned f4MinWidth = 28) {
  SCOPED_TRACE(std::string(target) + " " + epilogue + " ci " +
               std::to_string(t.ci) + " map " + std::to_string(t.h) + "x" +
               std::to_string(t.w) + " co " + std::to_string(t.co) + " pad " +
               std::to_string(t.pad));
  auto x = randomData(size_t(t.ci) * t.h * t.w, 1);
  auto w = randomData(size_t(t.co) * t.ci * 9, 2);
  auto b = randomData(t.co, 3);
  std::vector<float> r;
  std::vector<std::vector<float>> inputs = {x};
  if (epilogue == "residual") {
    r = randomData(size_t(t.co) * t.oh() * t.ow(), 4);
    inputs.push_back(r);
  }
  CompiledGraph c;
  CompileOptions options;
  options.target = target;
  structured::WinogradOptions &winograd = options.fusion.winograd;
  winograd.minPixels = 1;
  winograd.blockRows = blockRows;
  winograd.minF4Width = f4MinWidth;
  winograd.transposed = transposed;
  absl::Status s = c.compile(graphText(t, epilogue, w, b), options);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u) << "the epilogue is fused";
  const structured::WinogradRoot *wino = winogradOf(c);
  ASSERT_NE(wino, nullptr) << "the Winograd path generated the convolution";
  int64_t m = std::min(t.oh(), t.ow()) >= int(f4MinWidth) ? 4 : 2;
  EXPECT_EQ(wino->m, m);
  const structured::StructuredProgram &p = c.program().program;
  const structured::StructuredOp &root = p.ops[c.program().regions[0].ops[0]];
  llvm::ArrayRef<int64_t> u =
      p.tensors[root.inputs[wino->weights].tensor].type.dims();
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0], (m + 2) * (m + 2));
  EXPECT_EQ(u[1], wino->transposed ? t.ci : t.co);
  if (wino->transposed) {
    // Rows of U^T: all channels in whole panels (16 or 32 floats; every
    // workgroup holds all channels), padded to an odd number of 16-float
    // groups.
    EXPECT_GE(u[2], (t.co + 15) / 16 * 16);
    EXPECT_LE(u[2], (t.co + 31) / 32 * 32 + 16);
    EXPECT_EQ(u[2] % 32, 16) << "an odd number of 16-float groups";
  } else {
    EXPECT_EQ(u[2], t.ci);
  }
  EXPECT_FALSE(readsShape(c, {t.co, t.ci, 3, 3}))
      << "the 3x3 weights have no reader left";
  EXPECT_EQ(c.ir().find("osprey_winograd_u"), std::string::npos)
      << "no weights of the code generator's own";
  std::vector<float> got = c.run(inputs)[0];
  std::vector<double> magnitude;
  std::vector<double> want = reference(t, x, w, b, r, magnitude);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // F(4x4, 3x3)'s transforms have coefficients up to 8 (F(2x2, 3x3):
    // 1), so its rounding errors are a few times larger.
    ASSERT_NEAR(got[i], want[i],
                (f4MinWidth == 1 ? 1e-5 : 2e-6) * (1 + magnitude[i]))
        << "element " << i;
  }
}

// Odd maps leave partial 2x2 tiles at the right and bottom edges; a map one
// pixel wide has tiles of one valid column; channel counts are no multiple
// of a vector or of the microkernel's rows. Up to 64 tiles run transposed
// (blocks of tiles times channel panels).
const Case kCases[] = {
    {40, 14, 14, 48, 1}, // 49 tiles: 7 blocks of 7 (two panels, the second
                         // one column when not transposed)
    {33, 7, 7, 35, 1},   // 16 tiles (one vector: the narrow kernel)
    {32, 9, 13, 40, 1},  // odd rows and columns
    {36, 13, 1, 33, 1},  // one pixel wide
    {32, 10, 12, 37, 0}, // no padding: 8x10 outputs
    {34, 15, 9, 32, 0},  // no padding, odd: 13x7 outputs
    {32, 56, 20, 32, 1}, // 280 tiles in one band (9 panels)
};

TEST(WinogradConvTest, Avx512MatchesReference) {
  for (const Case &t : kCases) {
    check(t, "host");
  }
}

TEST(WinogradConvTest, Avx2MatchesReference) {
  for (const Case &t : kCases) {
    check(t, "x86_64");
  }
}

TEST(WinogradConvTest, ResidualEpilogueMatchesReference) {
  for (const char *target : {"host", "x86_64"}) {
    check({40, 14, 14, 48, 1}, target, "residual");
    check({32, 9, 13, 40, 1}, target, "residual");
    check({32, 9, 13, 40, 1}, target, "residual", /*transposed=*/false);
  }
}

// Small tile counts with vectors along tiles (panels of 32 or 16 tiles).
TEST(WinogradConvTest, UntransposedMatchesReference) {
  for (const Case &t : {kCases[1], kCases[2], kCases[3], kCases[5]}) {
    check(t, "host", "relu", /*transposed=*/false);
  }
  check({40, 14, 14, 48, 1}, "x86_64", "relu", /*transposed=*/false);
  // Product blocks of several kernel row blocks (the last one partial).
  check({40, 14, 14, 44, 1}, "host", "residual", /*transposed=*/false,
        /*blockRows=*/24);
  check({32, 9, 13, 40, 1}, "x86_64", "relu", /*transposed=*/false,
        /*blockRows=*/24);
}

// F(4x4, 3x3) (by default on maps of 28 and more): 6x6 patches, partial
// 4x4 tiles at odd edges, transposed and not.
TEST(WinogradConvTest, F4MatchesReference) {
  check(kCases[1], "host", "relu", /*transposed=*/true, 0, /*f4MinWidth=*/1);
  check(kCases[3], "host", "relu", /*transposed=*/true, 0, /*f4MinWidth=*/1);
  for (const char *target : {"host", "x86_64"}) {
    check({40, 14, 14, 48, 1}, target, "residual", true, 0, 1);
    check({32, 9, 13, 40, 1}, target, "residual", false, 0, 1);
  }
}

// Bands of output rows per workgroup: 28x28 maps take 4x4 tiles; 128
// channels of 7 tiles per row fit 4 tile rows (28 tiles, 32 columns) in
// the panel budget. The second band (3 tile rows) starts mid-map.
TEST(WinogradConvTest, RowBandsMatchReference) {
  for (const char *target : {"host", "x86_64"}) {
    check({128, 28, 28, 32, 1}, target);
  }
  CompiledGraph c;
  CompileOptions options;
  options.load = false;
  Case t = {128, 28, 28, 32, 1};
  std::vector<float> w(size_t(t.co) * t.ci * 9, 0.5f), b(t.co, 0.25f);
  ASSERT_TRUE(c.compile(graphText(t, "relu", w, b), options).ok());
  ASSERT_EQ(c.program().regions.size(), 1u);
  const dispatch::DispatchRegion &r = c.program().regions[0];
  EXPECT_EQ(r.tileSizes, (std::vector<int64_t>{1, 32, 16, 28, 0, 0, 0}));
  EXPECT_EQ(r.workgroupCount[1], 2);
}

// Scalar targets, the switch and too few channels keep the packed path.
TEST(WinogradConvTest, OtherConvolutionsKeepThePackedPath) {
  auto compile = [](const Case &t, const char *target, bool winograd) {
    CompiledGraph c;
    CompileOptions options;
    options.target = target;
    options.load = false;
    options.fusion.winograd.enabled = winograd;
    options.fusion.winograd.minPixels = 1;
    std::vector<float> w(size_t(t.co) * t.ci * 9, 0.5f), b(t.co, 0.25f);
    absl::Status s = c.compile(graphText(t, "relu", w, b), options);
    EXPECT_TRUE(s.ok()) << s.message();
    bool marked = winogradOf(c) != nullptr;
    const structured::StructuredProgram &p = c.program().program;
    bool transformed = false;
    for (const structured::TensorInfo &tensor : p.tensors) {
      transformed |= tensor.name.find("_wino") != std::string::npos;
    }
    EXPECT_EQ(marked, transformed)
        << "transformed weights exist exactly for Winograd roots";
    return marked;
  };
  EXPECT_TRUE(compile({32, 14, 14, 32, 1}, "x86_64", true));
  EXPECT_FALSE(compile({32, 14, 14, 32, 1}, "x86_64", false));
  EXPECT_FALSE(compile({32, 14, 14, 32, 1}, "armv7em", true));
  EXPECT_FALSE(compile({32, 14, 14, 16, 1}, "x86_64", true));
  EXPECT_FALSE(compile({16, 14, 14, 32, 1}, "x86_64", true));
}

// Weights that another convolution (stride 2: the packed path) also reads
// stay for that reader; the Winograd one reads its transformed copy.
TEST(WinogradConvTest, SharedWeightsStayForTheirOtherReader) {
  Case t = {32, 14, 14, 40, 1};
  auto x = randomData(size_t(t.ci) * t.h * t.w, 1);
  auto w = randomData(size_t(t.co) * t.ci * 9, 2);
  auto b = randomData(t.co, 3);
  std::string y = dims({1, t.co, t.oh(), t.ow()});
  std::string text = graphText(t, "relu", w, b);
  text = text.substr(0, text.rfind("  return %y"));
  text += "  %c2 = Conv(%x, %w, %b) {pads = [1, 1, 1, 1], strides = [2, "
          "2]} : tensor<" +
          dims({1, t.co, 7, 7}) + "xf32> loc(\"conv2\")\n  return %y, %c2\n}";
  CompiledGraph c;
  CompileOptions options;
  options.target = "x86_64";
  options.fusion.winograd.minPixels = 1;
  absl::Status s = c.compile(text, options);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 2u);
  // The strided root reads the 3x3 weights (or the packed path's relayout
  // of them, gemm_layout.cpp), not the transformed ones.
  const dispatch::DispatchProgram &d = c.program();
  int winograd = 0;
  for (size_t r = 0; r < 2; ++r) {
    const structured::StructuredOp &root = d.program.ops[d.regions[r].ops[0]];
    bool wino = winogradOf(c, r) != nullptr;
    winograd += wino;
    for (const structured::OperandAccess &in : root.inputs) {
      const structured::TensorInfo &tensor = d.program.tensors[in.tensor];
      if (tensor.constant && tensor.type.numElements() >= t.co * t.ci * 9) {
        EXPECT_EQ(tensor.name.find("_wino") != std::string::npos, wino)
            << tensor.name;
      }
    }
  }
  EXPECT_EQ(winograd, 1);
  std::vector<std::vector<float>> out = c.run({x});
  ASSERT_EQ(out.size(), 2u);
  std::vector<double> magnitude;
  std::vector<double> want = reference(t, x, w, b, {}, magnitude);
  ASSERT_EQ(out[0].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(out[0][i], want[i], 2e-6 * (1 + magnitude[i])) << i;
  }
  // The strided convolution: output (m, oh, ow) reads rows 2 oh - 1 + kh.
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < 7; ++oh) {
      for (int ow = 0; ow < 7; ++ow) {
        double acc = b[m], mag = std::fabs(b[m]);
        for (int ci = 0; ci < t.ci; ++ci) {
          for (int kh = 0; kh < 3; ++kh) {
            for (int kw = 0; kw < 3; ++kw) {
              int ih = 2 * oh - 1 + kh, iw = 2 * ow - 1 + kw;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              double term = double(x[(size_t(ci) * t.h + ih) * t.w + iw]) *
                            w[((size_t(m) * t.ci + ci) * 3 + kh) * 3 + kw];
              acc += term;
              mag += std::fabs(term);
            }
          }
        }
        size_t at = (size_t(m) * 7 + oh) * 7 + ow;
        ASSERT_NEAR(out[1][at], acc, 2e-6 * (1 + mag)) << at;
      }
    }
  }
}

// Scalar targets keep the 3x3 weights and the packed path: the Winograd
// decision is made for the target at fusion, and a program fused for a
// vector target cannot be built for a scalar one (INTERNAL, not a silent
// wrong answer).
TEST(WinogradConvTest, ProgramFusedForVectorsFailsOnScalarTarget) {
  Case t = {32, 14, 14, 32, 1};
  std::vector<float> w(size_t(t.co) * t.ci * 9, 0.5f), b(t.co, 0.25f);
  std::string text = graphText(t, "relu", w, b);
  auto d = testing::lowerGraphText(text, "wino",
                                   structured::FusionOptions{16, 6, 2});
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_TRUE(d->program.ops[d->regions[0].ops[0]].winograd.has_value());
  auto target = resolveCpuTarget("armv7em");
  ASSERT_TRUE(target.ok());
  LibraryOptions libraryOptions;
  libraryOptions.name = "wino";
  auto bytes = buildExecutableLibrary(*d, *target, libraryOptions);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bytes.status().message().find("Winograd"), std::string::npos)
      << bytes.status().message();
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
