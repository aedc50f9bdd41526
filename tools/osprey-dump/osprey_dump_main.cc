// osprey-dump FILE...: prints what Osprey files hold (CPU executable
// libraries today). Exits 1 if any file could not be read or is invalid,
// 2 on a usage error.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tools/osprey-dump/dump.h"

namespace {

void PrintUsage(FILE* out) {
  fprintf(out,
          "usage: osprey-dump FILE...\n"
          "Prints the contents of Osprey files, recognized by their magic:\n"
          "  ELF CPU executable libraries: machine, segments, relocations and, for\n"
          "  the host machine, the library's ABI version, name, imports and exports.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    PrintUsage(stdout);
    return 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    const char* path = argv[i];
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      fprintf(stderr, "osprey-dump: %s: cannot open file\n", path);
      rc = 1;
      continue;
    }
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
    std::string out;
    osprey::Status status = osprey::tools::dump::DumpFile(data, &out);
    printf("file: %s (%zu bytes)\n%s", path, data.size(), out.c_str());
    fflush(stdout);
    if (!status.ok()) {
      char message[2048];
      status.ToString(message, sizeof(message));
      fprintf(stderr, "osprey-dump: %s: %s\n", path, message);
      rc = 1;
    }
  }
  return rc;
}
