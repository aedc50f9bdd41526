// Fusion and tiling decisions from iterator types and indexing maps.
#include "compiler/structured/fusion.h"

#include <algorithm>

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

// Tile sizes and workgroup grid for |root|: parallel loops ordered by how
// late they appear in the output map (the last result is contiguous in
// memory) get tiles; reduction loops stay whole.
void chooseTiles(const StructuredOp &root, FusionGroup &group) {
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
  for (size_t i = 0; i < order.size(); ++i) {
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
    chooseTiles(p.ops[group.root], group);
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::structured
