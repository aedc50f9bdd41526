// The bytecode interpreter: a dispatch loop over verified code (computed goto
// on GCC/Clang, a switch elsewhere) with frames on the context's stack.
//
// The verifier has already proven every register index, branch target,
// table index and call signature valid, so handlers only check
// data-dependent conditions (division by zero, list indices, buffer ranges,
// ref types) and never allocate except where the program asks to.
#include "vm/interpreter.h"

#include <math.h>
#include <stdio.h>

#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "runtime/base/platform/platform.h"
#include "vm/buffer.h"
#include "vm/bytecode.h"
#include "vm/bytecode_module.h"
#include "vm/context.h"
#include "vm/context_internal.h"
#include "vm/list.h"
#include "vm/opcodes.h"

#if (defined(__GNUC__) || defined(__clang__)) && !defined(OSPREY_VM_SWITCH_DISPATCH)
#define OSPREY_VM_COMPUTED_GOTO 1
#else
#define OSPREY_VM_COMPUTED_GOTO 0
#endif

namespace osprey::vm {

namespace {

struct Regs {
  int32_t* i;
  int64_t* l;
  float* f;
  double* d;
  Ref* r;
};

inline uint8_t* FrameRegisters(Frame* frame) {
  return reinterpret_cast<uint8_t*>(frame) + kFrameHeaderSize;
}

inline Regs GetRegs(Frame* frame) {
  uint8_t* base = FrameRegisters(frame);
  const uint32_t* o = frame->fn->bank_offsets;
  return Regs{reinterpret_cast<int32_t*>(base + o[0]), reinterpret_cast<int64_t*>(base + o[1]),
              reinterpret_cast<float*>(base + o[2]), reinterpret_cast<double*>(base + o[3]),
              reinterpret_cast<Ref*>(base + o[4])};
}

OSPREY_ATTRIBUTE_NOINLINE OSPREY_ATTRIBUTE_COLD Status StackOverflow(Context* context,
                                                                      const ModuleInstance* m,
                                                                      const FunctionInfo* fn,
                                                                      uint32_t depth,
                                                                      size_t in_use,
                                                                      size_t capacity) {
  return ResourceExhaustedError(
      "VM stack overflow calling '%s.%s': call depth %u, %zu of %zu stack bytes in use "
      "(frame needs %zu)",
      m->module->name(), fn->name, depth, in_use, capacity,
      size_t(kFrameHeaderSize) + fn->register_bytes);
}

// Builds the error of fail / check.*: |payload| points at the status code.
// Codes-only builds keep the code and skip formatting the message.
OSPREY_ATTRIBUTE_NOINLINE OSPREY_ATTRIBUTE_COLD Status MakeFailure(const uint8_t* payload,
                                                                    const Regs& regs) {
  StatusCode code = StatusCode(payload[0]);
#if !OSPREY_STATUS_MESSAGES
  (void)regs;
  return Status(code);
#else
  uint16_t length = ReadU16(payload + 1);
  const char* message = reinterpret_cast<const char*>(payload + 3);
  const uint8_t* args = payload + 3 + length;
  uint8_t argc = args[0];
  args += 1;
  char text[512];
  size_t n = 0;
  uint8_t next = 0;
  auto append = [&](const char* s, size_t len) {
    if (n + 1 >= sizeof(text)) return;
    size_t room = sizeof(text) - 1 - n;
    if (len > room) len = room;
    memcpy(text + n, s, len);
    n += len;
  };
  for (uint16_t i = 0; i < length; ++i) {
    if (message[i] == '{' && i + 1 < length && message[i + 1] == '}' && next < argc) {
      Bank bank = Bank(args[next * 3]);
      uint16_t reg = ReadU16(args + next * 3 + 1);
      ++next;
      ++i;
      char value[64];
      int len = 0;
      switch (bank) {
        case Bank::kI32: len = snprintf(value, sizeof(value), "%d", int(regs.i[reg])); break;
        case Bank::kI64:
          len = snprintf(value, sizeof(value), "%lld", static_cast<long long>(regs.l[reg]));
          break;
        case Bank::kF32: len = snprintf(value, sizeof(value), "%g", double(regs.f[reg])); break;
        case Bank::kF64: len = snprintf(value, sizeof(value), "%g", regs.d[reg]); break;
        case Bank::kRef: {
          const Ref& ref = regs.r[reg];
          len = snprintf(value, sizeof(value), "%s",
                         ref.is_null() ? "null" : (ref.type() ? ref.type()->name : "ref"));
          break;
        }
      }
      if (len > 0) append(value, size_t(len) < sizeof(value) ? size_t(len) : sizeof(value) - 1);
    } else {
      append(&message[i], 1);
    }
  }
  text[n] = 0;
  return Status(code, "%s", text);
#endif
}

// Bytes of a failure payload (code, message, arguments).
inline uint32_t FailurePayloadSize(const uint8_t* payload) {
  uint16_t length = ReadU16(payload + 1);
  return 3u + length + 1u + 3u * payload[3 + length];
}

template <typename I, typename F>
inline I SaturatingCast(F v) {
  if (v != v) return 0;
  if (v <= F(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= F(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(v);
}

OSPREY_ATTRIBUTE_NOINLINE Status DivisionByZero() {
  return InvalidArgumentError("integer division by zero");
}

OSPREY_ATTRIBUTE_NOINLINE Status GetList(const Ref& ref, List** out) {
  return CheckRefType(ref, List::type(), "list operand", out);
}

OSPREY_ATTRIBUTE_NOINLINE Status GetBuffer(const Ref& ref, Buffer** out) {
  return CheckRefType(ref, Buffer::type(), "buffer operand", out);
}

// Reads element |index| of the list in |ref| as |type| (kNone reads as 0).
OSPREY_ATTRIBUTE_NOINLINE Status ListGet(const Ref& ref, int32_t index, ValueType type,
                                         Value* out) {
  List* list;
  OSPREY_RETURN_IF_ERROR(GetList(ref, &list));
  if (index < 0) return OutOfRangeError("list index %d is negative", index);
  const Value* v;
  OSPREY_RETURN_IF_ERROR(list->Get(size_t(index), &v));
  if (v->type == ValueType::kNone) {
    *out = Value();
    return OkStatus();
  }
  if (v->type != type) {
    return InvalidArgumentError("list element %d is %s, read as %s", index,
                                ValueTypeName(v->type), ValueTypeName(type));
  }
  *out = *v;
  return OkStatus();
}

OSPREY_ATTRIBUTE_NOINLINE Status ListSet(const Ref& ref, int32_t index, Value value) {
  List* list;
  OSPREY_RETURN_IF_ERROR(GetList(ref, &list));
  if (index < 0) return OutOfRangeError("list index %d is negative", index);
  // Reference counting cannot free a cycle, and lists are the only objects
  // bytecode can make hold arbitrary refs: a list holding a list (itself, or
  // one that holds it) would leak both, with the context's memory budget.
  if (value.type == ValueType::kRef && value.ref.type() == List::type()) {
    return InvalidArgumentError("list element %d: a list cannot hold a list", index);
  }
  return list->Set(size_t(index), std::move(value));
}

template <typename T>
OSPREY_ATTRIBUTE_NOINLINE Status BufferLoad(const Ref& ref, int64_t offset, T* out) {
  Buffer* buffer;
  OSPREY_RETURN_IF_ERROR(GetBuffer(ref, &buffer));
  OSPREY_RETURN_IF_ERROR(buffer->CheckRange(offset, sizeof(T)));
  memcpy(out, buffer->data() + offset, sizeof(T));
  return OkStatus();
}

template <typename T>
OSPREY_ATTRIBUTE_NOINLINE Status BufferStore(const Ref& ref, int64_t offset, T value) {
  Buffer* buffer;
  OSPREY_RETURN_IF_ERROR(GetBuffer(ref, &buffer));
  OSPREY_RETURN_IF_ERROR(buffer->CheckWritableRange(offset, sizeof(T)));
  memcpy(buffer->mutable_data() + offset, &value, sizeof(T));
  return OkStatus();
}

// Copies a register list [count][regs...] typed by |types| from |src| to
// consecutive registers per bank of |dst| (the callee's argument registers).
inline void CopyArguments(const char* types, const uint8_t* list, const Regs& src,
                          const Regs& dst) {
  uint8_t n = list[0];
  uint32_t c[kBankCount] = {};
  for (uint8_t k = 0; k < n; ++k) {
    uint16_t s = ReadU16(list + 1 + 2 * k);
    switch (types[k]) {
      case 'i': dst.i[c[0]++] = src.i[s]; break;
      case 'I': dst.l[c[1]++] = src.l[s]; break;
      case 'f': dst.f[c[2]++] = src.f[s]; break;
      case 'F': dst.d[c[3]++] = src.d[s]; break;
      default: dst.r[c[4]++] = src.r[s]; break;
    }
  }
}

// Copies registers named by |from_list| in |src| to those named by |to_list|
// in |dst|; both lists have the same count and |types|.
inline void CopyResults(const char* types, const uint8_t* from_list, const Regs& src,
                        const uint8_t* to_list, const Regs& dst) {
  uint8_t n = from_list[0];
  for (uint8_t k = 0; k < n; ++k) {
    uint16_t s = ReadU16(from_list + 1 + 2 * k);
    uint16_t d = ReadU16(to_list + 1 + 2 * k);
    switch (types[k]) {
      case 'i': dst.i[d] = src.i[s]; break;
      case 'I': dst.l[d] = src.l[s]; break;
      case 'f': dst.f[d] = src.f[s]; break;
      case 'F': dst.d[d] = src.d[s]; break;
      default: dst.r[d] = src.r[s]; break;
    }
  }
}

}  // namespace

// Friend access helpers.
class InterpreterState {
 public:
  // Instructions between two checks of the interrupt flag and the deadline
  // (a few hundred microseconds of bytecode at most).
  static constexpr uint64_t kCheckInterval = 1u << 16;

  static Frame* PushFrame(Context* c, ModuleInstance* m, uint32_t function_index,
                          Frame* caller) {
    const FunctionInfo* fn = &m->bytecode->function(function_index);
    size_t size = kFrameHeaderSize + fn->register_bytes;
    if (OSPREY_UNLIKELY(c->depth_ >= c->options_.max_call_depth ||
                        size > c->options_.stack_size - c->stack_top_)) {
      return nullptr;
    }
    Frame* frame = reinterpret_cast<Frame*>(c->stack_ + c->stack_top_);
    c->stack_top_ += size;
    ++c->depth_;
    frame->caller = caller;
    frame->instance = m;
    frame->fn = fn;
    frame->function_index = function_index;
    frame->size = uint32_t(size);
    frame->pc = fn->code;
    frame->resume_pc = nullptr;
    frame->result_list = nullptr;
    // All-zero bytes are 0 / 0.0 / null refs.
    memset(FrameRegisters(frame), 0, fn->register_bytes);
    return frame;
  }

  static void PopFrame(Context* c, Frame* frame) {
    Ref* refs = reinterpret_cast<Ref*>(FrameRegisters(frame) + frame->fn->bank_offsets[4]);
    for (uint32_t k = 0, n = frame->fn->register_counts[4]; k < n; ++k) refs[k].reset();
    c->stack_top_ -= frame->size;
    --c->depth_;
  }

  static Status Overflow(Context* c, ModuleInstance* m, uint32_t function_index) {
    return StackOverflow(c, m, &m->bytecode->function(function_index), c->depth_, c->stack_top_,
                         c->options_.stack_size);
  }

  // Adds |executed| instructions to the invocation's count and checks the
  // interrupt flag, the deadline and the instruction budget. On success
  // sets |*slice| to the instructions that may run before the next check.
  OSPREY_ATTRIBUTE_NOINLINE static Status Checkpoint(Context* c, int64_t executed,
                                                     int64_t* slice) {
    c->instructions_executed_ += uint64_t(executed);
    if (OSPREY_UNLIKELY(c->interrupt_->load(std::memory_order_relaxed)) &&
        c->interrupt_->exchange(false, std::memory_order_relaxed)) {
      return CancelledError("interrupted by the application after %llu instructions",
                            static_cast<unsigned long long>(c->instructions_executed_));
    }
    if (c->deadline_ns_ != platform::kInfiniteFuture) {
      const int64_t now = platform::MonotonicNanos();
      if (OSPREY_UNLIKELY(now >= c->deadline_ns_)) {
        return DeadlineExceededError(
            "call ran past its time limit of %lld us (%lld us elapsed, %llu instructions)",
            static_cast<long long>(c->options_.timeout_ns / 1000),
            static_cast<long long>((now - c->invocation_start_ns_) / 1000),
            static_cast<unsigned long long>(c->instructions_executed_));
      }
    }
    const uint64_t budget = c->options_.max_instructions;
    uint64_t next = kCheckInterval;
    if (budget != 0) {
      if (OSPREY_UNLIKELY(c->instructions_executed_ >= budget)) {
        return ResourceExhaustedError("instruction budget of %llu instructions exhausted",
                                      static_cast<unsigned long long>(budget));
      }
      if (budget - c->instructions_executed_ < next) next = budget - c->instructions_executed_;
    }
    *slice = int64_t(next);
    return OkStatus();
  }

  // Annotates |status| with a backtrace and pops frames up to and including
  // |entry|.
  OSPREY_ATTRIBUTE_NOINLINE OSPREY_ATTRIBUTE_COLD static Status Unwind(Context* c, Status status,
                                                                       Frame* frame,
                                                                       Frame* entry) {
    while (true) {
      const BytecodeModule* module = frame->instance->bytecode;
      uint32_t offset = uint32_t(frame->pc - frame->fn->code);
      const char* location = module->SourceLocation(frame->function_index, offset);
      if (location) {
        status.Annotate("at %s.%s+0x%x (%s)", module->name(), frame->fn->name, unsigned(offset), location);
      } else {
        status.Annotate("at %s.%s+0x%x", module->name(), frame->fn->name, unsigned(offset));
      }
      Frame* caller = frame->caller;
      PopFrame(c, frame);
      if (frame == entry) break;
      frame = caller;
    }
    return status;
  }

  // Calls native import |target| with arguments from |caller_regs| listed at
  // |list|; stores results into the registers of the result list that
  // follows. Values are marshalled on the VM stack.
  static Status CallNative(Context* c, const ImportTarget& target, const BytecodeModule* caller,
                           const Signature& sig, const uint8_t* list, const Regs& regs) {
    size_t count = size_t(sig.arg_count) + sig.result_count;
    size_t bytes = count * sizeof(Value);
    size_t top = (c->stack_top_ + alignof(Value) - 1) & ~(alignof(Value) - 1);
    if (OSPREY_UNLIKELY(top + bytes > c->options_.stack_size)) {
      return ResourceExhaustedError("VM stack overflow marshalling %zu values for a native call",
                                    count);
    }
    Value* values = reinterpret_cast<Value*>(c->stack_ + top);
    size_t saved_top = c->stack_top_;
    c->stack_top_ = top + bytes;
    for (size_t k = 0; k < count; ++k) new (&values[k]) Value();
    for (uint8_t k = 0; k < sig.arg_count; ++k) {
      uint16_t s = ReadU16(list + 1 + 2 * k);
      Value& v = values[k];
      switch (sig.args[k]) {
        case 'i': v.type = ValueType::kI32; v.i32 = regs.i[s]; break;
        case 'I': v.type = ValueType::kI64; v.i64 = regs.l[s]; break;
        case 'f': v.type = ValueType::kF32; v.f32 = regs.f[s]; break;
        case 'F': v.type = ValueType::kF64; v.f64 = regs.d[s]; break;
        default: v.type = ValueType::kRef; v.ref = regs.r[s]; break;
      }
    }
    Value* results = values + sig.arg_count;
    Status status = c->InvokeNative(target.instance, target.ordinal, caller, values,
                                    sig.arg_count, results, sig.result_count);
    if (status.ok()) {
      const uint8_t* out = list + 1 + 2 * sig.arg_count;
      for (uint8_t k = 0; k < sig.result_count; ++k) {
        uint16_t d = ReadU16(out + 1 + 2 * k);
        Value& v = results[k];
        switch (sig.results[k]) {
          case 'i': regs.i[d] = v.i32; break;
          case 'I': regs.l[d] = v.i64; break;
          case 'f': regs.f[d] = v.f32; break;
          case 'F': regs.d[d] = v.f64; break;
          default: regs.r[d] = std::move(v.ref); break;
        }
      }
    } else {
      status.Annotate("calling native function '%s.%s'", target.instance->module->name(),
                      target.instance->native->function(target.ordinal).name);
    }
    for (size_t k = 0; k < count; ++k) values[k].~Value();
    c->stack_top_ = saved_top;
    return status;
  }
};

Status Interpreter::Run(Context* context, ModuleInstance* instance, uint32_t function_index,
                        const Value* args, Value* results) {
  using S = InterpreterState;
  Frame* entry = S::PushFrame(context, instance, function_index, nullptr);
  if (OSPREY_UNLIKELY(!entry)) return S::Overflow(context, instance, function_index);
  {
    Regs r = GetRegs(entry);
    uint32_t c[kBankCount] = {};
    const Signature& sig = entry->fn->signature;
    for (uint8_t k = 0; k < sig.arg_count; ++k) {
      switch (sig.args[k]) {
        case 'i': r.i[c[0]++] = args[k].i32; break;
        case 'I': r.l[c[1]++] = args[k].i64; break;
        case 'f': r.f[c[2]++] = args[k].f32; break;
        case 'F': r.d[c[3]++] = args[k].f64; break;
        default: r.r[c[4]++] = args[k].ref; break;
      }
    }
  }

  Frame* frame = entry;
  const uint8_t* pc = frame->pc;
  Regs regs = GetRegs(frame);
  int32_t* ri = regs.i;
  int64_t* rl = regs.l;
  float* rf = regs.f;
  double* rd = regs.d;
  Ref* rr = regs.r;
  Status status;
  // Instructions granted by the last checkpoint, and how many of them are
  // left: each dispatch takes one, and running out enters the checkpoint
  // (the first dispatch does at once).
  int64_t slice = 0;
  int64_t fuel = 0;

#define R(n) ReadU16(pc + (n))
#define RELOAD_REGS()   \
  do {                  \
    regs = GetRegs(frame); \
    ri = regs.i;        \
    rl = regs.l;        \
    rf = regs.f;        \
    rd = regs.d;        \
    rr = regs.r;        \
  } while (false)
#define FAIL_WITH(expr) \
  do {                  \
    status = (expr);    \
    goto error;         \
  } while (false)
#define TRY(expr)                             \
  do {                                        \
    status = (expr);                          \
    if (OSPREY_UNLIKELY(!status.ok())) goto error; \
  } while (false)

#if OSPREY_VM_COMPUTED_GOTO
#define OSPREY_VM_LABEL_ADDR_(name, mnemonic, operands, flags) &&L_##name,
  static const void* const kDispatch[] = {OSPREY_VM_OPCODES(OSPREY_VM_LABEL_ADDR_)};
#undef OSPREY_VM_LABEL_ADDR_
#define DISPATCH()                                     \
  do {                                                 \
    if (OSPREY_UNLIKELY(--fuel < 0)) goto checkpoint;  \
    goto* kDispatch[*pc];                              \
  } while (false)
#define DISPATCH_UNCHECKED() goto* kDispatch[*pc]
#define OP(name) L_##name:
  DISPATCH();
#else
#define DISPATCH() goto dispatch
#define DISPATCH_UNCHECKED() goto dispatch_unchecked
#define OP(name) case Opcode::k##name:
dispatch:
  if (OSPREY_UNLIKELY(--fuel < 0)) goto checkpoint;
dispatch_unchecked:
  switch (Opcode(*pc)) {
#endif

// dst = op(a, b) over bank B with type T.
#define BINARY(name, B, T, expr) \
  OP(name) {                     \
    T a = B[R(3)];               \
    T b = B[R(5)];               \
    B[R(1)] = (expr);            \
    pc += 7;                     \
    DISPATCH();                  \
  }
#define UNARY(name, D, S, T, expr) \
  OP(name) {                       \
    T a = S[R(3)];                 \
    D[R(1)] = (expr);              \
    pc += 5;                       \
    DISPATCH();                    \
  }
#define COMPARE(name, B, T, expr) \
  OP(name) {                      \
    T a = B[R(3)];                \
    T b = B[R(5)];                \
    ri[R(1)] = (expr) ? 1 : 0;    \
    pc += 7;                      \
    DISPATCH();                   \
  }

  OP(Nop) {
    pc += 1;
    DISPATCH();
  }

  //===--- Constants -------------------------------------------------------===//
  OP(ConstI32) {
    ri[R(1)] = int32_t(ReadU32(pc + 3));
    pc += 7;
    DISPATCH();
  }
  OP(ConstI64) {
    rl[R(1)] = int64_t(ReadU64(pc + 3));
    pc += 11;
    DISPATCH();
  }
  OP(ConstF32) {
    rf[R(1)] = ReadF32(pc + 3);
    pc += 7;
    DISPATCH();
  }
  OP(ConstF64) {
    rd[R(1)] = ReadF64(pc + 3);
    pc += 11;
    DISPATCH();
  }
  OP(ConstRefNull) {
    rr[R(1)].reset();
    pc += 3;
    DISPATCH();
  }
  OP(ConstRefRodata) {
    rr[R(1)] = frame->instance->bytecode->rodata_ref(ReadU32(pc + 3));
    pc += 7;
    DISPATCH();
  }

  //===--- Moves and selects -----------------------------------------------===//
  OP(MovI32) {
    ri[R(1)] = ri[R(3)];
    pc += 5;
    DISPATCH();
  }
  OP(MovI64) {
    rl[R(1)] = rl[R(3)];
    pc += 5;
    DISPATCH();
  }
  OP(MovF32) {
    rf[R(1)] = rf[R(3)];
    pc += 5;
    DISPATCH();
  }
  OP(MovF64) {
    rd[R(1)] = rd[R(3)];
    pc += 5;
    DISPATCH();
  }
  OP(MovRef) {
    rr[R(1)] = rr[R(3)];
    pc += 5;
    DISPATCH();
  }
#define SELECT(name, B)                                  \
  OP(name) {                                             \
    B[R(1)] = ri[R(3)] ? B[R(5)] : B[R(7)];              \
    pc += 9;                                             \
    DISPATCH();                                          \
  }
  SELECT(SelectI32, ri)
  SELECT(SelectI64, rl)
  SELECT(SelectF32, rf)
  SELECT(SelectF64, rd)
  OP(SelectRef) {
    // Locals with destructors stay in an inner scope: computed gotos must not
    // leave a scope that needs cleanup.
    {
      Ref chosen = ri[R(3)] ? rr[R(5)] : rr[R(7)];
      rr[R(1)] = std::move(chosen);
    }
    pc += 9;
    DISPATCH();
  }
#undef SELECT

  //===--- Integer arithmetic ----------------------------------------------===//
#define INTEGER_OPS(P, B, T, UT, BITS)                                                  \
  BINARY(Add##P, B, T, T(UT(a) + UT(b)))                                                 \
  OP(AddImm##P) {                                                                      \
    T a = B[R(3)];                                                                     \
    T b = T(int##BITS##_t(ReadU##BITS(pc + 5)));                                       \
    B[R(1)] = T(UT(a) + UT(b));                                                          \
    pc += 5 + BITS / 8;                                                                \
    DISPATCH();                                                                        \
  }                                                                                    \
  BINARY(Sub##P, B, T, T(UT(a) - UT(b)))                                                 \
  BINARY(Mul##P, B, T, T(UT(a) * UT(b)))                                                 \
  OP(Div##P##S) {                                                                      \
    T a = B[R(3)];                                                                     \
    T b = B[R(5)];                                                                     \
    if (OSPREY_UNLIKELY(b == 0)) FAIL_WITH(DivisionByZero());                          \
    B[R(1)] = (b == -1) ? T(UT(0) - UT(a)) : T(a / b);                                   \
    pc += 7;                                                                           \
    DISPATCH();                                                                        \
  }                                                                                    \
  OP(Div##P##U) {                                                                      \
    UT a = UT(B[R(3)]);                                                                  \
    UT b = UT(B[R(5)]);                                                                  \
    if (OSPREY_UNLIKELY(b == 0)) FAIL_WITH(DivisionByZero());                          \
    B[R(1)] = T(a / b);                                                                \
    pc += 7;                                                                           \
    DISPATCH();                                                                        \
  }                                                                                    \
  OP(Rem##P##S) {                                                                      \
    T a = B[R(3)];                                                                     \
    T b = B[R(5)];                                                                     \
    if (OSPREY_UNLIKELY(b == 0)) FAIL_WITH(DivisionByZero());                          \
    B[R(1)] = (b == -1) ? T(0) : T(a % b);                                             \
    pc += 7;                                                                           \
    DISPATCH();                                                                        \
  }                                                                                    \
  OP(Rem##P##U) {                                                                      \
    UT a = UT(B[R(3)]);                                                                  \
    UT b = UT(B[R(5)]);                                                                  \
    if (OSPREY_UNLIKELY(b == 0)) FAIL_WITH(DivisionByZero());                          \
    B[R(1)] = T(a % b);                                                                \
    pc += 7;                                                                           \
    DISPATCH();                                                                        \
  }                                                                                    \
  BINARY(And##P, B, T, T(a & b))                                                       \
  BINARY(Or##P, B, T, T(a | b))                                                        \
  BINARY(Xor##P, B, T, T(a ^ b))                                                       \
  BINARY(Shl##P, B, T, T(UT(a) << (UT(b) & (BITS - 1))))                                 \
  BINARY(Shr##P##S, B, T, T(a >> (UT(b) & (BITS - 1))))                                 \
  BINARY(Shr##P##U, B, T, T(UT(a) >> (UT(b) & (BITS - 1))))                              \
  BINARY(Min##P##S, B, T, a < b ? a : b)                                               \
  BINARY(Max##P##S, B, T, a > b ? a : b)                                               \
  BINARY(Min##P##U, B, T, UT(a) < UT(b) ? a : b)                                         \
  BINARY(Max##P##U, B, T, UT(a) > UT(b) ? a : b)                                         \
  UNARY(Neg##P, B, B, T, T(UT(0) - UT(a)))                                               \
  UNARY(Not##P, B, B, T, T(~UT(a)))                                                     \
  UNARY(Abs##P, B, B, T, a < 0 ? T(UT(0) - UT(a)) : a)
  INTEGER_OPS(I32, ri, int32_t, uint32_t, 32)
  INTEGER_OPS(I64, rl, int64_t, uint64_t, 64)
#undef INTEGER_OPS

  //===--- Float arithmetic ------------------------------------------------===//
#define FLOAT_OPS(P, B, T, SUFFIX)               \
  BINARY(Add##P, B, T, a + b)                    \
  BINARY(Sub##P, B, T, a - b)                    \
  BINARY(Mul##P, B, T, a * b)                    \
  BINARY(Div##P, B, T, a / b)                    \
  BINARY(Min##P, B, T, fmin##SUFFIX(a, b))       \
  BINARY(Max##P, B, T, fmax##SUFFIX(a, b))       \
  UNARY(Neg##P, B, B, T, -a)                     \
  UNARY(Abs##P, B, B, T, fabs##SUFFIX(a))        \
  UNARY(Sqrt##P, B, B, T, sqrt##SUFFIX(a))       \
  UNARY(Floor##P, B, B, T, floor##SUFFIX(a))     \
  UNARY(Ceil##P, B, B, T, ceil##SUFFIX(a))
  FLOAT_OPS(F32, rf, float, f)
  FLOAT_OPS(F64, rd, double, )
#undef FLOAT_OPS

  //===--- Comparisons -----------------------------------------------------===//
#define INTEGER_COMPARES(P, B, T, UT)   \
  COMPARE(CmpEq##P, B, T, a == b)      \
  COMPARE(CmpNe##P, B, T, a != b)      \
  COMPARE(CmpLt##P##S, B, T, a < b)    \
  COMPARE(CmpLe##P##S, B, T, a <= b)   \
  COMPARE(CmpGt##P##S, B, T, a > b)    \
  COMPARE(CmpGe##P##S, B, T, a >= b)   \
  COMPARE(CmpLt##P##U, B, T, UT(a) < UT(b))  \
  COMPARE(CmpLe##P##U, B, T, UT(a) <= UT(b)) \
  COMPARE(CmpGt##P##U, B, T, UT(a) > UT(b))  \
  COMPARE(CmpGe##P##U, B, T, UT(a) >= UT(b))
  INTEGER_COMPARES(I32, ri, int32_t, uint32_t)
  INTEGER_COMPARES(I64, rl, int64_t, uint64_t)
#undef INTEGER_COMPARES
#define FLOAT_COMPARES(P, B, T) \
  COMPARE(CmpEq##P, B, T, a == b) \
  COMPARE(CmpNe##P, B, T, a != b) \
  COMPARE(CmpLt##P, B, T, a < b)  \
  COMPARE(CmpLe##P, B, T, a <= b) \
  COMPARE(CmpGt##P, B, T, a > b)  \
  COMPARE(CmpGe##P, B, T, a >= b)
  FLOAT_COMPARES(F32, rf, float)
  FLOAT_COMPARES(F64, rd, double)
#undef FLOAT_COMPARES
  OP(CmpEqRef) {
    ri[R(1)] = rr[R(3)].get() == rr[R(5)].get() ? 1 : 0;
    pc += 7;
    DISPATCH();
  }
  OP(CmpNzRef) {
    ri[R(1)] = rr[R(3)].is_null() ? 0 : 1;
    pc += 5;
    DISPATCH();
  }

  //===--- Casts -----------------------------------------------------------===//
  UNARY(TruncI64I32, ri, rl, int64_t, int32_t(uint32_t(uint64_t(a))))
  UNARY(ExtI32I64S, rl, ri, int32_t, int64_t(a))
  UNARY(ExtI32I64U, rl, ri, int32_t, int64_t(uint64_t(uint32_t(a))))
  UNARY(CastSI32F32, rf, ri, int32_t, float(a))
  UNARY(CastUI32F32, rf, ri, int32_t, float(uint32_t(a)))
  UNARY(CastF32SI32, ri, rf, float, (SaturatingCast<int32_t, float>(a)))
  UNARY(CastF32UI32, ri, rf, float, int32_t(SaturatingCast<uint32_t, float>(a)))
  UNARY(CastSI64F32, rf, rl, int64_t, float(a))
  UNARY(CastF32SI64, rl, rf, float, (SaturatingCast<int64_t, float>(a)))
  UNARY(CastSI32F64, rd, ri, int32_t, double(a))
  UNARY(CastF64SI32, ri, rd, double, (SaturatingCast<int32_t, double>(a)))
  UNARY(CastSI64F64, rd, rl, int64_t, double(a))
  UNARY(CastF64SI64, rl, rd, double, (SaturatingCast<int64_t, double>(a)))
  UNARY(ExtF32F64, rd, rf, float, double(a))
  UNARY(TruncF64F32, rf, rd, double, float(a))
  OP(BitcastI32F32) {
    memcpy(&rf[R(1)], &ri[R(3)], 4);
    pc += 5;
    DISPATCH();
  }
  OP(BitcastF32I32) {
    memcpy(&ri[R(1)], &rf[R(3)], 4);
    pc += 5;
    DISPATCH();
  }
  OP(BitcastI64F64) {
    memcpy(&rd[R(1)], &rl[R(3)], 8);
    pc += 5;
    DISPATCH();
  }
  OP(BitcastF64I64) {
    memcpy(&rl[R(1)], &rd[R(3)], 8);
    pc += 5;
    DISPATCH();
  }

  //===--- Control flow ----------------------------------------------------===//
  OP(Br) {
    pc = frame->fn->code + ReadU32(pc + 1);
    DISPATCH();
  }
  OP(BrIf) {
    pc = ri[R(1)] ? frame->fn->code + ReadU32(pc + 3) : pc + 7;
    DISPATCH();
  }
  OP(BrUnless) {
    pc = ri[R(1)] ? pc + 7 : frame->fn->code + ReadU32(pc + 3);
    DISPATCH();
  }
  OP(Call) {
    uint32_t callee_index = ReadU32(pc + 1);
    Frame* callee = S::PushFrame(context, frame->instance, callee_index, frame);
    if (OSPREY_UNLIKELY(!callee)) FAIL_WITH(S::Overflow(context, frame->instance, callee_index));
    const Signature& sig = callee->fn->signature;
    const uint8_t* list = pc + 5;
    Regs callee_regs = GetRegs(callee);
    CopyArguments(sig.args, list, regs, callee_regs);
    const uint8_t* result_list = list + 1 + 2 * list[0];
    frame->pc = pc;
    frame->resume_pc = result_list + 1 + 2 * result_list[0];
    callee->result_list = result_list;
    frame = callee;
    regs = callee_regs;
    ri = regs.i;
    rl = regs.l;
    rf = regs.f;
    rd = regs.d;
    rr = regs.r;
    pc = frame->fn->code;
    DISPATCH();
  }
  OP(CallImport) {
    const ImportTarget& target = frame->instance->imports[ReadU32(pc + 1)];
    const uint8_t* list = pc + 5;
    const uint8_t* result_list = list + 1 + 2 * list[0];
    frame->pc = pc;
    if (target.instance->native) {
      const Signature& sig = frame->instance->bytecode->import(ReadU32(pc + 1)).signature;
      TRY(S::CallNative(context, target, frame->instance->bytecode, sig, list, regs));
      pc = result_list + 1 + 2 * result_list[0];
      // Native calls may take long: the next dispatch checks the limits.
      slice -= fuel;
      fuel = 0;
      DISPATCH();
    }
    Frame* callee = S::PushFrame(context, target.instance, target.ordinal, frame);
    if (OSPREY_UNLIKELY(!callee)) FAIL_WITH(S::Overflow(context, target.instance, target.ordinal));
    Regs callee_regs = GetRegs(callee);
    CopyArguments(callee->fn->signature.args, list, regs, callee_regs);
    frame->resume_pc = result_list + 1 + 2 * result_list[0];
    callee->result_list = result_list;
    frame = callee;
    RELOAD_REGS();
    pc = frame->fn->code;
    DISPATCH();
  }
  OP(Return) {
    const Signature& sig = frame->fn->signature;
    const uint8_t* list = pc + 1;
    if (OSPREY_UNLIKELY(frame == entry)) {
      for (uint8_t k = 0; k < sig.result_count; ++k) {
        uint16_t s = ReadU16(list + 1 + 2 * k);
        Value& v = results[k];
        switch (sig.results[k]) {
          case 'i': v = Value::I32(ri[s]); break;
          case 'I': v = Value::I64(rl[s]); break;
          case 'f': v = Value::F32(rf[s]); break;
          case 'F': v = Value::F64(rd[s]); break;
          default: v = Value::FromRef(rr[s]); break;
        }
      }
      S::PopFrame(context, frame);
      context->instructions_executed_ += uint64_t(slice - fuel);
      return OkStatus();
    }
    Frame* caller = frame->caller;
    Regs caller_regs = GetRegs(caller);
    CopyResults(sig.results, list, regs, frame->result_list, caller_regs);
    S::PopFrame(context, frame);
    frame = caller;
    regs = caller_regs;
    ri = regs.i;
    rl = regs.l;
    rf = regs.f;
    rd = regs.d;
    rr = regs.r;
    pc = frame->resume_pc;
    DISPATCH();
  }
  OP(Fail) { FAIL_WITH(MakeFailure(pc + 1, regs)); }
  OP(CheckNz) {
    if (OSPREY_UNLIKELY(ri[R(1)] == 0)) FAIL_WITH(MakeFailure(pc + 3, regs));
    pc += 3 + FailurePayloadSize(pc + 3);
    DISPATCH();
  }
  OP(CheckEqI32) {
    if (OSPREY_UNLIKELY(ri[R(1)] != ri[R(3)])) FAIL_WITH(MakeFailure(pc + 5, regs));
    pc += 5 + FailurePayloadSize(pc + 5);
    DISPATCH();
  }
  OP(CheckEqI64) {
    if (OSPREY_UNLIKELY(rl[R(1)] != rl[R(3)])) FAIL_WITH(MakeFailure(pc + 5, regs));
    pc += 5 + FailurePayloadSize(pc + 5);
    DISPATCH();
  }

  //===--- Globals ---------------------------------------------------------===//
#define GLOBAL_OPS(P, B, FIELD)                               \
  OP(GlobalLoad##P) {                                         \
    B[R(1)] = frame->instance->globals->FIELD[ReadU32(pc + 3)]; \
    pc += 7;                                                  \
    DISPATCH();                                               \
  }                                                           \
  OP(GlobalStore##P) {                                        \
    frame->instance->globals->FIELD[ReadU32(pc + 3)] = B[R(1)]; \
    pc += 7;                                                  \
    DISPATCH();                                               \
  }
  GLOBAL_OPS(I32, ri, i32)
  GLOBAL_OPS(I64, rl, i64)
  GLOBAL_OPS(F32, rf, f32)
  GLOBAL_OPS(F64, rd, f64)
  GLOBAL_OPS(Ref, rr, refs)
#undef GLOBAL_OPS

  //===--- Lists -----------------------------------------------------------===//
  OP(ListAlloc) {
    int32_t capacity = ri[R(3)];
    if (OSPREY_UNLIKELY(capacity < 0)) {
      FAIL_WITH(InvalidArgumentError("list capacity %d is negative", capacity));
    }
    {
      StatusOr<ref_ptr<List>> list = List::Create(size_t(capacity), context->vm_allocator());
      if (OSPREY_UNLIKELY(!list.ok())) FAIL_WITH(std::move(list).status());
      rr[R(1)] = Ref::FromRefPtr(std::move(*list), List::type());
    }
    pc += 5;
    DISPATCH();
  }
  OP(ListSize) {
    List* list;
    TRY(GetList(rr[R(3)], &list));
    ri[R(1)] = int32_t(list->size());
    pc += 5;
    DISPATCH();
  }
  OP(ListResize) {
    List* list;
    TRY(GetList(rr[R(1)], &list));
    int32_t size = ri[R(3)];
    if (OSPREY_UNLIKELY(size < 0)) FAIL_WITH(InvalidArgumentError("list size %d is negative", size));
    {
      Status resized = list->Resize(size_t(size));
      if (OSPREY_UNLIKELY(!resized.ok())) {
        FAIL_WITH(std::move(resized).Annotate("resizing a list of %zu elements to %d",
                                              list->size(), size));
      }
    }
    pc += 5;
    DISPATCH();
  }
#define LIST_OPS(P, B, VT, FIELD, MAKE)                       \
  OP(ListGet##P) {                                            \
    {                                                         \
      Value v;                                                \
      TRY(ListGet(rr[R(3)], ri[R(5)], VT, &v));               \
      B[R(1)] = v.FIELD;                                      \
    }                                                         \
    pc += 7;                                                  \
    DISPATCH();                                               \
  }                                                           \
  OP(ListSet##P) {                                            \
    TRY(ListSet(rr[R(1)], ri[R(3)], Value::MAKE(B[R(5)])));   \
    pc += 7;                                                  \
    DISPATCH();                                               \
  }
  LIST_OPS(I32, ri, ValueType::kI32, i32, I32)
  LIST_OPS(I64, rl, ValueType::kI64, i64, I64)
  LIST_OPS(F32, rf, ValueType::kF32, f32, F32)
  LIST_OPS(F64, rd, ValueType::kF64, f64, F64)
  LIST_OPS(Ref, rr, ValueType::kRef, ref, FromRef)
#undef LIST_OPS

  //===--- Buffers ---------------------------------------------------------===//
  OP(BufferAlloc) {
    int64_t length = rl[R(3)];
    if (OSPREY_UNLIKELY(length < 0 || uint64_t(length) > SIZE_MAX)) {
      FAIL_WITH(InvalidArgumentError("buffer length %lld is invalid",
                                     static_cast<long long>(length)));
    }
    {
      StatusOr<ref_ptr<Buffer>> buffer =
          Buffer::Allocate(size_t(length), kDefaultAlignment, context->vm_allocator());
      if (OSPREY_UNLIKELY(!buffer.ok())) FAIL_WITH(std::move(buffer).status());
      rr[R(1)] = Ref::FromRefPtr(std::move(*buffer), Buffer::type());
    }
    pc += 5;
    DISPATCH();
  }
  OP(BufferLength) {
    Buffer* buffer;
    TRY(GetBuffer(rr[R(3)], &buffer));
    rl[R(1)] = int64_t(buffer->length());
    pc += 5;
    DISPATCH();
  }
  OP(BufferFill) {
    Buffer* buffer;
    TRY(GetBuffer(rr[R(1)], &buffer));
    int64_t offset = rl[R(3)];
    int64_t length = rl[R(5)];
    TRY(buffer->CheckWritableRange(offset, length));
    // An empty buffer may have no storage: memset/memmove of a null pointer
    // is undefined even for zero bytes.
    if (length > 0) memset(buffer->mutable_data() + offset, uint8_t(ri[R(7)]), size_t(length));
    pc += 9;
    DISPATCH();
  }
  OP(BufferCopy) {
    Buffer* source;
    Buffer* target;
    TRY(GetBuffer(rr[R(1)], &source));
    TRY(GetBuffer(rr[R(5)], &target));
    int64_t source_offset = rl[R(3)];
    int64_t target_offset = rl[R(7)];
    int64_t length = rl[R(9)];
    TRY(source->CheckRange(source_offset, length));
    TRY(target->CheckWritableRange(target_offset, length));
    if (length > 0) {
      memmove(target->mutable_data() + target_offset, source->data() + source_offset,
              size_t(length));
    }
    pc += 11;
    DISPATCH();
  }
#define BUFFER_LOAD(name, B, T, CONVERT)           \
  OP(name) {                                       \
    T v;                                           \
    TRY(BufferLoad<T>(rr[R(3)], rl[R(5)], &v));    \
    B[R(1)] = CONVERT(v);                          \
    pc += 7;                                       \
    DISPATCH();                                    \
  }
#define BUFFER_STORE(name, B, T)                   \
  OP(name) {                                       \
    TRY(BufferStore<T>(rr[R(1)], rl[R(3)], T(B[R(5)]))); \
    pc += 7;                                       \
    DISPATCH();                                    \
  }
  BUFFER_LOAD(BufferLoadI8S, ri, int8_t, int32_t)
  BUFFER_LOAD(BufferLoadI8U, ri, uint8_t, int32_t)
  BUFFER_LOAD(BufferLoadI16S, ri, int16_t, int32_t)
  BUFFER_LOAD(BufferLoadI16U, ri, uint16_t, int32_t)
  BUFFER_LOAD(BufferLoadI32, ri, int32_t, int32_t)
  BUFFER_LOAD(BufferLoadI64, rl, int64_t, int64_t)
  BUFFER_LOAD(BufferLoadF32, rf, float, float)
  BUFFER_LOAD(BufferLoadF64, rd, double, double)
  BUFFER_STORE(BufferStoreI8, ri, uint8_t)
  BUFFER_STORE(BufferStoreI16, ri, uint16_t)
  BUFFER_STORE(BufferStoreI32, ri, int32_t)
  BUFFER_STORE(BufferStoreI64, rl, int64_t)
  BUFFER_STORE(BufferStoreF32, rf, float)
  BUFFER_STORE(BufferStoreF64, rd, double)
#undef BUFFER_LOAD
#undef BUFFER_STORE

#if !OSPREY_VM_COMPUTED_GOTO
    default:
      FAIL_WITH(InternalError("unverified opcode 0x%02x", unsigned(*pc)));
  }
#endif

checkpoint:
  // |fuel| is -1: the whole slice ran and the instruction at |pc| has not.
  TRY(S::Checkpoint(context, slice, &slice));
  fuel = slice - 1;  // The instruction about to run takes one.
  DISPATCH_UNCHECKED();

error:
  frame->pc = pc;
  if (fuel >= 0) context->instructions_executed_ += uint64_t(slice - fuel);
  return S::Unwind(context, std::move(status), frame, entry);

#undef R
#undef RELOAD_REGS
#undef FAIL_WITH
#undef TRY
#undef DISPATCH
#undef DISPATCH_UNCHECKED
#undef OP
#undef BINARY
#undef UNARY
#undef COMPARE
}

}  // namespace osprey::vm
