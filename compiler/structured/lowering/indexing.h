// The indexing maps the lowerings share: broadcasts, per-channel reads,
// reads shifted or strided along one axis, the "selected read" that is in
// bounds at one output position only, and the loop nest of windowed ops
// (convolutions, pools).
#ifndef OSPREY_COMPILER_STRUCTURED_LOWERING_INDEXING_H_
#define OSPREY_COMPILER_STRUCTURED_LOWERING_INDEXING_H_

#include <optional>
#include <vector>

#include "compiler/graph/ir.h"
#include "compiler/structured/structured_ir.h"
#include "llvm/ADT/ArrayRef.h"

namespace osprey::compiler::structured::lowering {

// Reads an operand of shape |in| broadcast (ONNX rules) against loop dims
// |out| (the first loops of a |numDims|-loop nest).
AffineMap broadcastMap(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out,
                       unsigned numDims);

// Reads a 1-D operand at loop |dim| of a |numDims|-loop nest: a per-channel
// bias or scale (dim 1 of NCHW).
AffineMap channelMap(unsigned numDims, unsigned dim = 1);

// The identity over |numDims| loops except along |axis|, which reads
// coeff * d_axis + constant (a shift, a stride, a reversal).
AffineMap axisMap(unsigned numDims, unsigned axis, int64_t coeff,
                  int64_t constant);

// |base| with result |result| reading |source| of an operand dimension of
// extent |extent| where loop |loop| is at |at|, and out of bounds at every
// other value of that loop: the result's coefficient of |loop| becomes
// |extent| and its constant source - extent * at (other terms of |base|
// stay). With padding 0, a sum of such reads picks one value per output
// position (Gather, Resize taps, edge/reflect Pad bands, ConvTranspose's
// spreading copy).
AffineMap selectedRead(const AffineMap &base, unsigned result, unsigned loop,
                       int64_t extent, int64_t source, int64_t at);

// A loop nest that splits output axis |axis| of |dims| into (q, r) with
// output index factor * q + r: loops are dims before the axis, q (extent
// |inner|), r (extent |factor|), dims after it. |read| reads q along the
// axis, |write| writes factor * q + r (upsampling by an integer factor).
struct SplitAxisLoops {
  std::vector<int64_t> bounds;
  AffineMap read, write;
};
SplitAxisLoops splitAxisLoops(llvm::ArrayRef<int64_t> dims, unsigned axis,
                              int64_t inner, int64_t factor);

// The window of a Conv, MaxPool or AveragePool (auto_pad resolved): kernel
// extents, strides, dilations and pads per spatial dim, and whether reads
// fall outside the input.
struct Window {
  graph::IntList kernel, strides, dilations, pads;
  // Some window reaches outside the input (pads, or ceil_mode's last
  // windows): the input read needs a padding value.
  bool padded = false;
  // Some window reaches past the input's end padding (ceil_mode).
  bool pastPads = false;
};
// |kernel| comes from the weights for Conv, from kernel_shape for pools.
Window windowOf(const graph::Op &op, graph::IntList kernel);

// The loop nest of a windowed op on NC<spatial> tensors: batch, [group],
// output channel (per group), output spatial dims..., [input channel per
// group], kernel spatial dims..., with accessors for the maps convolutions
// and pools read through.
class WindowNest {
public:
  // |group| > 1 adds the group loop; |inputChannels| (per group) adds the
  // reduction over input channels (convolutions; pools have none).
  WindowNest(int64_t batch, int64_t group, int64_t outputChannels,
             llvm::ArrayRef<int64_t> outputSpatial,
             std::optional<int64_t> inputChannels,
             llvm::ArrayRef<int64_t> kernel);

  const std::vector<int64_t> &bounds() const { return bounds_; }
  unsigned numLoops() const { return bounds_.size(); }
  unsigned spatial() const { return spatial_; }
  unsigned outputChannelLoop() const { return mDim_; }
  unsigned inputChannelLoop() const { return cDim_; }
  unsigned outputLoop(unsigned i) const { return outSpatial_ + i; }
  unsigned kernelLoop(unsigned i) const { return kSpatial_ + i; }

  // Parallel loops, then reduction loops from |firstReduction| on.
  std::vector<IteratorType> iterators(unsigned firstReduction) const;
  // The channel a per-group loop |loop| of |perGroup| channels stands for:
  // loop + perGroup * group.
  AffineExpr channel(unsigned loop, int64_t perGroup) const;
  // The input read [n, channel, stride * o + dilation * k + offset...].
  AffineMap inputMap(const AffineExpr &channel, llvm::ArrayRef<int64_t> strides,
                     llvm::ArrayRef<int64_t> dilations,
                     llvm::ArrayRef<int64_t> offsets) const;
  // The weight read [first, second, k...].
  AffineMap weightMap(const AffineExpr &first, const AffineExpr &second) const;
  // The output [n, channel(m), o...].
  AffineMap outputMap(int64_t outputChannelsPerGroup) const;
  AffineExpr loop(unsigned d) const { return AffineExpr::dim(numLoops(), d); }

private:
  bool grouped_;
  unsigned spatial_;
  unsigned gDim_ = 1, mDim_, outSpatial_, cDim_, kSpatial_;
  std::vector<int64_t> bounds_;
};

} // namespace osprey::compiler::structured::lowering

#endif // OSPREY_COMPILER_STRUCTURED_LOWERING_INDEXING_H_
