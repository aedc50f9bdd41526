// ReadFileBytes / WriteFileBytes over POSIX file descriptors.
#include "tools/common/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace osprey::tools {

namespace {

// What kind of file |mode| is, for messages about files that are not
// regular files.
const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes a descriptor on every path out of a function.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

StatusOr<std::vector<uint8_t>> ReadFileBytes(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFoundError("cannot open '%s': %s", path.c_str(), strerror(errno));
  FdCloser closer(fd);
  struct stat info;
  if (fstat(fd, &info) != 0) {
    return DataLossError("cannot stat '%s': %s", path.c_str(), strerror(errno));
  }
  const bool regular = S_ISREG(info.st_mode);
  if (!regular && !S_ISFIFO(info.st_mode)) {
    return InvalidArgumentError("'%s' is %s, not a file", path.c_str(), FileKind(info.st_mode));
  }
  std::vector<uint8_t> bytes;
  if (regular) bytes.reserve(size_t(info.st_size));
  uint8_t chunk[1 << 16];
  while (true) {
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      return DataLossError("error reading '%s' after %zu bytes: %s", path.c_str(), bytes.size(),
                           strerror(errno));
    }
    if (n == 0) break;
    if (bytes.size() + size_t(n) > kMaxStreamBytes && !regular) {
      return InvalidArgumentError("'%s' delivers more than %zu bytes", path.c_str(),
                                  kMaxStreamBytes);
    }
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  return bytes;
}

Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return InvalidArgumentError("cannot write '%s': it is a directory", path.c_str());
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return NotFoundError("cannot create '%s': %s", path.c_str(), strerror(errno));
  FdCloser closer(fd);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return DataLossError("error writing '%s' after %zu of %zu bytes: %s", path.c_str(), done,
                           bytes.size(), strerror(errno));
    }
    done += size_t(n);
  }
  return OkStatus();
}

}  // namespace osprey::tools
