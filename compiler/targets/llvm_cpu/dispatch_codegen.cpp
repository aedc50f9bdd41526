// Dispatch region → LLVM function with the fixed dispatch ABI.
#include "compiler/targets/llvm_cpu/dispatch_codegen.h"

#include <algorithm>
#include <functional>
#include <map>

#include "compiler/graph/status.h"
#include "compiler/targets/llvm_cpu/math.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {

using dispatch::DispatchProgram;
using dispatch::DispatchRegion;
using structured::AffineExpr;
using structured::OperandAccess;
using structured::ScalarKind;
using structured::StructuredOp;

AbiTypes::AbiTypes(llvm::Module &m) {
  llvm::LLVMContext &c = m.getContext();
  llvm::Type *i16 = llvm::Type::getInt16Ty(c);
  llvm::Type *i32 = llvm::Type::getInt32Ty(c);
  llvm::Type *i64 = llvm::Type::getInt64Ty(c);
  llvm::Type *ptr = llvm::PointerType::get(c, 0);
  dispatchState = llvm::StructType::get(
      c, {i32, i32, i32, i32, i32, i32, i32, i32, ptr, i32, ptr, ptr});
  workgroupState = llvm::StructType::get(c, {i32, i32, i32, i32, ptr, i32});
  dispatchAttrs = llvm::StructType::get(
      c, {i16, i16, i64, i32, llvm::ArrayType::get(i32, 3)});
  header = llvm::StructType::get(c, {i32, ptr});
  library = llvm::StructType::get(
      c, {ptr, llvm::StructType::get(c, {i32, ptr}),
          llvm::StructType::get(c, {i32, ptr, ptr, ptr})});
  dispatchFn = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
}

namespace {

// Field indices in osprey_dispatch_state_v1_t / osprey_workgroup_state_v1_t.
constexpr unsigned kBindingPtrsField = 10;

class RegionEmitter {
public:
  RegionEmitter(const DispatchProgram &p, const DispatchRegion &r,
                llvm::Module &m)
      : p_(p), r_(r), m_(m), ctx_(m.getContext()), b_(ctx_), abi_(m) {
    idxTy_ = m.getDataLayout().getIntPtrType(ctx_);
  }

  absl::StatusOr<llvm::Function *> emit() {
    COMPILER_RETURN_IF_ERROR(check());
    const StructuredOp &root = op(0);
    fn_ = llvm::Function::Create(abi_.dispatchFn,
                                 llvm::GlobalValue::InternalLinkage, r_.name,
                                 m_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    fn_->addFnAttr("no-builtins");
    llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    llvm::Value *state = fn_->getArg(1);
    llvm::Value *wg = fn_->getArg(2);
    llvm::Value *ptrs = b_.CreateLoad(
        b_.getPtrTy(),
        b_.CreateStructGEP(abi_.dispatchState, state, kBindingPtrsField),
        "binding_ptrs");
    for (unsigned i = 0; i < r_.bindings.size(); ++i) {
      llvm::Value *slot = b_.CreateConstInBoundsGEP1_32(b_.getPtrTy(), ptrs, i);
      bindings_[r_.bindings[i].tensor] = b_.CreateLoad(
          b_.getPtrTy(), slot, "binding" + std::to_string(i));
    }
    // Constants bound by memory planning are read through their binding
    // (module rodata, zero-copy); only the others are embedded.
    for (unsigned c : r_.constants) {
      if (!bindings_.count(c)) {
        bindings_[c] = constantGlobal(p_.storageOf(c));
      }
    }
    if (root.hasReduction()) {
      acc_ = b_.CreateAlloca(b_.getFloatTy(), nullptr, "acc");
    }
    // Tile origin of this workgroup per root loop.
    size_t n = root.bounds.size();
    std::vector<llvm::Value *> lo(n, idx(0)), hi(n);
    for (size_t d = 0; d < n; ++d) {
      hi[d] = idx(root.bounds[d]);
    }
    llvm::Value *zRest = nullptr;
    for (size_t k = 0; k < r_.tiledLoops.size(); ++k) {
      unsigned d = r_.tiledLoops[k];
      int64_t tile = r_.tileSizes[d];
      int64_t count = std::max<int64_t>(1, (root.bounds[d] + tile - 1) / tile);
      llvm::Value *id;
      if (k < 2) {
        id = b_.CreateZExt(
            b_.CreateLoad(b_.getInt32Ty(),
                          b_.CreateStructGEP(abi_.workgroupState, wg, k)),
            idxTy_);
      } else {
        if (!zRest) {
          zRest = b_.CreateZExt(
              b_.CreateLoad(b_.getInt32Ty(),
                            b_.CreateStructGEP(abi_.workgroupState, wg, 2)),
              idxTy_);
        }
        id = b_.CreateURem(zRest, idx(count));
        zRest = b_.CreateUDiv(zRest, idx(count));
      }
      lo[d] = b_.CreateMul(id, idx(tile));
      llvm::Value *end = b_.CreateAdd(lo[d], idx(tile));
      hi[d] = b_.CreateSelect(b_.CreateICmpSLT(end, hi[d]), end, hi[d]);
    }
    // Convolutions and contractions of matrix-product form take the packed
    // panel path (packed_gemm.h) when it applies.
    PackedGemmHooks hooks{
        [&](unsigned t) { return bindings_.at(t); },
        [&](const OperandAccess &in, llvm::ArrayRef<llvm::Value *> ivs) {
          return loadOperand(in, ivs);
        },
        [&](llvm::Value *v, llvm::ArrayRef<llvm::Value *> ivs) {
          return finishElement(v, ivs);
        }};
    COMPILER_ASSIGN_OR_RETURN(bool packed,
                              emitPackedGemm(p_, r_, b_, fn_, lo, hi, hooks));
    if (packed) {
      b_.CreateRet(b_.getInt32(0));
      return fn_;
    }
    std::vector<unsigned> parallel, reduction;
    for (unsigned d = 0; d < n; ++d) {
      (root.iterators[d] == structured::IteratorType::Parallel ? parallel
                                                               : reduction)
          .push_back(d);
    }
    std::vector<llvm::Value *> ivs(n, nullptr);
    absl::Status status = absl::OkStatus();
    if (root.hasReduction() && !r_.tiledLoops.empty()) {
      // Reductions keep a block of accumulators over the innermost tiled
      // (output-contiguous) loop and, for microkernel roots, the next tiled
      // loop; the block loops run inside the reduction loops, so the
      // innermost loop reads contiguous operands and vectorizes, and with
      // constant extents the block lives in vector registers.
      std::vector<unsigned> block = {r_.tiledLoops[0]};
      if (r_.microkernel && r_.tiledLoops.size() > 1) {
        block.insert(block.begin(), r_.tiledLoops[1]);
      }
      int64_t blockSize = 1;
      for (unsigned d : block) {
        blockSize *= r_.tileSizes[d];
      }
      accBlock_ = b_.CreateAlloca(
          llvm::ArrayType::get(b_.getFloatTy(), blockSize), nullptr,
          "acc_block");
      std::vector<unsigned> outer;
      for (unsigned d : parallel) {
        if (std::find(block.begin(), block.end(), d) == block.end()) {
          outer.push_back(d);
        }
      }
      nest(outer, 0, lo, hi, ivs, [&] {
        if (status.ok()) {
          status = emitReductionBlock(block, lo, hi, ivs, reduction);
        }
      });
    } else {
      nest(parallel, 0, lo, hi, ivs, [&] {
        if (status.ok()) {
          status = emitElement(lo, hi, ivs, reduction);
        }
      });
    }
    COMPILER_RETURN_IF_ERROR(status);
    b_.CreateRet(b_.getInt32(0));
    return fn_;
  }

private:
  const StructuredOp &op(unsigned i) const { return p_.program.ops[r_.ops[i]]; }
  llvm::Value *idx(int64_t v) { return llvm::ConstantInt::get(idxTy_, v); }
  llvm::Value *f32(double v) {
    return llvm::ConstantFP::get(b_.getFloatTy(), v);
  }

  absl::Status unimplemented(const StructuredOp &o, const std::string &what) {
    return absl::UnimplementedError("node '" + o.nodeName + "': " + what +
                                    " is not implemented in the llvm-cpu "
                                    "backend yet");
  }

  absl::Status check() {
    for (unsigned i = 0; i < r_.ops.size(); ++i) {
      const StructuredOp &o = op(i);
      std::vector<unsigned> tensors = {o.output.tensor};
      for (const OperandAccess &in : o.inputs) {
        tensors.push_back(in.tensor);
      }
      for (unsigned t : tensors) {
        graph::ElementType et = p_.program.tensors[t].type.elementType();
        if (et != graph::ElementType::F32) {
          return unimplemented(o, "element type " +
                                      graph::elementTypeName(et).str());
        }
      }
      int64_t rootRank = p_.program.tensors[op(0).output.tensor].type.rank();
      if (i > 0 && (o.hasReduction() ||
                    static_cast<int64_t>(o.bounds.size()) != rootRank)) {
        return absl::InvalidArgumentError(
            "node '" + o.nodeName +
            "': a fused op must be all-parallel over its producer's shape");
      }
      if (i == 0 && o.hasReduction() && !o.init) {
        return absl::InvalidArgumentError("node '" + o.nodeName +
                                          "': reduction without an initial "
                                          "value");
      }
    }
    return absl::OkStatus();
  }

  // The module-wide read-only copy of constant tensor |t| (one per tensor,
  // shared by every region of the library).
  llvm::GlobalVariable *constantGlobal(unsigned t) {
    const structured::TensorInfo &info = p_.program.tensors[t];
    std::string name = "constant_" + info.name;
    if (llvm::GlobalVariable *g = m_.getNamedGlobal(name)) {
      return g;
    }
    llvm::ArrayRef<uint8_t> bytes = info.constant->bytes();
    llvm::Constant *data = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(reinterpret_cast<const char *>(bytes.data()),
                        bytes.size()),
        bytes.size() / 4, b_.getFloatTy());
    auto *g = new llvm::GlobalVariable(m_, data->getType(), true,
                                       llvm::GlobalValue::InternalLinkage,
                                       data, name);
    g->setAlignment(llvm::Align(64));
    return g;
  }

  // Loops over dims[k..] in order with [lo, hi) ranges, then calls |inner|.
  // for (iv = lo; iv < hi; ++iv) body(iv)
  void loop(llvm::Value *lo, llvm::Value *hi, const llvm::Twine &name,
            llvm::function_ref<void(llvm::Value *)> body) {
    bool scalar = scalarLoops_;
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    llvm::BasicBlock *bodyBlock = llvm::BasicBlock::Create(ctx_, "body", fn_);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *iv = b_.CreatePHI(idxTy_, 2, name);
    iv->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), bodyBlock, exit);
    b_.SetInsertPoint(bodyBlock);
    body(iv);
    llvm::Value *next = b_.CreateAdd(iv, idx(1), "", /*HasNUW=*/true,
                                     /*HasNSW=*/true);
    iv->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst *latch = b_.CreateBr(header);
    if (scalar) {
      llvm::Metadata *off[] = {
          llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
          llvm::ConstantAsMetadata::get(b_.getFalse())};
      llvm::Metadata *ops[] = {nullptr, llvm::MDNode::get(ctx_, off)};
      llvm::MDNode *id = llvm::MDNode::getDistinct(ctx_, ops);
      id->replaceOperandWith(0, id);
      latch->setMetadata(llvm::LLVMContext::MD_loop, id);
    }
    b_.SetInsertPoint(exit);
  }

  // Loops over dims[k..] in order with [lo, hi) ranges, then calls |inner|.
  void nest(llvm::ArrayRef<unsigned> dims, size_t k,
            const std::vector<llvm::Value *> &lo,
            const std::vector<llvm::Value *> &hi,
            std::vector<llvm::Value *> &ivs,
            llvm::function_ref<void()> inner) {
    if (k == dims.size()) {
      inner();
      return;
    }
    unsigned d = dims[k];
    loop(lo[d], hi[d], "d" + llvm::Twine(d), [&](llvm::Value *iv) {
      ivs[d] = iv;
      nest(dims, k + 1, lo, hi, ivs, inner);
    });
  }

  // One block of a reduction root over loops |block| (outermost first):
  // accumulators start at init, the reduction loops run with the block
  // innermost, then each element goes through the fused ops and is stored.
  absl::Status emitReductionBlock(llvm::ArrayRef<unsigned> block,
                                  const std::vector<llvm::Value *> &lo,
                                  const std::vector<llvm::Value *> &hi,
                                  std::vector<llvm::Value *> &ivs,
                                  llvm::ArrayRef<unsigned> reduction) {
    const StructuredOp &root = op(0);
    // Extent of each block loop: the tile when tiles divide the loop (a
    // constant LLVM can unroll), else what is left of it.
    std::vector<llvm::Value *> extent;
    for (unsigned d : block) {
      int64_t tile = r_.tileSizes[d];
      extent.push_back(root.bounds[d] % tile == 0
                           ? idx(tile)
                           : b_.CreateSub(hi[d], lo[d]));
    }
    llvm::Type *blockTy = accBlock_->getAllocatedType();
    // Full microkernel blocks of at most kMaxUnrolledBlock elements are
    // emitted unrolled unless an embedded constant operand is read along the
    // innermost block loop: every accumulator slot then has a constant index
    // and SROA keeps the block in registers. Measured on x86-64 (256^3
    // matmul): bound operands 6.2 ms as loops, 1.2 ms unrolled; with the
    // constant as the contiguous operand LLVM does better from the loops
    // itself (0.4 ms vs 1.2 ms). A constant that is broadcast along that loop
    // (the weights of a 1x1 convolution, W[co,ci] x X[ci,hw]) unrolls well:
    // MobileNetV2's pointwise convolutions ran 2-3x faster. Windowed
    // convolution reads vectorize better as loops.
    constexpr int64_t kMaxUnrolledBlock = 128;
    bool unrolled = r_.microkernel &&
                    blockTy->getArrayNumElements() <=
                        uint64_t(kMaxUnrolledBlock);
    unsigned innermost = block.back();
    for (const OperandAccess &in : root.inputs) {
      bool isConstant = std::find(r_.constants.begin(), r_.constants.end(),
                                  in.tensor) != r_.constants.end();
      bool readsInnermost = false;
      for (const AffineExpr &e : in.map.results) {
        readsInnermost |= innermost < e.coeffs.size() && e.coeffs[innermost];
      }
      unrolled &= !(isConstant && readsInnermost);
    }
    for (llvm::Value *e : extent) {
      unrolled &= llvm::isa<llvm::ConstantInt>(e);
    }
    // Visits the block; |body| gets the accumulator slot with ivs set.
    auto forBlock = [&](llvm::function_ref<void(llvm::Value *)> body) {
      std::function<void(size_t, llvm::Value *)> rec =
          [&](size_t k, llvm::Value *linear) {
            if (k == block.size()) {
              body(b_.CreateInBoundsGEP(blockTy, accBlock_, {idx(0), linear}));
              return;
            }
            unsigned d = block[k];
            auto step = [&](llvm::Value *i) {
              ivs[d] = b_.CreateAdd(lo[d], i, "", false, true);
              rec(k + 1, b_.CreateAdd(
                             b_.CreateMul(linear, idx(r_.tileSizes[d]), "",
                                          false, true),
                             i, "", false, true));
            };
            if (unrolled) {
              for (int64_t i = 0; i < r_.tileSizes[d]; ++i) {
                step(idx(i));
              }
            } else {
              loop(idx(0), extent[k], "b" + llvm::Twine(d), step);
            }
          };
      rec(0, idx(0));
    };
    forBlock([&](llvm::Value *slot) {
      b_.CreateStore(f32(*root.init), slot);
    });
    absl::Status status = absl::OkStatus();
    // The loop vectorizer would vectorize a convolution's reduction loops
    // (gathers across input channels, one horizontal sum per accumulator)
    // instead of the output-contiguous block; with the reduction loops kept
    // scalar, the SLP vectorizer turns the unrolled block into vector FMAs.
    // ResNet-18 0.69 -> 0.44 s (docs/performance.md).
    scalarLoops_ = root.classify() == structured::OpClass::Convolution;
    nest(reduction, 0, lo, hi, ivs, [&] {
      scalarLoops_ = false;
      forBlock([&](llvm::Value *slot) {
        if (!status.ok()) {
          return;
        }
        auto v = evalBody(root, ivs, b_.CreateLoad(b_.getFloatTy(), slot));
        if (!v.ok()) {
          status = v.status();
          return;
        }
        b_.CreateStore(*v, slot);
      });
    });
    COMPILER_RETURN_IF_ERROR(status);
    forBlock([&](llvm::Value *slot) {
      if (status.ok()) {
        status = finishElement(b_.CreateLoad(b_.getFloatTy(), slot), ivs);
      }
    });
    return status;
  }

  llvm::Value *evalExpr(const AffineExpr &e, llvm::ArrayRef<llvm::Value *> ivs) {
    llvm::Value *v = idx(e.constant);
    for (unsigned d = 0; d < e.coeffs.size(); ++d) {
      if (e.coeffs[d] == 0) {
        continue;
      }
      llvm::Value *term = e.coeffs[d] == 1
                              ? ivs[d]
                              : b_.CreateMul(ivs[d], idx(e.coeffs[d]), "",
                                             false, true);
      v = b_.CreateAdd(v, term, "", false, true);
    }
    return v;
  }

  llvm::Value *address(unsigned tensor,
                       llvm::ArrayRef<llvm::Value *> indices) {
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[tensor].type.dims();
    llvm::Value *linear = idx(0);
    int64_t stride = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      llvm::Value *term = stride == 1 ? indices[k]
                                      : b_.CreateMul(indices[k], idx(stride),
                                                     "", false, true);
      linear = b_.CreateAdd(linear, term, "", false, true);
      stride *= dims[k];
    }
    return b_.CreateInBoundsGEP(b_.getFloatTy(), bindings_.at(tensor), linear);
  }

  llvm::Value *loadOperand(const OperandAccess &in,
                           llvm::ArrayRef<llvm::Value *> ivs) {
    auto internal = internal_.find(in.tensor);
    if (internal != internal_.end()) {
      return internal->second; // identity read, checked at region formation
    }
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    std::vector<llvm::Value *> indices;
    llvm::Value *inBounds = nullptr;
    for (size_t k = 0; k < in.map.results.size(); ++k) {
      llvm::Value *i = evalExpr(in.map.results[k], ivs);
      if (in.padValue) {
        // One unsigned compare covers both i < 0 and i >= dim.
        llvm::Value *ok = b_.CreateICmpULT(i, idx(dims[k]));
        inBounds = inBounds ? b_.CreateAnd(inBounds, ok) : ok;
      }
      indices.push_back(i);
    }
    if (inBounds) {
      for (llvm::Value *&i : indices) {
        i = b_.CreateSelect(inBounds, i, idx(0));
      }
    }
    llvm::Value *v = b_.CreateLoad(b_.getFloatTy(), address(in.tensor, indices));
    if (inBounds) {
      v = b_.CreateSelect(inBounds, v, f32(*in.padValue));
    }
    return v;
  }

  // Arithmetic in op bodies may be reassociated and contracted into FMAs
  // (this is what lets reductions vectorize); the math expansions are not.
  llvm::Value *arith(llvm::Value *v) {
    if (auto *inst = llvm::dyn_cast<llvm::Instruction>(v)) {
      inst->setHasAllowReassoc(true);
      inst->setHasAllowContract(true);
    }
    return v;
  }

  absl::StatusOr<llvm::Value *> evalBody(const StructuredOp &o,
                                         llvm::ArrayRef<llvm::Value *> ivs,
                                         llvm::Value *acc) {
    const auto &nodes = o.body.nodes();
    std::vector<llvm::Value *> v(nodes.size(), nullptr);
    std::map<unsigned, llvm::Value *> loaded;
    for (unsigned i = 0; i < nodes.size(); ++i) {
      const structured::ScalarNode &n = nodes[i];
      auto a = [&](unsigned k) { return v[n.operands[k]]; };
      switch (n.kind) {
      case ScalarKind::Input: {
        auto it = loaded.find(n.index);
        if (it == loaded.end()) {
          it = loaded.emplace(n.index, loadOperand(o.inputs[n.index], ivs))
                   .first;
        }
        v[i] = it->second;
        break;
      }
      case ScalarKind::Output:
        if (!acc) {
          return absl::InvalidArgumentError(
              "node '" + o.nodeName +
              "': body reads the accumulator of an op without reductions");
        }
        v[i] = acc;
        break;
      case ScalarKind::Const: v[i] = f32(n.value); break;
      case ScalarKind::Neg: v[i] = b_.CreateFNeg(a(0)); break;
      case ScalarKind::Abs:
        v[i] = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a(0));
        break;
      case ScalarKind::Exp: v[i] = emitExp(b_, a(0)); break;
      case ScalarKind::Log: v[i] = emitLog(b_, a(0)); break;
      case ScalarKind::Sqrt:
        v[i] = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a(0));
        break;
      case ScalarKind::Rsqrt:
        v[i] = b_.CreateFDiv(
            f32(1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a(0)));
        break;
      case ScalarKind::Tanh: v[i] = emitTanh(b_, a(0)); break;
      case ScalarKind::Erf: v[i] = emitErf(b_, a(0)); break;
      case ScalarKind::Sigmoid: v[i] = emitSigmoid(b_, a(0)); break;
      case ScalarKind::Recip: v[i] = b_.CreateFDiv(f32(1.0), a(0)); break;
      case ScalarKind::Cast:
        if (n.castTo != graph::ElementType::F32) {
          return unimplemented(o, "cast to " +
                                      graph::elementTypeName(n.castTo).str());
        }
        v[i] = a(0);
        break;
      case ScalarKind::Add: v[i] = arith(b_.CreateFAdd(a(0), a(1))); break;
      case ScalarKind::Sub: v[i] = arith(b_.CreateFSub(a(0), a(1))); break;
      case ScalarKind::Mul: v[i] = arith(b_.CreateFMul(a(0), a(1))); break;
      case ScalarKind::Div: v[i] = b_.CreateFDiv(a(0), a(1)); break;
      case ScalarKind::Max: v[i] = emitMax(b_, a(0), a(1)); break;
      case ScalarKind::Min: v[i] = emitMin(b_, a(0), a(1)); break;
      case ScalarKind::Pow: {
        const structured::ScalarNode &e = nodes[n.operands[1]];
        if (e.kind == ScalarKind::Const && e.value == 2.0) {
          v[i] = b_.CreateFMul(a(0), a(0));
        } else {
          v[i] = emitExp(b_, b_.CreateFMul(a(1), emitLog(b_, a(0))));
        }
        break;
      }
      case ScalarKind::CmpEq: v[i] = b_.CreateFCmpOEQ(a(0), a(1)); break;
      case ScalarKind::CmpLt: v[i] = b_.CreateFCmpOLT(a(0), a(1)); break;
      case ScalarKind::CmpGt: v[i] = b_.CreateFCmpOGT(a(0), a(1)); break;
      case ScalarKind::Select:
        v[i] = b_.CreateSelect(a(0), a(1), a(2));
        break;
      }
    }
    llvm::Value *result = v[o.body.result()];
    if (!result->getType()->isFloatTy()) {
      return unimplemented(o, "a body yielding a non-f32 value");
    }
    return result;
  }

  // One element of the root's parallel space: reduce, apply the fused ops,
  // store.
  absl::Status emitElement(const std::vector<llvm::Value *> &lo,
                           const std::vector<llvm::Value *> &hi,
                           std::vector<llvm::Value *> &ivs,
                           llvm::ArrayRef<unsigned> reduction) {
    const StructuredOp &root = op(0);
    internal_.clear();
    llvm::Value *value;
    if (root.hasReduction()) {
      b_.CreateStore(f32(*root.init), acc_);
      absl::Status status = absl::OkStatus();
      nest(reduction, 0, lo, hi, ivs, [&] {
        auto v = evalBody(root, ivs, b_.CreateLoad(b_.getFloatTy(), acc_));
        if (!v.ok()) {
          status = v.status();
          return;
        }
        b_.CreateStore(*v, acc_);
      });
      COMPILER_RETURN_IF_ERROR(status);
      value = b_.CreateLoad(b_.getFloatTy(), acc_);
    } else {
      COMPILER_ASSIGN_OR_RETURN(value, evalBody(root, ivs, nullptr));
    }
    return finishElement(value, ivs);
  }

  // Runs the fused ops on the root's result |value| at loop indices |ivs|
  // and stores the region's result.
  absl::Status finishElement(llvm::Value *value,
                             llvm::ArrayRef<llvm::Value *> ivs) {
    const StructuredOp &root = op(0);
    internal_.clear();
    // Fused ops iterate over the root's output index space.
    std::vector<llvm::Value *> outIdx;
    for (const AffineExpr &e : root.output.map.results) {
      outIdx.push_back(evalExpr(e, ivs));
    }
    const StructuredOp *last = &root;
    for (unsigned i = 1; i < r_.ops.size(); ++i) {
      internal_[last->output.tensor] = value;
      last = &op(i);
      COMPILER_ASSIGN_OR_RETURN(value, evalBody(*last, outIdx, nullptr));
      std::vector<llvm::Value *> next;
      for (const AffineExpr &e : last->output.map.results) {
        next.push_back(evalExpr(e, outIdx));
      }
      outIdx = std::move(next);
    }
    b_.CreateStore(value, address(last->output.tensor, outIdx));
    return absl::OkStatus();
  }

  const DispatchProgram &p_;
  const DispatchRegion &r_;
  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  AbiTypes abi_;
  llvm::Type *idxTy_;
  llvm::Function *fn_ = nullptr;
  llvm::Value *acc_ = nullptr;
  llvm::AllocaInst *accBlock_ = nullptr;
  // Set while emitting loops the loop vectorizer must leave alone.
  bool scalarLoops_ = false;
  std::map<unsigned, llvm::Value *> bindings_;
  std::map<unsigned, llvm::Value *> internal_;
};

} // namespace

absl::StatusOr<llvm::Function *>
emitDispatchFunction(const DispatchProgram &program,
                     const DispatchRegion &region, llvm::Module &module) {
  return RegionEmitter(program, region, module).emit();
}

} // namespace osprey::compiler::llvm_cpu
