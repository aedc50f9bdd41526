// File-kind dispatch of osprey-dump.
#include "tools/osprey-dump/dump.h"

namespace osprey::tools::dump {

namespace {
constexpr Dumper kDumpers[] = {
    {"ELF executable library", &IsElf, &DumpElfLibrary},
    {"VM module", &IsModule, &DumpModule},
};
}  // namespace

Status DumpFile(std::span<const uint8_t> data, std::string* out) {
  for (const Dumper& dumper : kDumpers) {
    if (dumper.matches(data)) return dumper.dump(data, out);
  }
  return InvalidArgumentError("unrecognized file format (no known magic in the first bytes)");
}

}  // namespace osprey::tools::dump
