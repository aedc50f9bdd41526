// osprey-dump: prints what a file holds. Each kind of file has a dumper
// chosen by the file's first bytes (its magic); add new kinds to
// kDumpers in dump.cc.
#ifndef OSPREY_TOOLS_OSPREY_DUMP_DUMP_H_
#define OSPREY_TOOLS_OSPREY_DUMP_DUMP_H_

#include <cstdint>
#include <span>
#include <string>

#include "runtime/base/status.h"

namespace osprey::tools::dump {

struct Dumper {
  const char* name;  // "elf executable library"
  // Whether |data| starts with this kind's magic.
  bool (*matches)(std::span<const uint8_t> data);
  // Appends a human-readable description of |data| to |out|. Errors (bad
  // file) leave what was printed so far in |out|.
  Status (*dump)(std::span<const uint8_t> data, std::string* out);
};

// Dumps |data| with the first dumper whose magic matches; INVALID_ARGUMENT
// if none does.
Status DumpFile(std::span<const uint8_t> data, std::string* out);

// CPU executable libraries (ELF shared objects).
bool IsElf(std::span<const uint8_t> data);
Status DumpElfLibrary(std::span<const uint8_t> data, std::string* out);

// VM modules (.osp): tables, segment sizes and disassembled bytecode
// (module_dump.cc).
bool IsModule(std::span<const uint8_t> data);
Status DumpModule(std::span<const uint8_t> data, std::string* out);

}  // namespace osprey::tools::dump

#endif  // OSPREY_TOOLS_OSPREY_DUMP_DUMP_H_
