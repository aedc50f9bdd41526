#!/usr/bin/python3
"""Osprey's integer reference in numpy, and a float evaluator for small ONNX models.

The integer arithmetic is docs/npu.md's, the same as drivers/npu/reference and the code Osprey
generates for its canonical quantized ops (docs/quantization.md):
  - quantize_multiplier(real) -> (M, s), the port of compiler/graph/quantization.cpp;
  - requantize(x, M, s), rounding half away from zero, saturating left shift;
  - convolution and matrix products accumulating (x - zx) * (w - zw) in int32 (wrapping), plus
    bias, requantized per output channel and clamped;
  - Add as npu E_ADD (left shift 20, per-input rescale, saturating sum, output rescale), Mul,
    average pooling rounding half away from zero (npu POOL), max pooling, rescale.
QdqInterpreter runs a QDQ model (DequantizeLinear -> op [-> Relu/Clip] -> QuantizeLinear
patterns, as Osprey's fuse-qdq pass recognizes them) in that arithmetic; FloatInterpreter runs
a float model. Both cover the operators of the models in scripts/models/export_models.py.
Products are summed in float64, which is exact here: |x - zx| <= 255, |w - zw| <= 255 and the
reductions have fewer than 2^53 / 255^2 terms.
"""

import math

import numpy as np
from onnx import numpy_helper

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def quantize_multiplier(real):
  """(M, s) with real = M * 2^(s - 31); see quantizeMultiplier in quantization.cpp."""
  if not math.isfinite(real) or real < 0:
    raise ValueError(f"requantization factor {real} is not finite and non-negative")
  if real == 0:
    return 0, 0
  q, e = math.frexp(real)
  m = int(math.floor(q * 2147483648.0 + 0.5))
  if m == 1 << 31:
    m >>= 1
    e += 1
  if e > 30:
    raise ValueError(f"requantization factor {real} is too large")
  if e < -31:
    drop = -31 - e
    if drop >= 32:
      return 0, 0
    m = (m + (1 << (drop - 1))) >> drop
    e = -31
    if m == 0:
      return 0, 0
  return m, e


def _trunc_div(a, d):
  """a / d rounded toward zero (C division), d > 0."""
  return np.where(a >= 0, a // d, -((-a) // d))


def requantize(x, m, s):
  """docs/npu.md Requantize on int arrays; m and s broadcast against x."""
  x = np.asarray(x, dtype=np.int64)
  m = np.asarray(m, dtype=np.int64)
  s = np.asarray(s, dtype=np.int64)
  left = np.maximum(s, 0)
  right = np.maximum(-s, 0)
  a = np.clip(x * (np.int64(1) << left), INT32_MIN, INT32_MAX)
  p = a * m
  nudge = np.where(p >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
  saturated = (a == INT32_MIN) & (m == INT32_MIN)
  h = np.where(saturated, INT32_MAX, _trunc_div(p + nudge, np.int64(1 << 31)))
  mask = (np.int64(1) << right) - 1
  remainder = h & mask
  threshold = (mask >> 1) + (h < 0)
  return (h >> right) + (remainder > threshold)


def wrap32(v):
  """int64 values modulo 2^32 as int32 values."""
  v = np.asarray(v, dtype=np.int64)
  return ((v + (1 << 31)) % (1 << 32)) - (1 << 31)


def output_int8(acc, m, s, zp, lo=-128, hi=127):
  return np.clip(zp + requantize(acc, m, s), lo, hi).astype(np.int8)


def quantize_linear(x, scale, zp, dtype):
  """ONNX QuantizeLinear in float32: round half to even, saturate."""
  info = np.iinfo(dtype)
  q = np.rint(np.asarray(x, np.float32) / np.float32(scale)).astype(np.float64) + zp
  return np.clip(np.nan_to_num(q, nan=zp), info.min, info.max).astype(dtype)


def dequantize_linear(q, scale, zp):
  return (np.asarray(q).astype(np.float32) - np.float32(zp)) * np.float32(scale)


# ----------------------------------------------------------------------------------------------
# Window operations on NCHW arrays (batch 1 or more)
# ----------------------------------------------------------------------------------------------


def _patches(x, kernel, strides, pads, dilations, pad_value):
  """[N, C, OH, OW, KH, KW] windows of x padded with pad_value."""
  n, c, h, w = x.shape
  kh, kw = kernel
  xp = np.full((n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]), pad_value, dtype=x.dtype)
  xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w] = x
  oh = (xp.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
  ow = (xp.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
  out = np.empty((n, c, oh, ow, kh, kw), dtype=x.dtype)
  for i in range(kh):
    for j in range(kw):
      r0, c0 = i * dilations[0], j * dilations[1]
      out[:, :, :, :, i, j] = xp[:, :, r0:r0 + strides[0] * (oh - 1) + 1:strides[0],
                                 c0:c0 + strides[1] * (ow - 1) + 1:strides[1]]
  return out


def conv2d(x, w, strides, pads, dilations, group, pad_value=0.0):
  """Float64 convolution of x [N,C,H,W] by w [M,C/g,KH,KW]; exact for small integers."""
  x = np.asarray(x, np.float64)
  w = np.asarray(w, np.float64)
  m, cg, kh, kw = w.shape
  p = _patches(x, (kh, kw), strides, pads, dilations, pad_value)
  n, c, oh, ow = p.shape[:4]
  mg = m // group
  out = np.empty((n, m, oh, ow))
  for g in range(group):
    pg = p[:, g * cg:(g + 1) * cg].transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, cg * kh * kw)
    wg = w[g * mg:(g + 1) * mg].reshape(mg, cg * kh * kw)
    out[:, g * mg:(g + 1) * mg] = (pg @ wg.T).reshape(n, oh, ow, mg).transpose(0, 3, 1, 2)
  return out


def avg_pool_int8(x, kernel, strides, pads, act_min=-128, act_max=127):
  """npu POOL average over in-bounds values, rounding half away from zero."""
  x64 = np.asarray(x, np.int64)
  ones = np.ones_like(x64)
  s = _patches(x64, kernel, strides, pads, (1, 1), 0).sum(axis=(4, 5))
  cnt = _patches(ones, kernel, strides, pads, (1, 1), 0).sum(axis=(4, 5))
  avg = np.where(s > 0, _trunc_div(s + cnt // 2, cnt), -_trunc_div(-(s - cnt // 2), cnt))
  return np.clip(avg, act_min, act_max).astype(np.int8)


def max_pool(x, kernel, strides, pads, pad_value):
  return _patches(np.asarray(x), kernel, strides, pads, (1, 1), pad_value).max(axis=(4, 5))


def add_int8(a, za, b, zb, params, zy, lo, hi):
  """npu E_ADD: params = (left_shift, (ma, sa), (mb, sb), (my, sy))."""
  shift, (ma, sa), (mb, sb), (my, sy) = params
  ra = requantize((np.asarray(a, np.int64) - za) * (1 << shift), ma, sa)
  rb = requantize((np.asarray(b, np.int64) - zb) * (1 << shift), mb, sb)
  total = np.clip(ra + rb, INT32_MIN, INT32_MAX)
  return output_int8(total, my, sy, zy, lo, hi)


def add_params(sa, sb, sy):
  """E_ADD parameters for scales sa, sb -> sy (as fuse_qdq.cpp computes them)."""
  twice_max = 2 * max(float(sa), float(sb))
  return (20, quantize_multiplier(float(sa) / twice_max), quantize_multiplier(float(sb) / twice_max),
          quantize_multiplier(twice_max / (float(1 << 20) * float(sy))))


def rescale_int8(x, zx, sx, zy, sy, lo=-128, hi=127):
  m, s = quantize_multiplier(float(sx) / float(sy))
  return output_int8(np.asarray(x, np.int64) - zx, m, s, zy, lo, hi)


# ----------------------------------------------------------------------------------------------
# Model interpreters
# ----------------------------------------------------------------------------------------------


def _attrs(node):
  out = {}
  for a in node.attribute:
    if a.type == a.INT:
      out[a.name] = a.i
    elif a.type == a.INTS:
      out[a.name] = list(a.ints)
    elif a.type == a.FLOAT:
      out[a.name] = a.f
    elif a.type == a.FLOATS:
      out[a.name] = list(a.floats)
    elif a.type == a.STRING:
      out[a.name] = a.s.decode()
    elif a.type == a.TENSOR:
      out[a.name] = numpy_helper.to_array(a.t)
  return out


def _window(attrs, spatial_shape=None):
  pads = attrs.get("pads", [0, 0, 0, 0])
  return (attrs.get("strides", [1, 1]), [pads[0], pads[1], pads[2], pads[3]],
          attrs.get("dilations", [1, 1]))


def _float_op(node, ins, attrs):
  t = node.op_type
  if t == "Conv":
    strides, pads, dil = _window(attrs)
    y = conv2d(ins[0], ins[1], strides, pads, dil, attrs.get("group", 1))
    if len(ins) > 2 and ins[2] is not None:
      y = y + np.asarray(ins[2], np.float64).reshape(1, -1, 1, 1)
    return y.astype(np.float32)
  if t == "Gemm":
    a, b = np.asarray(ins[0], np.float64), np.asarray(ins[1], np.float64)
    if attrs.get("transA", 0):
      a = a.T
    if attrs.get("transB", 0):
      b = b.T
    y = attrs.get("alpha", 1.0) * (a @ b)
    if len(ins) > 2 and ins[2] is not None:
      y = y + attrs.get("beta", 1.0) * np.asarray(ins[2], np.float64)
    return y.astype(np.float32)
  if t == "MatMul":
    return (np.asarray(ins[0], np.float64) @ np.asarray(ins[1], np.float64)).astype(np.float32)
  if t == "Relu":
    return np.maximum(ins[0], 0).astype(np.float32)
  if t == "Clip":
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else np.inf
    return np.clip(ins[0], lo, hi).astype(np.float32)
  if t == "Add":
    return (ins[0] + ins[1]).astype(np.float32)
  if t == "Mul":
    return (ins[0] * ins[1]).astype(np.float32)
  if t == "GlobalAveragePool":
    return ins[0].mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(np.float32)
  if t == "AveragePool":
    strides, pads, _ = _window(attrs)
    k = attrs["kernel_shape"]
    x = np.asarray(ins[0], np.float64)
    s = _patches(x, k, strides, pads, (1, 1), 0.0).sum(axis=(4, 5))
    cnt = _patches(np.ones_like(x), k, strides, pads, (1, 1), 0.0).sum(axis=(4, 5))
    return (s / cnt).astype(np.float32)
  if t == "MaxPool":
    strides, pads, _ = _window(attrs)
    return max_pool(ins[0], attrs["kernel_shape"], strides, pads, -np.inf).astype(np.float32)
  if t == "Flatten":
    axis = attrs.get("axis", 1)
    x = ins[0]
    return x.reshape(int(np.prod(x.shape[:axis])), -1)
  if t == "Reshape":
    return ins[0].reshape(ins[1])
  if t == "Softmax":
    x = np.asarray(ins[0], np.float64)
    e = np.exp(x - x.max(axis=attrs.get("axis", -1), keepdims=True))
    return (e / e.sum(axis=attrs.get("axis", -1), keepdims=True)).astype(np.float32)
  if t == "BatchNormalization":
    x, g, b, mean, var = ins
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = g / np.sqrt(var + attrs.get("epsilon", 1e-5))
    return ((x - mean.reshape(shape)) * inv.reshape(shape) + b.reshape(shape)).astype(np.float32)
  if t == "Identity":
    return ins[0]
  if t == "Constant":
    return attrs["value"]
  raise NotImplementedError(f"float evaluation of {t}")


class FloatInterpreter:
  """Evaluates a float ONNX model in float64 arithmetic rounded to float32 per op."""

  def __init__(self, model):
    self.graph = model.graph
    self.inits = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}

  def run(self, feeds, keep=None):
    """Runs the graph; returns all values (or those in |keep| plus outputs)."""
    env = dict(self.inits)
    env.update(feeds)
    for node in self.graph.node:
      ins = [env[i] if i else None for i in node.input]
      env[node.output[0]] = _float_op(node, ins, _attrs(node))
    return env


class QdqInterpreter:
  """Evaluates a QDQ model in Osprey's integer arithmetic.

  Quantized tensors are (int array, scale, zero point); a DequantizeLinear output stays that
  triple until an op consumes it. An op whose inputs are all dequantized (per tensor; weights
  constant per tensor or per output channel) and whose result reaches a QuantizeLinear through
  at most Relu/Clip runs in integers (int8 domain: uint8 values and zero points shifted by -128)
  and defines the QuantizeLinear's output; layout ops and MaxPool pass quantized values through;
  QuantizeLinear of a dequantized value rescales. Other ops run in float.
  """

  def __init__(self, model):
    self.graph = model.graph
    self.inits = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}
    self.users = {}
    for node in self.graph.node:
      for i in node.input:
        self.users.setdefault(i, []).append(node)
    self.outputs = {o.name for o in self.graph.output}

  def _params(self, node):
    scale = self.inits[node.input[1]]
    zp = self.inits[node.input[2]] if len(node.input) > 2 and node.input[2] else np.zeros_like(
        scale, dtype=np.int32)
    return np.asarray(scale, np.float32), np.asarray(zp)

  def _chain(self, node):
    """Relu/Clip nodes after |node| up to a QuantizeLinear: (chain, q, lo, hi) or None."""
    chain, lo, hi = [], -np.inf, np.inf
    name = node.output[0]
    while True:
      users = self.users.get(name, [])
      if len(users) != 1 or name in self.outputs:
        return None
      u = users[0]
      if u.op_type == "QuantizeLinear":
        return chain, u, lo, hi
      if u.op_type == "Relu":
        lo = max(lo, 0.0)
      elif u.op_type == "Clip":
        if len(u.input) > 1 and u.input[1]:
          lo = max(lo, float(self.inits[u.input[1]]))
        if len(u.input) > 2 and u.input[2]:
          hi = min(hi, float(self.inits[u.input[2]]))
      else:
        return None
      chain.append(u)
      name = u.output[0]

  @staticmethod
  def _i8(q, zp):
    """Values and zero point in the int8 domain."""
    if q.dtype == np.uint8:
      return q.astype(np.int64) - 128, np.asarray(zp, np.int64) - 128
    return q.astype(np.int64), np.asarray(zp, np.int64)

  def run(self, feeds):
    env = dict(self.inits)
    env.update(feeds)
    quant = {}  # name -> (int array in its own dtype, scale, zero point)
    done = set()
    for node in self.graph.node:
      if id(node) in done:
        continue
      t = node.op_type
      if t == "DequantizeLinear":
        scale, zp = self._params(node)
        quant[node.output[0]] = (env[node.input[0]], scale, zp)
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        shape = [1] * env[node.input[0]].ndim
        if scale.size > 1:
          shape[axis] = -1
        env[node.output[0]] = dequantize_linear(env[node.input[0]], scale.reshape(shape),
                                                zp.reshape(shape))
        continue
      if t == "QuantizeLinear":
        scale, zp = self._params(node)
        src = node.input[0]
        if src in quant and quant[src][1].size == 1:
          q, sx, zx = quant[src]
          env[node.output[0]] = self._requantize(q, sx, zx, scale, zp)
        else:
          env[node.output[0]] = quantize_linear(env[src], scale, zp, zp.dtype.type)
        continue
      if self._integer(node, env, quant, done):
        continue
      if t in ("Flatten", "Reshape", "MaxPool") and node.input[0] in quant:
        q, s, z = quant[node.input[0]]
        attrs = _attrs(node)
        if t == "MaxPool":
          strides, pads, _ = _window(attrs)
          info = np.iinfo(q.dtype)
          r = max_pool(q, attrs["kernel_shape"], strides, pads, info.min).astype(q.dtype)
        else:
          r = _float_op(node, [q] + [env.get(i) for i in node.input[1:]], attrs)
        quant[node.output[0]] = (r, s, z)
        env[node.output[0]] = dequantize_linear(r, s, z)
        continue
      ins = [env[i] if i else None for i in node.input]
      env[node.output[0]] = _float_op(node, ins, _attrs(node))
    return env

  def _requantize(self, q, sx, zx, sy, zy):
    out_dtype = zy.dtype.type
    if q.dtype == out_dtype and float(sx) == float(sy) and int(zx) == int(zy):
      return q
    x8, zx8 = self._i8(q, zx)
    _, zy8 = self._i8(np.zeros(1, out_dtype), zy)
    r = rescale_int8(x8, int(zx8), float(sx), int(zy8), float(sy))
    return self._from_i8(r, out_dtype)

  @staticmethod
  def _from_i8(r, dtype):
    r = np.asarray(r, np.int64)
    return (r + 128).astype(np.uint8) if dtype == np.uint8 else r.astype(np.int8)

  @staticmethod
  def _act_range(lo, hi, sy, zy8):
    amin = -128 if lo == -np.inf else int(quantize_linear(np.float32(lo), sy, zy8, np.int8))
    amax = 127 if hi == np.inf else int(quantize_linear(np.float32(hi), sy, zy8, np.int8))
    return amin, max(amin, amax)

  def _integer(self, node, env, quant, done):
    """Runs |node| and its Relu/Clip/QuantizeLinear chain in integers; False if not a pattern."""
    t = node.op_type
    if t not in ("Conv", "Gemm", "MatMul", "Add", "Mul", "GlobalAveragePool", "AveragePool",
                 "Concat"):
      return False
    data_inputs = [i for i in node.input if i]
    if t in ("Conv", "Gemm", "MatMul"):
      data_inputs = data_inputs[:2]
    if not all(i in quant for i in data_inputs):
      return False
    found = self._chain(node)
    if found is None:
      return False
    chain, qnode, lo, hi = found
    sy, zy = self._params(qnode)
    out_dtype = zy.dtype.type
    zy8 = int(self._i8(np.zeros(1, out_dtype), zy)[1])
    amin, amax = self._act_range(lo, hi, sy, zy8)
    attrs = _attrs(node)
    x, sx, zx = quant[node.input[0]]
    x8, zx8 = self._i8(x, zx)
    if t in ("Conv", "Gemm", "MatMul"):
      w, sw, zw = quant[node.input[1]]
      wv = w.astype(np.int64)
      if t == "Conv":
        channels = wv.shape[0]
        wzp = np.broadcast_to(np.asarray(zw, np.int64).reshape(-1), (channels,))
        wv = wv - wzp.reshape(-1, 1, 1, 1)
      else:
        if attrs.get("transB", 0):
          wv = wv.T
          zcol = np.asarray(zw, np.int64).reshape(-1)
        else:
          zcol = np.asarray(zw, np.int64).reshape(-1)
        channels = wv.shape[-1]
        wv = wv - np.broadcast_to(zcol, (channels,))
      sw = np.broadcast_to(np.asarray(sw, np.float32).reshape(-1), (channels,))
      acc_scale = float(sx) * sw.astype(np.float64)
      alpha = attrs.get("alpha", 1.0) if t == "Gemm" else 1.0
      beta = attrs.get("beta", 1.0) if t == "Gemm" else 1.0
      bias = np.zeros(channels, np.int64)
      if t != "MatMul" and len(node.input) > 2 and node.input[2]:
        b, sb, _ = quant[node.input[2]]
        sb = np.broadcast_to(np.asarray(sb, np.float64).reshape(-1), (channels,))
        ratio = sb * beta / (alpha * acc_scale)
        b = np.broadcast_to(np.asarray(b, np.int64).reshape(-1), (channels,))
        bias = np.where(np.abs(ratio - 1) <= 1e-6, b, np.round(b * ratio).astype(np.int64))
      reals = [alpha * float(sx) * float(sw[c]) / float(sy) for c in range(channels)]
      ms = np.array([quantize_multiplier(r)[0] for r in reals], np.int64)
      ss = np.array([quantize_multiplier(r)[1] for r in reals], np.int64)
      if t == "Conv":
        strides, pads, dil = _window(attrs)
        acc = conv2d(x8 - int(zx8), wv, strides, pads, dil, attrs.get("group", 1))
        acc = wrap32(np.asarray(acc, np.int64) + bias.reshape(1, -1, 1, 1))
        r = output_int8(acc, ms.reshape(1, -1, 1, 1), ss.reshape(1, -1, 1, 1), zy8, amin, amax)
      else:
        acc = (x8.astype(np.float64) - int(zx8)) @ wv.astype(np.float64)
        acc = wrap32(np.asarray(acc, np.int64) + bias)
        r = output_int8(acc, ms, ss, zy8, amin, amax)
    elif t in ("Add", "Mul"):
      b, sb, zb = quant[node.input[1]]
      b8, zb8 = self._i8(b, zb)
      if t == "Add":
        r = add_int8(x8, int(zx8), b8, int(zb8), add_params(sx, sb, sy), zy8, amin, amax)
      else:
        m, s = quantize_multiplier(float(sx) * float(sb) / float(sy))
        r = output_int8((x8 - int(zx8)) * (b8 - int(zb8)), m, s, zy8, amin, amax)
    elif t in ("GlobalAveragePool", "AveragePool"):
      if t == "GlobalAveragePool":
        k, strides, pads = list(x8.shape[2:]), [1, 1], [0, 0, 0, 0]
      else:
        k = attrs["kernel_shape"]
        strides, pads, _ = _window(attrs)
      same = float(sx) == float(sy) and int(zx8) == zy8
      r = avg_pool_int8(x8, k, strides, pads, amin if same else -128, amax if same else 127)
      if not same:
        r = rescale_int8(r, int(zx8), float(sx), zy8, float(sy), amin, amax)
    else:  # Concat
      parts = []
      for name in node.input:
        q, s, z = quant[name]
        q8, z8 = self._i8(q, z)
        if float(s) == float(sy) and int(z8) == zy8:
          parts.append(q8)
        else:
          parts.append(rescale_int8(q8, int(z8), float(s), zy8, float(sy)))
      r = np.concatenate(parts, axis=attrs.get("axis", 0))
    env[qnode.output[0]] = self._from_i8(r, out_dtype)
    for n in chain + [qnode]:
      done.add(id(n))
    return True
