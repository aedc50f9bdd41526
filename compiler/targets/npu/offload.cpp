#include "compiler/targets/npu/offload.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/graph/status.h"
#include "compiler/targets/npu/graph_layers.h"

namespace osprey::compiler::npu {
namespace {

using graph::Op;
using graph::Value;
using structured::AffineExpr;
using structured::AffineMap;
using structured::IteratorType;
using structured::StructuredOp;
using structured::lowering::LoweringContext;

// The longest chain the search for the best cut tries: bounds the compile
// time (each candidate chain is compiled to learn its cycles).
constexpr size_t kMaxChainLayers = 64;

bool isGraphOutput(const graph::Graph &graph, const Value *v) {
  for (const Value *out : graph.outputs()) {
    if (out == v) {
      return true;
    }
  }
  return false;
}

// A copy of a 4-D tensor into |to| (of |toDims|): input dimension k is read
// at loop readDims[k].
StructuredOp transposeCopy(std::string name, unsigned from, unsigned to,
                           llvm::ArrayRef<int64_t> toDims,
                           const unsigned (&readDims)[4]) {
  StructuredOp s;
  s.nodeName = std::move(name);
  s.bounds = toDims.vec();
  s.iterators.assign(4, IteratorType::Parallel);
  AffineMap read;
  read.numDims = 4;
  for (unsigned d : readDims) {
    read.results.push_back(AffineExpr::dim(4, d));
  }
  s.inputs.push_back({from, read});
  s.body.yield(s.body.input(0));
  s.output = {to, AffineMap::identity(4)};
  return s;
}

} // namespace

bool needsTranspose(const graph::TensorType &type) {
  if (!type.hasStaticShape() || type.rank() != 4 || type.dim(0) != 1) {
    return false;
  }
  return type.dim(1) > 1 && type.dim(2) * type.dim(3) > 1;
}

std::string NpuKernel::str() const {
  std::string text = absl::StrCat(chain_.layers.size(), " layer",
                                  chain_.layers.size() == 1 ? "" : "s", " (");
  for (size_t i = 0; i < chain_.layers.size(); ++i) {
    absl::StrAppend(&text, i ? ", " : "",
                    layerKindName(chain_.layers[i].kind));
  }
  absl::StrAppend(&text, "), ", trial_.estimatedCycles, " cycles, ",
                  trial_.weights.size(), " weight bytes");
  return text;
}

absl::StatusOr<std::unique_ptr<NpuOffload>>
NpuOffload::plan(const graph::Graph &graph, const NpuConfig &config,
                 OffloadMode mode, const CostModel &cost) {
  COMPILER_ASSIGN_OR_RETURN(Partition partition,
                            partitionGraph(graph, config, mode, cost));
  std::unique_ptr<NpuOffload> o(new NpuOffload(graph, config));
  o->partition_ = std::move(partition);
  Partition &p = o->partition_;
  std::map<const Op *, OpPlacement *> placementOf;
  for (OpPlacement &placement : p.ops) {
    placementOf[placement.op] = &placement;
  }
  // Each partition chain is cut into the compiled chains with the fewest
  // cycles in all (the stream emitter's estimates, which are the
  // simulator's): a chain whose intermediates would spill out of SRAM, or
  // whose residents leave too little room for good tiles, runs better as
  // shorter chains. An op the emitter refuses alone stays on the CPU.
  for (const std::vector<size_t> &chain : p.chains) {
    std::vector<const Op *> ops;
    for (size_t i : chain) {
      const Op *op = p.ops[i].op;
      absl::StatusOr<Chain> alone = o->compileChain({op});
      if (alone.ok()) {
        ops.push_back(op);
        continue;
      }
      if (mode == OffloadMode::All) {
        return absl::UnimplementedError(absl::StrCat(
            "--offload=all: node '", op->nodeName(), "' (", op->kind(),
            ") cannot run on the NPU: ", alone.status().message()));
      }
      OpPlacement &placement = *placementOf[op];
      placement.onNpu = false;
      placement.npuCycles = 0;
      placement.reason = absl::StrCat("the NPU code generator refused it: ",
                                      alone.status().message());
    }
    // best[i]: the fewest cycles of ops[i..]; end[i]: where its first
    // chain ends.
    const size_t n = ops.size();
    std::vector<uint64_t> best(n + 1, 0);
    std::vector<size_t> end(n, 0);
    for (size_t first = n; first-- > 0;) {
      best[first] = UINT64_MAX;
      for (size_t last = first; last < n && last - first < kMaxChainLayers;
           ++last) {
        auto run = llvm::ArrayRef(ops).slice(first, last - first + 1);
        if (!formsChain(graph, run)) {
          continue;
        }
        absl::StatusOr<Chain> c = o->compileChain({run.begin(), run.end()});
        if (!c.ok()) {
          break; // Longer runs hold the same intermediates and more.
        }
        const uint64_t cycles = c->kernel->trial().estimatedCycles + best[last + 1];
        if (cycles <= best[first]) { // Ties go to the longer chain.
          best[first] = cycles;
          end[first] = last;
        }
      }
    }
    for (size_t first = 0; first < n; first = end[first] + 1) {
      COMPILER_ASSIGN_OR_RETURN(
          Chain c, o->compileChain({ops.begin() + first, ops.begin() + end[first] + 1}));
      for (const Op *op : c.ops) {
        o->chainOf_[op] = o->chains_.size();
      }
      o->chains_.push_back(std::move(c));
    }
  }
  // The partition now describes the chains as compiled.
  p.chains.assign(o->chains_.size(), {});
  p.npuMacs = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    OpPlacement &placement = p.ops[i];
    auto it = o->chainOf_.find(placement.op);
    placement.chain = it == o->chainOf_.end() ? -1 : static_cast<int>(it->second);
    if (placement.chain >= 0) {
      p.chains[placement.chain].push_back(i);
      p.npuMacs += placement.macs;
    }
  }
  return o;
}

absl::StatusOr<NpuOffload::Chain>
NpuOffload::compileChain(std::vector<const Op *> ops) const {
  if (!formsChain(graph_, ops)) {
    return absl::FailedPreconditionError(
        "a value of the run is read outside it");
  }
  Chain c;
  c.ops = std::move(ops);
  NpuChain chain;
  // Activation inputs first (their positions are their bindings), then the
  // layers that refer to them.
  std::map<const Value *, unsigned> inputIndex;
  std::vector<NpuLayer> layers;
  // Chain op -> its position (the id of the tensor it produces).
  std::map<const Op *, size_t> producerIndex;
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const Op &op = *c.ops[i];
    producerIndex[&op] = i;
    absl::StatusOr<NpuLayer> layer = layerFromOp(op);
    if (!layer.ok()) {
      return absl::InternalError(absl::StrCat("node '", op.nodeName(),
                                              "': ", layer.status().message()));
    }
    auto operand = [&](unsigned k) {
      const Value *v = op.operand(k);
      if (auto it = producerIndex.find(v->definingOp());
          v->definingOp() && it != producerIndex.end()) {
        return Operand::resident(static_cast<uint32_t>(it->second));
      }
      auto [it, added] =
          inputIndex.emplace(v, static_cast<unsigned>(c.inputs.size()));
      if (added) {
        c.inputs.push_back(v);
      }
      return Operand::memory(it->second);
    };
    layer->in = operand(0);
    if (layer->hasSecondInput()) {
      layer->in2 = operand(1);
    }
    layers.push_back(std::move(*layer));
  }
  const auto n = static_cast<uint32_t>(c.inputs.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    layers[i].dst = i + 1 == layers.size()
                        ? Operand::memory(n + 1)
                        : Operand::resident(static_cast<uint32_t>(i));
  }
  chain.layers = std::move(layers);
  chain.weightBinding = n;
  chain.scratchBinding = n + 2;
  COMPILER_ASSIGN_OR_RETURN(CompiledStream trial, emitChain(chain, config_));
  if (trial.scratchBytes > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the chain's intermediates need ", trial.scratchBytes,
                     " bytes outside SRAM"));
  }
  c.kernel = std::make_shared<NpuKernel>(std::move(chain), n, std::move(trial),
                                         config_);
  return c;
}

absl::StatusOr<unsigned> NpuOffload::hwcTensor(LoweringContext &ctx,
                                               const Value *v) {
  if (auto it = hwc_.find(v); it != hwc_.end()) {
    return it->second;
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned t, ctx.tensorFor(v));
  if (!needsTranspose(v->type())) {
    return t;
  }
  const graph::TensorType &type = v->type();
  std::vector<int64_t> dims = {1, type.dim(2), type.dim(3), type.dim(1)};
  unsigned hwc = ctx.newTensor(
      v->name() + "_hwc", graph::TensorType::ranked(type.elementType(), dims));
  // hwc[n][h][w][c] = nchw[n][c][h][w]: loops (n, h, w, c) read (0, 3, 1, 2).
  static const unsigned kRead[4] = {0, 3, 1, 2};
  ctx.add(transposeCopy("'" + v->name() + "' to HWC for the NPU", t, hwc,
                        dims, kRead));
  hwc_[v] = hwc;
  return hwc;
}

absl::StatusOr<bool> NpuOffload::lower(LoweringContext &ctx, const Op &op) {
  auto found = chainOf_.find(&op);
  if (found == chainOf_.end()) {
    return false;
  }
  const Chain &c = chains_[found->second];
  if (&op != c.ops.back()) {
    return true; // Computed by the chain's op, emitted with its last op.
  }
  const NpuKernel &kernel = *c.kernel;
  StructuredOp s;
  s.nodeName = c.ops.front()->nodeName();
  if (c.ops.size() > 1) {
    s.nodeName += " .. " + c.ops.back()->nodeName();
  }
  auto whole = [&](unsigned t) {
    return structured::OperandAccess{
        t, AffineMap::identity(
               static_cast<unsigned>(ctx.type(t).rank()))};
  };
  for (const Value *v : c.inputs) {
    COMPILER_ASSIGN_OR_RETURN(unsigned t, hwcTensor(ctx, v));
    s.inputs.push_back(whole(t));
  }
  const std::vector<uint8_t> &weights = kernel.trial().weights;
  if (!weights.empty()) {
    unsigned w = ctx.newTensor(
        op.result()->name() + "_npu_weights",
        graph::TensorType::ranked(graph::ElementType::I8,
                                  {static_cast<int64_t>(weights.size())}));
    ctx.program().tensors[w].constant = graph::DenseData::fromBytes(weights);
    s.inputs.push_back(whole(w));
  }
  const Value *result = op.result();
  const graph::TensorType &type = result->type();
  if (!needsTranspose(type)) {
    COMPILER_ASSIGN_OR_RETURN(unsigned out, ctx.tensorFor(result));
    s.output = whole(out);
    s.external = c.kernel;
    ctx.add(std::move(s));
    return true;
  }
  std::vector<int64_t> hwcDims = {1, type.dim(2), type.dim(3), type.dim(1)};
  unsigned hwc = ctx.newTensor(
      result->name() + "_hwc",
      graph::TensorType::ranked(type.elementType(), hwcDims));
  s.output = whole(hwc);
  s.external = c.kernel;
  ctx.add(std::move(s));
  hwc_[result] = hwc;
  // Back to NCHW when the CPU reads the value or it is returned; a later
  // chain reads the HWC tensor.
  bool cpuReads = isGraphOutput(graph_, result);
  for (const Op *user : graph_.users(result)) {
    cpuReads |= !chainOf_.count(user);
  }
  if (cpuReads) {
    COMPILER_ASSIGN_OR_RETURN(unsigned nchw, ctx.tensorFor(result));
    // nchw[n][c][h][w] = hwc[n][h][w][c]: loops (n, c, h, w) read (0, 2, 3, 1).
    static const unsigned kRead[4] = {0, 2, 3, 1};
    ctx.add(transposeCopy("'" + result->name() + "' from HWC after the NPU",
                          hwc, nchw, type.dims(), kRead));
  }
  return true;
}

} // namespace osprey::compiler::npu
