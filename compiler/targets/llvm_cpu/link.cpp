// In-process linking with lld's ELF driver.
#include "compiler/targets/llvm_cpu/library.h"

#include "lld/Common/Driver.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)

namespace osprey::compiler::llvm_cpu {
namespace {

// Removes a temporary file when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty()) {
      llvm::sys::fs::remove(path);
    }
  }
};

} // namespace

absl::StatusOr<std::vector<uint8_t>>
linkSharedLibrary(llvm::ArrayRef<char> object, const CpuTarget &target) {
  TempFile in, out;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "osprey-dispatch", "o", fd, in.path)) {
    return absl::InternalError("cannot create a temporary object file: " +
                               ec.message());
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
    if (os.has_error()) {
      return absl::InternalError("cannot write '" + in.path.str().str() + "'");
    }
  }
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "osprey-dispatch", "so", out.path)) {
    return absl::InternalError("cannot create a temporary library file: " +
                               ec.message());
  }
  std::vector<const char *> args = {"ld.lld",   "-shared", "-nostdlib",
                                    "-Bsymbolic", "-z",     "now",
                                    "-z",       "noexecstack",
                                    "--no-undefined", "--gc-sections"};
  if (target.embedded) {
    args.insert(args.end(), {"-z", "norelro", "-z", "max-page-size=4096"});
  }
  std::string outPath = out.path.str().str();
  std::string inPath = in.path.str().str();
  args.insert(args.end(), {"-o", outPath.c_str(), inPath.c_str()});
  std::string messages;
  llvm::raw_string_ostream diag(messages);
  lld::Result result =
      lld::lldMain(args, diag, diag, {{lld::Gnu, &lld::elf::link}});
  if (result.retCode != 0) {
    return absl::InternalError("linking the dispatch library failed: " +
                               messages);
  }
  auto buffer = llvm::MemoryBuffer::getFile(outPath, /*IsText=*/false);
  if (!buffer) {
    return absl::InternalError("cannot read the linked library: " +
                               buffer.getError().message());
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace osprey::compiler::llvm_cpu
