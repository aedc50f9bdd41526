// FileMapping: mmap on POSIX hosts; stdio reads where only stdio exists;
// UNIMPLEMENTED on bare metal.
#include "runtime/embed/file_mapping.h"

#include <errno.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#define OSPREY_EMBED_HAVE_MMAP 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#else
#define OSPREY_EMBED_HAVE_MMAP 0
#endif

namespace osprey::embed {

FileMapping::~FileMapping() {
#if OSPREY_EMBED_HAVE_MMAP
  if (mapped_) {
    munmap(const_cast<uint8_t*>(data_), size_);
    return;
  }
#endif
  if (data_) allocator_->Free(const_cast<uint8_t*>(data_));
}

StatusOr<ref_ptr<FileMapping>> FileMapping::Open(const char* path, Allocator* allocator) {
#if OSPREY_EMBED_HAVE_MMAP
  OSPREY_ASSIGN_OR_RETURN(auto mapping, MakeRef<FileMapping>(allocator, allocator));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFoundError("cannot open '%s': %s", path, strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    close(fd);
    return DataLossError("cannot stat '%s': %s", path, strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return InvalidArgumentError("'%s' is not a regular file", path);
  }
  if (info.st_size == 0) {
    close(fd);
    return InvalidArgumentError("'%s' is empty", path);
  }
  void* data = mmap(nullptr, size_t(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  int map_error = errno;
  close(fd);
  if (data == MAP_FAILED) {
    return DataLossError("cannot map '%s': %s", path, strerror(map_error));
  }
  mapping->data_ = static_cast<const uint8_t*>(data);
  mapping->size_ = size_t(info.st_size);
  mapping->mapped_ = true;
  return mapping;
#else
  (void)allocator;
  return UnimplementedError(
      "loading module files is not supported on this platform ('%s'); load modules from "
      "memory instead",
      path);
#endif
}

}  // namespace osprey::embed
