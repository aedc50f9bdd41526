// Static geometry of the depthwise path: blocks of rows that fit the
// scratch budget, plane pitch, batches of planes, the vector shape of the
// window sums and whether the epilogue runs over flattened positions.
#include "compiler/targets/llvm_cpu/depthwise_emitter.h"

#include <algorithm>

namespace osprey::compiler::llvm_cpu {

using structured::StructuredOp;

// Static geometry for |vectorWidth| lanes and a scratch budget of
// |maxScratch| bytes; false when one output row does not fit.
bool DepthwiseConvEmitter::size(unsigned vectorWidth, uint64_t maxScratch) {
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
    spare = vw_ > 1 && sh_ == 1 && ow > vw_ ? int64_t(options_.maxRows) - 1 : 0;
  }
  auto bytes = [&](int64_t rows) {
    int64_t plane = (rows + spare + khx_) * wq_ + lanes_ + 2 * vw_;
    int64_t t = rowBuffer ? sw_ * roundUp(wq_, vw_) + vw_ : 0;
    int64_t s =
        (rows + spare) * std::max(wq_, roundUp(ow, lanes_)) + lanes_ + vw_;
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
  // Input channels summed into each output (grouped convolutions) are
  // rolled loops: each adds its window sums to the sums of the ones before.
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
  // Row by row, each row's vectors past its end land on the next row's
  // sums, which are computed afterwards: the sums can be dense. Not with
  // several rows per iteration, whose last vectors would overwrite sums
  // of the next row already stored, nor with rolled loops, whose later
  // passes would add those junk lanes to the next row's sums.
  sPitch_ = flat_                         ? wq_
            : v_ > 1 || rolledCount_ > 1 ? roundUp(ow, lanes_)
                                         : ow;
  planeStride_ = roundUp((rows_ + v_ - 1 + khx_) * wq_ + lanes_ + vw_, vw_);
  sLen_ = (rows_ + v_ - 1) * std::max(wq_, sPitch_) + lanes_ + vw_;
  dense_ = flatEpilogue();
  // Scalar rows of whole blocks of u_ outputs go through the epilogue
  // straight from the accumulators (no sums).
  direct_ = vw_ == 1 && !flat_ && ow % u_ == 0 &&
            maxExtent(plan_.col) == op.bounds[plan_.col];
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
    batch_ = std::min<int64_t>(planes, int64_t(maxScratch - 4 * tLen_) / slot);
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
void DepthwiseConvEmitter::chooseVectorShape(int64_t ow) {
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
    int64_t distinct = std::unique(loads.begin(), loads.end()) - loads.begin();
    int64_t cost = (rows_ + v - 1) / v * ((ow + lanes_ - 1) / lanes_) *
                   std::max(distinct, (v * n + 1) / 2);
    if (cost < best) {
      best = cost;
      flat_ = false;
      v_ = v;
    }
  }
}

// Whether the epilogue may run over flattened positions of a block: with
// the row index at the block's first row and the column index running
// over rows * OW positions, every address the region's ops compute must be
// the one of the element at (row + c / OW, c % OW). That holds when each
// tensor read or written either reads neither index or advances OW times
// as far per row as per column, without padding (a bias per channel, a
// residual of the output's layout). The column tile must be whole.
bool DepthwiseConvEmitter::flatEpilogue() {
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
      if (in.indirect || !linear(in.tensor, in.map, in.padValue.has_value())) {
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

} // namespace osprey::compiler::llvm_cpu
