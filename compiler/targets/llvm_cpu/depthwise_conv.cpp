// Depthwise convolutions through padded, stride-phase-split scratch planes.
//
// Per workgroup (whole planes of one or a few channels), per plane and block
// of rb output rows starting at r0 (blocks fit the scratch budget):
//   copy: every input row the block needs is copied once into scratch plane
//     rows of pitch Wq, with the padding value left and right and in rows
//     outside the input (masked vector loads). With strides sh x sw the rows
//     and columns are split by phase while copying: plane[ph_r * sw +
//     ph_c][i][j] holds input (sh * (r0 + i) + ph_r + c_r, sw * j + ph_c +
//     c_c), c_r and c_c being the (negative) padding offsets.
//   compute: output (oh, ow) of the block sits at q = oh * Wq + ow and tap
//     (kh, kw) reads plane[phase(kh, kw)][q + offset(kh, kw)] with a constant
//     offset, so a vector of outputs costs one unaligned vector load and one
//     FMA per tap, weights hoisted into registers. Short rows are computed in
//     the flattened q space (a vector spans several rows; columns
//     q mod Wq >= OW are junk that is never stored), wide stride-1 rows up
//     to 4 rows per iteration sharing the loads of overlapping window rows;
//     a cost model picks the shape. Planes are padded at the end so vectors
//     past the block read initialized scratch.
//   epilogue: the region's fused ops through hooks.finish in a loop the loop
//     vectorizer turns into vector code: over all rb * OW outputs at once
//     when the fused ops' addresses allow it (the sums compacted first),
//     else row by row.
// On vector targets, planes of one block run stage by stage over a batch
// of planes (copy all, compute all, epilogues), so no stage reads scratch
// just written (failed store forwarding stalled small planes).
// Scalar targets (vector width 1) compute several outputs of a row per
// iteration instead, so neighbouring taps share their loads, and apply the
// epilogue straight from the accumulators.
// With a prologue (a 1x1 expansion fused into the convolution, see
// structured::fuseAndTile), the copy becomes a computation: per block of
// rows, every input row of a batch of planes is a dot product over the
// expansion's input channels, all planes of the batch at once (each input
// vector loaded feeds one FMA per plane), followed by the expansion's
// epilogue (bias, activation) and stored into the planes, which are shifted
// so those stores are aligned; the stages then run per plane as above.
#include "compiler/targets/llvm_cpu/depthwise_conv.h"

#include <algorithm>
#include <map>

#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/math.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {

namespace {

using structured::RowConvPlan;
using structured::StructuredOp;

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

class DepthwiseConvEmitter : public TileEmitter {
public:
  DepthwiseConvEmitter(const dispatch::DispatchProgram &p,
                       const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                       llvm::Function *fn, const RowConvPlan &plan,
                       const TileHooks &hooks, const DepthwiseOptions &options)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan), options_(options) {}

  // Static geometry for |vectorWidth| lanes and a scratch budget of
  // |maxScratch| bytes; false when one output row does not fit.
  bool size(unsigned vectorWidth, uint64_t maxScratch) {
    const StructuredOp &op = root();
    for (unsigned d = 0; d < op.bounds.size(); ++d) {
      if (op.bounds[d] <= 0) {
        return false; // empty loops: the generic path stores init or nothing
      }
    }
    vw_ = vectorWidth;
    sw_ = plan_.colStride;
    sh_ = plan_.rowStride;
    kw_ = plan_.kw ? op.bounds[*plan_.kw] : 1;
    kh_ = plan_.kh ? op.bounds[*plan_.kh] : 1;
    dw_ = plan_.kw ? plan_.colDilation : 0;
    dh_ = plan_.kh ? plan_.rowDilation : 0;
    phases_ = sh_ * sw_;
    int64_t ow = maxExtent(plan_.col), oh = maxExtent(plan_.row);
    wq_ = ow + (kw_ - 1) * dw_ / sw_;
    if (prologue() && vw_ > 1) {
      // Whole vectors per plane row: with the plane shifted so the first
      // input column lands on a vector boundary (see emitPrologue), the
      // prologue's stores are aligned (unaligned ones, two cache lines
      // each, cost as much as the dot products of a 16-channel expansion).
      wq_ = roundUp(wq_, vw_);
    }
    khx_ = (kh_ - 1) * dh_ / sh_;
    int64_t taps = kw_ * kh_;
    // Scalar code keeps a row of up to 8 accumulators (4 beside the 25
    // weights of a 5x5 window) in the 32 registers of an FPU, preferably a
    // divisor of the row so no output is computed twice.
    u_ = 1;
    if (vw_ == 1) {
      int64_t most = std::min<int64_t>(ow, taps > 9 ? 4 : 8);
      u_ = most;
      for (int64_t u = most; u >= 2 && ow % u_ != 0; --u) {
        if (ow % u == 0) {
          u_ = u;
        }
      }
    }
    lanes_ = vw_ * u_;
    // Rows with column phases go through row_ unless split in registers.
    // Computed rows (a prologue) are split by phase from row_ as well.
    bool rowBuffer = sw_ > 1 && (!(vw_ > 1 && sw_ == 2) || prologue());
    // A prologue computes the rows of a batch of planes together (see
    // computeRows): each slot takes a share of the budget, with room for
    // the extra rows of several output rows per iteration.
    int64_t slots = 1, spare = 0;
    if (prologue()) {
      int64_t planes = 1;
      for (unsigned d = 0; d < op.bounds.size(); ++d) {
        if (op.iterators[d] == structured::IteratorType::Parallel &&
            d != plan_.col && d != plan_.row) {
          planes *= maxExtent(d);
        }
      }
      // Two or three vectors of accumulators per plane, one row of
      // broadcast weights and input vectors: 8 planes fit AVX-512's 32
      // registers; AVX2's 16 take 4 (8 planes there spilled: 56-wide
      // block 480 -> 645 us).
      int64_t want = options_.prologuePlanes ? int64_t(options_.prologuePlanes)
                     : vw_ == 8              ? 4
                                             : 8;
      slots = std::max<int64_t>(1, std::min<int64_t>(planes, want));
      spare =
          vw_ > 1 && sh_ == 1 && ow > vw_ ? int64_t(options_.maxRows) - 1 : 0;
    }
    auto bytes = [&](int64_t rows) {
      int64_t plane = (rows + spare + khx_) * wq_ + lanes_ + 2 * vw_;
      int64_t t = rowBuffer ? sw_ * roundUp(wq_, vw_) + vw_ : 0;
      int64_t s = (rows + spare) * std::max(wq_, roundUp(ow, lanes_)) +
                  lanes_ + vw_;
      if (!prologue()) {
        plane = (rows + khx_) * wq_ + lanes_ + vw_;
        s = rows * wq_ + lanes_ + vw_;
      }
      return uint64_t(4 * slots * (phases_ * plane + t + s));
    };
    int64_t rows = 0;
    // With a prologue, fewer planes at once when a row of all does not fit
    // (scalar targets' 8 KiB).
    for (; !rows; slots /= 2) {
      for (int64_t r = oh; r >= 1 && !rows; --r) {
        if (bytes(r) <= maxScratch) {
          rows = r;
        }
      }
      if (rows || slots == 1) {
        break;
      }
    }
    if (!rows) {
      return false;
    }
    int64_t blocks = (oh + rows - 1) / rows;
    rows_ = (oh + blocks - 1) / blocks;
    planeStride_ = roundUp((rows_ + khx_) * wq_ + lanes_ + vw_, vw_);
    tLen_ = rowBuffer ? sw_ * roundUp(wq_, vw_) + vw_ : 0;
    sLen_ = rows_ * wq_ + lanes_ + vw_;
    flat_ =
        roundUp((rows_ - 1) * wq_ + ow, lanes_) <= rows_ * roundUp(ow, lanes_);
    if (vw_ > 1) {
      chooseVectorShape(ow);
    }
    // Row by row, each row's vectors past its end land on the next row's
    // sums, which are computed afterwards: the sums can be dense (not with
    // several rows per iteration, whose last vectors would overwrite sums
    // of the next row already stored).
    sPitch_ = flat_ ? wq_ : v_ > 1 ? roundUp(ow, lanes_) : ow;
    planeStride_ = roundUp((rows_ + v_ - 1 + khx_) * wq_ + lanes_ + vw_, vw_);
    sLen_ = (rows_ + v_ - 1) * std::max(wq_, sPitch_) + lanes_ + vw_;
    dense_ = flatEpilogue();
    // Scalar rows of whole blocks of u_ outputs go through the epilogue
    // straight from the accumulators (no sums).
    direct_ = vw_ == 1 && !flat_ && ow % u_ == 0 &&
              maxExtent(plan_.col) == op.bounds[plan_.col];
    int64_t planes = 1;
    for (unsigned d = 0; d < op.bounds.size(); ++d) {
      bool parallel = op.iterators[d] == structured::IteratorType::Parallel;
      if (parallel && d != plan_.col && d != plan_.row) {
        outer_.push_back(d);
        planes *= maxExtent(d);
      } else if (!parallel && d != plan_.kw && d != plan_.kh) {
        rolled_.push_back(d);
        rolledCount_ *= op.bounds[d];
      }
    }
    direct_ = direct_ && rolledCount_ == 1;
    if (prologue()) {
      // Depthwise only (fuseAndTile); the batch is set above. Room for the
      // shift of the planes (rows with column phases) by up to a vector.
      if (vw_ > 1) {
        planeStride_ += vw_;
        tLen_ += tLen_ ? vw_ : 0;
      }
      batch_ = slots;
      return rolledCount_ == 1;
    }
    // Small planes (one block each) run stage by stage over a batch of
    // planes: copy all, compute all, then the epilogues. Each stage then
    // reads scratch written long before; plane by plane, the loads right
    // after the copy's (masked, unaligned) stores missed store forwarding
    // and stalled (a 960-channel 7x7 layer spent most of its time there).
    int64_t slot = 4 * (phases_ * planeStride_ + sLen_);
    if (rows_ >= oh && rolledCount_ == 1 && planes > 1 && vw_ > 1) {
      batch_ =
          std::min<int64_t>(planes, int64_t(maxScratch - 4 * tLen_) / slot);
    }
    if (batch_ < 2) {
      batch_ = 1;
    }
    return true;
  }

  // Vector targets: flattened rows, or row by row with v_ rows per
  // iteration, whichever the cost model finds cheaper. Rows computed
  // together share the loads of the window rows they overlap (two 3x3 rows:
  // 12 loads for 18 FMAs), and the taps' loads, mostly unaligned and split
  // across cache lines, limit the loop more than the FMAs do: an iteration
  // costs max(distinct loads, FMAs / 2).
  void chooseVectorShape(int64_t ow) {
    std::vector<std::pair<int64_t, int64_t>> taps;
    for (int64_t kh = 0; kh < kh_; ++kh) {
      for (int64_t kw = 0; kw < kw_; ++kw) {
        int64_t r = kh * dh_, c = kw * dw_;
        taps.push_back({(r % sh_) * sw_ + c % sw_, (r / sh_) * wq_ + c / sw_});
      }
    }
    int64_t n = static_cast<int64_t>(taps.size());
    int64_t best = (roundUp((rows_ - 1) * wq_ + ow, lanes_) / lanes_) * n;
    flat_ = true;
    v_ = 1;
    // Rows of one vector (7, 14 wide) stay at one row per iteration: more
    // ran slower there (14x14 5x5: +20-50%, the 25 weights and the shared
    // loads spill), while 28- to 112-wide rows with stride 1 gained 10-35%;
    // with stride 2 (rows in two phase planes, fewer shared loads) 112 ->
    // 56 ran 5% slower.
    int64_t most = ow > lanes_ && sh_ == 1 ? int64_t(options_.maxRows) : 1;
    for (int64_t v = 1; v <= most && v <= rows_; v *= 2) {
      std::vector<std::pair<int64_t, int64_t>> loads;
      for (int64_t i = 0; i < v; ++i) {
        for (const auto &t : taps) {
          loads.push_back({t.first, t.second + i * wq_});
        }
      }
      std::sort(loads.begin(), loads.end());
      int64_t distinct =
          std::unique(loads.begin(), loads.end()) - loads.begin();
      int64_t cost = (rows_ + v - 1) / v * ((ow + lanes_ - 1) / lanes_) *
                     std::max(distinct, (v * n + 1) / 2);
      if (cost < best) {
        best = cost;
        flat_ = false;
        v_ = v;
      }
    }
  }

  absl::Status emit(llvm::ArrayRef<llvm::Value *> loIn,
                    llvm::ArrayRef<llvm::Value *> hiIn) {
    const StructuredOp &op = root();
    f32_ = b_.getFloatTy();
    vecTy_ = vw_ > 1 ? llvm::FixedVectorType::get(f32_, vw_) : f32_;
    std::vector<llvm::Value *> lo(loIn.begin(), loIn.end());
    std::vector<llvm::Value *> hi(hiIn.begin(), hiIn.end());
    // A loop covered by one tile starts at 0: constant bounds let LLVM fold
    // the copy's border arithmetic.
    for (unsigned d : {plan_.col, plan_.row}) {
      if (maxExtent(d) == op.bounds[d]) {
        lo[d] = idx(0);
        hi[d] = idx(op.bounds[d]);
      }
    }
    lo_ = lo;
    hi_ = hi;
    {
      llvm::BasicBlock &entry = fn_->getEntryBlock();
      llvm::IRBuilder<> eb(&entry, entry.begin());
      auto scratch = [&](int64_t n, const char *name) {
        llvm::AllocaInst *a =
            eb.CreateAlloca(llvm::ArrayType::get(f32_, n), nullptr, name);
        a->setAlignment(llvm::Align(64));
        return a;
      };
      plane_ = scratch(batch_ * phases_ * planeStride_, "dw_plane");
      sums_ = scratch(batch_ * sLen_, "dw_sums");
      if (tLen_) {
        row_ = scratch(prologue() ? batch_ * tLen_ : tLen_, "dw_row");
      }
    }
    planeBase_ = plane_;
    sumsBase_ = sums_;
    ivs_.assign(lo.begin(), lo.end());
    std::vector<llvm::Value *> zero(op.bounds.size(), idx(0)), bound;
    for (int64_t v : op.bounds) {
      bound.push_back(idx(v));
    }
    for (unsigned d : rolled_) {
      ivs_[d] = idx(0);
    }
    absl::Status status = absl::OkStatus();
    if (prologue()) {
      emitPrologue(lo, hi, status);
      return status;
    }
    if (batch_ > 1) {
      emitBatches(lo, hi, status);
      return status;
    }
    nest(outer_, 0, lo, hi, [&] {
      stepLoop(
          lo[plan_.row], hi[plan_.row], rows_, LoopHint::kDefault,
          [&](llvm::Value *r0) {
            llvm::Value *left = b_.CreateSub(hi[plan_.row], r0);
            llvm::Value *rb = b_.CreateSelect(
                b_.CreateICmpSLT(left, idx(rows_)), left, idx(rows_));
            llvm::Value *count = computeEnd(rb);
            if (rolledCount_ > 1) {
              // Several planes sum into one output (grouped
              // convolutions): the sums start at init.
              llvm::Value *init = splat(llvm::ConstantFP::get(f32_, *op.init));
              stepLoop(idx(0), count, vw_, LoopHint::kNoVectorize,
                       [&](llvm::Value *q) {
                         b_.CreateAlignedStore(init, sumsAt(q), llvm::Align(4));
                       });
            }
            if (direct_) {
              copyPlanes(r0, rb);
              compute(rb, false, r0, &status);
              return;
            }
            nest(rolled_, 0, zero, bound, [&] {
              copyPlanes(r0, rb);
              compute(rb, rolledCount_ > 1);
            });
            compact(rb);
            if (status.ok()) {
              status = epilogue(r0, rb);
            }
          });
    });
    return status;
  }

private:
  // The tile's planes (outer loop iterations) in batches of batch_, each
  // stage over the whole batch; plane j of a batch uses scratch slot j.
  void emitBatches(llvm::ArrayRef<llvm::Value *> lo,
                   llvm::ArrayRef<llvm::Value *> hi, absl::Status &status) {
    const StructuredOp &op = root();
    // Extents of the outer loops in the tile: constants when the tile
    // divides the loop, so the plane index splits with cheap divisions.
    std::vector<llvm::Value *> extent;
    llvm::Value *total = idx(1);
    for (unsigned d : outer_) {
      int64_t tile = maxExtent(d);
      extent.push_back(op.bounds[d] % tile == 0 ? idx(tile)
                                                : b_.CreateSub(hi[d], lo[d]));
      total = b_.CreateMul(total, extent.back());
    }
    llvm::Value *r0 = lo[plan_.row];
    llvm::Value *rb = b_.CreateSub(hi[plan_.row], lo[plan_.row]);
    stepLoop(idx(0), total, batch_, LoopHint::kDefault, [&](llvm::Value *b0) {
      llvm::Value *n = smin(idx(batch_), b_.CreateSub(total, b0));
      auto stage = [&](bool setOuter, llvm::function_ref<void()> body) {
        loop(idx(0), n, [&](llvm::Value *j) {
          if (setOuter) {
            llvm::Value *linear = b_.CreateAdd(b0, j);
            for (size_t k = outer_.size(); k-- > 0;) {
              unsigned d = outer_[k];
              if (maxExtent(d) == 1) {
                ivs_[d] = lo[d];
                continue;
              }
              ivs_[d] = b_.CreateAdd(lo[d], b_.CreateURem(linear, extent[k]));
              linear = b_.CreateUDiv(linear, extent[k]);
            }
          }
          planeBase_ = at(plane_, b_.CreateMul(j, idx(phases_ * planeStride_)));
          sumsBase_ = at(sums_, b_.CreateMul(j, idx(sLen_)));
          body();
        });
      };
      stage(true, [&] { copyPlanes(r0, rb); });
      stage(true, [&] { compute(rb, false); });
      if (dense_ && sPitch_ != op.bounds[plan_.col]) {
        stage(false, [&] { compact(rb); });
      }
      stage(true, [&] {
        if (status.ok()) {
          status = epilogue(r0, rb);
        }
      });
    });
    planeBase_ = plane_;
    sumsBase_ = sums_;
  }

  // Whether the epilogue may run over flattened positions of a block: with
  // the row index at the block's first row and the column index running
  // over rows * OW positions, every address the region's ops compute must be
  // the one of the element at (row + c / OW, c % OW). That holds when each
  // tensor read or written either reads neither index or advances OW times
  // as far per row as per column, without padding (a bias per channel, a
  // residual of the output's layout). The column tile must be whole.
  bool flatEpilogue() {
    const StructuredOp &op = root();
    unsigned row = plan_.row, col = plan_.col;
    int64_t ow = op.bounds[col];
    if (maxExtent(col) != ow) {
      return false;
    }
    // (row, col) coefficients of each index of the current op's space.
    std::vector<std::pair<int64_t, int64_t>> space;
    auto linear = [&](unsigned tensor, const structured::AffineMap &map,
                      bool padded) {
      llvm::ArrayRef<int64_t> dims = p_.program.tensors[tensor].type.dims();
      if (dims.size() != map.results.size()) {
        return false;
      }
      int64_t stride = 1, perRow = 0, perCol = 0;
      for (size_t k = dims.size(); k-- > 0;) {
        const structured::AffineExpr &e = map.results[k];
        int64_t r = 0, c = 0;
        for (size_t j = 0; j < e.coeffs.size() && j < space.size(); ++j) {
          r += e.coeffs[j] * space[j].first;
          c += e.coeffs[j] * space[j].second;
        }
        if (padded && (r || c)) {
          return false;
        }
        perRow += r * stride;
        perCol += c * stride;
        stride *= dims[k];
      }
      return perRow == ow * perCol;
    };
    for (unsigned d = 0; d < op.bounds.size(); ++d) {
      space.push_back({d == row ? 1 : 0, d == col ? 1 : 0});
    }
    if (!linear(op.output.tensor, op.output.map, false)) {
      return false;
    }
    std::vector<unsigned> internal = {op.output.tensor};
    std::vector<std::pair<int64_t, int64_t>> next;
    auto advance = [&](const structured::AffineMap &map) {
      next.clear();
      for (const structured::AffineExpr &e : map.results) {
        int64_t r = 0, c = 0;
        for (size_t j = 0; j < e.coeffs.size() && j < space.size(); ++j) {
          r += e.coeffs[j] * space[j].first;
          c += e.coeffs[j] * space[j].second;
        }
        next.push_back({r, c});
      }
      space = next;
    };
    advance(op.output.map);
    for (size_t i = 1; i < r_.ops.size(); ++i) {
      const StructuredOp &f = p_.program.ops[r_.ops[i]];
      for (const structured::OperandAccess &in : f.inputs) {
        if (std::find(internal.begin(), internal.end(), in.tensor) !=
            internal.end()) {
          continue;
        }
        if (in.indirect ||
            !linear(in.tensor, in.map, in.padValue.has_value())) {
          return false;
        }
      }
      if (!linear(f.output.tensor, f.output.map, false)) {
        return false;
      }
      internal.push_back(f.output.tensor);
      advance(f.output.map);
    }
    return true;
  }

  llvm::Value *splat(llvm::Value *v) {
    return vw_ > 1 ? b_.CreateVectorSplat(vw_, v) : v;
  }
  llvm::Value *at(llvm::Value *base, llvm::Value *off) {
    return b_.CreateInBoundsGEP(f32_, base, off);
  }
  llvm::Value *planeAt(int64_t phase, llvm::Value *off) {
    return at(planeBase_, b_.CreateAdd(idx(phase * planeStride_), off));
  }
  llvm::Value *sumsAt(llvm::Value *off) { return at(sumsBase_, off); }
  // Flattened end of the computed lanes of a block of |rb| rows.
  llvm::Value *computeEnd(llvm::Value *rb) {
    llvm::Value *ow = b_.CreateSub(hi_[plan_.col], lo_[plan_.col]);
    llvm::Value *last =
        b_.CreateAdd(b_.CreateMul(b_.CreateSub(rb, idx(1)), idx(wq_)), ow);
    return b_.CreateMul(ceilDiv(last, lanes_), idx(lanes_));
  }

  // Stores |value| (a scalar) to dst[from, to).
  void fillScalars(llvm::Value *dst, llvm::Value *from, llvm::Value *to,
                   llvm::Value *value) {
    loop(from, to, [&](llvm::Value *c) {
      b_.CreateAlignedStore(value, at(dst, c), llvm::Align(4));
    });
  }

  // Stores vectors of |value| over dst[0, n) rounded up to whole vectors.
  void fillVectors(llvm::Value *dst, llvm::Value *n, llvm::Value *value) {
    llvm::Value *v = splat(value);
    stepLoop(idx(0), n, vw_, LoopHint::kNoVectorize, [&](llvm::Value *c) {
      b_.CreateAlignedStore(v, at(dst, c), llvm::Align(4));
    });
  }

  // Copies src[from, from + n) to dst[to, to + n): whole vectors in
  // increasing order, then a masked tail.
  void copySpan(llvm::Value *dst, llvm::Value *to, llvm::Value *src,
                llvm::Value *from, llvm::Value *n) {
    llvm::Value *full = b_.CreateMul(b_.CreateUDiv(n, idx(vw_)), idx(vw_));
    stepLoop(idx(0), full, vw_, LoopHint::kNoVectorize, [&](llvm::Value *c) {
      b_.CreateAlignedStore(
          b_.CreateAlignedLoad(vecTy_,
                               b_.CreateGEP(f32_, src, b_.CreateAdd(from, c)),
                               llvm::Align(4)),
          at(dst, b_.CreateAdd(to, c)), llvm::Align(4));
    });
    if (vw_ == 1) {
      return;
    }
    llvm::Value *rem = b_.CreateTrunc(b_.CreateSub(n, full), b_.getInt32Ty());
    std::vector<llvm::Constant *> steps;
    for (unsigned i = 0; i < vw_; ++i) {
      steps.push_back(b_.getInt32(i));
    }
    llvm::Value *mask = b_.CreateICmpULT(llvm::ConstantVector::get(steps),
                                         b_.CreateVectorSplat(vw_, rem));
    llvm::Value *v = b_.CreateMaskedLoad(
        vecTy_, b_.CreateGEP(f32_, src, b_.CreateAdd(from, full)),
        llvm::Align(4), mask);
    b_.CreateMaskedStore(v, at(dst, b_.CreateAdd(to, full)), llvm::Align(4),
                         mask);
  }

  // Copies the input rows of output rows [r0, r0 + rb) into the planes.
  void copyPlanes(llvm::Value *r0, llvm::Value *rb) {
    const StructuredOp &op = root();
    const structured::OperandAccess &in = op.inputs[plan_.b];
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    size_t last = dims.size() - 1;
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t k = last; k-- > 0;) {
      strides[k] = strides[k + 1] * dims[k + 1];
    }
    // Offset of the plane and whether it is inside the input (results other
    // than rows and columns read only loops set in ivs_).
    llvm::Value *base = idx(0);
    llvm::Value *inside = b_.getTrue();
    for (size_t k = 0; k < last; ++k) {
      if (k == plan_.rowResult) {
        continue;
      }
      llvm::Value *v = evalExpr(in.map.results[k]);
      base = b_.CreateAdd(base, b_.CreateMul(v, idx(strides[k])));
      if (in.padValue) {
        inside = b_.CreateAnd(inside, b_.CreateICmpULT(v, idx(dims[k])));
      }
    }
    llvm::Value *pad =
        llvm::ConstantFP::get(f32_, in.padValue ? *in.padValue : 0.0);
    int64_t height = dims[plan_.rowResult], width = dims[last];
    int64_t rowConst = in.map.results[plan_.rowResult].constant;
    // Row copies go straight into the plane without column phases, else
    // into row_ first and are split from there.
    int64_t len = sw_ * wq_;
    llvm::Value *colBase = b_.CreateAdd(b_.CreateMul(lo_[plan_.col], idx(sw_)),
                                        idx(in.map.results[last].constant));
    llvm::Value *c0 =
        smin(smax(b_.CreateSub(idx(0), colBase), idx(0)), idx(len));
    llvm::Value *c1 =
        smin(smax(b_.CreateSub(idx(width), colBase), c0), idx(len));
    // Plain (not inbounds) address arithmetic: the left padding puts the
    // row start before the tensor.
    llvm::Value *src =
        b_.CreateGEP(f32_, hooks_.base(in.tensor), b_.CreateAdd(base, colBase));
    loop(idx(0), b_.CreateAdd(rb, idx(khx_)), [&](llvm::Value *r) {
      for (int64_t rph = 0; rph < sh_; ++rph) {
        llvm::Value *inRow = b_.CreateAdd(
            b_.CreateMul(b_.CreateAdd(r0, r), idx(sh_)), idx(rph + rowConst));
        llvm::Value *ok =
            b_.CreateAnd(inside, b_.CreateICmpULT(inRow, idx(height)));
        llvm::Value *rowOff = b_.CreateMul(r, idx(wq_));
        if (vw_ > 1 && sw_ <= 2) {
          // Vector rows: masked loads (padding lanes and rows outside the
          // input read nothing) split into column phases in registers.
          llvm::Value *safeRow = b_.CreateSelect(ok, inRow, idx(0));
          llvm::Value *rowSrc = b_.CreateGEP(
              f32_, src, b_.CreateMul(safeRow, idx(strides[plan_.rowResult])));
          llvm::Value *hiCol = b_.CreateSelect(ok, c1, c0);
          auto load = [&](llvm::Value *t) {
            llvm::Type *i32 = b_.getInt32Ty();
            std::vector<llvm::Constant *> steps;
            for (unsigned i = 0; i < vw_; ++i) {
              steps.push_back(b_.getInt32(i));
            }
            llvm::Value *lanes =
                b_.CreateAdd(b_.CreateVectorSplat(vw_, b_.CreateTrunc(t, i32)),
                             llvm::ConstantVector::get(steps));
            llvm::Value *mask = b_.CreateAnd(
                b_.CreateICmpSGE(
                    lanes, b_.CreateVectorSplat(vw_, b_.CreateTrunc(c0, i32))),
                b_.CreateICmpSLT(lanes, b_.CreateVectorSplat(
                                            vw_, b_.CreateTrunc(hiCol, i32))));
            return b_.CreateMaskedLoad(vecTy_, b_.CreateGEP(f32_, rowSrc, t),
                                       llvm::Align(4), mask, splat(pad));
          };
          if (sw_ == 1) {
            stepLoop(idx(0), idx(wq_), vw_, LoopHint::kNoVectorize,
                     [&](llvm::Value *c) {
                       b_.CreateAlignedStore(
                           load(c), planeAt(rph, b_.CreateAdd(rowOff, c)),
                           llvm::Align(4));
                     });
            continue;
          }
          std::vector<int> even, odd;
          for (unsigned i = 0; i < vw_; ++i) {
            even.push_back(2 * i);
            odd.push_back(2 * i + 1);
          }
          stepLoop(
              idx(0), idx(wq_), vw_, LoopHint::kNoVectorize,
              [&](llvm::Value *c) {
                llvm::Value *t = b_.CreateMul(c, idx(2));
                llvm::Value *x0 = load(t);
                llvm::Value *x1 = load(b_.CreateAdd(t, idx(vw_)));
                llvm::Value *to = b_.CreateAdd(rowOff, c);
                b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, even),
                                      planeAt(rph * 2, to), llvm::Align(4));
                b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, odd),
                                      planeAt(rph * 2 + 1, to), llvm::Align(4));
              });
          continue;
        }
        llvm::Value *dst =
            sw_ == 1 ? planeAt(rph, rowOff) : static_cast<llvm::Value *>(row_);
        ifElse(
            ok, "dw_copy",
            [&] {
              fillScalars(dst, idx(0), c0, pad);
              copySpan(dst, c0,
                       b_.CreateGEP(f32_, src,
                                    b_.CreateMul(
                                        inRow, idx(strides[plan_.rowResult]))),
                       c0, b_.CreateSub(c1, c0));
              fillScalars(dst, c1, idx(len), pad);
            },
            "dw_pad_row", [&] { fillVectors(dst, idx(len), pad); }, "dw_row");
        if (sw_ > 1) {
          splitPhases(rph, rowOff);
        }
      }
    });
    // Vectors of the last rows read up to lanes_ elements past the rows.
    llvm::Value *end = b_.CreateMul(b_.CreateAdd(rb, idx(khx_)), idx(wq_));
    for (int64_t ph = 0; ph < phases_; ++ph) {
      for (int64_t k = 0; k < roundUp(lanes_, vw_); k += vw_) {
        b_.CreateAlignedStore(splat(llvm::ConstantFP::get(f32_, 0.0)),
                              planeAt(ph, b_.CreateAdd(end, idx(k))),
                              llvm::Align(4));
      }
    }
  }

  // Whether the region computes its input rows (structured::FusionGroup::
  // prologue) instead of copying them.
  bool prologue() const { return !r_.prologue.empty(); }

public:
  // Checks the prologue's form (see structured::fuseAndTile) and records
  // its access arithmetic; an error when this emitter cannot compute it.
  absl::Status preparePrologue() {
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
      for (const structured::OperandAccess &x :
           prog.ops[r_.prologue[i]].inputs) {
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
      for (const structured::ScalarNode &n : prog.ops[r_.prologue[i]]
                                                .body.nodes()) {
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

private:
  // The prologue's epilogue ops on |value| (of type |ty|, a vector or a
  // scalar), operands not computed by the prologue taken from |loaded| (per
  // op, per input: a scalar loaded at the span's channel).
  llvm::Value *
  prologueEpilogue(llvm::Value *value, llvm::Type *ty,
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
  void emitPrologue(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi, absl::Status &status) {
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
      llvm::Value *colBase = b_.CreateAdd(
          b_.CreateMul(lo_[plan_.col], idx(sw_)), idx(colExpr.constant));
      llvm::Value *c0 =
          smin(smax(b_.CreateSub(idx(0), colBase), idx(0)), idx(sw_ * wq_));
      shift_ = vw_ > 1 ? b_.CreateURem(
                             b_.CreateSub(idx(vw_), b_.CreateURem(c0, idx(vw_))),
                             idx(vw_))
                       : idx(0);
    }
    int64_t ow = op.bounds[plan_.col];
    stepLoop(idx(0), total, batch_, LoopHint::kDefault, [&](llvm::Value *b0) {
      llvm::Value *n = smin(idx(batch_), b_.CreateSub(total, b0));
      stepLoop(lo[plan_.row], hi[plan_.row], rows_, LoopHint::kDefault,
               [&](llvm::Value *r0) {
                 llvm::Value *rb = smin(idx(rows_),
                                        b_.CreateSub(hi[plan_.row], r0));
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
  // once per block. Slots past the batch's |n| planes repeat its last.
  void computeRows(
      llvm::Value *b0, llvm::Value *n, llvm::Value *r0, llvm::Value *rb,
      llvm::function_ref<void(llvm::Value *, llvm::Value *)> setSlot) {
    const structured::StructuredProgram &prog = p_.program;
    const StructuredOp &op = root();
    const structured::OperandAccess &in = op.inputs[plan_.b];
    const StructuredOp &e = prog.ops[r_.prologue[0]];
    llvm::ArrayRef<int64_t> dims = prog.tensors[in.tensor].type.dims();
    size_t last = dims.size() - 1;
    int64_t height = dims[plan_.rowResult], width = dims[last];
    int64_t planeSize = height * width;
    int64_t rowConst = in.map.results[plan_.rowResult].constant;
    int64_t len = sw_ * wq_;
    llvm::Value *pad =
        llvm::ConstantFP::get(f32_, in.padValue ? *in.padValue : 0.0);
    llvm::Value *colBase = b_.CreateAdd(b_.CreateMul(lo_[plan_.col], idx(sw_)),
                                        idx(in.map.results[last].constant));
    llvm::Value *c0 =
        smin(smax(b_.CreateSub(idx(0), colBase), idx(0)), idx(len));
    llvm::Value *c1 =
        smin(smax(b_.CreateSub(idx(width), colBase), c0), idx(len));
    // Per slot: plane scratch, weights, per-channel operands.
    int64_t g = batch_;
    std::vector<llvm::Value *> planes(g), rows(g), aPtrs(g);
    std::vector<std::vector<llvm::Value *>> weights(g);
    std::vector<std::vector<std::vector<llvm::Value *>>> loaded(g);
    for (int64_t j = 0; j < g; ++j) {
      setSlot(b_.CreateAdd(b0, smin(idx(j), b_.CreateSub(n, idx(1)))),
              idx(j));
      planes[j] = planeBase_;
      if (sw_ > 1) {
        rows[j] = at(row_, b_.CreateAdd(idx(j * tLen_), shift_));
      }
      // The plane's offset in the value, over whole planes: the
      // expansion's channel indices.
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
      aPtrs[j] = aPtr;
      for (int64_t step : aStep_ != 0 ? std::vector<int64_t>() : aSteps_) {
        weights[j].push_back(splat(
            b_.CreateAlignedLoad(f32_, at(aPtr, idx(step)), llvm::Align(4))));
      }
      loaded[j].resize(r_.prologue.size());
      for (size_t i = 1; i < r_.prologue.size(); ++i) {
        for (const structured::OperandAccess &x :
             prog.ops[r_.prologue[i]].inputs) {
          int producer = prog.producer(x.tensor);
          bool internal =
              producer >= 0 &&
              std::find(r_.prologue.begin(), r_.prologue.end(),
                        static_cast<unsigned>(producer)) != r_.prologue.end();
          loaded[j][i].push_back(
              internal ? nullptr
                       : hooks_.load(x, llvm::ArrayRef<llvm::Value *>(eIvs)
                                            .take_front(eRank_)));
        }
      }
    }
    llvm::Value *bBase = hooks_.base(e.inputs[eb_].tensor);
    loop(idx(0), b_.CreateAdd(rb, idx(khx_)), [&](llvm::Value *r) {
      for (int64_t rph = 0; rph < sh_; ++rph) {
        llvm::Value *inRow = b_.CreateAdd(
            b_.CreateMul(b_.CreateAdd(r0, r), idx(sh_)), idx(rph + rowConst));
        llvm::Value *ok = b_.CreateICmpULT(inRow, idx(height));
        llvm::Value *rowOff = b_.CreateMul(r, idx(wq_));
        std::vector<llvm::Value *> dst(g);
        for (int64_t j = 0; j < g; ++j) {
          planeBase_ = planes[j];
          dst[j] = sw_ == 1 ? planeAt(rph, rowOff) : rows[j];
        }
        // Rows inside the input are computed, rows in the padding filled.
        auto computeRow = [&] {
          // The expansion's plane indices at column c0 of the row.
          llvm::Value *linear = b_.CreateAdd(
              b_.CreateAdd(b_.CreateMul(inRow, idx(width)), colBase), c0);
          llvm::Value *bOff = idx(bConst_);
          for (unsigned k = eRank_; k-- > eSplit_;) {
            llvm::Value *v = b_.CreateURem(linear, idx(eDims_[k]));
            linear = b_.CreateUDiv(linear, idx(eDims_[k]));
            if (bCoef_[k] != 0) {
              bOff = b_.CreateAdd(bOff, b_.CreateMul(v, idx(bCoef_[k])));
            }
          }
          llvm::Value *bPtr = b_.CreateGEP(f32_, bBase, bOff);
          llvm::Value *count = b_.CreateSub(c1, c0);
          // |xs| vectors at column c0 + x (masked by |mask| if set).
          // (The last vector masked by |mask| if set.)
          auto dots = [&](llvm::Value *x, int64_t xs, llvm::Value *mask) {
            std::vector<std::vector<llvm::Value *>> acc(
                xs, std::vector<llvm::Value *>(g, nullptr));
            if (aStep_ != 0) {
              // The reduction as a loop: weights loaded per step (a
              // broadcast feeding |xs| FMAs) rather than hoisted out of the
              // row loop, where g * K of them spilled and were reloaded
              // for every FMA. The accumulators live in |accs| (promoted to
              // registers).
              if (!accs_) {
                llvm::BasicBlock &entry = fn_->getEntryBlock();
                llvm::IRBuilder<> eb(&entry, entry.begin());
                accs_ = eb.CreateAlloca(llvm::ArrayType::get(vecTy_, 3 * g),
                                        nullptr, "dw_prologue_acc");
              }
              auto slot = [&](int64_t u, int64_t j) {
                return b_.CreateConstInBoundsGEP2_32(accs_->getAllocatedType(),
                                                     accs_, 0, u * g + j);
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
                      llvm::Value *ptr = b_.CreateGEP(
                          f32_, bPtr,
                          b_.CreateAdd(b_.CreateAdd(x, row),
                                       idx(u * int64_t(vw_))));
                      llvm::Value *m = u + 1 == xs ? mask : nullptr;
                      v[u] = m ? static_cast<llvm::Value *>(
                                     b_.CreateMaskedLoad(vecTy_, ptr,
                                                         llvm::Align(4), m))
                                  : b_.CreateAlignedLoad(vecTy_, ptr,
                                                         llvm::Align(4));
                    }
                    for (int64_t j = 0; j < g; ++j) {
                      llvm::Value *w = splat(b_.CreateAlignedLoad(
                          f32_, at(aPtrs[j], b_.CreateMul(k, idx(aStep_))),
                          llvm::Align(4)));
                      for (int64_t u = 0; u < xs; ++u) {
                        llvm::Value *a = b_.CreateLoad(vecTy_, slot(u, j));
                        b_.CreateStore(
                            b_.CreateIntrinsic(llvm::Intrinsic::fmuladd,
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
            }
            for (size_t k = 0; k < bSteps_.size() && aStep_ == 0; ++k) {
              for (int64_t u = 0; u < xs; ++u) {
                llvm::Value *ptr = b_.CreateGEP(
                    f32_, bPtr,
                    b_.CreateAdd(x, idx(bSteps_[k] + u * int64_t(vw_))));
                llvm::Value *m = u + 1 == xs ? mask : nullptr;
                llvm::Value *v =
                    m ? static_cast<llvm::Value *>(b_.CreateMaskedLoad(
                            vecTy_, ptr, llvm::Align(4), m))
                         : b_.CreateAlignedLoad(vecTy_, ptr, llvm::Align(4));
                for (int64_t j = 0; j < g; ++j) {
                  llvm::Value *&a = acc[u][j];
                  a = a ? b_.CreateIntrinsic(llvm::Intrinsic::fmuladd,
                                             {vecTy_}, {v, weights[j][k], a})
                        : b_.CreateFMul(v, weights[j][k]);
                }
              }
            }
            for (int64_t u = 0; u < xs; ++u) {
              for (int64_t j = 0; j < g; ++j) {
                llvm::Value *v =
                    mathEpilogue_
                        ? acc[u][j]
                        : prologueEpilogue(acc[u][j], vecTy_, loaded[j]);
                llvm::Value *ptr =
                    at(dst[j], b_.CreateAdd(b_.CreateAdd(c0, x),
                                            idx(u * int64_t(vw_))));
                if (mask && u + 1 == xs) {
                  b_.CreateMaskedStore(v, ptr, llvm::Align(4), mask);
                } else {
                  b_.CreateAlignedStore(v, ptr, llvm::Align(4));
                }
              }
            }
          };
          // Pairs of vectors, then (vector targets) a rest of one to three
          // vectors, so rows of an odd number of vectors (112: 7) end in a
          // triple rather than a single vector whose loads feed half as
          // many FMAs.
          int64_t pair = 2 * vw_;
          llvm::Value *pairs =
              b_.CreateMul(b_.CreateUDiv(count, idx(pair)), idx(pair));
          if (vw_ > 1) {
            llvm::Value *over = b_.CreateSub(count, idx(3 * vw_));
            pairs = b_.CreateSelect(
                b_.CreateICmpSGT(over, idx(0)),
                b_.CreateMul(ceilDiv(over, pair), idx(pair)), idx(0));
          }
          stepLoop(idx(0), pairs, pair, LoopHint::kNoVectorize,
                   [&](llvm::Value *x) { dots(x, 2, nullptr); });
          if (vw_ == 1) {
            stepLoop(pairs, count, 1, LoopHint::kNoVectorize,
                     [&](llvm::Value *x) { dots(x, 1, nullptr); });
          } else {
            // The rest of the row (up to three vectors) as a triple or a pair
            // with its last vector masked, one vector, or one masked vector.
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
          for (int64_t j = 0; j < g; ++j) {
            if (mathEpilogue_) {
              loop(
                  c0, c1,
                  [&](llvm::Value *c) {
                    llvm::Value *ptr = at(dst[j], c);
                    llvm::Value *v =
                        b_.CreateAlignedLoad(f32_, ptr, llvm::Align(4));
                    b_.CreateAlignedStore(prologueEpilogue(v, f32_, loaded[j]),
                                          ptr, llvm::Align(4));
                  },
                  LoopHint::kNoInterleave);
            }
            fillScalars(dst[j], idx(0), c0, pad);
            fillScalars(dst[j], c1, idx(len), pad);
          }
        };
        ifElse(
            ok, "dw_prologue_row", computeRow, "dw_pad_row",
            [&] {
              for (int64_t j = 0; j < g; ++j) {
                fillVectors(dst[j], idx(len), pad);
              }
            },
            "dw_row");
        if (sw_ > 1) {
          for (int64_t j = 0; j < g; ++j) {
            planeBase_ = planes[j];
            splitPhases(rph, rowOff, rows[j]);
          }
        }
      }
    });
    // Vectors of the last rows read up to lanes_ elements past the rows.
    llvm::Value *end = b_.CreateMul(b_.CreateAdd(rb, idx(khx_)), idx(wq_));
    for (int64_t j = 0; j < g; ++j) {
      planeBase_ = planes[j];
      for (int64_t ph = 0; ph < phases_; ++ph) {
        for (int64_t k = 0; k < roundUp(lanes_, vw_); k += vw_) {
          b_.CreateAlignedStore(splat(llvm::ConstantFP::get(f32_, 0.0)),
                                planeAt(ph, b_.CreateAdd(end, idx(k))),
                                llvm::Align(4));
        }
      }
    }
  }

  // Splits row_ by column phase into plane row |rowOff| of the planes of
  // row phase |rph|: plane[rph * sw + cph][j] = row_[sw * j + cph].
  void splitPhases(int64_t rph, llvm::Value *rowOff,
                   llvm::Value *src = nullptr) {
    llvm::Value *row = src ? src : row_;
    if (vw_ > 1 && sw_ == 2) {
      std::vector<int> even, odd;
      for (unsigned i = 0; i < vw_; ++i) {
        even.push_back(2 * i);
        odd.push_back(2 * i + 1);
      }
      stepLoop(
          idx(0), idx(wq_), vw_, LoopHint::kNoVectorize, [&](llvm::Value *j) {
            llvm::Value *from = b_.CreateMul(j, idx(2));
            llvm::Value *x0 =
                b_.CreateAlignedLoad(vecTy_, at(row, from), llvm::Align(4));
            llvm::Value *x1 = b_.CreateAlignedLoad(
                vecTy_, at(row, b_.CreateAdd(from, idx(vw_))), llvm::Align(4));
            llvm::Value *to = b_.CreateAdd(rowOff, j);
            b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, even),
                                  planeAt(rph * 2, to), llvm::Align(4));
            b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, odd),
                                  planeAt(rph * 2 + 1, to), llvm::Align(4));
          });
      return;
    }
    loop(idx(0), idx(wq_), [&](llvm::Value *j) {
      for (int64_t cph = 0; cph < sw_; ++cph) {
        llvm::Value *x = b_.CreateAlignedLoad(
            f32_, at(row, b_.CreateAdd(b_.CreateMul(j, idx(sw_)), idx(cph))),
            llvm::Align(4));
        b_.CreateAlignedStore(x,
                              planeAt(rph * sw_ + cph, b_.CreateAdd(rowOff, j)),
                              llvm::Align(4));
      }
    });
  }

  // Accumulates the window of the current planes into the sums of a block
  // of |rb| output rows (adding to the sums when |accumulate|).
  // With direct_, the accumulators of output rows [r0, r0 + rb) go
  // through the epilogue instead (errors in |status|).
  void compute(llvm::Value *rb, bool accumulate, llvm::Value *r0 = nullptr,
               absl::Status *status = nullptr) {
    const StructuredOp &op = root();
    struct Tap {
      llvm::Value *weight;
      int64_t phase, offset;
    };
    std::vector<Tap> taps;
    llvm::Value *savedH = plan_.kh ? ivs_[*plan_.kh] : nullptr;
    llvm::Value *savedW = plan_.kw ? ivs_[*plan_.kw] : nullptr;
    for (int64_t kh = 0; kh < kh_; ++kh) {
      for (int64_t kw = 0; kw < kw_; ++kw) {
        if (plan_.kh) {
          ivs_[*plan_.kh] = idx(kh);
        }
        if (plan_.kw) {
          ivs_[*plan_.kw] = idx(kw);
        }
        int64_t r = kh * dh_, c = kw * dw_;
        taps.push_back({splat(hooks_.load(op.inputs[plan_.a], ivs_)),
                        (r % sh_) * sw_ + c % sw_, (r / sh_) * wq_ + c / sw_});
      }
    }
    if (plan_.kh) {
      ivs_[*plan_.kh] = savedH;
    }
    if (plan_.kw) {
      ivs_[*plan_.kw] = savedW;
    }
    llvm::Value *init = splat(llvm::ConstantFP::get(f32_, *op.init));
    llvm::Value *ow = b_.CreateSub(hi_[plan_.col], lo_[plan_.col]);
    llvm::Value *segments = flat_ ? idx(1) : rb;
    llvm::Value *segment =
        flat_ ? computeEnd(rb) : b_.CreateMul(ceilDiv(ow, lanes_), idx(lanes_));
    stepLoop(idx(0), segments, v_, LoopHint::kDefault, [&](llvm::Value *s) {
      llvm::Value *start = b_.CreateMul(s, idx(wq_));
      llvm::Value *sums = b_.CreateSub(b_.CreateMul(s, idx(sPitch_)), start);
      stepLoop(
          start, b_.CreateAdd(start, segment), lanes_, LoopHint::kNoVectorize,
          [&](llvm::Value *q) {
            for (int64_t k = 0; k < v_ * u_; ++k) {
              // Row v of the iteration, vector u of the row; loads of
              // equal offsets from q fold into one.
              int64_t v = k / u_, u = k % u_;
              llvm::Value *pos = b_.CreateAdd(q, idx(u * vw_));
              llvm::Value *sumsPos =
                  b_.CreateAdd(b_.CreateAdd(sums, pos), idx(v * sPitch_));
              llvm::Value *acc =
                  accumulate ? b_.CreateAlignedLoad(vecTy_, sumsAt(sumsPos),
                                                    llvm::Align(4))
                             : init;
              // A zero init starts from the first product (the scalar
              // FPUs would add the zero).
              bool first = !accumulate && *op.init == 0.0;
              for (const Tap &t : taps) {
                llvm::Value *x = b_.CreateAlignedLoad(
                    vecTy_,
                    planeAt(t.phase,
                            b_.CreateAdd(q, idx(u * vw_ + v * wq_ + t.offset))),
                    llvm::Align(4));
                acc = first ? b_.CreateFMul(x, t.weight)
                            : b_.CreateIntrinsic(llvm::Intrinsic::fmuladd,
                                                 {vecTy_}, {x, t.weight, acc});
                first = false;
              }
              if (status) {
                ivs_[plan_.row] = b_.CreateAdd(r0, s);
                ivs_[plan_.col] =
                    b_.CreateAdd(lo_[plan_.col],
                                 b_.CreateAdd(b_.CreateSub(q, start), idx(u)));
                if (status->ok()) {
                  *status = hooks_.finish(acc, ivs_);
                }
                continue;
              }
              b_.CreateAlignedStore(acc, sumsAt(sumsPos), llvm::Align(4));
            }
          });
    });
  }

  // For a dense epilogue of flattened sums: drops the junk columns in place
  // (each row moves down, so forward copies read before they overwrite).
  void compact(llvm::Value *rb) {
    int64_t ow = root().bounds[plan_.col];
    if (!dense_ || sPitch_ == ow) {
      return;
    }
    loop(idx(1), rb, [&](llvm::Value *i) {
      copySpan(sumsBase_, b_.CreateMul(i, idx(ow)), sumsBase_,
               b_.CreateMul(i, idx(sPitch_)), idx(ow));
    });
  }

  // Applies the fused ops to the sums of output rows [r0, r0 + rb) and
  // stores them: over all rb * OW positions at once when dense_, else row by
  // row.
  absl::Status epilogue(llvm::Value *r0, llvm::Value *rb) {
    absl::Status status = absl::OkStatus();
    unsigned col = plan_.col;
    auto finish = [&](llvm::Value *c, llvm::Value *sumsPos) {
      ivs_[col] = c;
      llvm::Value *v =
          b_.CreateAlignedLoad(f32_, sumsAt(sumsPos), llvm::Align(4));
      if (status.ok()) {
        status = hooks_.finish(v, ivs_);
      }
    };
    if (dense_) {
      int64_t ow = root().bounds[col];
      ivs_[plan_.row] = r0;
      loop(
          idx(0), b_.CreateMul(rb, idx(ow)),
          [&](llvm::Value *c) { finish(c, c); }, LoopHint::kNoInterleave);
    } else {
      loop(idx(0), rb, [&](llvm::Value *i) {
        ivs_[plan_.row] = b_.CreateAdd(r0, i);
        llvm::Value *rowBase =
            b_.CreateSub(b_.CreateMul(i, idx(sPitch_)), lo_[col]);
        loop(
            lo_[col], hi_[col],
            [&](llvm::Value *c) { finish(c, b_.CreateAdd(rowBase, c)); },
            LoopHint::kNoInterleave);
      });
    }
    ivs_[col] = lo_[col];
    ivs_[plan_.row] = lo_[plan_.row];
    return status;
  }

  const RowConvPlan &plan_;
  const DepthwiseOptions &options_;
  // Prologue (see preparePrologue()): rank and dims of its value, the
  // matrix product's A and B operands as linear offsets (constant +
  // coefficient per loop) and their offsets per reduction step.
  unsigned eRank_ = 0, eSplit_ = 0, ea_ = 0, eb_ = 0;
  // Offsets per reduction step when A's and B's are linear in the step
  // (a reduction loop, see computeRows), else 0.
  int64_t aStep_ = 0, bStep_ = 0;
  llvm::AllocaInst *accs_ = nullptr;
  // The prologue's epilogue has exp, tanh or sigmoid.
  bool mathEpilogue_ = false;
  // Elements the prologue's planes or row buffers are shifted by.
  llvm::Value *shift_ = nullptr;
  std::vector<int64_t> eDims_, aCoef_, bCoef_, aSteps_, bSteps_;
  int64_t aConst_ = 0, bConst_ = 0;
  unsigned vw_ = 1;
  int64_t u_ = 1, lanes_ = 1;
  // Output rows per iteration of the row-by-row vector loop.
  int64_t v_ = 1;
  int64_t sw_ = 1, sh_ = 1, kw_ = 1, kh_ = 1, dw_ = 0, dh_ = 0;
  int64_t phases_ = 1, wq_ = 0, khx_ = 0, rows_ = 1;
  int64_t planeStride_ = 0, tLen_ = 0, sLen_ = 0, sPitch_ = 0;
  // Computed in flattened plane coordinates (else row by row); epilogue
  // over flattened output positions (see flatEpilogue()).
  bool flat_ = false, dense_ = false, direct_ = false;
  llvm::Type *f32_ = nullptr, *vecTy_ = nullptr;
  std::vector<llvm::Value *> lo_, hi_;
  llvm::AllocaInst *plane_ = nullptr, *sums_ = nullptr, *row_ = nullptr;
  // Scratch of the current plane (a slot of plane_ and sums_ in batches).
  llvm::Value *planeBase_ = nullptr, *sumsBase_ = nullptr;
  std::vector<unsigned> outer_, rolled_; // plane loops, summed plane loops
  int64_t rolledCount_ = 1, batch_ = 1;
};

} // namespace

absl::StatusOr<bool> emitDepthwiseConv(const dispatch::DispatchProgram &program,
                                       const dispatch::DispatchRegion &region,
                                       llvm::IRBuilder<> &builder,
                                       llvm::Function *fn,
                                       llvm::ArrayRef<llvm::Value *> lo,
                                       llvm::ArrayRef<llvm::Value *> hi,
                                       const TileHooks &hooks,
                                       const CodegenOptions &options) {
  const StructuredOp &root = program.program.ops[region.ops[0]];
  if (!allF32(program, root)) {
    if (!region.prologue.empty()) {
      return absl::UnimplementedError(
          "node '" + root.nodeName +
          "': a non-f32 depthwise convolution with a prologue is not "
          "implemented");
    }
    return false;
  }
  std::optional<structured::RowConvPlan> plan =
      structured::planRowConv(program.program, root);
  if (!plan) {
    if (!region.prologue.empty()) {
      return absl::UnimplementedError(
          "node '" + root.nodeName +
          "': a prologue on a root that is not a depthwise convolution is "
          "not implemented");
    }
    return false;
  }
  llvm::StringRef features;
  if (auto *md = llvm::dyn_cast_or_null<llvm::MDString>(
          fn->getParent()->getModuleFlag(kTargetFeaturesFlag))) {
    features = md->getString();
  }
  unsigned width =
      gemmKernelShape(fn->getParent()->getTargetTriple(), features).vectorWidth;
  const DepthwiseOptions &tuning = options.depthwise;
  if (tuning.vectorWidth != 0) {
    width = tuning.vectorWidth;
  }
  // Vector targets keep the scratch within L1 (48 KiB on the reference
  // machine) beside the streamed rows; scalar targets have 16 KiB of stack.
  uint64_t maxScratch = width > 1 ? 32 * 1024 : 8 * 1024;
  if (width > 1 && !region.prologue.empty()) {
    // A prologue computes the rows of several planes per block, and each
    // block recomputes the rows its window shares with the next: larger
    // blocks than the copy's, the planes half in L2.
    maxScratch =
        tuning.prologueMaxScratch ? tuning.prologueMaxScratch : 128 * 1024;
  }
  if (tuning.maxScratch != 0) {
    maxScratch = tuning.maxScratch;
  }
  DepthwiseConvEmitter emitter(program, region, builder, fn, *plan, hooks,
                               tuning);
  if (!region.prologue.empty()) {
    // Nothing else computes a prologue: declining would lose it.
    if (absl::Status s = emitter.preparePrologue(); !s.ok()) {
      return s;
    }
    if (!emitter.size(width, maxScratch)) {
      return absl::UnimplementedError(
          "node '" + root.nodeName +
          "': a depthwise convolution with a prologue whose rows do not fit "
          "the scratch budget is not implemented");
    }
  } else if (!emitter.size(width, maxScratch)) {
    return false;
  }
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
