// Lowers graph ops to structured ops.
#include "compiler/structured/lower_graph.h"

#include <cmath>
#include <set>
#include <unordered_map>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/status.h"
#include "compiler/structured/lower_quantized.h"

namespace osprey::compiler::structured {
namespace {

using graph::Op;
using graph::Value;
using SK = ScalarKind;

// Graph inputs are checked first, so a dynamic value inside the graph has a
// shape computed from tensor data.
constexpr const char *kDynamicResult =
    "dynamic shapes are not implemented (the graph inputs are static, so "
    "this shape depends on tensor values known only at run time)";

class Lowering : public QuantizedLoweringContext {
public:
  explicit Lowering(const graph::Graph &graph) : graph_(graph) {}

  absl::StatusOr<unsigned> valueTensor(const Value *v) override {
    return tensorFor(v);
  }
  unsigned tempTensor(const std::string &base, TensorType type) override {
    return newTensor(base, std::move(type));
  }
  StructuredProgram &structuredProgram() override { return program_; }

  absl::StatusOr<StructuredProgram> run() {
    program_.name = graph_.name();
    for (Value *input : graph_.inputs()) {
      if (!input->type().hasStaticShape()) {
        return absl::UnimplementedError(
            "graph input '" + input->name() + "' has dynamic type " +
            input->type().str() +
            ": dynamic shapes are not implemented; pin every dimension "
            "(osprey-compile --input-shape=" +
            input->name() + ":<d0>x<d1>...)");
      }
      COMPILER_ASSIGN_OR_RETURN(unsigned t, tensorFor(input));
      program_.tensors[t].isInput = true;
      program_.inputs.push_back(t);
      program_.inputNames.push_back(input->name());
    }
    for (const auto &op : graph_.ops()) {
      COMPILER_RETURN_IF_ERROR(lowerOp(*op));
    }
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      Value *output = graph_.outputs()[i];
      program_.outputNames.push_back(i < graph_.outputNames().size()
                                         ? graph_.outputNames()[i]
                                         : output->name());
      COMPILER_ASSIGN_OR_RETURN(unsigned t, tensorFor(output));
      if (!isComputed(t)) {
        t = copyForOutput(t);
      }
      program_.tensors[t].isOutput = true;
      program_.outputs.push_back(t);
    }
    return std::move(program_);
  }

  // Whether some op computes |t| (possibly reshaped), as opposed to |t|
  // being a graph input or a constant seen through views.
  bool isComputed(unsigned t) const {
    for (int p = program_.producer(t); p >= 0; p = program_.producer(t)) {
      if (!program_.ops[p].isView) {
        return true;
      }
      t = program_.ops[p].inputs[0].tensor;
    }
    return false;
  }

  // A graph output that is an input or a constant gets its own copy, so
  // every output is written by a dispatch into a buffer the module returns.
  unsigned copyForOutput(unsigned t) {
    TensorInfo &source = program_.tensors[t];
    unsigned n = source.type.rank();
    StructuredOp s;
    s.nodeName = "output " + source.name;
    s.bounds = source.type.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    s.inputs.push_back({t, AffineMap::identity(n)});
    s.body.yield(s.body.input(0));
    TensorType type = source.type;
    unsigned out = newTensor(source.name + "_out", type);
    s.output = {out, AffineMap::identity(n)};
    program_.ops.push_back(std::move(s));
    return out;
  }

private:
  absl::StatusOr<unsigned> tensorFor(const Value *v) {
    auto it = tensors_.find(v);
    if (it != tensors_.end()) {
      return it->second;
    }
    if (!v->type().hasStaticShape()) {
      std::string where =
          v->definingOp() ? v->definingOp()->describe() + ": result"
                          : std::string("value");
      return absl::UnimplementedError(
          where + " '" + v->name() + "' has dynamic type " + v->type().str() +
          ": " + kDynamicResult);
    }
    return newTensor(v->name(), v->type(), v);
  }

  unsigned newTensor(std::string base, TensorType type,
                     const Value *v = nullptr) {
    std::string name;
    for (char c : base) {
      name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    }
    if (name.empty()) {
      name = "t";
    }
    std::string unique = name;
    for (int i = 1; usedNames_.count(unique); ++i) {
      unique = name + "_" + std::to_string(i);
    }
    usedNames_.insert(unique);
    TensorInfo info;
    info.name = unique;
    info.type = std::move(type);
    program_.tensors.push_back(std::move(info));
    unsigned t = program_.tensors.size() - 1;
    if (v) {
      tensors_[v] = t;
    }
    return t;
  }

  // Map reading an operand of shape |in| broadcast (ONNX rules) against loop
  // dims |out| (the first loops of a |numDims|-loop nest).
  static AffineMap broadcastMap(llvm::ArrayRef<int64_t> in,
                                llvm::ArrayRef<int64_t> out,
                                unsigned numDims) {
    AffineMap m;
    m.numDims = numDims;
    size_t offset = out.size() - in.size();
    for (size_t j = 0; j < in.size(); ++j) {
      if (in[j] == 1 && out[offset + j] != 1) {
        m.results.push_back(AffineExpr::constantExpr(numDims, 0));
      } else {
        m.results.push_back(AffineExpr::dim(numDims, offset + j));
      }
    }
    return m;
  }

  // Adds an all-parallel op over the shape of |result| whose inputs are
  // broadcast against it.
  absl::Status elementwise(const Op &op, const Value *result,
                           std::vector<const Value *> inputs,
                           ScalarBody body) {
    StructuredOp s;
    s.nodeName = op.nodeName();
    const TensorType &type = result->type();
    s.bounds = type.dims().vec();
    s.iterators.assign(type.rank(), IteratorType::Parallel);
    unsigned n = type.rank();
    for (const Value *in : inputs) {
      COMPILER_ASSIGN_OR_RETURN(unsigned t, tensorFor(in));
      s.inputs.push_back({t, broadcastMap(in->type().dims(), type.dims(), n)});
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(result));
    s.output = {out, AffineMap::identity(n)};
    s.body = std::move(body);
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  // Same as elementwise, producing a fresh intermediate tensor of |type|.
  absl::StatusOr<unsigned> elementwiseTemp(const Op &op, TensorType type,
                                           std::vector<unsigned> inputs,
                                           ScalarBody body,
                                           const std::string &suffix) {
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = type.dims().vec();
    s.iterators.assign(type.rank(), IteratorType::Parallel);
    unsigned n = type.rank();
    for (unsigned t : inputs) {
      s.inputs.push_back(
          {t, broadcastMap(program_.tensors[t].type.dims(), type.dims(), n)});
    }
    unsigned out = newTensor(op.result()->name() + suffix, type);
    s.output = {out, AffineMap::identity(n)};
    s.body = std::move(body);
    program_.ops.push_back(std::move(s));
    return out;
  }

  // Reduces |input| over |axes| (keeping them as extent-1 dims when
  // |keepDims|) with |combine| (Add or Max) starting at |init|. When
  // |square| the body accumulates in0 * in0.
  absl::StatusOr<unsigned> reduce(const Op &op, unsigned input,
                                  std::vector<bool> reduced, bool keepDims,
                                  SK combine, double init, bool square,
                                  const std::string &suffix,
                                  const Value *result = nullptr) {
    const TensorType &in = program_.tensors[input].type;
    unsigned n = in.rank();
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = in.dims().vec();
    std::vector<int64_t> outDims;
    AffineMap outMap;
    outMap.numDims = n;
    for (unsigned d = 0; d < n; ++d) {
      s.iterators.push_back(reduced[d] ? IteratorType::Reduction
                                       : IteratorType::Parallel);
      if (!reduced[d]) {
        outDims.push_back(in.dim(d));
        outMap.results.push_back(AffineExpr::dim(n, d));
      } else if (keepDims) {
        outDims.push_back(1);
        outMap.results.push_back(AffineExpr::constantExpr(n, 0));
      }
    }
    s.inputs.push_back({input, AffineMap::identity(n)});
    unsigned out;
    if (result) {
      COMPILER_ASSIGN_OR_RETURN(out, tensorFor(result));
    } else {
      out = newTensor(op.result()->name() + suffix,
                      TensorType::ranked(in.elementType(), outDims));
    }
    s.output = {out, outMap};
    s.init = init;
    unsigned x = s.body.input(0);
    if (square) {
      x = s.body.binary(SK::Mul, x, x);
    }
    s.body.yield(s.body.binary(combine, s.body.output(), x));
    program_.ops.push_back(std::move(s));
    return out;
  }

  absl::Status view(const Op &op) {
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.isView = true;
    COMPILER_ASSIGN_OR_RETURN(unsigned in, tensorFor(op.operand(0)));
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.inputs.push_back({in, {}});
    s.output = {out, {}};
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  static std::optional<ScalarBody> unaryBody(const Op &op) {
    ScalarBody b;
    unsigned x = b.input(0);
    const std::string &k = op.kind();
    auto c = [&](double v) { return b.constant(v); };
    unsigned r;
    if (k == "Relu") {
      r = b.binary(SK::Max, x, c(0));
    } else if (k == "LeakyRelu") {
      r = b.select(b.binary(SK::CmpLt, x, c(0)),
                   b.binary(SK::Mul, x, c(op.getFloat("alpha", 0.01))), x);
    } else if (k == "Sigmoid") {
      r = b.unary(SK::Sigmoid, x);
    } else if (k == "HardSigmoid" || k == "HardSwish") {
      double alpha = k == "HardSwish" ? 1.0 / 6 : op.getFloat("alpha", 0.2);
      double beta = k == "HardSwish" ? 0.5 : op.getFloat("beta", 0.5);
      unsigned lin = b.binary(SK::Add, b.binary(SK::Mul, x, c(alpha)), c(beta));
      r = b.binary(SK::Max, b.binary(SK::Min, lin, c(1)), c(0));
      if (k == "HardSwish") {
        r = b.binary(SK::Mul, x, r);
      }
    } else if (k == "Gelu") {
      if (op.getString("approximate", "none") == "tanh") {
        unsigned cube = b.binary(SK::Mul, b.binary(SK::Mul, x, x), x);
        unsigned inner = b.binary(
            SK::Mul, c(std::sqrt(2.0 / M_PI)),
            b.binary(SK::Add, x, b.binary(SK::Mul, c(0.044715), cube)));
        r = b.binary(SK::Mul, b.binary(SK::Mul, c(0.5), x),
                     b.binary(SK::Add, c(1), b.unary(SK::Tanh, inner)));
      } else {
        unsigned e = b.unary(SK::Erf, b.binary(SK::Mul, x, c(M_SQRT1_2)));
        r = b.binary(SK::Mul, b.binary(SK::Mul, c(0.5), x),
                     b.binary(SK::Add, c(1), e));
      }
    } else if (k == "Tanh") {
      r = b.unary(SK::Tanh, x);
    } else if (k == "Erf") {
      r = b.unary(SK::Erf, x);
    } else if (k == "Sqrt") {
      r = b.unary(SK::Sqrt, x);
    } else if (k == "Reciprocal") {
      r = b.unary(SK::Recip, x);
    } else if (k == "Exp") {
      r = b.unary(SK::Exp, x);
    } else if (k == "Log") {
      r = b.unary(SK::Log, x);
    } else if (k == "Abs") {
      r = b.unary(SK::Abs, x);
    } else if (k == "Neg") {
      r = b.unary(SK::Neg, x);
    } else if (k == "Cast") {
      r = b.cast(x, op.result()->type().elementType());
    } else {
      return std::nullopt;
    }
    b.yield(r);
    return b;
  }

  static std::optional<SK> binaryKind(const std::string &k) {
    if (k == "Add") return SK::Add;
    if (k == "Sub") return SK::Sub;
    if (k == "Mul") return SK::Mul;
    if (k == "Div") return SK::Div;
    if (k == "Pow") return SK::Pow;
    if (k == "Equal") return SK::CmpEq;
    if (k == "Less") return SK::CmpLt;
    if (k == "Greater") return SK::CmpGt;
    return std::nullopt;
  }

  absl::Status unimplemented(const Op &op) {
    return absl::UnimplementedError(
        op.describe() + ": lowering to structured ops is not implemented yet");
  }

  absl::Status lowerOp(const Op &op) {
    const std::string &k = op.kind();
    for (Value *result : op.results()) {
      if (!result->type().hasStaticShape()) {
        return absl::UnimplementedError(
            op.describe() + ": result '" + result->name() + "' has dynamic "
            "type " + result->type().str() + ": " + kDynamicResult);
      }
    }
    if (k == "Constant") {
      COMPILER_ASSIGN_OR_RETURN(unsigned t, tensorFor(op.result()));
      program_.tensors[t].constant = op.value();
      return absl::OkStatus();
    }
    if (k == "Reshape" || k == "Flatten" || k == "Squeeze" ||
        k == "Unsqueeze" || k == "Identity") {
      return view(op);
    }
    if (auto body = unaryBody(op)) {
      return elementwise(op, op.result(), {op.operand(0)}, std::move(*body));
    }
    if (auto kind = binaryKind(k)) {
      ScalarBody b;
      b.yield(b.binary(*kind, b.input(0), b.input(1)));
      return elementwise(op, op.result(), {op.operand(0), op.operand(1)},
                         std::move(b));
    }
    if (k == "Where" && op.operand(0)->type().elementType() == ElementType::Bool) {
      if (auto mask = graph::getConstantInts(op.operand(0))) {
        // A constant condition becomes an f32 0/1 mask compared in the body,
        // so no i1 tensor is left for code generation.
        std::vector<double> values(mask->begin(), mask->end());
        TensorType maskType =
            TensorType::ranked(ElementType::F32, op.operand(0)->type().dims().vec());
        unsigned m = newTensor(op.result()->name() + "_mask", maskType);
        program_.tensors[m].constant =
            graph::DenseData::fromDoubles(ElementType::F32, values);
        const TensorType &t = op.result()->type();
        unsigned n = t.rank();
        StructuredOp s;
        s.nodeName = op.nodeName();
        s.bounds = t.dims().vec();
        s.iterators.assign(n, IteratorType::Parallel);
        s.inputs.push_back({m, broadcastMap(maskType.dims(), t.dims(), n)});
        for (unsigned i = 1; i < 3; ++i) {
          COMPILER_ASSIGN_OR_RETURN(unsigned vt, tensorFor(op.operand(i)));
          s.inputs.push_back(
              {vt, broadcastMap(op.operand(i)->type().dims(), t.dims(), n)});
        }
        COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
        s.output = {out, AffineMap::identity(n)};
        s.body.yield(s.body.select(
            s.body.binary(SK::CmpGt, s.body.input(0), s.body.constant(0.5)),
            s.body.input(1), s.body.input(2)));
        program_.ops.push_back(std::move(s));
        return absl::OkStatus();
      }
    }
    if (k == "Where") {
      ScalarBody b;
      b.yield(b.select(b.input(0), b.input(1), b.input(2)));
      return elementwise(op, op.result(),
                         {op.operand(0), op.operand(1), op.operand(2)},
                         std::move(b));
    }
    if (k == "Clip") {
      ScalarBody b;
      unsigned r = b.input(0);
      std::vector<const Value *> ins = {op.operand(0)};
      if (op.operand(1)) {
        ins.push_back(op.operand(1));
        r = b.binary(SK::Max, r, b.input(ins.size() - 1));
      }
      if (op.operand(2)) {
        ins.push_back(op.operand(2));
        r = b.binary(SK::Min, r, b.input(ins.size() - 1));
      }
      b.yield(r);
      return elementwise(op, op.result(), ins, std::move(b));
    }
    if (k == "Expand") {
      ScalarBody b;
      b.yield(b.input(0));
      return elementwise(op, op.result(), {op.operand(0)}, std::move(b));
    }
    if (k == "BatchNormalization") {
      // y = (x - mean) * gamma * rsqrt(var + eps) + beta, per channel (dim 1).
      ScalarBody b;
      unsigned x = b.input(0), gamma = b.input(1), beta = b.input(2),
               mean = b.input(3), var = b.input(4);
      unsigned inv = b.unary(
          SK::Rsqrt,
          b.binary(SK::Add, var, b.constant(op.getFloat("epsilon", 1e-5))));
      b.yield(b.binary(
          SK::Add,
          b.binary(SK::Mul, b.binary(SK::Sub, x, mean),
                   b.binary(SK::Mul, gamma, inv)),
          beta));
      StructuredOp s;
      s.nodeName = op.nodeName();
      const TensorType &t = op.result()->type();
      unsigned n = t.rank();
      s.bounds = t.dims().vec();
      s.iterators.assign(n, IteratorType::Parallel);
      COMPILER_ASSIGN_OR_RETURN(unsigned xt, tensorFor(op.operand(0)));
      s.inputs.push_back({xt, AffineMap::identity(n)});
      for (unsigned i = 1; i < 5; ++i) {
        COMPILER_ASSIGN_OR_RETURN(unsigned pt, tensorFor(op.operand(i)));
        AffineMap channel;
        channel.numDims = n;
        channel.results.push_back(AffineExpr::dim(n, 1));
        s.inputs.push_back({pt, channel});
      }
      COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
      s.output = {out, AffineMap::identity(n)};
      s.body = std::move(b);
      program_.ops.push_back(std::move(s));
      return absl::OkStatus();
    }
    if (k == "Transpose") {
      const TensorType &in = op.operand(0)->type();
      graph::IntList perm = op.getIntList("perm");
      if (perm.empty()) {
        for (int64_t i = in.rank() - 1; i >= 0; --i) {
          perm.push_back(i);
        }
      }
      unsigned n = in.rank();
      StructuredOp s;
      s.nodeName = op.nodeName();
      s.bounds = op.result()->type().dims().vec();
      s.iterators.assign(n, IteratorType::Parallel);
      AffineMap m;
      m.numDims = n;
      m.results.resize(n);
      for (unsigned i = 0; i < n; ++i) {
        m.results[perm[i]] = AffineExpr::dim(n, i);
      }
      COMPILER_ASSIGN_OR_RETURN(unsigned it, tensorFor(op.operand(0)));
      COMPILER_ASSIGN_OR_RETURN(unsigned ot, tensorFor(op.result()));
      s.inputs.push_back({it, m});
      s.output = {ot, AffineMap::identity(n)};
      s.body.yield(s.body.input(0));
      program_.ops.push_back(std::move(s));
      return absl::OkStatus();
    }
    if (k == "Concat") {
      return lowerConcat(op);
    }
    if (k == "Split") {
      return lowerSplit(op);
    }
    if (k == "Slice" || k == "Pad") {
      return lowerSliceOrPad(op);
    }
    if (k == "MatMul" || k == "Gemm") {
      return lowerMatmul(op);
    }
    if (k == "Conv" || k == "MaxPool" || k == "AveragePool") {
      return lowerWindow(op);
    }
    if (k == "GlobalAveragePool") {
      const TensorType &in = op.operand(0)->type();
      std::vector<bool> reduced(in.rank(), true);
      reduced[0] = reduced[1] = false;
      COMPILER_ASSIGN_OR_RETURN(unsigned x, tensorFor(op.operand(0)));
      COMPILER_ASSIGN_OR_RETURN(
          unsigned sum, reduce(op, x, reduced, true, SK::Add, 0, false, "_sum"));
      int64_t count = in.numElements() / (in.dim(0) * in.dim(1));
      return scaleInto(op, sum, 1.0 / count);
    }
    if (k == "ReduceSum" || k == "ReduceMax" || k == "ReduceMean") {
      const TensorType &in = op.operand(0)->type();
      std::vector<bool> reduced(in.rank(), false);
      std::vector<int64_t> axes;
      if (op.operand(1)) {
        auto a = graph::getConstantInts(op.operand(1));
        if (!a) {
          return op.emitError("axes must be a constant");
        }
        axes = *a;
      }
      if (axes.empty() && op.getInt("noop_with_empty_axes", 0)) {
        ScalarBody b;
        b.yield(b.input(0));
        return elementwise(op, op.result(), {op.operand(0)}, std::move(b));
      }
      for (int64_t a : axes) {
        reduced[a < 0 ? a + in.rank() : a] = true;
      }
      if (axes.empty()) {
        reduced.assign(in.rank(), true);
      }
      bool keep = op.getInt("keepdims", 1) != 0;
      COMPILER_ASSIGN_OR_RETURN(unsigned x, tensorFor(op.operand(0)));
      if (k == "ReduceMean") {
        COMPILER_ASSIGN_OR_RETURN(
            unsigned sum, reduce(op, x, reduced, keep, SK::Add, 0, false, "_sum"));
        int64_t count = in.numElements() / std::max<int64_t>(
                                               1, op.result()->type().numElements());
        return scaleInto(op, sum, 1.0 / count);
      }
      bool isMax = k == "ReduceMax";
      return reduce(op, x, reduced, keep, isMax ? SK::Max : SK::Add,
                    isMax ? -INFINITY : 0.0, false, "", op.result())
          .status();
    }
    if (k == "Softmax") {
      return lowerSoftmax(op);
    }
    if (k == "Gather") {
      return lowerGather(op);
    }
    if (k == "ConvTranspose") {
      return lowerConvTranspose(op);
    }
    if (k == "Resize") {
      return lowerResize(op);
    }
    if (k == "LayerNormalization") {
      return lowerLayerNorm(op);
    }
    if (isQuantizedOpKind(k)) {
      return lowerQuantizedOp(op, *this);
    }
    return unimplemented(op);
  }

  // result = tensor * factor, written to the op's result.
  absl::Status scaleInto(const Op &op, unsigned tensor, double factor) {
    StructuredOp s;
    s.nodeName = op.nodeName();
    const TensorType &t = op.result()->type();
    unsigned n = t.rank();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    // The reduced temporary has the result's shape; read it directly.
    s.inputs.push_back({tensor, AffineMap::identity(n)});
    if (program_.tensors[tensor].type.rank() != t.rank()) {
      s.inputs.back().map = broadcastMap(program_.tensors[tensor].type.dims(),
                                         t.dims(), n);
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.output = {out, AffineMap::identity(n)};
    s.body.yield(s.body.binary(SK::Mul, s.body.input(0), s.body.constant(factor)));
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  absl::Status lowerSoftmax(const Op &op) {
    const TensorType &t = op.result()->type();
    int64_t axis = op.getInt("axis", -1);
    axis = axis < 0 ? axis + t.rank() : axis;
    std::vector<bool> reduced(t.rank(), false);
    reduced[axis] = true;
    COMPILER_ASSIGN_OR_RETURN(unsigned x, tensorFor(op.operand(0)));
    COMPILER_ASSIGN_OR_RETURN(
        unsigned mx, reduce(op, x, reduced, true, SK::Max, -INFINITY, false, "_max"));
    ScalarBody eb;
    eb.yield(eb.unary(SK::Exp, eb.binary(SK::Sub, eb.input(0), eb.input(1))));
    COMPILER_ASSIGN_OR_RETURN(unsigned e,
                              elementwiseTemp(op, t, {x, mx}, std::move(eb), "_exp"));
    COMPILER_ASSIGN_OR_RETURN(
        unsigned sum, reduce(op, e, reduced, true, SK::Add, 0, false, "_sum"));
    ScalarBody db;
    db.yield(db.binary(SK::Div, db.input(0), db.input(1)));
    StructuredOp s;
    s.nodeName = op.nodeName();
    unsigned n = t.rank();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    s.inputs.push_back({e, AffineMap::identity(n)});
    s.inputs.push_back(
        {sum, broadcastMap(program_.tensors[sum].type.dims(), t.dims(), n)});
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.output = {out, AffineMap::identity(n)};
    s.body = std::move(db);
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  absl::Status lowerLayerNorm(const Op &op) {
    const TensorType &t = op.result()->type();
    int64_t axis = op.getInt("axis", -1);
    axis = axis < 0 ? axis + t.rank() : axis;
    std::vector<bool> reduced(t.rank(), false);
    int64_t count = 1;
    for (int64_t d = axis; d < t.rank(); ++d) {
      reduced[d] = true;
      count *= t.dim(d);
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned x, tensorFor(op.operand(0)));
    COMPILER_ASSIGN_OR_RETURN(
        unsigned sum, reduce(op, x, reduced, true, SK::Add, 0, false, "_sum"));
    // d = x - sum / N
    ScalarBody cb;
    cb.yield(cb.binary(SK::Sub, cb.input(0),
                       cb.binary(SK::Mul, cb.input(1), cb.constant(1.0 / count))));
    COMPILER_ASSIGN_OR_RETURN(unsigned centered,
                              elementwiseTemp(op, t, {x, sum}, std::move(cb), "_centered"));
    COMPILER_ASSIGN_OR_RETURN(unsigned sq, reduce(op, centered, reduced, true,
                                                  SK::Add, 0, true, "_sqsum"));
    // Optional results: Mean = sum / N, InvStdDev = rsqrt(sq / N + eps), both
    // of the reduced (keepdims) shape.
    for (unsigned r = 1; r < op.numResults(); ++r) {
      const TensorType &rt = op.result(r)->type();
      unsigned rank = rt.rank();
      StructuredOp st;
      st.nodeName = op.nodeName();
      st.bounds = rt.dims().vec();
      st.iterators.assign(rank, IteratorType::Parallel);
      st.inputs.push_back({r == 1 ? sum : sq, AffineMap::identity(rank)});
      COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result(r)));
      st.output = {out, AffineMap::identity(rank)};
      unsigned scaled = st.body.binary(SK::Mul, st.body.input(0),
                                       st.body.constant(1.0 / count));
      if (r == 2) {
        scaled = st.body.unary(
            SK::Rsqrt, st.body.binary(SK::Add, scaled,
                                      st.body.constant(op.getFloat("epsilon", 1e-5))));
      }
      st.body.yield(scaled);
      program_.ops.push_back(std::move(st));
    }
    // y = d * rsqrt(sq / N + eps) * scale + bias
    ScalarBody nb;
    unsigned inv = nb.unary(
        SK::Rsqrt,
        nb.binary(SK::Add, nb.binary(SK::Mul, nb.input(1), nb.constant(1.0 / count)),
                  nb.constant(op.getFloat("epsilon", 1e-5))));
    unsigned y = nb.binary(SK::Mul, nb.binary(SK::Mul, nb.input(0), inv),
                           nb.input(2));
    std::vector<const Value *> extra = {op.operand(1)};
    if (op.operand(2)) {
      y = nb.binary(SK::Add, y, nb.input(3));
      extra.push_back(op.operand(2));
    }
    nb.yield(y);
    StructuredOp s;
    s.nodeName = op.nodeName();
    unsigned n = t.rank();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    s.inputs.push_back({centered, AffineMap::identity(n)});
    s.inputs.push_back(
        {sq, broadcastMap(program_.tensors[sq].type.dims(), t.dims(), n)});
    for (const Value *v : extra) {
      COMPILER_ASSIGN_OR_RETURN(unsigned vt, tensorFor(v));
      s.inputs.push_back({vt, broadcastMap(v->type().dims(), t.dims(), n)});
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.output = {out, AffineMap::identity(n)};
    s.body = std::move(nb);
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  // How reads padded with 0 of which one is in bounds combine into that
  // one's value: a sum, or for bool (no arithmetic) a max.
  static SK padCombine(const TensorType &t) {
    return t.elementType() == ElementType::Bool ? SK::Max : SK::Add;
  }

  // Concat: each input is read shifted to its place along the axis with
  // padding 0, and the body sums the reads; exactly one is in bounds at any
  // output index, so the sum is that input's value.
  absl::Status lowerConcat(const Op &op) {
    const TensorType &t = op.result()->type();
    unsigned n = t.rank();
    int64_t axis = op.getInt("axis", 0);
    axis = axis < 0 ? axis + n : axis;
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    int64_t offset = 0;
    unsigned sum = 0;
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Value *in = op.operand(i);
      COMPILER_ASSIGN_OR_RETURN(unsigned it, tensorFor(in));
      AffineMap m = AffineMap::identity(n);
      m.results[axis].constant = -offset;
      s.inputs.push_back({it, m, 0.0});
      unsigned v = s.body.input(i);
      sum = i == 0 ? v : s.body.binary(padCombine(t), sum, v);
      offset += in->type().dim(axis);
    }
    s.body.yield(sum);
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.output = {out, AffineMap::identity(n)};
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  // Gather with constant indices: out[pre, j..., post] = data[pre, idx[j],
  // post]. Read j indexes the gathered axis with idx[j] + D * (p - j), where p
  // is the linear position in the index dimensions and D the axis length, so
  // it is in bounds exactly where p == j (padding 0 elsewhere) and the body
  // sums the reads, as for Concat; a 1-D arithmetic progression of indices is
  // one affine read instead. Indices are checked here: an index outside
  // [-D, D) is an error naming the node, never an out-of-bounds read.
  absl::Status lowerGather(const Op &op) {
    constexpr size_t kMaxIndices = 64;
    const TensorType &data = op.operand(0)->type();
    const TensorType &indexType = op.operand(1)->type();
    const TensorType &t = op.result()->type();
    int64_t rank = data.rank();
    int64_t axis = op.getInt("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    auto indices = graph::getConstantInts(op.operand(1));
    if (!indices) {
      return lowerIndirectGather(op, axis);
    }
    unsigned n = t.rank();
    unsigned q = indexType.rank();
    int64_t d = data.dim(axis);
    for (size_t j = 0; j < indices->size(); ++j) {
      int64_t v = (*indices)[j];
      if (v < -d || v >= d) {
        return op.emitError("index " + std::to_string(v) + " at position " +
                            std::to_string(j) + " is out of range [" +
                            std::to_string(-d) + ", " + std::to_string(d) +
                            ")");
      }
      (*indices)[j] = v < 0 ? v + d : v;
    }
    // A 1-D index list that is an arithmetic progression is one affine read.
    if (q == 1 && indices->size() > 1) {
      int64_t base = (*indices)[0], step = (*indices)[1] - base;
      bool affine = true;
      for (size_t j = 0; j < indices->size() && affine; ++j) {
        affine = (*indices)[j] == base + step * int64_t(j);
      }
      if (affine) {
        AffineMap m = AffineMap::identity(n);
        m.results[axis] = AffineExpr::constantExpr(n, base);
        m.results[axis].coeffs[axis] = step;
        StructuredOp s;
        s.nodeName = op.nodeName();
        s.bounds = t.dims().vec();
        s.iterators.assign(n, IteratorType::Parallel);
        COMPILER_ASSIGN_OR_RETURN(unsigned dt, tensorFor(op.operand(0)));
        s.inputs.push_back({dt, m});
        s.body.yield(s.body.input(0));
        COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
        s.output = {out, AffineMap::identity(n)};
        program_.ops.push_back(std::move(s));
        return absl::OkStatus();
      }
    }
    if (indices->size() > kMaxIndices) {
      // Past a few indices one read per index costs more than reading the
      // (already checked) index tensor.
      return lowerIndirectGather(op, axis);
    }
    if (indices->empty()) {
      return absl::UnimplementedError(op.describe() +
                                      ": Gather with no indices does not "
                                      "lower (empty result)");
    }
    // Row-major strides of the index dimensions.
    std::vector<int64_t> strides(q, 1);
    for (int64_t i = int64_t(q) - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * indexType.dim(i + 1);
    }
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    COMPILER_ASSIGN_OR_RETURN(unsigned dt, tensorFor(op.operand(0)));
    bool single = indices->size() == 1;
    unsigned sum = 0;
    for (size_t j = 0; j < indices->size(); ++j) {
      int64_t v = (*indices)[j];
      AffineMap m;
      m.numDims = n;
      for (int64_t a = 0; a < axis; ++a) {
        m.results.push_back(AffineExpr::dim(n, a));
      }
      AffineExpr e = AffineExpr::constantExpr(n, v - d * int64_t(j));
      for (unsigned i = 0; i < q && !single; ++i) {
        e.coeffs[axis + i] = d * strides[i];
      }
      m.results.push_back(e);
      for (int64_t a = axis + 1; a < rank; ++a) {
        m.results.push_back(AffineExpr::dim(n, a - 1 + q));
      }
      OperandAccess access{dt, m};
      if (!single) {
        access.padValue = 0.0;
      }
      s.inputs.push_back(access);
      unsigned r = s.body.input(j);
      sum = j == 0 ? r : s.body.binary(padCombine(t), sum, r);
    }
    s.body.yield(sum);
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.output = {out, AffineMap::identity(n)};
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  // Gather whose indices are read at run time: out[pre, j..., post] =
  // data[pre, idx[j...], post], one indirect read of the data along |axis|.
  // Negative indices wrap; the generated code checks every index and fails
  // the dispatch on one outside [-D, D).
  absl::Status lowerIndirectGather(const Op &op, int64_t axis) {
    const TensorType &data = op.operand(0)->type();
    const TensorType &indexType = op.operand(1)->type();
    const TensorType &t = op.result()->type();
    ElementType it = indexType.elementType();
    if (it != ElementType::I32 && it != ElementType::I64) {
      return op.emitError("indices have element type " +
                          graph::elementTypeName(it).str() +
                          "; Gather takes i32 or i64 indices");
    }
    unsigned n = t.rank();
    unsigned q = indexType.rank();
    int64_t rank = data.rank();
    if (int64_t(n) != rank - 1 + q) {
      return op.emitError("result rank " + std::to_string(n) +
                          " does not match data rank " + std::to_string(rank) +
                          " and index rank " + std::to_string(q));
    }
    AffineMap dataMap;
    dataMap.numDims = n;
    for (int64_t a = 0; a < rank; ++a) {
      dataMap.results.push_back(
          a < axis    ? AffineExpr::dim(n, a)
          : a == axis ? AffineExpr::constantExpr(n, 0)
                      : AffineExpr::dim(n, a - 1 + q));
    }
    AffineMap indexMap;
    indexMap.numDims = n;
    for (unsigned i = 0; i < q; ++i) {
      indexMap.results.push_back(AffineExpr::dim(n, axis + i));
    }
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    COMPILER_ASSIGN_OR_RETURN(unsigned dt, tensorFor(op.operand(0)));
    COMPILER_ASSIGN_OR_RETURN(unsigned xt, tensorFor(op.operand(1)));
    OperandAccess read{dt, dataMap};
    read.indirect = IndirectIndex{unsigned(axis), 1};
    s.inputs.push_back(read);
    s.inputs.push_back({xt, indexMap});
    s.body.yield(s.body.input(0));
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    s.output = {out, AffineMap::identity(n)};
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  // ConvTranspose: y[o] = sum over c, k of x[i] * w[c, m, k] where
  // o = i * s + k * d - padBegin. With strides > 1, x is first spread to
  // x'[s * i + r] = (r == 0 ? x[i] : 0) by a copy whose read along i is
  // shifted by I * r (in bounds only for r == 0, padding 0 otherwise); then
  // y is a stride-1 windowed reduction reading x'[o + padBegin - d * k] with
  // padding 0.
  absl::Status lowerConvTranspose(const Op &op) {
    const TensorType &x = op.operand(0)->type();
    const TensorType &w = op.operand(1)->type();
    const TensorType &t = op.result()->type();
    unsigned spatial = x.rank() - 2;
    int64_t group = op.getInt("group", 1);
    graph::IntList strides = op.getIntList("strides", graph::IntList(spatial, 1));
    graph::IntList dilations =
        op.getIntList("dilations", graph::IntList(spatial, 1));
    graph::IntList outputPadding =
        op.getIntList("output_padding", graph::IntList(spatial, 0));
    std::string autoPad = op.getString("auto_pad", "NOTSET");
    graph::IntList pads = op.getIntList("pads", graph::IntList(2 * spatial, 0));
    if (strides.size() != spatial || dilations.size() != spatial ||
        outputPadding.size() != spatial || pads.size() != 2 * spatial) {
      return op.emitError("strides, dilations, output_padding and pads must "
                          "have one entry per spatial dimension");
    }
    std::vector<int64_t> padBegin(spatial);
    bool derived = op.hasAttr("output_shape") || autoPad == "SAME_UPPER" ||
                   autoPad == "SAME_LOWER";
    for (unsigned i = 0; i < spatial; ++i) {
      if (strides[i] < 1 || dilations[i] < 1) {
        return op.emitError("strides and dilations must be positive");
      }
      if (!derived) {
        padBegin[i] = autoPad == "VALID" ? 0 : pads[i];
        continue;
      }
      // Total padding that yields the result size; split as ONNX specifies
      // (floor division, the odd element at the end for SAME_UPPER).
      int64_t total = strides[i] * (x.dim(2 + i) - 1) + outputPadding[i] +
                      (w.dim(2 + i) - 1) * dilations[i] + 1 - t.dim(2 + i);
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      padBegin[i] = autoPad == "SAME_UPPER" ? half : total - half;
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned source, tensorFor(op.operand(0)));
    bool strided = false;
    for (int64_t st : strides) {
      strided |= st > 1;
    }
    if (strided) {
      // Loops: n, c, i..., r...
      unsigned n = 2 + 2 * spatial;
      StructuredOp u;
      u.nodeName = op.nodeName();
      u.bounds = {x.dim(0), x.dim(1)};
      for (unsigned i = 0; i < spatial; ++i) {
        u.bounds.push_back(x.dim(2 + i));
      }
      for (unsigned i = 0; i < spatial; ++i) {
        u.bounds.push_back(strides[i]);
      }
      u.iterators.assign(n, IteratorType::Parallel);
      AffineMap in = AffineMap::identity(n);
      in.results.resize(2 + spatial);
      AffineMap outMap = AffineMap::identity(n);
      outMap.results.resize(2 + spatial);
      for (unsigned i = 0; i < spatial; ++i) {
        in.results[2 + i].coeffs[2 + spatial + i] = x.dim(2 + i);
        outMap.results[2 + i] = AffineExpr::dim(n, 2 + i, strides[i]);
        outMap.results[2 + i].coeffs[2 + spatial + i] = 1;
      }
      u.inputs.push_back({source, in, 0.0});
      std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
      for (unsigned i = 0; i < spatial; ++i) {
        dims.push_back(x.dim(2 + i) * strides[i]);
      }
      source = newTensor(op.result()->name() + "_spread",
                         TensorType::ranked(x.elementType(), dims));
      u.output = {source, outMap};
      u.body.yield(u.body.input(0));
      program_.ops.push_back(std::move(u));
    }
    // Loops: n, [g], m, o..., c (per group), k...
    bool grouped = group > 1;
    int64_t cPerGroup = x.dim(1) / group;
    int64_t mPerGroup = w.dim(1);
    std::vector<int64_t> bounds = {t.dim(0)};
    if (grouped) {
      bounds.push_back(group);
    }
    bounds.push_back(mPerGroup);
    unsigned gDim = 1, mDim = grouped ? 2 : 1;
    unsigned outSpatial = bounds.size();
    for (unsigned i = 0; i < spatial; ++i) {
      bounds.push_back(t.dim(2 + i));
    }
    unsigned cDim = bounds.size();
    bounds.push_back(cPerGroup);
    unsigned kSpatial = bounds.size();
    for (unsigned i = 0; i < spatial; ++i) {
      bounds.push_back(w.dim(2 + i));
    }
    unsigned n = bounds.size();
    auto channelExpr = [&](unsigned perGroupDim, int64_t perGroup) {
      AffineExpr e = AffineExpr::dim(n, perGroupDim);
      if (grouped) {
        e.coeffs[gDim] = perGroup;
      }
      return e;
    };
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = bounds;
    s.iterators.assign(n, IteratorType::Parallel);
    for (unsigned d = cDim; d < n; ++d) {
      s.iterators[d] = IteratorType::Reduction;
    }
    AffineMap xMap;
    xMap.numDims = n;
    xMap.results.push_back(AffineExpr::dim(n, 0));
    xMap.results.push_back(channelExpr(cDim, cPerGroup));
    for (unsigned i = 0; i < spatial; ++i) {
      AffineExpr e = AffineExpr::dim(n, outSpatial + i);
      e.coeffs[kSpatial + i] = -dilations[i];
      e.constant = padBegin[i];
      xMap.results.push_back(e);
    }
    s.inputs.push_back({source, xMap, 0.0});
    AffineMap wMap;
    wMap.numDims = n;
    wMap.results.push_back(channelExpr(cDim, cPerGroup));
    wMap.results.push_back(AffineExpr::dim(n, mDim));
    for (unsigned i = 0; i < spatial; ++i) {
      wMap.results.push_back(AffineExpr::dim(n, kSpatial + i));
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned wt, tensorFor(op.operand(1)));
    s.inputs.push_back({wt, wMap});
    AffineMap outMap;
    outMap.numDims = n;
    outMap.results.push_back(AffineExpr::dim(n, 0));
    outMap.results.push_back(channelExpr(mDim, mPerGroup));
    for (unsigned i = 0; i < spatial; ++i) {
      outMap.results.push_back(AffineExpr::dim(n, outSpatial + i));
    }
    s.init = 0.0;
    s.body.yield(s.body.binary(
        SK::Add, s.body.output(),
        s.body.binary(SK::Mul, s.body.input(0), s.body.input(1))));
    const Value *bias = op.operand(2);
    unsigned acc;
    if (bias) {
      acc = newTensor(op.result()->name() + "_acc", t);
    } else {
      COMPILER_ASSIGN_OR_RETURN(acc, tensorFor(op.result()));
    }
    s.output = {acc, outMap};
    program_.ops.push_back(std::move(s));
    if (!bias) {
      return absl::OkStatus();
    }
    StructuredOp e;
    e.nodeName = op.nodeName();
    unsigned rank = t.rank();
    e.bounds = t.dims().vec();
    e.iterators.assign(rank, IteratorType::Parallel);
    e.inputs.push_back({acc, AffineMap::identity(rank)});
    AffineMap channel;
    channel.numDims = rank;
    channel.results.push_back(AffineExpr::dim(rank, 1));
    COMPILER_ASSIGN_OR_RETURN(unsigned bt, tensorFor(bias));
    e.inputs.push_back({bt, channel});
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    e.output = {out, AffineMap::identity(rank)};
    e.body.yield(e.body.binary(SK::Add, e.body.input(0), e.body.input(1)));
    program_.ops.push_back(std::move(e));
    return absl::OkStatus();
  }

  // Input positions and weights that make up one output position of Resize
  // along one axis.
  using ResizeTaps = std::vector<std::pair<int64_t, double>>;

  // Computes the taps of every output position along one axis, following the
  // ONNX reference: the output coordinate maps back to x (coordinate
  // transformation mode), whose two neighbours (clamped to the edge) are
  // weighted linearly or one is picked (nearest mode).
  static absl::StatusOr<std::vector<ResizeTaps>>
  resizeTaps(const Op &op, int64_t in, int64_t out, double scale,
             std::vector<double> *coords = nullptr) {
    std::string mode = op.getString("mode", "nearest");
    std::string transform =
        op.getString("coordinate_transformation_mode", "half_pixel");
    std::string nearest = op.getString("nearest_mode", "round_prefer_floor");
    double outWidth = scale * in;
    std::vector<ResizeTaps> taps(out);
    for (int64_t o = 0; o < out; ++o) {
      double x;
      if (transform == "half_pixel") {
        x = (o + 0.5) / scale - 0.5;
      } else if (transform == "pytorch_half_pixel") {
        x = outWidth == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
      } else if (transform == "align_corners") {
        x = outWidth == 1 ? 0.0 : o * double(in - 1) / (outWidth - 1);
      } else if (transform == "asymmetric") {
        x = o / scale;
      } else if (transform == "tf_half_pixel_for_nearest") {
        x = (o + 0.5) / scale;
      } else {
        return absl::UnimplementedError(
            op.describe() + ": coordinate_transformation_mode '" + transform +
            "' does not lower yet");
      }
      if (coords) {
        coords->push_back(x);
      }
      auto clampIndex = [&](int64_t i) {
        return std::clamp<int64_t>(i, 0, in - 1);
      };
      double lo = std::floor(x);
      if (lo == x) {
        taps[o] = {{clampIndex(int64_t(lo)), 1.0}};
        continue;
      }
      double ratio = x - lo;
      int64_t i0 = clampIndex(int64_t(lo)), i1 = clampIndex(int64_t(lo) + 1);
      if (mode == "nearest") {
        bool up;
        if (nearest == "round_prefer_floor") {
          up = ratio > 0.5;
        } else if (nearest == "round_prefer_ceil") {
          up = ratio >= 0.5;
        } else if (nearest == "floor") {
          up = false;
        } else if (nearest == "ceil") {
          up = true;
        } else {
          return op.emitError("unknown nearest_mode '" + nearest + "'");
        }
        taps[o] = {{up ? i1 : i0, 1.0}};
      } else if (i0 == i1) {
        taps[o] = {{i0, 1.0}};
      } else {
        taps[o] = {{i0, 1.0 - ratio}, {i1, ratio}};
      }
    }
    return taps;
  }

  // Resize (nearest, linear), one op per resized axis. An axis whose taps are
  // single indices a * o + b is one affine read; an integer upsampling
  // o -> o / s iterates (q, r) and writes s * q + r; anything else reads each
  // tap shifted by I * (o' - o) along the axis (in bounds only at output o,
  // padding 0 elsewhere) and sums the weighted reads, like Gather.
  absl::Status lowerResize(const Op &op) {
    constexpr size_t kMaxReads = 256;
    const TensorType &x = op.operand(0)->type();
    const TensorType &t = op.result()->type();
    unsigned n = t.rank();
    std::optional<std::vector<double>> scales;
    if (op.operand(2)) {
      scales = graph::getConstantFloats(op.operand(2));
      if (scales && scales->empty()) {
        scales.reset();
      }
    }
    if (scales && scales->size() != n) {
      return op.emitError("scales must list one factor per dimension");
    }
    std::vector<unsigned> axes;
    std::vector<std::vector<ResizeTaps>> axisTaps;
    std::vector<std::vector<double>> axisCoords;
    for (unsigned a = 0; a < n; ++a) {
      double scale = scales ? (*scales)[a] : double(t.dim(a)) / x.dim(a);
      std::vector<double> coords;
      COMPILER_ASSIGN_OR_RETURN(
          auto taps, resizeTaps(op, x.dim(a), t.dim(a), scale, &coords));
      bool identity = t.dim(a) == x.dim(a);
      for (int64_t o = 0; o < t.dim(a) && identity; ++o) {
        identity = taps[o].size() == 1 && taps[o][0].first == o;
      }
      if (!identity) {
        axes.push_back(a);
        axisTaps.push_back(std::move(taps));
        axisCoords.push_back(std::move(coords));
      }
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned current, tensorFor(op.operand(0)));
    std::vector<int64_t> dims = x.dims().vec();
    if (axes.empty()) {
      ScalarBody b;
      b.yield(b.input(0));
      return elementwise(op, op.result(), {op.operand(0)}, std::move(b));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      unsigned a = axes[i];
      const std::vector<ResizeTaps> &taps = axisTaps[i];
      int64_t in = dims[a], out = t.dim(a);
      if (in <= 0 || out <= 0) {
        return absl::UnimplementedError(
            "node '" + op.nodeName() + "' (Resize): resizing axis " +
            std::to_string(a) + " from " + std::to_string(in) + " to " +
            std::to_string(out) + " elements (an empty axis) is not supported");
      }
      dims[a] = out;
      unsigned result;
      if (i + 1 == axes.size()) {
        COMPILER_ASSIGN_OR_RETURN(result, tensorFor(op.result()));
      } else {
        result = newTensor(op.result()->name() + "_axis" + std::to_string(a),
                           TensorType::ranked(t.elementType(), dims));
      }
      StructuredOp s;
      s.nodeName = op.nodeName();
      bool single = true;
      size_t reads = 0;
      for (const ResizeTaps &tp : taps) {
        single &= tp.size() == 1 && tp[0].second == 1.0;
        reads += tp.size();
      }
      // Affine: f(o) = f(0) + (f(1) - f(0)) * o.
      bool affine = single;
      int64_t base = taps[0][0].first;
      int64_t step = out > 1 ? taps[1][0].first - base : 0;
      for (int64_t o = 0; o < out && affine; ++o) {
        affine = taps[o][0].first == base + step * o;
      }
      // Integer upsampling: f(o) = o / s.
      bool spread = single && !affine && out % in == 0;
      int64_t factor = spread ? out / in : 1;
      for (int64_t o = 0; o < out && spread; ++o) {
        spread = taps[o][0].first == o / factor;
      }
      // Linear upsampling by an integer factor f whose source coordinate is
      // q + base[r] + ratio[r] for o = f * q + r (half_pixel, asymmetric):
      // edge-pad the axis by 1, then iterate (q, r) writing f * q + r, with
      // phase rho's two taps read at q + base + 1 (+1) shifted by
      // (I + 2) * (r - rho), in bounds only for r == rho.
      int64_t phases = out / in;
      bool periodic = !single && out % in == 0 && phases > 1 &&
                      phases * 2 <= int64_t(kMaxReads);
      std::vector<int64_t> phaseBase(periodic ? phases : 0);
      std::vector<double> phaseRatio(periodic ? phases : 0);
      for (int64_t r = 0; r < phases && periodic; ++r) {
        double c = axisCoords[i][r];
        phaseBase[r] = int64_t(std::floor(c));
        phaseRatio[r] = c - std::floor(c);
        periodic = phaseBase[r] == -1 || phaseBase[r] == 0;
      }
      for (int64_t o = 0; o < out && periodic; ++o) {
        int64_t q = o / phases, r = o % phases;
        periodic = std::fabs(axisCoords[i][o] -
                             (q + phaseBase[r] + phaseRatio[r])) < 1e-9;
      }
      if (periodic) {
        std::vector<int64_t> padDims = dims;
        padDims[a] = in + 2;
        unsigned padded = newTensor(
            op.result()->name() + "_edge" + std::to_string(a),
            TensorType::ranked(t.elementType(), padDims));
        StructuredOp p;
        p.nodeName = op.nodeName();
        p.bounds = padDims;
        p.iterators.assign(n, IteratorType::Parallel);
        AffineMap interior = AffineMap::identity(n);
        interior.results[a].constant = -1;
        AffineMap first = AffineMap::identity(n);
        first.results[a].coeffs[a] = in;
        AffineMap last = first;
        last.results[a].constant = in - 1 - in * (in + 1);
        p.inputs.push_back({current, interior, 0.0});
        p.inputs.push_back({current, first, 0.0});
        p.inputs.push_back({current, last, 0.0});
        p.body.yield(p.body.binary(
            SK::Add, p.body.binary(SK::Add, p.body.input(0), p.body.input(1)),
            p.body.input(2)));
        p.output = {padded, AffineMap::identity(n)};
        program_.ops.push_back(std::move(p));
        // Loops: dims before a, q, r, dims after a.
        unsigned loops = n + 1;
        s.bounds.assign(dims.begin(), dims.begin() + a);
        s.bounds.push_back(in);
        s.bounds.push_back(phases);
        s.bounds.insert(s.bounds.end(), dims.begin() + a + 1, dims.end());
        s.iterators.assign(loops, IteratorType::Parallel);
        AffineMap write;
        write.numDims = loops;
        AffineMap read = write;
        for (unsigned d = 0; d < n; ++d) {
          unsigned loop = d <= a ? d : d + 1;
          read.results.push_back(AffineExpr::dim(loops, loop));
          write.results.push_back(AffineExpr::dim(loops, loop));
        }
        write.results[a] = AffineExpr::dim(loops, a, phases);
        write.results[a].coeffs[a + 1] = 1;
        unsigned sum = 0;
        bool firstRead = true;
        for (int64_t rho = 0; rho < phases; ++rho) {
          for (int64_t k = 0; k < 2; ++k) {
            double weight = k == 0 ? 1.0 - phaseRatio[rho] : phaseRatio[rho];
            if (weight == 0.0) {
              continue;
            }
            AffineMap m = read;
            m.results[a].coeffs[a + 1] = in + 2;
            m.results[a].constant = phaseBase[rho] + 1 + k - (in + 2) * rho;
            s.inputs.push_back({padded, m, 0.0});
            unsigned v = s.body.input(s.inputs.size() - 1);
            if (weight != 1.0) {
              v = s.body.binary(SK::Mul, v, s.body.constant(weight));
            }
            sum = firstRead ? v : s.body.binary(SK::Add, sum, v);
            firstRead = false;
          }
        }
        s.body.yield(sum);
        s.output = {result, write};
      } else if (affine || !spread) {
        s.bounds = dims;
        s.iterators.assign(n, IteratorType::Parallel);
        s.output = {result, AffineMap::identity(n)};
        if (affine) {
          AffineMap m = AffineMap::identity(n);
          m.results[a] = AffineExpr::constantExpr(n, base);
          m.results[a].coeffs[a] = step;
          s.inputs.push_back({current, m});
          s.body.yield(s.body.input(0));
        } else {
          if (reads > kMaxReads) {
            return absl::UnimplementedError(
                op.describe() + ": Resize along axis " + std::to_string(a) +
                " needs " + std::to_string(reads) + " reads per element; "
                "more than " + std::to_string(kMaxReads) +
                " do not lower yet");
          }
          unsigned sum = 0;
          bool first = true;
          for (int64_t o = 0; o < out; ++o) {
            for (const auto &[index, weight] : taps[o]) {
              AffineMap m = AffineMap::identity(n);
              m.results[a].coeffs[a] = in;
              m.results[a].constant = index - in * o;
              s.inputs.push_back({current, m, 0.0});
              unsigned v = s.body.input(s.inputs.size() - 1);
              if (weight != 1.0) {
                v = s.body.binary(SK::Mul, v, s.body.constant(weight));
              }
              sum = first ? v : s.body.binary(SK::Add, sum, v);
              first = false;
            }
          }
          s.body.yield(sum);
        }
      } else {
        // Loops: dims before a, q, r, dims after a.
        unsigned loops = n + 1;
        s.bounds.assign(dims.begin(), dims.begin() + a);
        s.bounds.push_back(in);
        s.bounds.push_back(factor);
        s.bounds.insert(s.bounds.end(), dims.begin() + a + 1, dims.end());
        s.iterators.assign(loops, IteratorType::Parallel);
        AffineMap read, write;
        read.numDims = write.numDims = loops;
        for (unsigned d = 0; d < n; ++d) {
          unsigned loop = d <= a ? d : d + 1;
          read.results.push_back(AffineExpr::dim(loops, loop));
          write.results.push_back(AffineExpr::dim(loops, loop));
        }
        write.results[a] = AffineExpr::dim(loops, a, factor);
        write.results[a].coeffs[a + 1] = 1;
        s.inputs.push_back({current, read});
        s.output = {result, write};
        s.body.yield(s.body.input(0));
      }
      program_.ops.push_back(std::move(s));
      current = result;
    }
    return absl::OkStatus();
  }

  // Split: one copy per result reading its range of the input.
  absl::Status lowerSplit(const Op &op) {
    const TensorType &in = op.operand(0)->type();
    unsigned n = in.rank();
    int64_t axis = op.getInt("axis", 0);
    axis = axis < 0 ? axis + n : axis;
    COMPILER_ASSIGN_OR_RETURN(unsigned it, tensorFor(op.operand(0)));
    int64_t offset = 0;
    for (const Value *result : op.results()) {
      const TensorType &t = result->type();
      StructuredOp s;
      s.nodeName = op.nodeName();
      s.bounds = t.dims().vec();
      s.iterators.assign(n, IteratorType::Parallel);
      AffineMap m = AffineMap::identity(n);
      m.results[axis].constant = offset;
      s.inputs.push_back({it, m});
      s.body.yield(s.body.input(0));
      COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(result));
      s.output = {out, AffineMap::identity(n)};
      program_.ops.push_back(std::move(s));
      offset += t.dim(axis);
    }
    if (offset != in.dim(axis)) {
      return op.emitError("split sizes add up to " + std::to_string(offset) +
                          ", expected " + std::to_string(in.dim(axis)));
    }
    return absl::OkStatus();
  }

  // Pad in edge or reflect mode, one op per padded axis: the interior is one
  // read shifted by the begin pad (padding 0 outside it), and each position j
  // of the pad bands reads its source src(j) shifted by I * (o - j) along the
  // axis, which is in bounds only at o == j (padding 0 elsewhere); the body
  // sums the reads, as for Gather.
  absl::Status lowerPadMode(const Op &op, const std::string &mode) {
    constexpr int64_t kMaxBand = 256;
    const TensorType &x = op.operand(0)->type();
    const TensorType &t = op.result()->type();
    unsigned n = t.rank();
    auto pads = graph::getConstantInts(op.operand(1));
    if (!pads || op.operand(3)) {
      return absl::UnimplementedError(
          op.describe() + ": Pad needs constant pads and no axes operand");
    }
    if (pads->size() != 2 * n) {
      return op.emitError("pads must list a begin and an end per dimension");
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned current, tensorFor(op.operand(0)));
    std::vector<int64_t> dims = x.dims().vec();
    std::vector<unsigned> axes;
    for (unsigned a = 0; a < n; ++a) {
      int64_t pb = (*pads)[a], pe = (*pads)[a + n];
      if (pb < 0 || pe < 0) {
        return absl::UnimplementedError(
            op.describe() + ": negative pads do not lower yet");
      }
      if (pb == 0 && pe == 0) {
        continue;
      }
      if (x.dim(a) == 0 || (mode == "reflect" && (pb >= x.dim(a) ||
                                                  pe >= x.dim(a)))) {
        return op.emitError(mode + " padding of " + std::to_string(pb) + "/" +
                            std::to_string(pe) + " on axis " +
                            std::to_string(a) + " of extent " +
                            std::to_string(x.dim(a)) + " has no source");
      }
      if (pb + pe > kMaxBand) {
        return absl::UnimplementedError(
            op.describe() + ": " + mode + " padding wider than " +
            std::to_string(kMaxBand) + " on one axis does not lower yet");
      }
      axes.push_back(a);
    }
    if (axes.empty()) {
      ScalarBody b;
      b.yield(b.input(0));
      return elementwise(op, op.result(), {op.operand(0)}, std::move(b));
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      unsigned a = axes[i];
      int64_t in = dims[a], pb = (*pads)[a];
      int64_t out = in + pb + (*pads)[a + n];
      dims[a] = out;
      unsigned result;
      if (i + 1 == axes.size()) {
        COMPILER_ASSIGN_OR_RETURN(result, tensorFor(op.result()));
      } else {
        result = newTensor(op.result()->name() + "_axis" + std::to_string(a),
                           TensorType::ranked(t.elementType(), dims));
      }
      StructuredOp s;
      s.nodeName = op.nodeName();
      s.bounds = dims;
      s.iterators.assign(n, IteratorType::Parallel);
      AffineMap interior = AffineMap::identity(n);
      interior.results[a].constant = -pb;
      s.inputs.push_back({current, interior, 0.0});
      unsigned sum = s.body.input(0);
      for (int64_t j = 0; j < out; ++j) {
        if (j == pb) {
          j = pb + in - 1;
          continue;
        }
        int64_t rel = j - pb;
        int64_t src = mode == "edge" ? std::clamp<int64_t>(rel, 0, in - 1)
                      : rel < 0      ? -rel
                                     : 2 * (in - 1) - rel;
        AffineMap m = AffineMap::identity(n);
        m.results[a].coeffs[a] = in;
        m.results[a].constant = src - in * j;
        s.inputs.push_back({current, m, 0.0});
        sum = s.body.binary(SK::Add, sum,
                            s.body.input(s.inputs.size() - 1));
      }
      s.body.yield(sum);
      s.output = {result, AffineMap::identity(n)};
      program_.ops.push_back(std::move(s));
      current = result;
    }
    return absl::OkStatus();
  }

  absl::Status lowerSliceOrPad(const Op &op) {
    const TensorType &in = op.operand(0)->type();
    const TensorType &t = op.result()->type();
    unsigned n = t.rank();
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = t.dims().vec();
    s.iterators.assign(n, IteratorType::Parallel);
    AffineMap m = AffineMap::identity(n);
    COMPILER_ASSIGN_OR_RETURN(unsigned it, tensorFor(op.operand(0)));
    OperandAccess access{it, {}};
    if (op.kind() == "Slice") {
      auto starts = graph::getConstantInts(op.operand(1));
      std::optional<std::vector<int64_t>> axes, steps;
      if (op.operand(3)) {
        axes = graph::getConstantInts(op.operand(3));
      }
      if (op.operand(4)) {
        steps = graph::getConstantInts(op.operand(4));
      }
      if (!starts || (op.operand(3) && !axes) || (op.operand(4) && !steps)) {
        return op.emitError("starts, axes and steps must be constants");
      }
      for (size_t i = 0; i < starts->size(); ++i) {
        int64_t axis = axes ? (*axes)[i] : int64_t(i);
        axis = axis < 0 ? axis + n : axis;
        int64_t step = steps ? (*steps)[i] : 1;
        int64_t d = in.dim(axis);
        int64_t b = (*starts)[i];
        b = b < 0 ? b + d : b;
        b = step > 0 ? std::clamp<int64_t>(b, 0, d)
                     : std::clamp<int64_t>(b, 0, d - 1);
        m.results[axis] = AffineExpr::dim(n, axis, step);
        m.results[axis].constant = b;
      }
    } else {
      std::string mode = op.getString("mode", "constant");
      if (mode == "edge" || mode == "reflect") {
        return lowerPadMode(op, mode);
      }
      if (mode != "constant") {
        return op.emitError("unknown Pad mode '" + mode + "'");
      }
      auto pads = graph::getConstantInts(op.operand(1));
      if (!pads || op.operand(3)) {
        return absl::UnimplementedError(
            op.describe() + ": Pad needs constant pads and no axes operand");
      }
      double value = 0;
      if (op.operand(2)) {
        auto v = graph::getConstantFloats(op.operand(2));
        if (!v || v->size() != 1) {
          return op.emitError("constant_value must be a constant scalar");
        }
        value = (*v)[0];
      }
      for (unsigned d = 0; d < n; ++d) {
        if ((*pads)[d] < 0 || (*pads)[d + n] < 0) {
          return absl::UnimplementedError(
              op.describe() + ": negative pads do not lower yet");
        }
        m.results[d].constant = -(*pads)[d];
      }
      access.padValue = value;
    }
    access.map = m;
    s.inputs.push_back(access);
    COMPILER_ASSIGN_OR_RETURN(unsigned ot, tensorFor(op.result()));
    s.output = {ot, AffineMap::identity(n)};
    s.body.yield(s.body.input(0));
    program_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  absl::Status lowerMatmul(const Op &op) {
    bool gemm = op.kind() == "Gemm";
    const Value *a = op.operand(0), *b = op.operand(1);
    const TensorType &at = a->type(), &bt = b->type();
    const TensorType &t = op.result()->type();
    if (at.rank() < 2 || bt.rank() < 2) {
      return absl::UnimplementedError(
          op.describe() + ": matrix-vector products do not lower yet");
    }
    // Loops: output dims (batch..., m, n) then k.
    unsigned rank = t.rank();
    unsigned n = rank + 1, kDim = rank;
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = t.dims().vec();
    bool transA = gemm && op.getInt("transA", 0);
    bool transB = gemm && op.getInt("transB", 0);
    s.bounds.push_back(at.dim(transA ? at.rank() - 2 : at.rank() - 1));
    s.iterators.assign(rank, IteratorType::Parallel);
    s.iterators.push_back(IteratorType::Reduction);
    auto operandMap = [&](const TensorType &ot, bool trans, bool isA) {
      // Batch dims broadcast against the output batch dims.
      std::vector<int64_t> batchOut(t.dims().begin(), t.dims().end() - 2);
      std::vector<int64_t> batchIn(ot.dims().begin(), ot.dims().end() - 2);
      AffineMap m = broadcastMap(batchIn, batchOut, n);
      unsigned row = isA ? rank - 2 : kDim;
      unsigned col = isA ? kDim : rank - 1;
      if (trans) {
        std::swap(row, col);
      }
      m.results.push_back(AffineExpr::dim(n, row));
      m.results.push_back(AffineExpr::dim(n, col));
      return m;
    };
    COMPILER_ASSIGN_OR_RETURN(unsigned ta, tensorFor(a));
    COMPILER_ASSIGN_OR_RETURN(unsigned tb, tensorFor(b));
    s.inputs.push_back({ta, operandMap(at, transA, true)});
    s.inputs.push_back({tb, operandMap(bt, transB, false)});
    AffineMap outMap;
    outMap.numDims = n;
    for (unsigned d = 0; d < rank; ++d) {
      outMap.results.push_back(AffineExpr::dim(n, d));
    }
    s.init = 0.0;
    s.body.yield(s.body.binary(
        SK::Add, s.body.output(),
        s.body.binary(SK::Mul, s.body.input(0), s.body.input(1))));
    double alpha = gemm ? op.getFloat("alpha", 1.0) : 1.0;
    double beta = gemm ? op.getFloat("beta", 1.0) : 1.0;
    const Value *c = gemm ? op.operand(2) : nullptr;
    bool epilogue = alpha != 1.0 || c;
    unsigned acc;
    if (epilogue) {
      acc = newTensor(op.result()->name() + "_acc", t);
    } else {
      COMPILER_ASSIGN_OR_RETURN(acc, tensorFor(op.result()));
    }
    s.output = {acc, outMap};
    program_.ops.push_back(std::move(s));
    if (!epilogue) {
      return absl::OkStatus();
    }
    // y = alpha * acc + beta * C as a separate elementwise op; fusion puts it
    // back into the contraction's dispatch as an epilogue.
    ScalarBody eb;
    unsigned y = eb.input(0);
    if (alpha != 1.0) {
      y = eb.binary(SK::Mul, y, eb.constant(alpha));
    }
    std::vector<unsigned> ins = {acc};
    if (c) {
      unsigned cv = eb.input(1);
      if (beta != 1.0) {
        cv = eb.binary(SK::Mul, cv, eb.constant(beta));
      }
      y = eb.binary(SK::Add, y, cv);
      COMPILER_ASSIGN_OR_RETURN(unsigned ct, tensorFor(c));
      ins.push_back(ct);
    }
    eb.yield(y);
    StructuredOp e;
    e.nodeName = op.nodeName();
    e.bounds = t.dims().vec();
    e.iterators.assign(rank, IteratorType::Parallel);
    for (unsigned tensor : ins) {
      e.inputs.push_back({tensor, broadcastMap(program_.tensors[tensor].type.dims(),
                                               t.dims(), rank)});
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    e.output = {out, AffineMap::identity(rank)};
    e.body = std::move(eb);
    program_.ops.push_back(std::move(e));
    return absl::OkStatus();
  }

  // Conv, MaxPool and AveragePool: windowed reads with padding.
  absl::Status lowerWindow(const Op &op) {
    const std::string &k = op.kind();
    bool conv = k == "Conv";
    const TensorType &x = op.operand(0)->type();
    const TensorType &t = op.result()->type();
    if (op.hasAttr("auto_pad") && op.getString("auto_pad", "NOTSET") != "NOTSET") {
      return absl::UnimplementedError(
          op.describe() + ": auto_pad must be resolved before lowering");
    }
    unsigned spatial = x.rank() - 2;
    graph::IntList kernel = op.getIntList("kernel_shape");
    int64_t group = conv ? op.getInt("group", 1) : 1;
    if (conv) {
      const TensorType &w = op.operand(1)->type();
      kernel.assign(w.dims().begin() + 2, w.dims().end());
    }
    graph::IntList strides = op.getIntList("strides", graph::IntList(spatial, 1));
    graph::IntList dilations =
        op.getIntList("dilations", graph::IntList(spatial, 1));
    graph::IntList pads = op.getIntList("pads", graph::IntList(2 * spatial, 0));
    bool padded = false;
    for (int64_t p : pads) {
      padded |= p != 0;
    }
    // With ceil_mode the last windows may reach past the input (and its end
    // padding) even when no pads are given: those reads must be padded too.
    bool pastPads = false;
    for (unsigned i = 0; i < spatial; ++i) {
      int64_t last = (t.dim(2 + i) - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] - pads[i];
      padded |= last >= x.dim(2 + i);
      pastPads |= last >= x.dim(2 + i) + pads[spatial + i];
    }
    bool countIncludesPad = op.getInt("count_include_pad", 0) != 0;
    if (k == "AveragePool" && countIncludesPad && pastPads) {
      return absl::UnimplementedError(
          op.describe() + ": AveragePool with count_include_pad and windows "
                          "reaching past the padded input does not lower yet");
    }
    // AveragePool excluding padding divides by the number of in-bounds window
    // elements, which depends only on the output position: a constant of
    // reciprocals over the output's spatial dims.
    std::optional<unsigned> reciprocalCounts;
    if (k == "AveragePool" && padded && !countIncludesPad) {
      std::vector<int64_t> dims(t.dims().begin() + 2, t.dims().end());
      int64_t total = 1;
      for (int64_t d : dims) {
        total *= d;
      }
      std::vector<double> values(total);
      for (int64_t flat = 0; flat < total; ++flat) {
        int64_t rest = flat, count = 1;
        for (int64_t i = spatial - 1; i >= 0; --i) {
          int64_t o = rest % dims[i];
          rest /= dims[i];
          int64_t inside = 0;
          for (int64_t kk = 0; kk < kernel[i]; ++kk) {
            int64_t at = o * strides[i] + kk * dilations[i] - pads[i];
            inside += at >= 0 && at < x.dim(2 + i);
          }
          count *= inside;
        }
        if (count == 0) {
          return op.emitError("a pooling window lies entirely in the padding");
        }
        values[flat] = 1.0 / count;
      }
      unsigned c = newTensor(op.result()->name() + "_inv_count",
                             TensorType::ranked(t.elementType(), dims));
      program_.tensors[c].constant =
          graph::DenseData::fromDoubles(t.elementType(), values);
      reciprocalCounts = c;
    }
    // Loops: n, [g], m (or c), out spatial..., [c per group], kernel spatial...
    bool grouped = group > 1;
    std::vector<int64_t> bounds = {t.dim(0)};
    if (grouped) {
      bounds.push_back(group);
    }
    int64_t mPerGroup = t.dim(1) / group;
    bounds.push_back(mPerGroup);
    unsigned gDim = 1, mDim = grouped ? 2 : 1;
    unsigned outSpatial = bounds.size();
    for (unsigned i = 0; i < spatial; ++i) {
      bounds.push_back(t.dim(2 + i));
    }
    unsigned cDim = bounds.size();
    int64_t cPerGroup = x.dim(1) / group;
    if (conv) {
      bounds.push_back(cPerGroup);
    }
    unsigned kSpatial = bounds.size();
    for (unsigned i = 0; i < spatial; ++i) {
      bounds.push_back(kernel[i]);
    }
    unsigned n = bounds.size();
    StructuredOp s;
    s.nodeName = op.nodeName();
    s.bounds = bounds;
    s.iterators.assign(n, IteratorType::Parallel);
    for (unsigned d = conv ? cDim : kSpatial; d < n; ++d) {
      s.iterators[d] = IteratorType::Reduction;
    }
    auto channelExpr = [&](unsigned perGroupDim, int64_t perGroup) {
      AffineExpr e = AffineExpr::dim(n, perGroupDim);
      if (grouped) {
        e.coeffs[gDim] = perGroup;
      }
      return e;
    };
    AffineMap xMap;
    xMap.numDims = n;
    xMap.results.push_back(AffineExpr::dim(n, 0));
    xMap.results.push_back(conv ? channelExpr(cDim, cPerGroup)
                                : AffineExpr::dim(n, mDim));
    for (unsigned i = 0; i < spatial; ++i) {
      AffineExpr e = AffineExpr::dim(n, outSpatial + i, strides[i]);
      e.coeffs[kSpatial + i] = dilations[i];
      e.constant = -pads[i];
      xMap.results.push_back(e);
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned xt, tensorFor(op.operand(0)));
    OperandAccess xAccess{xt, xMap};
    if (padded) {
      xAccess.padValue = k == "MaxPool" ? -INFINITY : 0.0;
    }
    s.inputs.push_back(xAccess);
    if (conv) {
      AffineMap wMap;
      wMap.numDims = n;
      wMap.results.push_back(channelExpr(mDim, mPerGroup));
      wMap.results.push_back(AffineExpr::dim(n, cDim));
      for (unsigned i = 0; i < spatial; ++i) {
        wMap.results.push_back(AffineExpr::dim(n, kSpatial + i));
      }
      COMPILER_ASSIGN_OR_RETURN(unsigned wt, tensorFor(op.operand(1)));
      s.inputs.push_back({wt, wMap});
    }
    AffineMap outMap;
    outMap.numDims = n;
    outMap.results.push_back(AffineExpr::dim(n, 0));
    outMap.results.push_back(channelExpr(mDim, mPerGroup));
    for (unsigned i = 0; i < spatial; ++i) {
      outMap.results.push_back(AffineExpr::dim(n, outSpatial + i));
    }
    if (k == "MaxPool") {
      s.init = -INFINITY;
      s.body.yield(s.body.binary(SK::Max, s.body.output(), s.body.input(0)));
    } else if (k == "AveragePool") {
      s.init = 0.0;
      s.body.yield(s.body.binary(SK::Add, s.body.output(), s.body.input(0)));
    } else {
      s.init = 0.0;
      s.body.yield(s.body.binary(
          SK::Add, s.body.output(),
          s.body.binary(SK::Mul, s.body.input(0), s.body.input(1))));
    }
    const Value *bias = conv ? op.operand(2) : nullptr;
    bool needsEpilogue = bias || k == "AveragePool";
    unsigned acc;
    if (needsEpilogue) {
      acc = newTensor(op.result()->name() + "_acc", t);
    } else {
      COMPILER_ASSIGN_OR_RETURN(acc, tensorFor(op.result()));
    }
    s.output = {acc, outMap};
    program_.ops.push_back(std::move(s));
    if (!needsEpilogue) {
      return absl::OkStatus();
    }
    ScalarBody eb;
    std::vector<unsigned> ins = {acc};
    if (bias) {
      COMPILER_ASSIGN_OR_RETURN(unsigned bt, tensorFor(bias));
      ins.push_back(bt);
      eb.yield(eb.binary(SK::Add, eb.input(0), eb.input(1)));
    } else if (reciprocalCounts) {
      ins.push_back(*reciprocalCounts);
      eb.yield(eb.binary(SK::Mul, eb.input(0), eb.input(1)));
    } else {
      int64_t window = 1;
      for (int64_t kk : kernel) {
        window *= kk;
      }
      eb.yield(eb.binary(SK::Mul, eb.input(0), eb.constant(1.0 / window)));
    }
    StructuredOp e;
    e.nodeName = op.nodeName();
    unsigned rank = t.rank();
    e.bounds = t.dims().vec();
    e.iterators.assign(rank, IteratorType::Parallel);
    e.inputs.push_back({acc, AffineMap::identity(rank)});
    if (bias) {
      AffineMap channel;
      channel.numDims = rank;
      channel.results.push_back(AffineExpr::dim(rank, 1));
      e.inputs.push_back({ins[1], channel});
    } else if (reciprocalCounts) {
      AffineMap spatialMap;
      spatialMap.numDims = rank;
      for (unsigned i = 0; i < spatial; ++i) {
        spatialMap.results.push_back(AffineExpr::dim(rank, 2 + i));
      }
      e.inputs.push_back({*reciprocalCounts, spatialMap});
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
    e.output = {out, AffineMap::identity(rank)};
    e.body = std::move(eb);
    program_.ops.push_back(std::move(e));
    return absl::OkStatus();
  }

  const graph::Graph &graph_;
  StructuredProgram program_;
  std::unordered_map<const Value *, unsigned> tensors_;
  std::set<std::string> usedNames_;
};

} // namespace

absl::StatusOr<StructuredProgram> lowerToStructured(const graph::Graph &graph) {
  return Lowering(graph).run();
}

} // namespace osprey::compiler::structured
