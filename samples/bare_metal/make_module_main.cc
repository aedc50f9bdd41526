// Host tool of the bare-metal sample: assembles a VM assembly file into the
// module file (.osp) that the embedding image loads on the target.
//
//   osprey-make-firmware-module <input.vmasm> <output.osp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "vm/asm/assembler.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <input.vmasm> <output.osp>\n", argv[0]);
    return 2;
  }
  std::ifstream input(argv[1]);
  if (!input) {
    std::fprintf(stderr, "cannot read '%s'\n", argv[1]);
    return 1;
  }
  // A read error (e.g. a directory) leaves |text| failed instead of throwing.
  std::stringstream text;
  if (!(text << input.rdbuf())) {
    std::fprintf(stderr, "cannot read '%s' (empty, or not a readable file)\n", argv[1]);
    return 1;
  }
  osprey::StatusOr<std::vector<uint8_t>> module = osprey::vm::AssembleModule(text.str());
  if (!module.ok()) {
    char message[512];
    module.status().ToString(message, sizeof(message));
    std::fprintf(stderr, "%s: %s\n", argv[1], message);
    return 1;
  }
  std::ofstream output(argv[2], std::ios::binary);
  output.write(reinterpret_cast<const char*>(module->data()),
               static_cast<std::streamsize>(module->size()));
  if (!output) {
    std::fprintf(stderr, "cannot write '%s'\n", argv[2]);
    return 1;
  }
  return 0;
}
