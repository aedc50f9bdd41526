// Reference implementations of the npu-v1 operations, written for clarity.
#include "drivers/npu/reference/reference.h"

#include <cstdint>
#include <limits>

namespace osprey::drivers::npu::reference {

namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

int32_t SaturateInt32(int64_t v) {
  if (v < kInt32Min) return static_cast<int32_t>(kInt32Min);
  if (v > kInt32Max) return static_cast<int32_t>(kInt32Max);
  return static_cast<int32_t>(v);
}

int32_t Clamp(int64_t v, int32_t lo, int32_t hi) {
  if (v < lo) return lo;
  if (v > hi) return hi;
  return static_cast<int32_t>(v);
}

// round((a * b) / 2^31), ties away from zero; the only overflowing case
// (INT32_MIN * INT32_MIN) saturates.
int32_t DoublingHighMul(int32_t a, int32_t b) {
  if (a == b && a == kInt32Min) return static_cast<int32_t>(kInt32Max);
  int64_t product = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  int64_t nudge = product >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  return static_cast<int32_t>((product + nudge) / (int64_t{1} << 31));
}

// x / 2^exponent rounded to nearest, ties away from zero.
int32_t RoundingShiftRight(int32_t x, int32_t exponent) {
  if (exponent == 0) return x;
  int64_t mask = (int64_t{1} << exponent) - 1;
  int64_t remainder = static_cast<int64_t>(x) & mask;
  int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  int64_t floor = static_cast<int64_t>(x) >> exponent;
  return static_cast<int32_t>(floor + (remainder > threshold ? 1 : 0));
}

int8_t ToInt8(int64_t v, int32_t lo, int32_t hi) {
  return static_cast<int8_t>(Clamp(v, lo, hi));
}

// Sum over the valid window taps of (x - input_zp) * (w - weight_zp) for
// output pixel (oy, ox) and output channel oc of a normal convolution.
int64_t ConvAccumulate(const ConvParams& p, const int8_t* input, const int8_t* weights,
                       int32_t oy, int32_t ox, int32_t oc) {
  int64_t acc = 0;
  for (int32_t ky = 0; ky < p.kernel_h; ++ky) {
    int32_t iy = oy * p.stride_h - p.pad_top + ky;
    if (iy < 0 || iy >= p.in_h) continue;
    for (int32_t kx = 0; kx < p.kernel_w; ++kx) {
      int32_t ix = ox * p.stride_w - p.pad_left + kx;
      if (ix < 0 || ix >= p.in_w) continue;
      for (int32_t ic = 0; ic < p.in_c; ++ic) {
        int32_t x = input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.in_c + ic];
        int32_t w = weights[((static_cast<int64_t>(oc) * p.kernel_h + ky) * p.kernel_w + kx) *
                                p.in_c +
                            ic];
        acc += static_cast<int64_t>(x - p.input_zp) * (w - p.weight_zp);
      }
    }
  }
  return acc;
}

int64_t DepthwiseAccumulate(const ConvParams& p, const int8_t* input, const int8_t* weights,
                            int32_t oy, int32_t ox, int32_t c) {
  int64_t acc = 0;
  for (int32_t ky = 0; ky < p.kernel_h; ++ky) {
    int32_t iy = oy * p.stride_h - p.pad_top + ky;
    if (iy < 0 || iy >= p.in_h) continue;
    for (int32_t kx = 0; kx < p.kernel_w; ++kx) {
      int32_t ix = ox * p.stride_w - p.pad_left + kx;
      if (ix < 0 || ix >= p.in_w) continue;
      int32_t x = input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.in_c + c];
      int32_t w = weights[(static_cast<int64_t>(ky) * p.kernel_w + kx) * p.in_c + c];
      acc += static_cast<int64_t>(x - p.input_zp) * (w - p.weight_zp);
    }
  }
  return acc;
}

// Accumulators wrap modulo 2^32 like the hardware's.
int32_t Wrap(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

}  // namespace

int32_t Requantize(int32_t value, int32_t multiplier, int32_t shift) {
  int32_t left = shift > 0 ? shift : 0;
  int32_t right = shift > 0 ? 0 : -shift;
  int32_t shifted = SaturateInt32(static_cast<int64_t>(value) * (int64_t{1} << left));
  return RoundingShiftRight(DoublingHighMul(shifted, multiplier), right);
}

void Conv2DInt32(const ConvParams& p, const int8_t* input, const int8_t* weights,
                 const int32_t* bias, int32_t* output) {
  for (int32_t oy = 0; oy < p.out_h; ++oy) {
    for (int32_t ox = 0; ox < p.out_w; ++ox) {
      for (int32_t oc = 0; oc < p.out_c; ++oc) {
        int64_t acc = bias[oc] + ConvAccumulate(p, input, weights, oy, ox, oc);
        output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + oc] = Wrap(acc);
      }
    }
  }
}

void Conv2D(const ConvParams& p, const int8_t* input, const int8_t* weights,
            const ChannelParams& ch, bool relu, int8_t* output) {
  int32_t lo = relu && p.output_zp > p.act_min ? p.output_zp : p.act_min;
  for (int32_t oy = 0; oy < p.out_h; ++oy) {
    for (int32_t ox = 0; ox < p.out_w; ++ox) {
      for (int32_t oc = 0; oc < p.out_c; ++oc) {
        int32_t acc = Wrap(ch.bias[oc] + ConvAccumulate(p, input, weights, oy, ox, oc));
        int64_t v = int64_t{p.output_zp} + Requantize(acc, ch.multiplier[oc], ch.shift[oc]);
        output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + oc] =
            ToInt8(v, lo, p.act_max);
      }
    }
  }
}

void DepthwiseConv2DInt32(const ConvParams& p, const int8_t* input, const int8_t* weights,
                          const int32_t* bias, int32_t* output) {
  for (int32_t oy = 0; oy < p.out_h; ++oy) {
    for (int32_t ox = 0; ox < p.out_w; ++ox) {
      for (int32_t c = 0; c < p.out_c; ++c) {
        int64_t acc = bias[c] + DepthwiseAccumulate(p, input, weights, oy, ox, c);
        output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + c] = Wrap(acc);
      }
    }
  }
}

void DepthwiseConv2D(const ConvParams& p, const int8_t* input, const int8_t* weights,
                     const ChannelParams& ch, int8_t* output) {
  for (int32_t oy = 0; oy < p.out_h; ++oy) {
    for (int32_t ox = 0; ox < p.out_w; ++ox) {
      for (int32_t c = 0; c < p.out_c; ++c) {
        int32_t acc = Wrap(ch.bias[c] + DepthwiseAccumulate(p, input, weights, oy, ox, c));
        int64_t v = int64_t{p.output_zp} + Requantize(acc, ch.multiplier[c], ch.shift[c]);
        output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + c] =
            ToInt8(v, p.act_min, p.act_max);
      }
    }
  }
}

namespace {
int64_t MatMulAccumulate(const MatMulParams& p, const int8_t* input, const int8_t* weights,
                         int32_t row, int32_t col) {
  int64_t acc = 0;
  for (int32_t i = 0; i < p.k; ++i) {
    int32_t a = input[static_cast<int64_t>(row) * p.k + i];
    int32_t w = weights[static_cast<int64_t>(col) * p.k + i];
    acc += static_cast<int64_t>(a - p.input_zp) * (w - p.weight_zp);
  }
  return acc;
}
}  // namespace

void MatMulInt32(const MatMulParams& p, const int8_t* input, const int8_t* weights,
                 const int32_t* bias, int32_t* output) {
  for (int32_t row = 0; row < p.m; ++row) {
    for (int32_t col = 0; col < p.n; ++col) {
      output[static_cast<int64_t>(row) * p.n + col] =
          Wrap(bias[col] + MatMulAccumulate(p, input, weights, row, col));
    }
  }
}

void MatMul(const MatMulParams& p, const int8_t* input, const int8_t* weights,
            const ChannelParams& ch, int8_t* output) {
  for (int32_t row = 0; row < p.m; ++row) {
    for (int32_t col = 0; col < p.n; ++col) {
      int32_t acc = Wrap(ch.bias[col] + MatMulAccumulate(p, input, weights, row, col));
      int64_t v = int64_t{p.output_zp} + Requantize(acc, ch.multiplier[col], ch.shift[col]);
      output[static_cast<int64_t>(row) * p.n + col] = ToInt8(v, p.act_min, p.act_max);
    }
  }
}

void RescaleInt8(const Rescale& r, const int8_t* input, int64_t count, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t d = input[i] - r.input_zp;
    output[i] = ToInt8(int64_t{r.output_zp} + Requantize(d, r.multiplier, r.shift), r.act_min,
                       r.act_max);
  }
}

void Relu(const Rescale& r, const int8_t* input, int64_t count, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t d = input[i] - r.input_zp;
    if (d < 0) d = 0;
    output[i] = ToInt8(int64_t{r.output_zp} + Requantize(d, r.multiplier, r.shift), r.act_min,
                       r.act_max);
  }
}

void LeakyRelu(const Rescale& r, int32_t alpha_multiplier, int32_t alpha_shift,
               const int8_t* input, int64_t count, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t d = input[i] - r.input_zp;
    int32_t scaled = d >= 0 ? Requantize(d, r.multiplier, r.shift)
                            : Requantize(d, alpha_multiplier, alpha_shift);
    output[i] = ToInt8(int64_t{r.output_zp} + scaled, r.act_min, r.act_max);
  }
}

void Abs(const Rescale& r, const int8_t* input, int64_t count, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t d = input[i] - r.input_zp;
    if (d < 0) d = -d;
    output[i] = ToInt8(int64_t{r.output_zp} + Requantize(d, r.multiplier, r.shift), r.act_min,
                       r.act_max);
  }
}

void MaxPool(const ConvParams& p, const int8_t* input, int8_t* output) {
  for (int32_t oy = 0; oy < p.out_h; ++oy) {
    for (int32_t ox = 0; ox < p.out_w; ++ox) {
      for (int32_t c = 0; c < p.out_c; ++c) {
        int32_t best = -129;
        for (int32_t ky = 0; ky < p.kernel_h; ++ky) {
          int32_t iy = oy * p.stride_h - p.pad_top + ky;
          if (iy < 0 || iy >= p.in_h) continue;
          for (int32_t kx = 0; kx < p.kernel_w; ++kx) {
            int32_t ix = ox * p.stride_w - p.pad_left + kx;
            if (ix < 0 || ix >= p.in_w) continue;
            int32_t x = input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.in_c + c];
            if (x > best) best = x;
          }
        }
        output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + c] =
            ToInt8(best, p.act_min, p.act_max);
      }
    }
  }
}

void AvgPool(const ConvParams& p, const int8_t* input, int8_t* output) {
  for (int32_t oy = 0; oy < p.out_h; ++oy) {
    for (int32_t ox = 0; ox < p.out_w; ++ox) {
      for (int32_t c = 0; c < p.out_c; ++c) {
        int64_t sum = 0;
        int64_t count = 0;
        for (int32_t ky = 0; ky < p.kernel_h; ++ky) {
          int32_t iy = oy * p.stride_h - p.pad_top + ky;
          if (iy < 0 || iy >= p.in_h) continue;
          for (int32_t kx = 0; kx < p.kernel_w; ++kx) {
            int32_t ix = ox * p.stride_w - p.pad_left + kx;
            if (ix < 0 || ix >= p.in_w) continue;
            sum += input[(static_cast<int64_t>(iy) * p.in_w + ix) * p.in_c + c];
            ++count;
          }
        }
        int64_t avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
        output[(static_cast<int64_t>(oy) * p.out_w + ox) * p.out_c + c] =
            ToInt8(avg, p.act_min, p.act_max);
      }
    }
  }
}

void Minimum(const int8_t* a, const int8_t* b, int32_t scalar, int32_t act_min,
             int32_t act_max, int64_t count, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t y = b ? b[i] : scalar;
    output[i] = ToInt8(a[i] < y ? a[i] : y, act_min, act_max);
  }
}

void Maximum(const int8_t* a, const int8_t* b, int32_t scalar, int32_t act_min,
             int32_t act_max, int64_t count, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t y = b ? b[i] : scalar;
    output[i] = ToInt8(a[i] > y ? a[i] : y, act_min, act_max);
  }
}

void AddInt8(const AddParams& p, const int8_t* a, const int8_t* b, int64_t count,
             int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t sa = (a[i] - p.a_zp) * (1 << p.left_shift);
    int32_t sb = (b[i] - p.b_zp) * (1 << p.left_shift);
    int64_t sum = int64_t{Requantize(sa, p.a_multiplier, p.a_shift)} +
                  Requantize(sb, p.b_multiplier, p.b_shift);
    int64_t v = int64_t{p.output_zp} +
                Requantize(SaturateInt32(sum), p.out_multiplier, p.out_shift);
    output[i] = ToInt8(v, p.act_min, p.act_max);
  }
}

void MulInt8(const MulParams& p, const int8_t* a, const int8_t* b, int64_t count,
             int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t product = (a[i] - p.a_zp) * (b[i] - p.b_zp);
    int64_t v = int64_t{p.output_zp} + Requantize(product, p.multiplier, p.shift);
    output[i] = ToInt8(v, p.act_min, p.act_max);
  }
}

void AddInt32(const int32_t* a, const int32_t* b, int64_t count, int32_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    output[i] = SaturateInt32(int64_t{a[i]} + b[i]);
  }
}

void AddInt32Requantize(const int32_t* a, const int32_t* b, int64_t count, int32_t channels,
                        const ChannelParams& params, int32_t output_zp, int32_t act_min,
                        int32_t act_max, int8_t* output) {
  for (int64_t i = 0; i < count; ++i) {
    int32_t c = static_cast<int32_t>(i % channels);
    int32_t sum = SaturateInt32(int64_t{a[i]} + b[i]);
    int64_t v = int64_t{output_zp} + Requantize(sum, params.multiplier[c], params.shift[c]);
    output[i] = ToInt8(v, act_min, act_max);
  }
}

}  // namespace osprey::drivers::npu::reference
