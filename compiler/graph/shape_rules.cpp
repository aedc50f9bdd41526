// Shape rules: result types of each op kind from operand types, attributes and
// constant operands (ONNX opset-18 semantics).
#include "compiler/graph/shape_rules.h"

#include <algorithm>
#include <set>

#include "compiler/graph/status.h"

namespace osprey::compiler::graph::rules {
namespace {

absl::Status err(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

const TensorType &typeOf(const Op &op, unsigned i) {
  return op.operand(i)->type();
}

std::string str(llvm::ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return s + "]";
}

// Reads an integer-list attribute of length |n| or fills |defaultValue|.
absl::Status listAttr(const Op &op, llvm::StringRef name, size_t n,
                      int64_t defaultValue, std::vector<int64_t> &out) {
  const Attribute *a = op.getAttr(name);
  if (!a) {
    out.assign(n, defaultValue);
    return absl::OkStatus();
  }
  if (!a->isIntList() || a->getIntList().size() != n) {
    return err(name.str() + " must list " + std::to_string(n) + " integers");
  }
  out = a->getIntList();
  return absl::OkStatus();
}

// Window geometry shared by Conv and pooling: strides, dilations, pads.
struct Window {
  std::vector<int64_t> strides, dilations, pads;
  std::string autoPad;
};

absl::Status readWindow(const Op &op, size_t spatial, Window &w) {
  COMPILER_RETURN_IF_ERROR(listAttr(op, "strides", spatial, 1, w.strides));
  COMPILER_RETURN_IF_ERROR(listAttr(op, "dilations", spatial, 1, w.dilations));
  COMPILER_RETURN_IF_ERROR(listAttr(op, "pads", 2 * spatial, 0, w.pads));
  for (size_t i = 0; i < spatial; ++i) {
    if (w.strides[i] <= 0 || w.dilations[i] <= 0) {
      return err("strides and dilations must be positive");
    }
  }
  for (int64_t p : w.pads) {
    if (p < 0) {
      return err("pads must be non-negative");
    }
  }
  w.autoPad = op.getString("auto_pad", "NOTSET");
  if (w.autoPad != "NOTSET" && w.autoPad != "VALID" &&
      w.autoPad != "SAME_UPPER" && w.autoPad != "SAME_LOWER") {
    return err("unknown auto_pad '" + w.autoPad + "'");
  }
  return absl::OkStatus();
}

// Output extent of a sliding window along spatial axis |i|.
absl::Status windowExtent(const Window &w, size_t spatial, size_t i,
                          int64_t in, int64_t k, bool ceilMode,
                          int64_t &out) {
  if (in < 0 || k < 0) {
    out = kDynamic;
    return absl::OkStatus();
  }
  int64_t s = w.strides[i];
  if (w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER") {
    out = (in + s - 1) / s;
    return absl::OkStatus();
  }
  int64_t pb = 0, pe = 0;
  if (w.autoPad == "NOTSET") {
    pb = w.pads[i];
    pe = w.pads[i + spatial];
  }
  int64_t effective = w.dilations[i] * (k - 1) + 1;
  int64_t span = in + pb + pe - effective;
  if (span < 0) {
    return err("window of extent " + std::to_string(effective) +
               " does not fit input extent " + std::to_string(in) +
               " plus padding on spatial axis " + std::to_string(i));
  }
  out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
  // A window may not start inside the end padding only (ONNX ceil_mode rule).
  if (ceilMode && (out - 1) * s >= in + pb) {
    --out;
  }
  return absl::OkStatus();
}

absl::Status checkFloatOperand(const Op &op, unsigned i, llvm::StringRef what) {
  if (op.operand(i) && !isFloatType(typeOf(op, i).elementType())) {
    return err(what.str() + " must have a float element type");
  }
  return absl::OkStatus();
}

absl::Status checkVector(const Op &op, unsigned i, int64_t n,
                         llvm::StringRef what) {
  if (!op.operand(i)) {
    return absl::OkStatus();
  }
  const TensorType &t = typeOf(op, i);
  if (!t.hasRank()) {
    return absl::OkStatus();
  }
  if (t.rank() != 1 || (n >= 0 && t.dim(0) >= 0 && t.dim(0) != n)) {
    return err(what.str() + " must have shape [" + std::to_string(n) +
               "], found " + t.str());
  }
  return absl::OkStatus();
}

} // namespace

absl::Status sameAsFirst(const Op &op, std::vector<TensorType> &out) {
  const TensorType &t = typeOf(op, 0);
  if (op.is(OpKind::Clip)) {
    for (unsigned i = 1; i < op.numOperands(); ++i) {
      if (op.operand(i) && typeOf(op, i).hasRank() &&
          typeOf(op, i).rank() != 0) {
        return err("min and max must be scalars");
      }
    }
  }
  if (op.is(OpKind::Gelu)) {
    std::string approx = op.getString("approximate", "none");
    if (approx != "none" && approx != "tanh") {
      return err("unknown approximate '" + approx + "'");
    }
  }
  out = {t};
  return absl::OkStatus();
}

absl::Status broadcast(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 1);
  if (!op.is(OpKind::Pow) && a.elementType() != b.elementType()) {
    return err("operand element types differ (" +
               elementTypeName(a.elementType()).str() + " vs " +
               elementTypeName(b.elementType()).str() + ")");
  }
  if (!a.hasRank() || !b.hasRank()) {
    out = {TensorType::unranked(a.elementType())};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(broadcastShapes(a.dims(), b.dims(), dims));
  out = {TensorType::ranked(a.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status compare(const Op &op, std::vector<TensorType> &out) {
  COMPILER_RETURN_IF_ERROR(broadcast(op, out));
  out[0] = out[0].withElementType(ElementType::Bool);
  return absl::OkStatus();
}

absl::Status where(const Op &op, std::vector<TensorType> &out) {
  const TensorType &c = typeOf(op, 0), &x = typeOf(op, 1), &y = typeOf(op, 2);
  if (c.elementType() != ElementType::Bool) {
    return err("condition must have element type i1");
  }
  if (x.elementType() != y.elementType()) {
    return err("branch element types differ");
  }
  if (!c.hasRank() || !x.hasRank() || !y.hasRank()) {
    out = {TensorType::unranked(x.elementType())};
    return absl::OkStatus();
  }
  std::vector<int64_t> xy, dims;
  COMPILER_RETURN_IF_ERROR(broadcastShapes(x.dims(), y.dims(), xy));
  COMPILER_RETURN_IF_ERROR(broadcastShapes(c.dims(), xy, dims));
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status variadic(const Op &op, std::vector<TensorType> &out) {
  const TensorType &first = typeOf(op, 0);
  std::vector<int64_t> dims = first.hasRank() ? first.dims().vec()
                                              : std::vector<int64_t>();
  bool ranked = first.hasRank();
  for (unsigned i = 1; i < op.numOperands(); ++i) {
    const TensorType &t = typeOf(op, i);
    if (t.elementType() != first.elementType()) {
      return err("operand " + std::to_string(i) + " has element type " +
                 elementTypeName(t.elementType()).str() + ", operand 0 " +
                 elementTypeName(first.elementType()).str());
    }
    if (!t.hasRank()) {
      ranked = false;
      continue;
    }
    if (ranked) {
      std::vector<int64_t> next;
      COMPILER_RETURN_IF_ERROR(broadcastShapes(dims, t.dims(), next));
      dims = std::move(next);
    }
  }
  out = {ranked ? TensorType::ranked(first.elementType(), dims)
                : TensorType::unranked(first.elementType())};
  return absl::OkStatus();
}

absl::Status cast(const Op &op, std::vector<TensorType> &out) {
  std::string to = op.getString("to", "");
  auto et = parseElementType(to);
  if (!et) {
    return err("unsupported target type '" + to + "'");
  }
  out = {typeOf(op, 0).withElementType(*et)};
  return absl::OkStatus();
}

absl::Status constant(const Op &op, std::vector<TensorType> &out) {
  const TensorType &t = op.result(0)->type();
  if (!t.hasStaticShape()) {
    return err("constant must have a static shape, found " + t.str());
  }
  size_t expected = static_cast<size_t>(t.numElements()) *
                    elementByteSize(t.elementType());
  if (op.value().size() != expected) {
    return err("constant holds " + std::to_string(op.value().size()) +
               " bytes, type " + t.str() + " needs " +
               std::to_string(expected));
  }
  out = {t};
  return absl::OkStatus();
}

absl::Status constantOfShape(const Op &op, std::vector<TensorType> &out) {
  std::string name = op.getString("dtype", "f32");
  auto et = parseElementType(name);
  if (!et) {
    return err("unsupported element type '" + name + "'");
  }
  const TensorType &s = typeOf(op, 0);
  if (s.hasRank() && (s.rank() != 1 || s.elementType() != ElementType::I64)) {
    return err("the shape operand must be a 1-D int64 tensor, found " +
               s.str());
  }
  auto dims = getConstantInts(op.operand(0));
  if (!dims) {
    out = {s.hasStaticShape()
               ? TensorType::ranked(*et, std::vector<int64_t>(s.dim(0),
                                                              kDynamic))
               : TensorType::unranked(*et)};
    return absl::OkStatus();
  }
  for (int64_t d : *dims) {
    if (d < 0) {
      return err("shape dimension " + std::to_string(d) + " is negative");
    }
  }
  out = {TensorType::ranked(*et, *dims)};
  return absl::OkStatus();
}

absl::Status conv(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &w = typeOf(op, 1);
  COMPILER_RETURN_IF_ERROR(checkFloatOperand(op, 1, "weight"));
  if (!x.hasRank() || !w.hasRank()) {
    out = {TensorType::unranked(x.elementType())};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(convDims(op, x, w, dims));
  COMPILER_RETURN_IF_ERROR(checkVector(op, 2, dims[1], "bias"));
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status convDims(const Op &op, const TensorType &x, const TensorType &w,
                      std::vector<int64_t> &dims) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return err("expected input and weight of equal rank >= 3, found " +
               x.str() + " and " + w.str());
  }
  size_t spatial = x.rank() - 2;
  int64_t group = op.getInt("group", 1);
  if (group <= 0) {
    return err("group must be positive, found " + std::to_string(group));
  }
  int64_t c = x.dim(1), m = w.dim(0);
  if (c >= 0 && c % group != 0) {
    return err("group=" + std::to_string(group) +
               " does not divide input channels " + std::to_string(c));
  }
  if (m >= 0 && m % group != 0) {
    return err("group=" + std::to_string(group) +
               " does not divide output channels " + std::to_string(m));
  }
  if (c >= 0 && w.dim(1) >= 0 && w.dim(1) * group != c) {
    return err("weight expects " + std::to_string(w.dim(1) * group) +
               " input channels, input has " + std::to_string(c));
  }
  std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
  if (const Attribute *ks = op.getAttr("kernel_shape")) {
    if (!ks->isIntList() || ks->getIntList().size() != spatial) {
      return err("kernel_shape must list " + std::to_string(spatial) +
                 " integers");
    }
    for (size_t i = 0; i < spatial; ++i) {
      if (kernel[i] >= 0 && kernel[i] != ks->getIntList()[i]) {
        return err("kernel_shape " + str(ks->getIntList()) +
                   " does not match weight " + w.str());
      }
    }
  }
  Window win;
  COMPILER_RETURN_IF_ERROR(readWindow(op, spatial, win));
  dims = {x.dim(0), m};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extent;
    COMPILER_RETURN_IF_ERROR(windowExtent(win, spatial, i, x.dim(2 + i),
                                          kernel[i], false, extent));
    dims.push_back(extent);
  }
  return absl::OkStatus();
}

absl::Status convTranspose(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &w = typeOf(op, 1);
  if (!x.hasRank() || !w.hasRank()) {
    out = {TensorType::unranked(x.elementType())};
    return absl::OkStatus();
  }
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return err("expected input and weight of equal rank >= 3");
  }
  size_t spatial = x.rank() - 2;
  int64_t group = op.getInt("group", 1);
  if (group <= 0) {
    return err("group must be positive");
  }
  if (x.dim(1) >= 0 && w.dim(0) >= 0 && x.dim(1) != w.dim(0)) {
    return err("weight expects " + std::to_string(w.dim(0)) +
               " input channels, input has " + std::to_string(x.dim(1)));
  }
  int64_t m = w.dim(1) < 0 ? kDynamic : w.dim(1) * group;
  COMPILER_RETURN_IF_ERROR(checkVector(op, 2, m, "bias"));
  Window win;
  COMPILER_RETURN_IF_ERROR(readWindow(op, spatial, win));
  std::vector<int64_t> outputPadding, outputShape;
  COMPILER_RETURN_IF_ERROR(
      listAttr(op, "output_padding", spatial, 0, outputPadding));
  if (op.hasAttr("output_shape")) {
    COMPILER_RETURN_IF_ERROR(
        listAttr(op, "output_shape", spatial, 0, outputShape));
  }
  std::vector<int64_t> dims = {x.dim(0), m};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = x.dim(2 + i), k = w.dim(2 + i), s = win.strides[i];
    if (!outputShape.empty()) {
      dims.push_back(outputShape[i]);
    } else if (in < 0 || k < 0) {
      dims.push_back(kDynamic);
    } else if (win.autoPad == "SAME_UPPER" || win.autoPad == "SAME_LOWER") {
      dims.push_back(in * s);
    } else {
      int64_t pads = win.autoPad == "VALID"
                         ? 0
                         : win.pads[i] + win.pads[i + spatial];
      int64_t extent = s * (in - 1) + outputPadding[i] +
                       (k - 1) * win.dilations[i] + 1 - pads;
      if (extent <= 0) {
        return err("output extent on spatial axis " + std::to_string(i) +
                   " would be " + std::to_string(extent));
      }
      dims.push_back(extent);
    }
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status gemm(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 1);
  if (a.elementType() != b.elementType()) {
    return err("operand element types differ");
  }
  if (!a.hasRank() || !b.hasRank()) {
    out = {TensorType::ranked(a.elementType(), {kDynamic, kDynamic})};
    return absl::OkStatus();
  }
  if (a.rank() != 2 || b.rank() != 2) {
    return err("A and B must be 2-D, found " + a.str() + " and " + b.str());
  }
  bool ta = op.getInt("transA", 0), tb = op.getInt("transB", 0);
  int64_t m = a.dim(ta ? 1 : 0), ka = a.dim(ta ? 0 : 1);
  int64_t kb = b.dim(tb ? 1 : 0), n = b.dim(tb ? 0 : 1);
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return err("inner dimensions differ: " + std::to_string(ka) + " vs " +
               std::to_string(kb));
  }
  if (op.operand(2) && typeOf(op, 2).hasRank()) {
    std::vector<int64_t> dims;
    COMPILER_RETURN_IF_ERROR(broadcastShapes(typeOf(op, 2).dims(), {m, n},
                                             dims));
    if (dims.size() != 2 || (m >= 0 && dims[0] != m) ||
        (n >= 0 && dims[1] != n)) {
      return err("C " + typeOf(op, 2).str() +
                 " is not unidirectionally broadcastable to [M, N]");
    }
  }
  out = {TensorType::ranked(a.elementType(), {m, n})};
  return absl::OkStatus();
}

absl::Status matmul(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 1);
  if (a.elementType() != b.elementType()) {
    return err("operand element types differ");
  }
  if (!a.hasRank() || !b.hasRank()) {
    out = {TensorType::unranked(a.elementType())};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(matmulDims(a, b, dims));
  out = {TensorType::ranked(a.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status matmulDims(const TensorType &a, const TensorType &b,
                        std::vector<int64_t> &batch) {
  if (a.rank() == 0 || b.rank() == 0) {
    return err("operands must have rank >= 1");
  }
  std::vector<int64_t> ad(a.dims()), bd(b.dims());
  bool aVec = ad.size() == 1, bVec = bd.size() == 1;
  if (aVec) {
    ad.insert(ad.begin(), 1);
  }
  if (bVec) {
    bd.push_back(1);
  }
  int64_t ka = ad.back(), kb = bd[bd.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return err("inner dimensions differ: " + a.str() + " x " + b.str());
  }
  COMPILER_RETURN_IF_ERROR(
      broadcastShapes(llvm::ArrayRef<int64_t>(ad).drop_back(2),
                      llvm::ArrayRef<int64_t>(bd).drop_back(2), batch));
  if (!aVec) {
    batch.push_back(ad[ad.size() - 2]);
  }
  if (!bVec) {
    batch.push_back(bd.back());
  }
  return absl::OkStatus();
}

absl::Status batchNorm(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (op.getInt("training_mode", 0) != 0) {
    return err("training_mode=1 is not supported");
  }
  if (x.hasRank() && x.rank() < 2) {
    return err("input must have rank >= 2");
  }
  int64_t c = x.hasRank() ? x.dim(1) : kDynamic;
  static const char *kNames[] = {"", "scale", "B", "mean", "var"};
  for (unsigned i = 1; i < 5; ++i) {
    COMPILER_RETURN_IF_ERROR(checkVector(op, i, c, kNames[i]));
  }
  out = {x};
  return absl::OkStatus();
}

absl::Status pool(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  if (x.rank() < 3) {
    return err("input must have rank >= 3, found " + x.str());
  }
  size_t spatial = x.rank() - 2;
  std::vector<int64_t> kernel;
  if (!op.hasAttr("kernel_shape")) {
    return err("kernel_shape is required");
  }
  COMPILER_RETURN_IF_ERROR(listAttr(op, "kernel_shape", spatial, 1, kernel));
  for (int64_t k : kernel) {
    if (k <= 0) {
      return err("kernel_shape must be positive");
    }
  }
  Window win;
  COMPILER_RETURN_IF_ERROR(readWindow(op, spatial, win));
  bool ceilMode = op.getInt("ceil_mode", 0) != 0;
  std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extent;
    COMPILER_RETURN_IF_ERROR(windowExtent(win, spatial, i, x.dim(2 + i),
                                          kernel[i], ceilMode, extent));
    dims.push_back(extent);
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status globalPool(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  if (x.rank() < 3) {
    return err("input must have rank >= 3");
  }
  std::vector<int64_t> dims(x.rank(), 1);
  dims[0] = x.dim(0);
  dims[1] = x.dim(1);
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status flatten(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {TensorType::ranked(x.elementType(), {kDynamic, kDynamic})};
    return absl::OkStatus();
  }
  int64_t axis = op.getInt("axis", 1);
  if (axis < 0) {
    axis += x.rank();
  }
  if (axis < 0 || axis > x.rank()) {
    return err("axis " + std::to_string(op.getInt("axis", 1)) +
               " is out of range for rank " + std::to_string(x.rank()));
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t &acc = i < axis ? outer : inner;
    acc = (acc < 0 || x.dim(i) < 0) ? kDynamic : acc * x.dim(i);
  }
  out = {TensorType::ranked(x.elementType(), {outer, inner})};
  return absl::OkStatus();
}

absl::Status reshape(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &s = typeOf(op, 1);
  if (s.elementType() != ElementType::I64) {
    return err("shape must have element type i64");
  }
  auto shape = getConstantInts(op.operand(1));
  if (!shape) {
    if (s.hasStaticShape() && s.rank() == 1) {
      out = {TensorType::ranked(x.elementType(),
                                std::vector<int64_t>(s.dim(0), kDynamic))};
    } else {
      out = {TensorType::unranked(x.elementType())};
    }
    return absl::OkStatus();
  }
  bool allowZero = op.getInt("allowzero", 0) != 0;
  std::vector<int64_t> dims(*shape);
  int inferred = -1;
  int64_t known = 1;
  bool knownDynamic = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allowZero) {
      if (!x.hasRank() || static_cast<int64_t>(i) >= x.rank()) {
        if (!x.hasRank()) {
          dims[i] = kDynamic;
          knownDynamic = true;
          continue;
        }
        return err("shape entry " + std::to_string(i) +
                   " copies a dimension the input does not have");
      }
      dims[i] = x.dim(i);
    } else if (dims[i] == -1) {
      if (inferred >= 0) {
        return err("shape " + str(*shape) + " has more than one -1");
      }
      inferred = static_cast<int>(i);
      continue;
    } else if (dims[i] < -1) {
      return err("shape " + str(*shape) + " has a negative extent");
    }
    if (dims[i] < 0) {
      knownDynamic = true;
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      return err("shape " + str(*shape) +
                 " has more elements than can be addressed");
    }
  }
  int64_t total = x.numElements();
  if (inferred >= 0) {
    if (total < 0 || knownDynamic) {
      dims[inferred] = kDynamic;
    } else if (known == 0 || total % known != 0) {
      return err("cannot reshape " + x.str() + " into shape " + str(*shape));
    } else {
      dims[inferred] = total / known;
    }
  } else if (total >= 0 && !knownDynamic && total != known) {
    return err("cannot reshape " + x.str() + " (" + std::to_string(total) +
               " elements) into shape " + str(*shape));
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status transpose(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  std::vector<int64_t> perm = op.getIntList("perm");
  if (!op.hasAttr("perm")) {
    for (int64_t i = x.rank() - 1; i >= 0; --i) {
      perm.push_back(i);
    }
  }
  if (static_cast<int64_t>(perm.size()) != x.rank()) {
    return err("perm " + str(perm) + " does not match rank " +
               std::to_string(x.rank()));
  }
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p]) {
      return err("perm " + str(perm) + " is not a permutation");
    }
    seen[p] = true;
    dims.push_back(x.dim(p));
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status concat(const Op &op, std::vector<TensorType> &out) {
  const TensorType &first = typeOf(op, 0);
  if (!op.hasAttr("axis")) {
    return err("axis is required");
  }
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    if (!op.operand(i)) {
      return err("inputs must not be absent");
    }
    if (typeOf(op, i).elementType() != first.elementType()) {
      return err("inputs have different element types");
    }
    if (!typeOf(op, i).hasRank()) {
      out = {TensorType::unranked(first.elementType())};
      return absl::OkStatus();
    }
  }
  int64_t rank = first.rank();
  int64_t axis = op.getInt("axis", 0);
  COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, rank, "axis"));
  std::vector<int64_t> dims(first.dims());
  dims[axis] = 0;
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    const TensorType &t = typeOf(op, i);
    if (t.rank() != rank) {
      return err("inputs have different ranks");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        dims[d] = (dims[d] < 0 || t.dim(d) < 0) ? kDynamic : dims[d] + t.dim(d);
      } else if (t.dim(d) >= 0) {
        if (dims[d] >= 0 && dims[d] != t.dim(d)) {
          return err("input #" + std::to_string(i) + " " + t.str() +
                     " differs from " + first.str() + " outside axis " +
                     std::to_string(axis));
        }
        dims[d] = t.dim(d);
      }
    }
  }
  out = {TensorType::ranked(first.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status split(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  size_t n = op.numResults();
  if (!x.hasRank()) {
    out.assign(n, x);
    return absl::OkStatus();
  }
  int64_t axis = op.getInt("axis", 0);
  COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
  if (op.hasAttr("num_outputs") &&
      op.getInt("num_outputs", 0) != static_cast<int64_t>(n)) {
    return err("num_outputs does not match the number of results");
  }
  int64_t extent = x.dim(axis);
  std::vector<int64_t> sizes;
  if (op.operand(1)) {
    auto s = getConstantInts(op.operand(1));
    if (!s) {
      sizes.assign(n, kDynamic);
    } else {
      sizes = *s;
      if (sizes.size() != n) {
        return err("split lists " + std::to_string(sizes.size()) +
                   " sizes for " + std::to_string(n) + " results");
      }
      int64_t sum = 0;
      for (int64_t v : sizes) {
        if (v < 0) {
          return err("split sizes must be non-negative");
        }
        sum += v;
      }
      if (extent >= 0 && sum != extent) {
        return err("split sizes " + str(sizes) + " do not add up to " +
                   std::to_string(extent));
      }
    }
  } else if (extent < 0) {
    sizes.assign(n, kDynamic);
  } else {
    int64_t chunk = (extent + n - 1) / n;
    for (size_t i = 0; i < n; ++i) {
      sizes.push_back(std::max<int64_t>(
          0, std::min<int64_t>(chunk, extent - chunk * static_cast<int64_t>(i))));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> dims(x.dims());
    dims[axis] = sizes[i];
    out.push_back(TensorType::ranked(x.elementType(), dims));
  }
  return absl::OkStatus();
}

absl::Status slice(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  auto starts = getConstantInts(op.operand(1));
  auto ends = getConstantInts(op.operand(2));
  std::optional<std::vector<int64_t>> axes, steps;
  if (op.operand(3)) {
    axes = getConstantInts(op.operand(3));
  }
  if (op.operand(4)) {
    steps = getConstantInts(op.operand(4));
  }
  if ((op.operand(3) && !axes) || !starts || !ends ||
      (op.operand(4) && !steps)) {
    out = {TensorType::ranked(x.elementType(),
                              std::vector<int64_t>(x.rank(), kDynamic))};
    return absl::OkStatus();
  }
  size_t n = starts->size();
  if (ends->size() != n || (axes && axes->size() != n) ||
      (steps && steps->size() != n)) {
    return err("starts, ends, axes and steps must have equal lengths");
  }
  std::vector<int64_t> dims(x.dims());
  std::vector<bool> seen(x.rank(), false);
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
    COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
    if (seen[axis]) {
      return err("axis " + std::to_string(axis) + " is sliced twice");
    }
    seen[axis] = true;
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) {
      return err("steps must be non-zero");
    }
    int64_t d = x.dim(axis);
    if (d < 0) {
      continue;
    }
    int64_t s = (*starts)[i], e = (*ends)[i];
    s = s < 0 ? s + d : s;
    e = e < 0 ? e + d : e;
    int64_t len;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    dims[axis] = len;
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status squeeze(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  std::vector<bool> drop(x.rank(), false);
  if (op.operand(1)) {
    auto axes = getConstantInts(op.operand(1));
    if (!axes) {
      out = {TensorType::unranked(x.elementType())};
      return absl::OkStatus();
    }
    for (int64_t axis : *axes) {
      COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
      if (x.dim(axis) > 1 || x.dim(axis) == 0) {
        return err("cannot squeeze dimension " + std::to_string(axis) +
                   " of extent " + std::to_string(x.dim(axis)));
      }
      drop[axis] = true;
    }
  } else {
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (x.dim(i) < 0) {
        out = {TensorType::unranked(x.elementType())};
        return absl::OkStatus();
      }
      drop[i] = x.dim(i) == 1;
    }
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!drop[i]) {
      dims.push_back(x.dim(i));
    }
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status unsqueeze(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  auto axes = getConstantInts(op.operand(1));
  if (!x.hasRank() || !axes) {
    out = {TensorType::unranked(x.elementType())};
    return absl::OkStatus();
  }
  int64_t rank = x.rank() + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, rank, "axis"));
    if (inserted[axis]) {
      return err("axis " + std::to_string(axis) + " is listed twice");
    }
    inserted[axis] = true;
  }
  std::vector<int64_t> dims;
  int64_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    dims.push_back(inserted[i] ? 1 : x.dim(next++));
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

// Checks that operand 1 of Gather or GatherElements holds i32 or i64
// indices and, when they are constants and |extent| is known, that each is in
// [-extent, extent).
absl::Status checkIndices(const Op &op, int64_t axis, int64_t extent) {
  if (auto values = getConstantInts(op.operand(1)); values && extent >= 0) {
    for (int64_t v : *values) {
      if (v < -extent || v >= extent) {
        return err("index " + std::to_string(v) +
                   " is out of range for axis " + std::to_string(axis) +
                   " of extent " + std::to_string(extent));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status checkIndexType(const TensorType &idx) {
  if (idx.elementType() != ElementType::I64 &&
      idx.elementType() != ElementType::I32) {
    return err("indices must be i32 or i64");
  }
  return absl::OkStatus();
}

absl::Status gather(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &idx = typeOf(op, 1);
  COMPILER_RETURN_IF_ERROR(checkIndexType(idx));
  if (!x.hasRank() || !idx.hasRank()) {
    out = {TensorType::unranked(x.elementType())};
    return absl::OkStatus();
  }
  int64_t axis = op.getInt("axis", 0);
  COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
  COMPILER_RETURN_IF_ERROR(checkIndices(op, axis, x.dim(axis)));
  std::vector<int64_t> dims(x.dims().begin(), x.dims().begin() + axis);
  dims.insert(dims.end(), idx.dims().begin(), idx.dims().end());
  dims.insert(dims.end(), x.dims().begin() + axis + 1, x.dims().end());
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

// GatherElements: the result has the indices' shape; along every other
// axis than |axis| the indices may not reach past the data.
absl::Status gatherElements(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &idx = typeOf(op, 1);
  COMPILER_RETURN_IF_ERROR(checkIndexType(idx));
  if (!x.hasRank() || !idx.hasRank()) {
    out = {idx.hasRank() ? TensorType::ranked(x.elementType(), idx.dims())
                         : TensorType::unranked(x.elementType())};
    return absl::OkStatus();
  }
  if (x.rank() != idx.rank()) {
    return err("indices have rank " + std::to_string(idx.rank()) +
               ", the data rank " + std::to_string(x.rank()));
  }
  int64_t axis = op.getInt("axis", 0);
  COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != axis && idx.dim(d) != kDynamic && x.dim(d) != kDynamic &&
        idx.dim(d) > x.dim(d)) {
      return err("indices dimension " + std::to_string(d) + " (" +
                 std::to_string(idx.dim(d)) + ") exceeds the data's (" +
                 std::to_string(x.dim(d)) + ")");
    }
  }
  COMPILER_RETURN_IF_ERROR(checkIndices(op, axis, x.dim(axis)));
  out = {TensorType::ranked(x.elementType(), idx.dims())};
  return absl::OkStatus();
}

absl::Status pad(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  std::string mode = op.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return err("unknown mode '" + mode + "'");
  }
  auto pads = getConstantInts(op.operand(1));
  if (!x.hasRank() || !pads) {
    out = {x.hasRank() ? TensorType::ranked(
                             x.elementType(),
                             std::vector<int64_t>(x.rank(), kDynamic))
                       : x};
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  if (op.operand(3)) {
    auto a = getConstantInts(op.operand(3));
    if (!a) {
      out = {TensorType::ranked(x.elementType(),
                                std::vector<int64_t>(x.rank(), kDynamic))};
      return absl::OkStatus();
    }
    axes = *a;
  } else {
    for (int64_t i = 0; i < x.rank(); ++i) {
      axes.push_back(i);
    }
  }
  if (pads->size() != 2 * axes.size()) {
    return err("pads lists " + std::to_string(pads->size()) +
               " values, expected " + std::to_string(2 * axes.size()));
  }
  std::vector<int64_t> dims(x.dims());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
    if (dims[axis] < 0) {
      continue;
    }
    dims[axis] += (*pads)[i] + (*pads)[i + axes.size()];
    if (dims[axis] < 0) {
      return err("pads remove more than the extent of axis " +
                 std::to_string(axis));
    }
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status expand(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  auto shape = getConstantInts(op.operand(1));
  if (!x.hasRank() || !shape) {
    const TensorType &s = typeOf(op, 1);
    if (x.hasRank() && s.hasStaticShape() && s.rank() == 1) {
      out = {TensorType::ranked(
          x.elementType(),
          std::vector<int64_t>(std::max(x.rank(), s.dim(0)), kDynamic))};
    } else {
      out = {TensorType::unranked(x.elementType())};
    }
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(broadcastShapes(x.dims(), *shape, dims));
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status shape(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {TensorType::ranked(ElementType::I64, {kDynamic})};
    return absl::OkStatus();
  }
  int64_t r = x.rank();
  int64_t start = op.getInt("start", 0), end = op.getInt("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  out = {TensorType::ranked(ElementType::I64, {std::max<int64_t>(0, end - start)})};
  return absl::OkStatus();
}

absl::Status softmax(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (x.hasRank()) {
    int64_t axis = op.getInt("axis", -1);
    COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
  }
  out = {x};
  return absl::OkStatus();
}

absl::Status reduce(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  bool keepDims = op.getInt("keepdims", 1) != 0;
  bool noop = op.getInt("noop_with_empty_axes", 0) != 0;
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  std::vector<bool> reduced(x.rank(), false);
  std::vector<int64_t> axes;
  if (op.operand(1)) {
    auto a = getConstantInts(op.operand(1));
    if (!a) {
      out = {keepDims ? TensorType::ranked(
                            x.elementType(),
                            std::vector<int64_t>(x.rank(), kDynamic))
                      : TensorType::unranked(x.elementType())};
      return absl::OkStatus();
    }
    axes = *a;
  }
  if (axes.empty()) {
    if (noop) {
      out = {x};
      return absl::OkStatus();
    }
    reduced.assign(x.rank(), true);
  }
  for (int64_t axis : axes) {
    COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
    reduced[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!reduced[i]) {
      dims.push_back(x.dim(i));
    } else if (keepDims) {
      dims.push_back(1);
    }
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

absl::Status bitShift(const Op &op, std::vector<TensorType> &out) {
  ElementType et = typeOf(op, 0).elementType();
  if (et != ElementType::U8 && et != ElementType::U16 &&
      et != ElementType::U32 && et != ElementType::U64) {
    return err("shifts unsigned integers only, not " +
               elementTypeName(et).str());
  }
  std::string direction = op.getString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return err("direction must be LEFT or RIGHT, not '" + direction + "'");
  }
  return broadcast(op, out);
}

absl::Status argMinMax(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (!x.hasRank()) {
    out = {TensorType::unranked(ElementType::I64)};
    return absl::OkStatus();
  }
  if (x.rank() == 0) {
    return err("the input is a scalar: it has no axis to search");
  }
  int64_t axis = op.getInt("axis", 0);
  COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
  if (x.dim(axis) == 0) {
    return err("axis " + std::to_string(axis) +
               " is empty: there is no element to index");
  }
  std::vector<int64_t> dims = x.dims().vec();
  if (op.getInt("keepdims", 1) != 0) {
    dims[axis] = 1;
  } else {
    dims.erase(dims.begin() + axis);
  }
  out = {TensorType::ranked(ElementType::I64, dims)};
  return absl::OkStatus();
}

absl::Status cumSum(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &a = typeOf(op, 1);
  if (a.elementType() != ElementType::I32 &&
      a.elementType() != ElementType::I64) {
    return err("the axis must be int32 or int64");
  }
  if (a.hasRank() && a.numElements() != 1) {
    return err("the axis must be a single value");
  }
  if (x.hasRank()) {
    if (x.rank() == 0) {
      return err("the input is a scalar: it has no axis to sum along");
    }
    if (auto axis = getConstantInts(op.operand(1))) {
      int64_t v = (*axis)[0];
      COMPILER_RETURN_IF_ERROR(normalizeAxis(v, x.rank(), "axis"));
    }
  }
  out = {x};
  return absl::OkStatus();
}

absl::Status layerNorm(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (x.hasRank()) {
    int64_t axis = op.getInt("axis", -1);
    COMPILER_RETURN_IF_ERROR(normalizeAxis(axis, x.rank(), "axis"));
    for (unsigned i = 1; i < op.numOperands(); ++i) {
      if (!op.operand(i) || !typeOf(op, i).hasRank()) {
        continue;
      }
      std::vector<int64_t> dims;
      llvm::ArrayRef<int64_t> normalized = x.dims().drop_front(axis);
      COMPILER_RETURN_IF_ERROR(
          broadcastShapes(normalized, typeOf(op, i).dims(), dims));
      if (dims.size() != normalized.size()) {
        return err(std::string(i == 1 ? "scale" : "bias") + " " +
                   typeOf(op, i).str() +
                   " does not broadcast to the normalized dimensions");
      }
    }
  }
  out = {x};
  // Optional Mean and InvStdDev: the normalized dimensions reduced to 1.
  if (op.numResults() > 1) {
    TensorType stats = TensorType::unranked(ElementType::F32);
    if (x.hasRank()) {
      int64_t axis = op.getInt("axis", -1);
      axis = axis < 0 ? axis + x.rank() : axis;
      std::vector<int64_t> dims = x.dims().vec();
      std::fill(dims.begin() + axis, dims.end(), 1);
      stats = TensorType::ranked(ElementType::F32, dims);
    }
    out.resize(op.numResults(), stats);
  }
  return absl::OkStatus();
}

absl::Status resize(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  std::string mode = op.getString("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    return err("mode '" + mode + "' is not supported (nearest, linear, cubic)");
  }
  if (op.hasAttr("axes")) {
    return err("the axes attribute is not supported");
  }
  std::string policy = op.getString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch") {
    return err("keep_aspect_ratio_policy '" + policy +
               "' is not supported (stretch only)");
  }
  if (op.getInt("antialias", 0) != 0) {
    return err("antialias=1 is not supported");
  }
  if (!x.hasRank()) {
    out = {x};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims(x.rank(), kDynamic);
  const Value *scalesV = op.operand(2), *sizesV = op.operand(3);
  bool hasScales = scalesV && !(scalesV->type().hasStaticShape() &&
                                scalesV->type().numElements() == 0);
  bool hasSizes = sizesV && !(sizesV->type().hasStaticShape() &&
                              sizesV->type().numElements() == 0);
  if (hasScales == hasSizes) {
    return err("exactly one of scales and sizes must be given");
  }
  if (hasSizes) {
    if (auto sizes = getConstantInts(sizesV)) {
      if (static_cast<int64_t>(sizes->size()) != x.rank()) {
        return err("sizes must list one extent per input dimension");
      }
      dims = *sizes;
    }
  } else if (auto scales = getConstantFloats(scalesV)) {
    if (static_cast<int64_t>(scales->size()) != x.rank()) {
      return err("scales must list one factor per input dimension");
    }
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (!((*scales)[i] > 0)) {
        return err("scales must be positive");
      }
      if (x.dim(i) < 0) {
        dims[i] = kDynamic;
        continue;
      }
      const double extent = static_cast<double>(x.dim(i)) * (*scales)[i];
      if (!(extent < 9.0e18)) {
        return err("scale " + std::to_string((*scales)[i]) +
                   " makes output dimension " + std::to_string(i) +
                   " larger than can be addressed");
      }
      dims[i] = static_cast<int64_t>(extent);
    }
  }
  out = {TensorType::ranked(x.elementType(), dims)};
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph::rules
