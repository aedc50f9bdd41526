// Loading an .osp file: FlatBuffer verification, semantic checks of every
// table, then the bytecode verifier.
#include "vm/bytecode_module.h"

#include <cstring>
#include <new>
#include <utility>

#include "runtime/base/digest.h"
#include "vm/schema/module_generated.h"
#include "vm/verifier.h"

namespace osprey::vm {

namespace {

namespace fb = ::osprey::vm::schema;

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Module names: [A-Za-z0-9_]+.
bool IsModuleName(const flatbuffers::String* s) {
  if (!s || s->size() == 0 || s->size() > kMaxModuleNameLength) return false;
  for (char c : *s) {
    if (!IsIdentifierChar(c)) return false;
  }
  return true;
}

// Function, export, segment names: [A-Za-z0-9_.]+, no leading/trailing '.'.
bool IsSymbolName(const char* s, size_t length) {
  if (length == 0 || length > kMaxModuleNameLength || s[0] == '.' || s[length - 1] == '.') {
    return false;
  }
  for (size_t i = 0; i < length; ++i) {
    if (!IsIdentifierChar(s[i]) && s[i] != '.') return false;
  }
  return true;
}
bool IsSymbolName(const flatbuffers::String* s) {
  return s && IsSymbolName(s->c_str(), s->size());
}

// Executable formats: [A-Za-z0-9_.-]+.
bool IsFormatName(const flatbuffers::String* s) {
  if (!s || s->size() == 0 || s->size() > 64) return false;
  for (char c : *s) {
    if (!IsIdentifierChar(c) && c != '.' && c != '-') return false;
  }
  return true;
}

template <typename T>
Status AllocateArray(Allocator* allocator, size_t count, T** out) {
  *out = nullptr;
  if (count == 0) return OkStatus();
  if (count > SIZE_MAX / sizeof(T)) return ResourceExhaustedError("array too large");
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(allocator->Allocate(count * sizeof(T), alignof(T) < 16 ? 16 : alignof(T),
                                             &memory));
  T* items = static_cast<T*>(memory);
  for (size_t i = 0; i < count; ++i) new (&items[i]) T();
  *out = items;
  return OkStatus();
}

template <typename T>
void FreeArray(Allocator* allocator, T* items, size_t count) {
  if (!items) return;
  for (size_t i = 0; i < count; ++i) items[i].~T();
  allocator->Free(items);
}

// Resolves a segment's bytes (inline or external) and checks its placement.
Status ResolveSegment(std::span<const uint8_t> file, const flatbuffers::Vector<uint8_t>* data,
                      const fb::ExternalRange* external, uint32_t alignment, const char* what,
                      uint32_t index, const uint8_t** out_data, size_t* out_length) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxSegmentAlignment) {
    return InvalidArgumentError("%s %u has alignment %u; must be a power of two <= %u", what,
                                index, alignment, kMaxSegmentAlignment);
  }
  const uint8_t* bytes = nullptr;
  size_t length = 0;
  if (data && external) {
    return InvalidArgumentError("%s %u has both inline and external data", what, index);
  } else if (data) {
    bytes = data->data();
    length = data->size();
  } else if (external) {
    uint64_t offset = external->offset();
    uint64_t ext_length = external->length();
    if (offset > file.size() || ext_length > file.size() - offset) {
      return InvalidArgumentError(
          "%s %u external range [%llu, +%llu) is outside the %zu-byte file", what, index,
          static_cast<unsigned long long>(offset), static_cast<unsigned long long>(ext_length),
          file.size());
    }
    bytes = file.data() + offset;
    length = size_t(ext_length);
  }
  if (bytes && length > 0) {
    size_t file_offset = size_t(bytes - file.data());
    if (file_offset % alignment != 0) {
      return InvalidArgumentError("%s %u is at file offset %zu, not a multiple of its alignment %u",
                                  what, index, file_offset, alignment);
    }
    if (reinterpret_cast<uintptr_t>(bytes) % alignment != 0) {
      return InvalidArgumentError(
          "%s %u needs %u-byte alignment but the module file is not loaded at a %u-byte "
          "aligned address",
          what, index, alignment, alignment);
    }
  }
  *out_data = bytes;
  *out_length = length;
  return OkStatus();
}

Status LoadSignature(const flatbuffers::String* text, Signature* out) {
  return ParseSignature(text->c_str(), text->size(), out);
}

}  // namespace

BytecodeModuleState::~BytecodeModuleState() {
  for (uint32_t i = 0; i < ref_count; ++i) refs[i].~Ref();
  if (allocator) allocator->Free(storage);
}

BytecodeModule::BytecodeModule(Allocator* allocator, ref_ptr<RefObject> file_owner)
    : Module(ModuleKind::kBytecode), allocator_(allocator), file_owner_(std::move(file_owner)) {}

BytecodeModule::~BytecodeModule() {
  FreeArray(allocator_, functions_, function_count_);
  FreeArray(allocator_, imports_, import_count_);
  FreeArray(allocator_, exports_, export_count_);
  FreeArray(allocator_, rodata_, rodata_count_);
  FreeArray(allocator_, rodata_refs_, rodata_count_);
  FreeArray(allocator_, executables_, executable_count_);
  if (debug_locations_) allocator_->Free(debug_locations_);
}

uint64_t ComputeModuleDigest(std::span<const uint8_t> file, size_t digest_offset) {
  Digest64 digest;
  digest.Update(file.data(), digest_offset);
  digest.UpdateZeros(8);
  digest.Update(file.data() + digest_offset + 8, file.size() - digest_offset - 8);
  return digest.Finish();
}

StatusOr<ref_ptr<BytecodeModule>> BytecodeModule::Load(std::span<const uint8_t> file,
                                                      ref_ptr<RefObject> file_owner,
                                                      Allocator* allocator,
                                                      const LoadOptions& options) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<BytecodeModule> module,
                          MakeRef<BytecodeModule>(allocator, allocator, std::move(file_owner)));
  OSPREY_RETURN_IF_ERROR(module->Initialize(file, options), "loading VM module (%zu bytes)",
                         file.size());
  return module;
}

namespace {

const char kNoDigestHint[] =
    "written by a producer without digests, or the file is damaged; rebuild it, or load it "
    "with integrity checks off";

// Checks ModuleDef.digest against the whole file.
Status CheckModuleDigest(std::span<const uint8_t> file, const fb::ModuleDef* def) {
  if (!def->digest()) return DataLossError("module has no digest (%s)", kNoDigestHint);
  const size_t offset = size_t(reinterpret_cast<const uint8_t*>(def->digest()) - file.data());
  const uint64_t stored = def->digest()->value();
  const uint64_t computed = ComputeModuleDigest(file, offset);
  if (stored != computed) {
    return DataLossError(
        "module digest mismatch: the file records %016llx but its %zu bytes digest to %016llx; "
        "the file is corrupt (damaged in storage or transfer)",
        static_cast<unsigned long long>(stored), file.size(),
        static_cast<unsigned long long>(computed));
  }
  return OkStatus();
}

}  // namespace

Status BytecodeModule::Initialize(std::span<const uint8_t> file, const LoadOptions& options) {
  //===--- Structure ------------------------------------------------------===//
  if (!file.data() || file.size() < 12) {
    return DataLossError("module file is %zu bytes; too small to be an .osp module", file.size());
  }
  if (!flatbuffers::BufferHasIdentifier(file.data(), kModuleFileIdentifier,
                                        /*size_prefixed=*/true)) {
    return DataLossError("not an Osprey VM module: file identifier is not '%s'",
                         kModuleFileIdentifier);
  }
  // The FlatBuffer is size-prefixed so truncation is always detected;
  // external segments may follow it.
  uint64_t fb_size = uint64_t(flatbuffers::GetPrefixedSize(file.data())) + sizeof(uint32_t);
  if (fb_size > file.size()) {
    return DataLossError("module file is truncated: %zu bytes, but its FlatBuffer needs %llu",
                         file.size(), static_cast<unsigned long long>(fb_size));
  }
  if (fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return DataLossError("module FlatBuffer of %llu bytes is too large",
                         static_cast<unsigned long long>(fb_size));
  }
  flatbuffers::Verifier verifier(file.data(), size_t(fb_size), /*max_depth=*/32,
                                 /*max_tables=*/1u << 20);
  if (!fb::VerifySizePrefixedModuleDefBuffer(verifier)) {
    return DataLossError("module FlatBuffer failed structural verification (truncated or "
                         "corrupt file)");
  }
  const fb::ModuleDef* def = fb::GetSizePrefixedModuleDef(file.data());
  def_ = def;
  if (options.integrity == IntegrityCheck::kModule) {
    OSPREY_RETURN_IF_ERROR(CheckModuleDigest(file, def));
  }
  if (def->format_version() != kModuleFormatVersion) {
    return UnimplementedError("module format version %u is not supported (this runtime reads %u)",
                              def->format_version(), kModuleFormatVersion);
  }
  if (!IsModuleName(def->name())) {
    return InvalidArgumentError("module name '%s' is not a valid identifier ([A-Za-z0-9_]+)",
                                def->name()->c_str());
  }
  name_ = def->name()->c_str();
  version_ = def->version();

  //===--- Functions ------------------------------------------------------===//
  constexpr uint32_t kMaxTableSize = 1u << 20;
  auto* functions = def->functions();
  uint32_t function_count = functions ? functions->size() : 0;
  if (function_count > kMaxTableSize) {
    return InvalidArgumentError("module has %u functions (limit %u)", function_count,
                                kMaxTableSize);
  }
  size_t bytecode_size = def->bytecode() ? def->bytecode()->size() : 0;
  const uint8_t* bytecode = def->bytecode() ? def->bytecode()->data() : nullptr;
  OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, function_count, &functions_));
  function_count_ = function_count;
  uint32_t max_code_length = 0;
  for (uint32_t i = 0; i < function_count; ++i) {
    const fb::FunctionDef* f = functions->Get(i);
    FunctionInfo& info = functions_[i];
    if (!IsSymbolName(f->name())) {
      return InvalidArgumentError("function %u has invalid name '%s'", i, f->name()->c_str());
    }
    info.name = f->name()->c_str();
    info.signature_text = f->signature()->c_str();
    OSPREY_RETURN_IF_ERROR(LoadSignature(f->signature(), &info.signature), "function '%s'",
                           info.name);
    uint64_t end = uint64_t(f->bytecode_offset()) + f->bytecode_length();
    if (end > bytecode_size) {
      return InvalidArgumentError(
          "function '%s' bytecode range [%u, +%u) is outside the %zu-byte bytecode", info.name,
          f->bytecode_offset(), f->bytecode_length(), bytecode_size);
    }
    if (f->bytecode_length() == 0) {
      return InvalidArgumentError("function '%s' has no code", info.name);
    }
    info.code = bytecode + f->bytecode_offset();
    info.code_length = f->bytecode_length();
    if (info.code_length > max_code_length) max_code_length = info.code_length;
    info.register_counts[0] = f->i32_register_count();
    info.register_counts[1] = f->i64_register_count();
    info.register_counts[2] = f->f32_register_count();
    info.register_counts[3] = f->f64_register_count();
    info.register_counts[4] = f->ref_register_count();
    for (int b = 0; b < kBankCount; ++b) {
      if (info.signature.arg_bank_counts[b] > info.register_counts[b]) {
        return InvalidArgumentError(
            "function '%s' takes %u %s arguments but has only %u %s registers", info.name,
            unsigned(info.signature.arg_bank_counts[b]), BankName(Bank(b)),
            unsigned(info.register_counts[b]), BankName(Bank(b)));
      }
    }
    // Frame layout: 8-byte banks first, then refs, then 4-byte banks.
    static constexpr int kOrder[kBankCount] = {1, 3, 4, 0, 2};
    static constexpr uint32_t kSizes[kBankCount] = {4, 8, 4, 8, sizeof(Ref)};
    uint32_t offset = 0;
    for (int b : kOrder) {
      info.bank_offsets[b] = offset;
      offset += uint32_t(info.register_counts[b]) * kSizes[b];
    }
    info.register_bytes = (offset + 15u) & ~15u;
  }

  //===--- Imports --------------------------------------------------------===//
  auto* imports = def->imports();
  uint32_t import_count = imports ? imports->size() : 0;
  if (import_count > kMaxTableSize) {
    return InvalidArgumentError("module has %u imports (limit %u)", import_count, kMaxTableSize);
  }
  OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, import_count, &imports_));
  import_count_ = import_count;
  for (uint32_t i = 0; i < import_count; ++i) {
    const fb::ImportDef* imp = imports->Get(i);
    ImportInfo& info = imports_[i];
    const char* full = imp->full_name()->c_str();
    size_t full_length = imp->full_name()->size();
    const char* dot = static_cast<const char*>(memchr(full, '.', full_length));
    size_t module_length = dot ? size_t(dot - full) : 0;
    bool module_ok = module_length > 0;
    for (size_t k = 0; k < module_length; ++k) module_ok = module_ok && IsIdentifierChar(full[k]);
    if (!dot || !module_ok ||
        !IsSymbolName(dot + 1, full_length - module_length - 1)) {
      return InvalidArgumentError("import %u name '%s' is not of the form 'module.function'", i,
                                  full);
    }
    info.full_name = full;
    info.module_name_length = uint32_t(module_length);
    info.signature_text = imp->signature()->c_str();
    OSPREY_RETURN_IF_ERROR(LoadSignature(imp->signature(), &info.signature), "import '%s'",
                           full);
  }

  //===--- Exports --------------------------------------------------------===//
  auto* exports = def->exports();
  uint32_t export_count = exports ? exports->size() : 0;
  if (export_count > kMaxTableSize) {
    return InvalidArgumentError("module has %u exports (limit %u)", export_count, kMaxTableSize);
  }
  OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, export_count, &exports_));
  export_count_ = export_count;
  for (uint32_t i = 0; i < export_count; ++i) {
    const fb::ExportDef* exp = exports->Get(i);
    if (!IsSymbolName(exp->name())) {
      return InvalidArgumentError("export %u has invalid name '%s'", i, exp->name()->c_str());
    }
    if (exp->function_index() >= function_count) {
      return InvalidArgumentError("export '%s' refers to function %u (module has %u)",
                                  exp->name()->c_str(), exp->function_index(), function_count);
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (strcmp(exports_[j].name, exp->name()->c_str()) == 0) {
        return InvalidArgumentError("export name '%s' appears twice", exp->name()->c_str());
      }
    }
    exports_[i].name = exp->name()->c_str();
    exports_[i].function_ordinal = exp->function_index();
    exports_[i].signature = functions_[exp->function_index()].signature_text;
  }

  //===--- Globals and initializer ----------------------------------------===//
  constexpr uint32_t kMaxGlobals = 1u << 16;
  if (const fb::GlobalsDef* g = def->globals()) {
    global_counts_[0] = g->i32_count();
    global_counts_[1] = g->i64_count();
    global_counts_[2] = g->f32_count();
    global_counts_[3] = g->f64_count();
    global_counts_[4] = g->ref_count();
    for (int b = 0; b < kBankCount; ++b) {
      if (global_counts_[b] > kMaxGlobals) {
        return InvalidArgumentError("module declares %u %s globals (limit %u)", global_counts_[b],
                                    BankName(Bank(b)), kMaxGlobals);
      }
    }
  }
  initializer_ = def->initializer();
  if (initializer_ != -1) {
    if (initializer_ < 0 || uint32_t(initializer_) >= function_count) {
      return InvalidArgumentError("initializer refers to function %d (module has %u)",
                                  initializer_, function_count);
    }
    const Signature& sig = functions_[initializer_].signature;
    if (sig.arg_count != 0 || sig.result_count != 0) {
      return InvalidArgumentError("initializer '%s' must have signature ':' (has '%s')",
                                  functions_[initializer_].name,
                                  functions_[initializer_].signature_text);
    }
  }

  //===--- Rodata and executables -----------------------------------------===//
  auto* rodata = def->rodata();
  uint32_t rodata_count = rodata ? rodata->size() : 0;
  if (rodata_count > kMaxTableSize) {
    return InvalidArgumentError("module has %u rodata segments (limit %u)", rodata_count,
                                kMaxTableSize);
  }
  OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, rodata_count, &rodata_));
  OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, rodata_count, &rodata_refs_));
  rodata_count_ = rodata_count;
  for (uint32_t i = 0; i < rodata_count; ++i) {
    const fb::RodataSegmentDef* seg = rodata->Get(i);
    SegmentInfo& info = rodata_[i];
    if (seg->name()) {
      if (!IsSymbolName(seg->name())) {
        return InvalidArgumentError("rodata segment %u has invalid name '%s'", i,
                                    seg->name()->c_str());
      }
      info.name = seg->name()->c_str();
    }
    info.alignment = seg->alignment();
    OSPREY_RETURN_IF_ERROR(ResolveSegment(file, seg->data(), seg->external(), seg->alignment(),
                                          "rodata segment", i, &info.data, &info.length));
    OSPREY_ASSIGN_OR_RETURN(ref_ptr<Buffer> buffer,
                            Buffer::WrapReadOnly(info.data, info.length, file_owner_, allocator_));
    rodata_refs_[i] = Ref::FromRefPtr(std::move(buffer), Buffer::type());
  }
  auto* executables = def->executables();
  uint32_t executable_count = executables ? executables->size() : 0;
  if (executable_count > kMaxTableSize) {
    return InvalidArgumentError("module has %u executables (limit %u)", executable_count,
                                kMaxTableSize);
  }
  OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, executable_count, &executables_));
  executable_count_ = executable_count;
  for (uint32_t i = 0; i < executable_count; ++i) {
    const fb::ExecutableDef* exe = executables->Get(i);
    ExecutableInfo& info = executables_[i];
    if (!IsFormatName(exe->format())) {
      return InvalidArgumentError("executable %u has invalid format '%s'", i,
                                  exe->format()->c_str());
    }
    info.format = exe->format()->c_str();
    if (exe->name()) {
      if (!IsSymbolName(exe->name())) {
        return InvalidArgumentError("executable %u has invalid name '%s'", i,
                                    exe->name()->c_str());
      }
      info.name = exe->name()->c_str();
    }
    info.alignment = exe->alignment();
    OSPREY_RETURN_IF_ERROR(ResolveSegment(file, exe->data(), exe->external(), exe->alignment(),
                                          "executable", i, &info.data, &info.length));
    if (options.integrity == IntegrityCheck::kExecutables) {
      if (!exe->digest()) {
        return DataLossError("executable %u ('%s') has no digest (%s)", i, info.name,
                             kNoDigestHint);
      }
      const uint64_t computed = ComputeDigest64(info.data, info.length);
      if (exe->digest()->value() != computed) {
        return DataLossError(
            "executable %u ('%s') digest mismatch: the file records %016llx but its %zu bytes "
            "digest to %016llx; the code is corrupt",
            i, info.name, static_cast<unsigned long long>(exe->digest()->value()), info.length,
            static_cast<unsigned long long>(computed));
      }
    }
  }

  //===--- Attributes -----------------------------------------------------===//
  if (const auto* attributes = def->attributes()) {
    constexpr uint32_t kMaxAttributes = 256;
    if (attributes->size() > kMaxAttributes) {
      return InvalidArgumentError("module has %u attributes (limit %u)", attributes->size(),
                                  kMaxAttributes);
    }
    for (uint32_t i = 0; i < attributes->size(); ++i) {
      const char* key = attributes->Get(i)->key()->c_str();
      if (key[0] == '\0') return InvalidArgumentError("attribute %u has an empty key", i);
      for (uint32_t k = 0; k < i; ++k) {
        if (strcmp(key, attributes->Get(k)->key()->c_str()) == 0) {
          return InvalidArgumentError("attribute '%s' appears twice", key);
        }
      }
    }
    attributes_ = attributes;
    attribute_count_ = attributes->size();
  }

  //===--- Debug info -----------------------------------------------------===//
  if (const fb::DebugInfoDef* debug = def->debug_info(); debug && debug->functions()) {
    OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, function_count, &debug_locations_));
    for (uint32_t i = 0; i < debug->functions()->size(); ++i) {
      const fb::FunctionDebugDef* fd = debug->functions()->Get(i);
      uint32_t index = fd->function_index();
      if (index >= function_count) {
        return InvalidArgumentError("debug info %u refers to function %u (module has %u)", i,
                                    index, function_count);
      }
      if (debug_locations_[index]) {
        return InvalidArgumentError("debug info for function '%s' appears twice",
                                    functions_[index].name);
      }
      auto* locations = fd->locations();
      if (!locations) continue;
      uint32_t previous = 0;
      for (uint32_t k = 0; k < locations->size(); ++k) {
        uint32_t offset = locations->Get(k)->bytecode_offset();
        if (offset >= functions_[index].code_length || (k > 0 && offset <= previous)) {
          return InvalidArgumentError(
              "debug location %u of function '%s' has offset 0x%x (must be increasing and "
              "inside the function)",
              k, functions_[index].name, offset);
        }
        previous = offset;
      }
      debug_locations_[index] = locations;
    }
  }

  //===--- Bytecode -------------------------------------------------------===//
  if (function_count > 0) {
    uint8_t* scratch = nullptr;
    OSPREY_RETURN_IF_ERROR(AllocateArray(allocator_, (size_t(max_code_length) + 7) / 8, &scratch));
    Status status;
    for (uint32_t i = 0; i < function_count && status.ok(); ++i) {
      status = VerifyFunction(*this, i, scratch);
    }
    allocator_->Free(scratch);
    OSPREY_RETURN_IF_ERROR(std::move(status), "verifying module '%s'", name_);
  }
  return OkStatus();
}

StatusOr<ModuleState*> BytecodeModule::CreateState(Allocator* allocator) {
  OSPREY_ASSIGN_OR_RETURN(BytecodeModuleState * state, allocator->New<BytecodeModuleState>());
  // Layout: i64, f64, refs (8-aligned), then i32, f32.
  size_t n_i32 = global_counts_[0], n_i64 = global_counts_[1], n_f32 = global_counts_[2],
         n_f64 = global_counts_[3], n_ref = global_counts_[4];
  size_t bytes = n_i64 * 8 + n_f64 * 8 + n_ref * sizeof(Ref) + n_i32 * 4 + n_f32 * 4;
  if (bytes > 0) {
    Status status = allocator->AllocateZeroed(bytes, 16, &state->storage);
    if (!status.ok()) {
      allocator->Delete(state);
      return std::move(status).Annotate("allocating globals of module '%s'", name_);
    }
    state->allocator = allocator;
    uint8_t* p = static_cast<uint8_t*>(state->storage);
    state->i64 = reinterpret_cast<int64_t*>(p);
    p += n_i64 * 8;
    state->f64 = reinterpret_cast<double*>(p);
    p += n_f64 * 8;
    state->refs = reinterpret_cast<Ref*>(p);
    for (size_t i = 0; i < n_ref; ++i) new (&state->refs[i]) Ref();
    state->ref_count = uint32_t(n_ref);
    p += n_ref * sizeof(Ref);
    state->i32 = reinterpret_cast<int32_t*>(p);
    p += n_i32 * 4;
    state->f32 = reinterpret_cast<float*>(p);
  }
  return static_cast<ModuleState*>(state);
}

AttributeInfo BytecodeModule::attribute(uint32_t index) const {
  const auto* def = static_cast<const flatbuffers::Vector<flatbuffers::Offset<fb::AttributeDef>>*>(
                        attributes_)
                        ->Get(index);
  return AttributeInfo{def->key()->c_str(), def->value()->c_str()};
}

const char* BytecodeModule::LookupAttribute(const char* key) const {
  for (uint32_t i = 0; i < attribute_count_; ++i) {
    AttributeInfo info = attribute(i);
    if (strcmp(info.key, key) == 0) return info.value;
  }
  return nullptr;
}

const char* BytecodeModule::SourceLocation(uint32_t function_index, uint32_t offset) const {
  if (!debug_locations_ || function_index >= function_count_) return nullptr;
  auto* locations =
      static_cast<const flatbuffers::Vector<flatbuffers::Offset<fb::SourceLocationDef>>*>(
          debug_locations_[function_index]);
  if (!locations || locations->size() == 0) return nullptr;
  // Binary search for the last entry with bytecode_offset <= offset.
  uint32_t lo = 0, hi = locations->size();
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (locations->Get(mid)->bytecode_offset() <= offset) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return nullptr;
  return locations->Get(lo - 1)->location()->c_str();
}

}  // namespace osprey::vm
