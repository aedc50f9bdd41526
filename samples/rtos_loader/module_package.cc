// Receiving module packages (see module_package.h).
#include "samples/rtos_loader/module_package.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>

namespace osprey::rtos_loader {

namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

uint32_t ReadU32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Reads up to |size| bytes; fewer only at the end of the file.
ssize_t ReadFully(int fd, uint8_t* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = read(fd, out + done, size - done);
    if (n < 0) return n;
    if (n == 0) break;
    done += size_t(n);
  }
  return ssize_t(done);
}

class File {
 public:
  explicit File(int fd) : fd_(fd) {}
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t size) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

void ReceivedModule::Reset() {
  if (data_) allocator_->Free(data_);
  data_ = nullptr;
  size_ = 0;
}

Status ReceivePackage(const char* path, size_t max_size, Allocator* allocator,
                      ReceivedModule* out_module) {
  out_module->Reset();
  File file(open(path, O_RDONLY));
  if (file.fd() < 0) return NotFoundError("cannot open package '%s'", path);

  uint8_t header[kPackageHeaderSize];
  ssize_t got = ReadFully(file.fd(), header, sizeof(header));
  if (got != ssize_t(sizeof(header))) {
    return DataLossError("package '%s' ends inside its %zu-byte header (%d bytes)", path,
                         sizeof(header), int(got));
  }
  if (memcmp(header, "OSPK", 4) != 0) {
    return DataLossError("'%s' is not a module package (no OSPK magic)", path);
  }
  const uint32_t version = ReadU32(header + 4);
  if (version != kPackageVersion) {
    return DataLossError("package '%s' has version %u; this loader reads %u", path,
                         unsigned(version), unsigned(kPackageVersion));
  }
  const uint32_t size = ReadU32(header + 8);
  const uint32_t expected_crc = ReadU32(header + 12);
  if (size == 0) return DataLossError("package '%s' announces an empty module", path);
  if (size > max_size) {
    return ResourceExhaustedError(
        "package '%s' announces a %u-byte module; the loader takes "
        "at most %zu bytes",
        path, unsigned(size), max_size);
  }

  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(allocator->Allocate(size, kModuleAlignment, &memory),
                         "allocating %u bytes for the module of '%s'", unsigned(size), path);
  auto* data = static_cast<uint8_t*>(memory);
  // Frames as a link would deliver them; the CRC runs along.
  constexpr size_t kFrame = 1024;
  size_t received = 0;
  uint32_t crc = 0;
  while (received < size) {
    size_t want = size - received < kFrame ? size - received : kFrame;
    ssize_t n = ReadFully(file.fd(), data + received, want);
    if (n <= 0) break;
    crc = Crc32(crc, data + received, size_t(n));
    received += size_t(n);
    if (size_t(n) < want) break;
  }
  uint8_t extra = 0;
  const bool trailing = received == size && ReadFully(file.fd(), &extra, 1) == 1;
  Status status;
  if (received < size) {
    status = DataLossError("package '%s' is truncated: received %zu of %u module bytes", path,
                           received, unsigned(size));
  } else if (trailing) {
    status =
        DataLossError("package '%s' carries bytes past its %u-byte module", path, unsigned(size));
  } else if (crc != expected_crc) {
    status = DataLossError(
        "package '%s' fails its CRC-32 check: computed 0x%08x, sent 0x%08x "
        "(the module was corrupted on the way)",
        path, unsigned(crc), unsigned(expected_crc));
  }
  if (!status.ok()) {
    allocator->Free(memory);
    return status;
  }
  out_module->allocator_ = allocator;
  out_module->data_ = data;
  out_module->size_ = size;
  return OkStatus();
}

}  // namespace osprey::rtos_loader
