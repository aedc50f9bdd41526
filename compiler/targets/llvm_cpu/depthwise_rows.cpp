// Window sums of a block of output rows over the scratch planes, and the
// epilogue applying the region's fused ops to them.
#include "compiler/targets/llvm_cpu/depthwise_emitter.h"

#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {

using structured::StructuredOp;

// Flattened end of the computed lanes of a block of |rb| rows.
llvm::Value *DepthwiseConvEmitter::computeEnd(llvm::Value *rb) {
  llvm::Value *ow = b_.CreateSub(hi_[plan_.col], lo_[plan_.col]);
  llvm::Value *last =
      b_.CreateAdd(b_.CreateMul(b_.CreateSub(rb, idx(1)), idx(wq_)), ow);
  return b_.CreateMul(ceilDiv(last, lanes_), idx(lanes_));
}

// Accumulates the window of the current planes into the sums of a block
// of |rb| output rows (adding to the sums when |accumulate|).
// With direct_, the accumulators of output rows [r0, r0 + rb) go
// through the epilogue instead (errors in |status|).
void DepthwiseConvEmitter::compute(llvm::Value *rb, bool accumulate,
                                   llvm::Value *r0, absl::Status *status) {
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
      taps.push_back({splat(widen(hooks_.load(op.inputs[plan_.a], ivs_))),
                      (r % sh_) * sw_ + c % sw_, (r / sh_) * wq_ + c / sw_});
    }
  }
  if (plan_.kh) {
    ivs_[*plan_.kh] = savedH;
  }
  if (plan_.kw) {
    ivs_[*plan_.kw] = savedW;
  }
  llvm::Value *init = splat(constant(*op.init));
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
              acc = multiplyAdd(x, t.weight, first ? nullptr : acc);
              first = false;
            }
            if (status) {
              ivs_[plan_.row] = b_.CreateAdd(r0, s);
              ivs_[plan_.col] = b_.CreateAdd(
                  lo_[plan_.col], b_.CreateAdd(b_.CreateSub(q, start), idx(u)));
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
void DepthwiseConvEmitter::compact(llvm::Value *rb) {
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
absl::Status DepthwiseConvEmitter::epilogue(llvm::Value *r0, llvm::Value *rb) {
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

} // namespace osprey::compiler::llvm_cpu
