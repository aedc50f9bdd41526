// Host code of a dispatch program as VM bytecode calling the hal module.
#include "compiler/vm_backend/module_emitter.h"

#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "compiler/graph/status.h"
#include "hal/types.h"
#include "vm/builder/module_builder.h"
#include "vm/opcodes.h"

namespace osprey::compiler::vm_backend {
namespace {

using dispatch::BufferKind;
using vm::Bank;
using vm::Opcode;

absl::Status toAbsl(const osprey::Status &s, const std::string &context) {
  if (s.ok()) {
    return absl::OkStatus();
  }
  const char *message = s.message();
  return absl::Status(static_cast<absl::StatusCode>(static_cast<int>(s.code())),
                      context + ": " + (message ? message : ""));
}

// Bytecode for one function: fresh registers per value, one method per
// instruction the host code needs.
class FunctionEmitter {
public:
  explicit FunctionEmitter(vm::ModuleBuilder &builder) : builder_(builder) {}

  uint16_t reg(Bank bank) { return counts_[int(bank)]++; }
  std::array<uint16_t, vm::kBankCount> counts() const { return counts_; }
  vm::BytecodeWriter &writer() { return w_; }

  // Finishes the bytecode and defines it as function |index| of the module.
  absl::Status define(uint32_t index, const std::string &name) {
    auto code = w_.Finish();
    if (!code.ok()) {
      return toAbsl(code.status(), "finishing the bytecode of " + name);
    }
    builder_.DefineFunction(index, std::move(*code), counts_, w_.locations());
    return absl::OkStatus();
  }

  uint16_t constI32(int32_t v) {
    uint16_t r = reg(Bank::kI32);
    w_.Op(Opcode::kConstI32);
    w_.Reg(r);
    w_.I32(v);
    return r;
  }
  uint16_t constI64(int64_t v) {
    uint16_t r = reg(Bank::kI64);
    w_.Op(Opcode::kConstI64);
    w_.Reg(r);
    w_.I64(v);
    return r;
  }
  uint16_t rodata(uint32_t segment) {
    uint16_t r = reg(Bank::kRef);
    w_.Op(Opcode::kConstRefRodata);
    w_.Reg(r);
    w_.U32(segment);
    return r;
  }
  uint16_t nullRef() {
    uint16_t r = reg(Bank::kRef);
    w_.Op(Opcode::kConstRefNull);
    w_.Reg(r);
    return r;
  }
  void call(const std::string &name, const std::string &signature,
            std::vector<uint16_t> args, std::vector<uint16_t> results) {
    std::string full = "hal." + name;
    auto index = builder_.FindImport(full);
    if (!index) {
      index = builder_.AddImport(full, signature);
    }
    w_.Op(Opcode::kCallImport);
    w_.U32(*index);
    w_.RegList(args);
    w_.RegList(results);
  }
  uint16_t callRef(const std::string &name, const std::string &signature,
                   std::vector<uint16_t> args) {
    uint16_t r = reg(Bank::kRef);
    call(name, signature, std::move(args), {r});
    return r;
  }
  uint16_t refList(const std::vector<uint16_t> &refs) {
    uint16_t list = reg(Bank::kRef);
    uint16_t size = constI32(static_cast<int32_t>(refs.size()));
    w_.Op(Opcode::kListAlloc);
    w_.Reg(list);
    w_.Reg(size);
    w_.Op(Opcode::kListResize);
    w_.Reg(list);
    w_.Reg(size);
    for (size_t i = 0; i < refs.size(); ++i) {
      uint16_t index = constI32(static_cast<int32_t>(i));
      w_.Op(Opcode::kListSetRef);
      w_.Reg(list);
      w_.Reg(index);
      w_.Reg(refs[i]);
    }
    return list;
  }
  uint16_t globalLoadRef(uint32_t global) {
    uint16_t r = reg(Bank::kRef);
    w_.Op(Opcode::kGlobalLoadRef);
    w_.Reg(r);
    w_.U32(global);
    return r;
  }
  void globalStoreRef(uint16_t value, uint32_t global) {
    w_.Op(Opcode::kGlobalStoreRef);
    w_.Reg(value);
    w_.U32(global);
  }
  void ret(const std::vector<uint16_t> &values) {
    w_.Op(Opcode::kReturn);
    w_.RegList(values);
  }

private:
  vm::ModuleBuilder &builder_;
  vm::BytecodeWriter w_;
  std::array<uint16_t, vm::kBankCount> counts_{};
};

std::vector<uint8_t> shapeBytes(llvm::ArrayRef<int64_t> dims) {
  std::vector<uint8_t> bytes(dims.size() * 8);
  if (!dims.empty()) {
    std::memcpy(bytes.data(), dims.data(), bytes.size());
  }
  return bytes;
}

// The buffer view element type of a module argument or result.
std::optional<hal::ElementType> halElementType(graph::ElementType type) {
  using ET = graph::ElementType;
  switch (type) {
  case ET::F32: return hal::ElementType::kFloat32;
  case ET::F16: return hal::ElementType::kFloat16;
  case ET::BF16: return hal::ElementType::kBFloat16;
  case ET::F64: return hal::ElementType::kFloat64;
  case ET::I8: return hal::ElementType::kInt8;
  case ET::I16: return hal::ElementType::kInt16;
  case ET::I32: return hal::ElementType::kInt32;
  case ET::I64: return hal::ElementType::kInt64;
  case ET::U8: return hal::ElementType::kUint8;
  case ET::U16: return hal::ElementType::kUint16;
  case ET::U32: return hal::ElementType::kUint32;
  case ET::U64: return hal::ElementType::kUint64;
  case ET::Bool: return hal::ElementType::kBool8;
  }
  return std::nullopt;
}

// |text| with every character other than letters, digits and '_' made '_'
// (names of executables and rodata segments).
std::string identifier(std::string text) {
  for (char &c : text) {
    c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return text;
}

std::vector<uint8_t> textBytes(const std::string &s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// The model's name of input or output |i| (the tensor name when the program
// does not carry model names, e.g. hand-built programs).
std::string ioName(const std::vector<std::string> &names,
                   const std::vector<unsigned> &tensors, size_t i,
                   const structured::StructuredProgram &p) {
  return i < names.size() ? names[i] : p.tensors[tensors[i]].name;
}

// Records main.{input,output}.<i>.name (the model's name) and .type (e.g.
// "2x3xf32") so an application can find inputs and outputs by name. Types
// are left out when they would push the module past the loader's attribute
// limit; names are required.
absl::Status setIoAttributes(vm::ModuleBuilder &builder,
                             const structured::StructuredProgram &p) {
  constexpr size_t kMaxAttributes = 256;
  constexpr size_t kOtherAttributes = 2; // arena_size, arena_alignment
  const size_t io = p.inputs.size() + p.outputs.size();
  if (kOtherAttributes + io > kMaxAttributes) {
    return absl::UnimplementedError(
        "graph has " + std::to_string(io) +
        " inputs and outputs; module metadata holds the names of at most " +
        std::to_string(kMaxAttributes - kOtherAttributes));
  }
  const bool withTypes = kOtherAttributes + 2 * io <= kMaxAttributes;
  auto add = [&](const char *kind, size_t i, const std::string &name,
                 const graph::TensorType &type) {
    std::string prefix =
        std::string("main.") + kind + "." + std::to_string(i) + ".";
    builder.SetAttribute(prefix + "name", name);
    if (withTypes) {
      std::string text;
      for (int64_t dim : type.dims()) {
        text += std::to_string(dim) + "x";
      }
      text += graph::elementTypeName(type.elementType()).str();
      builder.SetAttribute(prefix + "type", text);
    }
  };
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    add("input", i, ioName(p.inputNames, p.inputs, i, p),
        p.tensors[p.inputs[i]].type);
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    add("output", i, ioName(p.outputNames, p.outputs, i, p),
        p.tensors[p.outputs[i]].type);
  }
  return absl::OkStatus();
}

} // namespace

namespace {

// The per-program part of a module: its executables' indices, where each
// region's code is, and the ref globals holding its bound constants.
struct VariantPlan {
  const dispatch::DispatchProgram *d = nullptr;
  std::vector<ModuleExecutable> executables;
  std::vector<uint32_t> moduleExecutable; // per entry of |executables|
  std::vector<int> exeOf;
  std::vector<int32_t> ordinalOf;
  std::map<unsigned, uint32_t> constantGlobals;
  std::string prefix; // of its rodata names ("" for the first variant)
};

absl::Status checkVariant(const ModuleVariant &v, VariantPlan &plan) {
  const dispatch::DispatchProgram &d = *v.program;
  const structured::StructuredProgram &p = d.program;
  plan.d = &d;
  plan.executables = v.executables;
  plan.exeOf.assign(d.regions.size(), -1);
  plan.ordinalOf.assign(d.regions.size(), 0);
  if (v.executables.empty()) {
    return absl::InvalidArgumentError("a module needs an executable");
  }
  for (size_t k = 0; k < v.executables.size(); ++k) {
    const std::vector<unsigned> &regions = v.executables[k].regions;
    for (size_t i = 0; i < regions.size(); ++i) {
      if (regions[i] >= d.regions.size() || plan.exeOf[regions[i]] >= 0) {
        return absl::InvalidArgumentError(
            "region " + std::to_string(regions[i]) +
            " is out of range or in two executables");
      }
      plan.exeOf[regions[i]] = static_cast<int>(k);
      plan.ordinalOf[regions[i]] = static_cast<int32_t>(i);
    }
  }
  for (size_t r = 0; r < d.regions.size(); ++r) {
    if (plan.exeOf[r] < 0) {
      return absl::InvalidArgumentError("region " + d.regions[r].name +
                                        " is in no executable");
    }
  }
  if (d.arenaSize < 0) {
    return absl::FailedPreconditionError(
        "memory must be planned before emitting the VM module");
  }
  for (unsigned t : p.inputs) {
    if (!halElementType(p.tensors[t].type.elementType())) {
      return absl::UnimplementedError(
          "graph input '" + p.tensors[t].name + "' has element type " +
          graph::elementTypeName(p.tensors[t].type.elementType()).str() +
          ", which has no HAL element type");
    }
  }
  for (unsigned t : p.outputs) {
    if (!halElementType(p.tensors[t].type.elementType())) {
      return absl::UnimplementedError(
          "graph output '" + p.tensors[t].name + "' has element type " +
          graph::elementTypeName(p.tensors[t].type.elementType()).str() +
          ", which has no HAL element type");
    }
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<std::vector<uint8_t>>
emitModule(const dispatch::DispatchProgram &d,
           const targets::Executable &executable,
           const std::string &moduleName) {
  ModuleExecutable all{&executable, {}};
  for (unsigned r = 0; r < d.regions.size(); ++r) {
    all.regions.push_back(r);
  }
  return emitModule(d, std::vector<ModuleExecutable>{all}, moduleName);
}

absl::StatusOr<std::vector<uint8_t>>
emitModule(const dispatch::DispatchProgram &d,
           const std::vector<ModuleExecutable> &executables,
           const std::string &moduleName) {
  return emitModule(std::vector<ModuleVariant>{{&d, executables}}, moduleName);
}

absl::StatusOr<std::vector<uint8_t>>
emitModule(const std::vector<ModuleVariant> &variants,
           const std::string &moduleName) {
  if (variants.empty()) {
    return absl::InvalidArgumentError("a module needs a program");
  }
  std::vector<VariantPlan> plans(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    COMPILER_RETURN_IF_ERROR(checkVariant(variants[v], plans[v]));
    plans[v].prefix = v == 0 ? "" : "variant" + std::to_string(v) + "_";
  }
  // Every variant takes the same arguments and returns the same results.
  const structured::StructuredProgram &p = plans[0].d->program;
  for (size_t v = 1; v < plans.size(); ++v) {
    const structured::StructuredProgram &q = plans[v].d->program;
    bool same = q.inputs.size() == p.inputs.size() &&
                q.outputs.size() == p.outputs.size();
    for (size_t i = 0; same && i < p.inputs.size(); ++i) {
      same = q.tensors[q.inputs[i]].type == p.tensors[p.inputs[i]].type;
    }
    for (size_t i = 0; same && i < p.outputs.size(); ++i) {
      same = q.tensors[q.outputs[i]].type == p.tensors[p.outputs[i]].type;
    }
    if (!same) {
      return absl::InvalidArgumentError(
          "the variants of a module must take and return the same values");
    }
    if (plans[v].executables.size() != 1 ||
        plans[v].executables[0].selectByFormat) {
      return absl::UnimplementedError(
          "a fallback variant runs on the default device only");
    }
  }
  vm::ModuleBuilder builder(moduleName);
  uint32_t exeCount = 0;
  for (VariantPlan &plan : plans) {
    for (size_t k = 0; k < plan.executables.size(); ++k) {
      const targets::Executable &executable = *plan.executables[k].executable;
      std::string name = exeCount == 0 ? moduleName
                         : k == 0      ? identifier(moduleName + "_" +
                                                    plan.prefix + "cpu")
                                       : identifier(moduleName + "_" +
                                                    executable.format);
      plan.moduleExecutable.push_back(
          builder.AddExecutable(executable.format, name, executable.data));
      ++exeCount;
    }
  }
  // Module globals (ref bank): one hal.buffer per bound constant, wrapped
  // once per context by the initializer, then the cached arena (shared by
  // the variants: a call runs one of them).
  uint32_t globals = 0;
  int64_t arenaSize = 0, arenaAlignment = 0;
  for (VariantPlan &plan : plans) {
    const dispatch::DispatchProgram &d = *plan.d;
    for (const dispatch::DispatchRegion &r : d.regions) {
      for (const dispatch::Binding &b : r.bindings) {
        unsigned s = d.storageOf(b.tensor);
        if (d.buffers[s].kind == BufferKind::Constant &&
            !plan.constantGlobals.count(s)) {
          plan.constantGlobals.emplace(s, globals++);
        }
      }
    }
    arenaSize = std::max(arenaSize, d.arenaSize);
    arenaAlignment = std::max(arenaAlignment, d.arenaAlignment);
  }
  const uint32_t arenaGlobal = globals;
  builder.SetGlobalCount(Bank::kRef, arenaGlobal + (arenaSize > 0 ? 1 : 0));
  builder.SetAttribute("arena_size", std::to_string(arenaSize));
  builder.SetAttribute("arena_alignment", std::to_string(arenaAlignment));
  if (absl::Status s = setIoAttributes(builder, p); !s.ok()) {
    return s;
  }
  if (globals > 0) {
    uint32_t init = builder.DeclareFunction("__init", ":");
    FunctionEmitter e(builder);
    e.writer().SetLocation("constants");
    uint16_t device = e.callRef("device", ":r", {});
    uint16_t allocator = e.callRef("device.allocator", "r:r", {device});
    for (const VariantPlan &plan : plans) {
      const dispatch::DispatchProgram &d = *plan.d;
      for (const auto &[t, global] : plan.constantGlobals) {
        const structured::TensorInfo &info = d.program.tensors[t];
        llvm::ArrayRef<uint8_t> bytes = info.constant->bytes();
        if (static_cast<int64_t>(bytes.size()) != d.buffers[t].byteSize) {
          return absl::InternalError("constant '" + info.name + "' holds " +
                                     std::to_string(bytes.size()) +
                                     " bytes, expected " +
                                     std::to_string(d.buffers[t].byteSize));
        }
        // 64-byte aligned segments are stored outside the FlatBuffer at
        // aligned file offsets, so the runtime binds them in place.
        uint32_t segment = builder.AddRodata(
            "constant_" + plan.prefix + info.name,
            std::vector<uint8_t>(bytes.begin(), bytes.end()), 64);
        uint16_t wrapped = e.callRef("buffer.wrap_rodata", "rr:r",
                                     {allocator, e.rodata(segment)});
        e.globalStoreRef(wrapped, global);
      }
    }
    e.ret({});
    COMPILER_RETURN_IF_ERROR(e.define(init, "__init"));
    builder.SetInitializer(static_cast<int32_t>(init));
  }
  // The VM takes and returns at most kMaxSignatureValues values per call:
  // a larger main would compile and then be refused by every runtime.
  for (auto [count, what] : {std::pair{p.inputs.size(), "inputs"},
                             std::pair{p.outputs.size(), "outputs"}}) {
    if (count > vm::kMaxSignatureValues) {
      return absl::UnimplementedError(
          "the model has " + std::to_string(count) + " " + what +
          "; a module function takes and returns at most " +
          std::to_string(vm::kMaxSignatureValues) +
          " values each way (vm::kMaxSignatureValues): export the model with "
          "fewer graph " + what + " (e.g. concatenate them)");
    }
  }
  std::string signature(p.inputs.size(), 'r');
  signature += ":" + std::string(p.outputs.size(), 'r');
  uint32_t fn = builder.DeclareFunction("main", signature);
  FunctionEmitter e(builder);
  std::vector<uint16_t> args;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    args.push_back(e.reg(Bank::kRef));
  }
  // Rodata of shapes, per variant and tensor.
  std::map<std::pair<size_t, unsigned>, uint32_t> shapeSegments;
  auto shapeOf = [&](size_t v, unsigned t) {
    const structured::StructuredProgram &q = plans[v].d->program;
    auto it = shapeSegments.find({v, t});
    if (it == shapeSegments.end()) {
      it = shapeSegments
               .emplace(std::make_pair(v, t),
                        builder.AddRodata(
                            "shape_" + plans[v].prefix + q.tensors[t].name,
                            shapeBytes(q.tensors[t].type.dims()), 8))
               .first;
    }
    return e.rodata(it->second);
  };
  uint16_t device = e.callRef("device", ":r", {});
  uint16_t allocator = e.callRef("device.allocator", "r:r", {device});
  // Registers of element type constants, per variant (a register set in one
  // variant's code is not set in another's).
  std::map<std::pair<size_t, int32_t>, uint16_t> elementTypeRegs;
  auto elementTypeReg = [&](size_t v, const structured::StructuredProgram &q,
                            unsigned t) {
    int32_t type = int32_t(*halElementType(q.tensors[t].type.elementType()));
    auto it = elementTypeRegs.find({v, type});
    if (it == elementTypeRegs.end()) {
      it = elementTypeRegs.emplace(std::make_pair(v, type), e.constI32(type))
               .first;
    }
    return it->second;
  };
  // The inputs, checked once for every variant.
  std::map<unsigned, uint16_t> inputStorage;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    unsigned t = p.inputs[i];
    e.writer().SetLocation("input '" + ioName(p.inputNames, p.inputs, i, p) +
                           "'");
    uint32_t nameSegment =
        builder.AddRodata("name_" + p.tensors[t].name,
                          textBytes("input " + std::to_string(i) + " ('" +
                                    ioName(p.inputNames, p.inputs, i, p) +
                                    "')"),
                          1);
    e.call("buffer_view.assert", "rrir:",
           {args[i], e.rodata(nameSegment), elementTypeReg(0, p, t),
            shapeOf(0, t)},
           {});
  }
  auto allocate = [&](int64_t length) {
    uint16_t type = e.constI32(int32_t(hal::MemoryType::kHostLocal |
                                       hal::MemoryType::kDeviceVisible));
    uint16_t usage = e.constI32(int32_t(hal::BufferUsage::kDefault));
    uint16_t access = e.constI32(0);
    return e.callRef("allocator.allocate", "riiiI:r",
                     {allocator, type, usage, access, e.constI64(length)});
  };
  // Which variant runs: the first whose devices the context has (each
  // device its executables select by format), else the last.
  std::vector<vm::BytecodeWriter::Label> variantLabels;
  for (size_t v = 0; v + 1 < plans.size(); ++v) {
    variantLabels.push_back(e.writer().NewLabel());
    e.writer().SetLocation("choosing the devices");
    uint16_t all = e.constI32(1);
    for (const ModuleExecutable &x : plans[v].executables) {
      if (!x.selectByFormat) {
        continue;
      }
      // found = any device of the context prepares x's format.
      uint16_t count = e.reg(Bank::kI32);
      e.call("devices.count", ":i", {}, {count});
      uint16_t i = e.constI32(0), found = e.constI32(0);
      uint32_t querySegment = builder.AddRodata(
          identifier("has_format_" + x.executable->format),
          textBytes("device.executable_format=" + x.executable->format), 1);
      vm::BytecodeWriter::Label loop = e.writer().NewLabel(),
                                done = e.writer().NewLabel();
      if (osprey::Status s = e.writer().Bind(loop); !s.ok()) {
        return toAbsl(s, "emitting the device check");
      }
      uint16_t last = e.reg(Bank::kI32);
      e.writer().Op(Opcode::kCmpGeI32S);
      e.writer().Reg(last);
      e.writer().Reg(i);
      e.writer().Reg(count);
      e.writer().Op(Opcode::kBrIf);
      e.writer().Reg(last);
      e.writer().Target(done);
      uint16_t dev = e.reg(Bank::kRef);
      e.call("devices.get", "i:r", {i}, {dev});
      uint16_t answered = e.reg(Bank::kI32), value = e.reg(Bank::kI64);
      e.call("device.query.i64", "rr:iI", {dev, e.rodata(querySegment)},
             {answered, value});
      uint16_t zero = e.constI64(0);
      uint16_t prepares = e.reg(Bank::kI32);
      e.writer().Op(Opcode::kCmpNeI64);
      e.writer().Reg(prepares);
      e.writer().Reg(value);
      e.writer().Reg(zero);
      e.writer().Op(Opcode::kOrI32);
      e.writer().Reg(found);
      e.writer().Reg(found);
      e.writer().Reg(prepares);
      e.writer().Op(Opcode::kAddImmI32);
      e.writer().Reg(i);
      e.writer().Reg(i);
      e.writer().I32(1);
      e.writer().Op(Opcode::kBr);
      e.writer().Target(loop);
      if (osprey::Status s = e.writer().Bind(done); !s.ok()) {
        return toAbsl(s, "emitting the device check");
      }
      e.writer().Op(Opcode::kAndI32);
      e.writer().Reg(all);
      e.writer().Reg(all);
      e.writer().Reg(found);
    }
    e.writer().Op(Opcode::kBrIf);
    e.writer().Reg(all);
    e.writer().Target(variantLabels.back());
  }
  // The variants' code, the fallback (last) first: it follows the checks.
  for (size_t n = 0; n < plans.size(); ++n) {
    const size_t v = plans.size() - 1 - n;
    const VariantPlan &plan = plans[v];
    const dispatch::DispatchProgram &d = *plan.d;
    const structured::StructuredProgram &q = d.program;
    if (v + 1 < plans.size()) {
      if (osprey::Status s = e.writer().Bind(variantLabels[v]); !s.ok()) {
        return toAbsl(s, "emitting a variant");
      }
    }
    // Storage of every bound tensor: a register holding a hal.buffer or
    // hal.buffer_view.
    std::map<unsigned, uint16_t> storage;
    for (size_t i = 0; i < q.inputs.size(); ++i) {
      storage[q.inputs[i]] = args[i];
    }
    std::map<unsigned, uint16_t> outputBuffers;
    for (unsigned t : q.outputs) {
      // A reshaped output shares the buffer of the value it views.
      unsigned s = d.storageOf(t);
      if (!storage.count(s)) {
        storage[s] = allocate(d.buffers[s].byteSize);
      }
      outputBuffers[t] = storage[s];
    }
    for (const auto &[t, global] : plan.constantGlobals) {
      storage[t] = e.globalLoadRef(global);
    }
    // The arena is allocated on a context's first call and kept in a module
    // global (module state is per context, so concurrent calls from
    // different contexts never share it). A call takes it out of the global
    // and puts it back when its work has completed, so a nested call in the
    // same context finds the global empty and allocates its own.
    uint16_t arena = 0;
    if (arenaSize > 0) {
      e.writer().SetLocation("arena");
      arena = e.globalLoadRef(arenaGlobal);
      e.globalStoreRef(e.nullRef(), arenaGlobal);
      uint16_t present = e.reg(Bank::kI32);
      e.writer().Op(Opcode::kCmpNzRef);
      e.writer().Reg(present);
      e.writer().Reg(arena);
      vm::BytecodeWriter::Label haveArena = e.writer().NewLabel();
      e.writer().Op(Opcode::kBrIf);
      e.writer().Reg(present);
      e.writer().Target(haveArena);
      uint16_t fresh = allocate(arenaSize);
      e.writer().Op(Opcode::kMovRef);
      e.writer().Reg(arena);
      e.writer().Reg(fresh);
      if (osprey::Status s = e.writer().Bind(haveArena); !s.ok()) {
        return toAbsl(s, "emitting the arena check");
      }
    }
    std::optional<uint16_t> emptyBuffer;
    auto bufferFor = [&](unsigned t) {
      unsigned s = d.storageOf(t);
      auto it = storage.find(s);
      if (it != storage.end()) {
        return it->second;
      }
      const dispatch::Buffer &b = d.buffers[s];
      if (b.byteSize == 0) {
        // Empty values take no arena space (the arena may not even exist),
        // so all of them share one zero-length buffer: a region reading an
        // empty value still gets a valid binding.
        if (!emptyBuffer) {
          emptyBuffer = allocate(0);
        }
        storage[s] = *emptyBuffer;
        return *emptyBuffer;
      }
      uint16_t sub = e.callRef("buffer.subspan", "rII:r",
                               {arena, e.constI64(b.offset),
                                e.constI64(b.byteSize)});
      storage[s] = sub;
      return sub;
    };
    // The device and the executable of each executable index.
    std::vector<uint16_t> devices, exes;
    for (size_t k = 0; k < plan.executables.size(); ++k) {
      uint16_t dev = device;
      const targets::Executable &executable = *plan.executables[k].executable;
      if (plan.executables[k].selectByFormat) {
        e.writer().SetLocation("device for " + executable.format);
        uint32_t formatSegment =
            builder.AddRodata(identifier("format_" + executable.format),
                              textBytes(executable.format), 1);
        dev = e.callRef("devices.select", "r:r", {e.rodata(formatSegment)});
      }
      for (const targets::Executable::Requirement &req :
           executable.requirements) {
        uint32_t keySegment = builder.AddRodata(
            identifier("query_" + req.key), textBytes(req.key), 1);
        uint16_t answered = e.reg(Bank::kI32), value = e.reg(Bank::kI64);
        e.call("device.query.i64", "rr:iI", {dev, e.rodata(keySegment)},
               {answered, value});
        e.writer().Op(Opcode::kCheckNz);
        e.writer().Reg(answered);
        e.writer().FailurePayload(
            osprey::StatusCode::kFailedPrecondition,
            "the " + executable.format + " code needs a device reporting '" +
                req.key + "', and the device selected for it does not; " +
                req.advice,
            {});
        uint16_t minimum = e.constI64(req.minimum);
        uint16_t fits = e.reg(Bank::kI32);
        e.writer().Op(Opcode::kCmpGeI64S);
        e.writer().Reg(fits);
        e.writer().Reg(value);
        e.writer().Reg(minimum);
        e.writer().Op(Opcode::kCheckNz);
        e.writer().Reg(fits);
        const std::pair<Bank, uint16_t> failureArgs[] = {{Bank::kI64, minimum},
                                                         {Bank::kI64, value}};
        e.writer().FailurePayload(
            osprey::StatusCode::kFailedPrecondition,
            "the " + executable.format + " code was compiled for " + req.key +
                " >= {} and the device reports {}; " + req.advice,
            failureArgs);
      }
      devices.push_back(dev);
      exes.push_back(e.callRef(
          "executable.create", "ri:r",
          {dev, e.constI32(static_cast<int32_t>(plan.moduleExecutable[k]))}));
    }
    // Segments: runs of dispatches on one executable's device, each
    // recorded into its own command buffer (barriers between two devices are
    // the semaphore between their submissions).
    struct Segment {
      int exe = -1;
      uint16_t cb = 0;
    };
    std::vector<Segment> segments;
    auto beginSegment = [&](int k) {
      Segment s;
      s.exe = k;
      s.cb = e.callRef("command_buffer.create", "ri:r",
                       {devices[k], e.constI32(1)});
      e.call("command_buffer.begin", "r:", {s.cb}, {});
      segments.push_back(s);
    };
    int firstExe = 0;
    for (const dispatch::HostCommand &c : d.commands) {
      if (c.kind == dispatch::HostCommand::Kind::Dispatch) {
        firstExe = plan.exeOf[c.region];
        break;
      }
    }
    beginSegment(firstExe);
    uint16_t noConstants = e.nullRef();
    for (const dispatch::HostCommand &c : d.commands) {
      if (c.kind == dispatch::HostCommand::Kind::Barrier) {
        e.call("command_buffer.execution_barrier", "r:", {segments.back().cb},
               {});
        continue;
      }
      const dispatch::DispatchRegion &r = d.regions[c.region];
      const int k = plan.exeOf[c.region];
      if (segments.back().exe != k) {
        e.call("command_buffer.end", "r:", {segments.back().cb}, {});
        e.writer().SetLocation("node '" + r.loc + "' (" + r.name + ")");
        beginSegment(k);
      }
      const uint16_t cb = segments.back().cb;
      const uint16_t exe = exes[k];
      e.writer().SetLocation("node '" + r.loc + "' (" + r.name + ")");
      // The hal module unpacks at most this many bindings per dispatch.
      constexpr size_t kMaxBindings = dispatch::kMaxRegionBindings;
      if (r.bindings.size() > kMaxBindings) {
        return absl::UnimplementedError(
            "node '" + r.loc + "': dispatch region with " +
            std::to_string(r.bindings.size()) +
            " bindings (the hal module takes at most " +
            std::to_string(kMaxBindings) + ")");
      }
      std::vector<uint16_t> refs;
      for (const dispatch::Binding &b : r.bindings) {
        refs.push_back(bufferFor(b.tensor));
      }
      for (int64_t count : r.workgroupCount) {
        if (count > INT32_MAX) {
          return absl::UnimplementedError(
              "node '" + r.loc + "': workgroup count " + std::to_string(count) +
              " does not fit the dispatch call");
        }
      }
      e.call("command_buffer.dispatch", "rriiiirr:",
             {cb, exe, e.constI32(plan.ordinalOf[c.region]),
              e.constI32(static_cast<int32_t>(r.workgroupCount[0])),
              e.constI32(static_cast<int32_t>(r.workgroupCount[1])),
              e.constI32(static_cast<int32_t>(r.workgroupCount[2])),
              noConstants, e.refList(refs)},
             {});
    }
    e.writer().SetLocation("submission");
    e.call("command_buffer.end", "r:", {segments.back().cb}, {});
    if (segments.size() == 1) {
      e.call("device.queue.execute_sync", "rr:",
             {devices[segments[0].exe], segments[0].cb}, {});
    } else {
      // Submission i waits for the semaphore to reach i and signals i + 1.
      uint16_t semaphore =
          e.callRef("semaphore.create", "rI:r", {device, e.constI64(0)});
      for (size_t i = 0; i < segments.size(); ++i) {
        uint16_t wait = i == 0 ? e.nullRef() : semaphore;
        e.call("device.queue.execute", "rrIrIr:",
               {devices[segments[i].exe], wait,
                e.constI64(static_cast<int64_t>(i)), semaphore,
                e.constI64(static_cast<int64_t>(i + 1)), segments[i].cb},
               {});
      }
      e.call("semaphore.wait", "rI:",
             {semaphore, e.constI64(static_cast<int64_t>(segments.size()))},
             {});
    }
    if (arenaSize > 0) {
      // The work has completed: later calls may reuse the arena.
      e.globalStoreRef(arena, arenaGlobal);
    }
    std::vector<uint16_t> results;
    for (unsigned t : q.outputs) {
      results.push_back(e.callRef("buffer_view.create", "rIIir:r",
                                  {outputBuffers[t], e.constI64(0),
                                   e.constI64(d.buffers[t].byteSize),
                                   elementTypeReg(v, q, t), shapeOf(v, t)}));
    }
    e.ret(results);
  }
  COMPILER_RETURN_IF_ERROR(e.define(fn, "main"));
  builder.AddExport("main", fn);
  if (arenaSize > 0) {
    // set_arena(buffer): the application supplies the context's arena (at
    // least arena_size bytes, see the module attribute) instead of letting
    // the first call allocate it.
    uint32_t setArena = builder.DeclareFunction("set_arena", "r:");
    FunctionEmitter s(builder);
    uint16_t buffer = s.reg(Bank::kRef);
    s.writer().SetLocation("set_arena");
    uint16_t length = s.reg(Bank::kI64);
    s.call("buffer.length", "r:I", {buffer}, {length});
    uint16_t needed = s.constI64(arenaSize);
    uint16_t fits = s.reg(Bank::kI32);
    s.writer().Op(Opcode::kCmpGeI64S);
    s.writer().Reg(fits);
    s.writer().Reg(length);
    s.writer().Reg(needed);
    s.writer().Op(Opcode::kCheckNz);
    s.writer().Reg(fits);
    const std::pair<Bank, uint16_t> failureArgs[] = {{Bank::kI64, length},
                                                     {Bank::kI64, needed}};
    s.writer().FailurePayload(
        osprey::StatusCode::kInvalidArgument,
        "arena buffer of {} bytes is smaller than the {} bytes the module "
        "needs",
        failureArgs);
    s.globalStoreRef(buffer, arenaGlobal);
    s.ret({});
    COMPILER_RETURN_IF_ERROR(s.define(setArena, "set_arena"));
    builder.AddExport("set_arena", setArena);
  }
  vm::BuildOptions options;
  // Large segments (constants, the executable) live after the FlatBuffer, so
  // verifying the FlatBuffer does not walk the weights.
  options.external_threshold = 4096;
  auto bytes = builder.Build(options);
  if (!bytes.ok()) {
    return toAbsl(bytes.status(), "building module '" + moduleName + "'");
  }
  return std::move(*bytes);
}

} // namespace osprey::compiler::vm_backend
