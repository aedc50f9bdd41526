// Builds the modules of the runtime end-to-end tests: "dynamic_add" from
// textual assembly, and with the VM module builder "simple_add", which drives the HAL module to dispatch the vector_add
// dispatch library (compiled from C, embedded as an executable) and also
// writes truncated and corrupted copies for the bad-input tests.
//
//   make_test_modules --elf=vector_add_x86_64.so --format=elf-x86_64
//                     --asm=dynamic_add.vmasm --out_dir=DIR
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "drivers/npu/builder/stream_builder.h"
#include "hal/types.h"
#include "tools/common/flags.h"
#include "tools/common/npy.h"
#include "vm/asm/assembler.h"
#include "vm/builder/module_builder.h"
#include "vm/opcodes.h"

namespace osprey {
namespace {

using vm::Bank;
using vm::BytecodeWriter;
using vm::ModuleBuilder;
using vm::Opcode;

// Elements of the vectors simple_add works on.
constexpr int64_t kLength = 4;

// Registers of one function, named per bank; indices are what the
// bytecode encodes.
struct Regs {
  uint16_t next[vm::kBankCount] = {};
  uint16_t New(Bank bank) { return next[int(bank)]++; }
  std::array<uint16_t, vm::kBankCount> counts() const {
    std::array<uint16_t, vm::kBankCount> c{};
    for (int i = 0; i < vm::kBankCount; ++i) c[i] = next[i];
    return c;
  }
};

// Thin emitter over BytecodeWriter with one method per instruction used.
class Emitter {
 public:
  explicit Emitter(ModuleBuilder& builder) : builder_(builder) {}

  void ConstI32(uint16_t dst, int32_t value) {
    w_.Op(Opcode::kConstI32);
    w_.Reg(dst);
    w_.I32(value);
  }
  void ConstI64(uint16_t dst, int64_t value) {
    w_.Op(Opcode::kConstI64);
    w_.Reg(dst);
    w_.I64(value);
  }
  void Rodata(uint16_t dst, uint32_t segment) {
    w_.Op(Opcode::kConstRefRodata);
    w_.Reg(dst);
    w_.U32(segment);
  }
  // Calls import |name| (declared on first use with |signature|).
  void Call(const std::string& name, const std::string& signature,
            std::vector<uint16_t> args, std::vector<uint16_t> results) {
    auto index = builder_.FindImport(name);
    if (!index) index = builder_.AddImport(name, signature);
    w_.Op(Opcode::kCallImport);
    w_.U32(*index);
    w_.RegList(args);
    w_.RegList(results);
  }
  void ListAlloc(uint16_t dst, uint16_t capacity) {
    w_.Op(Opcode::kListAlloc);
    w_.Reg(dst);
    w_.Reg(capacity);
  }
  void ListResize(uint16_t list, uint16_t size) {
    w_.Op(Opcode::kListResize);
    w_.Reg(list);
    w_.Reg(size);
  }
  void ListSetRef(uint16_t list, uint16_t index, uint16_t value) {
    w_.Op(Opcode::kListSetRef);
    w_.Reg(list);
    w_.Reg(index);
    w_.Reg(value);
  }
  void ListSetI32(uint16_t list, uint16_t index, uint16_t value) {
    w_.Op(Opcode::kListSetI32);
    w_.Reg(list);
    w_.Reg(index);
    w_.Reg(value);
  }
  void BitcastF32ToI32(uint16_t dst, uint16_t src) {
    w_.Op(Opcode::kBitcastF32I32);
    w_.Reg(dst);
    w_.Reg(src);
  }
  void Return(std::vector<uint16_t> values) {
    w_.Op(Opcode::kReturn);
    w_.RegList(values);
  }

  Status Define(uint32_t function, const Regs& regs) {
    OSPREY_ASSIGN_OR_RETURN(auto code, w_.Finish());
    builder_.DefineFunction(function, std::move(code), regs.counts());
    w_ = BytecodeWriter();
    return OkStatus();
  }

 private:
  ModuleBuilder& builder_;
  BytecodeWriter w_;
};

std::vector<uint8_t> I64Bytes(std::initializer_list<int64_t> values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}
std::vector<uint8_t> Text(const char* text) {
  return std::vector<uint8_t>(text, text + std::strlen(text));
}

constexpr int32_t kF32 = int32_t(hal::ElementType::kFloat32);
constexpr int32_t kMemoryType =
    int32_t(hal::MemoryType::kHostLocal | hal::MemoryType::kDeviceVisible);
constexpr int32_t kUsage = int32_t(hal::BufferUsage::kDefault);

struct Common {
  uint16_t shape, device, allocator, executable, command_buffer, f32_type;
};

// Loads the rodata and HAL objects every function needs: the 4xf32 shape,
// the device, its allocator, the executable and a command buffer (begun).
Common EmitPrologue(Emitter& e, Regs& r) {
  Common c;
  c.shape = r.New(Bank::kRef);
  e.Rodata(c.shape, 0);
  c.f32_type = r.New(Bank::kI32);
  e.ConstI32(c.f32_type, kF32);
  c.device = r.New(Bank::kRef);
  e.Call("hal.device", ":r", {}, {c.device});
  c.allocator = r.New(Bank::kRef);
  e.Call("hal.device.allocator", "r:r", {c.device}, {c.allocator});
  c.executable = r.New(Bank::kRef);
  const uint16_t zero = r.New(Bank::kI32);
  e.ConstI32(zero, 0);
  e.Call("hal.executable.create", "ri:r", {c.device, zero}, {c.executable});
  c.command_buffer = r.New(Bank::kRef);
  const uint16_t one_shot = r.New(Bank::kI32);
  e.ConstI32(one_shot, 1);
  e.Call("hal.command_buffer.create", "ri:r", {c.device, one_shot}, {c.command_buffer});
  e.Call("hal.command_buffer.begin", "r:", {c.command_buffer}, {});
  return c;
}

void EmitAssert(Emitter& e, Regs& r, const Common& c, uint16_t view, uint32_t name_segment) {
  const uint16_t name = r.New(Bank::kRef);
  e.Rodata(name, name_segment);
  e.Call("hal.buffer_view.assert", "rrir:", {view, name, c.f32_type, c.shape}, {});
}

uint16_t EmitAllocate(Emitter& e, Regs& r, const Common& c, uint16_t length) {
  const uint16_t type = r.New(Bank::kI32), usage = r.New(Bank::kI32), access = r.New(Bank::kI32);
  e.ConstI32(type, kMemoryType);
  e.ConstI32(usage, kUsage);
  e.ConstI32(access, 0);
  const uint16_t buffer = r.New(Bank::kRef);
  e.Call("hal.allocator.allocate", "riiiI:r", {c.allocator, type, usage, access, length},
         {buffer});
  return buffer;
}

// Ends, submits and waits for the command buffer, then wraps |buffer| as
// the 4xf32 result view and returns it.
void EmitEpilogue(Emitter& e, Regs& r, const Common& c, uint16_t buffer, uint16_t length) {
  e.Call("hal.command_buffer.end", "r:", {c.command_buffer}, {});
  e.Call("hal.device.queue.execute_sync", "rr:", {c.device, c.command_buffer}, {});
  const uint16_t offset = r.New(Bank::kI64);
  e.ConstI64(offset, 0);
  const uint16_t view = r.New(Bank::kRef);
  e.Call("hal.buffer_view.create", "rIIir:r", {buffer, offset, length, c.f32_type, c.shape},
         {view});
  e.Return({view});
}

// main(a: 4xf32, b: 4xf32) -> 4xf32 = a + b, dispatched as vector_add's
// "add" export with constants [4] read from rodata.
Status BuildMain(ModuleBuilder& builder, Emitter& e) {
  const uint32_t fn = builder.DeclareFunction("main", "rr:r");
  Regs r;
  const uint16_t a = r.New(Bank::kRef), b = r.New(Bank::kRef);
  Common c = EmitPrologue(e, r);
  EmitAssert(e, r, c, a, 1);
  EmitAssert(e, r, c, b, 2);
  const uint16_t length = r.New(Bank::kI64);
  e.ConstI64(length, kLength * 4);
  const uint16_t result = EmitAllocate(e, r, c, length);

  const uint16_t bindings = r.New(Bank::kRef);
  const uint16_t three = r.New(Bank::kI32), index = r.New(Bank::kI32);
  e.ConstI32(three, 3);
  e.ListAlloc(bindings, three);
  e.ListResize(bindings, three);
  const uint16_t refs[3] = {a, b, result};
  for (int i = 0; i < 3; ++i) {
    e.ConstI32(index, i);
    e.ListSetRef(bindings, index, refs[i]);
  }
  const uint16_t constants = r.New(Bank::kRef);
  e.Rodata(constants, 3);
  const uint16_t ordinal = r.New(Bank::kI32), one = r.New(Bank::kI32);
  e.ConstI32(ordinal, 0);
  e.ConstI32(one, 1);
  e.Call("hal.command_buffer.dispatch", "rriiiirr:",
         {c.command_buffer, c.executable, ordinal, one, one, one, constants, bindings}, {});
  EmitEpilogue(e, r, c, result, length);
  OSPREY_RETURN_IF_ERROR(e.Define(fn, r));
  builder.AddExport("main", fn);
  return OkStatus();
}

// scale(x: 4xf32, factor: f32) -> 4xf32 = x * factor: copies x into a new
// buffer, then runs vector_add's in-place "scale" export on the copy with
// constants [4, bits(factor)] built in a vm.list.
Status BuildScale(ModuleBuilder& builder, Emitter& e) {
  const uint32_t fn = builder.DeclareFunction("scale", "rf:r");
  Regs r;
  const uint16_t x = r.New(Bank::kRef);
  const uint16_t factor = r.New(Bank::kF32);
  Common c = EmitPrologue(e, r);
  EmitAssert(e, r, c, x, 4);
  const uint16_t length = r.New(Bank::kI64);
  e.ConstI64(length, kLength * 4);
  const uint16_t result = EmitAllocate(e, r, c, length);

  const uint16_t source = r.New(Bank::kRef);
  e.Call("hal.buffer_view.buffer", "r:r", {x}, {source});
  const uint16_t zero64 = r.New(Bank::kI64);
  e.ConstI64(zero64, 0);
  e.Call("hal.command_buffer.copy_buffer", "rrIrII:",
         {c.command_buffer, source, zero64, result, zero64, length}, {});
  e.Call("hal.command_buffer.execution_barrier", "r:", {c.command_buffer}, {});

  const uint16_t constants = r.New(Bank::kRef);
  const uint16_t two = r.New(Bank::kI32), index = r.New(Bank::kI32), value = r.New(Bank::kI32);
  e.ConstI32(two, 2);
  e.ListAlloc(constants, two);
  e.ListResize(constants, two);
  e.ConstI32(index, 0);
  e.ConstI32(value, int32_t(kLength));
  e.ListSetI32(constants, index, value);
  e.ConstI32(index, 1);
  e.BitcastF32ToI32(value, factor);
  e.ListSetI32(constants, index, value);

  const uint16_t bindings = r.New(Bank::kRef), one = r.New(Bank::kI32);
  e.ConstI32(one, 1);
  e.ListAlloc(bindings, one);
  e.ListResize(bindings, one);
  e.ConstI32(index, 0);
  e.ListSetRef(bindings, index, result);
  // Export "scale" looked up by name rather than by ordinal.
  const uint16_t export_name = r.New(Bank::kRef), ordinal = r.New(Bank::kI32);
  e.Rodata(export_name, 5);
  e.Call("hal.executable.lookup_export", "rr:i", {c.executable, export_name}, {ordinal});
  e.Call("hal.command_buffer.dispatch", "rriiiirr:",
         {c.command_buffer, c.executable, ordinal, one, one, one, constants, bindings}, {});
  EmitEpilogue(e, r, c, result, length);
  OSPREY_RETURN_IF_ERROR(e.Define(fn, r));
  builder.AddExport("scale", fn);
  return OkStatus();
}

Status WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!file) return DataLossError("cannot write '%s'", path.c_str());
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> BuildSimpleAdd(const std::vector<uint8_t>& elf,
                                              const std::string& format) {
  ModuleBuilder builder("simple_add", 1);
  builder.AddRodata("shape_4", I64Bytes({kLength}), 8);
  builder.AddRodata("name_a", Text("input 'a'"), 1);
  builder.AddRodata("name_b", Text("input 'b'"), 1);
  {
    std::vector<uint8_t> constants(4);
    const uint32_t n = uint32_t(kLength);
    std::memcpy(constants.data(), &n, 4);
    builder.AddRodata("add_constants", constants, 4);
  }
  builder.AddRodata("name_x", Text("input 'x'"), 1);
  builder.AddRodata("scale_export", Text("scale"), 1);
  builder.AddExecutable(format, "vector_add", elf, 16);
  Emitter emitter(builder);
  OSPREY_RETURN_IF_ERROR(BuildMain(builder, emitter), "building main");
  OSPREY_RETURN_IF_ERROR(BuildScale(builder, emitter), "building scale");
  return builder.Build();
}

// A module whose only function starts with an opcode that does not exist.
StatusOr<std::vector<uint8_t>> BuildBadBytecode() {
  ModuleBuilder builder("bad_code", 1);
  const uint32_t fn = builder.DeclareFunction("main", ":");
  BytecodeWriter w;
  w.U8(0xFE);
  w.Op(Opcode::kReturn);
  w.RegList({});
  OSPREY_ASSIGN_OR_RETURN(auto code, w.Finish());
  builder.DefineFunction(fn, std::move(code), {});
  builder.AddExport("main", fn);
  return builder.Build();
}

// Assembles the textual module at |asm_path| with |elf| appended as its
// executable 0 (the text cannot name a file, so the bytes go in as hex).
StatusOr<std::vector<uint8_t>> AssembleWithExecutable(const std::string& asm_path,
                                                      const std::vector<uint8_t>& elf,
                                                      const std::string& format,
                                                      const char* name = "vector_add") {
  OSPREY_ASSIGN_OR_RETURN(auto text_bytes, tools::ReadFileBytes(asm_path));
  std::string text(text_bytes.begin(), text_bytes.end());
  text += "\nexecutable \"" + format + "\" @" + name + " align 16 hex \"";
  static const char kHex[] = "0123456789abcdef";
  for (uint8_t byte : elf) {
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  text += "\"\n";
  return vm::AssembleModule(text);
}

// The npu-v1 executable of cpu_npu.vmasm: one export "relu2" that reads 64
// int8 values from binding 0 and writes clamp(2 * max(x, 0)) to binding 1.
std::vector<uint8_t> Relu2NpuBlob() {
  namespace npu = drivers::npu::builder;
  npu::StreamBuilder stream;
  stream.DmaRead(0, 0, 0, 64).Op(NPU_OP_SYNC);
  stream.Ifm(0, 1, 1, 64).Ofm(64, 1, 1, 64);
  stream.Set(NPU_REG_OUT_MULT, 1 << 30).Set(NPU_REG_OUT_SHIFT, 2).Op(NPU_OP_ACT_RELU);
  stream.Op(NPU_OP_SYNC).DmaWrite(1, 0, 64, 64);
  npu::BlobExport relu2;
  relu2.name = "relu2";
  relu2.words = stream.Finish();
  relu2.relocations = stream.relocations();
  relu2.binding_count = 2;
  relu2.binding_write_mask = 0x2;
  return npu::BuildBlob({relu2});
}

Status Run(const std::string& elf_path, const std::string& format, const std::string& asm_path,
           const std::string& npu_asm_path, const std::string& out_dir) {
  if (!npu_asm_path.empty()) {
    OSPREY_ASSIGN_OR_RETURN(auto assembled,
                            AssembleWithExecutable(npu_asm_path, Relu2NpuBlob(), "npu-v1", "relu2"),
                            "assembling '%s'", npu_asm_path.c_str());
    OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/cpu_npu.osp", assembled));
  }
  OSPREY_ASSIGN_OR_RETURN(auto elf, tools::ReadFileBytes(elf_path));
  if (!asm_path.empty()) {
    OSPREY_ASSIGN_OR_RETURN(auto assembled, AssembleWithExecutable(asm_path, elf, format),
                            "assembling '%s'", asm_path.c_str());
    OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/dynamic_add.osp", assembled));
  }
  OSPREY_ASSIGN_OR_RETURN(auto bytes, BuildSimpleAdd(elf, format), "building simple_add");
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/simple_add.osp", bytes));

  // Bad inputs, each caught by a different layer:
  // the first 60% of the file (FlatBuffer verification),
  std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + bytes.size() * 6 / 10);
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/simple_add_truncated.osp", truncated));
  // a root table offset (after the 4-byte size prefix) pointing far
  // outside the file (FlatBuffer verification),
  std::vector<uint8_t> corrupt = bytes;
  const uint32_t bad_root = 0x7FFFFF00u;
  std::memcpy(corrupt.data() + 4, &bad_root, 4);
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/simple_add_corrupt.osp", corrupt));
  // an invalid opcode (bytecode verifier),
  OSPREY_ASSIGN_OR_RETURN(auto bad_code, BuildBadBytecode(), "building bad_code");
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/bad_bytecode.osp", bad_code));
  // an executable whose ELF header is overwritten (the executable loader,
  // when the first call prepares it),
  std::vector<uint8_t> bad_elf = elf;
  for (size_t i = 16; i < 64 && i < bad_elf.size(); ++i) bad_elf[i] = uint8_t(0xA5 ^ i);
  OSPREY_ASSIGN_OR_RETURN(auto bad_executable, BuildSimpleAdd(bad_elf, format),
                          "building simple_add with a bad executable");
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/bad_executable.osp", bad_executable));
  // a flipped bit in the executable's code (the digests: the whole file,
  // or the executable alone),
  std::vector<uint8_t> flipped = bytes;
  const auto code = std::search(flipped.begin(), flipped.end(), elf.begin(), elf.end());
  if (code == flipped.end()) return InternalError("the executable is not stored inline");
  code[elf.size() / 2] ^= 0x10;
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/simple_add_flipped_code.osp", flipped));
  // and a file that is not a module at all.
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/not_a_module.osp", Text("hello, world\n")));

  // Well-formed modules whose code asks for too much: a list of 2^31-1
  // elements (32 GiB), and a loop that never ends.
  OSPREY_ASSIGN_OR_RETURN(auto huge_list, vm::AssembleModule(R"(
module @huge_list version 1
func @main() -> (i32) regs(i=2, r=1) export {
  const.i32 %i0, 0
  list.alloc %r0, %i0
  const.i32 %i1, 2147483647
  list.resize %r0, %i1
  list.size %i0, %r0
  return %i0
}
)"));
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/huge_list.osp", huge_list));
  OSPREY_ASSIGN_OR_RETURN(auto spin, vm::AssembleModule(R"(
module @spin version 1
func @main() regs(i=1) export {
^top:
  add.imm.i32 %i0, %i0, 1
  br ^top
}
)"));
  OSPREY_RETURN_IF_ERROR(WriteFile(out_dir + "/spin.osp", spin));
  return OkStatus();
}

}  // namespace
}  // namespace osprey

int main(int argc, char** argv) {
  std::string elf, format = "elf-x86_64", asm_path, npu_asm_path, out_dir = ".";
  osprey::tools::FlagParser parser("make_test_modules --elf=FILE --format=FMT --out_dir=DIR");
  parser.AddString("elf", &elf, "Dispatch library to embed.");
  parser.AddString("format", &format, "Executable format of --elf.");
  parser.AddString("asm", &asm_path, "Textual module to assemble into dynamic_add.osp.");
  parser.AddString("npu_asm", &npu_asm_path,
                   "Textual module to assemble with an npu-v1 executable into cpu_npu.osp.");
  parser.AddString("out_dir", &out_dir, "Where to write the modules.");
  osprey::Status status = parser.Parse(&argc, argv);
  if (status.ok()) status = osprey::Run(elf, format, asm_path, npu_asm_path, out_dir);
  if (!status.ok()) {
    char text[2048];
    status.ToString(text, sizeof(text));
    std::fprintf(stderr, "make_test_modules: %s\n", text);
    return 1;
  }
  return 0;
}
