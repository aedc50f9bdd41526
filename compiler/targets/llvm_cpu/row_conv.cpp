// Row-by-row depthwise convolutions.
#include "compiler/targets/llvm_cpu/row_conv.h"

#include "compiler/structured/fusion.h"
#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using structured::StructuredOp;

// A convolution without a matrix-product form (depthwise) row by row:
//   acc[0..W) = init
//   for each reduction step: w = A(step); acc[i] += w * B(step, i)
//   epilogue per element
// with each row of B split into a checked border and an unchecked strided
// interior, so the interior loop vectorizes with plain (or interleaved)
// loads.
class RowConvEmitter : public TileEmitter {
public:
  RowConvEmitter(const dispatch::DispatchProgram &p,
                 const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                 llvm::Function *fn, const structured::RowConvPlan &plan,
                 const TileHooks &hooks)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan) {}

  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi) {
    const StructuredOp &op = root();
    llvm::Type *f32 = b_.getFloatTy();
    unsigned d = plan_.inner;
    acc_ = b_.CreateAlloca(llvm::ArrayType::get(f32, maxExtent(d)), nullptr,
                           "acc_row");
    acc_->setAlignment(llvm::Align(64));
    ivs_.assign(lo.begin(), lo.end());
    std::vector<unsigned> outer, reduction;
    for (unsigned i = 0; i < op.bounds.size(); ++i) {
      if (op.iterators[i] != structured::IteratorType::Parallel) {
        reduction.push_back(i);
      } else if (i != d) {
        outer.push_back(i);
      }
    }
    auto slot = [&](llvm::Value *iv) {
      return b_.CreateInBoundsGEP(f32, acc_, b_.CreateSub(iv, lo[d]));
    };
    absl::Status status = absl::OkStatus();
    nest(outer, 0, lo, hi, [&] {
      loop(lo[d], hi[d], [&](llvm::Value *iv) {
        b_.CreateStore(llvm::ConstantFP::get(f32, *op.init), slot(iv));
      });
      std::vector<llvm::Value *> zero(op.bounds.size(), idx(0));
      std::vector<llvm::Value *> bound;
      for (int64_t v : op.bounds) {
        bound.push_back(idx(v));
      }
      // The innermost reduction loops (kh, kw) are unrolled into the row
      // pass while their taps number at most kMaxTaps: one accumulator load
      // and store per output for all taps, over the intersection of the
      // taps' interiors (a row next to the top or bottom padding runs
      // through the checked loads).
      const structured::OperandAccess &in = op.inputs[plan_.b];
      std::vector<unsigned> rolled = reduction, unrolled;
      int64_t taps = 1;
      while (!rolled.empty() &&
             taps * std::max<int64_t>(1, op.bounds[rolled.back()]) <=
                 kMaxTaps) {
        taps *= std::max<int64_t>(1, op.bounds[rolled.back()]);
        unrolled.insert(unrolled.begin(), rolled.back());
        rolled.pop_back();
      }
      // Sets the unrolled loops' indices to tap |t| (last loop fastest).
      auto setTap = [&](int64_t t) {
        for (size_t i = unrolled.size(); i-- > 0;) {
          int64_t bound = std::max<int64_t>(1, op.bounds[unrolled[i]]);
          ivs_[unrolled[i]] = idx(t % bound);
          t /= bound;
        }
      };
      nest(rolled, 0, zero, bound, [&] {
        ivs_[d] = lo[d];
        std::vector<llvm::Value *> w;
        std::vector<RowSplit> split;
        llvm::Value *first = lo[d], *last = hi[d];
        for (int64_t t = 0; t < taps; ++t) {
          setTap(t);
          w.push_back(hooks_.load(op.inputs[plan_.a], ivs_));
          split.push_back(splitRow(in, d, lo[d], hi[d]));
          first = b_.CreateSelect(b_.CreateICmpSGT(split.back().first, first),
                                  split.back().first, first);
          last = b_.CreateSelect(b_.CreateICmpSLT(split.back().last, last),
                                 split.back().last, last);
        }
        last = b_.CreateSelect(b_.CreateICmpSLT(last, first), first, last);
        auto accumulate = [&](llvm::Value *iv,
                              llvm::function_ref<llvm::Value *(int64_t)> x) {
          llvm::Value *at = slot(iv);
          llvm::Value *sum = b_.CreateLoad(f32, at);
          for (int64_t t = 0; t < taps; ++t) {
            sum = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32},
                                     {x(t), w[t], sum});
          }
          b_.CreateStore(sum, at);
        };
        auto checked = [&](llvm::Value *iv) {
          ivs_[d] = iv;
          accumulate(iv, [&](int64_t t) {
            setTap(t);
            return hooks_.load(in, ivs_);
          });
        };
        loop(lo[d], first, checked);
        loop(
            first, last,
            [&](llvm::Value *iv) {
              accumulate(iv,
                         [&](int64_t t) { return loadAt(in, split[t], iv); });
            },
            /*noInterleave=*/true);
        loop(last, hi[d], checked);
        ivs_[d] = lo[d];
        setTap(0);
      });
      loop(lo[d], hi[d], [&](llvm::Value *iv) {
        ivs_[d] = iv;
        if (status.ok()) {
          status = hooks_.finish(b_.CreateLoad(f32, slot(iv)), ivs_);
        }
      });
      ivs_[d] = lo[d];
    });
    return status;
  }

private:
  void nest(llvm::ArrayRef<unsigned> dims, size_t i,
            llvm::ArrayRef<llvm::Value *> lo, llvm::ArrayRef<llvm::Value *> hi,
            llvm::function_ref<void()> inner) {
    if (i == dims.size()) {
      inner();
      return;
    }
    unsigned d = dims[i];
    llvm::Value *saved = ivs_[d];
    loop(lo[d], hi[d], [&](llvm::Value *iv) {
      ivs_[d] = iv;
      nest(dims, i + 1, lo, hi, inner);
    });
    ivs_[d] = saved;
  }

  // Most reduction taps unrolled into one row pass (a 3x3 window).
  static constexpr int64_t kMaxTaps = 9;
  const structured::RowConvPlan &plan_;
  llvm::AllocaInst *acc_ = nullptr;
};

} // namespace

absl::StatusOr<bool> emitRowConv(const dispatch::DispatchProgram &program,
                                 const dispatch::DispatchRegion &region,
                                 llvm::IRBuilder<> &builder, llvm::Function *fn,
                                 llvm::ArrayRef<llvm::Value *> lo,
                                 llvm::ArrayRef<llvm::Value *> hi,
                                 const TileHooks &hooks) {
  const StructuredOp &root = program.program.ops[region.ops[0]];
  if (!allF32(program, root)) {
    return false;
  }
  std::optional<structured::RowConvPlan> plan =
      structured::planRowConv(program.program, root);
  if (!plan || root.bounds[plan->inner] <= 0) {
    return false;
  }
  RowConvEmitter emitter(program, region, builder, fn, *plan, hooks);
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
