#include "compiler/targets/npu/stream_emitter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "drivers/npu/builder/stream_builder.h"

namespace osprey::compiler::npu {
namespace {

using drivers::npu::builder::StreamBuilder;

constexpr uint64_t kMaxDmaLen = uint64_t{1} << 24;
constexpr uint64_t kMaxDmaRows = 65535;
constexpr uint32_t kMaxQueuedReads = 16;
// Alignment slack the SRAM layout of a layer needs beyond its tiles.
constexpr uint64_t kLayoutSlack = 128;

enum Space : uint8_t { kSram = 0, kWeightMemory = 1 };

struct Range {
  uint8_t space = kSram;
  uint64_t begin = 0, end = 0;
};

bool overlaps(const Range &a, const Range &b) {
  return a.space == b.space && a.begin < b.end && b.begin < a.end &&
         a.begin < a.end && b.begin < b.end;
}
bool overlapsAny(const Range &r, const std::vector<Range> &list) {
  for (const Range &o : list) {
    if (overlaps(r, o)) {
      return true;
    }
  }
  return false;
}

struct Dma {
  bool read = true;
  bool toWeights = false;
  uint32_t binding = 0;
  uint64_t sysOffset = 0;
  uint64_t loc = 0;
  uint64_t len = 0, rows = 1, sysStride = 0, locStride = 0;
  Range local() const {
    return {static_cast<uint8_t>(toWeights ? kWeightMemory : kSram), loc,
            loc + (rows - 1) * locStride + len};
  }
};

struct Compute {
  uint32_t opcode = 0, flags = 0;
  std::vector<std::pair<npu_register_t, int64_t>> regs;
  std::vector<Range> reads, writes;
  uint64_t cycles = 0;
};

struct StepOps {
  std::vector<Dma> loads;
  std::vector<Compute> compute;
  std::vector<Dma> stores;
};

Range sram(uint64_t addr, uint64_t bytes) {
  return {kSram, addr, addr + bytes};
}
Range wmem(uint64_t addr, uint64_t bytes) {
  return {kWeightMemory, addr, addr + bytes};
}

// Appends DMAs moving |bytes| contiguous bytes.
void contiguousDma(std::vector<Dma> &out, bool read, bool toWeights,
                   uint32_t binding, uint64_t sys, uint64_t loc,
                   uint64_t bytes) {
  while (bytes > 0) {
    Dma d;
    d.read = read;
    d.toWeights = toWeights;
    d.binding = binding;
    d.sysOffset = sys;
    d.loc = loc;
    if (bytes <= kMaxDmaLen) {
      d.len = bytes;
    } else {
      d.len = 1 << 16;
      d.rows = std::min<uint64_t>(bytes / d.len, kMaxDmaRows);
      d.sysStride = d.locStride = d.len;
    }
    out.push_back(d);
    uint64_t moved = d.len * d.rows;
    sys += moved;
    loc += moved;
    bytes -= moved;
  }
}

// Appends DMAs moving the box rows [y0, y1) x columns [x0, x1) x channels
// [c0, c1) of a dense HWC tensor (width |w|, |c| channels, at |sys| in
// |binding|) to or from a dense box at |loc|.
void boxDma(std::vector<Dma> &out, bool read, uint32_t binding, uint64_t sys,
            int64_t w, int64_t c, int64_t y0, int64_t y1, int64_t x0,
            int64_t x1, int64_t c0, int64_t c1, uint64_t loc) {
  const uint64_t rows = y1 - y0, cols = x1 - x0, ch = c1 - c0;
  const uint64_t start = sys + (uint64_t(y0) * w + x0) * c + c0;
  auto strided = [&](uint64_t sysAddr, uint64_t locAddr, uint64_t n,
                     uint64_t len, uint64_t sysStride) {
    while (n > 0) {
      Dma d;
      d.read = read;
      d.binding = binding;
      d.sysOffset = sysAddr;
      d.loc = locAddr;
      d.len = len;
      d.rows = std::min<uint64_t>(n, kMaxDmaRows);
      d.sysStride = sysStride;
      d.locStride = len;
      if (d.rows == 1) {
        d.sysStride = d.locStride = 0;
      }
      out.push_back(d);
      sysAddr += d.rows * sysStride;
      locAddr += d.rows * len;
      n -= d.rows;
    }
  };
  if (ch == uint64_t(c)) {
    if (cols == uint64_t(w)) {
      contiguousDma(out, read, false, binding, start, loc, rows * cols * ch);
    } else {
      strided(start, loc, rows, cols * ch, uint64_t(w) * c);
    }
  } else if (cols == uint64_t(w)) {
    strided(start, loc, rows * cols, ch, c);
  } else {
    for (uint64_t y = 0; y < rows; ++y) {
      strided(start + y * uint64_t(w) * c, loc + y * cols * ch, cols, ch, c);
    }
  }
}

// Writes words, tracking what each engine touched since the last SYNC.
class Emitter {
public:
  explicit Emitter(const NpuConfig &config) : config(config) {}

  bool dmaConflicts(const Dma &d) const {
    Range r = d.local();
    if (d.read) {
      return queuedReads >= kMaxQueuedReads || overlapsAny(r, computeWrites) ||
             overlapsAny(r, computeReads);
    }
    return overlapsAny(r, computeWrites);
  }
  bool computeConflicts(const Compute &c) const {
    for (const Range &r : c.reads) {
      if (overlapsAny(r, dmaWrites)) {
        return true;
      }
    }
    for (const Range &r : c.writes) {
      if (overlapsAny(r, dmaWrites) || overlapsAny(r, dmaReads)) {
        return true;
      }
    }
    return false;
  }

  void sync() {
    b.Op(NPU_OP_SYNC);
    uint64_t t = std::max(dmaFree, computeFree);
    dmaFree = computeFree = t;
    dmaWrites.clear();
    dmaReads.clear();
    computeWrites.clear();
    computeReads.clear();
    queuedReads = 0;
    ++syncs;
  }

  void dma(const Dma &d) {
    if (dmaConflicts(d)) {
      sync();
    }
    b.SetSysAddr(d.binding, static_cast<uint32_t>(d.sysOffset));
    set(NPU_REG_DMA_LOC_ADDR, d.loc);
    set(NPU_REG_DMA_LEN, d.len);
    set(NPU_REG_DMA_ROWS, d.rows);
    set(NPU_REG_DMA_SYS_STRIDE, d.sysStride);
    set(NPU_REG_DMA_LOC_STRIDE, d.locStride);
    b.Op(d.read ? NPU_OP_DMA_READ : NPU_OP_DMA_WRITE,
         d.toWeights ? NPU_FLAG_DMA_WEIGHTS : 0);
    if (d.read) {
      dmaWrites.push_back(d.local());
      ++queuedReads;
    } else {
      dmaReads.push_back(d.local());
    }
    dmaFree += dmaCycles(config, d.len * d.rows);
  }

  void compute(const Compute &c) {
    if (computeConflicts(c)) {
      sync();
    }
    for (const auto &[reg, value] : c.regs) {
      set(reg, value);
    }
    b.Op(static_cast<npu_opcode_t>(c.opcode), c.flags);
    computeReads.insert(computeReads.end(), c.reads.begin(), c.reads.end());
    computeWrites.insert(computeWrites.end(), c.writes.begin(), c.writes.end());
    computeFree += c.cycles;
  }

  void end() { b.Op(NPU_OP_END); }

  StreamBuilder b;
  uint64_t dmaFree = 0, computeFree = 0;
  uint32_t syncs = 0;

private:
  void set(npu_register_t reg, int64_t value) {
    if (known[reg] && *known[reg] == value) {
      return;
    }
    b.Set(reg, value);
    known[reg] = value;
  }

  const NpuConfig &config;
  std::optional<int64_t> known[NPU_REG_COUNT];
  std::vector<Range> dmaWrites, dmaReads, computeWrites, computeReads;
  uint32_t queuedReads = 0;
};

// A layer of the chain with its operands resolved and its tiling chosen.
struct LayerPlan {
  const NpuLayer *layer = nullptr;
  Tiling tiling;
  TilingBudget budget;
  bool inResident = false, in2Resident = false, outResident = false;
  uint64_t inAddr = 0, in2Addr = 0, outAddr = 0; // Resident SRAM addresses.
  Operand in, in2, dst;                          // Binding operands.
  // Packed weights: per block its offset and size, per (channel tile, split)
  // the sub-block's offset and weight bytes.
  std::vector<uint64_t> blockOffset, blockBytes;
  std::vector<uint64_t> subOffset, subWeightBytes;
  std::vector<int64_t> subBlock;
};

absl::Status chainError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("npu chain: ", what));
}

void appendI32(std::vector<uint8_t> &out, int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) {
    out.push_back(static_cast<uint8_t>(u >> (8 * i)));
  }
}

// Packs the sub-block of output channels [c0, c1), input channels
// [ic0, ic1) (see weightSubBlockBytes); returns the weight bytes (padded).
uint64_t packSubBlock(const NpuLayer &l, int64_t c0, int64_t c1, int64_t ic0,
                      int64_t ic1, bool firstSplit, std::vector<uint8_t> &out) {
  size_t start = out.size();
  const int64_t kh = l.kernelH, kw = l.kernelW, ic = l.input.c;
  if (l.kind == LayerKind::Conv) {
    for (int64_t o = c0; o < c1; ++o) {
      for (int64_t t = 0; t < kh * kw; ++t) {
        for (int64_t i = ic0; i < ic1; ++i) {
          out.push_back(
              static_cast<uint8_t>(l.weights[(o * kh * kw + t) * ic + i]));
        }
      }
    }
  } else if (l.kind == LayerKind::MatMul) {
    for (int64_t o = c0; o < c1; ++o) {
      for (int64_t i = ic0; i < ic1; ++i) {
        out.push_back(static_cast<uint8_t>(l.weights[o * ic + i]));
      }
    }
  } else {
    for (int64_t t = 0; t < kh * kw; ++t) {
      for (int64_t o = c0; o < c1; ++o) {
        out.push_back(static_cast<uint8_t>(l.weights[t * ic + o]));
      }
    }
  }
  while ((out.size() - start) % 4 != 0) {
    out.push_back(0);
  }
  uint64_t weightBytes = out.size() - start;
  for (int64_t o = c0; o < c1; ++o) {
    appendI32(out, firstSplit ? l.bias[o] : 0);
    appendI32(out, l.multiplier[o]);
    appendI32(out, l.shift[o]);
  }
  return weightBytes;
}

struct TensorInfo {
  int producer = -1;
  int lastUse = -1;
  uint64_t bytes = 0;
  bool resident = false;
  uint64_t addr = 0;          // SRAM, when resident.
  uint64_t scratchOffset = 0; // Scratch binding, when spilled.
};

// First-fit placement of the resident tensors by lifetime; returns the peak.
uint64_t placeResident(std::map<uint32_t, TensorInfo> &tensors) {
  std::vector<TensorInfo *> placed;
  uint64_t peak = 0;
  std::vector<std::pair<int, uint32_t>> order;
  for (auto &[id, t] : tensors) {
    if (t.resident) {
      order.push_back({t.producer, id});
    }
  }
  std::sort(order.begin(), order.end());
  for (auto &[producer, id] : order) {
    TensorInfo &t = tensors[id];
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (TensorInfo *o : placed) {
      if (o->producer <= t.lastUse && t.producer <= o->lastUse) {
        busy.push_back({o->addr, o->addr + o->bytes});
      }
    }
    std::sort(busy.begin(), busy.end());
    uint64_t addr = 0;
    for (auto &[b, e] : busy) {
      if (addr + t.bytes <= b) {
        break;
      }
      addr = std::max(addr, alignUp(e, 16));
    }
    t.addr = addr;
    peak = std::max(peak, addr + t.bytes);
    placed.push_back(&t);
  }
  return alignUp(peak, 16);
}

} // namespace

absl::StatusOr<CompiledStream> emitChain(const NpuChain &chain,
                                         const NpuConfig &config,
                                         const EmitOptions &options) {
  const uint64_t sramLimit =
      options.sramBytes ? std::min(options.sramBytes, config.streamSramBytes())
                        : config.streamSramBytes();
  if (chain.layers.empty()) {
    return chainError("no layers");
  }
  // Tensors, bindings and lifetimes.
  std::map<uint32_t, TensorInfo> tensors;
  // The weight binding exists only for chains that load weights.
  const bool loadsWeights =
      std::any_of(chain.layers.begin(), chain.layers.end(),
                  [](const NpuLayer &l) { return l.hasWeights(); });
  uint32_t maxBinding = loadsWeights ? chain.weightBinding : 0;
  std::set<uint32_t> inputBindings, outputBindings;
  for (size_t i = 0; i < chain.layers.size(); ++i) {
    const NpuLayer &l = chain.layers[i];
    if (absl::Status s = verifyLayer(l); !s.ok()) {
      return s;
    }
    auto use = [&](const Operand &op, const Shape &shape,
                   bool isOutput) -> absl::Status {
      if (op.kind == Operand::Kind::Binding) {
        if (op.binding >= NPU_MAX_BINDINGS) {
          return chainError(absl::StrCat("layer '", l.name, "' uses binding ",
                                         op.binding, " (at most ",
                                         NPU_MAX_BINDINGS, ")"));
        }
        if (loadsWeights && op.binding == chain.weightBinding) {
          return chainError(absl::StrCat("layer '", l.name, "' uses binding ",
                                         op.binding,
                                         ", the chain's weight binding"));
        }
        if (op.offset + shape.elements() > (uint64_t{1} << 32)) {
          return chainError(
              absl::StrCat("layer '", l.name, "': operand ends past 4 GiB"));
        }
        maxBinding = std::max(maxBinding, op.binding);
        (isOutput ? outputBindings : inputBindings).insert(op.binding);
        return absl::OkStatus();
      }
      TensorInfo &t = tensors[op.tensor];
      if (isOutput) {
        if (t.producer >= 0) {
          return chainError(absl::StrCat("tensor ", op.tensor,
                                         " is produced twice (layer '", l.name,
                                         "')"));
        }
        t.producer = static_cast<int>(i);
        t.lastUse = std::max(t.lastUse, static_cast<int>(i));
        t.bytes = shape.elements();
      } else {
        if (t.producer < 0) {
          return chainError(absl::StrCat("layer '", l.name, "' reads tensor ",
                                         op.tensor,
                                         " before any layer produces it"));
        }
        if (static_cast<uint64_t>(shape.elements()) != t.bytes) {
          return chainError(absl::StrCat("layer '", l.name, "' reads tensor ",
                                         op.tensor, " as ", shape.elements(),
                                         " elements, produced with ", t.bytes));
        }
        t.lastUse = static_cast<int>(i);
      }
      return absl::OkStatus();
    };
    if (absl::Status s = use(l.in, l.input, false); !s.ok()) {
      return s;
    }
    if (l.hasSecondInput()) {
      if (absl::Status s = use(l.in2, l.input, false); !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = use(l.dst, l.output, true); !s.ok()) {
      return s;
    }
  }
  for (uint32_t b : outputBindings) {
    if (inputBindings.count(b)) {
      // Reads and writes of one binding are not ordered against each other
      // across tiles; a chain passes such data through a tensor instead.
      return chainError(
          absl::StrCat("binding ", b, " is both read and written"));
    }
  }
  for (auto &[id, t] : tensors) {
    t.resident = options.keepResident;
  }

  // Residency and tiling: spill until every layer tiles.
  std::vector<LayerPlan> plans(chain.layers.size());
  uint64_t residentPeak = 0;
  for (;;) {
    residentPeak = placeResident(tensors);
    if (residentPeak > sramLimit / 2) {
      // Keep at least half of the SRAM for the working tiles.
      TensorInfo *largest = nullptr;
      for (auto &[id, t] : tensors) {
        if (t.resident && (!largest || t.bytes > largest->bytes)) {
          largest = &t;
        }
      }
      largest->resident = false;
      continue;
    }
    bool retry = false;
    for (size_t i = 0; i < chain.layers.size() && !retry; ++i) {
      const NpuLayer &l = chain.layers[i];
      LayerPlan &p = plans[i];
      p = LayerPlan();
      p.layer = &l;
      auto isResident = [&](const Operand &op) {
        return op.kind == Operand::Kind::Resident &&
               tensors[op.tensor].resident;
      };
      p.inResident = isResident(l.in);
      p.in2Resident = l.hasSecondInput() && isResident(l.in2);
      p.outResident = isResident(l.dst);
      p.budget.sramBytes = sramLimit > residentPeak + kLayoutSlack
                               ? sramLimit - residentPeak - kLayoutSlack
                               : 0;
      p.budget.weightBlockBytes = config.weightBytes / 2;
      p.budget.inputResident = p.inResident;
      p.budget.input2Resident = p.in2Resident;
      p.budget.outputResident = p.outResident;
      absl::StatusOr<Tiling> t = chooseTiling(l, config, p.budget);
      if (!t.ok()) {
        if (p.inResident || p.in2Resident || p.outResident) {
          for (const Operand *op : {&l.in, &l.in2, &l.dst}) {
            if (op->kind == Operand::Kind::Resident) {
              tensors[op->tensor].resident = false;
            }
          }
          retry = true;
          break;
        }
        return t.status();
      }
      p.tiling = *t;
    }
    if (!retry) {
      break;
    }
  }

  CompiledStream out;
  out.residentBytes = residentPeak;
  // Spilled tensors live in the scratch binding.
  for (auto &[id, t] : tensors) {
    if (!t.resident) {
      t.scratchOffset = out.scratchBytes;
      out.scratchBytes = alignUp(out.scratchBytes + t.bytes, 16);
    }
  }
  if (out.scratchBytes > (uint64_t{1} << 32)) {
    return absl::UnimplementedError(absl::StrCat(
        "npu chain: intermediates need ", out.scratchBytes,
        " bytes of scratch, more than the 4 GiB the device addresses"));
  }
  if (out.scratchBytes > 0) {
    if (chain.scratchBinding >= NPU_MAX_BINDINGS ||
        (loadsWeights && chain.scratchBinding == chain.weightBinding) ||
        inputBindings.count(chain.scratchBinding) ||
        outputBindings.count(chain.scratchBinding)) {
      return chainError(absl::StrCat(
          "intermediates spill to scratch binding ", chain.scratchBinding,
          ", which is out of range or used otherwise"));
    }
    maxBinding = std::max(maxBinding, chain.scratchBinding);
    out.bindingWriteMask |= 1u << chain.scratchBinding;
  }
  for (uint32_t b : outputBindings) {
    out.bindingWriteMask |= 1u << b;
  }
  out.bindingCount = maxBinding + 1;

  // Operands and weights.
  for (LayerPlan &p : plans) {
    const NpuLayer &l = *p.layer;
    auto resolve = [&](const Operand &op, bool resident, uint64_t *addr) {
      if (op.kind == Operand::Kind::Binding) {
        return op;
      }
      const TensorInfo &t = tensors[op.tensor];
      if (resident) {
        *addr = t.addr;
        return op;
      }
      return Operand::memory(chain.scratchBinding, t.scratchOffset);
    };
    p.in = resolve(l.in, p.inResident, &p.inAddr);
    if (l.hasSecondInput()) {
      p.in2 = resolve(l.in2, p.in2Resident, &p.in2Addr);
    }
    p.dst = resolve(l.dst, p.outResident, &p.outAddr);
    if (!l.hasWeights()) {
      continue;
    }
    const Tiling &t = p.tiling;
    const bool conv = l.kind == LayerKind::Conv || l.kind == LayerKind::MatMul;
    int64_t blocks = t.blocking == WeightBlocking::Whole ? 1
                     : t.blocking == WeightBlocking::PerChannel
                         ? t.chanTiles
                         : t.chanTiles * t.icSplits;
    p.blockOffset.assign(blocks, 0);
    p.blockBytes.assign(blocks, 0);
    p.subOffset.assign(t.chanTiles * t.icSplits, 0);
    p.subWeightBytes.assign(t.chanTiles * t.icSplits, 0);
    p.subBlock.assign(t.chanTiles * t.icSplits, 0);
    int64_t current = -1;
    for (int64_t chi = 0; chi < t.chanTiles; ++chi) {
      for (int64_t ii = 0; ii < t.icSplits; ++ii) {
        int64_t block = blocks == 1 ? 0
                        : t.blocking == WeightBlocking::PerChannel
                            ? chi
                            : chi * t.icSplits + ii;
        if (block != current) {
          while (out.weights.size() % 16 != 0) {
            out.weights.push_back(0);
          }
          p.blockOffset[block] = out.weights.size();
          current = block;
        }
        int64_t c0 = chi * t.chanTile,
                c1 = std::min(l.output.c, c0 + t.chanTile);
        int64_t i0 = conv ? ii * t.icTile : 0;
        int64_t i1 = conv ? std::min(l.input.c, i0 + t.icTile) : l.input.c;
        int64_t sub = chi * t.icSplits + ii;
        p.subOffset[sub] = out.weights.size();
        p.subBlock[sub] = block;
        p.subWeightBytes[sub] =
            packSubBlock(l, c0, c1, i0, i1, ii == 0, out.weights);
        p.blockBytes[block] = out.weights.size() - p.blockOffset[block];
      }
    }
  }
  if (out.weights.size() > (uint64_t{1} << 32)) {
    return absl::UnimplementedError(absl::StrCat(
        "npu chain: ", out.weights.size(),
        " bytes of packed weights, more than the 4 GiB the device addresses"));
  }
  const bool staticWeights = out.weights.size() <= config.weightBytes;

  // Steps of the whole chain.
  std::vector<StepOps> steps;
  // Weight-memory slots in ring mode: which (layer, block) each holds.
  std::pair<int64_t, int64_t> slotHolds[2] = {{-1, -1}, {-1, -1}};
  int prevSlot = -1;
  std::set<std::pair<int64_t, int64_t>> loadedStatic;
  for (size_t li = 0; li < plans.size(); ++li) {
    LayerPlan &p = plans[li];
    const NpuLayer &l = *p.layer;
    const Tiling &t = p.tiling;
    // SRAM layout: half 0 | accumulator | ... | half 1 (top).
    const uint64_t base = residentPeak;
    // Sub-areas are 4-byte aligned inside the half.
    const uint64_t half = alignUp(t.halfBytes + 16, 16);
    const uint64_t accAddr = base + half;
    const uint64_t half1 = (sramLimit - half) / 16 * 16;
    const uint64_t inBox = [&]() -> uint64_t {
      if (p.inResident) {
        return 0;
      }
      if (l.isElementwise()) {
        return t.rowTile;
      }
      int64_t inRows =
          l.hasWindow()
              ? std::min<int64_t>(l.input.h,
                                  (t.rowTile - 1) * l.strideH + l.kernelH)
              : t.rowTile;
      int64_t inCols =
          l.hasWindow()
              ? std::min<int64_t>(l.input.w,
                                  (t.colTile - 1) * l.strideW + l.kernelW)
              : 1;
      int64_t ch = (l.kind == LayerKind::Conv || l.kind == LayerKind::MatMul)
                       ? t.icTile
                       : t.chanTile;
      return uint64_t(inRows) * inCols * ch;
    }();
    const uint64_t in2Box =
        l.hasSecondInput() && !p.in2Resident ? t.rowTile : 0;
    const uint64_t outBox = p.outResident ? 0
                            : l.isElementwise()
                                ? t.rowTile
                                : uint64_t(t.rowTile) * t.colTile * t.chanTile;
    const uint64_t in2Off = alignUp(inBox, 4);
    const uint64_t outOff = alignUp(in2Off + in2Box, 4);
    const uint64_t partialOff = alignUp(outOff + outBox, 4);
    int32_t actMin = l.actMin;
    if (l.relu) {
      actMin = std::max(actMin, l.outputZp);
    }
    forEachStep(l, t, [&](const Step &s) {
      StepOps ops;
      const uint64_t h = steps.size() % 2 == 0 ? base : half1;
      // Weights.
      uint64_t subW = 0, subQ = 0;
      if (s.block >= 0) {
        int64_t chi = s.c0 / t.chanTile;
        int64_t sub = chi * t.icSplits + s.icIndex;
        int64_t block = p.subBlock[sub];
        uint64_t blockBase = 0;
        std::pair<int64_t, int64_t> key = {static_cast<int64_t>(li), block};
        bool load = false;
        if (staticWeights) {
          blockBase = p.blockOffset[block];
          load = loadedStatic.insert(key).second;
        } else {
          int slot = slotHolds[0] == key ? 0 : slotHolds[1] == key ? 1 : -1;
          if (slot < 0) {
            slot = prevSlot == 0 ? 1 : 0;
            slotHolds[slot] = key;
            load = true;
          }
          prevSlot = slot;
          blockBase = slot * (config.weightBytes / 2);
        }
        if (load) {
          contiguousDma(ops.loads, true, true, chain.weightBinding,
                        p.blockOffset[block], blockBase, p.blockBytes[block]);
        }
        subW = blockBase + (p.subOffset[sub] - p.blockOffset[block]);
        subQ = subW + p.subWeightBytes[sub];
      }
      const int64_t rows = s.oy1 - s.oy0, cols = s.ox1 - s.ox0;
      const int64_t ch = s.c1 - s.c0;
      if (l.isElementwise()) {
        const int64_t n = rows;
        uint64_t a = p.inResident ? p.inAddr + s.oy0 : h;
        if (!p.inResident) {
          contiguousDma(ops.loads, true, false, p.in.binding,
                        p.in.offset + s.oy0, a, n);
        }
        uint64_t b2 = 0;
        if (l.hasSecondInput()) {
          b2 = p.in2Resident ? p.in2Addr + s.oy0 : h + in2Off;
          if (!p.in2Resident) {
            contiguousDma(ops.loads, true, false, p.in2.binding,
                          p.in2.offset + s.oy0, b2, n);
          }
        }
        uint64_t o = p.outResident ? p.outAddr + s.oy0 : h + outOff;
        Compute c;
        c.regs = {{NPU_REG_IFM_ADDR, int64_t(a)},
                  {NPU_REG_IFM_H, 1},
                  {NPU_REG_IFM_W, 1},
                  {NPU_REG_IFM_C, n},
                  {NPU_REG_IFM_ZP, l.inputZp},
                  {NPU_REG_OFM_ADDR, int64_t(o)},
                  {NPU_REG_OFM_H, 1},
                  {NPU_REG_OFM_W, 1},
                  {NPU_REG_OFM_C, n},
                  {NPU_REG_OFM_ZP, l.outputZp},
                  {NPU_REG_ACT_MIN, l.actMin},
                  {NPU_REG_ACT_MAX, l.actMax}};
        c.reads.push_back(sram(a, n));
        if (l.hasSecondInput()) {
          c.regs.push_back({NPU_REG_IFM2_ADDR, int64_t(b2)});
          c.reads.push_back(sram(b2, n));
        }
        switch (l.kind) {
        case LayerKind::Relu:
        case LayerKind::LeakyRelu:
          c.opcode =
              l.kind == LayerKind::Relu ? NPU_OP_ACT_RELU : NPU_OP_ACT_LRELU;
          c.regs.push_back({NPU_REG_OUT_MULT, l.out.multiplier});
          c.regs.push_back({NPU_REG_OUT_SHIFT, l.out.shift});
          if (l.kind == LayerKind::LeakyRelu) {
            c.regs.push_back({NPU_REG_ALPHA_MULT, l.alpha.multiplier});
            c.regs.push_back({NPU_REG_ALPHA_SHIFT, l.alpha.shift});
          }
          break;
        case LayerKind::Add:
          c.opcode = NPU_OP_E_ADD;
          c.regs.push_back({NPU_REG_IFM2_ZP, l.input2Zp});
          c.regs.push_back({NPU_REG_ADD_LSHIFT, l.addLeftShift});
          c.regs.push_back({NPU_REG_IN1_MULT, l.inScale.multiplier});
          c.regs.push_back({NPU_REG_IN1_SHIFT, l.inScale.shift});
          c.regs.push_back({NPU_REG_IN2_MULT, l.in2Scale.multiplier});
          c.regs.push_back({NPU_REG_IN2_SHIFT, l.in2Scale.shift});
          c.regs.push_back({NPU_REG_OUT_MULT, l.out.multiplier});
          c.regs.push_back({NPU_REG_OUT_SHIFT, l.out.shift});
          break;
        default:
          c.opcode = l.kind == LayerKind::Min ? NPU_OP_C_MIN : NPU_OP_C_MAX;
          if (l.useScalar) {
            c.flags = NPU_FLAG_SCALAR;
            c.regs.push_back({NPU_REG_SCALAR, l.scalar});
          }
          break;
        }
        c.writes.push_back(sram(o, n));
        c.cycles = elementwiseCycles(config, n);
        ops.compute.push_back(std::move(c));
        if (!p.outResident) {
          contiguousDma(ops.stores, false, false, p.dst.binding,
                        p.dst.offset + s.oy0, o, n);
        }
        steps.push_back(std::move(ops));
        return;
      }
      // Window layers and MatMul.
      // A resident input is read in place: whole rows of the dense tensor,
      // even where the windows do not reach the last columns.
      const int64_t inRows = s.iy1 - s.iy0;
      const int64_t inCols = p.inResident ? l.input.w : s.ix1 - s.ix0;
      const int64_t inCh = s.ic1 - s.ic0;
      uint64_t a;
      if (p.inResident) {
        a = p.inAddr + uint64_t(s.iy0) * l.input.w * l.input.c;
      } else {
        a = h;
        boxDma(ops.loads, true, p.in.binding, p.in.offset, l.input.w, l.input.c,
               s.iy0, s.iy1, s.ix0, s.ix1, s.ic0, s.ic1, a);
      }
      const bool split = t.icSplits > 1;
      const bool last = s.icIndex == t.icSplits - 1;
      uint64_t o = p.outResident
                       ? p.outAddr + uint64_t(s.oy0) * l.output.w * l.output.c
                       : h + outOff;
      const uint64_t outBytes = uint64_t(rows) * cols * ch;
      Compute c;
      c.regs = {{NPU_REG_IFM_ADDR, int64_t(a)}, {NPU_REG_IFM_H, inRows},
                {NPU_REG_IFM_W, inCols},        {NPU_REG_IFM_C, inCh},
                {NPU_REG_IFM_ZP, l.inputZp},    {NPU_REG_OFM_H, rows},
                {NPU_REG_OFM_W, cols},          {NPU_REG_OFM_C, ch},
                {NPU_REG_OFM_ZP, l.outputZp},   {NPU_REG_ACT_MIN, actMin},
                {NPU_REG_ACT_MAX, l.actMax}};
      c.reads.push_back(sram(a, uint64_t(inRows) * inCols * inCh));
      if (l.hasWindow()) {
        c.regs.push_back({NPU_REG_KERNEL_H, l.kernelH});
        c.regs.push_back({NPU_REG_KERNEL_W, l.kernelW});
        c.regs.push_back({NPU_REG_STRIDE_H, l.strideH});
        c.regs.push_back({NPU_REG_STRIDE_W, l.strideW});
        c.regs.push_back({NPU_REG_PAD_TOP, s.padTop});
        c.regs.push_back({NPU_REG_PAD_LEFT, s.padLeft});
      }
      if (l.hasWeights()) {
        uint64_t wbytes =
            p.subWeightBytes[(s.c0 / t.chanTile) * t.icSplits + s.icIndex];
        c.regs.push_back({NPU_REG_WGT_ADDR, int64_t(subW)});
        c.regs.push_back({NPU_REG_WGT_ZP, l.weightZp});
        c.regs.push_back({NPU_REG_QPARAM_ADDR, int64_t(subQ)});
        c.reads.push_back(wmem(subW, wbytes + ch * kQParamBytes));
      }
      const int64_t taps = int64_t{l.kernelH} * l.kernelW;
      switch (l.kind) {
      case LayerKind::Conv:
        c.opcode = NPU_OP_CONV;
        c.cycles = convCycles(config, rows * cols, ch, taps, inCh);
        break;
      case LayerKind::MatMul:
        c.opcode = NPU_OP_MAT_MUL;
        c.cycles = convCycles(config, rows, ch, 1, inCh);
        break;
      case LayerKind::DepthwiseConv:
        c.opcode = NPU_OP_DEPTH_CONV;
        c.cycles = depthwiseCycles(config, rows * cols, ch, taps);
        break;
      default:
        c.opcode = NPU_OP_POOL;
        c.flags = l.kind == LayerKind::AvgPool ? NPU_FLAG_POOL_AVG : 0;
        c.cycles = poolCycles(config, rows * cols, ch, taps);
        break;
      }
      if (!split) {
        if (l.hasWeights()) {
          c.flags = NPU_FLAG_REQUANT;
        }
        c.regs.push_back({NPU_REG_OFM_ADDR, int64_t(o)});
        c.writes.push_back(sram(o, outBytes));
        ops.compute.push_back(std::move(c));
      } else {
        // int32 partial sums: the first split into the accumulator, later
        // ones beside the output tile, summed by E32_ADD.
        const uint64_t partial = s.icIndex == 0 ? accAddr : h + partialOff;
        c.regs.push_back({NPU_REG_OFM_ADDR, int64_t(partial)});
        c.writes.push_back(sram(partial, outBytes * 4));
        ops.compute.push_back(std::move(c));
        if (s.icIndex > 0) {
          Compute add;
          add.opcode = NPU_OP_E32_ADD;
          add.flags = last ? NPU_FLAG_REQUANT : 0;
          const uint64_t dst = last ? o : accAddr;
          add.regs = {{NPU_REG_IFM_ADDR, int64_t(accAddr)},
                      {NPU_REG_IFM_H, rows},
                      {NPU_REG_IFM_W, cols},
                      {NPU_REG_IFM_C, ch},
                      {NPU_REG_IFM2_ADDR, int64_t(partial)},
                      {NPU_REG_OFM_ADDR, int64_t(dst)},
                      {NPU_REG_OFM_H, rows},
                      {NPU_REG_OFM_W, cols},
                      {NPU_REG_OFM_C, ch}};
          if (last) {
            add.regs.push_back({NPU_REG_OFM_ZP, l.outputZp});
            add.regs.push_back({NPU_REG_QPARAM_ADDR, int64_t(subQ)});
            add.regs.push_back({NPU_REG_ACT_MIN, actMin});
            add.regs.push_back({NPU_REG_ACT_MAX, l.actMax});
            add.reads.push_back(wmem(subQ, ch * kQParamBytes));
          }
          add.reads.push_back(sram(accAddr, outBytes * 4));
          add.reads.push_back(sram(partial, outBytes * 4));
          add.writes.push_back(sram(dst, outBytes * (last ? 1 : 4)));
          add.cycles = elementwiseCycles(config, outBytes);
          ops.compute.push_back(std::move(add));
        }
      }
      if (last && !p.outResident) {
        boxDma(ops.stores, false, p.dst.binding, p.dst.offset, l.output.w,
               l.output.c, s.oy0, s.oy1, s.ox0, s.ox1, s.c0, s.c1, o);
      }
      steps.push_back(std::move(ops));
    });
    LayerReport report;
    report.name = l.name;
    report.tiling = t;
    report.estimate = estimateCost(l, config, t, p.budget);
    report.inputResident = p.inResident;
    report.outputResident = p.outResident;
    out.layers.push_back(std::move(report));
  }

  // Weight blocks at fixed addresses may load earlier than the step before
  // their first use: into the latest earlier phase whose compute leaves the
  // DMA engine enough idle time (phase k runs loads(k+1) and stores(k-1)
  // beside compute(k)).
  if (staticWeights && steps.size() > 2) {
    const size_t n = steps.size();
    auto cycles = [&](const std::vector<Dma> &v) {
      uint64_t c = 0;
      for (const Dma &d : v) {
        c += dmaCycles(config, d.len * d.rows);
      }
      return c;
    };
    std::vector<int64_t> slack(n, 0);
    for (size_t k = 0; k + 1 < n; ++k) {
      uint64_t compute = 0;
      for (const Compute &c : steps[k].compute) {
        compute += c.cycles;
      }
      slack[k] = int64_t(compute) - int64_t(cycles(steps[k + 1].loads)) -
                 int64_t(k > 0 ? cycles(steps[k - 1].stores) : 0);
    }
    for (size_t j = 2; j < n; ++j) {
      if (slack[j - 1] >= 0) {
        continue;
      }
      std::vector<Dma> keep;
      for (const Dma &d : steps[j].loads) {
        int64_t need = int64_t(dmaCycles(config, d.len * d.rows));
        size_t target = 0;
        if (d.toWeights && slack[j - 1] < 0) {
          for (size_t p = j - 1; p-- > 0;) {
            if (slack[p] >= need && steps[p + 1].loads.size() < 12) {
              target = p + 1;
              break;
            }
          }
        }
        if (target == 0) {
          keep.push_back(d);
          continue;
        }
        steps[target].loads.push_back(d);
        slack[target - 1] -= need;
        slack[j - 1] += need;
      }
      steps[j].loads = std::move(keep);
    }
  }

  // Software pipeline: stores of step k-1 and loads of step k+1 on the DMA
  // engine while step k computes. Loads wait for the stores they read back
  // (spilled tensors) and for compute still using their destination.
  Emitter e(config);
  auto sramConflict = [](const StepOps &next, const StepOps &cur) {
    for (const Dma &d : next.loads) {
      for (const Compute &c : cur.compute) {
        if (overlapsAny(d.local(), c.reads) ||
            overlapsAny(d.local(), c.writes)) {
          return true;
        }
      }
    }
    return false;
  };
  auto readsBack = [](const StepOps &next, const StepOps &cur) {
    for (const Dma &l : next.loads) {
      for (const Dma &s : cur.stores) {
        uint64_t lEnd = l.sysOffset + (l.rows - 1) * l.sysStride + l.len;
        uint64_t sEnd = s.sysOffset + (s.rows - 1) * s.sysStride + s.len;
        if (!l.toWeights && l.binding == s.binding && l.sysOffset < sEnd &&
            s.sysOffset < lEnd) {
          return true;
        }
      }
    }
    return false;
  };
  std::vector<bool> loaded(steps.size(), false);
  auto emitLoads = [&](size_t j) {
    for (const Dma &d : steps[j].loads) {
      e.dma(d);
    }
    loaded[j] = true;
  };
  emitLoads(0);
  for (size_t k = 0; k < steps.size(); ++k) {
    const StepOps &cur = steps[k];
    bool needSync = false;
    for (const Compute &c : cur.compute) {
      needSync = needSync || e.computeConflicts(c);
    }
    if (k > 0) {
      for (const Dma &d : steps[k - 1].stores) {
        needSync = needSync || e.dmaConflicts(d);
      }
    }
    if (needSync) {
      e.sync();
    }
    if (k > 0) {
      for (const Dma &d : steps[k - 1].stores) {
        e.dma(d);
      }
    }
    if (!loaded[k]) {
      // Deferred: it reads what step k-1 stored (SYNCs before compute).
      emitLoads(k);
    }
    const bool haveNext = k + 1 < steps.size();
    const bool waitStores = haveNext && readsBack(steps[k + 1], cur);
    const bool afterCompute =
        haveNext && !waitStores && sramConflict(steps[k + 1], cur);
    if (haveNext && !waitStores && !afterCompute) {
      emitLoads(k + 1);
    }
    for (const Compute &c : cur.compute) {
      e.compute(c);
    }
    if (afterCompute) {
      emitLoads(k + 1);
    }
  }
  for (const Dma &d : steps.back().stores) {
    e.dma(d);
  }
  e.end();
  out.words = e.b.words();
  out.relocations = e.b.relocations();
  out.estimatedCycles = std::max(e.dmaFree, e.computeFree);
  out.syncCount = e.syncs;
  return out;
}

absl::StatusOr<std::vector<uint8_t>>
writeBlob(const std::vector<BlobExportSpec> &exports) {
  if (exports.empty()) {
    return absl::InvalidArgumentError("npu blob: no exports");
  }
  std::set<std::string> names;
  std::vector<drivers::npu::builder::BlobExport> table;
  for (const BlobExportSpec &spec : exports) {
    if (spec.name.empty() || !names.insert(spec.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "npu blob: export name '", spec.name, "' is empty or repeated"));
    }
    if (!spec.stream || spec.stream->words.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("npu blob: export '", spec.name, "' has no stream"));
    }
    drivers::npu::builder::BlobExport e;
    e.name = spec.name;
    e.words = spec.stream->words;
    e.relocations = spec.stream->relocations;
    e.binding_count = spec.stream->bindingCount;
    e.binding_write_mask = spec.stream->bindingWriteMask;
    table.push_back(std::move(e));
  }
  return drivers::npu::builder::BuildBlob(table);
}

} // namespace osprey::compiler::npu
