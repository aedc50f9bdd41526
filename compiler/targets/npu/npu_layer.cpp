#include "compiler/targets/npu/npu_layer.h"

#include "absl/strings/str_cat.h"

namespace osprey::compiler::npu {
namespace {

std::string shapeText(const Shape &s) {
  return absl::StrCat(s.h, "x", s.w, "x", s.c);
}

absl::Status invalid(const NpuLayer &l, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "npu layer '", l.name, "' (", layerKindName(l.kind), "): ", what));
}

absl::Status unimplemented(const NpuLayer &l, absl::string_view what) {
  return absl::UnimplementedError(absl::StrCat(
      "npu layer '", l.name, "' (", layerKindName(l.kind), "): ", what));
}

bool inI8(int32_t v) { return v >= -128 && v <= 127; }
bool validRescale(const Rescale &r) {
  return r.multiplier >= 0 && r.shift >= -31 && r.shift <= 30;
}

} // namespace

const char *layerKindName(LayerKind kind) {
  switch (kind) {
  case LayerKind::Conv:
    return "Conv";
  case LayerKind::DepthwiseConv:
    return "DepthwiseConv";
  case LayerKind::MatMul:
    return "MatMul";
  case LayerKind::MaxPool:
    return "MaxPool";
  case LayerKind::AvgPool:
    return "AvgPool";
  case LayerKind::Add:
    return "Add";
  case LayerKind::Relu:
    return "Relu";
  case LayerKind::LeakyRelu:
    return "LeakyRelu";
  case LayerKind::Min:
    return "Min";
  case LayerKind::Max:
    return "Max";
  }
  return "?";
}

int64_t NpuLayer::macs() const {
  switch (kind) {
  case LayerKind::Conv:
    return output.elements() * kernelH * kernelW * input.c;
  case LayerKind::DepthwiseConv:
    return output.elements() * kernelH * kernelW;
  case LayerKind::MatMul:
    return output.h * output.c * input.c;
  default:
    return 0;
  }
}

absl::Status verifyLayer(const NpuLayer &l) {
  for (const Shape *s : {&l.input, &l.output}) {
    if (s->h < 1 || s->w < 1 || s->c < 1 || s->h > 65535 || s->w > 65535 ||
        s->c > 65535) {
      return unimplemented(l, absl::StrCat("shape ", shapeText(*s),
                                           " outside 1..65535 per axis"));
    }
  }
  if (!inI8(l.inputZp) || !inI8(l.input2Zp) || !inI8(l.weightZp) ||
      !inI8(l.outputZp) || !inI8(l.actMin) || !inI8(l.actMax) ||
      !inI8(l.scalar)) {
    return invalid(l, "zero points, clamps and scalars must be int8");
  }
  if (l.actMin > l.actMax) {
    return invalid(
        l, absl::StrCat("clamp [", l.actMin, ", ", l.actMax, "] is empty"));
  }
  if (l.hasWindow()) {
    if (l.kernelH < 1 || l.kernelW < 1 || l.kernelH > 16 || l.kernelW > 16) {
      return unimplemented(l, absl::StrCat("kernel ", l.kernelH, "x", l.kernelW,
                                           " (npu-v1: 1..16)"));
    }
    if (l.strideH < 1 || l.strideW < 1 || l.strideH > 8 || l.strideW > 8) {
      return unimplemented(l, absl::StrCat("stride ", l.strideH, "x", l.strideW,
                                           " (npu-v1: 1..8)"));
    }
    if (l.padTop < 0 || l.padLeft < 0 || l.padBottom < 0 || l.padRight < 0) {
      return invalid(l, "negative padding");
    }
    if (l.padTop >= l.kernelH || l.padLeft >= l.kernelW ||
        l.padBottom >= l.kernelH || l.padRight >= l.kernelW) {
      return unimplemented(l, absl::StrCat("padding (top ", l.padTop, ", left ",
                                           l.padLeft, ", bottom ", l.padBottom,
                                           ", right ", l.padRight,
                                           ") not smaller than kernel ",
                                           l.kernelH, "x", l.kernelW));
    }
    int64_t spanH = l.input.h + l.padTop + l.padBottom - l.kernelH;
    int64_t spanW = l.input.w + l.padLeft + l.padRight - l.kernelW;
    if (spanH < 0 || spanW < 0) {
      return invalid(l, "kernel larger than the padded input");
    }
    int64_t oh = spanH / l.strideH + 1, ow = spanW / l.strideW + 1;
    int64_t oc = l.kind == LayerKind::Conv ? l.output.c : l.input.c;
    if (l.output.h != oh || l.output.w != ow || l.output.c != oc) {
      return invalid(l, absl::StrCat("output ", shapeText(l.output),
                                     " does not match the geometry (", oh, "x",
                                     ow, "x", oc, ")"));
    }
    // Windows must start inside the input (bottom/right padding is implicit).
    if ((oh - 1) * l.strideH - l.padTop > l.input.h - 1 ||
        (ow - 1) * l.strideW - l.padLeft > l.input.w - 1) {
      return unimplemented(l, "a window lies entirely in the padding");
    }
  } else if (l.kind == LayerKind::MatMul) {
    if (l.input.w != 1 || l.output.w != 1 || l.output.h != l.input.h) {
      return invalid(l, absl::StrCat("MatMul needs input m x 1 x k and output "
                                     "m x 1 x n, got ",
                                     shapeText(l.input), " -> ",
                                     shapeText(l.output)));
    }
  } else if (!(l.input == l.output)) {
    return invalid(l, absl::StrCat("elementwise output ", shapeText(l.output),
                                   " differs from input ", shapeText(l.input)));
  }
  if (l.hasWeights()) {
    int64_t oc = l.output.c;
    int64_t expected = l.kind == LayerKind::Conv
                           ? oc * l.kernelH * l.kernelW * l.input.c
                       : l.kind == LayerKind::DepthwiseConv
                           ? int64_t{l.kernelH} * l.kernelW * l.input.c
                           : oc * l.input.c;
    if (static_cast<int64_t>(l.weights.size()) != expected) {
      return invalid(
          l, absl::StrCat(l.weights.size(), " weights, expected ", expected));
    }
    if (static_cast<int64_t>(l.bias.size()) != oc ||
        static_cast<int64_t>(l.multiplier.size()) != oc ||
        static_cast<int64_t>(l.shift.size()) != oc) {
      return invalid(
          l, absl::StrCat("bias/multiplier/shift need ", oc, " entries each"));
    }
    for (int64_t i = 0; i < oc; ++i) {
      if (l.multiplier[i] < 0 || l.shift[i] < -31 || l.shift[i] > 30) {
        return invalid(l, absl::StrCat("channel ", i, ": multiplier ",
                                       l.multiplier[i], " / shift ", l.shift[i],
                                       " out of range"));
      }
    }
  }
  if (!validRescale(l.out) || !validRescale(l.alpha) ||
      !validRescale(l.inScale) || !validRescale(l.in2Scale)) {
    return invalid(l, "per-tensor multiplier/shift out of range");
  }
  if (l.addLeftShift < 0 || l.addLeftShift > 20) {
    return invalid(l, "add left shift outside 0..20");
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::npu
