// osprey-dump for CPU executable libraries: ELF structure through the
// embedded loader, then the library description its query returns (host
// machine only; other machines' code is parsed and relocated, not run).
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "hal/local/executable_library.h"
#include "hal/local/library_executable.h"
#include "hal/local/loaders/elf/elf_image.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "tools/osprey-dump/dump.h"

namespace osprey::tools::dump {

namespace {

using hal::local::loaders::elf::ElfHostMachine;
using hal::local::loaders::elf::ElfImage;
using hal::local::loaders::elf::ElfImageOptions;
using hal::local::loaders::elf::ElfMachine;
using hal::local::loaders::elf::ElfMachineFormat;
using hal::local::loaders::elf::ElfMachineName;
using hal::local::loaders::elf::ElfSegment;
using hal::local::loaders::elf::IdentifyElfMachine;
using hal::local::loaders::elf::ValidateLibraryInImage;

void Appendf(std::string* out, const char* format, ...) OSPREY_PRINTF_FORMAT(2, 3);
void Appendf(std::string* out, const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  out->append(buffer);
}

std::string Permissions(uint32_t flags) {
  std::string p = "---";
  if (flags & hal::local::loaders::elf::kElfSegmentRead) p[0] = 'r';
  if (flags & hal::local::loaders::elf::kElfSegmentWrite) p[1] = 'w';
  if (flags & hal::local::loaders::elf::kElfSegmentExecute) p[2] = 'x';
  return p;
}

void DumpExport(const osprey_executable_library_v1_t& library, uint32_t i, std::string* out) {
  const char* name = library.exports.names ? library.exports.names[i] : nullptr;
  Appendf(out, "    %u: %s\n", i, name && name[0] ? name : "(unnamed)");
  if (!library.exports.attrs) {
    out->append("        bindings: 0, constants: 0 (no attributes)\n");
    return;
  }
  const osprey_dispatch_attrs_v1_t& a = library.exports.attrs[i];
  Appendf(out, "        bindings: %u", a.binding_count);
  for (uint32_t b = 0; b < a.binding_count; ++b) {
    const bool written = b >= 64 || ((a.binding_write_mask >> b) & 1);
    Appendf(out, "%s%u=%s", b == 0 ? " [" : ", ", b, written ? "read-write" : "read");
  }
  out->append(a.binding_count ? "]\n" : "\n");
  Appendf(out, "        constants: %u\n", a.constant_count);
  Appendf(out, "        workgroup size: %ux%ux%u\n", a.workgroup_size[0], a.workgroup_size[1],
          a.workgroup_size[2]);
  Appendf(out, "        local memory: %u bytes\n", a.local_memory_size);
}

Status DumpLibrary(const ElfImage& image, std::string* out) {
  osprey_executable_environment_v1_t env = {};
  env.import_thunk = &hal::local::DirectImportThunk;
  const osprey_executable_library_header_t* const* library =
      image.query_function()(OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST, &env);
  if (!library) {
    return UnavailableError("the library's query returned NULL for ABI version %u",
                            OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST);
  }
  OSPREY_RETURN_IF_ERROR(ValidateLibraryInImage(image, library));
  const osprey_executable_library_header_t* header = *library;
  out->append("library:\n");
  Appendf(out, "  abi version: %u\n", header->version);
  Appendf(out, "  name: %s\n", header->name ? header->name : "(none)");
  if (header->version != OSPREY_EXECUTABLE_LIBRARY_VERSION_1) {
    return InvalidArgumentError("ABI version %u is not known to this tool", header->version);
  }
  const auto& v1 = *reinterpret_cast<const osprey_executable_library_v1_t*>(library);
  if (v1.imports.count > hal::local::LibraryExecutable::kMaxImports ||
      v1.exports.count > hal::local::LibraryExecutable::kMaxExports) {
    return InvalidArgumentError("library declares %u imports and %u exports (too many)",
                                v1.imports.count, v1.exports.count);
  }
  Appendf(out, "  imports (%u):\n", v1.imports.count);
  for (uint32_t i = 0; i < v1.imports.count; ++i) {
    const char* s = v1.imports.symbols[i];
    if (!s) {
      Appendf(out, "    %u: (null)\n", i);
    } else if (s[0] == '?') {
      Appendf(out, "    %u: %s (optional)\n", i, s + 1);
    } else {
      Appendf(out, "    %u: %s\n", i, s);
    }
  }
  Appendf(out, "  exports (%u):\n", v1.exports.count);
  for (uint32_t i = 0; i < v1.exports.count; ++i) DumpExport(v1, i, out);
  return OkStatus();
}

}  // namespace

bool IsElf(std::span<const uint8_t> data) {
  return data.size() >= 4 && data[0] == 0x7f && data[1] == 'E' && data[2] == 'L' && data[3] == 'F';
}

Status DumpElfLibrary(std::span<const uint8_t> data, std::string* out) {
  OSPREY_ASSIGN_OR_RETURN(ElfMachine machine, IdentifyElfMachine(data));
  ElfMachine host;
  const bool native = ElfHostMachine(&host) && host == machine;
  Appendf(out, "format: %s (ELF%s, %s)\n", ElfMachineFormat(machine), data[4] == 2 ? "64" : "32",
          ElfMachineName(machine));

  ElfImageOptions options;
  options.machine = machine;
  options.executable = native;
  OSPREY_ASSIGN_OR_RETURN(auto image, ElfImage::Load(data, options, Allocator::Default()));
  out->append("segments:\n");
  for (const ElfSegment& s : image->segments()) {
    Appendf(out, "  0x%08" PRIx64 " memsz 0x%06" PRIx64 " filesz 0x%06" PRIx64 " %s\n", s.vaddr,
            s.memsz, s.filesz, Permissions(s.flags).c_str());
  }
  Appendf(out, "relocations: %u (%s%s)\n", image->relocation_count(),
          image->uses_rel() ? "REL" : "RELA", image->uses_relr() ? ", packed RELR" : "");
  Appendf(out, "dynamic symbols: %u\n", image->symbol_count());
  Appendf(out, "query: %s at 0x%" PRIx64 "\n", OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME,
          image->query_address() - image->load_bias());
  if (!native) {
    Appendf(out, "library: not queried (%s code cannot run on this host)\n",
            ElfMachineName(machine));
    return OkStatus();
  }
  return DumpLibrary(*image, out);
}

}  // namespace osprey::tools::dump
