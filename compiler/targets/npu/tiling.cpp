#include "compiler/targets/npu/tiling.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"

namespace osprey::compiler::npu {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr uint64_t kComputeFill = 16;

bool isConvLike(const NpuLayer &l) {
  return l.kind == LayerKind::Conv || l.kind == LayerKind::MatMul;
}

// Input channels a step of |l| reads for output channels [c0, c1).
int64_t inputChannels(const NpuLayer &l, const Tiling &t) {
  if (isConvLike(l)) {
    return t.icTile;
  }
  return t.chanTile;
}

// DMAs that move a box of |rows| x |cols| x |chans| out of (or into) a
// dense HWC tensor of width |w| and |c| channels.
int64_t boxDmaCount(int64_t rows, int64_t cols, int64_t chans, int64_t w,
                    int64_t c) {
  if (chans == c) {
    return 1;
  }
  if (cols == w) {
    return ceilDiv(rows * cols, 65535);
  }
  return rows;
}

struct Bounds {
  int64_t inRows, inCols;
};

// Largest input window of a tile of |rows| x |cols| outputs.
Bounds inputBounds(const NpuLayer &l, int64_t rows, int64_t cols) {
  if (!l.hasWindow()) {
    return {rows, cols};
  }
  return {std::min<int64_t>(l.input.h, (rows - 1) * l.strideH + l.kernelH),
          std::min<int64_t>(l.input.w, (cols - 1) * l.strideW + l.kernelW)};
}

} // namespace

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t weightSubBlockBytes(const NpuLayer &l, int64_t c0, int64_t c1,
                             int64_t ic0, int64_t ic1) {
  int64_t oc = c1 - c0;
  uint64_t w = 0;
  switch (l.kind) {
  case LayerKind::Conv:
    w = oc * l.kernelH * l.kernelW * (ic1 - ic0);
    break;
  case LayerKind::MatMul:
    w = oc * (ic1 - ic0);
    break;
  case LayerKind::DepthwiseConv:
    w = oc * l.kernelH * l.kernelW;
    break;
  default:
    return 0;
  }
  return alignUp(w, 4) + oc * kQParamBytes;
}

uint64_t convCycles(const NpuConfig &cfg, int64_t pixels, int64_t oc,
                    int64_t taps, int64_t ic) {
  int64_t r = cfg.arrayRows(), c = cfg.arrayCols();
  if (cfg.mapping == PeMapping::InputParallel) {
    return ceilDiv(oc, c) * pixels * taps * ceilDiv(ic, r) + kComputeFill;
  }
  return ceilDiv(oc, c) * ceilDiv(pixels, r) * std::max(taps * ic, r) +
         kComputeFill;
}

uint64_t depthwiseCycles(const NpuConfig &cfg, int64_t pixels, int64_t ch,
                         int64_t taps) {
  int64_t r = cfg.arrayRows(), c = cfg.arrayCols();
  if (cfg.mapping == PeMapping::InputParallel) {
    return ceilDiv(ch, c) * pixels * ceilDiv(taps, r) + kComputeFill;
  }
  return ceilDiv(ch, c) * ceilDiv(pixels, r) * std::max(taps, r) + kComputeFill;
}

uint64_t poolCycles(const NpuConfig &cfg, int64_t pixels, int64_t ch,
                    int64_t taps) {
  return ceilDiv(ch, cfg.arrayCols()) * pixels * taps + kComputeFill;
}

uint64_t elementwiseCycles(const NpuConfig &cfg, int64_t elements) {
  return ceilDiv(elements, cfg.arrayCols()) + kComputeFill;
}

uint64_t dmaCycles(const NpuConfig &cfg, uint64_t bytes) {
  return cfg.dmaSetupCycles + ceilDiv(bytes, cfg.dmaBytesPerCycle);
}

void forEachStep(const NpuLayer &l, const Tiling &t,
                 const std::function<void(const Step &)> &fn) {
  if (l.isElementwise()) {
    int64_t n = l.output.elements();
    for (int64_t i = 0; i < t.rowTiles; ++i) {
      Step s;
      s.oy0 = i * t.rowTile;
      s.oy1 = std::min(n, s.oy0 + t.rowTile);
      s.iy0 = s.oy0;
      s.iy1 = s.oy1;
      s.block = -1;
      fn(s);
    }
    return;
  }
  const bool channelsOuter = t.blocking == WeightBlocking::PerChannel ||
                             t.blocking == WeightBlocking::PerStep;
  const int64_t oh = l.output.h, ow = l.output.w, oc = l.output.c;
  const int64_t ic = l.input.c;
  auto emit = [&](int64_t ri, int64_t ci, int64_t chi, int64_t ii) {
    Step s;
    s.oy0 = ri * t.rowTile;
    s.oy1 = std::min(oh, s.oy0 + t.rowTile);
    s.ox0 = ci * t.colTile;
    s.ox1 = std::min(ow, s.ox0 + t.colTile);
    s.c0 = chi * t.chanTile;
    s.c1 = std::min(oc, s.c0 + t.chanTile);
    if (isConvLike(l)) {
      s.ic0 = ii * t.icTile;
      s.ic1 = std::min(ic, s.ic0 + t.icTile);
    } else {
      s.ic0 = s.c0;
      s.ic1 = s.c1;
    }
    s.icIndex = ii;
    switch (t.blocking) {
    case WeightBlocking::None:
      s.block = -1;
      break;
    case WeightBlocking::Whole:
      s.block = 0;
      break;
    case WeightBlocking::PerChannel:
      s.block = chi;
      break;
    case WeightBlocking::PerStep:
      s.block = chi * t.icSplits + ii;
      break;
    }
    if (l.hasWindow()) {
      int64_t y = s.oy0 * l.strideH - l.padTop;
      int64_t x = s.ox0 * l.strideW - l.padLeft;
      s.iy0 = std::max<int64_t>(0, y);
      s.ix0 = std::max<int64_t>(0, x);
      s.iy1 =
          std::min(l.input.h, (s.oy1 - 1) * l.strideH - l.padTop + l.kernelH);
      s.ix1 =
          std::min(l.input.w, (s.ox1 - 1) * l.strideW - l.padLeft + l.kernelW);
      s.padTop = static_cast<int32_t>(s.iy0 - y);
      s.padLeft = static_cast<int32_t>(s.ix0 - x);
    } else {
      s.iy0 = s.oy0;
      s.iy1 = s.oy1;
      s.ix0 = 0;
      s.ix1 = 1;
    }
    fn(s);
  };
  if (channelsOuter) {
    for (int64_t chi = 0; chi < t.chanTiles; ++chi) {
      for (int64_t ri = 0; ri < t.rowTiles; ++ri) {
        for (int64_t ci = 0; ci < t.colTiles; ++ci) {
          for (int64_t ii = 0; ii < t.icSplits; ++ii) {
            emit(ri, ci, chi, ii);
          }
        }
      }
    }
  } else {
    for (int64_t ri = 0; ri < t.rowTiles; ++ri) {
      for (int64_t ci = 0; ci < t.colTiles; ++ci) {
        for (int64_t chi = 0; chi < t.chanTiles; ++chi) {
          for (int64_t ii = 0; ii < t.icSplits; ++ii) {
            emit(ri, ci, chi, ii);
          }
        }
      }
    }
  }
}

LayerCost estimateCost(const NpuLayer &l, const NpuConfig &cfg, const Tiling &t,
                       const TilingBudget &budget) {
  struct StepCost {
    uint64_t load = 0, compute = 0, store = 0;
  };
  std::vector<StepCost> steps;
  steps.reserve(t.steps());
  LayerCost cost;
  int64_t lastBlock = -1;
  // Weight blocks of the layer (for the bytes of a block load).
  auto blockBytes = [&](const Step &s) -> uint64_t {
    switch (t.blocking) {
    case WeightBlocking::None:
      return 0;
    case WeightBlocking::Whole:
      return t.weightBytes;
    case WeightBlocking::PerChannel: {
      uint64_t b = 0;
      for (int64_t i = 0; i < t.icSplits; ++i) {
        int64_t i0 = i * t.icTile, i1 = std::min(l.input.c, i0 + t.icTile);
        b += weightSubBlockBytes(l, s.c0, s.c1, i0, i1);
      }
      return b;
    }
    case WeightBlocking::PerStep:
      return weightSubBlockBytes(l, s.c0, s.c1, s.ic0, s.ic1);
    }
    return 0;
  };
  auto addDma = [&](uint64_t bytes, int64_t count) -> uint64_t {
    if (bytes == 0) {
      return 0;
    }
    uint64_t c =
        count * cfg.dmaSetupCycles + ceilDiv(bytes, cfg.dmaBytesPerCycle);
    cost.dmaCycles += c;
    cost.dmaBytes += bytes;
    return c;
  };
  forEachStep(l, t, [&](const Step &s) {
    StepCost sc;
    if (s.block >= 0 && s.block != lastBlock) {
      sc.load += addDma(blockBytes(s), 1);
      lastBlock = s.block;
    }
    const int64_t pixels = (s.oy1 - s.oy0) * (s.ox1 - s.ox0);
    const int64_t ch = s.c1 - s.c0;
    const bool last = s.icIndex == t.icSplits - 1;
    if (l.isElementwise()) {
      int64_t n = s.oy1 - s.oy0;
      if (!budget.inputResident) {
        sc.load += addDma(n, 1);
      }
      if (l.hasSecondInput() && !budget.input2Resident) {
        sc.load += addDma(n, 1);
      }
      sc.compute = elementwiseCycles(cfg, n);
      if (!budget.outputResident) {
        sc.store = addDma(n, 1);
      }
    } else {
      int64_t inCh = s.ic1 - s.ic0;
      int64_t rows = s.iy1 - s.iy0, cols = s.ix1 - s.ix0;
      if (!budget.inputResident) {
        sc.load += addDma(rows * cols * inCh,
                          boxDmaCount(rows, cols, inCh, l.input.w, l.input.c));
      }
      int64_t taps = int64_t{l.kernelH} * l.kernelW;
      switch (l.kind) {
      case LayerKind::Conv:
        sc.compute = convCycles(cfg, pixels, ch, taps, inCh);
        cost.macCycles += sc.compute;
        break;
      case LayerKind::MatMul:
        sc.compute = convCycles(cfg, pixels, ch, 1, inCh);
        cost.macCycles += sc.compute;
        break;
      case LayerKind::DepthwiseConv:
        sc.compute = depthwiseCycles(cfg, pixels, ch, taps);
        cost.macCycles += sc.compute;
        break;
      default:
        sc.compute = poolCycles(cfg, pixels, ch, taps);
        break;
      }
      if (t.icSplits > 1 && s.icIndex > 0) {
        sc.compute += elementwiseCycles(cfg, pixels * ch);
      }
      if (last && !budget.outputResident) {
        sc.store = addDma(pixels * ch, boxDmaCount(s.oy1 - s.oy0, s.ox1 - s.ox0,
                                                   ch, l.output.w, l.output.c));
      }
    }
    cost.computeCycles += sc.compute;
    steps.push_back(sc);
  });
  cost.steps = static_cast<int64_t>(steps.size());
  uint64_t total = steps.empty() ? 0 : steps[0].load;
  for (size_t k = 0; k < steps.size(); ++k) {
    uint64_t dma = (k + 1 < steps.size() ? steps[k + 1].load : 0) +
                   (k > 0 ? steps[k - 1].store : 0);
    total += std::max(steps[k].compute, dma);
  }
  if (!steps.empty()) {
    total += steps.back().store;
  }
  cost.totalCycles = total;
  return cost;
}

namespace {

// Fills the derived fields of a tiling; false if it breaks |budget|.
bool complete(const NpuLayer &l, const NpuConfig &cfg,
              const TilingBudget &budget, Tiling &t) {
  (void)cfg;
  if (l.isElementwise()) {
    int64_t n = l.output.elements();
    t.rowTiles = ceilDiv(n, t.rowTile);
    t.colTiles = t.chanTiles = t.icSplits = 1;
    uint64_t per = t.rowTile;
    t.halfBytes = (budget.inputResident ? 0 : per) +
                  (l.hasSecondInput() && !budget.input2Resident ? per : 0) +
                  (budget.outputResident ? 0 : per);
    t.accBytes = 0;
    t.blocking = WeightBlocking::None;
    return t.rowTile <= 65535 && 2 * t.halfBytes <= budget.sramBytes;
  }
  const bool conv = isConvLike(l);
  const int64_t oc = l.output.c, ic = l.input.c;
  if (budget.inputResident &&
      (t.colTile != l.output.w || (conv ? t.icTile != ic : t.chanTile != oc))) {
    return false;
  }
  if (budget.outputResident && (t.colTile != l.output.w || t.chanTile != oc)) {
    return false;
  }
  t.rowTiles = ceilDiv(l.output.h, t.rowTile);
  t.colTiles = ceilDiv(l.output.w, t.colTile);
  t.chanTiles = ceilDiv(oc, t.chanTile);
  t.icSplits = conv ? ceilDiv(ic, t.icTile) : 1;
  Bounds b = inputBounds(l, t.rowTile, t.colTile);
  int64_t inCh = inputChannels(l, t);
  uint64_t pixels = t.rowTile * t.colTile;
  uint64_t outBytes = pixels * t.chanTile;
  uint64_t partial = t.icSplits > 1 ? pixels * t.chanTile * 4 : 0;
  t.halfBytes = (budget.inputResident ? 0 : b.inRows * b.inCols * inCh) +
                (budget.outputResident ? 0 : outBytes) + partial;
  t.accBytes = partial;
  if (2 * t.halfBytes + t.accBytes > budget.sramBytes) {
    return false;
  }
  if (!l.hasWeights()) {
    t.blocking = WeightBlocking::None;
    t.weightBlockBytes = t.weightBytes = 0;
    return true;
  }
  uint64_t total = 0, perChannel = 0, perStep = 0;
  for (int64_t chi = 0; chi < t.chanTiles; ++chi) {
    int64_t c0 = chi * t.chanTile, c1 = std::min(oc, c0 + t.chanTile);
    uint64_t channel = 0;
    for (int64_t i = 0; i < t.icSplits; ++i) {
      int64_t i0 = conv ? i * t.icTile : 0;
      int64_t i1 = conv ? std::min(ic, i0 + t.icTile) : ic;
      uint64_t sub = weightSubBlockBytes(l, c0, c1, i0, i1);
      perStep = std::max(perStep, sub);
      channel += sub;
    }
    perChannel = std::max(perChannel, channel);
    total += channel;
  }
  t.weightBytes = total;
  if (total <= budget.weightBlockBytes) {
    t.blocking = WeightBlocking::Whole;
    t.weightBlockBytes = total;
  } else if (perChannel <= budget.weightBlockBytes) {
    t.blocking = WeightBlocking::PerChannel;
    t.weightBlockBytes = perChannel;
  } else if (perStep <= budget.weightBlockBytes) {
    t.blocking = WeightBlocking::PerStep;
    t.weightBlockBytes = perStep;
  } else {
    return false;
  }
  return true;
}

std::vector<int64_t> splitCandidates(int64_t n, int64_t multiple) {
  // Tiles of n / s for growing s, rounded up to |multiple| when larger.
  std::vector<int64_t> out;
  for (int64_t s = 2; s <= n && out.size() < 40;
       s = s < 8 ? s + 1 : s * 3 / 2) {
    int64_t t = ceilDiv(n, s);
    if (t > multiple) {
      t = alignUp(t, multiple);
    }
    if (t < n && (out.empty() || out.back() != t)) {
      out.push_back(t);
    }
  }
  if (out.empty() || out.back() != 1) {
    if (n > 1) {
      out.push_back(1);
    }
  }
  return out;
}

} // namespace

absl::StatusOr<Tiling> chooseTiling(const NpuLayer &l, const NpuConfig &cfg,
                                    const TilingBudget &budget) {
  const int64_t R = cfg.arrayRows(), C = cfg.arrayCols();
  std::optional<Tiling> best;
  uint64_t bestCycles = 0;
  auto consider = [&](Tiling t) {
    if (!complete(l, cfg, budget, t)) {
      return;
    }
    LayerCost c = estimateCost(l, cfg, t, budget);
    if (!best || c.totalCycles < bestCycles ||
        (c.totalCycles == bestCycles && t.steps() < best->steps())) {
      best = t;
      bestCycles = c.totalCycles;
    }
  };
  // Largest row tile that fits with the other sizes fixed (0 if none).
  auto maxRows = [&](Tiling t, int64_t limit) -> int64_t {
    int64_t lo = 0, hi = limit;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo + 1) / 2;
      Tiling probe = t;
      probe.rowTile = mid;
      if (complete(l, cfg, budget, probe)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  };
  auto tryRows = [&](Tiling t, int64_t extent, int64_t granule) {
    int64_t rmax = maxRows(t, extent);
    if (rmax == 0) {
      return;
    }
    std::vector<int64_t> rows = {rmax};
    int64_t tiles = ceilDiv(extent, rmax);
    int64_t even = ceilDiv(extent, tiles);
    rows.push_back(even);
    // More, smaller tiles than needed: a shorter first load and last store
    // against 16 cycles of fill per instruction (the estimate decides).
    std::vector<int64_t> bases = {rmax, even};
    for (int64_t more : {2, 4, 8}) {
      int64_t r = ceilDiv(extent, tiles * more);
      if (r >= 1 && r < even) {
        bases.push_back(r);
        rows.push_back(r);
      }
    }
    // Tiles whose pixel count is a multiple of |granule| leave no PE row idle.
    for (int64_t base : bases) {
      for (int64_t r = base; r >= 1 && r > base - granule; --r) {
        if ((r * t.colTile) % granule == 0) {
          rows.push_back(r);
          break;
        }
      }
    }
    for (int64_t r : rows) {
      t.rowTile = r;
      consider(t);
    }
  };

  if (l.isElementwise()) {
    Tiling t;
    t.rowTile = 1;
    tryRows(t, std::min<int64_t>(l.output.elements(), 65535), C);
  } else {
    const bool conv = isConvLike(l);
    const int64_t oc = l.output.c, ic = l.input.c, ow = l.output.w;
    std::vector<int64_t> chans = {oc};
    for (int64_t k = 1; k * C < oc && chans.size() < 24;
         k = k < 8 ? k + 1 : k * 2) {
      chans.push_back(k * C);
    }
    // Below the array width only when nothing wider fits (see |search|).
    std::vector<int64_t> narrow;
    for (int64_t n = std::min(oc, C) / 2; n >= 1; n /= 2) {
      narrow.push_back(n);
    }
    std::vector<int64_t> ics = {ic};
    std::vector<int64_t> cols = {ow};
    auto search = [&](const std::vector<int64_t> &icList,
                      const std::vector<int64_t> &colList) {
      for (int64_t icTile : icList) {
        for (int64_t chanTile : chans) {
          for (int64_t colTile : colList) {
            Tiling t;
            t.chanTile = chanTile;
            t.icTile = conv ? icTile : chanTile;
            t.colTile = colTile;
            tryRows(t, l.output.h, R);
          }
        }
      }
    };
    search(ics, cols);
    if (!best && conv) {
      search(splitCandidates(ic, R), cols);
    }
    if (!best && ow > 1) {
      std::vector<int64_t> icAll = ics;
      if (conv) {
        for (int64_t v : splitCandidates(ic, R)) {
          icAll.push_back(v);
        }
      }
      search(icAll, splitCandidates(ow, 1));
    }
    if (!best) {
      chans = narrow;
      std::vector<int64_t> icAll = ics;
      if (conv) {
        for (int64_t v : splitCandidates(ic, R)) {
          icAll.push_back(v);
        }
      }
      std::vector<int64_t> colAll = cols;
      for (int64_t v : splitCandidates(ow, 1)) {
        colAll.push_back(v);
      }
      search(icAll, colAll);
    }
  }
  if (!best) {
    return absl::UnimplementedError(
        absl::StrCat("npu layer '", l.name, "' (", layerKindName(l.kind),
                     ", input ", l.input.h, "x", l.input.w, "x", l.input.c,
                     ", output ", l.output.h, "x", l.output.w, "x", l.output.c,
                     ", kernel ", l.kernelH, "x", l.kernelW, "): no tile fits ",
                     budget.sramBytes, " bytes of SRAM and weight blocks of ",
                     budget.weightBlockBytes, " bytes",
                     budget.inputResident || budget.outputResident
                         ? " with its operands resident in SRAM"
                         : ""));
  }
  return *best;
}

absl::StatusOr<LayerCost> estimateLayer(const NpuLayer &layer,
                                        const NpuConfig &config) {
  if (absl::Status s = verifyLayer(layer); !s.ok()) {
    return s;
  }
  TilingBudget budget;
  budget.sramBytes = config.streamSramBytes();
  budget.weightBlockBytes = config.weightBytes / 2;
  absl::StatusOr<Tiling> t = chooseTiling(layer, config, budget);
  if (!t.ok()) {
    return t.status();
  }
  return estimateCost(layer, config, *t, budget);
}

} // namespace osprey::compiler::npu
