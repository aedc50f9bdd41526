// npu-v1 simulator: instruction validation, execution and the cycle model.
#include "drivers/npu/sim/simulator.h"

#include <stdarg.h>
#include <stdio.h>

#include <cstring>
#include <limits>

namespace osprey::drivers::npu::sim {

namespace {

constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

//===----------------------------------------------------------------------===//
// Registers
//===----------------------------------------------------------------------===//

struct RegisterInfo {
  const char* name;
  bool is_signed;
  int64_t min;
  int64_t max;
  uint32_t reset;
};

constexpr int64_t kU32Max = 0xFFFFFFFFll;

constexpr RegisterInfo kRegisters[NPU_REG_COUNT] = {
    {"IFM_ADDR", false, 0, kU32Max, 0},
    {"IFM_H", false, 1, 65535, 1},
    {"IFM_W", false, 1, 65535, 1},
    {"IFM_C", false, 1, 65535, 1},
    {"IFM_ZP", true, -128, 127, 0},
    {"IFM2_ADDR", false, 0, kU32Max, 0},
    {"IFM2_ZP", true, -128, 127, 0},
    {"OFM_ADDR", false, 0, kU32Max, 0},
    {"OFM_H", false, 1, 65535, 1},
    {"OFM_W", false, 1, 65535, 1},
    {"OFM_C", false, 1, 65535, 1},
    {"OFM_ZP", true, -128, 127, 0},
    {"WGT_ADDR", false, 0, kU32Max, 0},
    {"WGT_ZP", true, -128, 127, 0},
    {"QPARAM_ADDR", false, 0, kU32Max, 0},
    {"KERNEL_H", false, 1, 16, 1},
    {"KERNEL_W", false, 1, 16, 1},
    {"STRIDE_H", false, 1, 8, 1},
    {"STRIDE_W", false, 1, 8, 1},
    {"PAD_TOP", false, 0, 15, 0},
    {"PAD_LEFT", false, 0, 15, 0},
    {"ACT_MIN", true, -128, 127, static_cast<uint32_t>(-128)},
    {"ACT_MAX", true, -128, 127, 127},
    {"OUT_MULT", false, 0, kI32Max, 0},
    {"OUT_SHIFT", true, -31, 30, 0},
    {"IN1_MULT", false, 0, kI32Max, 0},
    {"IN1_SHIFT", true, -31, 30, 0},
    {"IN2_MULT", false, 0, kI32Max, 0},
    {"IN2_SHIFT", true, -31, 30, 0},
    {"ADD_LSHIFT", false, 0, 20, 0},
    {"ALPHA_MULT", false, 0, kI32Max, 0},
    {"ALPHA_SHIFT", true, -31, 30, 0},
    {"SCALAR", true, -128, 127, 0},
    {"DMA_SYS_ADDR", false, 0, kU32Max, 0},
    {"DMA_LOC_ADDR", false, 0, kU32Max, 0},
    {"DMA_LEN", false, 1, 1 << 24, 1},
    {"DMA_ROWS", false, 1, 65535, 1},
    {"DMA_SYS_STRIDE", false, 0, kU32Max, 0},
    {"DMA_LOC_STRIDE", false, 0, kU32Max, 0},
};

//===----------------------------------------------------------------------===//
// Arithmetic (npu-v1 semantics, docs/npu.md "Arithmetic")
//===----------------------------------------------------------------------===//

inline int32_t Sat32(int64_t v) {
  return v < kI32Min ? static_cast<int32_t>(kI32Min)
                     : v > kI32Max ? static_cast<int32_t>(kI32Max) : static_cast<int32_t>(v);
}

inline int32_t Requant(int32_t value, int32_t multiplier, int32_t shift) {
  int64_t x = value;
  if (shift > 0) x = Sat32(x * (int64_t{1} << shift));
  int32_t high;
  if (x == kI32Min && multiplier == kI32Min) {
    high = static_cast<int32_t>(kI32Max);
  } else {
    int64_t product = x * multiplier;
    int64_t nudge = product >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
    high = static_cast<int32_t>((product + nudge) / (int64_t{1} << 31));
  }
  if (shift >= 0) return high;
  int32_t exponent = -shift;
  int64_t mask = (int64_t{1} << exponent) - 1;
  int64_t remainder = high & mask;
  int64_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return static_cast<int32_t>((int64_t{high} >> exponent) + (remainder > threshold ? 1 : 0));
}

inline int8_t ClampI8(int64_t v, int32_t lo, int32_t hi) {
  return static_cast<int8_t>(v < lo ? lo : v > hi ? hi : v);
}

inline int32_t LoadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void StoreI32(uint8_t* p, int32_t v) { std::memcpy(p, &v, sizeof(v)); }

inline uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
inline uint64_t Max(uint64_t a, uint64_t b) { return a > b ? a : b; }

enum Space : uint8_t { kSram = 0, kWeights = 1 };
const char* SpaceName(uint8_t space) { return space == kSram ? "SRAM" : "weight memory"; }

}  // namespace

//===----------------------------------------------------------------------===//
// Names, config, counters
//===----------------------------------------------------------------------===//

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone: return "none";
    case FaultKind::kMalformedStream: return "malformed stream";
    case FaultKind::kBadOpcode: return "bad opcode";
    case FaultKind::kBadRegister: return "bad register";
    case FaultKind::kRegisterValue: return "register value out of range";
    case FaultKind::kInvalidGeometry: return "invalid geometry";
    case FaultKind::kSramOutOfBounds: return "SRAM out of bounds";
    case FaultKind::kWeightOutOfBounds: return "weight memory out of bounds";
    case FaultKind::kUnmappedAccess: return "unmapped system memory";
    case FaultKind::kAccessViolation: return "access violation";
    case FaultKind::kHazard: return "hazard";
    case FaultKind::kParameterValue: return "parameter value out of range";
  }
  return "?";
}

OpKind OpKindOf(uint32_t opcode) {
  switch (opcode) {
    case NPU_OP_SET_REG: return kKindSetReg;
    case NPU_OP_SYNC: return kKindSync;
    case NPU_OP_DMA_READ: return kKindDmaRead;
    case NPU_OP_DMA_WRITE: return kKindDmaWrite;
    case NPU_OP_CONV: return kKindConv;
    case NPU_OP_CONV_RELU: return kKindConvRelu;
    case NPU_OP_DEPTH_CONV: return kKindDepthConv;
    case NPU_OP_MAT_MUL: return kKindMatMul;
    case NPU_OP_ACT_RELU: return kKindRelu;
    case NPU_OP_ACT_LRELU: return kKindLeakyRelu;
    case NPU_OP_POOL: return kKindPool;
    case NPU_OP_E_ABS: return kKindAbs;
    case NPU_OP_C_MIN: return kKindMin;
    case NPU_OP_C_MAX: return kKindMax;
    case NPU_OP_E_ADD: return kKindAdd;
    case NPU_OP_E32_ADD: return kKindAdd32;
    default: return kOpKindCount;
  }
}

const char* OpcodeName(uint32_t opcode) {
  switch (opcode) {
    case NPU_OP_END: return "END";
    case NPU_OP_SET_REG: return "SET_REG";
    case NPU_OP_SYNC: return "SYNC";
    case NPU_OP_DMA_READ: return "DMA_READ";
    case NPU_OP_DMA_WRITE: return "DMA_WRITE";
    case NPU_OP_CONV: return "CONV";
    case NPU_OP_CONV_RELU: return "CONV_RELU";
    case NPU_OP_DEPTH_CONV: return "DEPTH_CONV";
    case NPU_OP_MAT_MUL: return "MAT_MUL";
    case NPU_OP_ACT_RELU: return "ACT_RELU";
    case NPU_OP_ACT_LRELU: return "ACT_LRELU";
    case NPU_OP_POOL: return "POOL";
    case NPU_OP_E_ABS: return "E_ABS";
    case NPU_OP_C_MIN: return "C_MIN";
    case NPU_OP_C_MAX: return "C_MAX";
    case NPU_OP_E_ADD: return "E_ADD";
    case NPU_OP_E32_ADD: return "E32_ADD";
    default: return "?";
  }
}

Status ValidateHardwareConfig(const HardwareConfig& c) {
  if (c.pe_count != 64 && c.pe_count != 128 && c.pe_count != 256) {
    return InvalidArgumentError("npu pe_count %u not supported (64, 128 or 256)", c.pe_count);
  }
  constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;
  if (c.sram_bytes < 256 * kKiB || c.sram_bytes > 256 * kMiB) {
    return InvalidArgumentError("npu SRAM size %llu bytes outside 256 KiB..256 MiB",
                                static_cast<unsigned long long>(c.sram_bytes));
  }
  if (c.weight_memory_bytes < 16 * kKiB || c.weight_memory_bytes > 256 * kMiB) {
    return InvalidArgumentError("npu weight memory size %llu bytes outside 16 KiB..256 MiB",
                                static_cast<unsigned long long>(c.weight_memory_bytes));
  }
  if (c.dma_bytes_per_cycle < 1 || c.dma_bytes_per_cycle > 256) {
    return InvalidArgumentError("npu DMA bandwidth %u bytes/cycle outside 1..256",
                                c.dma_bytes_per_cycle);
  }
  if (c.dma_setup_cycles > 65536) {
    return InvalidArgumentError("npu DMA setup latency %u cycles exceeds 65536",
                                c.dma_setup_cycles);
  }
  if (c.mode != ParallelMode::kOutputParallel && c.mode != ParallelMode::kInputParallel) {
    return InvalidArgumentError("npu parallel mode %u unknown", static_cast<unsigned>(c.mode));
  }
  return OkStatus();
}

double Counters::pe_utilization(uint32_t pe_count) const {
  if (mac_cycles == 0 || pe_count == 0) return 0.0;
  return static_cast<double>(macs) / (static_cast<double>(mac_cycles) * pe_count);
}

void Counters::Accumulate(const Counters& o) {
  total_cycles += o.total_cycles;
  compute_cycles += o.compute_cycles;
  dma_cycles += o.dma_cycles;
  mac_cycles += o.mac_cycles;
  macs += o.macs;
  dma_bytes_read += o.dma_bytes_read;
  dma_bytes_written += o.dma_bytes_written;
  instructions += o.instructions;
  for (int i = 0; i < kOpKindCount; ++i) {
    cycles_by_kind[i] += o.cycles_by_kind[i];
    count_by_kind[i] += o.count_by_kind[i];
  }
}

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

StatusOr<ref_ptr<Simulator>> Simulator::Create(const HardwareConfig& config,
                                               osprey::Allocator* allocator) {
  OSPREY_RETURN_IF_ERROR(ValidateHardwareConfig(config));
  OSPREY_ASSIGN_OR_RETURN(auto sim, MakeRef<Simulator>(allocator, config, allocator));
  void* sram = nullptr;
  OSPREY_RETURN_IF_ERROR(allocator->AllocateZeroed(config.sram_bytes, 64, &sram),
                         "allocating %llu bytes of simulated NPU SRAM",
                         static_cast<unsigned long long>(config.sram_bytes));
  sim->sram_ = static_cast<uint8_t*>(sram);
  void* weights = nullptr;
  OSPREY_RETURN_IF_ERROR(allocator->AllocateZeroed(config.weight_memory_bytes, 64, &weights),
                         "allocating %llu bytes of simulated NPU weight memory",
                         static_cast<unsigned long long>(config.weight_memory_bytes));
  sim->weights_ = static_cast<uint8_t*>(weights);
  return sim;
}

Simulator::~Simulator() {
  allocator_->Free(sram_);
  allocator_->Free(weights_);
}

// State of one Execute() call.
struct Simulator::Run {
  struct Range {
    uint8_t space;
    uint64_t begin;
    uint64_t end;
    unsigned instruction;
  };

  Simulator* sim;
  std::span<const MemoryWindow> windows;
  Counters counters;
  Fault* fault;
  uint32_t regs[NPU_REG_COUNT];
  // unsigned (not uint32_t) so printf formats match on every target.
  unsigned index = 0;  // Instruction index.
  unsigned word = 0;   // Word offset of the current instruction.
  unsigned opcode = 0;
  unsigned flags = 0;
  uint64_t dma_free = 0;
  uint64_t compute_free = 0;
  Range dma_pending[kMaxOutstandingDma];
  uint32_t dma_pending_count = 0;
  Range compute_pending[kMaxOutstandingDma];
  uint32_t compute_pending_count = 0;

  int32_t S(npu_register_t r) const { return static_cast<int32_t>(regs[r]); }
  unsigned U(npu_register_t r) const { return regs[r]; }

  // Records a fault; always returns false so callers can `return Fail(...)`.
  bool Fail(FaultKind kind, const char* format, ...) OSPREY_PRINTF_FORMAT(3, 4) {
    fault->kind = kind;
    fault->instruction_index = index;
    fault->word_offset = word;
    fault->opcode = static_cast<uint8_t>(opcode);
    va_list args;
    va_start(args, format);
    vsnprintf(fault->message, sizeof(fault->message), format, args);
    va_end(args);
    return false;
  }

  uint8_t* Base(uint8_t space) { return space == kSram ? sim->sram_ : sim->weights_; }

  // Checks that [addr, addr + bytes) lies in |space|.
  bool CheckLocal(uint8_t space, uint64_t addr, uint64_t bytes, const char* what) {
    uint64_t size =
        space == kSram ? sim->stream_sram_bytes_ : sim->config_.weight_memory_bytes;
    if (addr > size || bytes > size - addr) {
      return Fail(space == kSram ? FaultKind::kSramOutOfBounds : FaultKind::kWeightOutOfBounds,
                  "%s [0x%llx, 0x%llx) exceeds the 0x%llx bytes of %s streams may use", what,
                  static_cast<unsigned long long>(addr),
                  static_cast<unsigned long long>(addr + bytes),
                  static_cast<unsigned long long>(size), SpaceName(space));
    }
    return true;
  }

  // Checks that a range the compute engine touches was not written by a DMA
  // still in flight (or, for DMA, by compute still in flight).
  bool CheckHazard(uint8_t space, uint64_t addr, uint64_t bytes, bool from_compute,
                   const char* what) {
    const Range* pending = from_compute ? dma_pending : compute_pending;
    uint32_t count = from_compute ? dma_pending_count : compute_pending_count;
    for (uint32_t i = 0; i < count; ++i) {
      const Range& r = pending[i];
      if (r.space == space && addr < r.end && r.begin < addr + bytes) {
        return Fail(FaultKind::kHazard,
                    "%s [0x%llx, 0x%llx) in %s overlaps data written by instruction %u "
                    "without an intervening SYNC",
                    what, static_cast<unsigned long long>(addr),
                    static_cast<unsigned long long>(addr + bytes), SpaceName(space),
                    r.instruction);
      }
    }
    return true;
  }

  bool CheckOperand(uint8_t space, uint64_t addr, uint64_t bytes, const char* what) {
    return CheckLocal(space, addr, bytes, what) && CheckHazard(space, addr, bytes, true, what);
  }

  // The per-channel parameters at |addr| (in bounds): requantization is
  // defined for multipliers 0..2^31-1 and shifts -31..30 (docs/npu.md), the
  // same ranges the OUT_MULT/OUT_SHIFT registers take.
  bool CheckQparams(uint64_t addr, uint64_t count) {
    const uint8_t* q = sim->weights_ + addr;
    for (uint64_t c = 0; c < count; ++c, q += sizeof(npu_qparam_t)) {
      const int32_t multiplier = LoadI32(q + 4), shift = LoadI32(q + 8);
      if (multiplier < 0 || shift < -31 || shift > 30) {
        return Fail(FaultKind::kParameterValue,
                    "qparam of channel %llu at weight memory 0x%llx: multiplier %ld, shift %ld "
                    "(ranges 0..2^31-1 and -31..30)",
                    static_cast<unsigned long long>(c), static_cast<unsigned long long>(addr),
                    static_cast<long>(multiplier), static_cast<long>(shift));
      }
    }
    return true;
  }

  void AddComputePending(uint64_t addr, uint64_t bytes) {
    if (compute_pending_count == kMaxOutstandingDma) {
      // Conservative: merge into the last entry's bounding range.
      Range& last = compute_pending[kMaxOutstandingDma - 1];
      if (addr < last.begin) last.begin = addr;
      if (addr + bytes > last.end) last.end = addr + bytes;
      last.instruction = index;
      return;
    }
    compute_pending[compute_pending_count++] = {kSram, addr, addr + bytes, index};
  }

  bool CheckFlags(unsigned allowed) {
    if ((flags & ~allowed) != 0) {
      return Fail(FaultKind::kMalformedStream, "unknown flags 0x%02x (allowed 0x%02x)", flags,
                  allowed);
    }
    return true;
  }

  void ChargeCompute(uint64_t cycles, uint64_t macs) {
    cycles += kComputeOverheadCycles;
    compute_free += cycles;
    counters.compute_cycles += cycles;
    counters.cycles_by_kind[OpKindOf(opcode)] += cycles;
    if (macs) {
      counters.macs += macs;
      counters.mac_cycles += cycles;
    }
  }

  bool SetReg(unsigned reg, uint32_t value);
  bool Step(std::span<const uint32_t> words, uint32_t* pc, bool* done);
  bool ConvLike();
  bool MatMul();
  bool Unary();
  bool Binary();
  bool Dma(bool read);
};

bool Simulator::Run::SetReg(unsigned reg, uint32_t value) {
  if (reg >= NPU_REG_COUNT) {
    return Fail(FaultKind::kBadRegister, "register index %u does not exist (npu-v1 has %u)",
                reg, static_cast<unsigned>(NPU_REG_COUNT));
  }
  const RegisterInfo& info = kRegisters[reg];
  int64_t v = info.is_signed ? int64_t{static_cast<int32_t>(value)} : int64_t{value};
  if (v < info.min || v > info.max) {
    return Fail(FaultKind::kRegisterValue, "%s = %lld outside [%lld, %lld]", info.name,
                static_cast<long long>(v), static_cast<long long>(info.min),
                static_cast<long long>(info.max));
  }
  regs[reg] = value;
  return true;
}

// CONV, CONV_RELU, DEPTH_CONV and POOL share the window geometry.
bool Simulator::Run::ConvLike() {
  const bool pool = opcode == NPU_OP_POOL;
  const bool depthwise = opcode == NPU_OP_DEPTH_CONV;
  if (!CheckFlags(pool ? NPU_FLAG_POOL_AVG
                       : opcode == NPU_OP_CONV_RELU ? 0u : NPU_FLAG_REQUANT)) {
    return false;
  }
  const bool requant = opcode == NPU_OP_CONV_RELU || (!pool && (flags & NPU_FLAG_REQUANT));
  const int64_t ih = U(NPU_REG_IFM_H), iw = U(NPU_REG_IFM_W), ic = U(NPU_REG_IFM_C);
  const int64_t oh = U(NPU_REG_OFM_H), ow = U(NPU_REG_OFM_W), oc = U(NPU_REG_OFM_C);
  const int64_t kh = U(NPU_REG_KERNEL_H), kw = U(NPU_REG_KERNEL_W);
  const int64_t sh = U(NPU_REG_STRIDE_H), sw = U(NPU_REG_STRIDE_W);
  const int64_t pt = U(NPU_REG_PAD_TOP), pl = U(NPU_REG_PAD_LEFT);
  if (pt >= kh || pl >= kw) {
    return Fail(FaultKind::kInvalidGeometry, "padding (%lld, %lld) not smaller than kernel %lldx%lld",
                static_cast<long long>(pt), static_cast<long long>(pl),
                static_cast<long long>(kh), static_cast<long long>(kw));
  }
  if ((oh - 1) * sh - pt > ih - 1 || (ow - 1) * sw - pl > iw - 1) {
    return Fail(FaultKind::kInvalidGeometry,
                "OFM %lldx%lld needs windows past IFM %lldx%lld (stride %lldx%lld, pad %lld,%lld)",
                static_cast<long long>(oh), static_cast<long long>(ow),
                static_cast<long long>(ih), static_cast<long long>(iw),
                static_cast<long long>(sh), static_cast<long long>(sw),
                static_cast<long long>(pt), static_cast<long long>(pl));
  }
  if ((depthwise || pool) && ic != oc) {
    return Fail(FaultKind::kInvalidGeometry, "%s needs IFM_C (%lld) == OFM_C (%lld)",
                OpcodeName(opcode), static_cast<long long>(ic), static_cast<long long>(oc));
  }
  const uint64_t in_addr = U(NPU_REG_IFM_ADDR), out_addr = U(NPU_REG_OFM_ADDR);
  const uint64_t in_bytes = ih * iw * ic;
  const uint64_t out_bytes = oh * ow * oc * (requant || pool ? 1 : 4);
  if (!CheckOperand(kSram, in_addr, in_bytes, "IFM") ||
      !CheckOperand(kSram, out_addr, out_bytes, "OFM")) {
    return false;
  }
  if (in_addr < out_addr + out_bytes && out_addr < in_addr + in_bytes) {
    return Fail(FaultKind::kInvalidGeometry, "OFM [0x%llx, 0x%llx) overlaps IFM [0x%llx, 0x%llx)",
                static_cast<unsigned long long>(out_addr),
                static_cast<unsigned long long>(out_addr + out_bytes),
                static_cast<unsigned long long>(in_addr),
                static_cast<unsigned long long>(in_addr + in_bytes));
  }
  const uint64_t wgt_addr = U(NPU_REG_WGT_ADDR), q_addr = U(NPU_REG_QPARAM_ADDR);
  const uint64_t wgt_bytes = depthwise ? kh * kw * ic : oc * kh * kw * ic;
  if (!pool && (!CheckOperand(kWeights, wgt_addr, wgt_bytes, "weights") ||
                !CheckOperand(kWeights, q_addr, oc * sizeof(npu_qparam_t), "qparams") ||
                (requant && !CheckQparams(q_addr, oc)))) {
    return false;
  }

  const uint8_t* in = sim->sram_ + in_addr;
  uint8_t* out = sim->sram_ + out_addr;
  const int8_t* wgt = reinterpret_cast<const int8_t*>(sim->weights_ + wgt_addr);
  const uint8_t* qp = sim->weights_ + q_addr;
  const int32_t izp = S(NPU_REG_IFM_ZP), wzp = S(NPU_REG_WGT_ZP), ozp = S(NPU_REG_OFM_ZP);
  int32_t lo = S(NPU_REG_ACT_MIN);
  const int32_t hi = S(NPU_REG_ACT_MAX);
  if (opcode == NPU_OP_CONV_RELU && ozp > lo) lo = ozp;
  const bool avg = pool && (flags & NPU_FLAG_POOL_AVG);

  for (int64_t oy = 0; oy < oh; ++oy) {
    const int64_t y0 = oy * sh - pt;
    const int64_t ky0 = y0 < 0 ? -y0 : 0;
    const int64_t ky1 = y0 + kh > ih ? ih - y0 : kh;
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t x0 = ox * sw - pl;
      const int64_t kx0 = x0 < 0 ? -x0 : 0;
      const int64_t kx1 = x0 + kw > iw ? iw - x0 : kw;
      const int64_t out_index = (oy * ow + ox) * oc;
      for (int64_t c = 0; c < oc; ++c) {
        if (pool) {
          int32_t best = -128, count = 0;
          int64_t sum = 0;
          for (int64_t ky = ky0; ky < ky1; ++ky) {
            for (int64_t kx = kx0; kx < kx1; ++kx) {
              int32_t x = static_cast<int8_t>(in[((y0 + ky) * iw + x0 + kx) * ic + c]);
              sum += x;
              if (x > best) best = x;
              ++count;
            }
          }
          int64_t v = best;
          if (avg) v = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
          out[out_index + c] = static_cast<uint8_t>(ClampI8(v, S(NPU_REG_ACT_MIN), hi));
          continue;
        }
        uint32_t acc = static_cast<uint32_t>(LoadI32(qp + c * sizeof(npu_qparam_t)));
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          for (int64_t kx = kx0; kx < kx1; ++kx) {
            const uint8_t* px = in + ((y0 + ky) * iw + x0 + kx) * ic;
            if (depthwise) {
              int32_t w = wgt[(ky * kw + kx) * ic + c];
              acc += static_cast<uint32_t>((static_cast<int8_t>(px[c]) - izp) * (w - wzp));
            } else {
              const int8_t* wp = wgt + ((c * kh + ky) * kw + kx) * ic;
              // Modulo 2^32 like the accumulator: long reductions may wrap.
              uint32_t partial = 0;
              for (int64_t i = 0; i < ic; ++i) {
                partial += static_cast<uint32_t>((static_cast<int8_t>(px[i]) - izp) * (wp[i] - wzp));
              }
              acc += partial;
            }
          }
        }
        if (!requant) {
          StoreI32(out + (out_index + c) * 4, static_cast<int32_t>(acc));
        } else {
          const uint8_t* q = qp + c * sizeof(npu_qparam_t);
          int64_t v = int64_t{ozp} + Requant(static_cast<int32_t>(acc), LoadI32(q + 4),
                                             LoadI32(q + 8));
          out[out_index + c] = static_cast<uint8_t>(ClampI8(v, lo, hi));
        }
      }
    }
  }
  AddComputePending(out_addr, out_bytes);

  // Cycle model: see docs/npu.md.
  const uint64_t rows = sim->config_.array_rows(), cols = sim->config_.array_cols();
  const uint64_t pixels = oh * ow, taps = kh * kw;
  const bool ip = sim->config_.mode == ParallelMode::kInputParallel;
  uint64_t cycles, macs;
  if (pool) {
    cycles = CeilDiv(oc, cols) * pixels * taps;
    macs = 0;
  } else if (depthwise) {
    // Output-parallel blocks cannot finish faster than their accumulators
    // drain (one array row per cycle); see docs/npu.md.
    cycles = ip ? CeilDiv(oc, cols) * pixels * CeilDiv(taps, rows)
                : CeilDiv(oc, cols) * CeilDiv(pixels, rows) * Max(taps, rows);
    macs = pixels * oc * taps;
  } else {
    cycles = ip ? CeilDiv(oc, cols) * pixels * taps * CeilDiv(ic, rows)
                : CeilDiv(oc, cols) * CeilDiv(pixels, rows) * Max(taps * ic, rows);
    macs = pixels * oc * taps * ic;
  }
  ChargeCompute(cycles, macs);
  return true;
}

bool Simulator::Run::MatMul() {
  if (!CheckFlags(NPU_FLAG_REQUANT)) return false;
  const bool requant = flags & NPU_FLAG_REQUANT;
  const int64_t m = U(NPU_REG_IFM_H), k = U(NPU_REG_IFM_C), n = U(NPU_REG_OFM_C);
  if (U(NPU_REG_IFM_W) != 1 || U(NPU_REG_OFM_W) != 1 || U(NPU_REG_OFM_H) != m) {
    return Fail(FaultKind::kInvalidGeometry,
                "MAT_MUL needs IFM_W == OFM_W == 1 and OFM_H == IFM_H (got IFM %ux%u, OFM %ux%u)",
                U(NPU_REG_IFM_H), U(NPU_REG_IFM_W), U(NPU_REG_OFM_H), U(NPU_REG_OFM_W));
  }
  const uint64_t in_addr = U(NPU_REG_IFM_ADDR), out_addr = U(NPU_REG_OFM_ADDR);
  const uint64_t in_bytes = m * k, out_bytes = m * n * (requant ? 1 : 4);
  const uint64_t wgt_addr = U(NPU_REG_WGT_ADDR), q_addr = U(NPU_REG_QPARAM_ADDR);
  if (!CheckOperand(kSram, in_addr, in_bytes, "IFM") ||
      !CheckOperand(kSram, out_addr, out_bytes, "OFM") ||
      !CheckOperand(kWeights, wgt_addr, n * k, "weights") ||
      !CheckOperand(kWeights, q_addr, n * sizeof(npu_qparam_t), "qparams") ||
      (requant && !CheckQparams(q_addr, n))) {
    return false;
  }
  if (in_addr < out_addr + out_bytes && out_addr < in_addr + in_bytes) {
    return Fail(FaultKind::kInvalidGeometry, "OFM overlaps IFM");
  }
  const int8_t* in = reinterpret_cast<const int8_t*>(sim->sram_ + in_addr);
  uint8_t* out = sim->sram_ + out_addr;
  const int8_t* wgt = reinterpret_cast<const int8_t*>(sim->weights_ + wgt_addr);
  const uint8_t* qp = sim->weights_ + q_addr;
  const int32_t izp = S(NPU_REG_IFM_ZP), wzp = S(NPU_REG_WGT_ZP), ozp = S(NPU_REG_OFM_ZP);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const uint8_t* q = qp + c * sizeof(npu_qparam_t);
      uint32_t acc = static_cast<uint32_t>(LoadI32(q));
      for (int64_t i = 0; i < k; ++i) {
        acc += static_cast<uint32_t>((in[r * k + i] - izp) * (wgt[c * k + i] - wzp));
      }
      if (requant) {
        int64_t v = int64_t{ozp} + Requant(static_cast<int32_t>(acc), LoadI32(q + 4),
                                           LoadI32(q + 8));
        out[r * n + c] =
            static_cast<uint8_t>(ClampI8(v, S(NPU_REG_ACT_MIN), S(NPU_REG_ACT_MAX)));
      } else {
        StoreI32(out + (r * n + c) * 4, static_cast<int32_t>(acc));
      }
    }
  }
  AddComputePending(out_addr, out_bytes);
  const uint64_t rows = sim->config_.array_rows(), cols = sim->config_.array_cols();
  const bool ip = sim->config_.mode == ParallelMode::kInputParallel;
  uint64_t cycles = ip ? CeilDiv(n, cols) * m * CeilDiv(k, rows)
                       : CeilDiv(n, cols) * CeilDiv(m, rows) * Max(k, rows);
  ChargeCompute(cycles, m * n * k);
  return true;
}

// Checks that the OFM has the IFM's shape and that |out| either is |in| or
// does not overlap it (elementwise ops may run in place).
static bool Disjoint(uint64_t a, uint64_t a_bytes, uint64_t b, uint64_t b_bytes) {
  return a + a_bytes <= b || b + b_bytes <= a;
}

bool Simulator::Run::Unary() {
  if (!CheckFlags(0)) return false;
  if (U(NPU_REG_OFM_H) != U(NPU_REG_IFM_H) || U(NPU_REG_OFM_W) != U(NPU_REG_IFM_W) ||
      U(NPU_REG_OFM_C) != U(NPU_REG_IFM_C)) {
    return Fail(FaultKind::kInvalidGeometry, "%s needs OFM %ux%ux%u == IFM %ux%ux%u",
                OpcodeName(opcode), U(NPU_REG_OFM_H), U(NPU_REG_OFM_W), U(NPU_REG_OFM_C),
                U(NPU_REG_IFM_H), U(NPU_REG_IFM_W), U(NPU_REG_IFM_C));
  }
  const uint64_t count =
      uint64_t{U(NPU_REG_IFM_H)} * U(NPU_REG_IFM_W) * U(NPU_REG_IFM_C);
  const uint64_t in_addr = U(NPU_REG_IFM_ADDR), out_addr = U(NPU_REG_OFM_ADDR);
  if (!CheckOperand(kSram, in_addr, count, "IFM") ||
      !CheckOperand(kSram, out_addr, count, "OFM")) {
    return false;
  }
  if (in_addr != out_addr && !Disjoint(in_addr, count, out_addr, count)) {
    return Fail(FaultKind::kInvalidGeometry, "OFM partially overlaps IFM");
  }
  const int8_t* in = reinterpret_cast<const int8_t*>(sim->sram_ + in_addr);
  int8_t* out = reinterpret_cast<int8_t*>(sim->sram_ + out_addr);
  const int32_t izp = S(NPU_REG_IFM_ZP), ozp = S(NPU_REG_OFM_ZP);
  const int32_t mult = S(NPU_REG_OUT_MULT), shift = S(NPU_REG_OUT_SHIFT);
  const int32_t amult = S(NPU_REG_ALPHA_MULT), ashift = S(NPU_REG_ALPHA_SHIFT);
  const int32_t lo = S(NPU_REG_ACT_MIN), hi = S(NPU_REG_ACT_MAX);
  for (uint64_t i = 0; i < count; ++i) {
    int32_t d = in[i] - izp;
    int32_t scaled;
    if (opcode == NPU_OP_ACT_RELU) {
      scaled = Requant(d < 0 ? 0 : d, mult, shift);
    } else if (opcode == NPU_OP_ACT_LRELU) {
      scaled = d >= 0 ? Requant(d, mult, shift) : Requant(d, amult, ashift);
    } else {
      scaled = Requant(d < 0 ? -d : d, mult, shift);
    }
    out[i] = ClampI8(int64_t{ozp} + scaled, lo, hi);
  }
  AddComputePending(out_addr, count);
  ChargeCompute(CeilDiv(count, sim->config_.array_cols()), 0);
  return true;
}

bool Simulator::Run::Binary() {
  const bool minmax = opcode == NPU_OP_C_MIN || opcode == NPU_OP_C_MAX;
  const bool add32 = opcode == NPU_OP_E32_ADD;
  if (!CheckFlags(minmax ? NPU_FLAG_SCALAR : add32 ? NPU_FLAG_REQUANT : 0u)) return false;
  const bool scalar = minmax && (flags & NPU_FLAG_SCALAR);
  const bool requant = add32 && (flags & NPU_FLAG_REQUANT);
  if (U(NPU_REG_OFM_H) != U(NPU_REG_IFM_H) || U(NPU_REG_OFM_W) != U(NPU_REG_IFM_W) ||
      U(NPU_REG_OFM_C) != U(NPU_REG_IFM_C)) {
    return Fail(FaultKind::kInvalidGeometry, "%s needs OFM %ux%ux%u == IFM %ux%ux%u",
                OpcodeName(opcode), U(NPU_REG_OFM_H), U(NPU_REG_OFM_W), U(NPU_REG_OFM_C),
                U(NPU_REG_IFM_H), U(NPU_REG_IFM_W), U(NPU_REG_IFM_C));
  }
  const uint64_t channels = U(NPU_REG_IFM_C);
  const uint64_t count = uint64_t{U(NPU_REG_IFM_H)} * U(NPU_REG_IFM_W) * channels;
  const uint64_t in_size = add32 ? 4 : 1;
  const uint64_t out_size = add32 && !requant ? 4 : 1;
  const uint64_t a_addr = U(NPU_REG_IFM_ADDR), b_addr = U(NPU_REG_IFM2_ADDR);
  const uint64_t out_addr = U(NPU_REG_OFM_ADDR), q_addr = U(NPU_REG_QPARAM_ADDR);
  if (!CheckOperand(kSram, a_addr, count * in_size, "IFM") ||
      (!scalar && !CheckOperand(kSram, b_addr, count * in_size, "IFM2")) ||
      !CheckOperand(kSram, out_addr, count * out_size, "OFM") ||
      (requant && (!CheckOperand(kWeights, q_addr, channels * sizeof(npu_qparam_t), "qparams") ||
                   !CheckQparams(q_addr, channels)))) {
    return false;
  }
  // In place is fine when the element sizes match and the addresses agree.
  const bool a_ok = (a_addr == out_addr && in_size == out_size) ||
                    Disjoint(a_addr, count * in_size, out_addr, count * out_size);
  const bool b_ok = scalar || (b_addr == out_addr && in_size == out_size) ||
                    Disjoint(b_addr, count * in_size, out_addr, count * out_size);
  if (!a_ok || !b_ok) {
    return Fail(FaultKind::kInvalidGeometry, "OFM partially overlaps an input");
  }
  const uint8_t* a = sim->sram_ + a_addr;
  const uint8_t* b = sim->sram_ + b_addr;
  uint8_t* out = sim->sram_ + out_addr;
  const int32_t lo = S(NPU_REG_ACT_MIN), hi = S(NPU_REG_ACT_MAX);
  const int32_t ozp = S(NPU_REG_OFM_ZP);
  if (minmax) {
    const int32_t s = S(NPU_REG_SCALAR);
    for (uint64_t i = 0; i < count; ++i) {
      int32_t x = static_cast<int8_t>(a[i]);
      int32_t y = scalar ? s : static_cast<int8_t>(b[i]);
      int32_t v = opcode == NPU_OP_C_MIN ? (x < y ? x : y) : (x > y ? x : y);
      out[i] = static_cast<uint8_t>(ClampI8(v, lo, hi));
    }
  } else if (!add32) {
    const int32_t azp = S(NPU_REG_IFM_ZP), bzp = S(NPU_REG_IFM2_ZP);
    const int32_t lshift = S(NPU_REG_ADD_LSHIFT);
    for (uint64_t i = 0; i < count; ++i) {
      int32_t sa = Requant((static_cast<int8_t>(a[i]) - azp) * (1 << lshift),
                           S(NPU_REG_IN1_MULT), S(NPU_REG_IN1_SHIFT));
      int32_t sb = Requant((static_cast<int8_t>(b[i]) - bzp) * (1 << lshift),
                           S(NPU_REG_IN2_MULT), S(NPU_REG_IN2_SHIFT));
      int32_t sum = Sat32(int64_t{sa} + sb);
      int64_t v = int64_t{ozp} + Requant(sum, S(NPU_REG_OUT_MULT), S(NPU_REG_OUT_SHIFT));
      out[i] = static_cast<uint8_t>(ClampI8(v, lo, hi));
    }
  } else {
    const uint8_t* qp = sim->weights_ + q_addr;
    for (uint64_t i = 0; i < count; ++i) {
      int32_t sum = Sat32(int64_t{LoadI32(a + i * 4)} + LoadI32(b + i * 4));
      if (requant) {
        const uint8_t* q = qp + (i % channels) * sizeof(npu_qparam_t);
        int64_t v = int64_t{ozp} + Requant(sum, LoadI32(q + 4), LoadI32(q + 8));
        out[i] = static_cast<uint8_t>(ClampI8(v, lo, hi));
      } else {
        StoreI32(out + i * 4, sum);
      }
    }
  }
  AddComputePending(out_addr, count * out_size);
  ChargeCompute(CeilDiv(count, sim->config_.array_cols()), 0);
  return true;
}

bool Simulator::Run::Dma(bool read) {
  if (!CheckFlags(read ? NPU_FLAG_DMA_WEIGHTS : 0u)) return false;
  const uint8_t space = read && (flags & NPU_FLAG_DMA_WEIGHTS) ? kWeights : kSram;
  const uint64_t len = U(NPU_REG_DMA_LEN), rows = U(NPU_REG_DMA_ROWS);
  const uint64_t sys_stride = U(NPU_REG_DMA_SYS_STRIDE), loc_stride = U(NPU_REG_DMA_LOC_STRIDE);
  const uint64_t sys_addr = U(NPU_REG_DMA_SYS_ADDR), loc_addr = U(NPU_REG_DMA_LOC_ADDR);
  const uint64_t sys_extent = (rows - 1) * sys_stride + len;
  const uint64_t loc_extent = (rows - 1) * loc_stride + len;
  if (rows > 1 && (sys_stride < len || loc_stride < len)) {
    return Fail(FaultKind::kInvalidGeometry,
                "DMA strides (system %llu, local %llu) smaller than the row length %llu",
                static_cast<unsigned long long>(sys_stride),
                static_cast<unsigned long long>(loc_stride), static_cast<unsigned long long>(len));
  }
  if (!CheckLocal(space, loc_addr, loc_extent, read ? "DMA destination" : "DMA source")) {
    return false;
  }
  // Translate through the IOMMU: the whole footprint must sit in one window.
  const MemoryWindow* window = nullptr;
  for (const MemoryWindow& w : windows) {
    if (sys_addr >= w.device_address && sys_addr - w.device_address < w.length) {
      window = &w;
      break;
    }
  }
  if (!window) {
    return Fail(FaultKind::kUnmappedAccess,
                "%s at device address 0x%08llx: no system memory is mapped there",
                OpcodeName(opcode), static_cast<unsigned long long>(sys_addr));
  }
  const uint64_t window_end = uint64_t{window->device_address} + window->length;
  if (sys_extent > window_end - sys_addr) {
    return Fail(FaultKind::kUnmappedAccess,
                "%s [0x%08llx, 0x%08llx) runs past the end of mapping [0x%08x, 0x%08llx)",
                OpcodeName(opcode), static_cast<unsigned long long>(sys_addr),
                static_cast<unsigned long long>(sys_addr + sys_extent),
                static_cast<unsigned>(window->device_address),
                static_cast<unsigned long long>(window_end));
  }
  const uint8_t needed = read ? kWindowRead : kWindowWrite;
  if ((window->access & needed) == 0) {
    return Fail(FaultKind::kAccessViolation,
                "%s [0x%08llx, 0x%08llx) through a %s mapping [0x%08x, 0x%08llx)",
                OpcodeName(opcode), static_cast<unsigned long long>(sys_addr),
                static_cast<unsigned long long>(sys_addr + sys_extent),
                read ? "write-only" : "read-only", static_cast<unsigned>(window->device_address),
                static_cast<unsigned long long>(window_end));
  }
  if (!CheckHazard(space, loc_addr, loc_extent, /*from_compute=*/false,
                   read ? "DMA destination" : "DMA source")) {
    return false;
  }
  if (read && dma_pending_count == kMaxOutstandingDma) {
    return Fail(FaultKind::kHazard, "more than %u DMA_READs without a SYNC",
                static_cast<unsigned>(kMaxOutstandingDma));
  }
  uint8_t* sys = window->host + (sys_addr - window->device_address);
  uint8_t* loc = Base(space) + loc_addr;
  for (uint64_t r = 0; r < rows; ++r) {
    // memmove: a window may alias the SRAM itself (device-local buffers).
    if (read) {
      std::memmove(loc + r * loc_stride, sys + r * sys_stride, len);
    } else {
      std::memmove(sys + r * sys_stride, loc + r * loc_stride, len);
    }
  }
  if (read) dma_pending[dma_pending_count++] = {space, loc_addr, loc_addr + loc_extent, index};
  const uint64_t bytes = rows * len;
  const uint64_t cycles =
      sim->config_.dma_setup_cycles + CeilDiv(bytes, sim->config_.dma_bytes_per_cycle);
  dma_free += cycles;
  counters.dma_cycles += cycles;
  counters.cycles_by_kind[OpKindOf(opcode)] += cycles;
  (read ? counters.dma_bytes_read : counters.dma_bytes_written) += bytes;
  return true;
}

bool Simulator::Run::Step(std::span<const uint32_t> words, uint32_t* pc, bool* done) {
  word = *pc;
  const uint32_t w = words[*pc];
  opcode = NPU_WORD_OPCODE(w);
  flags = NPU_WORD_FLAGS(w);
  const unsigned operand = NPU_WORD_OPERAND(w);
  *pc += 1;
  counters.instructions += 1;
  const OpKind kind = OpKindOf(opcode);
  if (kind != kOpKindCount) counters.count_by_kind[kind] += 1;
  if (opcode == NPU_OP_SET_REG) {
    if (flags != 0) return Fail(FaultKind::kMalformedStream, "SET_REG with flags 0x%02x", flags);
    if (*pc >= words.size()) {
      return Fail(FaultKind::kMalformedStream, "stream truncated: SET_REG %u has no value word",
                  operand);
    }
    const uint32_t value = words[*pc];
    *pc += 1;
    return SetReg(operand, value);
  }
  if (operand != 0 && opcode != NPU_OP_SET_REG) {
    if (kind == kOpKindCount && opcode != NPU_OP_END) {
      return Fail(FaultKind::kBadOpcode, "opcode 0x%02x is not an npu-v1 instruction", opcode);
    }
    return Fail(FaultKind::kMalformedStream, "%s with non-zero operand bits 0x%04x",
                OpcodeName(opcode), operand);
  }
  switch (opcode) {
    case NPU_OP_END:
      if (flags != 0) return Fail(FaultKind::kMalformedStream, "END with flags 0x%02x", flags);
      if (*pc != words.size()) {
        return Fail(FaultKind::kMalformedStream, "%zu words after END",
                    static_cast<size_t>(words.size() - *pc));
      }
      *done = true;
      return true;
    case NPU_OP_SYNC: {
      if (!CheckFlags(0)) return false;
      const uint64_t t = dma_free > compute_free ? dma_free : compute_free;
      dma_free = compute_free = t;
      dma_pending_count = 0;
      compute_pending_count = 0;
      return true;
    }
    case NPU_OP_DMA_READ: return Dma(true);
    case NPU_OP_DMA_WRITE: return Dma(false);
    case NPU_OP_CONV:
    case NPU_OP_CONV_RELU:
    case NPU_OP_DEPTH_CONV:
    case NPU_OP_POOL: return ConvLike();
    case NPU_OP_MAT_MUL: return MatMul();
    case NPU_OP_ACT_RELU:
    case NPU_OP_ACT_LRELU:
    case NPU_OP_E_ABS: return Unary();
    case NPU_OP_C_MIN:
    case NPU_OP_C_MAX:
    case NPU_OP_E_ADD:
    case NPU_OP_E32_ADD: return Binary();
    default:
      return Fail(FaultKind::kBadOpcode, "opcode 0x%02x is not an npu-v1 instruction", opcode);
  }
}

Status Simulator::Execute(std::span<const uint32_t> words, std::span<const MemoryWindow> windows,
                          Counters* out_counters, Fault* out_fault) {
  Fault local_fault;
  Run run;
  run.sim = this;
  run.windows = windows;
  run.fault = out_fault ? out_fault : &local_fault;
  *run.fault = Fault();
  for (uint32_t i = 0; i < NPU_REG_COUNT; ++i) run.regs[i] = kRegisters[i].reset;

  bool ok = true;
  bool done = false;
  uint32_t pc = 0;
  while (ok && !done) {
    if (pc >= words.size()) {
      run.word = pc;
      run.opcode = 0xFF;  // No instruction: reported as "?".
      ok = run.Fail(FaultKind::kMalformedStream,
                    "stream truncated: %zu words end without an END instruction",
                    static_cast<size_t>(words.size()));
      break;
    }
    ok = run.Step(words, &pc, &done);
    if (ok && !done) ++run.index;
  }
  const uint64_t end = run.dma_free > run.compute_free ? run.dma_free : run.compute_free;
  run.counters.total_cycles = end;
  if (out_counters) *out_counters = run.counters;
  if (ok) return OkStatus();

  const Fault& f = *run.fault;
  StatusCode code = StatusCode::kInvalidArgument;
  switch (f.kind) {
    case FaultKind::kSramOutOfBounds:
    case FaultKind::kWeightOutOfBounds: code = StatusCode::kOutOfRange; break;
    case FaultKind::kUnmappedAccess:
    case FaultKind::kAccessViolation: code = StatusCode::kPermissionDenied; break;
    case FaultKind::kHazard: code = StatusCode::kFailedPrecondition; break;
    default: break;
  }
  return Status(code, "npu fault (%s) at instruction %u (word %u, %s): %s",
                FaultKindName(f.kind), static_cast<unsigned>(f.instruction_index),
                static_cast<unsigned>(f.word_offset),
                OpcodeName(f.opcode), f.message);
}

}  // namespace osprey::drivers::npu::sim
