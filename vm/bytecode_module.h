// BytecodeModule: a module loaded from an .osp file, fully verified before
// anything can run it.
#ifndef OSPREY_VM_BYTECODE_MODULE_H_
#define OSPREY_VM_BYTECODE_MODULE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "vm/buffer.h"
#include "vm/module.h"
#include "vm/opcodes.h"
#include "vm/signature.h"

namespace osprey::vm {

// The .osp format version this runtime reads (ModuleDef.format_version).
inline constexpr uint32_t kModuleFormatVersion = 1;
// FlatBuffer file identifier of .osp files.
inline constexpr char kModuleFileIdentifier[] = "OSPM";
// Largest alignment a segment or executable may request.
inline constexpr uint32_t kMaxSegmentAlignment = 4096;
// Longest module name (and function, export or segment name) a module may
// declare, in bytes.
inline constexpr size_t kMaxModuleNameLength = 256;

// What the loader checks against the digests the module carries (see
// docs/security.md: they catch accidental corruption, not tampering).
enum class IntegrityCheck : uint8_t {
  // The digest of the whole file (ModuleDef.digest): every byte, weights
  // and code included. The default.
  kModule = 0,
  // Only each executable's digest: the code that will be mapped executable
  // is checked, rodata (weights) is not. For large modules whose load time
  // matters more than bit-exact weights.
  kExecutables = 1,
  // Nothing: for modules executed in place from trusted storage, where
  // reading every byte at load costs too much.
  kNone = 2,
};

struct LoadOptions {
  IntegrityCheck integrity = IntegrityCheck::kModule;
};

// The digest of |file| with the 8 bytes at |digest_offset| (where the
// module stores its own digest) read as zeros.
uint64_t ComputeModuleDigest(std::span<const uint8_t> file, size_t digest_offset);

// A function after loading. Strings and code are borrowed from the file.
struct FunctionInfo {
  const char* name = "";
  const char* signature_text = "";
  Signature signature;
  const uint8_t* code = nullptr;  // Start of the function's bytecode.
  uint32_t code_length = 0;
  uint16_t register_counts[kBankCount] = {};
  // Frame layout: byte offset of each bank's registers from the frame's
  // register area, and the total register area size (16-byte multiple).
  uint32_t bank_offsets[kBankCount] = {};
  uint32_t register_bytes = 0;
};

struct ImportInfo {
  const char* full_name = "";   // "module.function"
  uint32_t module_name_length = 0;  // Characters before the first '.'.
  const char* signature_text = "";
  Signature signature;
};

struct SegmentInfo {
  const char* name = "";  // "" when unnamed.
  const uint8_t* data = nullptr;
  size_t length = 0;
  uint32_t alignment = 1;
};

struct ExecutableInfo {
  const char* format = "";  // e.g. "elf-x86_64"
  const char* name = "";
  const uint8_t* data = nullptr;
  size_t length = 0;
  uint32_t alignment = 1;
};

// A reflection attribute of a module (ModuleDef.attributes), e.g. the
// compiler's "arena_size". Strings are borrowed from the file.
struct AttributeInfo {
  const char* key = "";
  const char* value = "";
};

// The per-context state of a bytecode module: its globals, zeroed (refs
// null) at creation. Owned by the context.
struct BytecodeModuleState final : public ModuleState {
  ~BytecodeModuleState() override;
  Allocator* allocator = nullptr;
  void* storage = nullptr;  // One allocation holding all banks.
  int32_t* i32 = nullptr;
  int64_t* i64 = nullptr;
  float* f32 = nullptr;
  double* f64 = nullptr;
  Ref* refs = nullptr;
  uint32_t ref_count = 0;
};

// Immutable and thread-safe after Load.
class BytecodeModule final : public Module {
 public:
  // Loads and verifies the module file |file|. The bytes are used in place
  // (zero-copy): they must stay valid and unchanged while the module or any
  // rodata ref from it lives. If |file_owner| is non-null it is retained for
  // that long (e.g. a mapped-file object); otherwise the caller guarantees
  // the lifetime. Segments requesting N-byte alignment need |file| to start
  // at an N-byte aligned address.
  // Digests are checked as |options| says, before anything else looks at
  // the contents.
  // Errors: DATA_LOSS for a file that is not a well-formed .osp FlatBuffer
  // (truncated, corrupt, wrong identifier), a digest that does not match or
  // is missing while checked; INVALID_ARGUMENT for a
  // well-formed file that breaks a semantic rule (bad offsets, counts,
  // alignment, names, signatures, references, or bytecode rejected by the
  // verifier) with the function and offset; UNIMPLEMENTED for another
  // format version; RESOURCE_EXHAUSTED if |allocator| runs out.
  static StatusOr<ref_ptr<BytecodeModule>> Load(std::span<const uint8_t> file,
                                                ref_ptr<RefObject> file_owner,
                                                Allocator* allocator,
                                                const LoadOptions& options = {});

  // Module interface.
  const char* name() const override { return name_; }
  uint32_t export_count() const override { return export_count_; }
  ExportInfo export_info(uint32_t ordinal) const override { return exports_[ordinal]; }
  StatusOr<ModuleState*> CreateState(Allocator* allocator) override;

  uint32_t version() const { return version_; }

  uint32_t function_count() const { return function_count_; }
  const FunctionInfo& function(uint32_t index) const { return functions_[index]; }

  uint32_t import_count() const { return import_count_; }
  const ImportInfo& import(uint32_t index) const { return imports_[index]; }

  uint32_t rodata_count() const { return rodata_count_; }
  const SegmentInfo& rodata(uint32_t index) const { return rodata_[index]; }
  // The read-only vm.buffer viewing segment |index| (what const.ref.rodata
  // yields). Borrowed: valid while the module lives.
  const Ref& rodata_ref(uint32_t index) const { return rodata_refs_[index]; }

  uint32_t executable_count() const { return executable_count_; }
  const ExecutableInfo& executable(uint32_t index) const { return executables_[index]; }

  uint32_t global_count(Bank bank) const { return global_counts_[int(bank)]; }
  // Function run once per context at creation, or -1.
  int32_t initializer() const { return initializer_; }

  // Reflection attributes (keys unique, at most 256).
  uint32_t attribute_count() const { return attribute_count_; }
  AttributeInfo attribute(uint32_t index) const;
  // The value of attribute |key|, or null when the module has none.
  const char* LookupAttribute(const char* key) const;

  // The source location recorded for |offset| in function |function_index|
  // (the last entry at or before |offset|), or null when there is none.
  const char* SourceLocation(uint32_t function_index, uint32_t offset) const;

  // Use Load(); public only for MakeRef.
  BytecodeModule(Allocator* allocator, ref_ptr<RefObject> file_owner);
  ~BytecodeModule() override;

 private:
  Status Initialize(std::span<const uint8_t> file, const LoadOptions& options);

  Allocator* allocator_;
  ref_ptr<RefObject> file_owner_;
  const void* def_ = nullptr;  // schema::ModuleDef inside the file.
  const char* name_ = "";
  uint32_t version_ = 0;
  FunctionInfo* functions_ = nullptr;
  uint32_t function_count_ = 0;
  ImportInfo* imports_ = nullptr;
  uint32_t import_count_ = 0;
  ExportInfo* exports_ = nullptr;
  uint32_t export_count_ = 0;
  SegmentInfo* rodata_ = nullptr;
  Ref* rodata_refs_ = nullptr;
  uint32_t rodata_count_ = 0;
  ExecutableInfo* executables_ = nullptr;
  uint32_t executable_count_ = 0;
  uint32_t global_counts_[kBankCount] = {};
  int32_t initializer_ = -1;
  const void* attributes_ = nullptr;  // Vector of schema::AttributeDef.
  uint32_t attribute_count_ = 0;
  // Per function: its schema::FunctionDebugDef locations vector, or null.
  const void** debug_locations_ = nullptr;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_BYTECODE_MODULE_H_
