// Resize (nearest, linear, cubic), one op per resized axis: affine reads, integer
// upsampling as a split loop, periodic linear upsampling over an edge-padded
// axis, and otherwise a sum of weighted selected reads per tap.
#include <algorithm>
#include <cmath>

#include "compiler/graph/crop_and_resize.h"
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

// At most this many reads per output element.
constexpr size_t kMaxReads = 256;

// Input positions and weights that make up one output position of Resize
// along one axis.
using ResizeTaps = std::vector<std::pair<int64_t, double>>;

// Weights of the K taps at floor(x) - K/2 + 1 + k, k < K, for x's fraction
// |ratio|: linear (K = 2), or cubic (K = 4, Keys' kernel with
// cubic_coeff_a; distances 1 + ratio, ratio, 1 - ratio, 2 - ratio).
std::vector<double> kernelWeights(const Op &op, double ratio) {
  if (op.getString("mode", "nearest") != "cubic") {
    return {1 - ratio, ratio};
  }
  const double A = op.getFloat("cubic_coeff_a", -0.75);
  auto near = [&](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [&](double d) {
    return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  };
  return {far(1 + ratio), near(ratio), near(1 - ratio), far(2 - ratio)};
}

// Computes the taps of every output position along one axis, following the
// ONNX reference: the output coordinate maps back to x (coordinate
// transformation mode), whose two neighbours (clamped to the edge) are
// weighted linearly or one is picked (nearest mode), or whose four
// neighbours get Keys' cubic weights (cubic_coeff_a; with exclude_outside
// the weights of neighbours outside the axis are dropped and the rest
// renormalized). |roi| is the axis's crop for tf_crop_and_resize, whose
// positions outside the input interpolate at the clamped coordinate (the
// importer selects extrapolation_value there). |coords| receives x per
// output position.
absl::StatusOr<std::vector<ResizeTaps>>
resizeTaps(const Op &op, int64_t in, int64_t out, double scale,
           std::pair<double, double> roi, std::vector<double> *coords) {
  std::string mode = op.getString("mode", "nearest");
  std::string transform =
      op.getString("coordinate_transformation_mode", "half_pixel");
  std::string nearest = op.getString("nearest_mode", "round_prefer_floor");
  double outWidth = scale * in;
  std::vector<ResizeTaps> taps(out);
  for (int64_t o = 0; o < out; ++o) {
    double x;
    if (transform == "half_pixel") {
      x = (o + 0.5) / scale - 0.5;
    } else if (transform == "pytorch_half_pixel") {
      x = outWidth == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
    } else if (transform == "align_corners") {
      x = outWidth == 1 ? 0.0 : o * double(in - 1) / (outWidth - 1);
    } else if (transform == "asymmetric") {
      x = o / scale;
    } else if (transform == "tf_half_pixel_for_nearest") {
      x = (o + 0.5) / scale;
    } else if (transform == "tf_crop_and_resize") {
      x = graph::cropAndResizeCoordinate(in, outWidth, roi.first, roi.second, o);
      if (graph::outsideAxis(x, in)) {
        x = std::clamp(x, 0.0, double(in - 1));
      }
    } else {
      return absl::UnimplementedError(op.describe() +
                                      ": coordinate_transformation_mode '" +
                                      transform + "' does not lower yet");
    }
    coords->push_back(x);
    auto clampIndex = [&](int64_t i) {
      return std::clamp<int64_t>(i, 0, in - 1);
    };
    double lo = std::floor(x);
    if (lo == x) {
      taps[o] = {{clampIndex(int64_t(lo)), 1.0}};
      continue;
    }
    double ratio = x - lo;
    int64_t i0 = clampIndex(int64_t(lo)), i1 = clampIndex(int64_t(lo) + 1);
    if (mode == "cubic") {
      const bool exclude = op.getInt("exclude_outside", 0) != 0;
      std::vector<double> w = kernelWeights(op, ratio);
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = int64_t(lo) - 1 + k;
        if (exclude && (i < 0 || i >= in)) {
          w[k] = 0;
        }
        total += w[k];
      }
      for (int k = 0; k < 4; ++k) {
        if (w[k] == 0) {
          continue;
        }
        int64_t i = clampIndex(int64_t(lo) - 1 + k);
        double weight = exclude ? w[k] / total : w[k];
        auto same = std::find_if(taps[o].begin(), taps[o].end(),
                                 [&](const auto &tap) { return tap.first == i; });
        if (same != taps[o].end()) {
          same->second += weight;
        } else {
          taps[o].push_back({i, weight});
        }
      }
    } else if (mode == "nearest") {
      bool up;
      if (nearest == "round_prefer_floor") {
        up = ratio > 0.5;
      } else if (nearest == "round_prefer_ceil") {
        up = ratio >= 0.5;
      } else if (nearest == "floor") {
        up = false;
      } else if (nearest == "ceil") {
        up = true;
      } else {
        return op.emitError("unknown nearest_mode '" + nearest + "'");
      }
      taps[o] = {{up ? i1 : i0, 1.0}};
    } else if (i0 == i1) {
      taps[o] = {{i0, 1.0}};
    } else {
      taps[o] = {{i0, 1.0 - ratio}, {i1, ratio}};
    }
  }
  return taps;
}

// Accumulates weighted reads into one sum in a body.
class WeightedSum {
public:
  explicit WeightedSum(ScalarBody &body) : body_(body) {}
  void add(unsigned input, double weight) {
    unsigned v = body_.input(input);
    if (weight != 1.0) {
      v = body_.binary(SK::Mul, v, body_.constant(weight));
    }
    sum_ = first_ ? v : body_.binary(SK::Add, sum_, v);
    first_ = false;
  }
  unsigned sum() const { return sum_; }

private:
  ScalarBody &body_;
  unsigned sum_ = 0;
  bool first_ = true;
};

// One resized axis |a|: extents and the taps and source coordinates of
// each output position.
struct AxisResize {
  unsigned a;
  int64_t in, out;
  const std::vector<ResizeTaps> &taps;
  const std::vector<double> &coords;
};

// Linear or cubic upsampling by an integer factor f whose source coordinate
// is q + base[r] + ratio[r] for o = f * q + r (half_pixel, asymmetric):
// edge-pad the axis by P = K/2 (K taps per output), then iterate (q, r)
// writing f * q + r, with phase rho's K taps read at q + base + 1 + k
// selected at r == rho. |dims| is the shape after this axis, |current| the
// tensor resized, |result| the tensor written. Returns false, adding
// nothing, when the taps are not of that form (or cubic weights are
// renormalized at the edges: exclude_outside).
bool lowerPeriodic(LoweringContext &ctx, const Op &op, const AxisResize &r,
                   const std::vector<int64_t> &dims, unsigned current,
                   unsigned result) {
  const TensorType &t = op.result()->type();
  unsigned n = t.rank(), a = r.a;
  int64_t in = r.in, out = r.out;
  int64_t phases = out / in;
  const bool cubic = op.getString("mode", "nearest") == "cubic";
  const int64_t K = cubic ? 4 : 2, P = K / 2;
  bool periodic = out % in == 0 && phases > 1 &&
                  phases * K <= int64_t(kMaxReads) &&
                  !(cubic && op.getInt("exclude_outside", 0) != 0);
  std::vector<int64_t> phaseBase(periodic ? phases : 0);
  std::vector<double> phaseRatio(periodic ? phases : 0);
  for (int64_t ph = 0; ph < phases && periodic; ++ph) {
    double c = r.coords[ph];
    phaseBase[ph] = int64_t(std::floor(c));
    phaseRatio[ph] = c - std::floor(c);
    periodic = phaseBase[ph] == -1 || phaseBase[ph] == 0;
  }
  for (int64_t o = 0; o < out && periodic; ++o) {
    int64_t q = o / phases, ph = o % phases;
    periodic =
        std::fabs(r.coords[o] - (q + phaseBase[ph] + phaseRatio[ph])) < 1e-9;
  }
  if (!periodic) {
    return false;
  }
  std::vector<int64_t> padDims = dims;
  padDims[a] = in + 2 * P;
  unsigned padded = ctx.newTemp(op, "_edge" + std::to_string(a),
                                TensorType::ranked(t.elementType(), padDims));
  // The interior shifted by P, the first and the last element selected
  // where the P edge positions on either side are written.
  StructuredOp p = LoweringContext::parallelOp(op, padDims);
  AffineMap identity = AffineMap::identity(n);
  p.inputs.push_back({current, axisMap(n, a, 1, -P), 0.0});
  for (int64_t e = 0; e < P; ++e) {
    p.inputs.push_back({current, selectedRead(identity, a, a, in, 0, e), 0.0});
    p.inputs.push_back({current,
                        selectedRead(identity, a, a, in, in - 1, in + P + e),
                        0.0});
  }
  unsigned edgeSum = p.body.input(0);
  for (unsigned k = 1; k < p.inputs.size(); ++k) {
    edgeSum = p.body.binary(SK::Add, edgeSum, p.body.input(k));
  }
  p.body.yield(edgeSum);
  p.output = {padded, identity};
  ctx.add(std::move(p));
  SplitAxisLoops loops = splitAxisLoops(dims, a, in, phases);
  StructuredOp s = LoweringContext::parallelOp(op, loops.bounds);
  WeightedSum sum(s.body);
  for (int64_t rho = 0; rho < phases; ++rho) {
    std::vector<double> weights = kernelWeights(op, phaseRatio[rho]);
    for (int64_t k = 0; k < K; ++k) {
      double weight = weights[k];
      if (weight == 0.0) {
        continue;
      }
      s.inputs.push_back({padded,
                          selectedRead(loops.read, a, a + 1, in + 2 * P,
                                       phaseBase[rho] + 1 + k, rho),
                          0.0});
      sum.add(s.inputs.size() - 1, weight);
    }
  }
  s.body.yield(sum.sum());
  s.output = {result, loops.write};
  ctx.add(std::move(s));
  return true;
}

} // namespace

// Resize (nearest, linear), one op per resized axis. An axis whose taps are
// single indices a * o + b is one affine read; an integer upsampling
// o -> o / s iterates (q, r) and writes s * q + r; anything else reads each
// tap selected at its output position along the axis (padding 0 elsewhere)
// and sums the weighted reads, like Gather.
absl::Status lowerResize(LoweringContext &ctx, const Op &op) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  std::optional<std::vector<double>> scales;
  if (op.operand(2)) {
    scales = graph::getConstantFloats(op.operand(2));
    if (scales && scales->empty()) {
      scales.reset();
    }
  }
  if (scales && scales->size() != n) {
    return op.emitError("scales must list one factor per dimension");
  }
  std::vector<double> roi(2 * n, 0.0);
  std::fill(roi.begin() + n, roi.end(), 1.0);
  if (op.getString("coordinate_transformation_mode", "") == "tf_crop_and_resize") {
    auto given = op.operand(1) ? graph::getConstantFloats(op.operand(1))
                               : std::nullopt;
    if (!given || given->size() != 2 * n) {
      return absl::UnimplementedError(
          op.describe() + ": tf_crop_and_resize needs a constant roi of " +
          std::to_string(2 * n) + " values");
    }
    roi = *given;
  }
  std::vector<unsigned> axes;
  std::vector<std::vector<ResizeTaps>> axisTaps;
  std::vector<std::vector<double>> axisCoords;
  for (unsigned a = 0; a < n; ++a) {
    double scale = scales ? (*scales)[a] : double(t.dim(a)) / x.dim(a);
    std::vector<double> coords;
    COMPILER_ASSIGN_OR_RETURN(
        auto taps, resizeTaps(op, x.dim(a), t.dim(a), scale,
                              {roi[a], roi[n + a]}, &coords));
    bool identity = t.dim(a) == x.dim(a);
    for (int64_t o = 0; o < t.dim(a) && identity; ++o) {
      identity = taps[o].size() == 1 && taps[o][0].first == o;
    }
    if (!identity) {
      axes.push_back(a);
      axisTaps.push_back(std::move(taps));
      axisCoords.push_back(std::move(coords));
    }
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned current, ctx.tensorFor(op.operand(0)));
  std::vector<int64_t> dims = x.dims().vec();
  if (axes.empty()) {
    return ctx.copy(op);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    unsigned a = axes[i];
    const std::vector<ResizeTaps> &taps = axisTaps[i];
    int64_t in = dims[a], out = t.dim(a);
    if (in <= 0 || out <= 0) {
      return absl::UnimplementedError(
          "node '" + op.nodeName() + "' (Resize): resizing axis " +
          std::to_string(a) + " from " + std::to_string(in) + " to " +
          std::to_string(out) + " elements (an empty axis) is not supported");
    }
    dims[a] = out;
    unsigned result;
    if (i + 1 == axes.size()) {
      COMPILER_ASSIGN_OR_RETURN(result, ctx.tensorFor(op.result()));
    } else {
      result = ctx.newTemp(op, "_axis" + std::to_string(a),
                           TensorType::ranked(t.elementType(), dims));
    }
    bool single = true;
    size_t reads = 0;
    for (const ResizeTaps &tp : taps) {
      single &= tp.size() == 1 && tp[0].second == 1.0;
      reads += tp.size();
    }
    // Affine: f(o) = f(0) + (f(1) - f(0)) * o.
    bool affine = single;
    int64_t base = taps[0][0].first;
    int64_t step = out > 1 ? taps[1][0].first - base : 0;
    for (int64_t o = 0; o < out && affine; ++o) {
      affine = taps[o][0].first == base + step * o;
    }
    // Integer upsampling: f(o) = o / s.
    bool spread = single && !affine && out % in == 0;
    int64_t factor = spread ? out / in : 1;
    for (int64_t o = 0; o < out && spread; ++o) {
      spread = taps[o][0].first == o / factor;
    }
    if (!single && lowerPeriodic(ctx, op, {a, in, out, taps, axisCoords[i]},
                                 dims, current, result)) {
      current = result;
      continue;
    }
    if (spread) {
      SplitAxisLoops loops = splitAxisLoops(dims, a, in, factor);
      StructuredOp s = LoweringContext::parallelOp(op, loops.bounds);
      s.inputs.push_back({current, loops.read});
      s.output = {result, loops.write};
      s.body.yield(s.body.input(0));
      ctx.add(std::move(s));
      current = result;
      continue;
    }
    StructuredOp s = LoweringContext::parallelOp(op, dims);
    s.output = {result, AffineMap::identity(n)};
    if (affine) {
      s.inputs.push_back({current, axisMap(n, a, step, base)});
      s.body.yield(s.body.input(0));
    } else {
      if (reads > kMaxReads) {
        return absl::UnimplementedError(
            op.describe() + ": Resize along axis " + std::to_string(a) +
            " needs " + std::to_string(reads) +
            " reads per element; "
            "more than " +
            std::to_string(kMaxReads) + " do not lower yet");
      }
      WeightedSum sum(s.body);
      for (int64_t o = 0; o < out; ++o) {
        for (const auto &[index, weight] : taps[o]) {
          s.inputs.push_back(
              {current,
               selectedRead(AffineMap::identity(n), a, a, in, index, o), 0.0});
          sum.add(s.inputs.size() - 1, weight);
        }
      }
      s.body.yield(sum.sum());
    }
    ctx.add(std::move(s));
    current = result;
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::structured::lowering
