// Depthwise convolutions with a prologue: the input rows of the planes are
// computed from a fused 1x1 expansion (a dot product over its input
// channels per element, then its epilogue) instead of copied.
#include "compiler/targets/llvm_cpu/depthwise_emitter.h"

#include <algorithm>
#include <map>

#include "compiler/targets/llvm_cpu/math.h"
#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {

using structured::StructuredOp;

// Checks the prologue's form (see structured::fuseAndTile) and records
// its access arithmetic; an error when this emitter cannot compute it.
absl::Status DepthwiseConvEmitter::preparePrologue() {
  const structured::StructuredProgram &prog = p_.program;
  const StructuredOp &e = prog.ops[r_.prologue[0]];
  std::optional<structured::GemmPlan> gemm = structured::planGemm(prog, e);
  const StructuredOp &last = prog.ops[r_.prologue.back()];
  llvm::ArrayRef<int64_t> tDims = prog.tensors[last.output.tensor].type.dims();
  unsigned rank = static_cast<unsigned>(tDims.size());
  auto fail = [&](const std::string &what) {
    return absl::UnimplementedError("node '" + e.nodeName + "': " + what +
                                    " in a depthwise prologue is not "
                                    "implemented");
  };
  if (!gemm || e.bounds.size() < rank) {
    return fail("a root that is not a matrix product");
  }
  eRank_ = rank;
  eDims_ = tDims.vec();
  // Linear element offset of an operand as constant + coefficients per
  // loop of |op|.
  auto affine = [&](const structured::OperandAccess &in,
                    std::vector<int64_t> &coef, int64_t &constant) {
    llvm::ArrayRef<int64_t> dims = prog.tensors[in.tensor].type.dims();
    coef.assign(in.map.numDims, 0);
    constant = 0;
    int64_t stride = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      const structured::AffineExpr &x = in.map.results[k];
      for (size_t d = 0; d < x.coeffs.size() && d < coef.size(); ++d) {
        coef[d] += x.coeffs[d] * stride;
      }
      constant += x.constant * stride;
      stride *= dims[k];
    }
  };
  ea_ = gemm->a;
  eb_ = gemm->b;
  affine(e.inputs[ea_], aCoef_, aConst_);
  affine(e.inputs[eb_], bCoef_, bConst_);
  // The value's loops [eSplit_, rank) flatten to the depthwise input's
  // planes, the others select the plane (channels).
  const structured::OperandAccess &in = root().inputs[plan_.b];
  llvm::ArrayRef<int64_t> vDims = prog.tensors[in.tensor].type.dims();
  if (plan_.rowResult + 2 != vDims.size()) {
    return fail("a value whose rows are not next to its columns");
  }
  int64_t planeSize = vDims[plan_.rowResult] * vDims.back(), inner = 1;
  eSplit_ = rank;
  while (eSplit_ > 0 && inner < planeSize) {
    inner *= eDims_[--eSplit_];
  }
  bool ok = inner == planeSize && bCoef_[rank - 1] == 1 &&
            eDims_.back() % vDims.back() == 0;
  for (unsigned d = 0; d < rank; ++d) {
    ok &= d < eSplit_ ? (bCoef_[d] == 0 || eDims_[d] == 1) : aCoef_[d] == 0;
  }
  // Operands of the epilogue other than its own values are loaded once
  // per plane: they must not depend on the pixel.
  for (size_t i = 1; i < r_.prologue.size(); ++i) {
    for (const structured::OperandAccess &x : prog.ops[r_.prologue[i]].inputs) {
      int producer = prog.producer(x.tensor);
      if (producer >= 0 &&
          std::find(r_.prologue.begin(), r_.prologue.end(),
                    static_cast<unsigned>(producer)) != r_.prologue.end()) {
        continue;
      }
      for (const structured::AffineExpr &r : x.map.results) {
        for (unsigned d = eSplit_; d < rank && d < r.coeffs.size(); ++d) {
          ok &= r.coeffs[d] == 0;
        }
      }
      ok &= !x.indirect && !x.padValue;
    }
  }
  // Planes are computed, never padded: every plane the convolution reads
  // must be inside the value.
  for (size_t k = 0; k + 1 < vDims.size(); ++k) {
    if (k == plan_.rowResult) {
      continue;
    }
    const structured::AffineExpr &x = in.map.results[k];
    int64_t lo = x.constant, hi = x.constant;
    for (size_t d = 0; d < x.coeffs.size(); ++d) {
      int64_t span = x.coeffs[d] * (root().bounds[d] - 1);
      (span < 0 ? lo : hi) += span;
    }
    ok &= lo >= 0 && hi < vDims[k];
  }
  if (!ok) {
    return fail("a product whose input is not read plane by plane");
  }
  // Every reduction step's offset from the step at 0, for A and B.
  aSteps_ = {0};
  bSteps_ = {0};
  for (unsigned d = rank; d < e.bounds.size(); ++d) {
    std::vector<int64_t> as, bs;
    for (int64_t i = 0; i < e.bounds[d]; ++i) {
      for (size_t j = 0; j < aSteps_.size(); ++j) {
        as.push_back(aSteps_[j] + i * aCoef_[d]);
        bs.push_back(bSteps_[j] + i * bCoef_[d]);
      }
    }
    aSteps_ = std::move(as);
    bSteps_ = std::move(bs);
  }
  if (aSteps_.size() > 1 && options_.prologueLoop) {
    aStep_ = aSteps_[1];
    bStep_ = bSteps_[1];
    for (size_t k = 0; k < aSteps_.size(); ++k) {
      if (aSteps_[k] != int64_t(k) * aStep_ ||
          bSteps_[k] != int64_t(k) * bStep_) {
        aStep_ = bStep_ = 0;
      }
    }
    if (bStep_ == 0) {
      aStep_ = 0;
    }
  }
  for (size_t i = 1; i < r_.prologue.size(); ++i) {
    for (const structured::ScalarNode &n :
         prog.ops[r_.prologue[i]].body.nodes()) {
      switch (n.kind) {
      case structured::ScalarKind::Exp:
      case structured::ScalarKind::Tanh:
      case structured::ScalarKind::Sigmoid:
        // The math expansions are written for scalars: the activation
        // then runs in a loop over each computed row that the loop
        // vectorizer widens.
        mathEpilogue_ = true;
        break;
      case structured::ScalarKind::Input:
      case structured::ScalarKind::Const:
      case structured::ScalarKind::Neg:
      case structured::ScalarKind::Abs:
      case structured::ScalarKind::Add:
      case structured::ScalarKind::Sub:
      case structured::ScalarKind::Mul:
      case structured::ScalarKind::Div:
      case structured::ScalarKind::Max:
      case structured::ScalarKind::Min:
        break;
      default:
        return fail("an elementwise operation of this kind");
      }
    }
  }
  return absl::OkStatus();
}

// The prologue's epilogue ops on |value| (of type |ty|, a vector or a
// scalar), operands not computed by the prologue taken from |loaded| (per
// op, per input: a scalar loaded at the span's channel).
llvm::Value *DepthwiseConvEmitter::prologueEpilogue(
    llvm::Value *value, llvm::Type *ty,
    const std::vector<std::vector<llvm::Value *>> &loaded) {
  const structured::StructuredProgram &prog = p_.program;
  std::map<unsigned, llvm::Value *> values;
  values[prog.ops[r_.prologue[0]].output.tensor] = value;
  for (size_t i = 1; i < r_.prologue.size(); ++i) {
    const StructuredOp &op = prog.ops[r_.prologue[i]];
    const std::vector<structured::ScalarNode> &nodes = op.body.nodes();
    std::vector<llvm::Value *> v(nodes.size(), nullptr);
    for (size_t k = 0; k < nodes.size(); ++k) {
      const structured::ScalarNode &n = nodes[k];
      auto x = [&](unsigned j) { return v[n.operands[j]]; };
      switch (n.kind) {
      case structured::ScalarKind::Input: {
        unsigned t = op.inputs[n.index].tensor;
        llvm::Value *in = loaded[i][n.index];
        v[k] = in ? (ty->isVectorTy() ? b_.CreateVectorSplat(vw_, in) : in)
                  : values.at(t);
        break;
      }
      case structured::ScalarKind::Const:
        v[k] = llvm::ConstantFP::get(ty, n.value);
        break;
      case structured::ScalarKind::Neg:
        v[k] = b_.CreateFNeg(x(0));
        break;
      case structured::ScalarKind::Abs:
        v[k] = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x(0));
        break;
      case structured::ScalarKind::Exp:
        v[k] = emitExp(b_, x(0));
        break;
      case structured::ScalarKind::Tanh:
        v[k] = emitTanh(b_, x(0));
        break;
      case structured::ScalarKind::Sigmoid:
        v[k] = emitSigmoid(b_, x(0));
        break;
      case structured::ScalarKind::Add:
        v[k] = b_.CreateFAdd(x(0), x(1));
        break;
      case structured::ScalarKind::Sub:
        v[k] = b_.CreateFSub(x(0), x(1));
        break;
      case structured::ScalarKind::Mul:
        v[k] = b_.CreateFMul(x(0), x(1));
        break;
      case structured::ScalarKind::Div:
        v[k] = b_.CreateFDiv(x(0), x(1));
        break;
      case structured::ScalarKind::Max:
        v[k] = emitMax(b_, x(0), x(1));
        break;
      case structured::ScalarKind::Min:
        v[k] = emitMin(b_, x(0), x(1));
        break;
      default:
        break; // rejected by preparePrologue()
      }
    }
    values[op.output.tensor] = v[op.body.result()];
    value = values[op.output.tensor];
  }
  return value;
}

// The tile's planes in batches of batch_ and, per batch, blocks of rows_
// output rows: the batch's input rows are computed together
// (computeRows), then each plane's window sums and epilogue run as in
// emitBatches. Slot j of a batch holds plane b0 + j.
void DepthwiseConvEmitter::emitPrologue(llvm::ArrayRef<llvm::Value *> lo,
                                        llvm::ArrayRef<llvm::Value *> hi,
                                        absl::Status &status) {
  const StructuredOp &op = root();
  std::vector<llvm::Value *> extent;
  llvm::Value *total = idx(1);
  for (unsigned d : outer_) {
    int64_t tile = maxExtent(d);
    extent.push_back(op.bounds[d] % tile == 0 ? idx(tile)
                                              : b_.CreateSub(hi[d], lo[d]));
    total = b_.CreateMul(total, extent.back());
  }
  // Points ivs_ and the scratch bases at plane |linear| of the tile in
  // slot |j|.
  auto setSlot = [&](llvm::Value *linear, llvm::Value *j) {
    for (size_t k = outer_.size(); k-- > 0;) {
      unsigned d = outer_[k];
      if (maxExtent(d) == 1) {
        ivs_[d] = lo[d];
        continue;
      }
      ivs_[d] = b_.CreateAdd(lo[d], b_.CreateURem(linear, extent[k]));
      linear = b_.CreateUDiv(linear, extent[k]);
    }
    planeBase_ = at(plane_, b_.CreateMul(j, idx(phases_ * planeStride_)));
    if (sw_ == 1) {
      planeBase_ = at(planeBase_, shift_);
    }
    sumsBase_ = at(sums_, b_.CreateMul(j, idx(sLen_)));
  };
  // The first input column of a row (c0 in computeRows) lands on a vector
  // boundary of the planes (stride 1) or of the row buffers they are
  // split from.
  {
    const structured::OperandAccess &in = op.inputs[plan_.b];
    const structured::AffineExpr &colExpr = in.map.results.back();
    llvm::Value *colBase = b_.CreateAdd(b_.CreateMul(lo_[plan_.col], idx(sw_)),
                                        idx(colExpr.constant));
    llvm::Value *c0 =
        smin(smax(b_.CreateSub(idx(0), colBase), idx(0)), idx(sw_ * wq_));
    shift_ =
        vw_ > 1
            ? b_.CreateURem(b_.CreateSub(idx(vw_), b_.CreateURem(c0, idx(vw_))),
                            idx(vw_))
            : idx(0);
  }
  int64_t ow = op.bounds[plan_.col];
  stepLoop(idx(0), total, batch_, LoopHint::kDefault, [&](llvm::Value *b0) {
    llvm::Value *n = smin(idx(batch_), b_.CreateSub(total, b0));
    stepLoop(lo[plan_.row], hi[plan_.row], rows_, LoopHint::kDefault,
             [&](llvm::Value *r0) {
               llvm::Value *rb =
                   smin(idx(rows_), b_.CreateSub(hi[plan_.row], r0));
               computeRows(b0, n, r0, rb, setSlot);
               auto stage = [&](llvm::function_ref<void()> body) {
                 loop(idx(0), n, [&](llvm::Value *j) {
                   setSlot(b_.CreateAdd(b0, j), j);
                   body();
                 });
               };
               if (direct_) {
                 stage([&] { compute(rb, false, r0, &status); });
                 return;
               }
               stage([&] { compute(rb, false); });
               if (dense_ && sPitch_ != ow) {
                 stage([&] { compact(rb); });
               }
               stage([&] {
                 if (status.ok()) {
                   status = epilogue(r0, rb);
                 }
               });
             });
  });
  planeBase_ = plane_;
  sumsBase_ = sums_;
}

// Fills the planes of the batch's slots with the prologue's value at the
// input rows of output rows [r0, r0 + rb), the padding value outside the
// input, split by phase like copyPlanes. Each vector of a row is a dot
// product over the expansion's input channels computed for all slots at
// once: every input vector loaded feeds batch_ FMAs (one per plane), and
// two vectors of a row are computed together, so the 2 * batch_
// accumulators hide the FMA latency and each weight broadcast feeds two
// FMAs. The weights and per-channel operands of each slot are loaded
// once per block (loadSlots). Slots past the batch's |n| planes repeat its
// last.
void DepthwiseConvEmitter::computeRows(
    llvm::Value *b0, llvm::Value *n, llvm::Value *r0, llvm::Value *rb,
    llvm::function_ref<void(llvm::Value *, llvm::Value *)> setSlot) {
  const structured::StructuredProgram &prog = p_.program;
  const structured::OperandAccess &in = root().inputs[plan_.b];
  const StructuredOp &e = prog.ops[r_.prologue[0]];
  llvm::ArrayRef<int64_t> dims = prog.tensors[in.tensor].type.dims();
  size_t last = dims.size() - 1;
  int64_t height = dims[plan_.rowResult];
  int64_t rowConst = in.map.results[plan_.rowResult].constant;
  PrologueRow row;
  row.width = dims[last];
  row.len = sw_ * wq_;
  row.pad = llvm::ConstantFP::get(f32_, in.padValue ? *in.padValue : 0.0);
  row.colBase = b_.CreateAdd(b_.CreateMul(lo_[plan_.col], idx(sw_)),
                             idx(in.map.results[last].constant));
  row.c0 = smin(smax(b_.CreateSub(idx(0), row.colBase), idx(0)), idx(row.len));
  row.c1 = smin(smax(b_.CreateSub(idx(row.width), row.colBase), row.c0),
                idx(row.len));
  PrologueSlots slots = loadSlots(b0, n, setSlot);
  int64_t g = batch_;
  row.bBase = hooks_.base(e.inputs[eb_].tensor);
  row.dst.resize(g);
  loop(idx(0), b_.CreateAdd(rb, idx(khx_)), [&](llvm::Value *r) {
    for (int64_t rph = 0; rph < sh_; ++rph) {
      row.inRow = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(r0, r), idx(sh_)),
                               idx(rph + rowConst));
      llvm::Value *ok = b_.CreateICmpULT(row.inRow, idx(height));
      llvm::Value *rowOff = b_.CreateMul(r, idx(wq_));
      for (int64_t j = 0; j < g; ++j) {
        planeBase_ = slots.planes[j];
        row.dst[j] = sw_ == 1 ? planeAt(rph, rowOff) : slots.rows[j];
      }
      // Rows inside the input are computed, rows in the padding filled.
      ifElse(
          ok, "dw_prologue_row", [&] { computeRow(slots, row); }, "dw_pad_row",
          [&] {
            for (int64_t j = 0; j < g; ++j) {
              fillVectors(row.dst[j], idx(row.len), row.pad);
            }
          },
          "dw_row");
      if (sw_ > 1) {
        for (int64_t j = 0; j < g; ++j) {
          planeBase_ = slots.planes[j];
          splitPhases(rph, rowOff, slots.rows[j]);
        }
      }
    }
  });
  // Vectors of the last rows read up to lanes_ elements past the rows.
  llvm::Value *end = b_.CreateMul(b_.CreateAdd(rb, idx(khx_)), idx(wq_));
  for (int64_t j = 0; j < g; ++j) {
    planeBase_ = slots.planes[j];
    for (int64_t ph = 0; ph < phases_; ++ph) {
      for (int64_t k = 0; k < roundUp(lanes_, vw_); k += vw_) {
        b_.CreateAlignedStore(splat(llvm::ConstantFP::get(f32_, 0.0)),
                              planeAt(ph, b_.CreateAdd(end, idx(k))),
                              llvm::Align(4));
      }
    }
  }
}

DepthwiseConvEmitter::PrologueSlots DepthwiseConvEmitter::loadSlots(
    llvm::Value *b0, llvm::Value *n,
    llvm::function_ref<void(llvm::Value *, llvm::Value *)> setSlot) {
  const structured::StructuredProgram &prog = p_.program;
  const structured::OperandAccess &in = root().inputs[plan_.b];
  const StructuredOp &e = prog.ops[r_.prologue[0]];
  llvm::ArrayRef<int64_t> dims = prog.tensors[in.tensor].type.dims();
  size_t last = dims.size() - 1;
  int64_t planeSize = dims[plan_.rowResult] * dims[last];
  int64_t g = batch_;
  PrologueSlots slots;
  slots.planes.resize(g);
  slots.rows.resize(g);
  slots.aPtrs.resize(g);
  slots.weights.resize(g);
  slots.loaded.resize(g);
  for (int64_t j = 0; j < g; ++j) {
    setSlot(b_.CreateAdd(b0, smin(idx(j), b_.CreateSub(n, idx(1)))), idx(j));
    slots.planes[j] = planeBase_;
    if (sw_ > 1) {
      slots.rows[j] = at(row_, b_.CreateAdd(idx(j * tLen_), shift_));
    }
    // The plane's offset in the value, over whole planes: the expansion's
    // channel indices.
    llvm::Value *base = idx(0);
    int64_t stride = 1;
    for (size_t k = last + 1; k-- > 0;) {
      if (k != plan_.rowResult && k != last) {
        base = b_.CreateAdd(
            base, b_.CreateMul(evalExpr(in.map.results[k]), idx(stride)));
      }
      stride *= dims[k];
    }
    llvm::Value *linear = b_.CreateUDiv(base, idx(planeSize));
    std::vector<llvm::Value *> eIvs(e.bounds.size(), idx(0));
    for (unsigned k = eSplit_; k-- > 0;) {
      eIvs[k] = b_.CreateURem(linear, idx(eDims_[k]));
      linear = b_.CreateUDiv(linear, idx(eDims_[k]));
    }
    llvm::Value *aOff = idx(aConst_);
    for (unsigned d = 0; d < eSplit_; ++d) {
      if (aCoef_[d] != 0) {
        aOff = b_.CreateAdd(aOff, b_.CreateMul(eIvs[d], idx(aCoef_[d])));
      }
    }
    llvm::Value *aPtr = at(hooks_.base(e.inputs[ea_].tensor), aOff);
    slots.aPtrs[j] = aPtr;
    for (int64_t step : aStep_ != 0 ? std::vector<int64_t>() : aSteps_) {
      slots.weights[j].push_back(splat(
          b_.CreateAlignedLoad(f32_, at(aPtr, idx(step)), llvm::Align(4))));
    }
    slots.loaded[j].resize(r_.prologue.size());
    for (size_t i = 1; i < r_.prologue.size(); ++i) {
      for (const structured::OperandAccess &x :
           prog.ops[r_.prologue[i]].inputs) {
        int producer = prog.producer(x.tensor);
        bool internal =
            producer >= 0 &&
            std::find(r_.prologue.begin(), r_.prologue.end(),
                      static_cast<unsigned>(producer)) != r_.prologue.end();
        slots.loaded[j][i].push_back(
            internal
                ? nullptr
                : hooks_.load(x, llvm::ArrayRef<llvm::Value *>(eIvs).take_front(
                                     eRank_)));
      }
    }
  }
  return slots;
}

void DepthwiseConvEmitter::computeRow(const PrologueSlots &slots,
                                      const PrologueRow &row) {
  // The expansion's plane indices at column c0 of the row.
  llvm::Value *linear = b_.CreateAdd(
      b_.CreateAdd(b_.CreateMul(row.inRow, idx(row.width)), row.colBase),
      row.c0);
  llvm::Value *bOff = idx(bConst_);
  for (unsigned k = eRank_; k-- > eSplit_;) {
    llvm::Value *v = b_.CreateURem(linear, idx(eDims_[k]));
    linear = b_.CreateUDiv(linear, idx(eDims_[k]));
    if (bCoef_[k] != 0) {
      bOff = b_.CreateAdd(bOff, b_.CreateMul(v, idx(bCoef_[k])));
    }
  }
  llvm::Value *bPtr = b_.CreateGEP(f32_, row.bBase, bOff);
  llvm::Value *count = b_.CreateSub(row.c1, row.c0);
  auto dots = [&](llvm::Value *x, int64_t xs, llvm::Value *mask) {
    storeDots(slots, row, x, xs, mask, dotProducts(slots, bPtr, x, xs, mask));
  };
  // Pairs of vectors, then (vector targets) a rest of one to three
  // vectors, so rows of an odd number of vectors (112: 7) end in a triple
  // rather than a single vector whose loads feed half as many FMAs.
  int64_t pair = 2 * vw_;
  llvm::Value *pairs = b_.CreateMul(b_.CreateUDiv(count, idx(pair)), idx(pair));
  if (vw_ > 1) {
    llvm::Value *over = b_.CreateSub(count, idx(3 * vw_));
    pairs =
        b_.CreateSelect(b_.CreateICmpSGT(over, idx(0)),
                        b_.CreateMul(ceilDiv(over, pair), idx(pair)), idx(0));
  }
  stepLoop(idx(0), pairs, pair, LoopHint::kNoVectorize,
           [&](llvm::Value *x) { dots(x, 2, nullptr); });
  if (vw_ == 1) {
    stepLoop(pairs, count, 1, LoopHint::kNoVectorize,
             [&](llvm::Value *x) { dots(x, 1, nullptr); });
  } else {
    // The rest of the row (up to three vectors) as a triple or a pair with
    // its last vector masked, one vector, or one masked vector.
    llvm::Value *rem =
        b_.CreateTrunc(b_.CreateSub(count, pairs), b_.getInt32Ty());
    std::vector<llvm::Constant *> steps;
    for (unsigned i = 0; i < vw_; ++i) {
      steps.push_back(b_.getInt32(i));
    }
    auto lanesBelow = [&](llvm::Value *n) {
      return b_.CreateICmpSLT(llvm::ConstantVector::get(steps),
                              b_.CreateVectorSplat(vw_, n));
    };
    llvm::Value *w = b_.getInt32(vw_);
    llvm::Value *w2 = b_.getInt32(2 * vw_);
    llvm::BasicBlock *three =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_three", fn_);
    llvm::BasicBlock *notThree =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_pair", fn_);
    b_.CreateCondBr(b_.CreateICmpSGT(rem, w2), three, notThree);
    b_.SetInsertPoint(three);
    llvm::BasicBlock *rest =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_rest", fn_);
    dots(pairs, 3, lanesBelow(b_.CreateSub(rem, w2)));
    b_.CreateBr(rest);
    b_.SetInsertPoint(notThree);
    llvm::BasicBlock *two =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_two", fn_);
    llvm::BasicBlock *notTwo =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_short", fn_);
    llvm::BasicBlock *one =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_one", fn_);
    llvm::BasicBlock *part =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_part", fn_);
    b_.CreateCondBr(b_.CreateICmpSGT(rem, w), two, notTwo);
    b_.SetInsertPoint(two);
    dots(pairs, 2, lanesBelow(b_.CreateSub(rem, w)));
    b_.CreateBr(rest);
    b_.SetInsertPoint(notTwo);
    llvm::BasicBlock *check =
        llvm::BasicBlock::Create(ctx_, "dw_prologue_check", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(rem, w), one, check);
    b_.SetInsertPoint(one);
    dots(pairs, 1, nullptr);
    b_.CreateBr(rest);
    b_.SetInsertPoint(check);
    b_.CreateCondBr(b_.CreateICmpSGT(rem, b_.getInt32(0)), part, rest);
    b_.SetInsertPoint(part);
    dots(pairs, 1, lanesBelow(rem));
    b_.CreateBr(rest);
    b_.SetInsertPoint(rest);
  }
  for (int64_t j = 0; j < batch_; ++j) {
    if (mathEpilogue_) {
      loop(
          row.c0, row.c1,
          [&](llvm::Value *c) {
            llvm::Value *ptr = at(row.dst[j], c);
            llvm::Value *v = b_.CreateAlignedLoad(f32_, ptr, llvm::Align(4));
            b_.CreateAlignedStore(prologueEpilogue(v, f32_, slots.loaded[j]),
                                  ptr, llvm::Align(4));
          },
          LoopHint::kNoInterleave);
    }
    fillScalars(row.dst[j], idx(0), row.c0, row.pad);
    fillScalars(row.dst[j], row.c1, idx(row.len), row.pad);
  }
}

DepthwiseConvEmitter::Accumulators
DepthwiseConvEmitter::dotProducts(const PrologueSlots &slots, llvm::Value *bPtr,
                                  llvm::Value *x, int64_t xs,
                                  llvm::Value *mask) {
  int64_t g = batch_;
  Accumulators acc(xs, std::vector<llvm::Value *>(g, nullptr));
  // Input vector |u| of a reduction step at bPtr[base + offset]; the last
  // vector is masked by |mask| if set.
  auto loadInput = [&](llvm::Value *base, int64_t offset, int64_t u) {
    llvm::Value *ptr =
        b_.CreateGEP(f32_, bPtr, b_.CreateAdd(base, idx(offset)));
    llvm::Value *m = u + 1 == xs ? mask : nullptr;
    return m ? static_cast<llvm::Value *>(
                   b_.CreateMaskedLoad(vecTy_, ptr, llvm::Align(4), m))
             : b_.CreateAlignedLoad(vecTy_, ptr, llvm::Align(4));
  };
  if (aStep_ != 0) {
    // The reduction as a loop: weights loaded per step (a broadcast
    // feeding |xs| FMAs) rather than hoisted out of the row loop, where
    // g * K of them spilled and were reloaded for every FMA. The
    // accumulators live in accs_ (promoted to registers).
    if (!accs_) {
      llvm::BasicBlock &entry = fn_->getEntryBlock();
      llvm::IRBuilder<> eb(&entry, entry.begin());
      accs_ = eb.CreateAlloca(llvm::ArrayType::get(vecTy_, 3 * g), nullptr,
                              "dw_prologue_acc");
    }
    auto slot = [&](int64_t u, int64_t j) {
      return b_.CreateConstInBoundsGEP2_32(accs_->getAllocatedType(), accs_, 0,
                                           u * g + j);
    };
    llvm::Value *zero = llvm::Constant::getNullValue(vecTy_);
    for (int64_t u = 0; u < xs; ++u) {
      for (int64_t j = 0; j < g; ++j) {
        b_.CreateStore(zero, slot(u, j));
      }
    }
    loop(
        idx(0), idx(int64_t(bSteps_.size())),
        [&](llvm::Value *k) {
          std::vector<llvm::Value *> v(xs);
          llvm::Value *row = b_.CreateMul(k, idx(bStep_));
          for (int64_t u = 0; u < xs; ++u) {
            v[u] = loadInput(b_.CreateAdd(x, row), u * int64_t(vw_), u);
          }
          for (int64_t j = 0; j < g; ++j) {
            llvm::Value *w = splat(b_.CreateAlignedLoad(
                f32_, at(slots.aPtrs[j], b_.CreateMul(k, idx(aStep_))),
                llvm::Align(4)));
            for (int64_t u = 0; u < xs; ++u) {
              llvm::Value *a = b_.CreateLoad(vecTy_, slot(u, j));
              b_.CreateStore(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd,
                                                {vecTy_}, {v[u], w, a}),
                             slot(u, j));
            }
          }
        },
        LoopHint::kNoVectorize);
    for (int64_t u = 0; u < xs; ++u) {
      for (int64_t j = 0; j < g; ++j) {
        acc[u][j] = b_.CreateLoad(vecTy_, slot(u, j));
      }
    }
    return acc;
  }
  // Unrolled: the weights were hoisted (loadSlots).
  for (size_t k = 0; k < bSteps_.size(); ++k) {
    for (int64_t u = 0; u < xs; ++u) {
      llvm::Value *v = loadInput(x, bSteps_[k] + u * int64_t(vw_), u);
      for (int64_t j = 0; j < g; ++j) {
        llvm::Value *&a = acc[u][j];
        a = a ? b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vecTy_},
                                   {v, slots.weights[j][k], a})
              : b_.CreateFMul(v, slots.weights[j][k]);
      }
    }
  }
  return acc;
}

void DepthwiseConvEmitter::storeDots(const PrologueSlots &slots,
                                     const PrologueRow &row, llvm::Value *x,
                                     int64_t xs, llvm::Value *mask,
                                     const Accumulators &acc) {
  for (int64_t u = 0; u < xs; ++u) {
    for (int64_t j = 0; j < batch_; ++j) {
      llvm::Value *v =
          mathEpilogue_ ? acc[u][j]
                        : prologueEpilogue(acc[u][j], vecTy_, slots.loaded[j]);
      llvm::Value *ptr = at(row.dst[j], b_.CreateAdd(b_.CreateAdd(row.c0, x),
                                                     idx(u * int64_t(vw_))));
      if (mask && u + 1 == xs) {
        b_.CreateMaskedStore(v, ptr, llvm::Align(4), mask);
      } else {
        b_.CreateAlignedStore(v, ptr, llvm::Align(4));
      }
    }
  }
}

} // namespace osprey::compiler::llvm_cpu
