// Compile-time layout of constant matrix-product operands: weights of
// products with few output pixels get their output-channel axis innermost.
//
// A GemmPlan root computes C[M][N] += A[M][K] * B[K][N] with the vectors of
// the microkernel along N. When one tile holds all of N and N is small and
// not a multiple of the vector width (49 pixels of a 7x7 map take 64
// columns: 30% of the multiply-adds are wasted), code generators do better
// vectorizing along M instead, which needs rows of A that are contiguous
// along M: A^T[K][M]. This pass gives such roots a transposed copy of their
// constant A and rewrites the root to read it; the original constant stays
// for its other readers (if none, nothing binds it and it is not emitted).
//
// The M axis of the copy is padded to a multiple of 16 floats (code
// generators may read a whole vector group past the last row). Copies of
// more than kOddGroupBytes also get an odd count of 16-float groups: rows
// 64 bytes times an odd number apart spread over all sets of the L1 cache
// (512 channels, 2 KiB apart, would share four sets; 512-channel 3x3 7x7
// convolution 1.81 -> 1.76 ms). Smaller weights skip that padding: they
// are the ones of small embedded models, whose flash it would cost (6% of
// MobileNetV1-0.25 for Cortex-M4, which has no cache to gain).
//
// On targets with a two-pair integer multiply-add (FusionOptions::
// matVecRows), the i8 weights of matrix-vector products (MatVecPlan) get
// rows of reduction steps instead, so a 32-bit load reads four steps of one
// output's row.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "compiler/structured/fusion.h"

namespace osprey::compiler::structured {
namespace {

// Largest pixel count per tile for which the transposed layout is chosen
// (the most the GEMM tiles hold): 7x7 maps (49 pixels as 64 columns) and
// 14x14 maps (196 as 208; a 256-channel 3x3 convolution 1.80 -> 1.75 ms, a
// 1x1 convolution 384 -> 64 channels 0.085 -> 0.066 ms).
constexpr int64_t kMaxColumns = 224;
// Fewest reduction steps: the transposed accumulator tile is read across
// its rows by the epilogue, which short reductions do not amortize (a 1x1
// convolution 64 -> 384 channels on 14x14 ran 0.09 -> 0.21 ms transposed).
constexpr int64_t kMinReduction = 128;
// Vector group the padding is counted in (floats).
constexpr int64_t kGroup = 16;
// Copies larger than this get an odd number of groups per row.
constexpr int64_t kOddGroupBytes = int64_t{1} << 20;

// The padded M extent of a transposed copy with |m| rows and |bytes| bytes.
int64_t paddedRows(int64_t m, int64_t bytes) {
  int64_t groups = (m + kGroup - 1) / kGroup;
  if (groups % 2 == 0 && bytes > kOddGroupBytes) {
    ++groups;
  }
  return groups * kGroup;
}

// Whether the group rooted at |root| (tiles |tiles|) should read a
// transposed A: all of N in one tile, at most kMaxColumns pixels and not a
// whole number of 16-wide vectors, at least kMinReduction reduction steps.
bool wantsTransposedA(const StructuredProgram &p, const StructuredOp &root,
                      const GemmPlan &plan,
                      const std::vector<int64_t> &tiles) {
  if (!plan.batchLoops.empty() || root.bounds[plan.mLoop] < kGroup) {
    return false;
  }
  int64_t pixels = 1;
  for (unsigned d : plan.nLoops) {
    int64_t bound = root.bounds[d];
    if (d < tiles.size() && tiles[d] > 0 && tiles[d] < bound) {
      return false;
    }
    pixels *= bound;
  }
  if (pixels <= 0 || pixels > kMaxColumns || pixels % kGroup == 0) {
    return false;
  }
  int64_t k = 1;
  for (unsigned d : plan.kLoops) {
    k *= root.bounds[d];
  }
  if (k < kMinReduction) {
    return false;
  }
  const OperandAccess &a = root.inputs[plan.a];
  const TensorInfo &t = p.tensors[a.tensor];
  if (!t.constant || t.type.elementType() != ElementType::F32 ||
      !t.type.hasStaticShape() || !a.map.isProjectedPermutation()) {
    return false;
  }
  int64_t elements = 1;
  for (int64_t d : t.type.dims()) {
    elements *= d;
  }
  return t.constant->size() == static_cast<size_t>(elements) * 4;
}

// Adds the transposed, padded copy of input |plan.a| of |root| and makes
// |root| read it. Roots reading the same constant along the same axis share
// one copy (|copies|: source tensor and axis to copy).
void transposeA(StructuredProgram &p, StructuredOp &root, const GemmPlan &plan,
                std::map<std::pair<unsigned, size_t>, unsigned> &copies) {
  OperandAccess &a = root.inputs[plan.a];
  unsigned srcTensor = a.tensor;
  llvm::ArrayRef<int64_t> dims = p.tensors[srcTensor].type.dims();
  size_t rank = dims.size();
  size_t mPos = rank;
  for (size_t i = 0; i < rank; ++i) {
    if (a.map.results[i].asDim() == plan.mLoop) {
      mPos = i;
    }
  }
  // New axis order: A's axes without M, then M.
  std::vector<size_t> order;
  for (size_t i = 0; i < rank; ++i) {
    if (i != mPos) {
      order.push_back(i);
    }
  }
  order.push_back(mPos);
  AffineMap map;
  map.numDims = a.map.numDims;
  for (size_t i : order) {
    map.results.push_back(a.map.results[i]);
  }
  a.map = std::move(map);
  auto known = copies.find({srcTensor, mPos});
  if (known != copies.end()) {
    a.tensor = known->second;
    return;
  }
  const TensorInfo &src = p.tensors[srcTensor];
  int64_t rows = dims[mPos];
  int64_t rowsPad =
      paddedRows(rows, static_cast<int64_t>(src.constant->size()));
  std::vector<int64_t> newDims;
  for (size_t i : order) {
    newDims.push_back(dims[i]);
  }
  newDims.back() = rowsPad;
  // Source strides (elements) of each axis.
  std::vector<int64_t> srcStride(rank, 1);
  for (size_t i = rank - 1; i > 0; --i) {
    srcStride[i - 1] = srcStride[i] * dims[i];
  }
  int64_t outer = 1;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    outer *= newDims[i];
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(outer * rowsPad) * 4, 0);
  const uint8_t *in = src.constant->bytes().data();
  std::vector<int64_t> index(rank - 1, 0);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = 0;
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      base += index[i] * srcStride[order[i]];
    }
    for (int64_t m = 0; m < rows; ++m) {
      std::memcpy(&bytes[static_cast<size_t>(o * rowsPad + m) * 4],
                  in + static_cast<size_t>(base + m * srcStride[mPos]) * 4, 4);
    }
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < newDims[i]) {
        break;
      }
      index[i] = 0;
    }
  }
  TensorInfo copy;
  copy.name = src.name + "_kxm";
  copy.type = TensorType::ranked(ElementType::F32, newDims);
  copy.constant = graph::DenseData::fromBytes(std::move(bytes));
  a.tensor = static_cast<unsigned>(p.tensors.size());
  copies[{srcTensor, mPos}] = a.tensor;
  p.tensors.push_back(std::move(copy));
}

// Gives MatVecPlan root |root| a copy of its constant i8 weights w with
// rows of k: w'[n][k] for k < K, zero up to Kp (K rounded up to 4), and
// makes it read w' at [nLoop][k]. Roots reading the same constant through
// the same map share one copy (|copies|: source tensor and map). Returns
// without change when w is not a constant of its type's size.
void giveMatVecRows(
    StructuredProgram &p, StructuredOp &root, const MatVecPlan &plan,
    std::map<std::pair<unsigned, std::string>, unsigned> &copies) {
  OperandAccess &w = root.inputs[plan.w];
  const TensorInfo &src = p.tensors[w.tensor];
  if (!src.constant || src.type.numElements() !=
                           static_cast<int64_t>(src.constant->size())) {
    return;
  }
  std::pair<unsigned, std::string> key = {w.tensor, w.map.str()};
  int64_t rows = root.bounds[plan.nLoop];
  int64_t k = 1;
  for (unsigned d : plan.kLoops) {
    k *= root.bounds[d];
  }
  int64_t kPad = (k + 3) / 4 * 4;
  llvm::ArrayRef<int64_t> dims = src.type.dims();
  const uint8_t *in = src.constant->bytes().data();
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * kPad), 0);
  // Walks n and the k loops (x's order, last fastest), evaluating w's map.
  std::vector<int64_t> ivs(root.bounds.size(), 0);
  for (int64_t row = 0; row < rows; ++row) {
    ivs[plan.nLoop] = row;
    for (unsigned d : plan.kLoops) {
      ivs[d] = 0;
    }
    for (int64_t step = 0; step < k; ++step) {
      int64_t offset = 0;
      for (size_t r = 0; r < dims.size(); ++r) {
        const AffineExpr &e = w.map.results[r];
        int64_t v = e.constant;
        for (size_t d = 0; d < ivs.size(); ++d) {
          v += e.coeffs[d] * ivs[d];
        }
        offset = offset * dims[r] + v;
      }
      bytes[static_cast<size_t>(row * kPad + step)] = in[offset];
      for (size_t i = plan.kLoops.size(); i-- > 0;) {
        unsigned d = plan.kLoops[i];
        if (++ivs[d] < root.bounds[d]) {
          break;
        }
        ivs[d] = 0;
      }
    }
  }
  AffineMap map;
  map.numDims = w.map.numDims;
  map.results.push_back(AffineExpr::dim(map.numDims, plan.nLoop));
  AffineExpr flat = AffineExpr::constantExpr(map.numDims, 0);
  int64_t stride = 1;
  for (size_t i = plan.kLoops.size(); i-- > 0;) {
    flat.coeffs[plan.kLoops[i]] = stride;
    stride *= root.bounds[plan.kLoops[i]];
  }
  map.results.push_back(std::move(flat));
  if (auto known = copies.find(key); known != copies.end()) {
    w.tensor = known->second;
    w.map = std::move(map);
    return;
  }
  TensorInfo copy;
  copy.name = src.name + "_rows" + (copies.empty()
                                        ? std::string()
                                        : std::to_string(copies.size()));
  copy.type = TensorType::ranked(ElementType::I8, {rows, kPad});
  copy.constant = graph::DenseData::fromBytes(std::move(bytes));
  w.tensor = static_cast<unsigned>(p.tensors.size());
  w.map = std::move(map);
  copies[key] = w.tensor;
  p.tensors.push_back(std::move(copy));
}

} // namespace

void relayoutGemmOperands(StructuredProgram &p, const FusionOptions &options) {
  std::map<std::pair<unsigned, size_t>, unsigned> copies;
  std::map<std::pair<unsigned, std::string>, unsigned> rowCopies;
  for (const FusionGroup &group : p.groups) {
    StructuredOp &root = p.ops[group.root];
    std::optional<GemmPlan> plan = planGemm(p, root);
    if (plan && options.transposeGemmWeights &&
        wantsTransposedA(p, root, *plan, group.tileSizes)) {
      transposeA(p, root, *plan, copies);
    }
    if (plan || !options.matVecRows) {
      continue;
    }
    if (std::optional<MatVecPlan> mv = planMatVec(p, root)) {
      if (!hasMatVecRows(p, root, *mv)) {
        giveMatVecRows(p, root, *mv, rowCopies);
      }
    }
  }
}

} // namespace osprey::compiler::structured
