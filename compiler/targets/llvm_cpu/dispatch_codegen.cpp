// Dispatch region → LLVM function with the fixed dispatch ABI.
#include "compiler/targets/llvm_cpu/dispatch_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "compiler/graph/status.h"
#include "compiler/targets/llvm_cpu/math.h"
#include "compiler/targets/llvm_cpu/matvec.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "compiler/targets/llvm_cpu/depthwise_conv.h"
#include "compiler/targets/llvm_cpu/pool_window.h"
#include "compiler/targets/llvm_cpu/requantize.h"
#include "compiler/targets/llvm_cpu/winograd_conv.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsARM.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/TargetParser/Triple.h"

namespace osprey::compiler::llvm_cpu {

using dispatch::DispatchProgram;
using graph::ElementType;
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

// Dispatch function results for data-dependent failures, the values of
// OSPREY_DISPATCH_INDEX_OUT_OF_RANGE and OSPREY_DISPATCH_DIVISION_BY_ZERO in
// executable_library.h; the runtime reports them naming the export (the
// region).
constexpr int32_t kIndexOutOfRange = 1;
constexpr int32_t kDivisionByZero = 2;

bool isSignedInt(ElementType t) {
  return t == ElementType::I8 || t == ElementType::I16 ||
         t == ElementType::I32 || t == ElementType::I64;
}

// Half floats (f16, bf16) are stored as 16 bits and computed with in f32,
// each result rounded to their precision (math.h's conversions).
bool isHalf(ElementType t) {
  return t == ElementType::F16 || t == ElementType::BF16;
}

bool isFloat(ElementType t) {
  return t == ElementType::F32 || t == ElementType::F64 || isHalf(t);
}

// The inline expansion (math.h) of a transcendental scalar kind on f32.
llvm::Value *emitTranscendental(llvm::IRBuilder<> &b, ScalarKind kind,
                                llvm::Value *x) {
  switch (kind) {
  case ScalarKind::Exp: return emitExp(b, x);
  case ScalarKind::Log: return emitLog(b, x);
  case ScalarKind::Tanh: return emitTanh(b, x);
  case ScalarKind::Erf: return emitErf(b, x);
  case ScalarKind::Sigmoid: return emitSigmoid(b, x);
  case ScalarKind::Sin: return emitSin(b, x);
  case ScalarKind::Cos: return emitCos(b, x);
  case ScalarKind::Tan: return emitTan(b, x);
  case ScalarKind::Atan: return emitAtan(b, x);
  case ScalarKind::Sinh: return emitSinh(b, x);
  case ScalarKind::Cosh: return emitCosh(b, x);
  case ScalarKind::Asinh: return emitAsinh(b, x);
  case ScalarKind::Acosh: return emitAcosh(b, x);
  default: return emitAtanh(b, x);
  }
}

class RegionEmitter {
public:
  RegionEmitter(const DispatchProgram &p, const DispatchRegion &r,
                llvm::Module &m, const CodegenOptions &options)
      : p_(p), r_(r), options_(options), m_(m), ctx_(m.getContext()), b_(ctx_),
        abi_(m) {
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
      acc_ = b_.CreateAlloca(accType(), nullptr, "acc");
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
    // Roots with a dedicated tile emitter take the first that accepts them:
    // 3x3 stride-1 convolutions on vector targets Winograd F(2x2, 3x3)
    // (winograd_conv.h), matrix products the packed panel path
    // (packed_gemm.h), integer matrix-vector products on Arm DSP targets
    // SMLAD rows (matvec.h), depthwise convolutions the padded-plane path
    // (depthwise_conv.h), max pools the row-interior vector path
    // (pool_window.h).
    TileHooks hooks{
        [&](unsigned t) { return bindings_.at(t); },
        [&](const OperandAccess &in, llvm::ArrayRef<llvm::Value *> ivs) {
          return loadOperand(in, ivs);
        },
        [&](llvm::Value *v, llvm::ArrayRef<llvm::Value *> ivs) {
          return finishElement(v, ivs);
        }};
    static constexpr TileEmitterFn kTileEmitters[] = {
        emitWinogradConv, emitPackedGemm, emitMatVec, emitDepthwiseConv,
        emitPoolWindow};
    // Each checks the element types it handles (f32; the packed path also
    // integer matrix products); other roots run the loops.
    for (TileEmitterFn emit : kTileEmitters) {
      COMPILER_ASSIGN_OR_RETURN(bool emitted,
                                emit(p_, r_, b_, fn_, lo, hi, hooks, options_));
      if (emitted) {
        b_.CreateRet(resultCode());
        return fn_;
      }
    }
    std::vector<unsigned> parallel, reduction;
    for (unsigned d = 0; d < n; ++d) {
      (root.iterators[d] == structured::IteratorType::Parallel ? parallel
                                                               : reduction)
          .push_back(d);
    }
    std::vector<llvm::Value *> ivs(n, nullptr);
    absl::Status status = absl::OkStatus();
    strides_ = accessStrides();
    if (root.hasReduction() && !r_.tiledLoops.empty() &&
        !reducesContiguously(reduction)) {
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
          llvm::ArrayType::get(accType(), blockSize), nullptr,
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
      // One element at a time: all-parallel roots, and reductions along
      // contiguous memory (see reducesContiguously()).
      collapsedNest(parallel, lo, hi, ivs, [&] {
        if (status.ok()) {
          status = emitElement(lo, hi, ivs, reduction);
        }
      });
    }
    COMPILER_RETURN_IF_ERROR(status);
    b_.CreateRet(resultCode());
    return fn_;
  }

private:
  const StructuredOp &op(unsigned i) const { return p_.program.ops[r_.ops[i]]; }
  llvm::Value *idx(int64_t v) { return llvm::ConstantInt::get(idxTy_, v); }
  llvm::Value *f32(double v) {
    return llvm::ConstantFP::get(b_.getFloatTy(), v);
  }
  // The root's accumulator type (its output's element type; not bool, see
  // check()) and start value.
  llvm::Type *accType() { return valueType(elementTypeOf(op(0).output.tensor)); }
  llvm::Value *accInit() {
    return typedConstant(*op(0).init, elementTypeOf(op(0).output.tensor));
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
        ElementType et = elementTypeOf(t);
        if (et == ElementType::F64 && narrowTarget()) {
          return unimplemented(o, "f64 on a 32-bit target (no double-precision "
                                  "unit, and no runtime helpers are linked)");
        }
      }
      if (i == 0 && o.hasReduction() &&
          elementTypeOf(o.output.tensor) == ElementType::Bool) {
        return unimplemented(o, "a reduction to bool");
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
        bytes.size(), b_.getInt8Ty());
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

  // Element stride of each root loop in the linear offset of every memory
  // access of the region: root inputs, fused ops' inputs that are not
  // region values (read at the root's output index) and written values.
  // Empty when some access is padded or indirect (its per-dimension checks
  // need each index), or a fused op permutes its output.
  std::vector<std::vector<int64_t>> accessStrides() {
    const StructuredOp &root = op(0);
    size_t n = root.bounds.size();
    // Rows: the root's output index as coefficients of the root loops.
    std::vector<std::vector<int64_t>> outIdx;
    for (const AffineExpr &e : root.output.map.results) {
      std::vector<int64_t> row(n, 0);
      for (size_t d = 0; d < n && d < e.coeffs.size(); ++d) {
        row[d] = e.coeffs[d];
      }
      outIdx.push_back(std::move(row));
    }
    // Strides of |map| over |tensor|, its dimensions being root loops
    // (|composed| false) or the root's output index.
    auto strides = [&](unsigned tensor, const structured::AffineMap &map,
                       bool composed) {
      llvm::ArrayRef<int64_t> dims = p_.program.tensors[tensor].type.dims();
      std::vector<int64_t> c(n, 0);
      int64_t stride = 1;
      for (size_t k = map.results.size(); k-- > 0;) {
        const AffineExpr &e = map.results[k];
        for (size_t i = 0; i < e.coeffs.size(); ++i) {
          if (e.coeffs[i] == 0) {
            continue;
          }
          for (size_t d = 0; d < n; ++d) {
            int64_t via = composed ? (i < outIdx.size() ? outIdx[i][d] : 0)
                                   : (i == d ? 1 : 0);
            c[d] += e.coeffs[i] * via * stride;
          }
        }
        stride *= k < dims.size() ? dims[k] : 1;
      }
      return c;
    };
    std::vector<std::vector<int64_t>> out;
    std::set<unsigned> values;
    for (unsigned i = 0; i < r_.ops.size(); ++i) {
      const StructuredOp &o = op(i);
      if (i > 0 && !o.output.map.isIdentity()) {
        return {};
      }
      for (const OperandAccess &in : o.inputs) {
        if (values.count(in.tensor)) {
          continue;
        }
        if (in.padValue || in.indirect ||
            in.map.results.size() !=
                static_cast<size_t>(
                    p_.program.tensors[in.tensor].type.rank())) {
          return {};
        }
        out.push_back(strides(in.tensor, in.map, i > 0));
      }
      values.insert(o.output.tensor);
      if (i + 1 == r_.ops.size() || writes(o.output.tensor)) {
        out.push_back(strides(o.output.tensor, o.output.map, i > 0));
      }
    }
    return out;
  }

  // Whether a reduction root should run one output element at a time with
  // its reduction loops innermost rather than as a block of accumulators
  // over its innermost tiled loop: when its inputs are contiguous along the
  // innermost reduction loop but not along that tiled loop (global average
  // pooling of NCHW, row sums for softmax and layer norm, matrix-vector
  // products with weights [N][K] such as classifiers), the reduction loop
  // vectorizes (a vector of partial sums) where the block would read with a
  // stride of a whole plane or row.
  bool reducesContiguously(llvm::ArrayRef<unsigned> reduction) {
    const StructuredOp &root = op(0);
    structured::OpClass cls = root.classify();
    if (strides_.empty() || reduction.empty() ||
        (cls != structured::OpClass::Reduction &&
         cls != structured::OpClass::Contraction)) {
      return false;
    }
    unsigned inner = reduction.back();
    unsigned tiled = r_.tiledLoops[0];
    bool contiguous = false;
    for (size_t a = 0; a < root.inputs.size(); ++a) {
      if (strides_[a][tiled] == 1) {
        return false;
      }
      contiguous |= strides_[a][inner] == 1;
    }
    return contiguous;
  }

  // Whether loop |d| runs over its whole extent in every workgroup.
  bool wholeLoop(unsigned d) const {
    const StructuredOp &root = op(0);
    return root.iterators[d] == structured::IteratorType::Reduction ||
           d >= r_.tileSizes.size() || r_.tileSizes[d] <= 0 ||
           r_.tileSizes[d] >= root.bounds[d];
  }

  // Like nest(dims, 0, ...), but a run of innermost loops that every access
  // of the region walks as one contiguous sequence runs as a single loop: a
  // loop joins the run when the loops after it are whole and every access's
  // stride along it is its successor's stride times the successor's extent.
  // The run's outer loops then index 0 and its innermost loop carries the
  // combined index (every address is affine in the loops, so it is the
  // same). A 7x7 plane becomes one loop of 49 elements (vectorized) instead
  // of 7 rows of 7 (mostly scalar remainders), a 56x56 reduction one loop of
  // 3136.
  void collapsedNest(llvm::ArrayRef<unsigned> dims,
                     const std::vector<llvm::Value *> &lo,
                     const std::vector<llvm::Value *> &hi,
                     std::vector<llvm::Value *> &ivs,
                     llvm::function_ref<void()> inner) {
    const StructuredOp &root = op(0);
    size_t first = dims.size();
    if (!strides_.empty() && !dims.empty()) {
      first = dims.size() - 1;
      while (first > 0 && wholeLoop(dims[first])) {
        unsigned outer = dims[first - 1], next = dims[first];
        bool ok = true;
        for (const std::vector<int64_t> &c : strides_) {
          ok &= c[outer] == c[next] * root.bounds[next];
        }
        if (!ok) {
          break;
        }
        --first;
      }
    }
    if (first + 1 >= dims.size()) {
      nest(dims, 0, lo, hi, ivs, inner);
      return;
    }
    int64_t extent = 1;
    for (size_t k = first + 1; k < dims.size(); ++k) {
      extent *= root.bounds[dims[k]];
    }
    unsigned head = dims[first];
    nest(dims.take_front(first), 0, lo, hi, ivs, [&] {
      loop(b_.CreateMul(lo[head], idx(extent), "", true, true),
           b_.CreateMul(hi[head], idx(extent), "", true, true),
           "run" + llvm::Twine(head), [&](llvm::Value *iv) {
             for (size_t k = first; k + 1 < dims.size(); ++k) {
               ivs[dims[k]] = idx(0);
             }
             ivs[dims.back()] = iv;
             inner();
           });
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
      b_.CreateStore(accInit(), slot);
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
        auto v = evalBody(root, ivs, b_.CreateLoad(accType(), slot));
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
        status = finishElement(b_.CreateLoad(accType(), slot), ivs);
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
    return b_.CreateInBoundsGEP(storageType(elementTypeOf(tensor)),
                                bindings_.at(tensor), linear);
  }

  // Reads |in| at loop indices |ivs|; an indirect read takes
  // |indirectIndex| (in range, see checkedIndex()) along its indirect
  // dimension. Bool elements load as i1.
  llvm::Value *loadOperand(const OperandAccess &in,
                           llvm::ArrayRef<llvm::Value *> ivs,
                           llvm::Value *indirectIndex = nullptr) {
    auto internal = internal_.find(in.tensor);
    if (internal != internal_.end()) {
      return internal->second; // identity read, checked at region formation
    }
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    ElementType et = elementTypeOf(in.tensor);
    std::vector<llvm::Value *> indices;
    llvm::Value *inBounds = nullptr;
    for (size_t k = 0; k < in.map.results.size(); ++k) {
      llvm::Value *i = in.indirect && in.indirect->dim == k
                           ? indirectIndex
                           : evalExpr(in.map.results[k], ivs);
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
    llvm::LoadInst *v =
        b_.CreateLoad(storageType(et), address(in.tensor, indices));
    if (p_.program.tensors[in.tensor].constant) {
      // Constants never change during the dispatch: loops may hoist their
      // loads past the stores of the output (per-channel bias and
      // requantization parameters leave the epilogue's pixel loops).
      v->setMetadata(llvm::LLVMContext::MD_invariant_load,
                     llvm::MDNode::get(ctx_, {}));
    }
    llvm::Value *value = v;
    if (et == ElementType::Bool) {
      value = b_.CreateICmpNE(value, b_.getInt8(0));
    } else if (et == ElementType::F16) {
      value = emitHalfToFloat(b_, value);
    } else if (et == ElementType::BF16) {
      value = emitBFloat16ToFloat(b_, value);
    }
    if (inBounds) {
      value = b_.CreateSelect(inBounds, value, typedConstant(*in.padValue, et));
    }
    return value;
  }

  // Value of input |index| of |o| at |ivs|. An indirect read first reads its
  // index operand and checks it.
  llvm::Value *loadInput(const StructuredOp &o, unsigned index,
                         llvm::ArrayRef<llvm::Value *> ivs) {
    const OperandAccess &in = o.inputs[index];
    if (!in.indirect) {
      return loadOperand(in, ivs);
    }
    llvm::Value *raw = loadOperand(o.inputs[in.indirect->operand], ivs);
    int64_t extent =
        p_.program.tensors[in.tensor].type.dim(in.indirect->dim);
    return loadOperand(in, ivs, checkedIndex(raw, extent));
  }

  // |raw| (an i32 or i64 index into a dimension of |extent|) with negative
  // values counted from the end. A value outside [-extent, extent) reads
  // index 0 instead and makes the dispatch function return
  // kIndexOutOfRange. Branch-free, so loops keep vectorizing and an index
  // that is invariant in inner loops is checked once outside them.
  llvm::Value *checkedIndex(llvm::Value *raw, int64_t extent) {
    // Checked in 64 bits: truncating first to a 32-bit index type could wrap
    // an out-of-range i64 into range.
    llvm::Value *i = b_.CreateSExt(raw, b_.getInt64Ty());
    llvm::Value *n = b_.getInt64(extent);
    i = b_.CreateSelect(b_.CreateICmpSLT(i, b_.getInt64(0)), b_.CreateAdd(i, n),
                        i);
    llvm::Value *ok = b_.CreateICmpULT(i, n);
    if (extent == 0) {
      // Nothing to read: fail before computing any address.
      failUnless(ok, kIndexOutOfRange, "index_ok");
    } else {
      noteFailure(ok, kIndexOutOfRange);
    }
    return b_.CreateTrunc(b_.CreateSelect(ok, i, b_.getInt64(0)), idxTy_);
  }

  // Records |code| as the dispatch function's result when |ok| is false; the
  // function keeps running (reads stay in bounds) and returns it at the end.
  void noteFailure(llvm::Value *ok, int32_t code) {
    if (!failCode_) {
      llvm::BasicBlock &entry = fn_->getEntryBlock();
      llvm::IRBuilder<> eb(&entry, entry.begin());
      failCode_ = eb.CreateAlloca(b_.getInt32Ty(), nullptr, "fail_code");
      eb.CreateStore(eb.getInt32(0), failCode_);
    }
    llvm::Value *old = b_.CreateLoad(b_.getInt32Ty(), failCode_);
    b_.CreateStore(b_.CreateSelect(ok, old, b_.getInt32(code)), failCode_);
  }

  // The dispatch function's result: 0, or the last failure noted.
  llvm::Value *resultCode() {
    if (!failCode_) {
      return b_.getInt32(0);
    }
    return b_.CreateLoad(b_.getInt32Ty(), failCode_);
  }

  // Continues in a new block when |ok|, else returns |code| from the
  // dispatch function.
  void failUnless(llvm::Value *ok, int32_t code, const llvm::Twine &name) {
    llvm::BasicBlock *&fail = failBlocks_[code];
    if (!fail) {
      fail = llvm::BasicBlock::Create(ctx_, "fail", fn_);
      llvm::IRBuilder<> fb(fail);
      fb.CreateRet(fb.getInt32(code));
    }
    llvm::BasicBlock *next = llvm::BasicBlock::Create(ctx_, name, fn_);
    b_.CreateCondBr(ok, next, fail,
                    llvm::MDBuilder(ctx_).createLikelyBranchWeights());
    b_.SetInsertPoint(next);
  }

  //===--------------------------------------------------------------------===//
  // Element types
  //===--------------------------------------------------------------------===//

  // Targets with 32-bit pointers (armv7em, riscv32): 64-bit integer
  // division and float <-> 64-bit integer conversions there are calls into a
  // compiler runtime that embedded links do not have.
  bool narrowTarget() const { return idxTy_->getIntegerBitWidth() < 64; }
  bool needsRuntimeHelper(ElementType from, ElementType to) const {
    auto wideInt = [](ElementType t) {
      return t == ElementType::I64 || t == ElementType::U64;
    };
    return narrowTarget() && ((isFloat(from) && wideInt(to)) ||
                              (wideInt(from) && isFloat(to)));
  }

  ElementType elementTypeOf(unsigned tensor) const {
    return p_.program.tensors[tensor].type.elementType();
  }

  // LLVM type of an element in registers (bool is i1) and in memory (bool is
  // one byte, 0 or 1).
  llvm::Type *valueType(ElementType t) {
    switch (t) {
    case ElementType::F32:
    case ElementType::F16:
    case ElementType::BF16: return b_.getFloatTy();
    case ElementType::F64: return b_.getDoubleTy();
    case ElementType::Bool: return b_.getInt1Ty();
    default: return b_.getIntNTy(8 * graph::elementByteSize(t));
    }
  }
  llvm::Type *storageType(ElementType t) {
    return t == ElementType::Bool ? b_.getInt8Ty()
           : isHalf(t)            ? b_.getInt16Ty()
                                  : valueType(t);
  }

  // |v| (f32) rounded to the precision of half type |t|, still f32.
  llvm::Value *roundToHalf(llvm::Value *v, ElementType t) {
    return t == ElementType::F16
               ? emitHalfToFloat(b_, emitFloatToHalf(b_, v))
               : emitBFloat16ToFloat(b_, emitFloatToBFloat16(b_, v));
  }

  // |v| as a constant of type |t|: integers truncate toward zero and
  // saturate (NaN is 0), bool is v != 0.
  llvm::Constant *typedConstant(double v, ElementType t) {
    if (isHalf(t)) {
      llvm::APFloat h(v);
      bool lost;
      h.convert(t == ElementType::F16 ? llvm::APFloat::IEEEhalf()
                                      : llvm::APFloat::BFloat(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      h.convert(llvm::APFloat::IEEEsingle(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      return llvm::ConstantFP::get(ctx_, h);
    }
    if (isFloat(t)) {
      return llvm::ConstantFP::get(valueType(t), v);
    }
    if (t == ElementType::Bool) {
      return b_.getInt1(v != 0);
    }
    unsigned bits = 8 * graph::elementByteSize(t);
    llvm::Type *ty = valueType(t);
    v = std::isnan(v) ? 0 : std::trunc(v);
    if (isSignedInt(t)) {
      double limit = std::ldexp(1.0, bits - 1);
      if (v <= -limit) {
        return llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(bits));
      }
      if (v >= limit) {
        return llvm::ConstantInt::get(ty, llvm::APInt::getSignedMaxValue(bits));
      }
      return llvm::ConstantInt::getSigned(ty, int64_t(v));
    }
    if (v <= 0) {
      return llvm::ConstantInt::get(ty, 0);
    }
    if (v >= std::ldexp(1.0, bits)) {
      return llvm::ConstantInt::get(ty, llvm::APInt::getMaxValue(bits));
    }
    return llvm::ConstantInt::get(ty, uint64_t(v));
  }

  // Whether the target converts f32 to i32 rounding by the FPSCR mode
  // (Arm VFP's VCVTR).
  bool hasRoundingConvert() const {
    llvm::Triple triple(m_.getTargetTriple());
    llvm::StringRef features = targetFeatures(m_);
    return (triple.isARM() || triple.isThumb()) && features.contains("+vfp");
  }

  // ONNX Cast of |v| from |from| to |to|: float to integer truncates toward
  // zero (saturating, so out-of-range values are defined), integers wrap or
  // extend by the source's signedness, anything to bool is v != 0.
  llvm::Value *castValue(llvm::Value *v, ElementType from, ElementType to) {
    if (from == to) {
      return v;
    }
    llvm::Type *dst = valueType(to);
    if (to == ElementType::Bool) {
      return isFloat(from)
                 ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0))
                 : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (isFloat(from) && isFloat(to)) {
      return b_.CreateFPCast(v, dst);
    }
    if (isFloat(from)) {
      return b_.CreateIntrinsic(isSignedInt(to) ? llvm::Intrinsic::fptosi_sat
                                                : llvm::Intrinsic::fptoui_sat,
                                {dst, v->getType()}, {v});
    }
    if (isFloat(to)) {
      return isSignedInt(from) ? b_.CreateSIToFP(v, dst)
                               : b_.CreateUIToFP(v, dst);
    }
    return b_.CreateIntCast(v, dst, isSignedInt(from));
  }

  // Integer a / b truncating toward zero; INT_MIN / -1 wraps, and a zero
  // divisor makes the dispatch function return kDivisionByZero (dividing by
  // 1 instead, so no undefined division is executed).
  llvm::Value *intDivide(llvm::Value *a, llvm::Value *b, bool isSigned) {
    llvm::Type *ty = a->getType();
    llvm::Value *zero = llvm::ConstantInt::get(ty, 0);
    llvm::Value *one = llvm::ConstantInt::get(ty, 1);
    llvm::Value *nonZero = b_.CreateICmpNE(b, zero);
    noteFailure(nonZero, kDivisionByZero);
    b = b_.CreateSelect(nonZero, b, one);
    if (!isSigned) {
      return b_.CreateUDiv(a, b);
    }
    llvm::Value *minusOne = b_.CreateICmpEQ(b, llvm::Constant::getAllOnesValue(ty));
    llvm::Value *q = b_.CreateSDiv(a, b_.CreateSelect(minusOne, one, b));
    return b_.CreateSelect(minusOne, b_.CreateSub(zero, a), q);
  }

  // base^e for an integer exponent |e| by repeated squaring (|base| integer
  // or float of type |t|). A negative exponent gives 1 / base^-e: for
  // integers that truncates to 0 unless |base| is 1.
  llvm::Value *intPower(llvm::Value *base, llvm::Value *e, ElementType t) {
    bool fp = isFloat(t);
    llvm::Type *ty = base->getType();
    llvm::Type *ety = e->getType();
    llvm::Value *zeroE = llvm::ConstantInt::get(ety, 0);
    llvm::Value *negative = b_.CreateICmpSLT(e, zeroE);
    llvm::Value *magnitude =
        b_.CreateSelect(negative, b_.CreateSub(zeroE, e), e);
    llvm::Value *one = fp ? llvm::ConstantFP::get(ty, 1.0)
                          : llvm::ConstantInt::get(ty, 1);
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "pow", fn_);
    llvm::BasicBlock *body = llvm::BasicBlock::Create(ctx_, "pow_step", fn_);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "pow_done", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *acc = b_.CreatePHI(ty, 2);
    llvm::PHINode *x = b_.CreatePHI(ty, 2);
    llvm::PHINode *n = b_.CreatePHI(ety, 2);
    acc->addIncoming(one, pre);
    x->addIncoming(base, pre);
    n->addIncoming(magnitude, pre);
    b_.CreateCondBr(b_.CreateICmpNE(n, zeroE), body, exit);
    b_.SetInsertPoint(body);
    auto mul = [&](llvm::Value *l, llvm::Value *r) {
      return fp ? b_.CreateFMul(l, r) : b_.CreateMul(l, r);
    };
    llvm::Value *odd = b_.CreateTrunc(n, b_.getInt1Ty());
    acc->addIncoming(b_.CreateSelect(odd, mul(acc, x), acc), body);
    x->addIncoming(mul(x, x), body);
    n->addIncoming(b_.CreateLShr(n, llvm::ConstantInt::get(ety, 1)), body);
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    llvm::Value *r = acc;
    if (fp) {
      return b_.CreateSelect(negative, b_.CreateFDiv(one, r), r);
    }
    // 1 / r truncated: r for r = +-1, else 0.
    llvm::Value *unit = b_.CreateOr(
        b_.CreateICmpEQ(r, one),
        b_.CreateICmpEQ(r, llvm::Constant::getAllOnesValue(ty)));
    llvm::Value *inverse =
        b_.CreateSelect(unit, r, llvm::ConstantInt::get(ty, 0));
    return b_.CreateSelect(negative, inverse, r);
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

  // The smallest and largest value body node |node| of |o| takes when it is
  // a constant or reads a constant i32 tensor (per-channel shifts).
  std::optional<ShiftRange> valueRange(const StructuredOp &o, unsigned node) {
    const structured::ScalarNode &n = o.body.nodes()[node];
    if (n.kind == ScalarKind::Const) {
      return ShiftRange{int64_t(n.value), int64_t(n.value)};
    }
    if (n.kind != ScalarKind::Input || n.index >= o.inputs.size()) {
      return std::nullopt;
    }
    const structured::TensorInfo &info =
        p_.program.tensors[o.inputs[n.index].tensor];
    if (!info.constant || info.type.elementType() != ElementType::I32) {
      return std::nullopt;
    }
    llvm::ArrayRef<uint8_t> bytes = info.constant->bytes();
    if (bytes.empty() || bytes.size() % 4 != 0) {
      return std::nullopt;
    }
    ShiftRange range{INT64_MAX, INT64_MIN};
    for (size_t at = 0; at < bytes.size(); at += 4) {
      int32_t value;
      std::memcpy(&value, bytes.data() + at, 4);
      range.min = std::min<int64_t>(range.min, value);
      range.max = std::max<int64_t>(range.max, value);
    }
    return range;
  }

  // Emits |o|'s body at |ivs| (|acc|: a reduction's accumulator). Values
  // carry their element type; the result has the type of |o|'s output.
  absl::StatusOr<llvm::Value *> evalBody(const StructuredOp &o,
                                         llvm::ArrayRef<llvm::Value *> ivs,
                                         llvm::Value *acc) {
    const auto &nodes = o.body.nodes();
    ElementType outType = elementTypeOf(o.output.tensor);
    std::vector<llvm::Value *> v(nodes.size(), nullptr);
    std::vector<ElementType> ty(nodes.size(), ElementType::F32);
    std::map<unsigned, llvm::Value *> loaded;
    auto typeName = [](ElementType t) { return graph::elementTypeName(t).str(); };
    for (unsigned i = 0; i < nodes.size(); ++i) {
      const structured::ScalarNode &n = nodes[i];
      // A constant operand takes the type of the values it combines with (a
      // select's condition is bool), f32 when there are none.
      std::optional<ElementType> peer;
      for (size_t k = n.kind == ScalarKind::Select ? 1 : 0;
           k < n.operands.size() && !peer; ++k) {
        if (nodes[n.operands[k]].kind != ScalarKind::Const) {
          peer = ty[n.operands[k]];
        }
      }
      std::vector<llvm::Value *> args;
      std::vector<ElementType> argTy;
      for (size_t k = 0; k < n.operands.size(); ++k) {
        unsigned m = n.operands[k];
        if (nodes[m].kind != ScalarKind::Const) {
          args.push_back(v[m]);
          argTy.push_back(ty[m]);
          continue;
        }
        ElementType t = n.kind == ScalarKind::Select && k == 0
                            ? ElementType::Bool
                            : peer.value_or(ElementType::F32);
        double c = nodes[m].value;
        if (!isFloat(t) && c != std::trunc(c)) {
          return unimplemented(o, "the non-integer constant " +
                                      std::to_string(c) + " in " +
                                      typeName(t) + " arithmetic");
        }
        args.push_back(typedConstant(c, t));
        argTy.push_back(t);
      }
      auto a = [&](unsigned k) { return args[k]; };
      ElementType t = argTy.empty() ? ElementType::F32 : argTy[0];
      bool fp = isFloat(t);
      bool f32Only = t == ElementType::F32 || isHalf(t);
      bool signedInt = isSignedInt(t);
      auto notFor = [&](const char *what) {
        return unimplemented(o, std::string(what) + " on " + typeName(t));
      };
      if (n.operands.size() == 2 && n.kind != ScalarKind::Pow &&
          argTy[0] != argTy[1]) {
        return unimplemented(o, "an operation mixing " + typeName(argTy[0]) +
                                    " and " + typeName(argTy[1]));
      }
      ty[i] = t;
      switch (n.kind) {
      case ScalarKind::Input: {
        auto it = loaded.find(n.index);
        if (it == loaded.end()) {
          it = loaded.emplace(n.index, loadInput(o, n.index, ivs)).first;
        }
        v[i] = it->second;
        ty[i] = elementTypeOf(o.inputs[n.index].tensor);
        break;
      }
      case ScalarKind::Output:
        if (!acc) {
          return absl::InvalidArgumentError(
              "node '" + o.nodeName +
              "': body reads the accumulator of an op without reductions");
        }
        v[i] = acc;
        ty[i] = outType;
        break;
      case ScalarKind::Const: v[i] = f32(n.value); break;
      case ScalarKind::Neg:
        if (t == ElementType::Bool) {
          return notFor("negation");
        }
        v[i] = fp ? b_.CreateFNeg(a(0))
                  : b_.CreateSub(llvm::ConstantInt::get(a(0)->getType(), 0),
                                 a(0));
        break;
      case ScalarKind::Abs:
        if (t == ElementType::Bool) {
          return notFor("abs");
        }
        v[i] = fp ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a(0))
               : signedInt
                   ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a(0),
                                              b_.getFalse())
                   : a(0);
        break;
      case ScalarKind::Exp:
      case ScalarKind::Log:
      case ScalarKind::Tanh:
      case ScalarKind::Erf:
      case ScalarKind::Sigmoid:
      case ScalarKind::Sin:
      case ScalarKind::Cos:
      case ScalarKind::Tan:
      case ScalarKind::Atan:
      case ScalarKind::Sinh:
      case ScalarKind::Cosh:
      case ScalarKind::Asinh:
      case ScalarKind::Acosh:
      case ScalarKind::Atanh:
        if (t == ElementType::F64 &&
            (n.kind == ScalarKind::Exp || n.kind == ScalarKind::Log)) {
          v[i] = n.kind == ScalarKind::Exp ? emitExpF64(b_, a(0))
                                           : emitLogF64(b_, a(0));
          break;
        }
        if (!f32Only) {
          return notFor("a transcendental function other than exp and log");
        }
        v[i] = emitTranscendental(b_, n.kind, a(0));
        break;
      case ScalarKind::Sqrt:
      case ScalarKind::Rsqrt:
      case ScalarKind::Recip: {
        if (!fp) {
          return notFor("sqrt or reciprocal");
        }
        llvm::Value *x = a(0);
        if (n.kind != ScalarKind::Recip) {
          x = b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
        }
        v[i] = n.kind == ScalarKind::Sqrt
                   ? x
                   : b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), x);
        break;
      }
      case ScalarKind::Cast:
        if (needsRuntimeHelper(t, n.castTo)) {
          return unimplemented(o, "a cast from " + typeName(t) + " to " +
                                      typeName(n.castTo) + " on a 32-bit target");
        }
        if (t == ElementType::F32 && n.castTo == ElementType::I32 &&
            nodes[n.operands[0]].kind == ScalarKind::RoundEven &&
            hasRoundingConvert()) {
          // cast<i32>(roundeven(x)), quantization's rounding: one VCVTR,
          // which rounds by the FPSCR mode (to nearest even, as the
          // rounding itself assumes), saturates and gives 0 for NaN, as
          // the saturating cast does.
          llvm::Value *x = v[nodes[n.operands[0]].operands[0]];
          v[i] = b_.CreateBitCast(
              b_.CreateIntrinsic(llvm::Intrinsic::arm_vcvtr, {x->getType()},
                                 {x}),
              b_.getInt32Ty());
        } else {
          v[i] = castValue(a(0), t, n.castTo);
        }
        ty[i] = n.castTo;
        break;
      case ScalarKind::Add:
      case ScalarKind::Sub:
      case ScalarKind::Mul:
        if (t == ElementType::Bool) {
          return notFor("arithmetic");
        }
        if (fp) {
          v[i] = arith(n.kind == ScalarKind::Add   ? b_.CreateFAdd(a(0), a(1))
                       : n.kind == ScalarKind::Sub ? b_.CreateFSub(a(0), a(1))
                                                   : b_.CreateFMul(a(0), a(1)));
        } else {
          // Integer arithmetic wraps (no nsw/nuw): overflow is defined.
          v[i] = n.kind == ScalarKind::Add   ? b_.CreateAdd(a(0), a(1))
                 : n.kind == ScalarKind::Sub ? b_.CreateSub(a(0), a(1))
                                             : b_.CreateMul(a(0), a(1));
        }
        break;
      case ScalarKind::Div:
        if (t == ElementType::Bool) {
          return notFor("division");
        }
        if (!fp && narrowTarget() && graph::elementByteSize(t) == 8) {
          return unimplemented(o, "64-bit integer division on a 32-bit target");
        }
        v[i] = fp ? b_.CreateFDiv(a(0), a(1))
                  : intDivide(a(0), a(1), signedInt);
        break;
      case ScalarKind::Max:
      case ScalarKind::Min: {
        bool isMax = n.kind == ScalarKind::Max;
        if (fp) {
          v[i] = isMax ? emitMax(b_, a(0), a(1)) : emitMin(b_, a(0), a(1));
        } else {
          llvm::Intrinsic::ID id =
              signedInt ? (isMax ? llvm::Intrinsic::smax : llvm::Intrinsic::smin)
                        : (isMax ? llvm::Intrinsic::umax : llvm::Intrinsic::umin);
          v[i] = b_.CreateBinaryIntrinsic(id, a(0), a(1));
        }
        break;
      }
      case ScalarKind::Pow: {
        COMPILER_ASSIGN_OR_RETURN(v[i], emitPow(o, nodes[n.operands[1]],
                                                a(0), argTy[0], a(1), argTy[1]));
        break;
      }
      case ScalarKind::CmpEq:
      case ScalarKind::CmpLt:
      case ScalarKind::CmpGt:
      case ScalarKind::CmpLe:
      case ScalarKind::CmpGe: {
        ty[i] = ElementType::Bool;
        // Ordered float comparisons: false when either side is NaN.
        using P = llvm::CmpInst::Predicate;
        P fpred = P::FCMP_OEQ, ipred = P::ICMP_EQ;
        switch (n.kind) {
        case ScalarKind::CmpLt:
          fpred = P::FCMP_OLT;
          ipred = signedInt ? P::ICMP_SLT : P::ICMP_ULT;
          break;
        case ScalarKind::CmpGt:
          fpred = P::FCMP_OGT;
          ipred = signedInt ? P::ICMP_SGT : P::ICMP_UGT;
          break;
        case ScalarKind::CmpLe:
          fpred = P::FCMP_OLE;
          ipred = signedInt ? P::ICMP_SLE : P::ICMP_ULE;
          break;
        case ScalarKind::CmpGe:
          fpred = P::FCMP_OGE;
          ipred = signedInt ? P::ICMP_SGE : P::ICMP_UGE;
          break;
        default:
          break;
        }
        v[i] = fp ? b_.CreateFCmp(fpred, a(0), a(1))
                  : b_.CreateICmp(ipred, a(0), a(1));
        break;
      }
      case ScalarKind::RoundEven:
        if (!fp) {
          return notFor("rounding");
        }
        v[i] = emitRoundHalfEven(b_, a(0));
        break;
      case ScalarKind::AddSat:
        if (fp || t == ElementType::Bool) {
          return notFor("saturating addition");
        }
        v[i] = emitAddSat(b_, a(0), a(1));
        break;
      case ScalarKind::ShiftLeft:
      case ScalarKind::ShiftRight: {
        if (fp || t == ElementType::Bool || signedInt) {
          return notFor("bit shifts (unsigned integers only)");
        }
        unsigned bits = a(0)->getType()->getScalarSizeInBits();
        llvm::Value *shifted = n.kind == ScalarKind::ShiftLeft
                                   ? b_.CreateShl(a(0), a(1))
                                   : b_.CreateLShr(a(0), a(1));
        // LLVM's shifts by the width or more are poison.
        v[i] = b_.CreateSelect(
            b_.CreateICmpULT(a(1), llvm::ConstantInt::get(a(1)->getType(), bits)),
            shifted, llvm::ConstantInt::get(a(0)->getType(), 0));
        break;
      }
      case ScalarKind::Requantize:
        if (argTy[0] != ElementType::I32 || argTy[1] != ElementType::I32 ||
            argTy[2] != ElementType::I32) {
          return unimplemented(o, "requantization of " + typeName(argTy[0]) +
                                      " (i32 only)");
        }
        v[i] = emitRequantize(b_, a(0), a(1), a(2),
                              valueRange(o, n.operands[2]));
        break;
      case ScalarKind::Select:
        if (argTy[1] != argTy[2]) {
          return unimplemented(o, "a select between " + typeName(argTy[1]) +
                                      " and " + typeName(argTy[2]));
        }
        v[i] = b_.CreateSelect(castValue(a(0), argTy[0], ElementType::Bool),
                               a(1), a(2));
        ty[i] = argTy[1];
        break;
      }
      // A computed half-float value is rounded to its type, as one op on
      // half floats gives it (loads, selects, max, min, abs and negation of
      // half values are exact already). Reductions (sums of products of
      // convolutions and matrix products) accumulate in f32 and round once,
      // when stored.
      bool exact = o.hasReduction() || n.kind == ScalarKind::Input ||
                   n.kind == ScalarKind::Output ||
                   n.kind == ScalarKind::Const || n.kind == ScalarKind::Select ||
                   n.kind == ScalarKind::Max || n.kind == ScalarKind::Min ||
                   n.kind == ScalarKind::Abs || n.kind == ScalarKind::Neg;
      if (isHalf(ty[i]) && !exact) {
        v[i] = roundToHalf(v[i], ty[i]);
      }
    }
    unsigned r = o.body.result();
    if (nodes[r].kind == ScalarKind::Const) {
      return typedConstant(nodes[r].value, outType);
    }
    if (ty[r] != outType) {
      return unimplemented(o, "a body yielding " + typeName(ty[r]) +
                                  " into a " + typeName(outType) + " result");
    }
    return v[r];
  }

  // The value of the exponent |expNode| of a Pow in |o| when it is the same
  // at every index: a body constant, or an input that is a constant tensor
  // whose elements are all equal (exporters write Pow(x, 2) with a scalar
  // initializer).
  std::optional<double> splatExponent(const StructuredOp &o,
                                      const structured::ScalarNode &expNode) {
    if (expNode.kind == ScalarKind::Const) {
      return expNode.value;
    }
    if (expNode.kind != ScalarKind::Input || o.inputs[expNode.index].indirect) {
      return std::nullopt;
    }
    const auto &tensor = p_.program.tensors[o.inputs[expNode.index].tensor];
    if (!tensor.constant) {
      return std::nullopt;
    }
    ElementType t = tensor.type.elementType();
    int64_t n = tensor.type.numElements();
    if (n <= 0 || !(isFloat(t) || graph::isIntegerType(t))) {
      return std::nullopt;
    }
    double first = tensor.constant->getDouble(t, 0);
    for (int64_t i = 1; i < n; ++i) {
      if (tensor.constant->getDouble(t, i) != first) {
        return std::nullopt;
      }
    }
    return first;
  }

  // f32 |base| to the constant power |c|, or nullptr when |c| takes the
  // general path. Integral exponents up to 32 multiply by repeated squaring
  // (exact signs for negative bases; a negative exponent divides once at
  // the end), 0.5 and -0.5 are square roots with powf's results for -0 and
  // -inf.
  llvm::Value *constantPower(llvm::Value *base, double c) {
    llvm::Type *ty = base->getType();
    auto fc = [&](double v) { return llvm::ConstantFP::get(ty, v); };
    if (c == 0.0) {
      return fc(1.0); // also for a NaN base
    }
    if (c == std::trunc(c) && std::fabs(c) <= 32) {
      auto n = static_cast<unsigned>(std::fabs(c));
      llvm::Value *acc = nullptr;
      llvm::Value *square = base;
      for (; n; n >>= 1) {
        if (n & 1) {
          acc = acc ? b_.CreateFMul(acc, square) : square;
        }
        if (n > 1) {
          square = b_.CreateFMul(square, square);
        }
      }
      return c > 0 ? acc : b_.CreateFDiv(fc(1.0), acc);
    }
    if (std::fabs(c) == 0.5) {
      // sqrt(-0) is -0 and sqrt(-inf) NaN, where powf gives +0 and +inf
      // (+inf and +0 for -0.5): adding +0 turns -0 into +0.
      llvm::Value *root = b_.CreateFAdd(
          b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, base), fc(0.0));
      llvm::Value *minusInf = b_.CreateFCmpOEQ(base, fc(-INFINITY));
      if (c > 0) {
        return b_.CreateSelect(minusInf, fc(INFINITY), root);
      }
      return b_.CreateSelect(minusInf, fc(0.0), b_.CreateFDiv(fc(1.0), root));
    }
    return nullptr;
  }

  // ONNX Pow, with C powf's results for negative bases, zeros, infinities
  // and NaN. f32 ** f32: a constant exponent takes constantPower where it
  // can, others emitPow (exp(e * log|b|) with the sign and special cases
  // fixed up). An integer exponent multiplies by repeated squaring; an
  // integer base with an f32 exponent squares for integral exponents and
  // truncates the f32 power otherwise.
  absl::StatusOr<llvm::Value *> emitPow(const StructuredOp &o,
                                        const structured::ScalarNode &expNode,
                                        llvm::Value *base, ElementType baseTy,
                                        llvm::Value *e, ElementType expTy) {
    if (baseTy == ElementType::F32 &&
        (expTy == ElementType::F32 || graph::isIntegerType(expTy))) {
      if (std::optional<double> c = splatExponent(o, expNode)) {
        if (llvm::Value *v = constantPower(base, *c)) {
          return v;
        }
      }
    }
    if (baseTy == ElementType::F32 && expTy == ElementType::F32) {
      return llvm_cpu::emitPow(b_, base, e);
    }
    bool baseOk = isFloat(baseTy) || isSignedInt(baseTy) ||
                  graph::isIntegerType(baseTy);
    if (baseOk && graph::isIntegerType(expTy)) {
      return intPower(base,
                      b_.CreateIntCast(e, b_.getInt64Ty(), isSignedInt(expTy)),
                      baseTy);
    }
    if (graph::isIntegerType(baseTy) && expTy == ElementType::F32) {
      if (needsRuntimeHelper(ElementType::F32, baseTy)) {
        return unimplemented(o, "Pow of " +
                                    graph::elementTypeName(baseTy).str() +
                                    " by f32 on a 32-bit target");
      }
      // An exponent beyond 32 bits saturates; it is not integral-valued in
      // any useful sense.
      llvm::Value *ei = castValue(e, ElementType::F32, ElementType::I32);
      llvm::Value *integral =
          b_.CreateFCmpOEQ(castValue(ei, ElementType::I32, ElementType::F32), e);
      llvm::Value *exact = intPower(base, ei, baseTy);
      llvm::Value *fb = castValue(base, baseTy, ElementType::F32);
      llvm::Value *fpow = llvm_cpu::emitPow(b_, fb, e);
      return b_.CreateSelect(integral, exact,
                             castValue(fpow, ElementType::F32, baseTy));
    }
    return unimplemented(o, "Pow of " + graph::elementTypeName(baseTy).str() +
                                " by " + graph::elementTypeName(expTy).str());
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
      b_.CreateStore(accInit(), acc_);
      absl::Status status = absl::OkStatus();
      collapsedNest(reduction, lo, hi, ivs, [&] {
        auto v = evalBody(root, ivs, b_.CreateLoad(accType(), acc_));
        if (!v.ok()) {
          status = v.status();
          return;
        }
        b_.CreateStore(*v, acc_);
      });
      COMPILER_RETURN_IF_ERROR(status);
      value = b_.CreateLoad(accType(), acc_);
    } else {
      COMPILER_ASSIGN_OR_RETURN(value, evalBody(root, ivs, nullptr));
    }
    return finishElement(value, ivs);
  }

  // Runs the fused ops on the root's result |value| at loop indices |ivs|
  // and stores the region's written values: the last op's, and any other
  // value the region writes (read outside the region). The fused ops form a
  // DAG: each may read any earlier value of the region (all at the same
  // index, see structured::fuseAndTile), kept in internal_.
  absl::Status finishElement(llvm::Value *value,
                             llvm::ArrayRef<llvm::Value *> ivs) {
    const StructuredOp &root = op(0);
    internal_.clear();
    // A half-float reduction's f32 sum is rounded once, before the fused
    // ops read it too.
    ElementType rootType = elementTypeOf(root.output.tensor);
    if (isHalf(rootType) && root.hasReduction()) {
      value = roundToHalf(value, rootType);
    }
    auto store = [&](unsigned tensor, llvm::Value *v,
                     llvm::ArrayRef<llvm::Value *> at) {
      ElementType et = elementTypeOf(tensor);
      if (et == ElementType::Bool) {
        v = b_.CreateZExt(v, b_.getInt8Ty());
      } else if (et == ElementType::F16) {
        v = emitFloatToHalf(b_, v);
      } else if (et == ElementType::BF16) {
        v = emitFloatToBFloat16(b_, v);
      }
      b_.CreateStore(v, address(tensor, at));
    };
    // Fused ops iterate over the root's output index space.
    std::vector<llvm::Value *> outIdx;
    for (const AffineExpr &e : root.output.map.results) {
      outIdx.push_back(evalExpr(e, ivs));
    }
    const StructuredOp *last = &root;
    for (unsigned i = 1; i < r_.ops.size(); ++i) {
      internal_[last->output.tensor] = value;
      if (writes(last->output.tensor)) {
        store(last->output.tensor, value, outIdx);
      }
      last = &op(i);
      COMPILER_ASSIGN_OR_RETURN(value, evalBody(*last, outIdx, nullptr));
      std::vector<llvm::Value *> next;
      for (const AffineExpr &e : last->output.map.results) {
        next.push_back(evalExpr(e, outIdx));
      }
      outIdx = std::move(next);
    }
    store(last->output.tensor, value, outIdx);
    return absl::OkStatus();
  }

  // Whether the region has a write binding for |tensor|.
  bool writes(unsigned tensor) const {
    return std::any_of(r_.bindings.begin(), r_.bindings.end(),
                       [&](const dispatch::Binding &b) {
                         return b.write && b.tensor == tensor;
                       });
  }

  const DispatchProgram &p_;
  const DispatchRegion &r_;
  const CodegenOptions &options_;
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
  // See accessStrides().
  std::vector<std::vector<int64_t>> strides_;
  // Blocks returning a failure code, by code.
  std::map<int32_t, llvm::BasicBlock *> failBlocks_;
  // Failure code noted by data-dependent checks (see noteFailure()).
  llvm::AllocaInst *failCode_ = nullptr;
};

} // namespace

absl::StatusOr<llvm::Function *>
emitDispatchFunction(const DispatchProgram &program,
                     const DispatchRegion &region, llvm::Module &module,
                     const CodegenOptions &options) {
  return RegionEmitter(program, region, module, options).emit();
}

} // namespace osprey::compiler::llvm_cpu
