// Shared base of the code generators that emit a dispatch region's root
// tile themselves (packed matrix products, depthwise convolutions): loops,
// affine index arithmetic and the split of a padded row into a checked
// border and an unchecked interior.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_TILE_EMITTER_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_TILE_EMITTER_H_

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/codegen_options.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

namespace osprey::compiler::llvm_cpu {

// Marks the loop whose latch branch is |latch| with loop metadata
// properties |properties| (each an MDNode such as !{"llvm.loop.unroll.disable"}).
inline void setLoopProperties(llvm::Instruction *latch,
                              llvm::ArrayRef<llvm::Metadata *> properties) {
  llvm::SmallVector<llvm::Metadata *, 4> ops = {nullptr};
  ops.append(properties.begin(), properties.end());
  llvm::MDNode *id = llvm::MDNode::getDistinct(latch->getContext(), ops);
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
}

// What the tile emitters (packed_gemm.h, depthwise_conv.h) need from the region
// emitter. The callbacks emit at the builder's insertion point and may be
// called many times.
struct TileHooks {
  // Base pointer of tensor |tensor| (a binding or an embedded constant).
  std::function<llvm::Value *(unsigned tensor)> base;
  // Loads root input |in| at root loop indices |ivs|, padding applied.
  std::function<llvm::Value *(const structured::OperandAccess &in,
                              llvm::ArrayRef<llvm::Value *> ivs)>
      load;
  // Applies the region's fused ops to the root's value |value| at root loop
  // indices |ivs| and stores the region's result.
  std::function<absl::Status(llvm::Value *value,
                             llvm::ArrayRef<llvm::Value *> ivs)>
      finish;
};

// A tile emitter's entry point: if it handles the region's root, emits the
// workgroup's tile (loop ranges [lo[d], hi[d]) per root loop) at the
// builder's insertion point inside |fn|, epilogue included, and returns true;
// otherwise returns false and emits nothing. |options| tunes the emitters.
// Errors come from |hooks|.
using TileEmitterFn = absl::StatusOr<bool> (*)(
    const dispatch::DispatchProgram &program,
    const dispatch::DispatchRegion &region, llvm::IRBuilder<> &builder,
    llvm::Function *fn, llvm::ArrayRef<llvm::Value *> lo,
    llvm::ArrayRef<llvm::Value *> hi, const TileHooks &hooks,
    const CodegenOptions &options);

// Loop, index and row-split helpers shared by the tile emitters; they emit at
// the builder's insertion point inside |fn| with loop indices ivs_.
class TileEmitter {
public:
  TileEmitter(const dispatch::DispatchProgram &p,
              const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
              llvm::Function *fn, const TileHooks &hooks)
      : p_(p), r_(r), b_(b), fn_(fn), m_(*fn->getParent()),
        ctx_(fn->getContext()), hooks_(hooks) {
    idxTy_ = m_.getDataLayout().getIntPtrType(ctx_);
  }

  const structured::StructuredOp &root() const {
    return p_.program.ops[r_.ops[0]];
  }

  // Largest extent of root loop |d| in one workgroup.
  int64_t maxExtent(unsigned d) const {
    int64_t bound = root().bounds[d];
    bool tiled = std::find(r_.tiledLoops.begin(), r_.tiledLoops.end(), d) !=
                 r_.tiledLoops.end();
    if (tiled && d < r_.tileSizes.size() && r_.tileSizes[d] > 0) {
      return std::min(bound, r_.tileSizes[d]);
    }
    return bound;
  }

protected:
  llvm::Value *idx(int64_t v) { return llvm::ConstantInt::get(idxTy_, v); }

  llvm::Value *evalExpr(const structured::AffineExpr &e) {
    llvm::Value *v = idx(e.constant);
    for (unsigned d = 0; d < e.coeffs.size(); ++d) {
      if (e.coeffs[d] != 0) {
        v = b_.CreateAdd(
            v, b_.CreateMul(ivs_[d], idx(e.coeffs[d]), "", false, true), "",
            false, true);
      }
    }
    return v;
  }

  // What the loop vectorizer may do with a loop.
  enum class LoopHint {
    kDefault,
    // One vector per iteration, remainder folded into masked iterations:
    // rows of 28-56 elements would otherwise run mostly in the scalar
    // remainder of a 4x interleaved loop.
    kNoInterleave,
    // Left alone: the body is vector code already.
    kNoVectorize,
  };

  // for (iv = lo; iv < hi; iv += step) body(iv).
  void stepLoop(llvm::Value *lo, llvm::Value *hi, int64_t step, LoopHint hint,
                llvm::function_ref<void(llvm::Value *)> body) {
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "tile_loop", fn_);
    llvm::BasicBlock *bodyBlock =
        llvm::BasicBlock::Create(ctx_, "tile_body", fn_);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "tile_exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *iv = b_.CreatePHI(idxTy_, 2);
    iv->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), bodyBlock, exit);
    b_.SetInsertPoint(bodyBlock);
    body(iv);
    iv->addIncoming(b_.CreateAdd(iv, idx(step), "", true, true),
                    b_.GetInsertBlock());
    llvm::BranchInst *latch = b_.CreateBr(header);
    llvm::SmallVector<llvm::Metadata *, 3> ops = {nullptr};
    auto property = [&](const char *name, llvm::Constant *value) {
      llvm::Metadata *kv[] = {llvm::MDString::get(ctx_, name),
                              llvm::ConstantAsMetadata::get(value)};
      ops.push_back(llvm::MDNode::get(ctx_, kv));
    };
    if (hint == LoopHint::kNoInterleave) {
      property("llvm.loop.interleave.count", b_.getInt32(1));
      property("llvm.loop.vectorize.predicate.enable", b_.getTrue());
    } else if (hint == LoopHint::kNoVectorize) {
      property("llvm.loop.vectorize.enable", b_.getFalse());
    }
    if (ops.size() > 1) {
      setLoopProperties(latch, llvm::ArrayRef(ops).drop_front());
    }
    b_.SetInsertPoint(exit);
  }

  // for (iv = lo; iv < hi; ++iv) body(iv).
  void loop(llvm::Value *lo, llvm::Value *hi,
            llvm::function_ref<void(llvm::Value *)> body,
            LoopHint hint = LoopHint::kDefault) {
    stepLoop(lo, hi, 1, hint, body);
  }

  // if (cond) then() else otherwise(), in blocks named |thenName| and
  // |elseName| that both branch to a block named |joinName|, where the
  // insertion point is left.
  void ifElse(llvm::Value *cond, const char *thenName,
              llvm::function_ref<void()> then, const char *elseName,
              llvm::function_ref<void()> otherwise, const char *joinName) {
    llvm::BasicBlock *thenBlock = llvm::BasicBlock::Create(ctx_, thenName, fn_);
    llvm::BasicBlock *elseBlock = llvm::BasicBlock::Create(ctx_, elseName, fn_);
    llvm::BasicBlock *join = llvm::BasicBlock::Create(ctx_, joinName, fn_);
    b_.CreateCondBr(cond, thenBlock, elseBlock);
    b_.SetInsertPoint(thenBlock);
    then();
    b_.CreateBr(join);
    b_.SetInsertPoint(elseBlock);
    otherwise();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  // Loops over root loops dims[i..] (outermost first) within [lo, hi),
  // setting ivs_, with |inner| innermost.
  void nest(llvm::ArrayRef<unsigned> dims, size_t i,
            llvm::ArrayRef<llvm::Value *> lo, llvm::ArrayRef<llvm::Value *> hi,
            llvm::function_ref<void()> inner) {
    if (i == dims.size()) {
      inner();
      return;
    }
    unsigned d = dims[i];
    loop(lo[d], hi[d], [&](llvm::Value *iv) {
      ivs_[d] = iv;
      nest(dims, i + 1, lo, hi, inner);
    });
  }

  llvm::Value *smin(llvm::Value *x, llvm::Value *y) {
    return b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y);
  }
  llvm::Value *smax(llvm::Value *x, llvm::Value *y) {
    return b_.CreateSelect(b_.CreateICmpSGT(x, y), x, y);
  }
  // ceil(x / m) for x >= 0.
  llvm::Value *ceilDiv(llvm::Value *x, int64_t m) {
    return b_.CreateUDiv(b_.CreateAdd(x, idx(m - 1)), idx(m));
  }

  // Reads of |in| along loop |d| over [lo, hi) with the other loop indices
  // fixed: the linear element offset is base + step * iv, and reads with iv
  // in [first, last) are inside the tensor (no padding check needed).
  struct RowSplit {
    llvm::Value *base, *first, *last;
    int64_t step;
  };
  RowSplit splitRow(const structured::OperandAccess &in, unsigned d,
                    llvm::Value *lo, llvm::Value *hi) {
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    llvm::Value *saved = ivs_[d];
    ivs_[d] = idx(0);
    llvm::Value *base = idx(0);
    int64_t stride = 1, step = 0;
    llvm::Value *first = lo, *last = hi;
    llvm::Value *inside = nullptr;
    for (size_t k = dims.size(); k-- > 0;) {
      const structured::AffineExpr &e = in.map.results[k];
      llvm::Value *v = evalExpr(e);
      base = b_.CreateAdd(base, b_.CreateMul(v, idx(stride)));
      int64_t c = e.coeffs[d];
      step += c * stride;
      stride *= dims[k];
      if (!in.padValue) {
        continue;
      }
      if (c == 0) {
        llvm::Value *ok = b_.CreateICmpULT(v, idx(dims[k]));
        inside = inside ? b_.CreateAnd(inside, ok) : ok;
        continue;
      }
      if (c < 0) {
        // Reversed windows are rare: the whole row takes the checked path.
        inside = b_.getFalse();
        continue;
      }
      // v + c * iv in [0, dims[k]) for iv in [first, last).
      llvm::Value *neg = b_.CreateSub(idx(0), v);
      neg = b_.CreateSelect(b_.CreateICmpSGT(neg, idx(0)), neg, idx(0));
      llvm::Value *from = b_.CreateUDiv(b_.CreateAdd(neg, idx(c - 1)), idx(c));
      llvm::Value *top = b_.CreateSub(idx(dims[k] - 1), v);
      llvm::Value *to =
          b_.CreateSelect(b_.CreateICmpSLT(top, idx(0)), idx(0),
                          b_.CreateAdd(b_.CreateUDiv(top, idx(c)), idx(1)));
      first = b_.CreateSelect(b_.CreateICmpSGT(from, first), from, first);
      last = b_.CreateSelect(b_.CreateICmpSLT(to, last), to, last);
    }
    if (inside) {
      first = b_.CreateSelect(inside, first, lo);
      last = b_.CreateSelect(inside, last, lo);
    }
    first = b_.CreateSelect(b_.CreateICmpSLT(first, hi), first, hi);
    last = b_.CreateSelect(b_.CreateICmpSLT(last, first), first, last);
    ivs_[d] = saved;
    return {base, first, last, step};
  }

  // The element (of type |type|, f32 by default) at offset
  // base + step * iv of |in|, read without checks.
  llvm::Value *loadAt(const structured::OperandAccess &in,
                      const RowSplit &split, llvm::Value *iv,
                      llvm::Type *type = nullptr) {
    type = type ? type : b_.getFloatTy();
    llvm::Value *off = b_.CreateAdd(
        split.base, b_.CreateMul(iv, idx(split.step), "", false, true), "",
        false, true);
    return b_.CreateLoad(
        type, b_.CreateInBoundsGEP(type, hooks_.base(in.tensor), off));
  }

  const dispatch::DispatchProgram &p_;
  const dispatch::DispatchRegion &r_;
  llvm::IRBuilder<> &b_;
  llvm::Function *fn_;
  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  const TileHooks &hooks_;
  llvm::Type *idxTy_;
  std::vector<llvm::Value *> ivs_;
};

// Whether |op|'s output and inputs are all f32.
inline bool allF32(const dispatch::DispatchProgram &program,
                   const structured::StructuredOp &op) {
  auto f32 = [&](unsigned t) {
    return program.program.tensors[t].type.elementType() ==
           graph::ElementType::F32;
  };
  bool ok = f32(op.output.tensor);
  for (const structured::OperandAccess &in : op.inputs) {
    ok &= f32(in.tensor);
  }
  return ok;
}

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_TILE_EMITTER_H_
