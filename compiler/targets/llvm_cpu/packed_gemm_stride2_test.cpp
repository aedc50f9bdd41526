// Stride-2 convolutions on the packed matrix-product path: the interior of
// each packed row is read with contiguous double-width loads and a shuffle
// keeping the even elements (packed_gemm.cpp, packStride2Interior). Covers
// row interiors shorter than, equal to and longer than a vector, 1x1, 3x3
// and 7x7 windows, with AVX-512 (host) and AVX2 (x86_64) vector widths.
#include <algorithm>
#include <cmath>
#include <string>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::CompileOptions;
using testing::randomData;

// A batch-1 square-kernel convolution plus ReLU with equal padding.
struct Case {
  int ci, h, w, co, k, stride, pad;
  int oh() const { return (h + 2 * pad - k) / stride + 1; }
  int ow() const { return (w + 2 * pad - k) / stride + 1; }
};

std::string graphOf(const Case &t) {
  auto s = [](int v) { return std::to_string(v); };
  std::string y = "1x" + s(t.co) + "x" + s(t.oh()) + "x" + s(t.ow());
  std::string p = s(t.pad);
  return "graph @conv(%x: tensor<1x" + s(t.ci) + "x" + s(t.h) + "x" + s(t.w) +
         "xf32>, %w: tensor<" + s(t.co) + "x" + s(t.ci) + "x" + s(t.k) + "x" +
         s(t.k) + "xf32>, %b: tensor<" + s(t.co) +
         "xf32>) {\n  %c = Conv(%x, %w, %b) {pads = [" + p + ", " + p + ", " +
         p + ", " + p + "], strides = [" + s(t.stride) + ", " + s(t.stride) +
         "]} : tensor<" + y + "xf32> loc(\"conv\")\n  %y = Relu(%c) : tensor<" +
         y + "xf32>\n  return %y\n}";
}

std::vector<float> reference(const Case &t, const std::vector<float> &x,
                             const std::vector<float> &w,
                             const std::vector<float> &b) {
  std::vector<float> y(t.co * t.oh() * t.ow());
  for (int m = 0; m < t.co; ++m) {
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        double acc = b[m];
        for (int c = 0; c < t.ci; ++c) {
          for (int kh = 0; kh < t.k; ++kh) {
            for (int kw = 0; kw < t.k; ++kw) {
              int ih = oh * t.stride + kh - t.pad;
              int iw = ow * t.stride + kw - t.pad;
              if (ih < 0 || ih >= t.h || iw < 0 || iw >= t.w) {
                continue;
              }
              acc += double(x[(c * t.h + ih) * t.w + iw]) *
                     w[((m * t.ci + c) * t.k + kh) * t.k + kw];
            }
          }
        }
        y[(m * t.oh() + oh) * t.ow() + ow] = float(std::max(acc, 0.0));
      }
    }
  }
  return y;
}

void check(const Case &t, const char *target) {
  SCOPED_TRACE(graphOf(t) + " on " + target);
  CompiledGraph c;
  absl::Status s = c.compile(graphOf(t), target);
  ASSERT_TRUE(s.ok()) << s.message();
  auto x = randomData(t.ci * t.h * t.w, 1);
  auto w = randomData(t.co * t.ci * t.k * t.k, 2);
  auto b = randomData(t.co, 3);
  std::vector<float> got = c.run({x, w, b})[0];
  std::vector<float> want = reference(t, x, w, b);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
        << "element " << i;
  }
}

const Case kCases[] = {
    // Downsample-like 1x1 without padding: the whole row is interior; 15
    // outputs (one element short of a 16-lane vector plus one) and 29.
    {16, 30, 30, 24, 1, 2, 0},
    {8, 57, 57, 16, 1, 2, 0},
    // 3x3 padding 1: 17 outputs (one 16-lane vector at most), and an odd
    // input width whose last window reads the last input column.
    {4, 34, 34, 8, 3, 2, 1},
    {5, 35, 35, 6, 3, 2, 1},
    // The 7x7 padding-3 stem shape with 3 channels.
    {3, 70, 70, 16, 7, 2, 3},
};

TEST(PackedGemmStride2Test, MatchesReferenceOnHost) {
  for (const Case &t : kCases) {
    check(t, "host");
  }
}

TEST(PackedGemmStride2Test, MatchesReferenceWithAvx2) {
  for (const Case &t : kCases) {
    check(t, "x86_64");
  }
}

// The packing of a stride-2 row reads pairs of vectors and keeps the even
// lanes instead of gathering: for AVX2 (8 lanes) a <16 x float> shuffle.
TEST(PackedGemmStride2Test, Avx2PackingUsesEvenLaneShuffles) {
  CompiledGraph c;
  CompileOptions options;
  options.target = "x86_64";
  options.load = false;
  absl::Status s = c.compile(graphOf({3, 66, 66, 8, 3, 2, 1}), options);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(c.ir().find("shufflevector <16 x float>"), std::string::npos)
      << "no even-lane shuffle in the x86_64 library";
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
