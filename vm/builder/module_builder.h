// Host-side construction of .osp module files: a bytecode writer for one
// function and a ModuleBuilder that emits the FlatBuffer (used by the
// assembler and the compiler's VM backend). Not for device builds.
#ifndef OSPREY_VM_BUILDER_MODULE_BUILDER_H_
#define OSPREY_VM_BUILDER_MODULE_BUILDER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/status.h"
#include "vm/opcodes.h"

namespace osprey::vm {

// Emits the bytecode of one function. Operands are appended in the order
// the opcode table lists them (see vm/opcodes.h); labels give forward
// branches. Not thread-safe.
class BytecodeWriter {
 public:
  struct Label {
    int id = -1;
  };

  Label NewLabel();
  // Binds |label| to the current offset. INVALID_ARGUMENT if bound twice.
  Status Bind(Label label);

  void Op(Opcode opcode) { U8(uint8_t(opcode)); }
  void Reg(uint16_t index) { U16(index); }
  void U8(uint8_t v) { code_.push_back(v); }
  void U16(uint16_t v) { Append(&v, 2); }
  void U32(uint32_t v) { Append(&v, 4); }
  void I32(int32_t v) { Append(&v, 4); }
  void I64(int64_t v) { Append(&v, 8); }
  void F32(float v) { Append(&v, 4); }
  void F64(double v) { Append(&v, 8); }
  void Bytes(const void* data, size_t length) { Append(data, length); }
  // A 4-byte branch target patched when |label| is bound.
  void Target(Label label);
  // A register list: count byte then indices.
  void RegList(std::span<const uint16_t> registers);
  // A failure payload (fail / check.*): code, message, typed registers.
  void FailurePayload(StatusCode code, const std::string& message,
                      std::span<const std::pair<Bank, uint16_t>> args);

  uint32_t offset() const { return uint32_t(code_.size()); }
  // Records that code from the current offset comes from |location|.
  void SetLocation(std::string location);

  // Resolves labels and returns the code. INVALID_ARGUMENT naming an
  // unbound label.
  StatusOr<std::vector<uint8_t>> Finish();
  const std::vector<std::pair<uint32_t, std::string>>& locations() const { return locations_; }

 private:
  void Append(const void* data, size_t length);

  std::vector<uint8_t> code_;
  std::vector<int64_t> label_offsets_;                   // -1 while unbound.
  std::vector<std::pair<uint32_t, int>> fixups_;          // (code offset, label)
  std::vector<std::pair<uint32_t, std::string>> locations_;
};

struct BuildOptions {
  // Rodata segments and executables of at least this many bytes are stored
  // after the FlatBuffer at aligned file offsets instead of inline. Those
  // aligned to more than 32 bytes (the FlatBuffers limit) always are.
  size_t external_threshold = SIZE_MAX;
  // Write the digests of the file and of each executable (ModuleDef.digest,
  // ExecutableDef.digest), which loaders check by default. Off only to make
  // modules as older producers wrote them.
  bool digests = true;
};

// Collects a module's tables and serializes them. Indices returned by the
// Add*/Declare* methods are what bytecode operands use. Not thread-safe.
class ModuleBuilder {
 public:
  ModuleBuilder() = default;
  explicit ModuleBuilder(std::string name, uint32_t version = 0)
      : name_(std::move(name)), version_(version) {}

  void set_name(std::string name) { name_ = std::move(name); }
  void set_version(uint32_t version) { version_ = version; }
  // Overrides the format version written (tests of version checks).
  void set_format_version(uint32_t version) { format_version_ = version; }
  const std::string& name() const { return name_; }

  uint32_t AddImport(std::string full_name, std::string signature);
  // Declares a function so calls can refer to it before its code exists.
  uint32_t DeclareFunction(std::string name, std::string signature);
  // Sets the code, register counts (per Bank) and source locations of a
  // declared function.
  void DefineFunction(uint32_t index, std::vector<uint8_t> code,
                      std::array<uint16_t, kBankCount> register_counts,
                      std::vector<std::pair<uint32_t, std::string>> locations = {});
  void AddExport(std::string name, uint32_t function_index);
  uint32_t AddRodata(std::string name, std::vector<uint8_t> data, uint32_t alignment = 16);
  uint32_t AddExecutable(std::string format, std::string name, std::vector<uint8_t> data,
                         uint32_t alignment = 16);
  void SetGlobalCount(Bank bank, uint32_t count) { global_counts_[int(bank)] = count; }
  void SetInitializer(int32_t function_index) { initializer_ = function_index; }
  // Adds (or replaces) the reflection attribute |key| (see
  // BytecodeModule::LookupAttribute).
  void SetAttribute(std::string key, std::string value);

  // Lookups by name (the assembler resolves symbols with these).
  std::optional<uint32_t> FindFunction(const std::string& name) const;
  std::optional<uint32_t> FindImport(const std::string& full_name) const;
  std::optional<uint32_t> FindRodata(const std::string& name) const;
  const std::string& function_signature(uint32_t index) const { return functions_[index].signature; }
  const std::string& import_signature(uint32_t index) const { return imports_[index].signature; }
  uint32_t function_count() const { return uint32_t(functions_.size()); }
  uint32_t global_count(Bank bank) const { return global_counts_[int(bank)]; }

  // Serializes the module. The result is a complete .osp file; load it from
  // memory aligned to the largest segment alignment (see AlignedBytes).
  // INVALID_ARGUMENT for a function declared but never defined.
  StatusOr<std::vector<uint8_t>> Build(const BuildOptions& options = {}) const;

 private:
  struct Import {
    std::string full_name, signature;
  };
  struct Function {
    std::string name, signature;
    std::vector<uint8_t> code;
    std::array<uint16_t, kBankCount> register_counts{};
    std::vector<std::pair<uint32_t, std::string>> locations;
    bool defined = false;
  };
  struct Segment {
    std::string name, format;
    std::vector<uint8_t> data;
    uint32_t alignment = 16;
  };
  StatusOr<std::vector<uint8_t>> Serialize(const BuildOptions& options,
                                           const std::vector<uint64_t>& external_offsets) const;
  // Writes the module digest into the finished |file|.
  StatusOr<std::vector<uint8_t>> Seal(std::vector<uint8_t> file,
                                      const BuildOptions& options) const;

  std::string name_;
  uint32_t version_ = 0;
  uint32_t format_version_ = 1;
  std::vector<Import> imports_;
  std::vector<Function> functions_;
  std::vector<std::pair<std::string, uint32_t>> exports_;
  std::vector<Segment> rodata_;
  std::vector<Segment> executables_;
  std::array<uint32_t, kBankCount> global_counts_{};
  int32_t initializer_ = -1;
  std::vector<std::pair<std::string, std::string>> attributes_;
};

// Bytes at a 4096-byte aligned address (module files must be loaded at an
// address aligned to their largest segment alignment).
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(std::span<const uint8_t> bytes);
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_BUILDER_MODULE_BUILDER_H_
