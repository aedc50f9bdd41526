// How the loader receives a module: a package is a 16-byte header followed
// by the .osp bytes (the payload):
//
//   offset 0   "OSPK"
//   offset 4   u32 version (1)
//   offset 8   u32 payload size in bytes
//   offset 12  u32 CRC-32 of the payload (IEEE 802.3, as zlib.crc32)
//
// little-endian. The sender computes the CRC from the module it means to
// send, so bytes lost or changed on the way are caught before the runtime
// sees them; the runtime then verifies the module itself (FlatBuffer
// structure, tables, bytecode). Here the link is a file read through
// semihosting in 1 KiB frames, standing in for a UART or a flash partition;
// scripts/qemu/make_rtos_package.py writes packages on the host.
#ifndef OSPREY_SAMPLES_RTOS_LOADER_MODULE_PACKAGE_H_
#define OSPREY_SAMPLES_RTOS_LOADER_MODULE_PACKAGE_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/status.h"

namespace osprey::rtos_loader {

inline constexpr uint32_t kPackageVersion = 1;
inline constexpr size_t kPackageHeaderSize = 16;
// Module bytes are kept 64-byte aligned: external segments may need it.
inline constexpr size_t kModuleAlignment = 64;

// CRC-32 (reflected polynomial 0xEDB88320, initial and final XOR ~0):
// continue with the previous result as |crc| (0 to start).
uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t size);

// A received module in memory from |allocator|; frees it when destroyed.
class ReceivedModule {
 public:
  ReceivedModule() = default;
  ~ReceivedModule() { Reset(); }
  ReceivedModule(const ReceivedModule&) = delete;
  ReceivedModule& operator=(const ReceivedModule&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  void Reset();

 private:
  friend Status ReceivePackage(const char* path, size_t max_size, Allocator* allocator,
                               ReceivedModule* out_module);
  Allocator* allocator_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Receives the package at |path| into memory from |allocator|. Errors:
// NOT_FOUND if it cannot be opened; DATA_LOSS for a bad header, a payload
// shorter than announced (truncated) or longer, or a CRC mismatch;
// RESOURCE_EXHAUSTED for a payload over |max_size| bytes or out of memory.
// On error nothing stays allocated.
Status ReceivePackage(const char* path, size_t max_size, Allocator* allocator,
                      ReceivedModule* out_module);

}  // namespace osprey::rtos_loader

#endif  // OSPREY_SAMPLES_RTOS_LOADER_MODULE_PACKAGE_H_
