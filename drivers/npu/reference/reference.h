// Plain C++ reference implementations of the npu-v1 int8 operations.
//
// Written directly from the semantics in docs/npu.md and kept apart from the
// simulator, so tests can compare the two bit for bit. Tensors are dense HWC
// (batch 1), int8 unless noted. No allocation; callers pass every buffer.
// Thread-safe (pure functions).
#ifndef OSPREY_DRIVERS_NPU_REFERENCE_REFERENCE_H_
#define OSPREY_DRIVERS_NPU_REFERENCE_REFERENCE_H_

#include <cstdint>

namespace osprey::drivers::npu::reference {

// The npu-v1 requantization: saturating left shift by max(shift, 0), then
// the rounding doubling high multiply by |multiplier| (Q31), then a rounding
// right shift by max(-shift, 0) that rounds half away from zero.
int32_t Requantize(int32_t value, int32_t multiplier, int32_t shift);

// Geometry and quantization of a convolution, depthwise convolution or pool.
struct ConvParams {
  int32_t in_h = 1, in_w = 1, in_c = 1;
  int32_t out_h = 1, out_w = 1, out_c = 1;
  int32_t kernel_h = 1, kernel_w = 1;
  int32_t stride_h = 1, stride_w = 1;
  int32_t pad_top = 0, pad_left = 0;
  int32_t input_zp = 0, weight_zp = 0, output_zp = 0;
  int32_t act_min = -128, act_max = 127;
};

// Per-output-channel bias and requantization (arrays of out_c entries).
struct ChannelParams {
  const int32_t* bias = nullptr;
  const int32_t* multiplier = nullptr;
  const int32_t* shift = nullptr;
};

// Convolution with OHWI weights [out_c][kernel_h][kernel_w][in_c].
// Conv2DInt32 writes bias + accumulator (modulo 2^32);
// Conv2D requantizes and clamps, and with |relu| also clamps at output_zp.
void Conv2DInt32(const ConvParams& p, const int8_t* input, const int8_t* weights,
                 const int32_t* bias, int32_t* output);
void Conv2D(const ConvParams& p, const int8_t* input, const int8_t* weights,
            const ChannelParams& channels, bool relu, int8_t* output);

// Depthwise convolution (in_c == out_c), weights [kernel_h][kernel_w][c].
void DepthwiseConv2DInt32(const ConvParams& p, const int8_t* input, const int8_t* weights,
                          const int32_t* bias, int32_t* output);
void DepthwiseConv2D(const ConvParams& p, const int8_t* input, const int8_t* weights,
                     const ChannelParams& channels, int8_t* output);

// Fully-connected matmul: input [m][k], weights [n][k], output [m][n].
struct MatMulParams {
  int32_t m = 1, k = 1, n = 1;
  int32_t input_zp = 0, weight_zp = 0, output_zp = 0;
  int32_t act_min = -128, act_max = 127;
};
void MatMulInt32(const MatMulParams& p, const int8_t* input, const int8_t* weights,
                 const int32_t* bias, int32_t* output);
void MatMul(const MatMulParams& p, const int8_t* input, const int8_t* weights,
            const ChannelParams& channels, int8_t* output);

// Per-tensor rescale of elementwise operations.
struct Rescale {
  int32_t input_zp = 0, output_zp = 0;
  int32_t multiplier = 1 << 30, shift = 1;  // Identity by default.
  int32_t act_min = -128, act_max = 127;
};

// y = clamp(output_zp + Requantize(x - input_zp, multiplier, shift)): int8
// values requantized to other parameters (the inputs of a concatenation, a
// pool whose output is quantized differently).
void RescaleInt8(const Rescale& r, const int8_t* input, int64_t count, int8_t* output);
void Relu(const Rescale& r, const int8_t* input, int64_t count, int8_t* output);
void LeakyRelu(const Rescale& r, int32_t alpha_multiplier, int32_t alpha_shift,
               const int8_t* input, int64_t count, int8_t* output);
void Abs(const Rescale& r, const int8_t* input, int64_t count, int8_t* output);

// Max pooling (padding ignored) and average pooling (padding excluded from
// the divisor, rounding half away from zero). Zero points are not used.
void MaxPool(const ConvParams& p, const int8_t* input, int8_t* output);
void AvgPool(const ConvParams& p, const int8_t* input, int8_t* output);

// Elementwise min/max of two tensors (b == nullptr: with |scalar|), clamped.
void Minimum(const int8_t* a, const int8_t* b, int32_t scalar, int32_t act_min,
             int32_t act_max, int64_t count, int8_t* output);
void Maximum(const int8_t* a, const int8_t* b, int32_t scalar, int32_t act_min,
             int32_t act_max, int64_t count, int8_t* output);

// int8 addition with per-input rescaling (TFLite-style quantized add).
struct AddParams {
  int32_t a_zp = 0, b_zp = 0, output_zp = 0;
  int32_t left_shift = 20;
  int32_t a_multiplier = 1 << 30, a_shift = 1;
  int32_t b_multiplier = 1 << 30, b_shift = 1;
  int32_t out_multiplier = 1 << 30, out_shift = 1;
  int32_t act_min = -128, act_max = 127;
};
void AddInt8(const AddParams& p, const int8_t* a, const int8_t* b, int64_t count,
             int8_t* output);

// int8 multiplication: y = clamp(output_zp + Requantize((a - a_zp) * (b - b_zp),
// multiplier, shift)).
struct MulParams {
  int32_t a_zp = 0, b_zp = 0, output_zp = 0;
  int32_t multiplier = 1 << 30, shift = 1;
  int32_t act_min = -128, act_max = 127;
};
void MulInt8(const MulParams& p, const int8_t* a, const int8_t* b, int64_t count,
             int8_t* output);

// Saturating int32 addition; the requantizing form uses channel
// (i % channels) multipliers and shifts (bias ignored) and clamps to int8.
void AddInt32(const int32_t* a, const int32_t* b, int64_t count, int32_t* output);
void AddInt32Requantize(const int32_t* a, const int32_t* b, int64_t count, int32_t channels,
                        const ChannelParams& params, int32_t output_zp, int32_t act_min,
                        int32_t act_max, int8_t* output);

}  // namespace osprey::drivers::npu::reference

#endif  // OSPREY_DRIVERS_NPU_REFERENCE_REFERENCE_H_
