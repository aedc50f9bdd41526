// Runs max pools compiled through the row-interior vector path
// (pool_window.h) on AVX-512 (host, when the CPU has it) and AVX2 (x86_64)
// against references computed here, and checks which pools take the path.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::dims;
using testing::CompileOptions;
using testing::randomData;

// A max pool (batch 1) with per-axis geometry.
struct Pool {
  int c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  bool ceil = false;
  // Whether rows have a vector of interior columns on both x86 targets
  // (the vector path applies).
  bool fast = true;
  int out(int in, int k, int s, int p0, int p1) const {
    int span = in + p0 + p1 - k;
    return (ceil ? (span + s - 1) / s : span / s) + 1;
  }
  int oh() const { return out(h, kh, sh, pt, pb); }
  int ow() const { return out(w, kw, sw, pl, pr); }
};

Pool square(int c, int h, int w, int k, int stride, int pad, bool fast = true) {
  return {c, h, w, k, k, stride, stride, pad, pad, pad, pad, false, fast};
}

// MaxPool, then |epilogue|: "" (none), "relu" or "residual" (+ a tensor of
// the output's shape).
std::string graphText(const Pool &t, const std::string &epilogue) {
  std::string y = dims({1, t.c, t.oh(), t.ow()});
  auto pair = [](int a, int b) {
    return std::to_string(a) + ", " + std::to_string(b);
  };
  std::string text =
      "graph @pool(%x: tensor<" + dims({1, t.c, t.h, t.w}) + "xf32>" +
      (epilogue == "residual" ? ", %r: tensor<" + y + "xf32>" : "") +
      ") {\n  %p = MaxPool(%x) {kernel_shape = [" + pair(t.kh, t.kw) +
      "], pads = [" + pair(t.pt, t.pl) + ", " + pair(t.pb, t.pr) +
      "], strides = [" + pair(t.sh, t.sw) + "]" +
      (t.ceil ? ", ceil_mode = 1" : "") + "} : tensor<" + y +
      "xf32> loc(\"pool\")\n";
  if (epilogue.empty()) {
    return text + "  return %p\n}";
  }
  if (epilogue == "relu") {
    text += "  %y = Relu(%p) : tensor<" + y + "xf32>\n";
  } else {
    text += "  %y = Add(%p, %r) : tensor<" + y + "xf32>\n";
  }
  return text + "  return %y\n}";
}

std::vector<float> reference(const Pool &t, const std::string &epilogue,
                             const std::vector<float> &x,
                             const std::vector<float> &r) {
  std::vector<float> y(size_t(t.c) * t.oh() * t.ow());
  for (int c = 0; c < t.c; ++c) {
    for (int oh = 0; oh < t.oh(); ++oh) {
      for (int ow = 0; ow < t.ow(); ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        for (int kh = 0; kh < t.kh; ++kh) {
          for (int kw = 0; kw < t.kw; ++kw) {
            int ih = oh * t.sh + kh - t.pt;
            int iw = ow * t.sw + kw - t.pl;
            if (ih >= 0 && ih < t.h && iw >= 0 && iw < t.w) {
              m = std::max(m, x[(size_t(c) * t.h + ih) * t.w + iw]);
            }
          }
        }
        size_t at = (size_t(c) * t.oh() + oh) * t.ow() + ow;
        if (epilogue == "relu") {
          m = std::max(m, 0.0f);
        } else if (epilogue == "residual") {
          m += r[at];
        }
        y[at] = m;
      }
    }
  }
  return y;
}

// Compiles |t| for |target|, checks whether the vector path generated the
// dispatch (it marks the function in the IR) and compares with the reference
// exactly (max selects one of its inputs).
void check(const Pool &t, const char *target, const std::string &epilogue) {
  SCOPED_TRACE(graphText(t, epilogue) + "\ntarget " + target);
  CompiledGraph c;
  absl::Status s = c.compile(graphText(t, epilogue), target);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.program().regions.size(), 1u) << "the epilogue is fused";
  EXPECT_EQ(c.ir().find("osprey-pool-window") != std::string::npos, t.fast)
      << "whether the row-interior vector path generated the pool";
  auto x = randomData(size_t(t.c) * t.h * t.w, 1);
  std::vector<float> r;
  std::vector<std::vector<float>> inputs = {x};
  if (epilogue == "residual") {
    r = randomData(size_t(t.c) * t.oh() * t.ow(), 2);
    inputs.push_back(r);
  }
  std::vector<float> got = c.run(inputs)[0];
  std::vector<float> want = reference(t, epilogue, x, r);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "element " << i;
  }
}

// ResNet's 3x3 stride-2 pool at reduced size plus odd shapes: 7x7 maps
// (rows narrower than a vector: the generic path), channel counts that are
// no multiple of a vector, 2x2 windows without padding, asymmetric padding,
// ceil_mode (windows reaching past the input without padding), non-square
// maps, interiors that are no multiple of a vector.
const Pool kShapes[] = {
    square(5, 112, 112, 3, 2, 1),        // ResNet-18's pool, 5 channels
    square(13, 7, 7, 3, 1, 1, false),    // 7x7 map
    square(3, 40, 40, 2, 2, 0),          // 2x2 stride 2
    square(3, 40, 40, 3, 1, 1),          // wide rows, stride 1
    square(3, 37, 41, 5, 2, 2),          // 5x5 window, odd widths, stride 2
    square(2, 70, 70, 3, 2, 0),          // stride 2 without padding
    {3, 33, 35, 3, 3, 2, 1, 1, 2, 0, 0}, // mixed strides, asymmetric pads
    {4, 36, 36, 3, 3, 2, 2, 0, 0, 0, 0, true}, // ceil_mode, 3x3
    {2, 37, 39, 2, 2, 2, 2, 0, 0, 0, 0, true}, // ceil_mode, 2x2
};

TEST(PoolWindowTest, HostMatchesReference) {
  for (const Pool &t : kShapes) {
    check(t, "host", "");
  }
}

TEST(PoolWindowTest, Avx2MatchesReference) {
  for (const Pool &t : kShapes) {
    check(t, "x86_64", "");
  }
}

// The region's fused ops run over the scratch row: an elementwise op and a
// tensor read at the output's index.
TEST(PoolWindowTest, EpiloguesMatchReference) {
  for (const char *target : {"host", "x86_64"}) {
    check(square(6, 60, 60, 3, 2, 1), target, "relu");
    check(square(6, 7, 7, 3, 1, 1, false), target, "residual");
    check(square(17, 56, 56, 3, 2, 1), target, "residual");
  }
}

// Column strides above 2 keep the generic loop nest (still correct).
TEST(PoolWindowTest, Stride3KeepsGenericPath) {
  check(square(3, 60, 60, 3, 3, 1, false), "host", "");
}

// Embedded targets have no vector registers: their pools keep the generic
// loop nest (its scalar code stays within their stack budget).
TEST(PoolWindowTest, ScalarTargetsKeepGenericPath) {
  for (const char *name : {"armv7em", "riscv32"}) {
    SCOPED_TRACE(name);
    CompiledGraph c;
    CompileOptions options;
    options.target = name;
    options.name = "pool";
    options.load = false;
    absl::Status s =
        c.compile(graphText(square(4, 40, 40, 3, 2, 1), ""), options);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(c.ir().find("osprey-pool-window"), std::string::npos);
  }
}

// Options belong to one compilation: turning the path off for one library
// leaves the next one in the same process at the default.
TEST(PoolWindowTest, OptionsApplyToOneCompilation) {
  std::string text = graphText(square(4, 40, 40, 3, 2, 1), "");
  CompileOptions off;
  off.name = "pool";
  off.load = false;
  off.codegen.poolWindow = false;
  CompiledGraph generic;
  ASSERT_TRUE(generic.compile(text, off).ok());
  EXPECT_EQ(generic.ir().find("osprey-pool-window"), std::string::npos);
  CompiledGraph fast;
  ASSERT_TRUE(fast.compile(text, "host").ok());
  EXPECT_NE(fast.ir().find("osprey-pool-window"), std::string::npos);
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
