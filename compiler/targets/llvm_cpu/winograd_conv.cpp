// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution tiles through the
// packed path's microkernels.
//
// Per workgroup (output channels [co0, co1), output rows [oh0, oh1),
// columns [ow0, ow1)), in chunks of whole rows of m x m output tiles
// (m = plan.m; tiles flattened, t = ty * tw + tx), with n = m + 2 and
// P = n * n transform positions:
//   1. input transform: the chunk's input rows of every channel are copied
//      into zero-padded planes on the stack (padding and the map's edges
//      resolved once), then for vectors of tiles each n x n patch d
//      becomes B^T d B (one wide load per patch row split into columns by
//      shuffles), stored as V[k][ci][t]: P panels in the layout the packed
//      microkernel reads as B;
//   2. products M_k = U_k x V_k for the P positions, U the compile-time
//      transformed weights (structured::transformWinogradWeights made them
//      the root's weights operand, in the layout of the schedule):
//      - untransposed, per block of MR output channels: the pixel-oriented
//        kernel over NR-wide chunks of tiles, U read in place as A;
//      - transposed, for a chunk of at most 64 tiles that is no whole
//        number of panels (14x14 maps: 49 tiles): blocks of a few tiles
//        broadcast from V times 32-channel rows of U^T, through the
//        transposed kernel (see transposedTail);
//   3. output transform A^T M A into output rows on the stack (tile rows
//      interleaved by shuffles), then the region's epilogue along each
//      row. Tiles past an odd edge compute junk outputs that are never
//      stored.
// F(2x2, 3x3) multiplies 16 values per 4 outputs, F(4x4, 3x3) 36 per 16,
// instead of 9 per output; the transforms cost a few additions per input
// and output element and channel, which is why structured::planWinograd
// asks for enough channels.
#include "compiler/targets/llvm_cpu/winograd_conv.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/structured/winograd.h"
#include "compiler/targets/llvm_cpu/matvec.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using structured::StructuredOp;
using structured::WinogradPlan;

class WinogradEmitter : public TileEmitter {
public:
  WinogradEmitter(const dispatch::DispatchProgram &p,
                  const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                  llvm::Function *fn, const WinogradPlan &plan,
                  const GemmKernelShape &shape, const TileHooks &hooks)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan), shape_(shape) {
    nr_ = shape.vectorWidth * shape.nv;
    f32_ = b.getFloatTy();
  }

  // Takes the static sizes of |sched| (from structured::scheduleWinograd).
  void size(const structured::WinogradSchedule &sched) {
    sched_ = sched;
    tm_ = sched.m;
    pos_ = sched.positions();
    vf_ = sched.vf;
    twMax_ = sched.twMax;
    rowsPerChunk_ = sched.rowsPerChunk;
    tPad_ = sched.tPad;
    vK_ = sched.vK;
    mK_ = sched.mK;
    blockRows_ = sched.blockRows;
    transposed_ = sched.transposed;
    mrT_ = sched.mrT;
    coPad_ = sched.coPad;
  }

  // The workgroup's extents of the root's loops co, oh and ow.
  int64_t maxCo() const { return maxExtent(plan_.co); }
  int64_t maxOh() const { return maxExtent(plan_.oh); }
  int64_t maxOw() const { return maxExtent(plan_.ow); }

  int64_t pitch() const { return sched_.pitch(); }
  int64_t zRows() const { return sched_.zRows(); }
  int64_t zPitch() const { return sched_.zPitch(); }
  int64_t planeSize() const { return sched_.planeSize(); }

  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi) {
    const StructuredOp &op = root();
    llvm::Value *u = weights();
    auto scratch = [&](int64_t n, const char *name) {
      llvm::AllocaInst *a =
          b_.CreateAlloca(llvm::ArrayType::get(f32_, n), nullptr, name);
      a->setAlignment(llvm::Align(64));
      return a;
    };
    int64_t pitch = this->pitch(), zPitch = this->zPitch();
    int64_t zRows = this->zRows(), planeSize = this->planeSize();
    // Vectors of tiles past the last one read and write up to a vector
    // (and the patch's 2 extra columns) beyond each array's last row.
    llvm::AllocaInst *plane =
        scratch(plan_.cin * planeSize + wideLoad(), "wino_plane");
    llvm::AllocaInst *panels = scratch(pos_ * vK_ + vf_, "wino_panels");
    llvm::AllocaInst *prods = scratch(pos_ * mK_ + vf_, "wino_products");
    llvm::AllocaInst *rows = scratch(
        (transposed_ ? coPad_ : blockRows_) * zRows * zPitch, "wino_rows");

    ivs_.assign(lo.begin(), lo.end());
    for (unsigned d : plan_.gemm.kLoops) {
      ivs_[d] = idx(0);
    }
    // Input addressing: element offset base + ci * ciStride + ih * rowStride
    // + iw, rows in [0, inH), columns in [0, inW).
    const structured::OperandAccess &in = op.inputs[plan_.gemm.b];
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    int64_t stride = 1, ciStride = 0, rowStride = 0;
    llvm::Value *base = idx(0);
    for (size_t k = dims.size(); k-- > 0;) {
      const structured::AffineExpr &e = in.map.results[k];
      if (k == plan_.rowResult) {
        rowStride = stride;
      } else if (e.asDim() == plan_.ci) {
        ciStride = stride;
      } else if (k + 1 != dims.size()) {
        base = b_.CreateAdd(base, b_.CreateMul(evalExpr(e), idx(stride)));
      }
      stride *= dims[k];
    }
    int64_t inH = dims[plan_.rowResult], inW = dims.back();
    llvm::Value *input = hooks_.base(in.tensor);

    llvm::Value *ohLo = lo[plan_.oh], *owLo = lo[plan_.ow];
    llvm::Value *owExt = b_.CreateSub(hi[plan_.ow], owLo);
    llvm::Value *tw = ceilDiv(owExt, tm_);
    llvm::Value *th = ceilDiv(b_.CreateSub(hi[plan_.oh], ohLo), tm_);
    llvm::Value *cols = b_.CreateAdd(b_.CreateMul(tw, idx(tm_)), idx(2));
    // Plane columns c read input column owLo - padW + c; [c0, c1) are
    // inside the input.
    llvm::Value *iw0 = b_.CreateSub(owLo, idx(plan_.padW));
    llvm::Value *c0 = smin(smax(b_.CreateSub(idx(0), iw0), idx(0)), cols);
    llvm::Value *c1 = smax(smin(b_.CreateSub(idx(inW), iw0), cols), c0);
    llvm::Value *mExt = b_.CreateSub(hi[plan_.co], lo[plan_.co]);
    llvm::Value *mBlocks = ceilDiv(mExt, blockRows_);
    llvm::Value *chunks = ceilDiv(th, rowsPerChunk_);
    absl::Status status = absl::OkStatus();

    loop(idx(0), chunks, [&](llvm::Value *chunk) {
      llvm::Value *tr0 = b_.CreateMul(chunk, idx(rowsPerChunk_));
      llvm::Value *ths = smin(b_.CreateSub(th, tr0), idx(rowsPerChunk_));
      llvm::Value *tiles = b_.CreateMul(ths, tw);
      llvm::Value *tilesPad = transposed_
                                  ? idx(tPad_)
                                  : b_.CreateMul(ceilDiv(tiles, nr_), idx(nr_));
      llvm::Value *orow0 = b_.CreateAdd(ohLo, b_.CreateMul(tr0, idx(tm_)));
      // Panel columns past the last tile: zero, so the products there are
      // finite (they are never stored).
      loop(idx(0), idx(pos_ * plan_.cin), [&](llvm::Value *row) {
        llvm::Value *at = b_.CreateAdd(
            b_.CreateMul(b_.CreateUDiv(row, idx(plan_.cin)), idx(vK_)),
            b_.CreateMul(b_.CreateURem(row, idx(plan_.cin)), idx(tPad_)));
        loop(tiles, tilesPad, [&](llvm::Value *t) {
          b_.CreateStore(
              llvm::ConstantFP::get(f32_, 0.0),
              b_.CreateInBoundsGEP(f32_, panels, b_.CreateAdd(at, t)));
        });
      });
      // 1. Input transform: all planes first, then all tiles (a tile's
      // wide loads right after the copy's narrower stores of the same
      // plane would miss store forwarding).
      loop(idx(0), idx(plan_.cin), [&](llvm::Value *ci) {
        fillPlane(
            b_.CreateInBoundsGEP(f32_, plane, b_.CreateMul(ci, idx(planeSize))),
            input, base, ci, ciStride, rowStride, inH,
            b_.CreateSub(orow0, idx(plan_.padH)),
            b_.CreateAdd(b_.CreateMul(ths, idx(tm_)), idx(2)), pitch, iw0, cols,
            c0, c1);
      });
      loop(idx(0), idx(plan_.cin), [&](llvm::Value *ci) {
        llvm::Value *ciAt = b_.CreateMul(ci, idx(planeSize));
        loop(idx(0), ths, [&](llvm::Value *ty) {
          llvm::Value *rowAt =
              b_.CreateAdd(ciAt, b_.CreateMul(ty, idx(tm_ * pitch)));
          llvm::Value *tAt = b_.CreateMul(ty, tw);
          stepLoop(idx(0), tw, vf_, LoopHint::kNoVectorize,
                   [&](llvm::Value *tx) {
                     inputTile(plane,
                               b_.CreateAdd(rowAt, b_.CreateMul(tx, idx(tm_))),
                               pitch, panels, ci, b_.CreateAdd(tAt, tx));
                   });
        });
      });
      if (transposed_) {
        status = transposedTail(u, panels, prods, rows, lo, hi, mExt, ths, tw,
                                tiles, orow0, zPitch);
        return;
      }
      // 2. and 3. per block of output channels.
      loop(idx(0), mBlocks, [&](llvm::Value *mb) {
        llvm::Value *m0 = b_.CreateMul(mb, idx(blockRows_));
        llvm::Value *rowsM = smin(b_.CreateSub(mExt, m0), idx(blockRows_));
        llvm::Value *co = b_.CreateAdd(lo[plan_.co], m0);
        loop(idx(0), idx(pos_ * mK_), [&](llvm::Value *i) {
          b_.CreateStore(llvm::ConstantFP::get(f32_, 0.0),
                         b_.CreateInBoundsGEP(f32_, prods, i));
        });
        products(u, co, rowsM, panels, prods, tiles);
        loop(idx(0), rowsM, [&](llvm::Value *r) {
          llvm::Value *mAt = b_.CreateMul(r, idx(tPad_));
          llvm::Value *zAt = b_.CreateMul(r, idx(zRows * zPitch));
          loop(idx(0), ths, [&](llvm::Value *ty) {
            llvm::Value *tAt = b_.CreateMul(ty, tw);
            llvm::Value *zRow =
                b_.CreateAdd(zAt, b_.CreateMul(ty, idx(tm_ * zPitch)));
            stepLoop(
                idx(0), tw, vf_, LoopHint::kNoVectorize, [&](llvm::Value *tx) {
                  outputRows(
                      prods, b_.CreateAdd(mAt, b_.CreateAdd(tAt, tx)), rows,
                      b_.CreateAdd(zRow, b_.CreateMul(tx, idx(tm_))), zPitch);
                });
          });
        });
        // Epilogue along each output row.
        llvm::Value *oyEnd = smin(b_.CreateMul(ths, idx(tm_)),
                                  b_.CreateSub(hi[plan_.oh], orow0));
        loop(idx(0), rowsM, [&](llvm::Value *r) {
          ivs_[plan_.co] = b_.CreateAdd(co, r);
          llvm::Value *zAt = b_.CreateMul(r, idx(zRows * zPitch));
          loop(idx(0), oyEnd, [&](llvm::Value *oy) {
            ivs_[plan_.oh] = b_.CreateAdd(orow0, oy);
            llvm::Value *zRow =
                b_.CreateAdd(zAt, b_.CreateMul(oy, idx(zPitch)));
            loop(
                idx(0), owExt,
                [&](llvm::Value *ox) {
                  ivs_[plan_.ow] = b_.CreateAdd(owLo, ox);
                  finishSum(rows, b_.CreateAdd(zRow, ox), status);
                },
                LoopHint::kNoInterleave);
          });
        });
        ivs_[plan_.co] = lo[plan_.co];
        ivs_[plan_.oh] = lo[plan_.oh];
        ivs_[plan_.ow] = lo[plan_.ow];
      });
    });
    return status;
  }

private:
  // Products, output transform and epilogue of transposed tiles: C^T[t][co]
  // = V_k^T U_k^T, blocks of mrT_ tiles broadcast from the panels times
  // 32 channels of a row of U^T[k][ci][co] (each 32-channel panel of U_k
  // read from memory once and reused from L1 by every tile block), so 49
  // tiles are 7 blocks of 7 instead of 64 vector columns; then the output
  // transform vectorized along channels into rows[oy][ox][co] and the
  // epilogue channel by channel.
  absl::Status transposedTail(llvm::Value *ut, llvm::Value *panels,
                              llvm::Value *prods, llvm::Value *rows,
                              llvm::ArrayRef<llvm::Value *> lo,
                              llvm::ArrayRef<llvm::Value *> hi,
                              llvm::Value *mExt, llvm::Value *ths,
                              llvm::Value *tw, llvm::Value *tiles,
                              llvm::Value *orow0, int64_t zPitch) {
    loop(idx(0), idx(pos_ * mK_), [&](llvm::Value *i) {
      b_.CreateStore(llvm::ConstantFP::get(f32_, 0.0),
                     b_.CreateInBoundsGEP(f32_, prods, i));
    });
    llvm::Value *panelsCo = ceilDiv(mExt, nr_);
    llvm::Value *blocks = ceilDiv(tiles, mrT_);
    int64_t ldu = uTPitch();
    loop(idx(0), idx(pos_), [&](llvm::Value *k) {
      llvm::Value *vk = b_.CreateMul(k, idx(vK_));
      llvm::Value *mk = b_.CreateMul(k, idx(mK_));
      llvm::Value *uk = b_.CreateMul(k, idx(plan_.cin * ldu));
      loop(idx(0), panelsCo, [&](llvm::Value *pc) {
        llvm::Value *c0 = b_.CreateMul(pc, idx(nr_));
        llvm::Value *w = b_.CreateInBoundsGEP(
            f32_, ut, b_.CreateAdd(uk, b_.CreateAdd(lo[plan_.co], c0)));
        llvm::Value *wide =
            b_.CreateICmpSGT(b_.CreateSub(mExt, c0), idx(shape_.vectorWidth));
        loop(idx(0), blocks, [&](llvm::Value *tb) {
          llvm::Value *t0 = b_.CreateMul(tb, idx(mrT_));
          llvm::Value *rowsT = smin(b_.CreateSub(tiles, t0), idx(mrT_));
          llvm::Value *x =
              b_.CreateInBoundsGEP(f32_, panels, b_.CreateAdd(vk, t0));
          llvm::Value *cp = b_.CreateInBoundsGEP(
              f32_, prods,
              b_.CreateAdd(mk,
                           b_.CreateAdd(b_.CreateMul(t0, idx(coPad_)), c0)));
          llvm::SmallVector<llvm::Value *, 8> args = {
              x, idx(1), idx(tPad_), rowsT, w, cp, idx(plan_.cin)};
          auto call = [&](unsigned nv) {
            b_.CreateCall(
                packedGemmTransposedKernel(m_, shape_, mrT_, nv, ldu, coPad_),
                args);
          };
          ifElse(
              wide, "winot_wide", [&] { call(shape_.nv); }, "winot_narrow",
              [&] { call(1); }, "winot_join");
        });
      });
    });
    // Output transform: rows[(oy * zPitch + ox) * coPad + co].
    loop(idx(0), ths, [&](llvm::Value *ty) {
      loop(idx(0), tw, [&](llvm::Value *tx) {
        llvm::Value *t = b_.CreateAdd(b_.CreateMul(ty, tw), tx);
        llvm::Value *tAt = b_.CreateMul(t, idx(coPad_));
        llvm::Value *zAt =
            b_.CreateMul(b_.CreateAdd(b_.CreateMul(ty, idx(tm_ * zPitch)),
                                      b_.CreateMul(tx, idx(tm_))),
                         idx(coPad_));
        loop(
            idx(0), mExt,
            [&](llvm::Value *c) {
              outputTransform(prods, b_.CreateAdd(tAt, c), mK_, rows,
                              b_.CreateAdd(zAt, c), coPad_, zPitch * coPad_);
            },
            LoopHint::kNoInterleave);
      });
    });
    absl::Status status = absl::OkStatus();
    llvm::Value *oyEnd =
        smin(b_.CreateMul(ths, idx(tm_)), b_.CreateSub(hi[plan_.oh], orow0));
    llvm::Value *owExt = b_.CreateSub(hi[plan_.ow], lo[plan_.ow]);
    loop(idx(0), mExt, [&](llvm::Value *c) {
      ivs_[plan_.co] = b_.CreateAdd(lo[plan_.co], c);
      loop(idx(0), oyEnd, [&](llvm::Value *oy) {
        ivs_[plan_.oh] = b_.CreateAdd(orow0, oy);
        llvm::Value *zRow = b_.CreateMul(oy, idx(zPitch));
        loop(
            idx(0), owExt,
            [&](llvm::Value *ox) {
              ivs_[plan_.ow] = b_.CreateAdd(lo[plan_.ow], ox);
              finishSum(rows,
                        b_.CreateAdd(
                            b_.CreateMul(b_.CreateAdd(zRow, ox), idx(coPad_)),
                            c),
                        status);
            },
            LoopHint::kNoInterleave);
      });
    });
    ivs_[plan_.co] = lo[plan_.co];
    ivs_[plan_.oh] = lo[plan_.oh];
    ivs_[plan_.ow] = lo[plan_.ow];
    return status;
  }

  // The output at ivs_ from its sum at |rows|[|at|]: the root's init, then
  // the region's epilogue (the first error is kept in |status|).
  void finishSum(llvm::Value *rows, llvm::Value *at, absl::Status &status) {
    llvm::Value *v = b_.CreateAlignedLoad(
        f32_, b_.CreateInBoundsGEP(f32_, rows, at), llvm::Align(4));
    if (*root().init != 0.0) {
      v = b_.CreateFAdd(v, llvm::ConstantFP::get(f32_, *root().init));
    }
    if (status.ok()) {
      status = hooks_.finish(v, ivs_);
    }
  }

  // Row pitch of U^T (structured::scheduleWinograd).
  int64_t uTPitch() const { return sched_.uPitch; }

  // The transformed weights (U[k][co][ci] or, transposed, U^T[k][ci][co]
  // with rows of uTPitch() floats): the region's binding of the root's
  // weights operand (structured::transformWinogradWeights).
  llvm::Value *weights() {
    return hooks_.base(root().inputs[plan_.gemm.a].tensor);
  }

  // Copies rows [ih0, ih0 + nRows) of input channel |ci| into |plane|
  // (|pitch| floats per row), plane column c from input column iw0 + c for
  // c in [0, cols); zeros outside the input ([c0, c1) is inside).
  void fillPlane(llvm::Value *plane, llvm::Value *input, llvm::Value *base,
                 llvm::Value *ci, int64_t ciStride, int64_t rowStride,
                 int64_t inH, llvm::Value *ih0, llvm::Value *nRows,
                 int64_t pitch, llvm::Value *iw0, llvm::Value *cols,
                 llvm::Value *c0, llvm::Value *c1) {
    llvm::Value *chan = b_.CreateAdd(base, b_.CreateMul(ci, idx(ciStride)));
    llvm::Value *zero = llvm::ConstantFP::get(f32_, 0.0);
    loop(idx(0), nRows, [&](llvm::Value *r) {
      llvm::Value *ih = b_.CreateAdd(ih0, r);
      llvm::Value *at = b_.CreateMul(r, idx(pitch));
      llvm::Value *inside = b_.CreateICmpULT(ih, idx(inH));
      llvm::Value *from = b_.CreateSelect(inside, c0, cols);
      llvm::Value *to = b_.CreateSelect(inside, c1, cols);
      auto store = [&](llvm::Value *c, llvm::Value *v) {
        b_.CreateStore(v,
                       b_.CreateInBoundsGEP(f32_, plane, b_.CreateAdd(at, c)));
      };
      loop(idx(0), from, [&](llvm::Value *c) { store(c, zero); });
      llvm::Value *src = b_.CreateAdd(
          b_.CreateAdd(chan, b_.CreateMul(ih, idx(rowStride))), iw0);
      loop(from, to, [&](llvm::Value *c) {
        store(c, b_.CreateLoad(f32_, b_.CreateInBoundsGEP(
                                         f32_, input, b_.CreateAdd(src, c))));
      });
      loop(to, cols, [&](llvm::Value *c) { store(c, zero); });
    });
  }

  // sum_j coeffs[j] * x[j] over the non-zero coefficients (small
  // integers), starting from a positive one.
  llvm::Value *combine(const int *coeffs, llvm::Value *const *x, int64_t n) {
    llvm::Value *acc = nullptr;
    int64_t first = 0;
    while (first < n && coeffs[first] <= 0) {
      ++first;
    }
    for (int64_t step = 0; step < n; ++step) {
      int64_t j = (first + step) % n;
      int c = coeffs[j];
      if (c == 0) {
        continue;
      }
      llvm::Value *term = x[j];
      if (c != 1 && c != -1) {
        term = b_.CreateFMul(
            term, llvm::ConstantFP::get(term->getType(), std::abs(c)));
      }
      if (!acc) {
        acc = c > 0 ? term : b_.CreateFNeg(term);
      } else {
        acc = c > 0 ? b_.CreateFAdd(acc, term) : b_.CreateFSub(acc, term);
      }
    }
    return acc ? acc : llvm::ConstantFP::get(x[0]->getType(), 0.0);
  }

  // Floats a vector of tiles reads from one plane row: tm * vf + 2,
  // rounded up to whole vectors.
  int64_t wideLoad() const { return sched_.wideLoad(); }

  // Lanes start, start + stride, ... of |wide| (vf_ of them).
  llvm::Value *lanes(llvm::Value *wide, int64_t start, int64_t stride) {
    llvm::SmallVector<int, 16> mask;
    for (int64_t l = 0; l < vf_; ++l) {
      mask.push_back(static_cast<int>(start + stride * l));
    }
    return b_.CreateShuffleVector(wide, mask);
  }

  llvm::Value *vecAt(llvm::Value *base, llvm::Value *at, int64_t width) {
    return b_.CreateAlignedLoad(llvm::FixedVectorType::get(f32_, width),
                                b_.CreateInBoundsGEP(f32_, base, at),
                                llvm::Align(4));
  }

  // B^T d B for the vf_ tiles whose n x n patches start at |at| of |plane|
  // (tm_ columns apart), stored as panels[k * vK + ci * tPad + t + lane].
  // Each patch row is one wide load split into its n column vectors by
  // shuffles. Lanes past the row's last tile compute junk that later tiles
  // overwrite or that lands in padding columns.
  void inputTile(llvm::Value *plane, llvm::Value *at, int64_t pitch,
                 llvm::Value *panels, llvm::Value *ci, llvm::Value *t) {
    // B^T of F(2x2, 3x3) and of F(4x4, 3x3) (points 0, 1, -1, 2, -2).
    static constexpr int kBt2[4][4] = {
        {1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
    static constexpr int kBt4[6][6] = {
        {4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
        {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
    int64_t n = tm_ + 2;
    auto bt = [&](int64_t i) { return n == 4 ? kBt2[i] : kBt4[i]; };
    llvm::Value *d[6][6];
    for (int64_t i = 0; i < n; ++i) {
      llvm::Value *wide =
          vecAt(plane, b_.CreateAdd(at, idx(i * pitch)), wideLoad());
      for (int64_t j = 0; j < n; ++j) {
        d[i][j] = lanes(wide, j, tm_);
      }
    }
    // Rows: x = B^T d (column j of d combined over rows).
    llvm::Value *x[6][6];
    for (int64_t j = 0; j < n; ++j) {
      llvm::Value *col[6];
      for (int64_t i = 0; i < n; ++i) {
        col[i] = d[i][j];
      }
      for (int64_t i = 0; i < n; ++i) {
        x[i][j] = combine(bt(i), col, n);
      }
    }
    llvm::Value *chan = b_.CreateAdd(b_.CreateMul(ci, idx(tPad_)), t);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        b_.CreateAlignedStore(
            combine(bt(j), x[i], n),
            b_.CreateInBoundsGEP(f32_, panels,
                                 b_.CreateAdd(chan, idx((i * n + j) * vK_))),
            llvm::Align(4));
      }
    }
  }

  // A^T m A for the vf_ tiles at |at| of |prods| (untransposed: positions
  // mK_ apart, tiles contiguous), each output row of the tiles interleaved
  // by shuffles into tm_ * vf_ contiguous floats at |zAt| + i * |zPitch| of
  // |rows| (junk past the row's last tile stays in the row's padding).
  void outputRows(llvm::Value *prods, llvm::Value *at, llvm::Value *rows,
                  llvm::Value *zAt, int64_t zPitch) {
    int64_t n = tm_ + 2;
    llvm::Value *m[6][6];
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        m[i][j] = vecAt(prods, b_.CreateAdd(at, idx((i * n + j) * mK_)), vf_);
      }
    }
    llvm::Value *y[4][4];
    transformOutput(m, y);
    for (int64_t i = 0; i < tm_; ++i) {
      // Concatenate y[i][0..tm) and interleave: lane l of the result is
      // y[i][l % tm][l / tm].
      llvm::Value *all =
          b_.CreateShuffleVector(y[i][0], y[i][1], iota(2 * vf_));
      if (tm_ == 4) {
        llvm::Value *hi =
            b_.CreateShuffleVector(y[i][2], y[i][3], iota(2 * vf_));
        all = b_.CreateShuffleVector(all, hi, iota(4 * vf_));
      }
      llvm::SmallVector<int, 64> mask;
      for (int64_t l = 0; l < tm_ * vf_; ++l) {
        mask.push_back(static_cast<int>((l % tm_) * vf_ + l / tm_));
      }
      b_.CreateAlignedStore(
          b_.CreateShuffleVector(all, mask),
          b_.CreateInBoundsGEP(f32_, rows, b_.CreateAdd(zAt, idx(i * zPitch))),
          llvm::Align(4));
    }
  }

  static llvm::SmallVector<int, 64> iota(int64_t n) {
    llvm::SmallVector<int, 64> v;
    for (int64_t i = 0; i < n; ++i) {
      v.push_back(static_cast<int>(i));
    }
    return v;
  }

  // y = A^T m A (tm_ x tm_ from n x n), on scalars or vectors.
  void transformOutput(llvm::Value *m[6][6], llvm::Value *y[4][4]) {
    static constexpr int kAt2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
    static constexpr int kAt4[4][6] = {{1, 1, 1, 1, 1, 0},
                                       {0, 1, -1, 2, -2, 0},
                                       {0, 1, 1, 4, 4, 0},
                                       {0, 1, -1, 8, -8, 1}};
    int64_t n = tm_ + 2;
    auto at = [&](int64_t i) { return n == 4 ? kAt2[i] : kAt4[i]; };
    llvm::Value *s[4][6];
    for (int64_t j = 0; j < n; ++j) {
      llvm::Value *col[6];
      for (int64_t i = 0; i < n; ++i) {
        col[i] = m[i][j];
      }
      for (int64_t i = 0; i < tm_; ++i) {
        s[i][j] = combine(at(i), col, n);
      }
    }
    for (int64_t i = 0; i < tm_; ++i) {
      for (int64_t j = 0; j < tm_; ++j) {
        y[i][j] = combine(at(j), s[i], n);
      }
    }
  }

  // prods[k][r][t] += U[k][co + r][:] x panels[k][:][t] for the 16
  // positions, r < rowsM, in NR-wide column chunks over |tiles| columns,
  // MR rows at a time innermost.
  void products(llvm::Value *u, llvm::Value *co, llvm::Value *rowsM,
                llvm::Value *panels, llvm::Value *prods, llvm::Value *tiles) {
    llvm::Value *nChunks = ceilDiv(tiles, nr_);
    llvm::Value *subBlocks = ceilDiv(rowsM, shape_.mr);
    loop(idx(0), idx(pos_), [&](llvm::Value *k) {
      llvm::Value *bk = b_.CreateMul(k, idx(vK_));
      llvm::Value *ck = b_.CreateMul(k, idx(mK_));
      loop(idx(0), nChunks, [&](llvm::Value *c) {
        loop(idx(0), subBlocks, [&](llvm::Value *sb) {
          llvm::Value *col = b_.CreateMul(c, idx(nr_));
          llvm::Value *r0 = b_.CreateMul(sb, idx(shape_.mr));
          llvm::Value *a = b_.CreateInBoundsGEP(
              f32_, u,
              b_.CreateMul(b_.CreateAdd(b_.CreateMul(k, idx(plan_.cout)),
                                        b_.CreateAdd(co, r0)),
                           idx(plan_.cin)));
          llvm::Value *cAt =
              b_.CreateAdd(ck, b_.CreateAdd(b_.CreateMul(r0, idx(tPad_)), col));
          llvm::SmallVector<llvm::Value *, 8> args = {
              a,
              idx(plan_.cin),
              idx(1),
              smin(b_.CreateSub(rowsM, r0), idx(shape_.mr)),
              b_.CreateInBoundsGEP(f32_, panels, b_.CreateAdd(bk, col)),
              b_.CreateInBoundsGEP(f32_, prods, cAt),
              idx(plan_.cin)};
          if (shape_.nv == 1) {
            b_.CreateCall(packedGemmKernel(m_, shape_, shape_.nv, tPad_), args);
            return;
          }
          // A last chunk no wider than one vector runs the narrow kernel.
          llvm::Value *wide = b_.CreateICmpSGT(b_.CreateSub(tiles, col),
                                               idx(shape_.vectorWidth));
          ifElse(
              wide, "wino_wide",
              [&] {
                b_.CreateCall(packedGemmKernel(m_, shape_, shape_.nv, tPad_),
                              args);
              },
              "wino_narrow",
              [&] {
                b_.CreateCall(packedGemmKernel(m_, shape_, 1, tPad_), args);
              },
              "wino_join");
        });
      });
    });
  }

  // A^T m A for the tile at |at| of |prods| (positions |kStride| apart),
  // stored as the m x m block at |zAt| of |rows| (columns |colStride| and
  // rows |rowStride| floats apart).
  void outputTransform(llvm::Value *prods, llvm::Value *at, int64_t kStride,
                       llvm::Value *rows, llvm::Value *zAt, int64_t colStride,
                       int64_t rowStride) {
    int64_t n = tm_ + 2;
    llvm::Value *m[6][6];
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        m[i][j] = b_.CreateLoad(
            f32_,
            b_.CreateInBoundsGEP(f32_, prods,
                                 b_.CreateAdd(at, idx((i * n + j) * kStride))));
      }
    }
    llvm::Value *y[4][4];
    transformOutput(m, y);
    for (int64_t i = 0; i < tm_; ++i) {
      llvm::Value *row = b_.CreateAdd(zAt, idx(i * rowStride));
      for (int64_t j = 0; j < tm_; ++j) {
        b_.CreateStore(y[i][j],
                       b_.CreateInBoundsGEP(
                           f32_, rows, b_.CreateAdd(row, idx(j * colStride))));
      }
    }
  }

  WinogradPlan plan_;
  GemmKernelShape shape_;
  structured::WinogradSchedule sched_;
  llvm::Type *f32_ = nullptr;
  int64_t nr_ = 0;
  // Widest row of tiles, tile rows per chunk and panel width (tiles of a
  // chunk padded to whole NR-wide chunks).
  int64_t twMax_ = 0, rowsPerChunk_ = 0, tPad_ = 0;
  // Output tile edge (plan_.m) and transform positions per tile.
  int64_t tm_ = 2, pos_ = 16;
  // Tiles per vector of the transforms.
  int64_t vf_ = 1;
  // Floats between the 16 positions' panels and products.
  int64_t vK_ = 0, mK_ = 0;
  // Output channels whose products are computed together (untransposed).
  int64_t blockRows_ = 0;
  // Transposed tiles: blocks of mrT_ tiles, products with rows of coPad_
  // channels (tPad_ is then the tile count padded to whole blocks).
  bool transposed_ = false;
  int64_t mrT_ = 0, coPad_ = 0;
};

} // namespace

absl::StatusOr<bool> emitWinogradConv(const dispatch::DispatchProgram &program,
                                      const dispatch::DispatchRegion &region,
                                      llvm::IRBuilder<> &builder,
                                      llvm::Function *fn,
                                      llvm::ArrayRef<llvm::Value *> lo,
                                      llvm::ArrayRef<llvm::Value *> hi,
                                      const TileHooks &hooks,
                                      const CodegenOptions &options) {
  const StructuredOp &root = program.program.ops[region.ops[0]];
  if (!root.winograd) {
    return false;
  }
  // From here on the root reads transformed weights: no other emitter can
  // compute it, so what does not fit is an internal error.
  auto internal = [&](const std::string &what) {
    return absl::InternalError("Winograd convolution '" + root.nodeName +
                               "': " + what);
  };
  if (!allF32(program, root)) {
    return internal("operands are not all f32");
  }
  llvm::StringRef features = targetFeatures(*fn->getParent());
  GemmKernelShape shape =
      gemmKernelShape(fn->getParent()->getTargetTriple(), features);
  if (shape.vectorWidth == 1) {
    return internal("the target has no vectors (the structured program was "
                    "fused for another target)");
  }
  WinogradPlan plan = structured::winogradPlanOf(root);
  structured::FusionOptions fused;
  fused.winograd = options.winograd;
  WinogradEmitter emitter(program, region, builder, fn, plan, shape, hooks);
  std::optional<structured::WinogradSchedule> sched =
      structured::scheduleWinograd(plan, emitter.maxCo(), emitter.maxOh(),
                                   emitter.maxOw(),
                                   fusionOptionsFor(shape, fused));
  if (!sched || sched->transposed != root.winograd->transposed) {
    return internal("the workgroup's schedule differs from the one the "
                    "weights were transformed for");
  }
  const structured::TensorInfo &u =
      program.program.tensors[root.inputs[plan.gemm.a].tensor];
  std::vector<int64_t> dims = {plan.positions(),
                               sched->transposed ? plan.cin : plan.cout,
                               sched->transposed ? sched->uPitch : plan.cin};
  if (u.type.dims().vec() != dims) {
    return internal("transformed weights of shape " + u.type.str() +
                    " do not match the schedule");
  }
  emitter.size(*sched);
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

structured::FusionOptions fusionOptionsFor(const GemmKernelShape &shape,
                                           structured::FusionOptions tuning) {
  tuning.vectorWidth = shape.vectorWidth;
  tuning.kernelRows = shape.mr;
  tuning.kernelVectors = shape.nv;
  return tuning;
}

structured::FusionOptions fusionOptionsFor(const CpuTarget &target,
                                           structured::FusionOptions tuning) {
  tuning.matVecRows = hasMatVecKernel(target.triple, target.features);
  return fusionOptionsFor(gemmKernelShape(target.triple, target.features),
                          std::move(tuning));
}

} // namespace osprey::compiler::llvm_cpu
