// Indexing maps shared by the lowerings.
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {

AffineMap broadcastMap(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out,
                       unsigned numDims) {
  AffineMap m;
  m.numDims = numDims;
  size_t offset = out.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j) {
    if (in[j] == 1 && out[offset + j] != 1) {
      m.results.push_back(AffineExpr::constantExpr(numDims, 0));
    } else {
      m.results.push_back(AffineExpr::dim(numDims, offset + j));
    }
  }
  return m;
}

AffineMap channelMap(unsigned numDims, unsigned dim) {
  AffineMap m;
  m.numDims = numDims;
  m.results.push_back(AffineExpr::dim(numDims, dim));
  return m;
}

AffineMap axisMap(unsigned numDims, unsigned axis, int64_t coeff,
                  int64_t constant) {
  AffineMap m = AffineMap::identity(numDims);
  m.results[axis].coeffs[axis] = coeff;
  m.results[axis].constant = constant;
  return m;
}

AffineMap selectedRead(const AffineMap &base, unsigned result, unsigned loop,
                       int64_t extent, int64_t source, int64_t at) {
  AffineMap m = base;
  m.results[result].coeffs[loop] = extent;
  m.results[result].constant = source - extent * at;
  return m;
}

SplitAxisLoops splitAxisLoops(llvm::ArrayRef<int64_t> dims, unsigned axis,
                              int64_t inner, int64_t factor) {
  unsigned n = dims.size(), loops = n + 1;
  SplitAxisLoops s;
  s.bounds.assign(dims.begin(), dims.begin() + axis);
  s.bounds.push_back(inner);
  s.bounds.push_back(factor);
  s.bounds.insert(s.bounds.end(), dims.begin() + axis + 1, dims.end());
  s.read.numDims = s.write.numDims = loops;
  for (unsigned d = 0; d < n; ++d) {
    unsigned loop = d <= axis ? d : d + 1;
    s.read.results.push_back(AffineExpr::dim(loops, loop));
    s.write.results.push_back(AffineExpr::dim(loops, loop));
  }
  s.write.results[axis] = AffineExpr::dim(loops, axis, factor);
  s.write.results[axis].coeffs[axis + 1] = 1;
  return s;
}

Window windowOf(const graph::Op &op, graph::IntList kernel) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  unsigned spatial = x.rank() - 2;
  Window w;
  w.kernel = std::move(kernel);
  w.strides = op.getIntList("strides", graph::IntList(spatial, 1));
  w.dilations = op.getIntList("dilations", graph::IntList(spatial, 1));
  w.pads = op.getIntList("pads", graph::IntList(2 * spatial, 0));
  for (int64_t p : w.pads) {
    w.padded |= p != 0;
  }
  // With ceil_mode the last windows may reach past the input (and its end
  // padding) even when no pads are given: those reads must be padded too.
  for (unsigned i = 0; i < spatial; ++i) {
    int64_t last = (t.dim(2 + i) - 1) * w.strides[i] +
                   (w.kernel[i] - 1) * w.dilations[i] - w.pads[i];
    w.padded |= last >= x.dim(2 + i);
    w.pastPads |= last >= x.dim(2 + i) + w.pads[spatial + i];
  }
  return w;
}

WindowNest::WindowNest(int64_t batch, int64_t group, int64_t outputChannels,
                       llvm::ArrayRef<int64_t> outputSpatial,
                       std::optional<int64_t> inputChannels,
                       llvm::ArrayRef<int64_t> kernel)
    : grouped_(group > 1), spatial_(outputSpatial.size()) {
  bounds_.push_back(batch);
  if (grouped_) {
    bounds_.push_back(group);
  }
  mDim_ = bounds_.size();
  bounds_.push_back(outputChannels);
  outSpatial_ = bounds_.size();
  bounds_.insert(bounds_.end(), outputSpatial.begin(), outputSpatial.end());
  cDim_ = bounds_.size();
  if (inputChannels) {
    bounds_.push_back(*inputChannels);
  }
  kSpatial_ = bounds_.size();
  bounds_.insert(bounds_.end(), kernel.begin(), kernel.end());
}

std::vector<IteratorType> WindowNest::iterators(unsigned firstReduction) const {
  std::vector<IteratorType> it(numLoops(), IteratorType::Parallel);
  for (unsigned d = firstReduction; d < numLoops(); ++d) {
    it[d] = IteratorType::Reduction;
  }
  return it;
}

AffineExpr WindowNest::channel(unsigned loop, int64_t perGroup) const {
  AffineExpr e = AffineExpr::dim(numLoops(), loop);
  if (grouped_) {
    e.coeffs[gDim_] = perGroup;
  }
  return e;
}

AffineMap WindowNest::inputMap(const AffineExpr &channel,
                               llvm::ArrayRef<int64_t> strides,
                               llvm::ArrayRef<int64_t> dilations,
                               llvm::ArrayRef<int64_t> offsets) const {
  unsigned n = numLoops();
  AffineMap m;
  m.numDims = n;
  m.results.push_back(AffineExpr::dim(n, 0));
  m.results.push_back(channel);
  for (unsigned i = 0; i < spatial_; ++i) {
    AffineExpr e = AffineExpr::dim(n, outputLoop(i), strides[i]);
    e.coeffs[kernelLoop(i)] = dilations[i];
    e.constant = offsets[i];
    m.results.push_back(e);
  }
  return m;
}

AffineMap WindowNest::weightMap(const AffineExpr &first,
                                const AffineExpr &second) const {
  AffineMap m;
  m.numDims = numLoops();
  m.results.push_back(first);
  m.results.push_back(second);
  for (unsigned i = 0; i < spatial_; ++i) {
    m.results.push_back(loop(kernelLoop(i)));
  }
  return m;
}

AffineMap WindowNest::outputMap(int64_t outputChannelsPerGroup) const {
  AffineMap m;
  m.numDims = numLoops();
  m.results.push_back(loop(0));
  m.results.push_back(channel(mDim_, outputChannelsPerGroup));
  for (unsigned i = 0; i < spatial_; ++i) {
    m.results.push_back(loop(outputLoop(i)));
  }
  return m;
}

} // namespace osprey::compiler::structured::lowering
