// osprey-dump FILE...: prints what Osprey files hold (CPU executable
// libraries today). Exits 1 if any file could not be read or is invalid,
// 2 on a usage error.
//
// Describing a library means running its query function, and no loader can
// tell broken machine code from good code, so each file is dumped in a
// child process: a library that crashes is reported like any other bad
// file instead of taking the tool down.
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/base/printable.h"
#include "tools/common/file_io.h"
#include "tools/osprey-dump/dump.h"

namespace {

void PrintUsage(FILE* out) {
  fprintf(out,
          "usage: osprey-dump FILE...\n"
          "Prints the contents of Osprey files, recognized by their magic:\n"
          "  ELF CPU executable libraries: machine, segments, relocations and, for\n"
          "  the host machine, the library's ABI version, name, imports and exports.\n");
}

// Prints one file; returns 0 if it is valid, 1 otherwise.
int DumpOne(const char* path) {
  auto bytes = osprey::tools::ReadFileBytes(path);
  if (!bytes.ok()) {
    char message[1024];
    bytes.status().ToString(message, sizeof(message));
    fprintf(stderr, "osprey-dump: %s\n", message);
    return 1;
  }
  const std::vector<uint8_t>& data = *bytes;
  std::string out;
  osprey::Status status = osprey::tools::dump::DumpFile(data, &out);
  // Names in the dump come from the file and may hold anything.
  std::string printable(osprey::EscapeUnprintable(out.data(), out.size(), nullptr, 0), '\0');
  osprey::EscapeUnprintable(out.data(), out.size(), printable.data(), printable.size());
  printf("file: %s (%zu bytes)\n%s", path, data.size(), printable.c_str());
  fflush(stdout);
  if (!status.ok()) {
    char message[2048];
    status.ToString(message, sizeof(message));
    fprintf(stderr, "osprey-dump: %s: %s\n", path, message);
    fflush(stderr);
    return 1;
  }
  return 0;
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
    fflush(stdout);
    fflush(stderr);
    const pid_t child = fork();
    if (child < 0) {
      // No process isolation available: dump in this process.
      if (DumpOne(path) != 0) rc = 1;
      continue;
    }
    if (child == 0) _exit(DumpOne(path));
    int status = 0;
    if (waitpid(child, &status, 0) != child) {
      fprintf(stderr, "osprey-dump: %s: lost the process dumping it\n", path);
      rc = 1;
    } else if (WIFSIGNALED(status)) {
      fprintf(stderr,
              "osprey-dump: %s: dumping crashed (signal %d: %s); the library's code is "
              "probably corrupt\n",
              path, WTERMSIG(status), strsignal(WTERMSIG(status)));
      rc = 1;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      rc = 1;
    }
  }
  return rc;
}
