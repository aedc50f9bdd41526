// Runs graphs whose elementwise ops fuse as DAGs, regions that store more
// than their result, per-channel scales folded into weights and the
// collapsed loop nests of the generic path, on the host CPU against
// references computed here in double precision.
#include <algorithm>
#include <cmath>
#include <vector>

#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "gtest/gtest.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using testing::CompiledGraph;
using testing::randomData;

// Number of write bindings of region |r| of |c|'s program.
int writes(const CompiledGraph &c, unsigned r) {
  int n = 0;
  for (const dispatch::Binding &b : c.program().regions[r].bindings) {
    n += b.write;
  }
  return n;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// |got| within |tol| * (1 + |want|) of |want|, element by element.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << "element " << i;
  }
}

// A matrix product over flattened pixels, reshaped to NCHW, then SiLU (two
// readers of the reshape), a per-channel scale and a residual: one region
// with the product as root (odd sizes: 13 output channels, 7x7 pixels).
TEST(ElementwiseFusionTest, ReshapedProductWithSiluScaleAndResidual) {
  CompiledGraph m;
  absl::Status s = m.compile(R"(
graph @pw(%x: tensor<1x6x49xf32>, %w: tensor<13x6xf32>,
          %c: tensor<1x13x1x1xf32>, %r: tensor<1x13x7x7xf32>) {
  %shape = Constant() {value = dense<[1, 13, 7, 7]>} : tensor<4xi64>
  %p = MatMul(%w, %x) : tensor<1x13x49xf32>
  %v = Reshape(%p, %shape) : tensor<1x13x7x7xf32>
  %g = Sigmoid(%v) : tensor<1x13x7x7xf32>
  %y = Mul(%v, %g) : tensor<1x13x7x7xf32>
  %k = Mul(%y, %c) : tensor<1x13x7x7xf32>
  %z = Add(%k, %r) : tensor<1x13x7x7xf32>
  %q = Relu(%z) : tensor<1x13x7x7xf32>
  return %q
})");
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.program().regions.size(), 2u)
      << "product, SiLU, scale and residual in one region; the returned "
         "Relu in another";
  EXPECT_EQ(m.program().regions[0].ops.size(), 5u);
  auto x = randomData(6 * 49, -2, 2, 1);
  auto w = randomData(13 * 6, -1, 1, 2);
  auto c = randomData(13, 0.5, 1.5, 3);
  auto r = randomData(13 * 49, -3, 3, 4);
  std::vector<double> want(13 * 49);
  for (int o = 0; o < 13; ++o) {
    for (int j = 0; j < 49; ++j) {
      double acc = 0;
      for (int k = 0; k < 6; ++k) {
        acc += double(w[o * 6 + k]) * x[k * 49 + j];
      }
      double z = acc * sigmoid(acc) * c[o] + r[o * 49 + j];
      want[o * 49 + j] = std::max(z, 0.0);
    }
  }
  expectClose(m.run({x, w, c, r})[0], want, 1e-5);
}

// A value read inside its region (SiLU) and by another region (pooling) is
// stored by its region besides the region's result.
TEST(ElementwiseFusionTest, RegionStoresValueReadOutside) {
  CompiledGraph m;
  absl::Status s = m.compile(R"(
graph @multi(%x: tensor<1x5x9x11xf32>) {
  %a = Tanh(%x) : tensor<1x5x9x11xf32>
  %g = Sigmoid(%a) : tensor<1x5x9x11xf32>
  %y = Mul(%a, %g) : tensor<1x5x9x11xf32>
  %p = GlobalAveragePool(%a) : tensor<1x5x1x1xf32>
  return %y, %p
})");
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.program().regions.size(), 2u);
  EXPECT_EQ(writes(m, 0), 2) << "%a and %y";
  auto x = randomData(5 * 99, -3, 3, 5);
  std::vector<double> y(5 * 99), p(5, 0);
  for (int c = 0; c < 5; ++c) {
    for (int i = 0; i < 99; ++i) {
      double a = std::tanh(double(x[c * 99 + i]));
      y[c * 99 + i] = a * sigmoid(a);
      p[c] += a / 99;
    }
  }
  auto out = m.run({x});
  expectClose(out[0], y, 2e-6);
  expectClose(out[1], p, 2e-6);
}

// A squeeze-excitation block after a strided 5x5 depthwise convolution with
// a SiLU epilogue: pooling, two small products, a sigmoid, then the
// per-channel scale, which folds into the 1x1 projection's weights (81
// output pixels).
TEST(ElementwiseFusionTest, SqueezeExcitationScaleFoldsIntoProjection) {
  CompiledGraph m;
  absl::Status s = m.compile(R"(
graph @se(%x: tensor<1x12x18x18xf32>, %dw: tensor<12x1x5x5xf32>,
          %db: tensor<12xf32>, %w1: tensor<3x12xf32>, %w2: tensor<12x3xf32>,
          %wp: tensor<7x12x1x1xf32>) {
  %d = Conv(%x, %dw, %db) {pads = [2, 2, 2, 2], strides = [2, 2], group = 12} : tensor<1x12x9x9xf32> loc("dw")
  %g = Sigmoid(%d) : tensor<1x12x9x9xf32>
  %a = Mul(%d, %g) : tensor<1x12x9x9xf32>
  %p = GlobalAveragePool(%a) : tensor<1x12x1x1xf32>
  %shape2 = Constant() {value = dense<[1, 12]>} : tensor<2xi64>
  %pf = Reshape(%p, %shape2) : tensor<1x12xf32>
  %w1t = Transpose(%w1) {perm = [1, 0]} : tensor<12x3xf32>
  %h = MatMul(%pf, %w1t) : tensor<1x3xf32>
  %hr = Relu(%h) : tensor<1x3xf32>
  %w2t = Transpose(%w2) {perm = [1, 0]} : tensor<3x12xf32>
  %e = MatMul(%hr, %w2t) : tensor<1x12xf32>
  %es = Sigmoid(%e) : tensor<1x12xf32>
  %shape4 = Constant() {value = dense<[1, 12, 1, 1]>} : tensor<4xi64>
  %s4 = Reshape(%es, %shape4) : tensor<1x12x1x1xf32>
  %scaled = Mul(%a, %s4) : tensor<1x12x9x9xf32>
  %y = Conv(%scaled, %wp) : tensor<1x7x9x9xf32> loc("project")
  return %y
})");
  ASSERT_TRUE(s.ok()) << s.message();
  const auto &prog = m.program().program;
  int projections = 0;
  for (const auto &op : prog.ops) {
    if (op.nodeName == "project") {
      ++projections;
      EXPECT_NE(prog.tensors[op.inputs[1].tensor].name, "wp")
          << "the projection reads scaled weights";
    }
  }
  EXPECT_EQ(projections, 1);
  auto x = randomData(12 * 18 * 18, -2, 2, 6);
  auto dw = randomData(12 * 25, -0.5, 0.5, 7);
  auto db = randomData(12, -0.5, 0.5, 8);
  auto w1 = randomData(3 * 12, -1, 1, 9);
  auto w2 = randomData(12 * 3, -1, 1, 10);
  auto wp = randomData(7 * 12, -1, 1, 11);
  std::vector<double> a(12 * 81), pool(12, 0);
  for (int c = 0; c < 12; ++c) {
    for (int i = 0; i < 9; ++i) {
      for (int j = 0; j < 9; ++j) {
        double acc = db[c];
        for (int u = 0; u < 5; ++u) {
          for (int v = 0; v < 5; ++v) {
            int yi = i * 2 + u - 2, xj = j * 2 + v - 2;
            if (yi >= 0 && yi < 18 && xj >= 0 && xj < 18) {
              acc +=
                  double(dw[c * 25 + u * 5 + v]) * x[(c * 18 + yi) * 18 + xj];
            }
          }
        }
        a[c * 81 + i * 9 + j] = acc * sigmoid(acc);
        pool[c] += a[c * 81 + i * 9 + j] / 81;
      }
    }
  }
  std::vector<double> h(3), scale(12);
  for (int k = 0; k < 3; ++k) {
    double acc = 0;
    for (int c = 0; c < 12; ++c) {
      acc += pool[c] * w1[k * 12 + c];
    }
    h[k] = std::max(acc, 0.0);
  }
  for (int c = 0; c < 12; ++c) {
    double acc = 0;
    for (int k = 0; k < 3; ++k) {
      acc += h[k] * w2[c * 3 + k];
    }
    scale[c] = sigmoid(acc);
  }
  std::vector<double> want(7 * 81, 0);
  for (int o = 0; o < 7; ++o) {
    for (int i = 0; i < 81; ++i) {
      for (int c = 0; c < 12; ++c) {
        want[o * 81 + i] += double(wp[o * 12 + c]) * a[c * 81 + i] * scale[c];
      }
    }
  }
  expectClose(m.run({x, dw, db, w1, w2, wp})[0], want, 2e-5);
}

// Broadcasts and reductions over whole planes run as single loops over the
// plane (7x7 = 49, 5x56x56 reduced per channel) and several channels per
// workgroup; a padded read keeps the loops apart.
TEST(ElementwiseFusionTest, CollapsedPlanesMatchReference) {
  CompiledGraph m;
  absl::Status s = m.compile(R"(
graph @planes(%x: tensor<1x13x7x7xf32>, %s: tensor<1x13x1x1xf32>,
              %b: tensor<1x1x7x1xf32>, %u: tensor<1x5x56x56xf32>,
              %v: tensor<1x40x14x14xf32>, %t: tensor<1x40x1x1xf32>) {
  %y = Mul(%x, %s) : tensor<1x13x7x7xf32>
  %z = Add(%y, %b) : tensor<1x13x7x7xf32>
  %p = GlobalAveragePool(%u) : tensor<1x5x1x1xf32>
  %axes = Constant() {value = dense<[2, 3]>} : tensor<2xi64>
  %m = ReduceMax(%x, %axes) {keepdims = 1} : tensor<1x13x1x1xf32>
  %pads = Constant() {value = dense<[0, 0, 1, 1, 0, 0, 1, 1]>} : tensor<8xi64>
  %q = Pad(%x, %pads) : tensor<1x13x9x9xf32>
  %n = Mul(%v, %t) : tensor<1x40x14x14xf32>
  return %z, %p, %m, %q, %n
})");
  ASSERT_TRUE(s.ok()) << s.message();
  const dispatch::DispatchRegion &last = m.program().regions.back();
  EXPECT_EQ(last.workgroupCount[2], 2) << "20 channels of 14x14 per workgroup";
  auto x = randomData(13 * 49, -2, 2, 12);
  auto sc = randomData(13, -1, 1, 13);
  auto b = randomData(7, -1, 1, 14);
  auto u = randomData(5 * 3136, -1, 1, 15);
  std::vector<double> z(13 * 49), p(5, 0), mx(13, -INFINITY), q(13 * 81, 0);
  for (int c = 0; c < 13; ++c) {
    for (int i = 0; i < 7; ++i) {
      for (int j = 0; j < 7; ++j) {
        double v = x[c * 49 + i * 7 + j];
        z[c * 49 + i * 7 + j] = v * sc[c] + b[i];
        mx[c] = std::max(mx[c], v);
        q[c * 81 + (i + 1) * 9 + j + 1] = v;
      }
    }
  }
  for (int c = 0; c < 5; ++c) {
    for (int i = 0; i < 3136; ++i) {
      p[c] += u[c * 3136 + i] / 3136.0;
    }
  }
  auto v = randomData(40 * 196, -2, 2, 16);
  auto t = randomData(40, -2, 2, 17);
  std::vector<double> n(40 * 196);
  for (int i = 0; i < 40 * 196; ++i) {
    n[i] = double(v[i]) * t[i / 196];
  }
  auto out = m.run({x, sc, b, u, v, t});
  expectClose(out[4], n, 1e-6);
  expectClose(out[0], z, 1e-6);
  expectClose(out[1], p, 1e-5);
  expectClose(out[2], mx, 0);
  expectClose(out[3], q, 0);
}

// exp and sigmoid over their whole range, in vector loops (a long row) and
// the scalar remainder: relative error of exp within 4 ulp where the result
// is a normal float above 2.4e-38; absolute error of sigmoid 1e-6; no NaN
// for finite inputs.
TEST(ElementwiseFusionTest, ExpAndSigmoidOverTheirRange) {
  CompiledGraph m;
  absl::Status s = m.compile(R"(
graph @range(%x: tensor<2001xf32>) {
  %e = Exp(%x) : tensor<2001xf32>
  %s = Sigmoid(%x) : tensor<2001xf32>
  return %e, %s
})");
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<float> x(2001);
  for (int i = 0; i < 2001; ++i) {
    x[i] = -100.0f + 0.1f * i;
  }
  x[0] = -1e30f;
  x[1] = 88.7f;
  x[2] = -86.6f;
  x[2000] = 1e30f;
  auto out = m.run({x});
  for (int i = 0; i < 2001; ++i) {
    double e = std::exp(double(x[i]));
    ASSERT_FALSE(std::isnan(out[0][i]) || std::isnan(out[1][i])) << x[i];
    if (x[i] >= -86.6f && x[i] <= 88.7f) {
      EXPECT_NEAR(out[0][i], e, 4.8e-7 * e) << "exp(" << x[i] << ")";
    } else if (x[i] < -86.6f) {
      EXPECT_LT(out[0][i], 2.5e-38f) << "exp(" << x[i] << ")";
    }
    EXPECT_NEAR(out[1][i], sigmoid(x[i]), 1e-6) << "sigmoid(" << x[i] << ")";
  }
}

} // namespace
} // namespace osprey::compiler::llvm_cpu
