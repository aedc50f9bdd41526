// Runs 1x1 expansions fused into the depthwise convolution that reads them
// (the expansion computed row by row inside the depthwise code, see
// structured::fuseAndTile and depthwise_conv.h) on AVX-512 (host, when the
// CPU has it), AVX2 (x86_64) and scalar code, against references computed
// here in double precision, and checks that the fused path was taken.
#include <algorithm>
#include <cmath>
#include <string>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"
#include "llvm/Support/CommandLine.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompileOptions;
using testing::CompiledGraph;
using testing::dims;
using testing::randomData;

// Expansion ci -> co (1x1, bias, then relu6 or SiLU), then a k x k
// depthwise convolution with |stride| and |pad|, bias and relu6.
struct Case {
  int ci, h, w, co, k, stride, pad;
  bool silu = false;
  int oh() const { return (h + 2 * pad - k) / stride + 1; }
  int ow() const { return (w + 2 * pad - k) / stride + 1; }
};

std::string graphText(const Case &t) {
  std::string e = "tensor<" + dims({1, t.co, t.h, t.w}) + "xf32>";
  std::string y = "tensor<" + dims({1, t.co, t.oh(), t.ow()}) + "xf32>";
  std::string p = std::to_string(t.pad), s = std::to_string(t.stride);
  std::string text =
      "graph @block(%x: tensor<" + dims({1, t.ci, t.h, t.w}) +
      "xf32>, %we: tensor<" + dims({t.co, t.ci, 1, 1}) +
      "xf32>, %be: tensor<" + std::to_string(t.co) + "xf32>, %wd: tensor<" +
      dims({t.co, 1, t.k, t.k}) + "xf32>, %bd: tensor<" +
      std::to_string(t.co) +
      "xf32>, %lo: tensor<f32>, %hi: tensor<f32>) {\n"
      "  %e = Conv(%x, %we, %be) {pads = [0, 0, 0, 0], strides = [1, 1]} : " +
      e + " loc(\"expand\")\n";
  if (t.silu) {
    text += "  %sg = Sigmoid(%e) : " + e + "\n  %a = Mul(%e, %sg) : " + e + "\n";
  } else {
    text += "  %a = Clip(%e, %lo, %hi) : " + e + "\n";
  }
  text += "  %d = Conv(%a, %wd, %bd) {pads = [" + p + ", " + p + ", " + p +
          ", " + p + "], strides = [" + s + ", " + s +
          "], group = " + std::to_string(t.co) + "} : " + y +
          " loc(\"dw\")\n  %y = Clip(%d, %lo, %hi) : " + y +
          "\n  return %y\n}";
  return text;
}

std::vector<float> reference(const Case &t, const std::vector<float> &x,
                             const std::vector<float> &we,
                             const std::vector<float> &be,
                             const std::vector<float> &wd,
                             const std::vector<float> &bd) {
  size_t plane = size_t(t.h) * t.w;
  std::vector<double> a(size_t(t.co) * plane);
  for (int m = 0; m < t.co; ++m) {
    for (size_t q = 0; q < plane; ++q) {
      double v = be[m];
      for (int c = 0; c < t.ci; ++c) {
        v += double(we[size_t(m) * t.ci + c]) * x[c * plane + q];
      }
      a[m * plane + q] =
          t.silu ? v / (1 + std::exp(-v)) : std::min(std::max(v, 0.0), 6.0);
    }
  }
  std::vector<float> y(size_t(t.co) * t.oh() * t.ow());
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double v = bd[m];
        for (int kh = 0; kh < t.k; ++kh) {
          for (int kw = 0; kw < t.k; ++kw) {
            int ih = oh * t.stride + kh - t.pad, iw = ow * t.stride + kw - t.pad;
            if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
              continue;
            }
            v += a[m * plane + size_t(ih) * t.w + iw] *
                 wd[(size_t(m) * t.k + kh) * t.k + kw];
          }
        }
        y[(size_t(m) * t.oh() + oh) * t.ow() + ow] =
            float(std::min(std::max(v, 0.0), 6.0));
      }
    }
  }
  return y;
}

struct Settings {
  unsigned vectorWidth = 0;   // 1: the embedded targets' scalar code
  unsigned maxScratch = 0;    // 0: the target's default
  unsigned planes = 0;        // planes computed together (0: the default)
  bool loop = true;           // the reduction as a loop (else unrolled)
};

void check(const Case &t, const char *target, const Settings &settings = {}) {
  SCOPED_TRACE(graphText(t) + "\ntarget " + target + " width " +
               std::to_string(settings.vectorWidth) + " scratch " +
               std::to_string(settings.maxScratch) + " planes " +
               std::to_string(settings.planes));
  CompileOptions options;
  options.target = target;
  // Small maps qualify too (by default only maps of 28 columns or more do,
  // 56 with a stride or a SiLU).
  structured::DepthwisePrologueOptions &fuse = options.fusion.depthwisePrologue;
  fuse.minWidth = fuse.minStridedWidth = fuse.mathMinWidth = 1;
  DepthwiseOptions &tuning = options.codegen.depthwise;
  tuning.vectorWidth = settings.vectorWidth;
  tuning.prologueMaxScratch = settings.maxScratch;
  tuning.maxScratch = settings.maxScratch;
  tuning.prologuePlanes = settings.planes;
  tuning.prologueLoop = settings.loop;
  CompiledGraph c;
  absl::Status s = c.compile(graphText(t), options);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u)
      << "the expansion runs inside the depthwise region";
  EXPECT_FALSE(c.program().regions[0].prologue.empty());
  EXPECT_NE(c.ir().find("dw_prologue_row"), std::string::npos)
      << "the depthwise code computes the expansion's rows";
  auto x = randomData(size_t(t.ci) * t.h * t.w, 1);
  auto we = randomData(size_t(t.co) * t.ci, 2);
  auto be = randomData(t.co, 3);
  auto wd = randomData(size_t(t.co) * t.k * t.k, 4);
  auto bd = randomData(t.co, 5);
  std::vector<float> got = c.run({x, we, be, wd, bd, {0.0f}, {6.0f}})[0];
  std::vector<float> want = reference(t, x, we, be, wd, bd);
  ASSERT_EQ(got.size(), want.size());
  int wrong = 0;
  for (size_t i = 0; i < got.size() && wrong < 5; ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i])))) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want "
                    << want[i];
      ++wrong;
    }
  }
}

// MobileNetV2 / EfficientNet block shapes at reduced channel counts, and odd
// ones: maps of 7, 14, 15, 28, 56; 3x3 and 5x5 windows, strides 1 and 2;
// channel counts that are no multiple of a vector or of the planes
// computed together.
const Case kShapes[] = {
    {16, 56, 56, 24, 3, 2, 1}, // stride 2 on a 56-wide map
    {24, 56, 56, 20, 3, 1, 1}, // stride 1, rows of 3.5 vectors
    {12, 15, 15, 20, 5, 2, 2}, // odd map, 5x5, stride 2
    {8, 14, 14, 13, 5, 1, 2},  // 14x14 5x5, 13 channels
    {16, 7, 7, 10, 3, 1, 1},   // 7x7: flattened rows, one block
    {40, 28, 28, 12, 5, 1, 2}, // 28x28 5x5, 40 input channels
    {5, 9, 30, 6, 3, 2, 1},    // non-square, 5 input channels
};

TEST(DepthwisePrologueTest, HostMatchesReference) {
  for (const Case &t : kShapes) {
    check(t, "host");
  }
}

TEST(DepthwisePrologueTest, Avx2MatchesReference) {
  for (const Case &t : kShapes) {
    check(t, "x86_64");
  }
}

TEST(DepthwisePrologueTest, ScalarMatchesReference) {
  Settings scalar;
  scalar.vectorWidth = 1;
  for (const Case &t : kShapes) {
    check(t, "host", scalar);
  }
}

// The expansion's SiLU (x * sigmoid(x)) runs in a separate loop over each
// computed row.
TEST(DepthwisePrologueTest, SiluMatchesReference) {
  for (const char *target : {"host", "x86_64"}) {
    check({16, 28, 28, 12, 5, 2, 2, true}, target);
    check({8, 14, 14, 9, 3, 1, 1, true}, target);
  }
  Settings scalar;
  scalar.vectorWidth = 1;
  check({8, 15, 15, 9, 3, 2, 1, true}, "host", scalar);
}

// A small budget splits planes into blocks of rows (the last one partial)
// whose expansion rows overlap; 3 planes per batch leave the last batch of
// a tile of 8 channels partial; the reduction unrolled instead of a loop.
TEST(DepthwisePrologueTest, RowBlocksAndPartialBatchesMatchReference) {
  Settings small;
  small.maxScratch = 12 * 1024;
  small.planes = 3;
  check({16, 56, 56, 16, 3, 2, 1}, "host", small);
  check({8, 33, 33, 16, 3, 1, 1}, "host", small);
  check({8, 33, 33, 10, 5, 1, 2}, "x86_64", small);
  small.vectorWidth = 1;
  small.maxScratch = 4 * 1024;
  check({8, 33, 33, 16, 3, 2, 1}, "host", small);
  Settings one;
  one.planes = 1;
  check({16, 56, 56, 8, 3, 2, 1}, "host", one);
  Settings unrolled;
  unrolled.loop = false;
  check({24, 28, 28, 16, 3, 1, 1}, "host", unrolled);
}

// The decision's thresholds at their defaults: 28-wide maps fuse with
// stride 1, strided ones from 28 columns on vector targets and 56 on scalar
// ones, SiLU from 56; 14-wide maps do not fuse.
TEST(DepthwisePrologueTest, DefaultThresholds) {
  auto regions = [](const Case &t, const char *target = "host") {
    CompileOptions options;
    options.target = target;
    options.load = llvm::StringRef(target) == "host";
    CompiledGraph c;
    absl::Status s = c.compile(graphText(t), options);
    EXPECT_TRUE(s.ok()) << s.message();
    return c.program().regions.size();
  };
  EXPECT_EQ(regions({16, 28, 28, 24, 3, 1, 1}), 1u);
  EXPECT_EQ(regions({16, 28, 28, 24, 3, 2, 1}), 1u);
  EXPECT_EQ(regions({16, 28, 28, 24, 3, 2, 1}, "armv7em"), 2u);
  EXPECT_EQ(regions({16, 56, 56, 24, 3, 2, 1}, "armv7em"), 1u);
  EXPECT_EQ(regions({16, 56, 56, 24, 3, 2, 1}), 1u);
  EXPECT_EQ(regions({16, 14, 14, 24, 3, 1, 1}), 2u);
  EXPECT_EQ(regions({16, 56, 56, 24, 3, 2, 1, true}), 1u);
  EXPECT_EQ(regions({16, 28, 28, 24, 3, 1, 1, true}), 2u);
}

// Nothing else computes a fused expansion: when its rows cannot fit the
// scratch budget the compile fails with UNIMPLEMENTED instead of emitting
// code without it.
TEST(DepthwisePrologueTest, RowsOverBudgetAreUnimplemented) {
  CompileOptions options;
  options.codegen.depthwise.maxScratch = 256;
  CompiledGraph c;
  absl::Status s = c.compile(graphText({16, 56, 56, 24, 3, 1, 1}), options);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s.message();
  EXPECT_NE(s.message().find("scratch budget"), std::string::npos)
      << s.message();
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
