// osprey-dump for VM modules (.osp): the module is loaded (and so verified)
// by the runtime's loader, then its tables are listed and its bytecode is
// disassembled by the VM's printer.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/base/allocator.h"
#include "tools/osprey-dump/dump.h"
#include "vm/asm/assembler.h"
#include "vm/builder/module_builder.h"
#include "vm/bytecode_module.h"
#if OSPREY_DUMP_NPU
#include "drivers/npu/sim/command_stream.h"
#endif

namespace osprey::tools::dump {

namespace {

void Appendf(std::string* out, const char* format, ...) OSPREY_PRINTF_FORMAT(2, 3);
void Appendf(std::string* out, const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n > 0) out->append(buffer, size_t(n) < sizeof(buffer) ? size_t(n) : sizeof(buffer) - 1);
}

// Printable prefix of a rodata segment (strings show as text, the rest as
// hex bytes).
void AppendPreview(const uint8_t* data, size_t length, std::string* out) {
  bool text = length > 0;
  for (size_t i = 0; i < length && text; ++i) {
    text = (data[i] >= 0x20 && data[i] < 0x7F) || (data[i] == 0 && i + 1 == length);
  }
  const size_t shown = length < 16 ? length : 16;
  if (text) {
    out->append(" \"");
    out->append(reinterpret_cast<const char*>(data), strnlen(reinterpret_cast<const char*>(data),
                                                             shown));
    out->append(length > shown ? "...\"" : "\"");
    return;
  }
  out->append(" [");
  for (size_t i = 0; i < shown; ++i) Appendf(out, i ? " %02x" : "%02x", data[i]);
  out->append(length > shown ? " ...]" : "]");
}

// Appends |text| with quotes, backslashes, control and non-ASCII bytes
// escaped (\xNN), so names taken from a model cannot garble the output.
void AppendEscaped(std::string* out, const char* text) {
  for (const char* c = text; *c; ++c) {
    const unsigned char byte = static_cast<unsigned char>(*c);
    if (byte == '"' || byte == '\\') {
      out->push_back('\\');
      out->push_back(*c);
    } else if (byte < 0x20 || byte >= 0x7f) {
      Appendf(out, "\\x%02x", byte);
    } else {
      out->push_back(*c);
    }
  }
}

// Lists the model inputs and outputs of each export from the
// <export>.<input|output>.<i>.<name|type> attributes osprey-compile records.
void AppendIo(const vm::BytecodeModule& module, std::string* out) {
  for (uint32_t e = 0; e < module.export_count(); ++e) {
    const char* function = module.export_info(e).name;
    for (const char* kind : {"input", "output"}) {
      for (uint32_t i = 0;; ++i) {
        char key[256];
        snprintf(key, sizeof(key), "%s.%s.%u.name", function, kind, i);
        const char* name = module.LookupAttribute(key);
        if (!name) break;
        snprintf(key, sizeof(key), "%s.%s.%u.type", function, kind, i);
        const char* type = module.LookupAttribute(key);
        Appendf(out, "  %s %s %u: \"", function, kind, i);
        AppendEscaped(out, name);
        out->append("\"");
        if (type) {
          out->append(" ");
          AppendEscaped(out, type);
        }
        out->append("\n");
      }
    }
  }
}

}  // namespace

bool IsModule(std::span<const uint8_t> data) {
  // Module files are size-prefixed FlatBuffers: a 4-byte size, the root
  // table offset, then the file identifier at bytes 8..11.
  return data.size() >= 12 && memcmp(data.data() + 8, vm::kModuleFileIdentifier, 4) == 0;
}

Status DumpModule(std::span<const uint8_t> data, std::string* out) {
  // The loader needs the file at an address aligned like a mapped file.
  vm::AlignedBytes aligned(data);
  OSPREY_ASSIGN_OR_RETURN(
      auto module, vm::BytecodeModule::Load(aligned.span(), nullptr, Allocator::Default()),
      "loading the module");
  Appendf(out, "kind: VM module (format version %u)\n", vm::kModuleFormatVersion);
  Appendf(out, "name: %s\nversion: %u\n", module->name(), module->version());

  Appendf(out, "exports (%u):\n", module->export_count());
  for (uint32_t i = 0; i < module->export_count(); ++i) {
    const vm::ExportInfo info = module->export_info(i);
    Appendf(out, "  %u: %s(%s) -> function %u\n", i, info.name, info.signature,
            info.function_ordinal);
  }
  Appendf(out, "imports (%u):\n", module->import_count());
  for (uint32_t i = 0; i < module->import_count(); ++i) {
    const vm::ImportInfo& info = module->import(i);
    Appendf(out, "  %u: %s(%s)\n", i, info.full_name, info.signature_text);
  }
  Appendf(out, "functions (%u):\n", module->function_count());
  for (uint32_t i = 0; i < module->function_count(); ++i) {
    const vm::FunctionInfo& info = module->function(i);
    Appendf(out, "  %u: %s(%s): %u bytes of bytecode, registers i32=%u i64=%u f32=%u f64=%u "
            "ref=%u\n",
            i, info.name, info.signature_text, info.code_length, info.register_counts[0],
            info.register_counts[1], info.register_counts[2], info.register_counts[3],
            info.register_counts[4]);
  }
  size_t rodata_bytes = 0;
  Appendf(out, "rodata segments (%u):\n", module->rodata_count());
  for (uint32_t i = 0; i < module->rodata_count(); ++i) {
    const vm::SegmentInfo& info = module->rodata(i);
    rodata_bytes += info.length;
    Appendf(out, "  %u: %s: %zu bytes, align %u, file offset %zu:", i,
            info.name[0] ? info.name : "(unnamed)", info.length, info.alignment,
            size_t(info.data - aligned.span().data()));
    AppendPreview(info.data, info.length, out);
    out->append("\n");
  }
  size_t executable_bytes = 0;
  Appendf(out, "executables (%u):\n", module->executable_count());
  for (uint32_t i = 0; i < module->executable_count(); ++i) {
    const vm::ExecutableInfo& info = module->executable(i);
    executable_bytes += info.length;
    Appendf(out, "  %u: %s: format %s, %zu bytes, align %u, file offset %zu\n", i,
            info.name[0] ? info.name : "(unnamed)", info.format, info.length, info.alignment,
            size_t(info.data - aligned.span().data()));
    // CPU libraries embedded in the module get the ELF dumper's summary.
    std::span<const uint8_t> bytes(info.data, info.length);
    if (IsElf(bytes)) {
      std::string library;
      Status status = DumpElfLibrary(bytes, &library);
      if (!status.ok()) {
        char message[512];
        status.ToString(message, sizeof(message));
        library += std::string("error: ") + message + "\n";
      }
      size_t start = 0;
      while (start < library.size()) {
        size_t end = library.find('\n', start);
        if (end == std::string::npos) end = library.size();
        out->append("      ").append(library, start, end - start).append("\n");
        start = end + 1;
      }
    }
#if OSPREY_DUMP_NPU
    // npu-v1 blobs: the driver's parser verifies them; list the exports.
    if (strcmp(info.format, "npu-v1") == 0) {
      drivers::npu::sim::BlobView view;
      Status status = drivers::npu::sim::BlobView::Parse(bytes, &view);
      if (!status.ok()) {
        char message[512];
        status.ToString(message, sizeof(message));
        Appendf(out, "      error: %s\n", message);
        continue;
      }
      Appendf(out, "      npu-v1 blob, %u exports (verified):\n", view.export_count());
      for (uint32_t e = 0; e < view.export_count(); ++e) {
        drivers::npu::sim::ExportView ev = view.export_view(e);
        Appendf(out, "        %u: %s: %zu stream words, %zu relocations, bindings %u [", e,
                ev.name, ev.words.size(), ev.relocations.size(), ev.binding_count);
        for (uint32_t b = 0; b < ev.binding_count; ++b) {
          Appendf(out, "%s%u=%s", b ? ", " : "", b,
                  (ev.binding_write_mask >> b) & 1 ? "read-write" : "read");
        }
        out->append("]\n");
      }
    }
#endif
  }
  Appendf(out, "sizes: file %zu bytes, rodata %zu bytes, executables %zu bytes\n", data.size(),
          rodata_bytes, executable_bytes);
  Appendf(out, "initializer: %s\n",
          module->initializer() < 0 ? "none"
                                    : module->function(uint32_t(module->initializer())).name);
  for (uint32_t i = 0; i < module->attribute_count(); ++i) {
    const vm::AttributeInfo attribute = module->attribute(i);
    out->append("attribute: ");
    AppendEscaped(out, attribute.key);
    out->append(" = ");
    AppendEscaped(out, attribute.value);
    out->append("\n");
  }
  std::string io;
  AppendIo(*module, &io);
  if (!io.empty()) out->append("model inputs and outputs:\n").append(io);

  OSPREY_ASSIGN_OR_RETURN(std::string text, vm::Disassemble(aligned.span()),
                          "disassembling the module");
  // Segment and executable contents are printed in full by the assembly
  // printer (so it round-trips); here long hex strings are cut short.
  out->append("disassembly:\n");
  constexpr size_t kMaxLine = 160;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    const size_t hex = line.find(" hex \"");
    if (line.size() > kMaxLine && hex != std::string_view::npos && hex < kMaxLine - 40) {
      out->append(line.substr(0, kMaxLine));
      Appendf(out, "...\" (%zu hex digits elided)\n", line.size() - kMaxLine - 1);
    } else {
      out->append(line).append("\n");
    }
    start = end + 1;
  }
  return OkStatus();
}

}  // namespace osprey::tools::dump
