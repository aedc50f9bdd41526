// Hand-computed checks of the npu-v1 reference kernels.
#include "drivers/npu/reference/reference.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace osprey::drivers::npu::reference {
namespace {

TEST(ReferenceTest, RequantizeRoundingRules) {
  // Doubling high multiply: (x*m + nudge) / 2^31, truncating division.
  EXPECT_EQ(Requantize(100, 1 << 30, 0), 50);
  EXPECT_EQ(Requantize(3, 1 << 30, 0), 2);    // 1.5 -> 2
  EXPECT_EQ(Requantize(-3, 1 << 30, 0), -1);  // -1.5 -> -1 (nudge 1 - 2^30)
  // Rounding right shift: half away from zero.
  EXPECT_EQ(Requantize(-6, 1 << 30, -1), -2);  // -3 / 2 = -1.5 -> -2
  EXPECT_EQ(Requantize(5, 1 << 30, -1), 2);    // 2.5 -> 3, then 1.5 -> 2
  EXPECT_EQ(Requantize(4, 1 << 30, -2), 1);    // 2 / 4 = 0.5 -> 1
  EXPECT_EQ(Requantize(-4, 1 << 30, -2), -1);  // -0.5 -> -1
  EXPECT_EQ(Requantize(-3, 1 << 30, -2), 0);   // -1.5 -> -1, then -0.25 -> 0
  // Identity: multiplier 0.5, shift +1.
  EXPECT_EQ(Requantize(-12345, 1 << 30, 1), -12345);
  // Saturating left shift, then the high multiply.
  EXPECT_EQ(Requantize(1 << 30, 1 << 30, 2), 1 << 30);
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(Requantize(kMax, kMax, 0), kMax - 1);
  EXPECT_EQ(Requantize(kMin, kMin, 0), kMax);  // The one saturating product.
  EXPECT_EQ(Requantize(7, 0, 0), 0);
}

TEST(ReferenceTest, Conv2DHandComputed) {
  // 3x3x1 input, 2x2 kernel of ones, stride 1, no padding -> 2x2 sums.
  const int8_t input[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int8_t weights[4] = {1, 1, 1, 1};
  const int32_t bias[1] = {10};
  ConvParams p;
  p.in_h = p.in_w = 3;
  p.out_h = p.out_w = 2;
  p.kernel_h = p.kernel_w = 2;
  int32_t out[4];
  Conv2DInt32(p, input, weights, bias, out);
  EXPECT_EQ(out[0], 10 + 1 + 2 + 4 + 5);
  EXPECT_EQ(out[1], 10 + 2 + 3 + 5 + 6);
  EXPECT_EQ(out[2], 10 + 4 + 5 + 7 + 8);
  EXPECT_EQ(out[3], 10 + 5 + 6 + 8 + 9);

  // Same with input zero point 1, padding 1 on top/left (padding counts as
  // the zero point, i.e. contributes 0), requantized by 0.5 with ReLU.
  p.input_zp = 1;
  p.pad_top = p.pad_left = 1;
  p.output_zp = -5;
  const int32_t mult[1] = {1 << 30}, shift[1] = {0}, zero_bias[1] = {-40};
  int8_t q[4];
  Conv2D(p, input, weights, {zero_bias, mult, shift}, /*relu=*/true, q);
  // out(0,0) covers only input(0,0): (1-1) = 0 -> -40 -> -20 + (-5) = -25,
  // then ReLU clamps at the zero point -5.
  EXPECT_EQ(q[0], -5);
  // out(1,1) covers (0,0),(0,1),(1,0),(1,1): 0+1+3+4 = 8 -> -32 -> -16 - 5.
  EXPECT_EQ(q[3], -5);
  Conv2D(p, input, weights, {zero_bias, mult, shift}, /*relu=*/false, q);
  EXPECT_EQ(q[0], -25);
  EXPECT_EQ(q[3], -21);
}

TEST(ReferenceTest, DepthwiseAndMatMul) {
  // Two channels, 1x2 kernel: channel 0 weights {1, 2}, channel 1 {3, -1}.
  const int8_t input[4] = {10, 20, 30, 40};  // 1x2x2: pixel0 (10,20), pixel1 (30,40)
  const int8_t weights[4] = {1, 3, 2, -1};   // [kw][c]
  const int32_t bias[2] = {0, 1};
  ConvParams p;
  p.in_h = 1, p.in_w = 2, p.in_c = 2;
  p.out_h = 1, p.out_w = 1, p.out_c = 2;
  p.kernel_w = 2;
  int32_t out[2];
  DepthwiseConv2DInt32(p, input, weights, bias, out);
  EXPECT_EQ(out[0], 10 * 1 + 30 * 2);
  EXPECT_EQ(out[1], 1 + 20 * 3 + 40 * -1);

  const int8_t a[6] = {1, 2, 3, 4, 5, 6};   // 2x3
  const int8_t w[6] = {1, 0, -1, 2, 2, 2};  // 2x3 (n x k)
  const int32_t b[2] = {0, 100};
  MatMulParams mp;
  mp.m = 2, mp.k = 3, mp.n = 2;
  int32_t mm[4];
  MatMulInt32(mp, a, w, b, mm);
  EXPECT_EQ(mm[0], 1 - 3);
  EXPECT_EQ(mm[1], 100 + 12);
  EXPECT_EQ(mm[2], 4 - 6);
  EXPECT_EQ(mm[3], 100 + 30);
}

TEST(ReferenceTest, PoolingAndElementwise) {
  const int8_t input[4] = {1, 2, -1, -2};  // 2x2x1
  ConvParams p;
  p.in_h = p.in_w = 2;
  p.out_h = 1, p.out_w = 2;
  p.kernel_h = 1, p.kernel_w = 2;
  p.stride_w = 2;
  p.pad_left = 1;  // First window covers (pad, x0); second (x1, pad).
  int8_t out[2];
  MaxPool(p, input, out);
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 2);
  p.out_h = 2, p.out_w = 1, p.pad_left = 0;
  AvgPool(p, input, out);
  EXPECT_EQ(out[0], 2);   // 1.5 -> 2
  EXPECT_EQ(out[1], -2);  // -1.5 -> -2

  Rescale r;
  r.input_zp = 1;
  r.output_zp = 3;
  int8_t y[4];
  Relu(r, input, 4, y);
  EXPECT_EQ(y[0], 3);  // max(1 - 1, 0) + 3
  EXPECT_EQ(y[1], 4);
  EXPECT_EQ(y[2], 3);
  Abs(r, input, 4, y);
  EXPECT_EQ(y[2], 5);  // |-1 - 1| + 3
  EXPECT_EQ(y[3], 6);
  LeakyRelu(r, /*alpha_multiplier=*/1 << 30, /*alpha_shift=*/-1, input, 4, y);
  EXPECT_EQ(y[1], 4);   // 1 + 3
  EXPECT_EQ(y[3], 2);   // -3 * 0.25 = -0.75 -> -1, + 3
  Minimum(input, nullptr, 0, -128, 127, 4, y);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[3], -2);
  const int8_t other[4] = {5, -5, 5, -5};
  Maximum(input, other, 0, -128, 1, 4, y);
  EXPECT_EQ(y[0], 1);  // max 5 clamped to 1
  EXPECT_EQ(y[1], 1);  // max(2, -5) = 2 clamped to 1

  AddParams ap;
  ap.left_shift = 0;
  int8_t s[4];
  AddInt8(ap, input, other, 4, s);  // identity rescales
  EXPECT_EQ(s[0], 6);
  EXPECT_EQ(s[3], -7);

  const int32_t big[2] = {std::numeric_limits<int32_t>::max(), -5};
  const int32_t one[2] = {1, 7};
  int32_t sum[2];
  AddInt32(big, one, 2, sum);
  EXPECT_EQ(sum[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(sum[1], 2);
}

TEST(ReferenceTest, RescaleAndMul) {
  // Rescale by 0.5 from zero point 10 to zero point -3, clamped at 0 above.
  Rescale r;
  r.input_zp = 10;
  r.output_zp = -3;
  r.multiplier = 1 << 30;
  r.shift = 0;
  r.act_max = 0;
  const int8_t x[4] = {10, 15, 13, -128};
  int8_t y[4];
  RescaleInt8(r, x, 4, y);
  EXPECT_EQ(y[0], -3);   // 0
  EXPECT_EQ(y[1], 0);    // 5 * 0.5 = 2.5 -> 3 (half away from zero), clamped
  EXPECT_EQ(y[2], -1);   // 1.5 -> 2
  EXPECT_EQ(y[3], -72);  // -138 * 0.5 = -69
  // (a - 1) * (b + 2) * 0.25 + 5, saturated.
  MulParams p;
  p.a_zp = 1;
  p.b_zp = -2;
  p.output_zp = 5;
  p.multiplier = 1 << 30;
  p.shift = -1;
  const int8_t a[3] = {3, 127, -128}, b[3] = {2, 127, 127};
  int8_t m[3];
  MulInt8(p, a, b, 3, m);
  EXPECT_EQ(m[0], 5 + 2);  // 2 * 4 / 4
  EXPECT_EQ(m[1], 127);    // 126 * 129 / 4 saturates
  EXPECT_EQ(m[2], -128);
}

}  // namespace
}  // namespace osprey::drivers::npu::reference
