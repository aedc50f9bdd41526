// Max pooling windows with vector loads over each output row's interior.
//
// Per output row (oh, other parallel loops fixed), window row kh reads input
// row sh * oh + kh + cr. Rows outside the input are clamped into it: with
// dilation 1 the window's rows are consecutive, so as long as the window
// meets the input (checked statically for the first and last output row)
// the clamped row is one of the window's valid rows, and max is idempotent,
// so the result is exact without a per-row branch. Columns cannot be
// clamped per lane, so each row splits into
//   - interior columns [a, b), whose windows lie inside the input: a vector
//     of vw outputs ow .. ow + vw - 1 needs input columns sw * ow + cc ..
//     sw * (ow + vw - 1) + kw - 1 + cc. Their maxima over the window rows
//     are taken first on contiguous vector loads, then each window column's
//     lanes (stride sw) are picked from those by shuffles and combined (see
//     windowMax). A partial last vector is recomputed overlapping the
//     previous one (max is exact, the values are equal);
//   - border columns, element by element through the region's padded load.
// A region of the pool alone stores the maxima straight into the output;
// with fused ops they go to a scratch row on the stack and the region's
// epilogue runs over it in a loop the loop vectorizer turns into vector
// code. Rows with no full vector of interior columns (7x7 maps) keep the
// generic loop nest. The generic loop nest instead gathered the padded, strided
// window with masked gathers (ResNet-18's 3x3 stride-2 pool: 1.8% of the
// model).
#include "compiler/targets/llvm_cpu/pool_window.h"

#include <algorithm>
#include <limits>

#include "compiler/targets/llvm_cpu/math.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"

namespace osprey::compiler::llvm_cpu {

namespace {

using structured::IteratorType;
using structured::OperandAccess;
using structured::ScalarKind;
using structured::StructuredOp;

// Loops of a max pool root (see emitPoolWindow).
struct PoolPlan {
  unsigned col = 0, row = 0, kw = 0, kh = 0;
  unsigned rowResult = 0;
  int64_t colStride = 1, rowStride = 1;
  int64_t colOffset = 0, rowOffset = 0; // cc, cr (minus the padding)
};

// Whether |body| is max(out, in0) or max(in0, out).
bool isMaxAccumulate(const structured::ScalarBody &body) {
  const auto &nodes = body.nodes();
  if (body.result() >= nodes.size()) {
    return false;
  }
  const structured::ScalarNode &n = nodes[body.result()];
  if (n.kind != ScalarKind::Max || n.operands.size() != 2) {
    return false;
  }
  ScalarKind x = nodes[n.operands[0]].kind, y = nodes[n.operands[1]].kind;
  unsigned input = nodes[n.operands[x == ScalarKind::Input ? 0 : 1]].index;
  return ((x == ScalarKind::Output && y == ScalarKind::Input) ||
          (x == ScalarKind::Input && y == ScalarKind::Output)) &&
         input == 0;
}

std::optional<PoolPlan> planPoolWindow(const dispatch::DispatchProgram &p,
                                       const StructuredOp &root) {
  if (root.inputs.size() != 1 || !root.init ||
      *root.init != -std::numeric_limits<double>::infinity() ||
      !isMaxAccumulate(root.body) || root.output.map.results.size() < 2 ||
      !allF32(p, root)) {
    return std::nullopt;
  }
  const OperandAccess &in = root.inputs[0];
  size_t n = root.bounds.size();
  if (in.indirect || in.map.numDims != n ||
      (in.padValue &&
       *in.padValue != -std::numeric_limits<double>::infinity())) {
    return std::nullopt;
  }
  llvm::ArrayRef<int64_t> dims = p.program.tensors[in.tensor].type.dims();
  if (dims.size() != in.map.results.size() || dims.size() < 2) {
    return std::nullopt;
  }
  for (const structured::AffineExpr &e : in.map.results) {
    if (e.coeffs.size() != n) {
      return std::nullopt;
    }
  }
  for (const structured::AffineExpr &e : root.output.map.results) {
    if (e.coeffs.size() != n) {
      return std::nullopt;
    }
  }
  for (int64_t b : root.bounds) {
    if (b <= 0) {
      return std::nullopt; // empty loops: the generic path
    }
  }
  const auto &out = root.output.map.results;
  std::optional<unsigned> col = out.back().asDim();
  std::optional<unsigned> row = out[out.size() - 2].asDim();
  if (!col || !row || *col == *row ||
      root.iterators[*col] != IteratorType::Parallel ||
      root.iterators[*row] != IteratorType::Parallel) {
    return std::nullopt;
  }
  PoolPlan plan;
  plan.col = *col;
  plan.row = *row;
  // |e| = stride * loop + window + constant with |window| a reduction loop
  // of coefficient 1.
  auto window = [&](const structured::AffineExpr &e, unsigned loop,
                    int64_t &stride, unsigned &win, int64_t &offset) {
    stride = e.coeffs[loop];
    std::optional<unsigned> w;
    for (unsigned d = 0; d < n; ++d) {
      if (d == loop || e.coeffs[d] == 0) {
        continue;
      }
      if (w || e.coeffs[d] != 1 ||
          root.iterators[d] != IteratorType::Reduction) {
        return false;
      }
      w = d;
    }
    if (!w || stride <= 0) {
      return false;
    }
    win = *w;
    offset = e.constant;
    return true;
  };
  unsigned last = static_cast<unsigned>(dims.size()) - 1;
  if (!window(in.map.results[last], plan.col, plan.colStride, plan.kw,
              plan.colOffset) ||
      plan.colStride > 2) {
    return std::nullopt;
  }
  std::optional<unsigned> rowResult;
  for (unsigned k = 0; k < last; ++k) {
    if (in.map.results[k].coeffs[plan.row] != 0) {
      if (rowResult) {
        return std::nullopt;
      }
      rowResult = k;
    }
  }
  if (!rowResult ||
      !window(in.map.results[*rowResult], plan.row, plan.rowStride, plan.kh,
              plan.rowOffset) ||
      plan.kh == plan.kw) {
    return std::nullopt;
  }
  plan.rowResult = *rowResult;
  // The other results select the plane: they read no window loop, and the
  // only reduction loops are the window's.
  for (unsigned k = 0; k < last; ++k) {
    if (k == plan.rowResult) {
      continue;
    }
    for (unsigned d : {plan.col, plan.row, plan.kw, plan.kh}) {
      if (in.map.results[k].coeffs[d] != 0) {
        return std::nullopt;
      }
    }
  }
  for (unsigned d = 0; d < n; ++d) {
    if (root.iterators[d] == IteratorType::Reduction && d != plan.kw &&
        d != plan.kh) {
      return std::nullopt;
    }
  }
  // Every window's rows meet the input (so clamped rows are window rows).
  int64_t height = dims[plan.rowResult], kh = root.bounds[plan.kh];
  int64_t firstRow = plan.rowOffset;
  int64_t lastRow =
      plan.rowStride * (root.bounds[plan.row] - 1) + plan.rowOffset;
  if (firstRow + kh - 1 < 0 || firstRow > height - 1 || lastRow > height - 1 ||
      lastRow + kh - 1 < 0) {
    return std::nullopt;
  }
  return plan;
}

class PoolWindowEmitter : public TileEmitter {
public:
  PoolWindowEmitter(const dispatch::DispatchProgram &p,
                    const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                    llvm::Function *fn, const PoolPlan &plan, unsigned vw,
                    const TileHooks &hooks)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan), vw_(vw) {}

  // Most output columns of one row with windows inside the input.
  int64_t interiorColumns() const {
    const OperandAccess &in = root().inputs[0];
    int64_t width = p_.program.tensors[in.tensor].type.dims().back();
    int64_t sw = plan_.colStride, cc = plan_.colOffset;
    int64_t a = cc >= 0 ? 0 : (-cc + sw - 1) / sw;
    int64_t top = width - root().bounds[plan_.kw] - cc;
    int64_t b = top < 0 ? 0 : top / sw + 1;
    return std::min(b - a, maxExtent(plan_.col));
  }

  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi) {
    const StructuredOp &op = root();
    const OperandAccess &in = op.inputs[0];
    f32_ = b_.getFloatTy();
    vecTy_ = llvm::FixedVectorType::get(f32_, vw_);
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    unsigned last = static_cast<unsigned>(dims.size()) - 1;
    width_ = dims[last];
    height_ = dims[plan_.rowResult];
    kw_ = op.bounds[plan_.kw];
    kh_ = op.bounds[plan_.kh];
    // A region of the pool alone stores its rows straight into the output
    // (the output's last result is the column loop, see planPoolWindow);
    // fused ops run over a scratch row instead.
    const OperandAccess &out = op.output;
    bool direct = r_.ops.size() == 1;
    for (size_t k = 0; k + 1 < out.map.results.size(); ++k) {
      direct &= out.map.results[k].coeffs[plan_.col] == 0;
    }
    if (!direct) {
      llvm::BasicBlock &entry = fn_->getEntryBlock();
      llvm::IRBuilder<> eb(&entry, entry.begin());
      scratch_ = eb.CreateAlloca(
          llvm::ArrayType::get(f32_, maxExtent(plan_.col) + vw_), nullptr,
          "pool_row");
      scratch_->setAlignment(llvm::Align(64));
    }
    ivs_.assign(lo.begin(), lo.end());
    std::vector<unsigned> outer;
    for (unsigned d = 0; d < op.bounds.size(); ++d) {
      if (op.iterators[d] == IteratorType::Parallel && d != plan_.col &&
          d != plan_.row) {
        outer.push_back(d);
      }
    }
    // Element strides of the input.
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t k = dims.size() - 1; k-- > 0;) {
      strides[k] = strides[k + 1] * dims[k + 1];
    }
    // Interior columns: sw * ow + cc >= 0 and sw * ow + kw - 1 + cc < W.
    int64_t sw = plan_.colStride, cc = plan_.colOffset;
    int64_t a = cc >= 0 ? 0 : (-cc + sw - 1) / sw;
    int64_t top = width_ - kw_ - cc; // last interior sw * ow
    int64_t b = top < 0 ? 0 : top / sw + 1;
    llvm::Value *colLo = lo[plan_.col], *colHi = hi[plan_.col];
    colLo_ = colLo;
    absl::Status status = absl::OkStatus();
    nest(outer, 0, lo, hi, [&] {
      // Plane offset from the other results.
      llvm::Value *plane = idx(0);
      for (unsigned k = 0; k < last; ++k) {
        if (k != plan_.rowResult) {
          plane = b_.CreateAdd(plane, b_.CreateMul(evalExpr(in.map.results[k]),
                                                   idx(strides[k])));
        }
      }
      llvm::Value *base = hooks_.base(in.tensor);
      loop(lo[plan_.row], hi[plan_.row], [&](llvm::Value *oh) {
        ivs_[plan_.row] = oh;
        // Rows of the window, clamped into the input.
        std::vector<llvm::Value *> rows;
        for (int64_t k = 0; k < kh_; ++k) {
          llvm::Value *ih = b_.CreateAdd(b_.CreateMul(oh, idx(plan_.rowStride)),
                                         idx(k + plan_.rowOffset));
          ih = smin(smax(ih, idx(0)), idx(height_ - 1));
          rows.push_back(b_.CreateGEP(
              f32_, base,
              b_.CreateAdd(plane,
                           b_.CreateMul(ih, idx(strides[plan_.rowResult])))));
        }
        if (direct) {
          llvm::ArrayRef<int64_t> outDims =
              p_.program.tensors[out.tensor].type.dims();
          ivs_[plan_.col] = colLo;
          llvm::Value *at = idx(0);
          int64_t stride = 1;
          for (size_t k = outDims.size(); k-- > 0;) {
            at = b_.CreateAdd(
                at, b_.CreateMul(evalExpr(out.map.results[k]), idx(stride)));
            stride *= outDims[k];
          }
          rowOut_ = b_.CreateGEP(f32_, hooks_.base(out.tensor), at);
        } else {
          rowOut_ = scratch_;
        }
        llvm::Value *ia = smin(smax(idx(a), colLo), colHi);
        llvm::Value *ib = smin(smax(idx(b), ia), colHi);
        llvm::Value *count = b_.CreateSub(ib, ia);
        llvm::Value *wide = b_.CreateICmpSGE(count, idx(vw_));
        // Vectors over [ia, ib), the last one ending at ib.
        llvm::Value *vectors = b_.CreateSelect(
            wide, b_.CreateUDiv(b_.CreateAdd(count, idx(vw_ - 1)), idx(vw_)),
            idx(0));
        loop(
            idx(0), vectors,
            [&](llvm::Value *k) {
              llvm::Value *ow =
                  smin(b_.CreateAdd(ia, b_.CreateMul(k, idx(vw_))),
                       b_.CreateSub(ib, idx(vw_)));
              llvm::Value *acc = windowMax(
                  rows, b_.CreateAdd(b_.CreateMul(ow, idx(sw)), idx(cc)));
              b_.CreateAlignedStore(
                  acc,
                  b_.CreateInBoundsGEP(f32_, rowOut_, b_.CreateSub(ow, colLo)),
                  llvm::Align(4));
            },
            LoopHint::kNoVectorize);
        // Border columns (and a narrow interior) through checked loads.
        checkedLoop(colLo, ia);
        checkedLoop(b_.CreateSelect(wide, ib, ia), colHi);
        if (direct) {
          return;
        }
        loop(
            colLo, colHi,
            [&](llvm::Value *ow) {
              ivs_[plan_.col] = ow;
              llvm::Value *v = b_.CreateAlignedLoad(
                  f32_,
                  b_.CreateInBoundsGEP(f32_, scratch_, b_.CreateSub(ow, colLo)),
                  llvm::Align(4));
              if (status.ok()) {
                status = hooks_.finish(v, ivs_);
              }
            },
            LoopHint::kNoInterleave);
      });
    });
    return status;
  }

private:
  // Max over the window of vw outputs whose first window column is input
  // column |off| of |rows|, separably: the window rows' maxima over the
  // columns the vector needs, off .. off + sw * (vw - 1) + kw - 1, in
  // vectors V_t at column off + start[t] (the last one ending at the last
  // column, overlapping its predecessor, so no load reads a column the
  // windows do not use), then per window column j the lanes
  // off + sw * i + j gathered from the V_t by shuffles and combined. A 3x3
  // stride-2 window of 16 lanes loads 3 vectors per row instead of 6 and
  // shuffles 4 times instead of 9.
  llvm::Value *windowMax(llvm::ArrayRef<llvm::Value *> rows, llvm::Value *off) {
    int64_t sw = plan_.colStride, n = vw_;
    int64_t needed = sw * (n - 1) + kw_;
    int64_t count = (needed + n - 1) / n;
    std::vector<int64_t> start;
    std::vector<llvm::Value *> cols;
    for (int64_t t = 0; t < count; ++t) {
      start.push_back(t + 1 < count ? t * n : needed - n);
      llvm::Value *v = nullptr;
      for (llvm::Value *rowPtr : rows) {
        llvm::Value *x = b_.CreateAlignedLoad(
            vecTy_,
            b_.CreateGEP(f32_, rowPtr, b_.CreateAdd(off, idx(start[t]))),
            llvm::Align(4));
        v = v ? emitMax(b_, v, x) : x;
      }
      cols.push_back(v);
    }
    llvm::Value *acc = nullptr;
    for (int64_t j = 0; j < kw_; ++j) {
      // Source vector and lane of each output lane.
      std::vector<std::pair<int64_t, int>> from;
      for (int64_t i = 0; i < n; ++i) {
        int64_t p = sw * i + j;
        int64_t t = p < start.back() ? p / n : count - 1;
        from.push_back({t, static_cast<int>(p - start[t])});
      }
      // Shuffles of two operands: the first two sources, then each further
      // one merged into the partial result.
      llvm::Value *x = nullptr;
      std::vector<int64_t> used;
      for (const auto &f : from) {
        if (std::find(used.begin(), used.end(), f.first) == used.end()) {
          used.push_back(f.first);
        }
      }
      for (size_t u = 0; u < used.size(); ++u) {
        if (u == 0 && used.size() == 1) {
          std::vector<int> mask;
          bool identity = true;
          for (int64_t i = 0; i < n; ++i) {
            mask.push_back(from[i].second);
            identity &= from[i].second == i;
          }
          x = identity ? cols[used[0]]
                       : b_.CreateShuffleVector(cols[used[0]], mask);
          break;
        }
        if (u == 0) {
          continue;
        }
        // Lanes of used[u] come from the second operand; the others from
        // the partial result (or used[0] in the first shuffle).
        llvm::Value *first = u == 1 ? cols[used[0]] : x;
        std::vector<int> mask;
        for (int64_t i = 0; i < n; ++i) {
          if (from[i].first == used[u]) {
            mask.push_back(static_cast<int>(n) + from[i].second);
          } else if (u == 1 && from[i].first == used[0]) {
            mask.push_back(from[i].second);
          } else if (u > 1) {
            mask.push_back(static_cast<int>(i));
          } else {
            mask.push_back(-1);
          }
        }
        x = b_.CreateShuffleVector(first, cols[used[u]], mask);
      }
      acc = acc ? emitMax(b_, acc, x) : x;
    }
    return acc;
  }

  // Max over the window of outputs [from, to) of the current row through
  // the region's padded loads, into the row's destination.
  void checkedLoop(llvm::Value *from, llvm::Value *to) {
    const StructuredOp &op = root();
    loop(from, to, [&](llvm::Value *ow) {
      ivs_[plan_.col] = ow;
      llvm::Value *acc = llvm::ConstantFP::get(f32_, *op.init);
      for (int64_t i = 0; i < kh_; ++i) {
        for (int64_t j = 0; j < kw_; ++j) {
          ivs_[plan_.kh] = idx(i);
          ivs_[plan_.kw] = idx(j);
          acc = emitMax(b_, acc, hooks_.load(op.inputs[0], ivs_));
        }
      }
      b_.CreateAlignedStore(
          acc, b_.CreateInBoundsGEP(f32_, rowOut_, b_.CreateSub(ow, colLo_)),
          llvm::Align(4));
    });
  }

  const PoolPlan &plan_;
  unsigned vw_;
  int64_t width_ = 0, height_ = 0, kw_ = 1, kh_ = 1;
  llvm::Type *f32_ = nullptr, *vecTy_ = nullptr;
  llvm::AllocaInst *scratch_ = nullptr;
  // Element colLo_ of the current row's maxima: in scratch_ or the output.
  llvm::Value *rowOut_ = nullptr;
  llvm::Value *colLo_ = nullptr; // first output column of the tile
};

} // namespace

absl::StatusOr<bool> emitPoolWindow(const dispatch::DispatchProgram &program,
                                    const dispatch::DispatchRegion &region,
                                    llvm::IRBuilder<> &builder,
                                    llvm::Function *fn,
                                    llvm::ArrayRef<llvm::Value *> lo,
                                    llvm::ArrayRef<llvm::Value *> hi,
                                    const TileHooks &hooks,
                                    const CodegenOptions &options) {
  const StructuredOp &root = program.program.ops[region.ops[0]];
  if (!options.poolWindow) {
    return false;
  }
  std::optional<PoolPlan> plan = planPoolWindow(program, root);
  if (!plan) {
    return false;
  }
  llvm::StringRef features = targetFeatures(*fn->getParent());
  unsigned width =
      gemmKernelShape(fn->getParent()->getTargetTriple(), features).vectorWidth;
  if (width <= 1) {
    return false;
  }
  PoolWindowEmitter emitter(program, region, builder, fn, *plan, width, hooks);
  if (emitter.interiorColumns() < width) {
    return false; // no full vector: the generic loop nest
  }
  // Names the path in the IR (tests check which pools take it).
  fn->addFnAttr("osprey-pool-window");
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
