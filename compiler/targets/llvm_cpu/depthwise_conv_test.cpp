// Runs depthwise and grouped convolutions compiled through the padded-plane
// path (depthwise_conv.h) on AVX-512 (host, when the CPU has it), AVX2
// (x86_64) and scalar code (the embedded targets' code, forced on the host)
// against references computed here.
#include <algorithm>
#include <cmath>
#include <string>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::CompileOptions;
using testing::dims;
using testing::randomData;

// A 2-D convolution (batch 1) with per-axis geometry; co channels in
// |group| groups.
struct Case {
  int ci, h, w, co, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group;
  int oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
};

Case depthwise(int c, int h, int w, int k, int stride, int pad) {
  return {c, h, w, c, k, k, stride, stride, 1, 1, pad, pad, pad, pad, c};
}

// Conv + bias, then |epilogue| ("relu": Relu; "residual": + a tensor of the
// output's shape; "row": + a [1, 1, 1, ow] tensor broadcast over rows).
std::string graphText(const Case &t, const std::string &epilogue) {
  std::string y = dims({1, t.co, t.oh(), t.ow()});
  std::string extra;
  if (epilogue == "residual") {
    extra = ", %r: tensor<" + y + "xf32>";
  } else if (epilogue == "row") {
    extra = ", %r: tensor<" + dims({1, 1, 1, t.ow()}) + "xf32>";
  }
  auto pair = [](int a, int b) {
    return std::to_string(a) + ", " + std::to_string(b);
  };
  std::string text =
      "graph @dw(%x: tensor<" + dims({1, t.ci, t.h, t.w}) +
      "xf32>, %w: tensor<" + dims({t.co, t.ci / t.group, t.kh, t.kw}) +
      "xf32>, %b: tensor<" + std::to_string(t.co) + "xf32>" + extra +
      ") {\n  %c = Conv(%x, %w, %b) {pads = [" + pair(t.pt, t.pl) + ", " +
      pair(t.pb, t.pr) + "], strides = [" + pair(t.sh, t.sw) +
      "], dilations = [" + pair(t.dh, t.dw) +
      "], group = " + std::to_string(t.group) + "} : tensor<" + y +
      "xf32> loc(\"conv\")\n";
  if (epilogue == "relu") {
    text += "  %y = Relu(%c) : tensor<" + y + "xf32>\n";
  } else {
    text += "  %y = Add(%c, %r) : tensor<" + y + "xf32>\n";
  }
  return text + "  return %y\n}";
}

std::vector<float> reference(const Case &t, const std::string &epilogue,
                             const std::vector<float> &x,
                             const std::vector<float> &w,
                             const std::vector<float> &b,
                             const std::vector<float> &r) {
  int cig = t.ci / t.group, cog = t.co / t.group;
  std::vector<float> y(size_t(t.co) * t.oh() * t.ow());
  for (int m = 0; m < t.co; ++m) {
    int g = m / cog;
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double acc = b[m];
        for (int c = 0; c < cig; ++c) {
          for (int kh = 0; kh < t.kh; ++kh) {
            for (int kw = 0; kw < t.kw; ++kw) {
              int ih = oh * t.sh + kh * t.dh - t.pt;
              int iw = ow * t.sw + kw * t.dw - t.pl;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              acc += double(x[(size_t(g * cig + c) * t.h + ih) * t.w + iw]) *
                     w[((size_t(m) * cig + c) * t.kh + kh) * t.kw + kw];
            }
          }
        }
        size_t at = (size_t(m) * t.oh() + oh) * t.ow() + ow;
        if (epilogue == "relu") {
          y[at] = float(std::max(acc, 0.0));
        } else if (epilogue == "residual") {
          y[at] = float(acc + r[at]);
        } else {
          y[at] = float(acc + r[ow]);
        }
      }
    }
  }
  return y;
}

// Compiles |t| for |target| with |tuning|, checks that the depthwise path
// generated the dispatch (its scratch plane is in the IR) and compares with
// the reference.
void check(const Case &t, const char *target,
           const std::string &epilogue = "relu",
           const DepthwiseOptions &tuning = {}) {
  SCOPED_TRACE(graphText(t, epilogue) + "\ntarget " + target);
  CompiledGraph c;
  CompileOptions options;
  options.target = target;
  options.codegen.depthwise = tuning;
  absl::Status s = c.compile(graphText(t, epilogue), options);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u) << "the epilogue is fused";
  EXPECT_NE(c.ir().find("dw_plane"), std::string::npos)
      << "the padded-plane path generated the convolution";
  auto x = randomData(size_t(t.ci) * t.h * t.w, 1);
  auto w = randomData(size_t(t.co) * (t.ci / t.group) * t.kh * t.kw, 2);
  auto b = randomData(t.co, 3);
  std::vector<float> r;
  std::vector<std::vector<float>> inputs = {x, w, b};
  if (epilogue == "residual") {
    r = randomData(size_t(t.co) * t.oh() * t.ow(), 4);
    inputs.push_back(r);
  } else if (epilogue == "row") {
    r = randomData(t.ow(), 4);
    inputs.push_back(r);
  }
  std::vector<float> got = c.run(inputs)[0];
  std::vector<float> want = reference(t, epilogue, x, w, b, r);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
        << "element " << i;
  }
}

// The shapes of MobileNetV2, EfficientNet-B0 and DS-CNN at reduced channel
// counts, plus odd ones: maps of 7 to 40, 3x3 and 5x5 windows, strides 1 and
// 2, channel counts that are no multiple of a vector, non-square maps.
const Case kShapes[] = {
    depthwise(20, 7, 7, 3, 1, 1),  // 7x7, flattened rows, batched planes
    depthwise(13, 7, 7, 5, 1, 2),  // 5x5 window on a 7x7 map
    depthwise(9, 14, 14, 3, 1, 1), // 14x14
    depthwise(7, 14, 14, 5, 2, 2), // 14 -> 7, stride 2, 5x5
    depthwise(5, 15, 15, 3, 2, 1), // odd map with stride 2
    depthwise(3, 40, 40, 3, 2, 1), // wide rows, stride 2
    depthwise(3, 37, 37, 5, 1, 2), // wide odd rows, 5x5
    {6, 25, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6},  // DS-CNN's 25x5 map
    {4, 10, 19, 4, 3, 5, 2, 1, 1, 1, 1, 2, 0, 2, 4}, // asymmetric everything
};

TEST(DepthwiseConvTest, HostMatchesReference) {
  for (const Case &t : kShapes) {
    check(t, "host");
  }
}

TEST(DepthwiseConvTest, Avx2MatchesReference) {
  for (const Case &t : kShapes) {
    check(t, "x86_64");
  }
}

// The embedded targets' scalar code (several outputs per iteration), run on
// the host.
TEST(DepthwiseConvTest, ScalarMatchesReference) {
  DepthwiseOptions scalar;
  scalar.vectorWidth = 1;
  for (const Case &t : kShapes) {
    check(t, "host", "relu", scalar);
  }
}

// A small scratch budget splits planes into blocks of rows (the last one
// partial), re-reading the rows the window needs across block borders.
TEST(DepthwiseConvTest, RowBlocksMatchReference) {
  DepthwiseOptions small;
  small.maxScratch = 2048;
  check(depthwise(3, 33, 33, 3, 1, 1), "host", "relu", small);
  check(depthwise(3, 33, 33, 5, 2, 2), "x86_64", "relu", small);
  small.vectorWidth = 1;
  check(depthwise(3, 33, 33, 3, 2, 1), "host", "relu", small);
}

// Dilation, no padding, a channel multiplier of 2 (two outputs per input
// plane) and groups of two input channels (planes summed into one output).
TEST(DepthwiseConvTest, GroupedAndDilatedMatchReference) {
  for (const char *target : {"host", "x86_64"}) {
    check({3, 21, 21, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3}, target);
    check({4, 18, 18, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 4}, target);
    check({4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4}, target);
    check({8, 12, 12, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4}, target);
  }
}

// Groups of several input channels at row widths that are no multiple of
// a vector, computed row by row: each input channel's pass adds to the
// sums, so a row's vector past its end must not land on the next row's sums
// (it added junk to their first columns), and every sum a pass reads must
// start at the bias-free init (wider rows read sums never initialized).
TEST(DepthwiseConvTest, GroupedRowsKeepToTheirOwnSums) {
  DepthwiseOptions scalar;
  scalar.vectorWidth = 1;
  for (int w : {7, 9, 11, 13, 17, 33}) {
    for (int cpg : {2, 3}) {
      Case t = {2 * cpg, 7, w, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2};
      check(t, "host");
      check(t, "x86_64");
      check(t, "host", "relu", scalar);
    }
  }
  check({6, 7, 9, 6, 3, 3, 1, 1, 2, 2, 1, 1, 1, 1, 2}, "x86_64", "residual");
}

// Epilogues reading other tensors: a residual of the output's layout runs
// over flattened positions; a tensor broadcast along rows keeps the
// row-by-row epilogue.
TEST(DepthwiseConvTest, EpiloguesMatchReference) {
  for (const char *target : {"host", "x86_64"}) {
    check(depthwise(6, 7, 7, 3, 1, 1), target, "residual");
    check(depthwise(4, 14, 14, 3, 2, 1), target, "residual");
    check(depthwise(6, 7, 7, 3, 1, 1), target, "row");
    check(depthwise(3, 30, 30, 3, 1, 1), target, "row");
  }
  DepthwiseOptions scalar;
  scalar.vectorWidth = 1;
  check(depthwise(5, 7, 7, 3, 1, 1), "host", "residual", scalar);
  check(depthwise(5, 7, 7, 3, 1, 1), "host", "row", scalar);
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
