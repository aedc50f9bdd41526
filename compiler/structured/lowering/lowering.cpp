// The lowering context's builders.
#include "compiler/structured/lowering/lowering.h"

#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {

absl::StatusOr<unsigned> LoweringContext::tensorFor(const Value *v) {
  auto it = tensors_.find(v);
  if (it != tensors_.end()) {
    return it->second;
  }
  if (!v->type().hasStaticShape()) {
    std::string where = v->definingOp()
                            ? v->definingOp()->describe() + ": result"
                            : std::string("value");
    return absl::UnimplementedError(where + " '" + v->name() +
                                    "' has dynamic type " + v->type().str() +
                                    ": " + kDynamicResult);
  }
  return newTensor(v->name(), v->type(), v);
}

unsigned LoweringContext::newTensor(std::string base, TensorType type,
                                    const Value *v) {
  std::string name;
  for (char c : base) {
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  if (name.empty()) {
    name = "t";
  }
  // The first free "<name>_<i>": names are never freed, so the search goes
  // on where the last one for this name stopped.
  std::string unique = name;
  int &next = nextSuffix_[name];
  for (int i = std::max(next, 1); usedNames_.count(unique); ++i) {
    unique = name + "_" + std::to_string(i);
    next = i + 1;
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

StructuredOp LoweringContext::parallelOp(const Op &op,
                                         llvm::ArrayRef<int64_t> bounds) {
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = bounds.vec();
  s.iterators.assign(bounds.size(), IteratorType::Parallel);
  return s;
}

absl::Status LoweringContext::emit(StructuredOp s, const Value *result) {
  COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(result));
  s.output = {out, AffineMap::identity(result->type().rank())};
  add(std::move(s));
  return absl::OkStatus();
}

absl::Status LoweringContext::elementwise(const Op &op, const Value *result,
                                          std::vector<const Value *> inputs,
                                          ScalarBody body) {
  const TensorType &type = result->type();
  StructuredOp s = parallelOp(op, type.dims());
  unsigned n = type.rank();
  for (const Value *in : inputs) {
    COMPILER_ASSIGN_OR_RETURN(unsigned t, tensorFor(in));
    s.inputs.push_back({t, broadcastMap(in->type().dims(), type.dims(), n)});
  }
  s.body = std::move(body);
  return emit(std::move(s), result);
}

absl::StatusOr<unsigned>
LoweringContext::elementwiseTemp(const Op &op, TensorType type,
                                 std::vector<unsigned> inputs, ScalarBody body,
                                 const std::string &suffix) {
  StructuredOp s = parallelOp(op, type.dims());
  unsigned n = type.rank();
  for (unsigned t : inputs) {
    s.inputs.push_back({t, broadcastMap(this->type(t).dims(), type.dims(), n)});
  }
  unsigned out = newTemp(op, suffix, type);
  s.output = {out, AffineMap::identity(n)};
  s.body = std::move(body);
  add(std::move(s));
  return out;
}

absl::Status LoweringContext::copy(const Op &op) {
  ScalarBody b;
  b.yield(b.input(0));
  return elementwise(op, op.result(), {op.operand(0)}, std::move(b));
}

absl::StatusOr<unsigned>
LoweringContext::reduce(const Op &op, unsigned input, std::vector<bool> reduced,
                        bool keepDims, SK combine, double init, bool square,
                        const std::string &suffix, const Value *result) {
  const TensorType &in = type(input);
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
    out = newTemp(op, suffix, TensorType::ranked(in.elementType(), outDims));
  }
  s.output = {out, outMap};
  s.init = init;
  unsigned x = s.body.input(0);
  if (square) {
    x = s.body.binary(SK::Mul, x, x);
  }
  s.body.yield(s.body.binary(combine, s.body.output(), x));
  add(std::move(s));
  return out;
}

absl::Status LoweringContext::scaleInto(const Op &op, unsigned tensor,
                                        double factor) {
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  StructuredOp s = parallelOp(op, t.dims());
  // The reduced temporary has the result's shape; read it directly.
  s.inputs.push_back({tensor, AffineMap::identity(n)});
  if (type(tensor).rank() != t.rank()) {
    s.inputs.back().map = broadcastMap(type(tensor).dims(), t.dims(), n);
  }
  s.body.yield(
      s.body.binary(SK::Mul, s.body.input(0), s.body.constant(factor)));
  return emit(std::move(s), op.result());
}

absl::Status LoweringContext::view(const Op &op) {
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.isView = true;
  COMPILER_ASSIGN_OR_RETURN(unsigned in, tensorFor(op.operand(0)));
  COMPILER_ASSIGN_OR_RETURN(unsigned out, tensorFor(op.result()));
  s.inputs.push_back({in, {}});
  s.output = {out, {}};
  add(std::move(s));
  return absl::OkStatus();
}

} // namespace osprey::compiler::structured::lowering
