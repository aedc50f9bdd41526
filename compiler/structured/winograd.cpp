// Recognition of 3x3 stride-1 convolutions for Winograd F(2x2, 3x3) and
// F(4x4, 3x3) and the compile-time transform of their weights.
//
// F(2x2, 3x3) computes a 2x2 block of outputs from a 4x4 input patch d as
// A^T [(G g G^T) .* (B^T d B)] A: 16 multiplies instead of 36. Summed over
// input channels, the 16 element-wise products become 16 independent
// matrix products U_k[co][ci] x V_k[ci][tile], so a code generator runs its
// matrix-product microkernel on them; U = G g G^T is computed here, once,
// at compile time. F(4x4, 3x3) does the same with 6x6 patches: 36
// multiplies per 16 outputs (2.25 per output instead of 4), with larger
// transform coefficients (rounding errors a few times larger).
#include "compiler/structured/winograd.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

namespace osprey::compiler::structured {
namespace {

// Fewest input and output channels: the input transform costs about as
// much per input element as 16 multiply-adds per output channel, the
// output transform about 16 per input channel.
constexpr int64_t kMinChannels = 32;

// The positions' panels (and products) are a multiple of 4 KiB apart
// without padding, so the input transform's stores per tile and the output
// transform's loads would fall into one L1 set (12 ways) and alias in the
// store buffer: one cache line more between positions.
constexpr int64_t kSetSkew = 16;

// Tile counts up to this that are not whole panels (49 tiles of a 14x14
// map, 16 of a 7x7 one) run transposed.
constexpr int64_t kMaxTransposedTiles = 64;

bool readsOnly(const AffineExpr &e, unsigned d) {
  for (size_t i = 0; i < e.coeffs.size(); ++i) {
    if (e.coeffs[i] != 0 && i != d) {
      return false;
    }
  }
  return true;
}

} // namespace

std::optional<WinogradPlan> planWinograd(const StructuredProgram &p,
                                         const StructuredOp &root,
                                         const WinogradOptions &options) {
  if (!options.enabled || root.classify() != OpClass::Convolution ||
      !root.body.isMultiplyAccumulate()) {
    return std::nullopt;
  }
  std::optional<GemmPlan> gemm = planGemm(p, root);
  if (!gemm || !gemm->batchLoops.empty() || gemm->kLoops.size() != 3 ||
      root.output.map.results.size() < 2) {
    return std::nullopt;
  }
  WinogradPlan plan;
  plan.gemm = *gemm;
  plan.co = gemm->mLoop;
  const auto &out = root.output.map.results;
  plan.oh = *out[out.size() - 2].asDim();
  plan.ow = *out.back().asDim();
  const OperandAccess &a = root.inputs[gemm->a];
  const OperandAccess &b = root.inputs[gemm->b];
  const TensorInfo &aInfo = p.tensors[a.tensor];
  const TensorInfo &bInfo = p.tensors[b.tensor];
  if (!aInfo.constant || aInfo.type.elementType() != ElementType::F32 ||
      !aInfo.type.hasStaticShape() ||
      aInfo.constant->size() !=
          static_cast<size_t>(aInfo.type.numElements()) * 4 ||
      bInfo.type.elementType() != ElementType::F32 ||
      !bInfo.type.hasStaticShape() || (b.padValue && *b.padValue != 0.0) ||
      b.map.results.size() < 3) {
    return std::nullopt;
  }
  for (unsigned d = 0; d < root.bounds.size(); ++d) {
    bool reduction = root.iterators[d] == IteratorType::Reduction;
    if (!reduction && d != plan.co && d != plan.oh && d != plan.ow &&
        root.bounds[d] != 1) {
      return std::nullopt;
    }
  }
  // B's columns: ow + kw - padW, contiguous.
  const AffineExpr &col = b.map.results.back();
  std::optional<unsigned> kw;
  for (unsigned d = 0; d < col.coeffs.size(); ++d) {
    if (col.coeffs[d] == 0 || d == plan.ow) {
      continue;
    }
    if (kw || col.coeffs[d] != 1) {
      return std::nullopt;
    }
    kw = d;
  }
  if (!kw || root.iterators[*kw] != IteratorType::Reduction ||
      col.coeffs[plan.ow] != 1 || col.constant > 0) {
    return std::nullopt;
  }
  plan.kw = *kw;
  plan.padW = -col.constant;
  // B's rows and channels.
  std::optional<unsigned> kh, ci, rowResult, ciResult;
  for (unsigned r = 0; r + 1 < b.map.results.size(); ++r) {
    const AffineExpr &e = b.map.results[r];
    if (e.coeffs[plan.oh] != 0) {
      if (rowResult || e.coeffs[plan.oh] != 1 || e.constant > 0) {
        return std::nullopt;
      }
      for (unsigned d = 0; d < e.coeffs.size(); ++d) {
        if (d == plan.oh || e.coeffs[d] == 0) {
          continue;
        }
        if (kh || e.coeffs[d] != 1 ||
            root.iterators[d] != IteratorType::Reduction) {
          return std::nullopt;
        }
        kh = d;
      }
      rowResult = r;
      plan.padH = -e.constant;
      continue;
    }
    std::optional<unsigned> dim = e.asDim();
    if (dim && root.iterators[*dim] == IteratorType::Reduction) {
      if (ci) {
        return std::nullopt;
      }
      ci = dim;
      ciResult = r;
      continue;
    }
    // Any other result reads only parallel loops of bound 1 or constants.
    for (unsigned d = 0; d < e.coeffs.size(); ++d) {
      if (e.coeffs[d] != 0 && (root.iterators[d] != IteratorType::Parallel ||
                               root.bounds[d] != 1)) {
        return std::nullopt;
      }
    }
  }
  if (!kh || !ci || *kh == plan.kw || *ci == plan.kw || *ci == *kh) {
    return std::nullopt;
  }
  plan.kh = *kh;
  plan.ci = *ci;
  plan.rowResult = *rowResult;
  // The plan's reduction loops are exactly ci, kh, kw; none reads oh or ow.
  for (unsigned d : gemm->kLoops) {
    if (d != plan.ci && d != plan.kh && d != plan.kw) {
      return std::nullopt;
    }
  }
  if (root.bounds[plan.kh] != 3 || root.bounds[plan.kw] != 3 ||
      !readsOnly(b.map.results[*ciResult], plan.ci) ||
      b.map.results[*ciResult].constant != 0) {
    return std::nullopt;
  }
  // Zero padding only, none wider than the window.
  if (plan.padH > 2 || plan.padW > 2 ||
      ((plan.padH > 0 || plan.padW > 0) && !b.padValue)) {
    return std::nullopt;
  }
  plan.cin = root.bounds[plan.ci];
  plan.cout = root.bounds[plan.co];
  int64_t pixels = root.bounds[plan.oh] * root.bounds[plan.ow];
  // On small maps the transforms, and the partial 2x2 tiles of odd maps,
  // outweigh the saved multiplies.
  if (plan.cin < kMinChannels || plan.cout < kMinChannels ||
      pixels < static_cast<int64_t>(options.minPixels)) {
    return std::nullopt;
  }
  int64_t narrow = std::min(root.bounds[plan.oh], root.bounds[plan.ow]);
  if (options.minF4Width != 0 &&
      narrow >= static_cast<int64_t>(options.minF4Width)) {
    plan.m = 4;
  }
  return plan;
}

void chooseWinogradTiles(const StructuredOp &root, const WinogradPlan &plan,
                         std::vector<int64_t> &tiles) {
  // Panel width of the widest microkernel (AVX-512: 2 x 16 floats); a last
  // part of at most half of it runs the one-vector kernel.
  constexpr int64_t kPanel = 32;
  if (plan.m == 2) {
    // Maps below F(4x4, 3x3)'s width keep the packed path's tiles (whole
    // 14x14 maps, 16x16 maps in two bands of 32 tiles): tiles are chosen
    // for every target, and scalar targets, which keep the packed path,
    // should not change for them (ResNet-8 on Cortex-M4).
    return;
  }
  int64_t oh = root.bounds[plan.oh], ow = root.bounds[plan.ow];
  int64_t th = (oh + plan.m - 1) / plan.m, tw = (ow + plan.m - 1) / plan.m;
  auto columns = [&](int64_t tiles) {
    int64_t rest = tiles % kPanel;
    return tiles / kPanel * kPanel + (rest == 0            ? 0
                                      : rest <= kPanel / 2 ? kPanel / 2
                                                           : kPanel);
  };
  int64_t best = 0;
  std::pair<int64_t, int64_t> bestRank;
  for (int64_t s = 1; s <= th; ++s) {
    int64_t padded = (s * tw + kPanel - 1) / kPanel * kPanel;
    if (plan.positions() * plan.cin * padded * 4 > kWinogradMaxPanelBytes) {
      break;
    }
    int64_t bands = (th + s - 1) / s;
    int64_t cols =
        th / s * columns(s * tw) + (th % s == 0 ? 0 : columns(th % s * tw));
    std::pair<int64_t, int64_t> rank = {cols, bands};
    if (best == 0 || rank < bestRank) {
      best = s;
      bestRank = rank;
    }
  }
  if (best == 0) {
    return;
  }
  tiles[plan.co] = plan.cout;
  tiles[plan.oh] = std::min(oh, plan.m * best);
  tiles[plan.ow] = ow;
}

std::vector<float> winogradWeights(const StructuredProgram &p,
                                   const StructuredOp &root,
                                   const WinogradPlan &plan) {
  const OperandAccess &a = root.inputs[plan.gemm.a];
  const float *w = reinterpret_cast<const float *>(
      p.tensors[a.tensor].constant->bytes().data());
  const std::vector<int64_t> &s = plan.gemm.aStrides;
  // G for F(2x2, 3x3) (4 x 3) and F(4x4, 3x3) (6 x 3), interpolation
  // points 0, 1, -1 (and 2, -2) and infinity.
  static constexpr double kG2[4][3] = {
      {1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                                       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                       {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                       {0, 0, 1}};
  int64_t n = plan.patch();
  auto gAt = [&](int64_t i, int j) { return n == 4 ? kG2[i][j] : kG4[i][j]; };
  std::vector<float> u(static_cast<size_t>(plan.positions()) * plan.cout *
                       plan.cin);
  for (int64_t co = 0; co < plan.cout; ++co) {
    for (int64_t ci = 0; ci < plan.cin; ++ci) {
      double g[3][3];
      for (int kh = 0; kh < 3; ++kh) {
        for (int kw = 0; kw < 3; ++kw) {
          int64_t at = plan.gemm.aOffset + co * s[plan.co] + ci * s[plan.ci] +
                       kh * s[plan.kh] + kw * s[plan.kw];
          float v;
          std::memcpy(&v, w + at, 4);
          g[kh][kw] = v;
        }
      }
      // G g (n x 3), then (G g) G^T (n x n).
      double gg[6][3];
      for (int64_t i = 0; i < n; ++i) {
        for (int j = 0; j < 3; ++j) {
          gg[i][j] =
              gAt(i, 0) * g[0][j] + gAt(i, 1) * g[1][j] + gAt(i, 2) * g[2][j];
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double v = gg[i][0] * gAt(j, 0) + gg[i][1] * gAt(j, 1) +
                     gg[i][2] * gAt(j, 2);
          u[(static_cast<size_t>(i * n + j) * plan.cout + co) * plan.cin + ci] =
              static_cast<float>(v);
        }
      }
    }
  }
  return u;
}

std::optional<WinogradSchedule> scheduleWinograd(const WinogradPlan &plan,
                                                 int64_t maxCo, int64_t maxOh,
                                                 int64_t maxOw,
                                                 const FusionOptions &options) {
  if (options.vectorWidth <= 1) {
    return std::nullopt;
  }
  WinogradSchedule s;
  s.m = plan.m;
  s.vf = options.vectorWidth;
  s.cin = plan.cin;
  const int64_t nr = int64_t{options.vectorWidth} * options.kernelVectors;
  const int64_t mr = options.kernelRows;
  const int64_t pos = plan.positions();
  s.twMax = (maxOw + s.m - 1) / s.m;
  int64_t thMax = (maxOh + s.m - 1) / s.m;
  for (int64_t rows = thMax; rows >= 1; --rows) {
    int64_t pad = (rows * s.twMax + nr - 1) / nr * nr;
    if (pos * plan.cin * pad * 4 > kWinogradMaxPanelBytes) {
      continue;
    }
    s.rowsPerChunk = rows;
    s.tPad = pad;
    s.vK = plan.cin * s.tPad + kSetSkew;
    // Products of MR output channels at a time by default. Larger blocks
    // (the kernel then reuses each panel chunk from L1 for every MR rows of
    // the block) measured slower: 64 rows on 56x56 maps 1.20 -> 1.33 ms,
    // 128 rows on 28x28 1.03 -> 1.15 ms, 16 or 32 rows within noise of 8.
    int64_t mMax = (maxCo + mr - 1) / mr;
    s.blockRows = mr;
    int64_t blockRows = options.winograd.blockRows;
    if (blockRows > mr) {
      int64_t fit = kWinogradMaxPanelBytes / (pos * pad * 4 * mr);
      s.blockRows = mr * std::max<int64_t>(
                             1, std::min<int64_t>({mMax, fit, blockRows / mr}));
    }
    s.mK = s.blockRows * s.tPad + kSetSkew;
    break;
  }
  if (s.rowsPerChunk == 0) {
    return std::nullopt;
  }
  int64_t tMax = thMax * s.twMax;
  if (options.winograd.transposed && s.rowsPerChunk == thMax &&
      tMax % nr != 0 && tMax <= kMaxTransposedTiles) {
    WinogradSchedule t = s;
    // Tile blocks of mrT rows with the least padding (ties: larger).
    int64_t best = -1;
    for (int64_t r = mr; r >= 2; --r) {
      int64_t waste = (tMax + r - 1) / r * r - tMax;
      if (best < 0 || waste < best) {
        best = waste;
        t.mrT = r;
      }
    }
    t.tPad = (tMax + t.mrT - 1) / t.mrT * t.mrT;
    t.coPad = (maxCo + nr - 1) / nr * nr;
    t.vK = plan.cin * t.tPad + kSetSkew;
    t.mK = t.tPad * t.coPad + kSetSkew;
    t.transposed = true;
    // Rows of U^T reach past the last channel read by any workgroup (tiles
    // of maxCo channels, each read in whole panels), in whole 16-float
    // groups, an odd number of them: rows 64 bytes times an odd number
    // apart spread over all L1 sets, so each 32-channel panel of U_k stays
    // in L1 for every tile block (one panel of padding instead: 5% more
    // weights in ResNet-18).
    int64_t end = 0;
    for (int64_t lo = 0; lo < plan.cout; lo += maxCo) {
      int64_t ext = std::min(maxCo, plan.cout - lo);
      end = std::max(end, lo + (ext + nr - 1) / nr * nr);
    }
    int64_t groups = (end + 15) / 16;
    t.uPitch = (groups + (groups % 2 == 0 ? 1 : 0)) * 16;
    if (t.stackBytes() <= kWinogradMaxStackBytes) {
      return t;
    }
    // Products of all output channels (many channels): untransposed.
  }
  if (s.stackBytes() > kWinogradMaxStackBytes) {
    return std::nullopt;
  }
  return s;
}

std::optional<WinogradSchedule> scheduleWinograd(const StructuredOp &root,
                                                 const FusionGroup &group,
                                                 const WinogradPlan &plan,
                                                 const FusionOptions &options) {
  // The extent of loop |d| in one workgroup (see TileEmitter::maxExtent).
  auto extent = [&](unsigned d) {
    int64_t bound = root.bounds[d];
    bool tiled = std::find(group.tiledLoops.begin(), group.tiledLoops.end(),
                           d) != group.tiledLoops.end();
    if (tiled && d < group.tileSizes.size() && group.tileSizes[d] > 0) {
      return std::min(bound, group.tileSizes[d]);
    }
    return bound;
  };
  return scheduleWinograd(plan, extent(plan.co), extent(plan.oh),
                          extent(plan.ow), options);
}

void transformWinogradWeights(StructuredProgram &p,
                              const FusionOptions &options) {
  if (options.vectorWidth <= 1) {
    return;
  }
  // Copies already made: source tensor, layout and the access to it.
  using Key = std::tuple<unsigned, int64_t, bool, std::vector<int64_t>>;
  std::map<Key, unsigned> copies;
  for (const FusionGroup &group : p.groups) {
    StructuredOp &root = p.ops[group.root];
    if (root.winograd || !group.prologue.empty() ||
        p.tensors[root.output.tensor].type.elementType() != ElementType::F32) {
      continue;
    }
    bool f32 = true;
    for (const OperandAccess &in : root.inputs) {
      f32 &= p.tensors[in.tensor].type.elementType() == ElementType::F32;
    }
    std::optional<WinogradPlan> plan;
    if (f32) {
      plan = planWinograd(p, root, options.winograd);
    }
    if (!plan) {
      continue;
    }
    std::optional<WinogradSchedule> sched =
        scheduleWinograd(root, group, *plan, options);
    if (!sched) {
      continue;
    }
    OperandAccess &a = root.inputs[plan->gemm.a];
    const std::vector<int64_t> &st = plan->gemm.aStrides;
    Key key{a.tensor,
            plan->m,
            sched->transposed,
            {plan->gemm.aOffset, st[plan->co], st[plan->ci], st[plan->kh],
             st[plan->kw], plan->cout, plan->cin, sched->uPitch}};
    auto known = copies.find(key);
    unsigned tensor;
    if (known != copies.end()) {
      tensor = known->second;
    } else {
      std::vector<float> u = winogradWeights(p, root, *plan);
      int64_t pos = plan->positions();
      std::vector<int64_t> dims = {pos, plan->cout, plan->cin};
      if (sched->transposed) {
        int64_t ld = sched->uPitch;
        std::vector<float> ut(static_cast<size_t>(pos * plan->cin * ld), 0.0f);
        for (int64_t k = 0; k < pos; ++k) {
          for (int64_t co = 0; co < plan->cout; ++co) {
            for (int64_t ci = 0; ci < plan->cin; ++ci) {
              ut[static_cast<size_t>((k * plan->cin + ci) * ld + co)] =
                  u[static_cast<size_t>((k * plan->cout + co) * plan->cin +
                                        ci)];
            }
          }
        }
        u = std::move(ut);
        dims = {pos, plan->cin, ld};
      }
      std::vector<uint8_t> bytes(u.size() * 4);
      std::memcpy(bytes.data(), u.data(), bytes.size());
      TensorInfo copy;
      copy.name = p.tensors[a.tensor].name + "_wino" + std::to_string(plan->m) +
                  (sched->transposed ? "t" : "");
      copy.type = TensorType::ranked(ElementType::F32, dims);
      copy.constant = graph::DenseData::fromBytes(std::move(bytes));
      tensor = static_cast<unsigned>(p.tensors.size());
      copies[key] = tensor;
      p.tensors.push_back(std::move(copy));
    }
    WinogradRoot w;
    w.m = plan->m;
    w.transposed = sched->transposed;
    w.weights = plan->gemm.a;
    w.input = plan->gemm.b;
    w.co = plan->co;
    w.oh = plan->oh;
    w.ow = plan->ow;
    w.ci = plan->ci;
    w.kh = plan->kh;
    w.kw = plan->kw;
    w.rowResult = plan->rowResult;
    w.padH = plan->padH;
    w.padW = plan->padW;
    unsigned n = a.map.numDims;
    AffineMap map;
    map.numDims = n;
    map.results.push_back(AffineExpr::constantExpr(n, 0));
    if (sched->transposed) {
      map.results.push_back(AffineExpr::dim(n, plan->ci));
      map.results.push_back(AffineExpr::dim(n, plan->co));
    } else {
      map.results.push_back(AffineExpr::dim(n, plan->co));
      map.results.push_back(AffineExpr::dim(n, plan->ci));
    }
    a.tensor = tensor;
    a.map = std::move(map);
    a.padValue.reset();
    a.indirect.reset();
    root.winograd = w;
  }
}

WinogradPlan winogradPlanOf(const StructuredOp &root) {
  const WinogradRoot &w = *root.winograd;
  WinogradPlan plan;
  plan.gemm.a = w.weights;
  plan.gemm.b = w.input;
  plan.gemm.mLoop = w.co;
  plan.gemm.kLoops = {w.ci, w.kh, w.kw};
  plan.co = w.co;
  plan.oh = w.oh;
  plan.ow = w.ow;
  plan.ci = w.ci;
  plan.kh = w.kh;
  plan.kw = w.kw;
  plan.rowResult = w.rowResult;
  plan.padH = w.padH;
  plan.padW = w.padW;
  plan.cin = root.bounds[w.ci];
  plan.cout = root.bounds[w.co];
  plan.m = w.m;
  return plan;
}

} // namespace osprey::compiler::structured
