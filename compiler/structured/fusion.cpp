// Fusion and tiling decisions from iterator types and indexing maps.
#include "compiler/structured/fusion.h"

#include <algorithm>
#include <tuple>

namespace osprey::compiler::structured {
namespace {

bool allParallel(const StructuredOp &op) { return !op.hasReduction(); }

// A copy whose single read is a permutation or broadcast: reading through it
// can be replaced by reading its input with a composed map.
bool isMapOnlyCopy(const StructuredProgram &p, const StructuredOp &op) {
  return !op.isView && allParallel(op) && op.body.isCopy() &&
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
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    const StructuredOp &copy = p.ops[i];
    if (!isMapOnlyCopy(p, copy)) {
      continue;
    }
    std::vector<unsigned> users = p.consumers(copy.output.tensor);
    bool ok = !users.empty();
    bool extentKept = keepsExtent(p, copy);
    for (unsigned u : users) {
      ok &= !p.ops[u].isView;
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

// An elementwise op E that reads a reshape V of a computed tensor T (V and E
// the only consumers of T and V) and otherwise only scalars is moved into
// T's index space: E reads T, writes V's tensor retyped to T's shape, and the
// reshape now follows E (to E's old output). E can then join T's group as an
// epilogue: a 1x1 convolution lowered to a matrix product keeps its
// activation (MobileNetV2's Clip after each expansion) in the same dispatch.
void sinkReshapes(StructuredProgram &p) {
  for (unsigned vi = 0; vi < p.ops.size(); ++vi) {
    StructuredOp &v = p.ops[vi];
    if (!v.isView || v.inputs.size() != 1) {
      continue;
    }
    unsigned t = v.inputs[0].tensor, vt = v.output.tensor;
    int producer = p.producer(t);
    if (producer < 0 || p.ops[producer].isView || p.tensors[t].isOutput ||
        p.tensors[vt].isOutput || p.consumers(t).size() != 1) {
      continue;
    }
    std::vector<unsigned> users = p.consumers(vt);
    if (users.size() != 1 || users[0] <= vi) {
      continue;
    }
    unsigned ei = users[0];
    StructuredOp &e = p.ops[ei];
    const TensorInfo &tInfo = p.tensors[t];
    if (e.isView || e.classify() != OpClass::Elementwise ||
        !e.output.map.isIdentity() || p.tensors[e.output.tensor].isOutput ||
        !tInfo.type.hasStaticShape() || tInfo.type.rank() == 0) {
      continue;
    }
    bool ok = true;
    unsigned reads = 0;
    for (const OperandAccess &in : e.inputs) {
      if (in.tensor == vt) {
        ok &= in.map.isIdentity();
        ++reads;
        continue;
      }
      for (const AffineExpr &r : in.map.results) {
        ok &= r.isConstant();
      }
    }
    if (!ok || reads != 1) {
      continue;
    }
    unsigned rank = static_cast<unsigned>(tInfo.type.rank());
    unsigned out = e.output.tensor;
    e.bounds = tInfo.type.dims().vec();
    e.iterators.assign(rank, IteratorType::Parallel);
    for (OperandAccess &in : e.inputs) {
      if (in.tensor == vt) {
        in.tensor = t;
        in.map = AffineMap::identity(rank);
        continue;
      }
      in.map.numDims = rank;
      for (AffineExpr &r : in.map.results) {
        r.coeffs.assign(rank, 0);
      }
    }
    p.tensors[vt].type = TensorType::ranked(
        p.tensors[out].type.elementType(), tInfo.type.dims().vec());
    e.output = {vt, AffineMap::identity(rank)};
    StructuredOp view = std::move(p.ops[vi]);
    view.inputs[0].tensor = vt;
    view.output.tensor = out;
    p.ops.erase(p.ops.begin() + vi);
    p.ops.insert(p.ops.begin() + ei, std::move(view)); // right after E
    --vi;
  }
}

// Inside a group values flow element by element, so every value |op| reads
// from group |g| must be read at the op's own index.
bool readsGroupByIdentity(const StructuredProgram &p, const StructuredOp &op,
                          int g) {
  for (const OperandAccess &in : op.inputs) {
    int producer = p.producer(in.tensor);
    if (producer >= 0 && p.ops[producer].fusion.group == g &&
        !in.map.isIdentity()) {
      return false;
    }
  }
  return true;
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

std::optional<GemmPlan> planGemm(const StructuredProgram &p,
                                 const StructuredOp &root) {
  OpClass cls = root.classify();
  if ((cls != OpClass::Contraction && cls != OpClass::Convolution) ||
      root.inputs.size() != 2 || !root.init || !root.output.map.isProjectedPermutation() ||
      root.output.map.results.empty()) {
    return std::nullopt;
  }
  size_t n = root.bounds.size();
  for (const OperandAccess &in : root.inputs) {
    if (in.indirect || in.map.numDims != n) {
      return std::nullopt;
    }
    for (const AffineExpr &e : in.map.results) {
      if (e.coeffs.size() != n) {
        return std::nullopt;
      }
    }
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
  llvm::ArrayRef<int64_t> aDims = p.tensors[a.tensor].type.dims();
  if (aDims.size() != a.map.results.size()) {
    return std::nullopt;
  }
  plan.aStrides.assign(n, 0);
  int64_t stride = 1;
  for (size_t k = aDims.size(); k-- > 0;) {
    const AffineExpr &e = a.map.results[k];
    for (size_t d = 0; d < n; ++d) {
      plan.aStrides[d] += e.coeffs[d] * stride;
    }
    plan.aOffset += e.constant * stride;
    stride *= aDims[k];
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

std::optional<RowConvPlan> planRowConv(const StructuredProgram &p,
                                       const StructuredOp &root) {
  if (root.classify() != OpClass::Convolution || root.inputs.size() != 2 ||
      !root.init || root.output.map.results.size() < 2 || planGemm(p, root)) {
    return std::nullopt;
  }
  size_t n = root.bounds.size();
  for (const OperandAccess &in : root.inputs) {
    if (in.indirect || in.map.numDims != n) {
      return std::nullopt;
    }
    for (const AffineExpr &e : in.map.results) {
      if (e.coeffs.size() != n) {
        return std::nullopt;
      }
    }
  }
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
// and for planes of fewer than kOutputs elements several planes of the
// first other loop (channels), so per-workgroup and per-plane overhead stays
// small on 7x7 and 14x14 maps; other loops get tiles of 1. The code
// generator runs large planes in blocks of rows that fit its scratch.
void chooseRowConvTiles(const StructuredOp &root, const RowConvPlan &plan,
                        const std::vector<unsigned> &order,
                        std::vector<int64_t> &tiles) {
  constexpr int64_t kOutputs = 1024;
  int64_t plane = std::max<int64_t>(1, root.bounds[plan.col]) *
                  std::max<int64_t>(1, root.bounds[plan.row]);
  bool grouped = false;
  for (unsigned d : order) {
    int64_t bound = std::max<int64_t>(1, root.bounds[d]);
    if (d == plan.col || d == plan.row) {
      tiles[d] = bound;
    } else if (!grouped && bound > 1) {
      tiles[d] = largestDivisorUpTo(bound,
                                    std::max<int64_t>(1, kOutputs / plane));
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

// Tile sizes and workgroup grid for |root|: parallel loops ordered by how
// late they appear in the output map (the last result is contiguous in
// memory) get tiles; reduction loops stay whole.
void chooseTiles(const StructuredProgram &p, const StructuredOp &root,
                 FusionGroup &group) {
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
  if (gemm) {
    chooseGemmTiles(root, *gemm, group.tileSizes);
  } else if ((rowConv = planRowConv(p, root))) {
    chooseRowConvTiles(root, *rowConv, order, group.tileSizes);
  }
  for (size_t i = 0; i < order.size() && !gemm && !rowConv; ++i) {
    int64_t want = i == 0 ? (contraction ? 16 : 64) : (i == 1 && contraction ? 8 : 1);
    int64_t bound = root.bounds[order[i]];
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

} // namespace

absl::Status fuseAndTile(StructuredProgram &p) {
  inlineCopies(p);
  sinkReshapes(p);
  p.groups.clear();
  for (unsigned i = 0; i < p.ops.size(); ++i) {
    StructuredOp &op = p.ops[i];
    op.fusion = FusionInfo();
    if (op.isView) {
      continue;
    }
    bool joined = false;
    if (op.classify() == OpClass::Elementwise) {
      for (const OperandAccess &in : op.inputs) {
        int producer = p.producer(in.tensor);
        if (producer < 0 || p.ops[producer].fusion.group < 0) {
          continue;
        }
        const TensorInfo &t = p.tensors[in.tensor];
        if (!in.map.isIdentity() || t.isOutput ||
            t.type.dims().vec() != op.bounds ||
            p.consumers(in.tensor).size() != 1) {
          continue;
        }
        int g = p.ops[producer].fusion.group;
        if (!readsGroupByIdentity(p, op, g)) {
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
    chooseTiles(p, p.ops[group.root], group);
  }
  relayoutGemmOperands(p);
  return absl::OkStatus();
}

} // namespace osprey::compiler::structured
