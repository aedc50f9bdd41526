// Resize's tf_crop_and_resize coordinate transformation, shared by the
// importer (which writes extrapolation_value where it falls outside the
// input) and the lowering (which interpolates everywhere else).
#ifndef OSPREY_COMPILER_GRAPH_CROP_AND_RESIZE_H_
#define OSPREY_COMPILER_GRAPH_CROP_AND_RESIZE_H_

#include <cstdint>

namespace osprey::compiler::graph {

// The input coordinate of output position |o| along an axis of |in|
// elements cropped to [start, end] (the roi, normalized to [0, 1]) and
// resized to |outWidth| (scale * in; the output's extent when the node
// gives sizes): start (in - 1) + o (end - start) (in - 1) / (outWidth - 1),
// or the middle of the crop when outWidth is 1. As ONNX's reference and
// shape inference have it, scales do not shrink with the crop: the output
// has floor(in * scale) elements along the axis.
inline double cropAndResizeCoordinate(int64_t in, double outWidth,
                                      double start, double end, int64_t o) {
  const double span = double(in - 1);
  if (outWidth == 1) {
    return (end - start) * span / 2 + start * span;
  }
  return double(o) * (end - start) * span / (outWidth - 1) + start * span;
}

// Whether coordinate |x| lies outside an axis of |in| elements, where
// tf_crop_and_resize gives extrapolation_value instead of interpolating.
inline bool outsideAxis(double x, int64_t in) {
  return x < 0 || x > double(in - 1);
}

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_CROP_AND_RESIZE_H_
