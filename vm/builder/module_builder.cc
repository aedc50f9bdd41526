// BytecodeWriter and ModuleBuilder: FlatBuffer serialization of modules.
#include "vm/builder/module_builder.h"

#include <cstdlib>
#include <cstring>

#include "runtime/base/digest.h"
#include "vm/bytecode_module.h"
#include "vm/schema/module_generated.h"

namespace osprey::vm {

namespace fb = ::osprey::vm::schema;

namespace {
// Inline vectors can only be aligned up to FLATBUFFERS_MAX_ALIGNMENT inside
// the buffer; larger alignments always go after it.
template <typename Segment>
bool IsExternal(const Segment& s, const BuildOptions& options) {
  if (s.data.empty()) return false;
  return s.data.size() >= options.external_threshold || s.alignment > FLATBUFFERS_MAX_ALIGNMENT;
}
}  // namespace

//===----------------------------------------------------------------------===//
// BytecodeWriter
//===----------------------------------------------------------------------===//

void BytecodeWriter::Append(const void* data, size_t length) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  code_.insert(code_.end(), p, p + length);
}

BytecodeWriter::Label BytecodeWriter::NewLabel() {
  label_offsets_.push_back(-1);
  return Label{int(label_offsets_.size() - 1)};
}

Status BytecodeWriter::Bind(Label label) {
  if (label.id < 0 || size_t(label.id) >= label_offsets_.size()) {
    return InvalidArgumentError("binding an unknown label");
  }
  if (label_offsets_[label.id] >= 0) return InvalidArgumentError("label bound twice");
  label_offsets_[label.id] = int64_t(code_.size());
  return OkStatus();
}

void BytecodeWriter::Target(Label label) {
  fixups_.push_back({offset(), label.id});
  U32(0);
}

void BytecodeWriter::RegList(std::span<const uint16_t> registers) {
  U8(uint8_t(registers.size()));
  for (uint16_t r : registers) U16(r);
}

void BytecodeWriter::FailurePayload(StatusCode code, const std::string& message,
                                    std::span<const std::pair<Bank, uint16_t>> args) {
  U8(uint8_t(code));
  U16(uint16_t(message.size()));
  Bytes(message.data(), message.size());
  U8(uint8_t(args.size()));
  for (const auto& [bank, reg] : args) {
    U8(uint8_t(bank));
    U16(reg);
  }
}

void BytecodeWriter::SetLocation(std::string location) {
  if (!locations_.empty() && locations_.back().first == offset()) {
    locations_.back().second = std::move(location);
  } else if (locations_.empty() || locations_.back().second != location) {
    locations_.push_back({offset(), std::move(location)});
  }
}

StatusOr<std::vector<uint8_t>> BytecodeWriter::Finish() {
  for (const auto& [at, label] : fixups_) {
    if (label < 0 || size_t(label) >= label_offsets_.size() || label_offsets_[label] < 0) {
      return InvalidArgumentError("branch at offset 0x%x targets an unbound label", at);
    }
    uint32_t target = uint32_t(label_offsets_[label]);
    memcpy(&code_[at], &target, 4);
  }
  // A location recorded at the very end covers no code.
  while (!locations_.empty() && locations_.back().first >= code_.size()) locations_.pop_back();
  return code_;
}

//===----------------------------------------------------------------------===//
// ModuleBuilder
//===----------------------------------------------------------------------===//

uint32_t ModuleBuilder::AddImport(std::string full_name, std::string signature) {
  imports_.push_back({std::move(full_name), std::move(signature)});
  return uint32_t(imports_.size() - 1);
}

uint32_t ModuleBuilder::DeclareFunction(std::string name, std::string signature) {
  Function f;
  f.name = std::move(name);
  f.signature = std::move(signature);
  functions_.push_back(std::move(f));
  return uint32_t(functions_.size() - 1);
}

void ModuleBuilder::DefineFunction(uint32_t index, std::vector<uint8_t> code,
                                   std::array<uint16_t, kBankCount> register_counts,
                                   std::vector<std::pair<uint32_t, std::string>> locations) {
  Function& f = functions_[index];
  f.code = std::move(code);
  f.register_counts = register_counts;
  f.locations = std::move(locations);
  f.defined = true;
}

void ModuleBuilder::AddExport(std::string name, uint32_t function_index) {
  exports_.push_back({std::move(name), function_index});
}

uint32_t ModuleBuilder::AddRodata(std::string name, std::vector<uint8_t> data,
                                  uint32_t alignment) {
  Segment s;
  s.name = std::move(name);
  s.data = std::move(data);
  s.alignment = alignment;
  rodata_.push_back(std::move(s));
  return uint32_t(rodata_.size() - 1);
}

uint32_t ModuleBuilder::AddExecutable(std::string format, std::string name,
                                      std::vector<uint8_t> data, uint32_t alignment) {
  Segment s;
  s.name = std::move(name);
  s.format = std::move(format);
  s.data = std::move(data);
  s.alignment = alignment;
  executables_.push_back(std::move(s));
  return uint32_t(executables_.size() - 1);
}

std::optional<uint32_t> ModuleBuilder::FindFunction(const std::string& name) const {
  for (size_t i = 0; i < functions_.size(); ++i) {
    if (functions_[i].name == name) return uint32_t(i);
  }
  return std::nullopt;
}

std::optional<uint32_t> ModuleBuilder::FindImport(const std::string& full_name) const {
  for (size_t i = 0; i < imports_.size(); ++i) {
    if (imports_[i].full_name == full_name) return uint32_t(i);
  }
  return std::nullopt;
}

std::optional<uint32_t> ModuleBuilder::FindRodata(const std::string& name) const {
  for (size_t i = 0; i < rodata_.size(); ++i) {
    if (rodata_[i].name == name) return uint32_t(i);
  }
  return std::nullopt;
}

StatusOr<std::vector<uint8_t>> ModuleBuilder::Serialize(
    const BuildOptions& options, const std::vector<uint64_t>& external_offsets) const {
  flatbuffers::FlatBufferBuilder b(4096);
  b.ForceDefaults(false);
  size_t next_external = 0;

  auto make_data = [&](const Segment& s, flatbuffers::Offset<flatbuffers::Vector<uint8_t>>* data,
                       bool* external, fb::ExternalRange* range) {
    *external = IsExternal(s, options);
    if (*external) {
      *range = fb::ExternalRange(external_offsets[next_external++], s.data.size());
      return;
    }
    // Invalid alignments are written as-is (tests of the loader use them).
    bool valid = s.alignment != 0 && (s.alignment & (s.alignment - 1)) == 0;
    if (valid) b.ForceVectorAlignment(s.data.size(), 1, s.alignment < 4 ? 4 : s.alignment);
    *data = b.CreateVector(s.data);
  };

  std::vector<flatbuffers::Offset<fb::ImportDef>> imports;
  for (const Import& imp : imports_) {
    imports.push_back(fb::CreateImportDefDirect(b, imp.full_name.c_str(), imp.signature.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::ExportDef>> exports;
  for (const auto& [name, index] : exports_) {
    exports.push_back(fb::CreateExportDefDirect(b, name.c_str(), index));
  }
  std::vector<uint8_t> bytecode;
  std::vector<flatbuffers::Offset<fb::FunctionDef>> functions;
  std::vector<flatbuffers::Offset<fb::FunctionDebugDef>> debug_functions;
  for (size_t i = 0; i < functions_.size(); ++i) {
    const Function& f = functions_[i];
    if (!f.defined) {
      return InvalidArgumentError("function '%s' is declared but has no code", f.name.c_str());
    }
    // Keep every function's code 4-byte aligned for tidy dumps.
    while (bytecode.size() % 4) bytecode.push_back(0);
    uint32_t offset = uint32_t(bytecode.size());
    bytecode.insert(bytecode.end(), f.code.begin(), f.code.end());
    functions.push_back(fb::CreateFunctionDefDirect(
        b, f.name.c_str(), f.signature.c_str(), offset, uint32_t(f.code.size()),
        f.register_counts[0], f.register_counts[1], f.register_counts[2], f.register_counts[3],
        f.register_counts[4]));
    if (!f.locations.empty()) {
      std::vector<flatbuffers::Offset<fb::SourceLocationDef>> locations;
      for (const auto& [at, text] : f.locations) {
        locations.push_back(fb::CreateSourceLocationDefDirect(b, at, text.c_str()));
      }
      debug_functions.push_back(fb::CreateFunctionDebugDefDirect(b, uint32_t(i), &locations));
    }
  }
  std::vector<flatbuffers::Offset<fb::RodataSegmentDef>> rodata;
  for (const Segment& s : rodata_) {
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> data;
    bool external = false;
    fb::ExternalRange range;
    make_data(s, &data, &external, &range);
    auto name = s.name.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(s.name);
    fb::RodataSegmentDefBuilder sb(b);
    if (!s.name.empty()) sb.add_name(name);
    sb.add_alignment(s.alignment);
    if (external) {
      sb.add_external(&range);
    } else {
      sb.add_data(data);
    }
    rodata.push_back(sb.Finish());
  }
  std::vector<flatbuffers::Offset<fb::ExecutableDef>> executables;
  for (const Segment& s : executables_) {
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> data;
    bool external = false;
    fb::ExternalRange range;
    make_data(s, &data, &external, &range);
    auto format = b.CreateString(s.format);
    auto name = s.name.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(s.name);
    const fb::Digest64Def digest(ComputeDigest64(s.data.data(), s.data.size()));
    fb::ExecutableDefBuilder eb(b);
    eb.add_format(format);
    if (!s.name.empty()) eb.add_name(name);
    eb.add_alignment(s.alignment);
    if (options.digests) eb.add_digest(&digest);
    if (external) {
      eb.add_external(&range);
    } else {
      eb.add_data(data);
    }
    executables.push_back(eb.Finish());
  }
  auto globals = fb::CreateGlobalsDef(b, global_counts_[0], global_counts_[1], global_counts_[2],
                                      global_counts_[3], global_counts_[4]);
  flatbuffers::Offset<fb::DebugInfoDef> debug;
  if (!debug_functions.empty()) debug = fb::CreateDebugInfoDefDirect(b, &debug_functions);
  std::vector<flatbuffers::Offset<fb::AttributeDef>> attributes;
  for (const auto& [key, value] : attributes_) {
    attributes.push_back(fb::CreateAttributeDefDirect(b, key.c_str(), value.c_str()));
  }
  // Zero for now: Build() fills it in once the whole file is laid out.
  const fb::Digest64Def placeholder(0);
  auto module = fb::CreateModuleDefDirect(
      b, format_version_, name_.c_str(), version_, imports.empty() ? nullptr : &imports,
      exports.empty() ? nullptr : &exports, functions.empty() ? nullptr : &functions,
      bytecode.empty() ? nullptr : &bytecode, rodata.empty() ? nullptr : &rodata,
      executables.empty() ? nullptr : &executables, globals, initializer_, debug,
      attributes.empty() ? nullptr : &attributes, options.digests ? &placeholder : nullptr);
  fb::FinishSizePrefixedModuleDefBuffer(b, module);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

void ModuleBuilder::SetAttribute(std::string key, std::string value) {
  for (auto& [k, v] : attributes_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  attributes_.emplace_back(std::move(key), std::move(value));
}

StatusOr<std::vector<uint8_t>> ModuleBuilder::Build(const BuildOptions& options) const {
  // External segments in file order: rodata, then executables.
  std::vector<const Segment*> external;
  for (const Segment& s : rodata_) {
    if (IsExternal(s, options)) external.push_back(&s);
  }
  for (const Segment& s : executables_) {
    if (IsExternal(s, options)) external.push_back(&s);
  }
  std::vector<uint64_t> offsets(external.size(), 0);
  OSPREY_ASSIGN_OR_RETURN(std::vector<uint8_t> file, Serialize(options, offsets));
  if (external.empty()) return Seal(std::move(file), options);
  // The FlatBuffer's size does not depend on the offsets stored in it
  // (fixed-size structs), so lay the segments out after it and serialize
  // again with the real offsets.
  uint64_t end = file.size();
  for (size_t i = 0; i < external.size(); ++i) {
    uint64_t alignment = external[i]->alignment ? external[i]->alignment : 1;
    end = (end + alignment - 1) / alignment * alignment;
    offsets[i] = end;
    end += external[i]->data.size();
  }
  OSPREY_ASSIGN_OR_RETURN(std::vector<uint8_t> final_file, Serialize(options, offsets));
  if (final_file.size() != file.size()) {
    return InternalError("module FlatBuffer size changed between layout passes");
  }
  final_file.resize(end, 0);
  for (size_t i = 0; i < external.size(); ++i) {
    memcpy(final_file.data() + offsets[i], external[i]->data.data(), external[i]->data.size());
  }
  return Seal(std::move(final_file), options);
}

StatusOr<std::vector<uint8_t>> ModuleBuilder::Seal(std::vector<uint8_t> file,
                                                  const BuildOptions& options) const {
  if (!options.digests) return file;
  const fb::ModuleDef* def = fb::GetSizePrefixedModuleDef(file.data());
  if (!def->digest()) return InternalError("module digest field is missing");
  const size_t offset = size_t(reinterpret_cast<const uint8_t*>(def->digest()) - file.data());
  uint64_t digest = ComputeModuleDigest(file, offset);
  for (int i = 0; i < 8; ++i, digest >>= 8) file[offset + size_t(i)] = uint8_t(digest);
  return file;
}

//===----------------------------------------------------------------------===//
// AlignedBytes
//===----------------------------------------------------------------------===//

void AlignedBytes::Free::operator()(uint8_t* p) const { std::free(p); }

AlignedBytes::AlignedBytes(std::span<const uint8_t> bytes) : size_(bytes.size()) {
  size_t capacity = (bytes.size() + 4095) / 4096 * 4096;
  if (capacity == 0) capacity = 4096;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, capacity)));
  if (!bytes.empty()) memcpy(data_.get(), bytes.data(), bytes.size());
}

}  // namespace osprey::vm
