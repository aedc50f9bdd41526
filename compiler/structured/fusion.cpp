// Fusion and tiling decisions from iterator types and indexing maps.
#include "compiler/structured/fusion.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "compiler/structured/winograd.h"

namespace osprey::compiler::structured {
namespace {

bool allParallel(const StructuredOp &op) { return !op.hasReduction(); }

// A copy whose single read is a permutation or broadcast: reading through it
// can be replaced by reading its input with a composed map.
bool isMapOnlyCopy(const StructuredProgram &p, const StructuredOp &op) {
  return !op.isView && !op.external && allParallel(op) && op.body.isCopy() &&
         op.inputs.size() == 1 && !op.inputs[0].padValue &&
         op.inputs[0].map.isProjectedPermutationOrBroadcast() &&
         op.output.map.isIdentity() && !p.tensors[op.output.tensor].isOutput;
}

// Whether an index is inside |copy|'s output exactly when the index it reads
// is inside |copy|'s input. A padded read of the output can then be replaced
// by a padded read of the input; otherwise the output's extent (a prefix
// slice, a broadcast axis) decides which reads yield the padding value, and
// folding would expose input elements outside it.
bool keepsExtent(const StructuredProgram &p, const StructuredOp &copy) {
  const OperandAccess &in = copy.inputs[0];
  llvm::ArrayRef<int64_t> inDims = p.tensors[in.tensor].type.dims();
  if (in.map.results.size() != inDims.size()) {
    return false;
  }
  std::vector<bool> covered(copy.bounds.size(), false);
  for (size_t k = 0; k < in.map.results.size(); ++k) {
    std::optional<unsigned> d = in.map.results[k].asDim();
    if (!d) {
      continue; // constant index, inside the input for a well-formed copy
    }
    if (*d >= copy.bounds.size() || copy.bounds[*d] != inDims[k]) {
      return false;
    }
    covered[*d] = true;
  }
  return std::all_of(covered.begin(), covered.end(), [](bool c) { return c; });
}

void inlineCopies(StructuredProgram &p) {
  std::vector<bool> dead(p.ops.size(), false);
  // Ops that may read each tensor (p.consumers for every tensor at once,
  // kept up to date as reads move from a copy's output to its input).
  std::vector<std::vector<unsigned>> readers(p.tensors.size());
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    for (const OperandAccess &in : p.ops[i].inputs) {
      if (readers[in.tensor].empty() || readers[in.tensor].back() != i) {
        readers[in.tensor].push_back(i);
      }
    }
  }
  auto consumers = [&](unsigned tensor) {
    std::vector<unsigned> users;
    for (unsigned u : readers[tensor]) {
      for (const OperandAccess &in : p.ops[u].inputs) {
        if (in.tensor == tensor) {
          users.push_back(u);
          break;
        }
      }
    }
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    return users;
  };
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    const StructuredOp &copy = p.ops[i];
    if (!isMapOnlyCopy(p, copy)) {
      continue;
    }
    std::vector<unsigned> users = consumers(copy.output.tensor);
    bool ok = !users.empty();
    bool extentKept = keepsExtent(p, copy);
    for (unsigned u : users) {
      // An external op reads whole tensors, never through a map.
      ok &= !p.ops[u].isView && !p.ops[u].external;
      for (const OperandAccess &in : p.ops[u].inputs) {
        if (in.tensor == copy.output.tensor && in.padValue) {
          ok &= extentKept;
        }
        // An indirect index names a dimension of the copy's output, which a
        // composed map would renumber.
        ok &= !(in.tensor == copy.output.tensor && in.indirect);
      }
    }
    if (!ok) {
      continue;
    }
    for (unsigned u : users) {
      readers[copy.inputs[0].tensor].push_back(u);
      for (OperandAccess &in : p.ops[u].inputs) {
        if (in.tensor == copy.output.tensor) {
          in.map = copy.inputs[0].map.compose(in.map);
          in.tensor = copy.inputs[0].tensor;
        }
      }
    }
    dead[i] = true;
  }
  std::vector<StructuredOp> live;
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    if (!dead[i]) {
      live.push_back(std::move(p.ops[i]));
    }
  }
  p.ops = std::move(live);
}

// For a reshape from |from| to |to| (static shapes, same element count), the
// dimension of |to| that each dimension of |from| is (same extent, and the
// reshape neither merges nor splits it), or -1.
std::vector<int> reshapeDimMap(llvm::ArrayRef<int64_t> from,
                               llvm::ArrayRef<int64_t> to) {
  std::vector<int> map(from.size(), -1);
  size_t i = 0, j = 0;
  while (i < from.size() && j < to.size()) {
    size_t i0 = i, j0 = j;
    int64_t pf = from[i++], pt = to[j++];
    while (pf != pt) {
      if (pf < pt && i < from.size()) {
        pf *= from[i++];
      } else if (pt < pf && j < to.size()) {
        pt *= to[j++];
      } else {
        return std::vector<int>(from.size(), -1);
      }
    }
    if (i - i0 == 1 && j - j0 == 1) {
      map[i0] = static_cast<int>(j0);
    }
  }
  return map;
}

// Elementwise ops reading a reshape V of a computed tensor T (V the only
// consumer of T) move into T's index space when they form a set D with a
// single exit: every consumer of V is in D, the ops of D read V and each
// other's values by identity, and exactly one op S of D has a value read
// outside D. D starts as V's consumers and grows by S's consumers while
// those qualify and D keeps a single exit. Other operands of D's ops are
//  - broadcasts reading only dimensions the reshape keeps (a per-channel
//    scale after a 1x1 convolution lowered to [C][H*W]): renumbered;
//  - tensors of V's shape read by identity (a residual): read through a new
//    view to T's shape.
// The ops of D then iterate over T's shape, their internal values are
// retyped to it, S writes V's tensor retyped to T's shape, and the reshape
// follows S (to S's old output). D can join T's group: a 1x1 convolution
// keeps its activation (MobileNetV2's Clip, EfficientNet's SiLU =
// x * sigmoid(x), both reading x) and its residual add in one dispatch.
void sinkReshapes(StructuredProgram &p) {
  // Views made here are never sunk again (that would move D back).
  std::set<unsigned> madeViews;
  for (unsigned vi = 0; vi < p.ops.size(); ++vi) {
    const StructuredOp &v = p.ops[vi];
    if (!v.isView || v.inputs.size() != 1 || madeViews.count(v.output.tensor)) {
      continue;
    }
    unsigned t = v.inputs[0].tensor, vt = v.output.tensor;
    int producer = p.producer(t);
    if (producer < 0 || p.ops[producer].isView || p.ops[producer].external ||
        p.tensors[t].isOutput ||
        p.tensors[vt].isOutput || p.consumers(t).size() != 1) {
      continue;
    }
    const TensorInfo &tInfo = p.tensors[t];
    const TensorInfo &vInfo = p.tensors[vt];
    if (!tInfo.type.hasStaticShape() || tInfo.type.rank() == 0 ||
        !vInfo.type.hasStaticShape() || tInfo.type.numElements() == 0) {
      continue;
    }
    std::vector<int64_t> vDims = vInfo.type.dims().vec();
    std::vector<int64_t> tDims = tInfo.type.dims().vec();
    std::vector<int> dimMap = reshapeDimMap(vDims, tDims);
    unsigned rank = static_cast<unsigned>(tDims.size());
    // Tensors D reads through a new view (same-shape operands).
    std::set<unsigned> viewed;
    // Whether op |ei| can be in D when D's ops are |d|; same-shape operands
    // it reads are added to |shaped|.
    auto eligible = [&](unsigned ei, const std::set<unsigned> &d,
                        std::set<unsigned> &shaped) {
      const StructuredOp &e = p.ops[ei];
      if (ei <= vi || e.isView || e.classify() != OpClass::Elementwise ||
          !e.output.map.isIdentity() || e.bounds != vDims ||
          p.tensors[e.output.tensor].isOutput) {
        return false;
      }
      for (const OperandAccess &in : e.inputs) {
        if (in.padValue || in.indirect) {
          return false;
        }
        int prod = p.producer(in.tensor);
        bool inside = in.tensor == vt ||
                      (prod >= 0 && d.count(static_cast<unsigned>(prod)));
        if (inside) {
          if (!in.map.isIdentity()) {
            return false;
          }
          continue;
        }
        bool kept = true;
        for (const AffineExpr &r : in.map.results) {
          std::optional<unsigned> dim = r.asDim();
          kept &= r.isConstant() ||
                  (dim && *dim < dimMap.size() && dimMap[*dim] >= 0);
        }
        if (kept) {
          continue;
        }
        const TensorInfo &info = p.tensors[in.tensor];
        if (!in.map.isIdentity() || info.constant ||
            info.type.dims().vec() != vDims) {
          return false;
        }
        shaped.insert(in.tensor);
      }
      return true;
    };
    // Ops of |d| with a value read outside |d|.
    auto exits = [&](const std::set<unsigned> &d) {
      std::vector<unsigned> out;
      for (unsigned ei : d) {
        std::vector<unsigned> users = p.consumers(p.ops[ei].output.tensor);
        bool outside =
            users.empty() || p.tensors[p.ops[ei].output.tensor].isOutput;
        for (unsigned u : users) {
          outside |= !d.count(u);
        }
        if (outside) {
          out.push_back(ei);
        }
      }
      return out;
    };
    std::set<unsigned> d;
    bool ok = true;
    for (unsigned u : p.consumers(vt)) {
      d.insert(u);
    }
    for (unsigned u : d) {
      ok &= eligible(u, d, viewed);
    }
    std::vector<unsigned> out = exits(d);
    if (!ok || d.empty() || out.size() != 1) {
      continue;
    }
    for (;;) {
      std::set<unsigned> grown = d, shaped = viewed;
      for (unsigned u : p.consumers(p.ops[out[0]].output.tensor)) {
        grown.insert(u);
      }
      bool all = grown.size() > d.size(); // S is read (not only returned)
      for (unsigned u : grown) {
        all &= d.count(u) || eligible(u, grown, shaped);
      }
      std::vector<unsigned> grownOut;
      if (all) {
        grownOut = exits(grown);
      }
      if (!all || grownOut.size() != 1) {
        break;
      }
      d = std::move(grown);
      viewed = std::move(shaped);
      out = std::move(grownOut);
    }
    unsigned sink = out[0];
    // Retype D into T's index space.
    std::map<unsigned, unsigned> viewOf; // same-shape tensor -> its view
    for (unsigned x : viewed) {
      unsigned xv = static_cast<unsigned>(p.tensors.size());
      TensorInfo info;
      info.name = p.tensors[x].name + "_" + tInfo.name;
      info.type = TensorType::ranked(p.tensors[x].type.elementType(), tDims);
      p.tensors.push_back(std::move(info));
      viewOf[x] = xv;
      madeViews.insert(xv);
    }
    std::set<unsigned> dValues;
    for (unsigned ei : d) {
      dValues.insert(p.ops[ei].output.tensor);
    }
    for (unsigned ei : d) {
      StructuredOp &e = p.ops[ei];
      e.bounds = tDims;
      e.iterators.assign(rank, IteratorType::Parallel);
      for (OperandAccess &in : e.inputs) {
        if (in.tensor == vt || dValues.count(in.tensor)) {
          in.tensor = in.tensor == vt ? t : in.tensor;
          in.map = AffineMap::identity(rank);
        } else if (viewOf.count(in.tensor)) {
          in.tensor = viewOf[in.tensor];
          in.map = AffineMap::identity(rank);
        } else {
          in.map.numDims = rank;
          for (AffineExpr &r : in.map.results) {
            std::optional<unsigned> dim = r.asDim();
            r = dim ? AffineExpr::dim(rank, dimMap[*dim])
                    : AffineExpr::constantExpr(rank, r.constant);
          }
        }
      }
      e.output.map = AffineMap::identity(rank);
      if (ei != sink) {
        TensorInfo &info = p.tensors[e.output.tensor];
        info.type = TensorType::ranked(info.type.elementType(), tDims);
      }
    }
    unsigned sinkOut = p.ops[sink].output.tensor;
    p.tensors[vt].type =
        TensorType::ranked(p.tensors[sinkOut].type.elementType(), tDims);
    p.ops[sink].output.tensor = vt;
    // New op order: V leaves its place and follows S; each new view comes
    // right before the first op of D reading its tensor.
    StructuredOp moved = std::move(p.ops[vi]);
    moved.inputs[0].tensor = vt;
    moved.output.tensor = sinkOut;
    std::vector<StructuredOp> ops;
    std::set<unsigned> emitted;
    ops.reserve(p.ops.size() + viewOf.size());
    for (unsigned i = 0; i < p.ops.size(); ++i) {
      if (i == vi) {
        continue;
      }
      if (d.count(i)) {
        for (const OperandAccess &in : p.ops[i].inputs) {
          for (const auto &[x, xv] : viewOf) {
            if (in.tensor != xv || !emitted.insert(xv).second) {
              continue;
            }
            StructuredOp view;
            view.nodeName = p.ops[i].nodeName;
            view.isView = true;
            view.inputs.push_back({x, {}});
            view.output = {xv, {}};
            ops.push_back(std::move(view));
          }
        }
      }
      ops.push_back(std::move(p.ops[i]));
      if (i == sink) {
        ops.push_back(std::move(moved));
      }
    }
    p.ops = std::move(ops);
    --vi;
  }
}

// A per-channel scale E = x * s feeding only the B operand of a matrix
// product C (C[M][N] += A[M][K] * B[K][N], B = E or a reshape of E) where s
// varies only along K: E scales the whole activation (K x N elements) while
// the same result is A' * x with A' = A * s, the weights scaled along K
// (M x K elements). The squeeze-excitation blocks of EfficientNet and
// MobileNetV3 end this way (the activation scaled per channel, then a 1x1
// convolution). E is replaced by an op F computing A' before C; C reads A'
// and x (the reshape, if any, now views x). Only when A' is smaller than E's
// output, and not for products of at most 64 pixels, whose constant weights
// get a transposed copy (gemm_layout.cpp) that a computed A' would forgo.
void foldChannelScales(StructuredProgram &p) {
  constexpr int64_t kMinPixels = 65;
  for (unsigned ei = 0; ei < p.ops.size(); ++ei) {
    const StructuredOp &e = p.ops[ei];
    const auto &nodes = e.body.nodes();
    if (e.isView || e.classify() != OpClass::Elementwise ||
        e.inputs.size() != 2 || !e.output.map.isIdentity() ||
        p.tensors[e.output.tensor].isOutput || nodes.size() != 3 ||
        nodes[e.body.result()].kind != ScalarKind::Mul) {
      continue;
    }
    // Which input is x (identity) and which is s.
    int xi = e.inputs[0].map.isIdentity()   ? 0
             : e.inputs[1].map.isIdentity() ? 1
                                            : -1;
    if (xi < 0) {
      continue;
    }
    const OperandAccess &x = e.inputs[xi];
    const OperandAccess &s = e.inputs[1 - xi];
    if (x.padValue || x.indirect || s.padValue || s.indirect ||
        x.tensor == s.tensor ||
        p.tensors[x.tensor].type.elementType() != ElementType::F32 ||
        p.tensors[s.tensor].type.elementType() != ElementType::F32) {
      continue;
    }
    // E's value reaches C directly or through one reshape.
    unsigned bTensor = e.output.tensor;
    std::vector<unsigned> users = p.consumers(e.output.tensor);
    int view = -1;
    if (users.size() == 1 && p.ops[users[0]].isView) {
      view = static_cast<int>(users[0]);
      bTensor = p.ops[view].output.tensor;
      if (p.tensors[bTensor].isOutput) {
        continue;
      }
      users = p.consumers(bTensor);
    }
    if (users.size() != 1) {
      continue;
    }
    unsigned ci = users[0];
    const StructuredOp &c = p.ops[ci];
    std::optional<GemmPlan> plan = planGemm(p, c);
    if (!plan || c.inputs[plan->b].tensor != bTensor ||
        c.inputs[plan->a].tensor == bTensor) {
      continue;
    }
    int64_t pixels = 1;
    for (unsigned d : plan->nLoops) {
      pixels *= c.bounds[d];
    }
    const OperandAccess &a = c.inputs[plan->a];
    const TensorInfo &aInfo = p.tensors[a.tensor];
    const TensorInfo &eInfo = p.tensors[e.output.tensor];
    if (pixels < kMinPixels || !aInfo.type.hasStaticShape() ||
        !eInfo.type.hasStaticShape() ||
        aInfo.type.numElements() >= eInfo.type.numElements() ||
        aInfo.type.elementType() != ElementType::F32) {
      continue;
    }
    // E's dimensions as B's (through the reshape).
    std::vector<int> toB(e.bounds.size());
    for (size_t k = 0; k < toB.size(); ++k) {
      toB[k] = static_cast<int>(k);
    }
    if (view >= 0) {
      toB = reshapeDimMap(eInfo.type.dims(), p.tensors[bTensor].type.dims());
    }
    // s's map over A's dimensions: each loop s reads must be a reduction
    // loop of C that A reads as a plain dimension, or a loop of extent 1.
    const OperandAccess &b = c.inputs[plan->b];
    unsigned aRank = static_cast<unsigned>(aInfo.type.rank());
    AffineMap sMap;
    sMap.numDims = aRank;
    bool ok = a.map.results.size() == aRank;
    for (const AffineExpr &r : s.map.results) {
      if (r.isConstant()) {
        sMap.results.push_back(AffineExpr::constantExpr(aRank, r.constant));
        continue;
      }
      std::optional<unsigned> ed = r.asDim();
      if (!ed || *ed >= toB.size() || toB[*ed] < 0 ||
          static_cast<size_t>(toB[*ed]) >= b.map.results.size()) {
        ok = false;
        break;
      }
      std::optional<unsigned> loop = b.map.results[toB[*ed]].asDim();
      if (!loop) {
        ok = false;
        break;
      }
      int aDim = -1;
      for (unsigned k = 0; k < a.map.results.size(); ++k) {
        if (a.map.results[k].asDim() == loop) {
          aDim = static_cast<int>(k);
        }
      }
      if (aDim >= 0 && c.iterators[*loop] == IteratorType::Reduction) {
        sMap.results.push_back(AffineExpr::dim(aRank, aDim));
      } else if (c.bounds[*loop] == 1) {
        sMap.results.push_back(AffineExpr::constantExpr(aRank, 0));
      } else {
        ok = false;
        break;
      }
    }
    if (!ok) {
      continue;
    }
    StructuredOp f;
    f.nodeName = e.nodeName;
    f.bounds = aInfo.type.dims().vec();
    f.iterators.assign(aRank, IteratorType::Parallel);
    f.inputs.push_back({a.tensor, AffineMap::identity(aRank)});
    f.inputs.push_back({s.tensor, std::move(sMap)});
    TensorInfo scaled;
    scaled.name = aInfo.name + "_" + eInfo.name;
    scaled.type = aInfo.type;
    unsigned aScaled = static_cast<unsigned>(p.tensors.size());
    p.tensors.push_back(std::move(scaled));
    f.output = {aScaled, AffineMap::identity(aRank)};
    f.body.yield(
        f.body.binary(ScalarKind::Mul, f.body.input(0), f.body.input(1)));
    unsigned xTensor = x.tensor;
    p.ops[ci].inputs[plan->a].tensor = aScaled;
    if (view >= 0) {
      p.ops[view].inputs[0].tensor = xTensor;
    } else {
      p.ops[ci].inputs[plan->b].tensor = xTensor;
    }
    // E leaves; F goes right before C (A may be computed after E).
    std::vector<StructuredOp> ops;
    ops.reserve(p.ops.size());
    for (unsigned i = 0; i < p.ops.size(); ++i) {
      if (i == ci) {
        ops.push_back(std::move(f));
      }
      if (i != ei) {
        ops.push_back(std::move(p.ops[i]));
      }
    }
    p.ops = std::move(ops);
    --ei;
  }
}

// The op computing |tensor| through views (-1 for inputs and constants),
// from |producers| (op index per tensor).
int computingOp(const StructuredProgram &p, const std::vector<int> &producers,
                unsigned tensor) {
  int op = producers[tensor];
  while (op >= 0 && p.ops[op].isView) {
    op = producers[p.ops[op].inputs[0].tensor];
  }
  return op;
}

// Inside a group values flow element by element, so every value |op| reads
// from group |g| must be read at the op's own index: directly (a view would
// renumber the index) and through an identity map.
// The bindings group |g| would have with |op| joined: the activations
// (non-constant tensors) it reads from outside, and the tensors it produces
// that are returned or read by any op outside it (counted before later ops
// decide to join, so an upper bound).
size_t groupBindings(const StructuredProgram &p,
                     const std::vector<std::vector<unsigned>> &readers,
                     const FusionGroup &g, unsigned op) {
  std::set<unsigned> members(g.ops.begin(), g.ops.end());
  members.insert(op);
  std::set<unsigned> produced, bound;
  for (unsigned i : members) {
    produced.insert(p.ops[i].output.tensor);
  }
  for (unsigned i : members) {
    for (const OperandAccess &in : p.ops[i].inputs) {
      if (!produced.count(in.tensor) && !p.tensors[in.tensor].constant) {
        bound.insert(in.tensor);
      }
    }
    const unsigned out = p.ops[i].output.tensor;
    bool leaves = p.tensors[out].isOutput;
    for (unsigned r : readers[out]) {
      leaves |= !members.count(r);
    }
    if (leaves) {
      bound.insert(out);
    }
  }
  return bound.size();
}

bool readsGroupByIdentity(const StructuredProgram &p,
                          const std::vector<int> &producers,
                          const StructuredOp &op, int g) {
  for (const OperandAccess &in : op.inputs) {
    int producer = computingOp(p, producers, in.tensor);
    if (producer >= 0 && p.ops[producer].fusion.group == g &&
        (producer != producers[in.tensor] || !in.map.isIdentity())) {
      return false;
    }
  }
  return true;
}

// Whether group |from| reads, directly or through other groups, a value of
// group |target|. Joining an op of |target| that reads a value of |from|
// would then make the two regions wait for each other.
bool groupReaches(const StructuredProgram &p, const std::vector<int> &producers,
                  int from, int target) {
  std::vector<bool> seen(p.groups.size(), false);
  std::vector<int> work = {from};
  seen[from] = true;
  while (!work.empty()) {
    int g = work.back();
    work.pop_back();
    for (unsigned i : p.groups[g].ops) {
      for (const OperandAccess &in : p.ops[i].inputs) {
        int op = computingOp(p, producers, in.tensor);
        int h = op < 0 ? -1 : p.ops[op].fusion.group;
        if (h == target) {
          return true;
        }
        if (h >= 0 && !seen[h]) {
          seen[h] = true;
          work.push_back(h);
        }
      }
    }
  }
  return false;
}

// Whether input |in| reads loop |d| (any result depends on it).
bool readsLoop(const OperandAccess &in, unsigned d) {
  for (const AffineExpr &e : in.map.results) {
    if (d < e.coeffs.size() && e.coeffs[d] != 0) {
      return true;
    }
  }
  return false;
}

// Largest divisor of |bound| in [1, limit].
int64_t largestDivisorUpTo(int64_t bound, int64_t limit) {
  for (int64_t t = std::min(bound, limit); t > 1; --t) {
    if (bound % t == 0) {
      return t;
    }
  }
  return 1;
}

} // namespace

// Whether |root| reads and writes f32 only.
static bool isFloatRoot(const StructuredProgram &p, const StructuredOp &root) {
  auto f32 = [&](unsigned t) {
    return p.tensors[t].type.elementType() == ElementType::F32;
  };
  return f32(root.output.tensor) &&
         std::all_of(root.inputs.begin(), root.inputs.end(),
                     [&](const OperandAccess &in) { return f32(in.tensor); });
}

// Whether |root| multiplies i8 or i16 operands widened to an i32
// accumulator (quantized convolutions and matrix products).
static bool isWideningIntegerRoot(const StructuredProgram &p,
                                  const StructuredOp &root) {
  auto type = [&](unsigned t) { return p.tensors[t].type.elementType(); };
  if (!root.body.isWideningMultiplyAccumulate() ||
      type(root.output.tensor) != ElementType::I32) {
    return false;
  }
  return std::all_of(root.inputs.begin(), root.inputs.end(),
                     [&](const OperandAccess &in) {
                       ElementType t = type(in.tensor);
                       return t == ElementType::I8 || t == ElementType::I16;
                     });
}

// Whether every input of |root| reads directly (no indirect index) through
// an affine map over all of its loops.
static bool hasAffineReads(const StructuredOp &root) {
  size_t n = root.bounds.size();
  for (const OperandAccess &in : root.inputs) {
    if (in.indirect || in.map.numDims != n) {
      return false;
    }
    for (const AffineExpr &e : in.map.results) {
      if (e.coeffs.size() != n) {
        return false;
      }
    }
  }
  return true;
}

// |in|'s linear element offset as an affine function of |loops| loops:
// |strides| per loop and |offset| at the origin. False when its map's rank
// is not its tensor's.
static bool linearOffset(const StructuredProgram &p, const OperandAccess &in,
                         size_t loops, std::vector<int64_t> &strides,
                         int64_t &offset) {
  llvm::ArrayRef<int64_t> dims = p.tensors[in.tensor].type.dims();
  if (dims.size() != in.map.results.size()) {
    return false;
  }
  strides.assign(loops, 0);
  offset = 0;
  int64_t stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const AffineExpr &e = in.map.results[k];
    for (size_t d = 0; d < loops; ++d) {
      strides[d] += e.coeffs[d] * stride;
    }
    offset += e.constant * stride;
    stride *= dims[k];
  }
  return true;
}

std::optional<GemmPlan> planGemm(const StructuredProgram &p,
                                 const StructuredOp &root) {
  OpClass cls = root.classify();
  if ((cls != OpClass::Contraction && cls != OpClass::Convolution) ||
      !(isFloatRoot(p, root) || isWideningIntegerRoot(p, root)) ||
      root.winograd ||
      root.inputs.size() != 2 || !root.init || !root.output.map.isProjectedPermutation() ||
      root.output.map.results.empty()) {
    return std::nullopt;
  }
  size_t n = root.bounds.size();
  if (!hasAffineReads(root)) {
    return std::nullopt;
  }
  unsigned inner = *root.output.map.results.back().asDim();
  GemmPlan plan;
  bool r0 = readsLoop(root.inputs[0], inner);
  bool r1 = readsLoop(root.inputs[1], inner);
  if (r0 == r1) {
    return std::nullopt;
  }
  plan.b = r0 ? 0 : 1;
  plan.a = 1 - plan.b;
  const OperandAccess &a = root.inputs[plan.a];
  const OperandAccess &b = root.inputs[plan.b];
  if (a.padValue) {
    return std::nullopt;
  }
  // A's linear offset as an affine function of the loops.
  if (!linearOffset(p, a, n, plan.aStrides, plan.aOffset)) {
    return std::nullopt;
  }
  int mLoop = -1;
  for (const AffineExpr &e : root.output.map.results) {
    unsigned d = *e.asDim();
    if (root.iterators[d] != IteratorType::Parallel) {
      return std::nullopt;
    }
    bool ra = readsLoop(a, d), rb = readsLoop(b, d);
    if (ra && rb) {
      plan.batchLoops.push_back(d);
    } else if (ra) {
      if (root.bounds[d] == 1) {
        plan.batchLoops.push_back(d);
      } else if (mLoop >= 0) {
        return std::nullopt;
      } else {
        mLoop = static_cast<int>(d);
      }
    } else {
      plan.nLoops.push_back(d);
    }
  }
  if (mLoop < 0 || root.bounds[mLoop] < 4 || plan.nLoops.empty()) {
    return std::nullopt;
  }
  plan.mLoop = static_cast<unsigned>(mLoop);
  // Reduction loops flatten into one k when, ordered by A stride, each
  // stride is the next one's times its extent. Extent-1 loops go last.
  std::vector<unsigned> unit;
  for (unsigned d = 0; d < n; ++d) {
    if (root.iterators[d] == IteratorType::Parallel) {
      continue;
    }
    (root.bounds[d] == 1 ? unit : plan.kLoops).push_back(d);
  }
  std::stable_sort(plan.kLoops.begin(), plan.kLoops.end(),
                   [&](unsigned x, unsigned y) {
                     return plan.aStrides[x] > plan.aStrides[y];
                   });
  for (size_t i = 0; i < plan.kLoops.size(); ++i) {
    int64_t s = plan.aStrides[plan.kLoops[i]];
    int64_t next = i + 1 < plan.kLoops.size()
                       ? plan.aStrides[plan.kLoops[i + 1]] *
                             root.bounds[plan.kLoops[i + 1]]
                       : s;
    if (s <= 0 || s != next) {
      return std::nullopt;
    }
  }
  if (plan.kLoops.empty()) {
    return std::nullopt;
  }
  plan.kLoops.insert(plan.kLoops.end(), unit.begin(), unit.end());
  return plan;
}

std::optional<MatVecPlan> planMatVec(const StructuredProgram &p,
                                     const StructuredOp &root) {
  auto type = [&](unsigned t) { return p.tensors[t].type.elementType(); };
  OpClass cls = root.classify();
  if ((cls != OpClass::Contraction && cls != OpClass::Convolution) ||
      !isWideningIntegerRoot(p, root) || root.inputs.size() != 2 ||
      !root.init || type(root.inputs[0].tensor) != ElementType::I8 ||
      type(root.inputs[1].tensor) != ElementType::I8 ||
      !root.output.map.isProjectedPermutation() || planGemm(p, root)) {
    return std::nullopt;
  }
  size_t n = root.bounds.size();
  if (!hasAffineReads(root)) {
    return std::nullopt;
  }
  for (const OperandAccess &in : root.inputs) {
    if (in.padValue || !p.tensors[in.tensor].type.hasStaticShape()) {
      return std::nullopt;
    }
  }
  // w is the input that reads the output's innermost loop.
  unsigned inner = *root.output.map.results.back().asDim();
  MatVecPlan plan;
  bool r0 = readsLoop(root.inputs[0], inner);
  bool r1 = readsLoop(root.inputs[1], inner);
  if (r0 == r1) {
    return std::nullopt;
  }
  plan.w = r0 ? 0 : 1;
  plan.x = 1 - plan.w;
  const OperandAccess &x = root.inputs[plan.x];
  const OperandAccess &w = root.inputs[plan.w];
  bool haveN = false;
  for (unsigned d = 0; d < n; ++d) {
    bool rx = readsLoop(x, d), rw = readsLoop(w, d);
    if (root.iterators[d] != IteratorType::Parallel) {
      if (!rx || !rw) {
        return std::nullopt;
      }
      plan.kLoops.push_back(d);
    } else if (rx && rw) {
      return std::nullopt;
    } else if (rw) {
      if (haveN) {
        return std::nullopt;
      }
      haveN = true;
      plan.nLoop = d;
    } else if (rx) {
      plan.mLoops.push_back(d);
    } else if (root.bounds[d] != 1) {
      return std::nullopt;
    }
  }
  if (!haveN || plan.kLoops.empty()) {
    return std::nullopt;
  }
  if (!linearOffset(p, x, n, plan.xStrides, plan.xOffset)) {
    return std::nullopt;
  }
  std::stable_sort(plan.kLoops.begin(), plan.kLoops.end(),
                   [&](unsigned a, unsigned b) {
                     return plan.xStrides[a] > plan.xStrides[b];
                   });
  int64_t expected = 1;
  for (size_t i = plan.kLoops.size(); i-- > 0;) {
    unsigned d = plan.kLoops[i];
    if (plan.xStrides[d] != expected) {
      return std::nullopt;
    }
    expected *= root.bounds[d];
  }
  return plan;
}

bool hasMatVecRows(const StructuredProgram &p, const StructuredOp &root,
                   const MatVecPlan &plan) {
  const OperandAccess &w = root.inputs[plan.w];
  llvm::ArrayRef<int64_t> dims = p.tensors[w.tensor].type.dims();
  if (dims.size() != 2 || dims[1] % 4 != 0 ||
      w.map.results[0].asDim() != plan.nLoop) {
    return false;
  }
  // The second result is k flattened in x's order.
  const AffineExpr &k = w.map.results[1];
  int64_t expected = 1;
  for (size_t i = plan.kLoops.size(); i-- > 0;) {
    unsigned d = plan.kLoops[i];
    if (k.coeffs[d] != expected) {
      return false;
    }
    expected *= root.bounds[d];
  }
  return k.constant == 0 && expected <= dims[1];
}

std::optional<RowConvPlan> planRowConv(const StructuredProgram &p,
                                       const StructuredOp &root) {
  if (root.classify() != OpClass::Convolution ||
      !(isFloatRoot(p, root) || isWideningIntegerRoot(p, root)) ||
      root.inputs.size() != 2 || !root.init ||
      root.output.map.results.size() < 2 || planGemm(p, root) ||
      !hasAffineReads(root)) {
    return std::nullopt;
  }
  size_t n = root.bounds.size();
  const auto &out = root.output.map.results;
  std::optional<unsigned> col = out.back().asDim();
  std::optional<unsigned> row = out[out.size() - 2].asDim();
  if (!col || !row || *col == *row ||
      root.iterators[*col] != IteratorType::Parallel ||
      root.iterators[*row] != IteratorType::Parallel ||
      root.bounds[*col] <= 0 || root.bounds[*row] <= 0) {
    return std::nullopt;
  }
  RowConvPlan plan;
  plan.col = *col;
  plan.row = *row;
  bool r0 = readsLoop(root.inputs[0], *col);
  bool r1 = readsLoop(root.inputs[1], *col);
  if (r0 == r1) {
    return std::nullopt;
  }
  plan.b = r0 ? 0 : 1;
  plan.a = 1 - plan.b;
  const OperandAccess &a = root.inputs[plan.a];
  const OperandAccess &b = root.inputs[plan.b];
  if (a.padValue || readsLoop(a, *row) ||
      p.tensors[b.tensor].type.rank() !=
          static_cast<int64_t>(b.map.results.size())) {
    return std::nullopt;
  }
  // |e| as stride * loop + dilation * window + constant, with at most one
  // window loop (a reduction) besides |loop|.
  auto window = [&](const AffineExpr &e, unsigned loop, int64_t &stride,
                    int64_t &dilation, std::optional<unsigned> &win) {
    stride = e.coeffs[loop];
    if (stride <= 0) {
      return false;
    }
    for (unsigned d = 0; d < n; ++d) {
      if (d == loop || e.coeffs[d] == 0) {
        continue;
      }
      if (win || e.coeffs[d] < 0 ||
          root.iterators[d] == IteratorType::Parallel) {
        return false;
      }
      win = d;
      dilation = e.coeffs[d];
    }
    return true;
  };
  unsigned last = static_cast<unsigned>(b.map.results.size()) - 1;
  if (!window(b.map.results[last], *col, plan.colStride, plan.colDilation,
              plan.kw)) {
    return std::nullopt;
  }
  std::optional<unsigned> rowResult;
  for (unsigned k = 0; k < last; ++k) {
    if (b.map.results[k].coeffs[*row] != 0) {
      if (rowResult) {
        return std::nullopt;
      }
      rowResult = k;
    }
  }
  if (!rowResult || !window(b.map.results[*rowResult], *row, plan.rowStride,
                            plan.rowDilation, plan.kh)) {
    return std::nullopt;
  }
  plan.rowResult = *rowResult;
  if (plan.kh && plan.kh == plan.kw) {
    return std::nullopt;
  }
  for (unsigned k = 0; k < last; ++k) {
    const AffineExpr &e = b.map.results[k];
    if (k == *rowResult) {
      continue;
    }
    for (std::optional<unsigned> d : {std::optional<unsigned>(*col),
                                      std::optional<unsigned>(*row), plan.kw,
                                      plan.kh}) {
      if (d && e.coeffs[*d] != 0) {
        return std::nullopt;
      }
    }
  }
  return plan;
}

namespace {

// Tiles of a root with a RowConvPlan: whole planes (all rows and columns),
// and for small planes several planes of the first other loop (channels),
// about kOutputs outputs per workgroup (kSmallOutputs for planes under 128
// outputs), so per-workgroup and per-plane overhead stays small on 7x7 and
// 14x14 maps; other loops get tiles of 1. The code generator runs large
// planes in blocks of rows that fit its scratch. Measured on single layers
// against 1024 outputs for all: 14x14 maps -3% to -20% with 512 (2 planes),
// 7x7 maps 5-20% slower with 512 (10 planes) than with 1024 (20 planes), and
// 4096 slower everywhere.
void chooseRowConvTiles(const StructuredOp &root, const RowConvPlan &plan,
                        const std::vector<unsigned> &order,
                        std::vector<int64_t> &tiles) {
  constexpr int64_t kOutputs = 512;
  constexpr int64_t kSmallOutputs = 1024;
  int64_t plane = std::max<int64_t>(1, root.bounds[plan.col]) *
                  std::max<int64_t>(1, root.bounds[plan.row]);
  int64_t outputs = plane < 128 ? kSmallOutputs : kOutputs;
  bool grouped = false;
  for (unsigned d : order) {
    int64_t bound = std::max<int64_t>(1, root.bounds[d]);
    if (d == plan.col || d == plan.row) {
      tiles[d] = bound;
    } else if (!grouped && bound > 1) {
      tiles[d] = largestDivisorUpTo(bound,
                                    std::max<int64_t>(1, outputs / plane));
      grouped = true;
    } else {
      tiles[d] = 1;
    }
  }
}

// Tiles of a root with a GemmPlan: up to kPanelPixels flattened N elements
// (whole inner rows where they fit, as few padded vector columns as
// possible) by
// up to kPanelRows (kSinglePanelRows) of M; batch loops get tiles of 1. A
// panel of 256 x 224 floats stays in L2; wider tiles read the weights (A)
// fewer times (ResNet-18 -3% against 112).
void chooseGemmTiles(const StructuredOp &root, const GemmPlan &plan,
                     std::vector<int64_t> &tiles) {
  constexpr int64_t kPanelPixels = 224;
  constexpr int64_t kPanelRows = 128;
  // When the pixels fit one tile, every M tile would pack the same panel:
  // larger M tiles pack it fewer times (a 512-channel 7x7 convolution 4.0
  // -> 2.5 ms with 512 instead of 128 rows), at the cost of workgroups.
  constexpr int64_t kSinglePanelRows = 512;
  // Vector width (f32 lanes) the column padding is counted in.
  constexpr int64_t kVectorPixels = 16;
  int64_t budget = kPanelPixels;
  int64_t nTiles = 1;
  int64_t inner = 1; // pixels per step of the current loop's tile
  for (auto it = plan.nLoops.rbegin(); it != plan.nLoops.rend(); ++it) {
    int64_t bound = std::max<int64_t>(1, root.bounds[*it]);
    int64_t t;
    if (bound <= budget) {
      t = bound;
    } else {
      // The tile of [budget / 2, budget] that computes the fewest vector
      // columns over all tiles (pixels padded to 16-wide vectors), then
      // makes the fewest tiles (each reads all of A), then divides the
      // bound: 28x28 maps take tiles of 8 rows (224 pixels, the last 112)
      // instead of 7 (196 pixels computed as 208; a 128-channel 3x3
      // convolution 1.75 -> 1.64 ms). Columns of a matrix (the innermost
      // loop) prefer equal tiles first, as before (BERT's 1024-wide
      // products: 8 tiles of 128, not 4 of 224 and one of 128).
      auto columns = [&](int64_t pixels) {
        return (pixels + kVectorPixels - 1) / kVectorPixels;
      };
      auto rank = [&](int64_t c) {
        bool uneven = bound % c != 0;
        return std::make_tuple(bound / c * columns(c * inner) +
                                   (uneven ? columns(bound % c * inner) : 0),
                               inner == 1 && uneven, (bound + c - 1) / c,
                               uneven);
      };
      t = budget;
      for (int64_t c = budget; c >= std::max<int64_t>(1, budget / 2); --c) {
        if (rank(c) < rank(t)) {
          t = c;
        }
      }
    }
    tiles[*it] = t;
    nTiles *= (bound + t - 1) / t;
    inner *= t;
    budget = std::max<int64_t>(1, budget / t);
  }
  int64_t rows = nTiles == 1 ? kSinglePanelRows : kPanelRows;
  int64_t m = std::max<int64_t>(1, root.bounds[plan.mLoop]);
  int64_t mt = m;
  if (m > rows) {
    mt = largestDivisorUpTo(m, rows);
    mt = mt < rows / 2 ? rows : mt;
  }
  tiles[plan.mLoop] = mt;
  for (unsigned d : plan.batchLoops) {
    tiles[d] = 1;
  }
}

// Tiles of an all-parallel root on the generic loop nest: whole inner rows
// and as many rows as fit kElementwiseTile elements, so each workgroup runs
// long vectorized rows with little per-workgroup overhead, while tensors of
// more than two tiles still split into several workgroups (two cpu-task
// workers share a 96x112x112 activation as ~300 workgroups). Divisors are
// preferred so tiles are full; an inner row longer than the budget is split
// into the largest divisor of at least half the budget, else into tiles of
// the budget (a multiple of every vector width) with a partial last tile.
// A workgroup of 4096 elements moved 1.2 M elements of a SiLU in ~300
// workgroups where tiles of 16 took 75,264.
void chooseElementwiseTiles(const StructuredOp &root,
                            const std::vector<unsigned> &order,
                            std::vector<int64_t> &tiles) {
  constexpr int64_t kElementwiseTile = 4096;
  int64_t budget = kElementwiseTile;
  for (unsigned d : order) {
    int64_t bound = std::max<int64_t>(1, root.bounds[d]);
    int64_t t = bound;
    if (bound > budget) {
      t = largestDivisorUpTo(bound, budget);
      if (t < budget / 2) {
        t = budget;
      }
    }
    tiles[d] = t;
    budget = std::max<int64_t>(1, budget / t);
  }
}

// Tile sizes and workgroup grid for |root|: parallel loops ordered by how
// late they appear in the output map (the last result is contiguous in
// memory) get tiles; reduction loops stay whole.
void chooseTiles(const StructuredProgram &p, const StructuredOp &root,
                 FusionGroup &group, const FusionOptions &options) {
  if (root.external) {
    // One workgroup: the external code generator divides the work itself.
    group.tileSizes.clear();
    group.tiledLoops.clear();
    group.workgroups.assign(3, 1);
    return;
  }
  size_t n = root.bounds.size();
  group.tileSizes.assign(n, 0);
  std::vector<unsigned> order; // innermost first
  const AffineMap &out = root.output.map;
  for (auto it = out.results.rbegin(); it != out.results.rend(); ++it) {
    for (unsigned d = 0; d < n; ++d) {
      if (it->coeffs.size() == n && it->coeffs[d] != 0 &&
          root.iterators[d] == IteratorType::Parallel &&
          std::find(order.begin(), order.end(), d) == order.end()) {
        order.push_back(d);
      }
    }
  }
  bool contraction = root.classify() == OpClass::Contraction ||
                     root.classify() == OpClass::Convolution;
  std::optional<GemmPlan> gemm = planGemm(p, root);
  std::optional<RowConvPlan> rowConv;
  bool matVec = !gemm && options.matVecRows && planMatVec(p, root);
  if (matVec) {
    // One workgroup: the code generator sign-extends x once for all rows
    // (these targets are single cores; 16-row tiles re-extended x eight
    // times in the FC autoencoder's 128-row layers).
    for (unsigned d : order) {
      group.tileSizes[d] = std::max<int64_t>(1, root.bounds[d]);
    }
  } else if (gemm) {
    chooseGemmTiles(root, *gemm, group.tileSizes);
    if (std::optional<WinogradPlan> winograd =
            planWinograd(p, root, options.winograd)) {
      chooseWinogradTiles(root, *winograd, group.tileSizes);
    }
  } else if ((rowConv = planRowConv(p, root))) {
    chooseRowConvTiles(root, *rowConv, order, group.tileSizes);
  } else if (!root.hasReduction()) {
    chooseElementwiseTiles(root, order, group.tileSizes);
  }
  // Other reductions (pooling, row statistics) take further outer loops
  // while a workgroup does at most kReductionWork reduction steps: a 3x3
  // max pool over 56-wide rows ran 3584 workgroups of one row each.
  constexpr int64_t kReductionWork = 16384;
  int64_t steps = 1;
  for (size_t d = 0; d < n; ++d) {
    if (root.iterators[d] == IteratorType::Reduction) {
      steps *= std::max<int64_t>(1, root.bounds[d]);
    }
  }
  for (size_t i = 0;
       i < order.size() && !gemm && !rowConv && !matVec && root.hasReduction();
       ++i) {
    int64_t want = i == 0 ? (contraction ? 16 : 64) : (i == 1 && contraction ? 8 : 1);
    int64_t bound = root.bounds[order[i]];
    if (i > 0 && !contraction) {
      int64_t t =
          largestDivisorUpTo(std::max<int64_t>(1, bound),
                             std::max<int64_t>(1, kReductionWork / steps));
      group.tileSizes[order[i]] = t;
      steps *= t;
      continue;
    }
    // Prefer a tile that divides the loop (down to a quarter of the wanted
    // size): full tiles have constant extents, which code generators unroll.
    for (int64_t t = want; t >= std::max<int64_t>(1, want / 4); t /= 2) {
      if (bound % t == 0) {
        want = t;
        break;
      }
    }
    // Empty loops still get a tile of 1 (and one workgroup that does
    // nothing), so tile counts never divide by zero.
    group.tileSizes[order[i]] = std::max<int64_t>(1, std::min(bound, want));
    steps *= group.tileSizes[order[i]];
  }
  group.tiledLoops = order;
  group.workgroups.assign(3, 1);
  for (size_t i = 0; i < order.size(); ++i) {
    unsigned d = order[i];
    int64_t count = std::max<int64_t>(
        1, (root.bounds[d] + group.tileSizes[d] - 1) / group.tileSizes[d]);
    group.workgroups[std::min<size_t>(i, 2)] *= count;
  }
  group.microkernel = root.classify() == OpClass::Contraction;
}

// Depthwise prologues: a 1x1 expansion (a matrix product over channels and
// its elementwise epilogue: bias, activation) whose value only a depthwise
// convolution reads is computed by that convolution's code generator while
// it fills its padded scratch planes (llvm_cpu/depthwise_conv.cpp), so the
// wide expanded map never goes to memory: MobileNetV2's early blocks wrote
// and read back about 13 MB of it. The expansion is recomputed for the
// window rows two row blocks share, and each plane computes its channel
// alone (every input row vector feeds one FMA), so only short reductions
// on wide maps pay (thresholds in DepthwisePrologueOptions).

// Channels per workgroup of a depthwise group with a prologue.
constexpr int64_t kPrologueChannelTile = 8;

// Scalar kinds a prologue's epilogue may use (depthwise_conv.cpp evaluates
// them on vectors, exp, tanh and sigmoid in a loop over each computed row).
bool prologueKind(ScalarKind k) {
  switch (k) {
  case ScalarKind::Input:
  case ScalarKind::Const:
  case ScalarKind::Neg:
  case ScalarKind::Abs:
  case ScalarKind::Exp:
  case ScalarKind::Tanh:
  case ScalarKind::Sigmoid:
  case ScalarKind::Add:
  case ScalarKind::Sub:
  case ScalarKind::Mul:
  case ScalarKind::Div:
  case ScalarKind::Max:
  case ScalarKind::Min:
    return true;
  default:
    return false;
  }
}

// The group whose ops may run as the prologue of group |g|'s depthwise
// root, or -1.
int prologueGroup(const StructuredProgram &p, unsigned g,
                  const FusionOptions &options) {
  const FusionGroup &group = p.groups[g];
  const StructuredOp &root = p.ops[group.root];
  std::optional<RowConvPlan> rc = planRowConv(p, root);
  if (!rc) {
    return -1;
  }
  // Depthwise: each output reads one input plane.
  for (unsigned d = 0; d < root.bounds.size(); ++d) {
    if (root.iterators[d] == IteratorType::Reduction && d != rc->kh &&
        d != rc->kw && root.bounds[d] != 1) {
      return -1;
    }
  }
  auto f32 = [&](unsigned t) {
    return p.tensors[t].type.elementType() == ElementType::F32 &&
           p.tensors[t].type.hasStaticShape();
  };
  // The root reads the value directly or through one reshape, and nothing
  // else reads it.
  unsigned v = root.inputs[rc->b].tensor, t = v;
  int producer = p.producer(v);
  auto onlyRoot = [&](unsigned tensor) {
    std::vector<unsigned> users = p.consumers(tensor);
    return !users.empty() && !p.tensors[tensor].isOutput &&
           std::all_of(users.begin(), users.end(),
                       [&](unsigned u) { return u == group.root; });
  };
  if (producer >= 0 && p.ops[producer].isView) {
    t = p.ops[producer].inputs[0].tensor;
    std::vector<unsigned> users = p.consumers(t);
    if (users.size() != 1 || p.tensors[t].isOutput || !onlyRoot(v)) {
      return -1;
    }
    producer = p.producer(t);
  } else if (!onlyRoot(v)) {
    return -1;
  }
  if (producer < 0 || p.ops[producer].isView || !f32(t) || !f32(v)) {
    return -1;
  }
  int e = p.ops[producer].fusion.group;
  if (e < 0 || e == static_cast<int>(g) || p.groups[e].ops.back() != static_cast<unsigned>(producer) ||
      !p.groups[e].prologue.empty()) {
    return -1;
  }
  const FusionGroup &eg = p.groups[e];
  const StructuredOp &eRoot = p.ops[eg.root];
  std::optional<GemmPlan> gemm = planGemm(p, eRoot);
  llvm::ArrayRef<int64_t> tDims = p.tensors[t].type.dims();
  unsigned rank = static_cast<unsigned>(tDims.size());
  if (!gemm || rank == 0 ||
      eRoot.output.map.results.size() != rank || !f32(eRoot.output.tensor)) {
    return -1;
  }
  // The expansion's output index is its first |rank| loops, in order; the
  // rest are reductions.
  int64_t k = 1;
  for (unsigned d = 0; d < eRoot.bounds.size(); ++d) {
    bool parallel = eRoot.iterators[d] == IteratorType::Parallel;
    if (d < rank ? (!parallel || eRoot.output.map.results[d].asDim() != d ||
                    eRoot.bounds[d] != tDims[d])
                 : parallel) {
      return -1;
    }
    if (!parallel) {
      k *= eRoot.bounds[d];
    }
  }
  // The value's loops split into plane loops [s, rank), which flatten to
  // the depthwise input's (row, column) plane, and channel loops [0, s).
  // The matrix product's B reads pixels contiguously and no channel loop
  // (but loops of extent 1); A and per-channel operands read no pixel loop.
  unsigned pixel = rank - 1;
  llvm::ArrayRef<int64_t> vDims = p.tensors[v].type.dims();
  if (vDims.size() < 2 || rc->rowResult + 2 != vDims.size()) {
    return -1;
  }
  int64_t plane = vDims[vDims.size() - 2] * vDims.back(), inner = 1;
  unsigned s = rank;
  while (s > 0 && inner < plane) {
    inner *= tDims[--s];
  }
  if (inner != plane) {
    return -1;
  }
  auto readsPlane = [&](const OperandAccess &in) {
    for (unsigned d = s; d < rank; ++d) {
      if (readsLoop(in, d)) {
        return true;
      }
    }
    return false;
  };
  const OperandAccess &a = eRoot.inputs[gemm->a];
  const OperandAccess &b = eRoot.inputs[gemm->b];
  if (b.padValue || b.indirect || !f32(a.tensor) || !f32(b.tensor) ||
      b.map.results.size() != static_cast<size_t>(
                                  p.tensors[b.tensor].type.rank()) ||
      readsPlane(a)) {
    return -1;
  }
  for (unsigned d = 0; d < s; ++d) {
    if (readsLoop(b, d) && tDims[d] != 1) {
      return -1;
    }
  }
  llvm::ArrayRef<int64_t> bDims = p.tensors[b.tensor].type.dims();
  int64_t stride = 1, pixelStride = 0;
  for (size_t r = bDims.size(); r-- > 0;) {
    pixelStride += b.map.results[r].coeffs[pixel] * stride;
    stride *= bDims[r];
  }
  if (pixelStride != 1) {
    return -1;
  }
  // The epilogue: elementwise ops over the same index, reading earlier
  // values of the group by identity and otherwise only per-channel or
  // scalar operands; only the last value leaves the group.
  std::set<unsigned> values = {eRoot.output.tensor};
  bool math = false;
  for (size_t i = 1; i < eg.ops.size(); ++i) {
    const StructuredOp &op = p.ops[eg.ops[i]];
    if (op.classify() != OpClass::Elementwise || !op.output.map.isIdentity() ||
        op.bounds != tDims.vec() || !f32(op.output.tensor)) {
      return -1;
    }
    for (const ScalarNode &n : op.body.nodes()) {
      if (!prologueKind(n.kind)) {
        return -1;
      }
      math |= n.kind == ScalarKind::Exp || n.kind == ScalarKind::Tanh ||
              n.kind == ScalarKind::Sigmoid;
    }
    for (const OperandAccess &in : op.inputs) {
      if (in.padValue || in.indirect || !f32(in.tensor)) {
        return -1;
      }
      if (values.count(in.tensor) ? !in.map.isIdentity() : readsPlane(in)) {
        return -1;
      }
    }
    values.insert(op.output.tensor);
  }
  for (size_t i = 0; i + 1 < eg.ops.size(); ++i) {
    unsigned out = p.ops[eg.ops[i]].output.tensor;
    if (p.tensors[out].isOutput) {
      return -1;
    }
    for (unsigned u : p.consumers(out)) {
      if (p.ops[u].fusion.group != e) {
        return -1;
      }
    }
  }
  // Rows of the depthwise input never straddle the expansion's pixel loop.
  int64_t width = vDims.back();
  // Measured per block (MobileNetV2's shapes alone, CPU time against the
  // unfused pair): 112-wide stride 2 -50%, 56-wide stride 1 -24%, stride 2
  // -32%, 28-wide -20% (stride 1) and -13% (stride 2), but 14-wide +25%:
  // there the expanded map is small and stays in cache, where the matrix
  // product's microkernel beats the prologue's dot products. Strided ones
  // need 56 columns on scalar targets: on Cortex-M4 (no cache to spare)
  // MobileNetV1-0.25's 48-wide stride-2 block ran 0.45% more instructions
  // fused.
  // An activation with exp (EfficientNet's SiLU) runs in an extra pass over
  // each computed row: 112-wide -17%, 56-wide -5 to -7%, 28-wide +0-2%.
  bool strided = rc->rowStride > 1 || rc->colStride > 1;
  const DepthwisePrologueOptions &limits = options.depthwisePrologue;
  int64_t minStridedWidth = limits.minStridedWidth;
  if (minStridedWidth == 0) {
    minStridedWidth = options.vectorWidth > 1 ? 28 : 56;
  }
  if (width <= 0 || tDims.back() % width != 0 ||
      k > int64_t(limits.maxReduction) || width < int64_t(limits.minWidth) ||
      (strided && width < minStridedWidth) ||
      (math && width < int64_t(limits.mathMinWidth))) {
    return -1;
  }
  return e;
}

// Moves the ops of each expansion group that qualifies (prologueGroup) into
// the prologue of the depthwise group reading it and drops its group.
void fuseDepthwisePrologues(StructuredProgram &p,
                            const FusionOptions &options) {
  if (!options.depthwisePrologue.enabled) {
    return;
  }
  for (unsigned g = 0; g < p.groups.size(); ++g) {
    int e = prologueGroup(p, g, options);
    if (e < 0) {
      continue;
    }
    FusionGroup &group = p.groups[g];
    group.prologue = p.groups[e].ops;
    // Several channels per workgroup: the code generator computes a few
    // planes' rows together, sharing each input row load.
    const StructuredOp &root = p.ops[group.root];
    std::optional<RowConvPlan> rc = planRowConv(p, root);
    for (unsigned d : group.tiledLoops) {
      if (d != rc->row && d != rc->col && root.bounds[d] > 1) {
        group.tileSizes[d] =
            largestDivisorUpTo(root.bounds[d], kPrologueChannelTile);
        break;
      }
    }
    group.workgroups.assign(3, 1);
    for (size_t i = 0; i < group.tiledLoops.size(); ++i) {
      unsigned d = group.tiledLoops[i];
      group.workgroups[std::min<size_t>(i, 2)] *= std::max<int64_t>(
          1, (root.bounds[d] + group.tileSizes[d] - 1) / group.tileSizes[d]);
    }
    for (unsigned i : p.groups[e].ops) {
      p.ops[i].fusion.group = static_cast<int>(g);
      p.ops[i].fusion.role = FusionInfo::Role::Prologue;
    }
    p.groups.erase(p.groups.begin() + e);
    for (StructuredOp &op : p.ops) {
      if (op.fusion.group > e) {
        --op.fusion.group;
      }
    }
    if (static_cast<unsigned>(e) < g) {
      --g;
    }
  }
}

} // namespace

// Ops one fusion group takes at most: bounds the work of each join (the
// group's bindings and reach are recomputed per candidate) and the size of
// one dispatch function, on long elementwise chains (unrolled loops).
constexpr size_t kMaxGroupOps = 256;

absl::Status fuseAndTile(StructuredProgram &p,
                         const FusionOptions &options) {
  inlineCopies(p);
  sinkReshapes(p);
  foldChannelScales(p);
  p.groups.clear();
  std::vector<int> producers(p.tensors.size(), -1);
  std::vector<std::vector<unsigned>> readers(p.tensors.size());
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    producers[p.ops[i].output.tensor] = static_cast<int>(i);
    for (const OperandAccess &in : p.ops[i].inputs) {
      readers[in.tensor].push_back(i);
    }
  }
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    StructuredOp &op = p.ops[i];
    op.fusion = FusionInfo();
    if (op.isView) {
      continue;
    }
    bool joined = false;
    if (op.classify() == OpClass::Elementwise && op.output.map.isIdentity()) {
      for (const OperandAccess &in : op.inputs) {
        int producer = producers[in.tensor];
        if (producer < 0 || p.ops[producer].fusion.group < 0) {
          continue;
        }
        const TensorInfo &t = p.tensors[in.tensor];
        if (!in.map.isIdentity() || t.isOutput ||
            t.type.dims().vec() != op.bounds) {
          continue;
        }
        int g = p.ops[producer].fusion.group;
        if (p.ops[p.groups[g].root].external ||
            p.groups[g].ops.size() >= kMaxGroupOps ||
            !readsGroupByIdentity(p, producers, op, g) ||
            groupBindings(p, readers, p.groups[g], i) > kMaxDispatchBindings) {
          continue;
        }
        bool cycle = false;
        for (const OperandAccess &other : op.inputs) {
          int o = computingOp(p, producers, other.tensor);
          int h = o < 0 ? -1 : p.ops[o].fusion.group;
          cycle |= h >= 0 && h != g && groupReaches(p, producers, h, g);
        }
        if (cycle) {
          continue;
        }
        FusionGroup &group = p.groups[g];
        op.fusion.group = g;
        op.fusion.role = p.ops[group.root].hasReduction()
                             ? FusionInfo::Role::Epilogue
                             : FusionInfo::Role::Fused;
        group.ops.push_back(i);
        joined = true;
        break;
      }
    }
    if (!joined) {
      FusionGroup group;
      group.root = i;
      group.ops = {i};
      op.fusion.group = static_cast<int>(p.groups.size());
      op.fusion.role = FusionInfo::Role::Root;
      p.groups.push_back(std::move(group));
    }
  }
  for (FusionGroup &group : p.groups) {
    chooseTiles(p, p.ops[group.root], group, options);
  }
  fuseDepthwisePrologues(p, options);
  transformWinogradWeights(p, options);
  relayoutGemmOperands(p, options);
  return absl::OkStatus();
}

} // namespace osprey::compiler::structured
