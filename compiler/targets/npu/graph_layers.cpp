#include "compiler/targets/npu/graph_layers.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/graph/op_registry.h"

namespace osprey::compiler::npu {
namespace {

using graph::ElementType;
using graph::Op;
using graph::Value;

absl::Status refuse(const std::string &why) {
  return absl::UnimplementedError(why);
}

// {H, W, C} of a batch-1 NCHW tensor type, or the reason it is not one.
absl::StatusOr<Shape> hwcOf(const graph::TensorType &type,
                            const char *what) {
  if (!type.hasStaticShape()) {
    return refuse(absl::StrCat(what, " has a dynamic shape ", type.str()));
  }
  if (type.rank() != 4) {
    return refuse(absl::StrCat(what, " is ", type.str(),
                               "; windows need a 4-D NCHW tensor"));
  }
  if (type.dim(0) != 1) {
    return refuse(absl::StrCat(what, " has batch ", type.dim(0),
                               "; the NPU runs batch 1"));
  }
  return Shape{type.dim(2), type.dim(3), type.dim(1)};
}

// The shape an elementwise operand is seen with: HWC for NCHW tensors, one
// row of channels otherwise.
absl::StatusOr<Shape> elementwiseShapeOf(const graph::TensorType &type,
                                         const char *what) {
  if (!type.hasStaticShape()) {
    return refuse(absl::StrCat(what, " has a dynamic shape ", type.str()));
  }
  if (type.rank() == 4 && type.dim(0) == 1) {
    return Shape{type.dim(2), type.dim(3), type.dim(1)};
  }
  return Shape{1, 1, type.numElements()};
}

absl::Status needI8(const Value *v, const char *what) {
  if (v->type().elementType() != ElementType::I8) {
    return refuse(absl::StrCat(what, " has element type ",
                               graph::elementTypeName(v->type().elementType()).str(),
                               "; the NPU computes on i8"));
  }
  return absl::OkStatus();
}

int32_t attrInt(const Op &op, const char *name, int64_t def) {
  return static_cast<int32_t>(op.getInt(name, def));
}

// Window geometry of Conv/pool attributes (2-D only).
absl::Status readWindow(const Op &op, NpuLayer &l) {
  std::vector<int64_t> kernel = op.getIntList("kernel_shape");
  if (kernel.empty() && op.numOperands() > 1) {
    llvm::ArrayRef<int64_t> w = op.operand(1)->type().dims();
    if (w.size() == 4) {
      kernel = {w[2], w[3]};
    }
  }
  if (kernel.size() != 2) {
    return refuse(absl::StrCat("a ", kernel.size(),
                               "-D window; the NPU runs 2-D windows"));
  }
  std::string autoPad = op.getString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET") {
    return refuse("auto_pad " + autoPad + " was not made explicit");
  }
  if (op.getInt("ceil_mode", 0) != 0) {
    return refuse("ceil_mode 1");
  }
  for (int64_t d : op.getIntList("dilations", {1, 1})) {
    if (d != 1) {
      return refuse(absl::StrCat("dilation ", d));
    }
  }
  std::vector<int64_t> strides = op.getIntList("strides", {1, 1});
  std::vector<int64_t> pads = op.getIntList("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || pads.size() != 4) {
    return absl::InvalidArgumentError("malformed strides or pads");
  }
  l.kernelH = static_cast<int32_t>(kernel[0]);
  l.kernelW = static_cast<int32_t>(kernel[1]);
  l.strideH = static_cast<int32_t>(strides[0]);
  l.strideW = static_cast<int32_t>(strides[1]);
  l.padTop = static_cast<int32_t>(pads[0]);
  l.padLeft = static_cast<int32_t>(pads[1]);
  l.padBottom = static_cast<int32_t>(pads[2]);
  l.padRight = static_cast<int32_t>(pads[3]);
  return absl::OkStatus();
}

// Output zero point and clamps.
void readOutput(const Op &op, NpuLayer &l) {
  l.outputZp = attrInt(op, "y_zero_point", 0);
  l.actMin = attrInt(op, "act_min", -128);
  l.actMax = attrInt(op, "act_max", 127);
}

std::optional<std::vector<int64_t>> constantOperand(const Op &op, unsigned i) {
  if (i >= op.numOperands() || !op.operand(i)) {
    return std::nullopt;
  }
  return graph::getConstantInts(op.operand(i));
}

// Bias, multiplier and shift (operands 2..4) for |channels| outputs.
absl::Status readEpilogue(const Op &op, int64_t channels, NpuLayer &l) {
  if (op.numOperands() < 5) {
    return refuse("the result is the int32 accumulator, not requantized i8");
  }
  auto bias = constantOperand(op, 2);
  auto multiplier = constantOperand(op, 3);
  auto shift = constantOperand(op, 4);
  if (!bias || !multiplier || !shift) {
    return refuse("bias or requantization parameters computed at run time");
  }
  auto perChannel = [&](const std::vector<int64_t> &v,
                        std::vector<int32_t> &out) -> absl::Status {
    if (v.size() != 1 && static_cast<int64_t>(v.size()) != channels) {
      return absl::InvalidArgumentError(absl::StrCat(
          "epilogue operand of ", v.size(), " values for ", channels,
          " channels"));
    }
    out.clear();
    for (int64_t c = 0; c < channels; ++c) {
      out.push_back(static_cast<int32_t>(v[v.size() == 1 ? 0 : c]));
    }
    return absl::OkStatus();
  };
  if (auto s = perChannel(*bias, l.bias); !s.ok()) {
    return s;
  }
  if (auto s = perChannel(*multiplier, l.multiplier); !s.ok()) {
    return s;
  }
  return perChannel(*shift, l.shift);
}

absl::Status readWeights(const Op &op, std::vector<int64_t> &values) {
  const Value *w = op.operand(1);
  if (w->type().elementType() == ElementType::I16) {
    return refuse("weights need 16 bits once their zero point is subtracted");
  }
  if (w->type().elementType() != ElementType::I8) {
    return refuse("weights are not i8");
  }
  auto v = graph::getConstantInts(w);
  if (!v) {
    return refuse("weights computed at run time");
  }
  values = std::move(*v);
  return absl::OkStatus();
}

// The i8 input of a windowed op (Conv, pools) and its input and result
// shapes as HWC.
absl::Status readWindowShapes(const Op &op, NpuLayer &l) {
  if (auto s = needI8(op.operand(0), "the input"); !s.ok()) {
    return s;
  }
  auto in = hwcOf(op.operand(0)->type(), "the input");
  if (!in.ok()) {
    return in.status();
  }
  auto out = hwcOf(op.result()->type(), "the result");
  if (!out.ok()) {
    return out.status();
  }
  l.input = *in;
  l.output = *out;
  return absl::OkStatus();
}

absl::StatusOr<NpuLayer> fromConv(const Op &op) {
  NpuLayer l;
  if (op.result()->type().elementType() != ElementType::I8) {
    return refuse("the result is the int32 accumulator, not requantized i8");
  }
  if (auto s = readWindowShapes(op, l); !s.ok()) {
    return s;
  }
  if (auto s = readWindow(op, l); !s.ok()) {
    return s;
  }
  const int64_t group = op.getInt("group", 1);
  const int64_t ic = l.input.c, oc = l.output.c;
  if (group == 1) {
    l.kind = LayerKind::Conv;
  } else if (group == ic && oc == ic) {
    l.kind = LayerKind::DepthwiseConv;
  } else {
    return refuse(absl::StrCat("grouped convolution (group ", group, " of ",
                               ic, " input and ", oc, " output channels)"));
  }
  std::vector<int64_t> w;
  if (auto s = readWeights(op, w); !s.ok()) {
    return s;
  }
  const int64_t kh = l.kernelH, kw = l.kernelW;
  const int64_t icPerGroup = ic / group;
  if (static_cast<int64_t>(w.size()) != oc * icPerGroup * kh * kw) {
    return absl::InvalidArgumentError("weights do not match the geometry");
  }
  // OIHW -> OHWI (Conv) or [kh][kw][c] (depthwise).
  l.weights.resize(w.size());
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < icPerGroup; ++i) {
      for (int64_t y = 0; y < kh; ++y) {
        for (int64_t x = 0; x < kw; ++x) {
          int64_t from = ((o * icPerGroup + i) * kh + y) * kw + x;
          int64_t to = l.kind == LayerKind::Conv
                           ? ((o * kh + y) * kw + x) * ic + i
                           : (y * kw + x) * oc + o;
          l.weights[to] = static_cast<int8_t>(w[from]);
        }
      }
    }
  }
  l.inputZp = attrInt(op, "x_zero_point", 0);
  readOutput(op, l);
  if (auto s = readEpilogue(op, oc, l); !s.ok()) {
    return s;
  }
  return l;
}

absl::StatusOr<NpuLayer> fromMatMul(const Op &op) {
  NpuLayer l;
  l.kind = LayerKind::MatMul;
  if (auto s = needI8(op.operand(0), "the input"); !s.ok()) {
    return s;
  }
  if (op.result()->type().elementType() != ElementType::I8) {
    return refuse("the result is the int32 accumulator, not requantized i8");
  }
  const graph::TensorType &a = op.operand(0)->type();
  const graph::TensorType &b = op.operand(1)->type();
  if (!a.hasStaticShape() || !b.hasStaticShape()) {
    return refuse("dynamic shapes");
  }
  if (a.rank() != 2 || b.rank() != 2) {
    return refuse(absl::StrCat("a batched matrix product (", a.str(), " x ",
                               b.str(), "); the NPU multiplies 2-D matrices"));
  }
  if (op.getInt("b_zero_point", 0) != 0) {
    return refuse("a run-time right-hand side with a zero point");
  }
  std::vector<int64_t> w;
  if (auto s = readWeights(op, w); !s.ok()) {
    return s;
  }
  const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  l.input = Shape{m, 1, k};
  l.output = Shape{m, 1, n};
  l.weights.resize(w.size());
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      l.weights[c * k + r] = static_cast<int8_t>(w[r * n + c]);
    }
  }
  l.inputZp = attrInt(op, "a_zero_point", 0);
  readOutput(op, l);
  if (auto s = readEpilogue(op, n, l); !s.ok()) {
    return s;
  }
  return l;
}

absl::StatusOr<NpuLayer> fromAdd(const Op &op) {
  NpuLayer l;
  l.kind = LayerKind::Add;
  for (unsigned i = 0; i < 2; ++i) {
    if (auto s = needI8(op.operand(i), i ? "the second input" : "the input");
        !s.ok()) {
      return s;
    }
  }
  if (op.operand(0)->type() != op.result()->type() ||
      op.operand(1)->type() != op.result()->type()) {
    return refuse(absl::StrCat("broadcasting (", op.operand(0)->type().str(),
                               " + ", op.operand(1)->type().str(), ")"));
  }
  auto shape = elementwiseShapeOf(op.result()->type(), "the result");
  if (!shape.ok()) {
    return shape.status();
  }
  l.input = l.output = *shape;
  l.inputZp = attrInt(op, "a_zero_point", 0);
  l.input2Zp = attrInt(op, "b_zero_point", 0);
  l.addLeftShift = attrInt(op, "left_shift", 0);
  l.inScale = {attrInt(op, "a_multiplier", 1 << 30), attrInt(op, "a_shift", 1)};
  l.in2Scale = {attrInt(op, "b_multiplier", 1 << 30), attrInt(op, "b_shift", 1)};
  l.out = {attrInt(op, "multiplier", 1 << 30), attrInt(op, "shift", 1)};
  readOutput(op, l);
  return l;
}

// QRescale into i8: y = clamp(zp + Requantize(x - x_zp)) is a leaky ReLU
// whose two sides rescale alike.
absl::StatusOr<NpuLayer> fromRescale(const Op &op) {
  NpuLayer l;
  l.kind = LayerKind::LeakyRelu;
  if (auto s = needI8(op.operand(0), "the input"); !s.ok()) {
    return s;
  }
  if (auto s = needI8(op.result(), "the result"); !s.ok()) {
    return s;
  }
  auto shape = elementwiseShapeOf(op.result()->type(), "the result");
  if (!shape.ok()) {
    return shape.status();
  }
  l.input = l.output = *shape;
  l.inputZp = attrInt(op, "x_zero_point", 0);
  l.out = {attrInt(op, "multiplier", 1 << 30), attrInt(op, "shift", 1)};
  l.alpha = l.out;
  readOutput(op, l);
  return l;
}

absl::StatusOr<NpuLayer> fromPool(const Op &op, LayerKind kind) {
  NpuLayer l;
  l.kind = kind;
  if (op.numResults() > 1) {
    return refuse("MaxPool's indices output");
  }
  if (auto s = readWindowShapes(op, l); !s.ok()) {
    return s;
  }
  if (op.getInt("storage_order", 0) != 0) {
    return refuse("storage_order 1");
  }
  if (auto s = readWindow(op, l); !s.ok()) {
    return s;
  }
  if (kind == LayerKind::AvgPool) {
    l.actMin = attrInt(op, "act_min", -128);
    l.actMax = attrInt(op, "act_max", 127);
  }
  return l;
}

} // namespace

absl::StatusOr<NpuLayer> layerFromOp(const graph::Op &op) {
  absl::StatusOr<NpuLayer> layer = refuse(
      "the NPU has no " + op.kind() + " (npu-v1 runs quantized Conv, "
      "depthwise Conv, MatMul, Add, rescales, max and average pools)");
  const std::string &k = op.kind();
  if (k == "QConv") {
    layer = fromConv(op);
  } else if (k == "QMatMul") {
    layer = fromMatMul(op);
  } else if (k == "QAdd") {
    layer = fromAdd(op);
  } else if (k == "QRescale") {
    layer = fromRescale(op);
  } else if (k == "QAveragePool") {
    layer = fromPool(op, LayerKind::AvgPool);
  } else if (k == "MaxPool") {
    layer = fromPool(op, LayerKind::MaxPool);
  } else if (k == "QMul") {
    layer = refuse("the NPU has no elementwise multiply");
  }
  if (!layer.ok()) {
    return layer.status();
  }
  layer->name = op.nodeName();
  layer->in = Operand::memory(0);
  if (layer->hasSecondInput()) {
    layer->in2 = Operand::memory(1);
  }
  layer->dst = Operand::memory(2);
  if (auto s = verifyLayer(*layer); !s.ok()) {
    return s;
  }
  return layer;
}

} // namespace osprey::compiler::npu
