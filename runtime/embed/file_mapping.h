// Read-only file contents for module loading: memory-mapped on POSIX, read
// into allocator memory elsewhere, UNIMPLEMENTED without a file system.
#ifndef OSPREY_RUNTIME_EMBED_FILE_MAPPING_H_
#define OSPREY_RUNTIME_EMBED_FILE_MAPPING_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"

namespace osprey::embed {

// The contents of a file, unmapped (or freed) when the last reference goes.
// The bytes start at a page boundary when mapped, else at 64-byte alignment.
class FileMapping final : public RefObject {
 public:
  // Opens |path|. NOT_FOUND if it cannot be opened, DATA_LOSS if reading
  // fails, INVALID_ARGUMENT for an empty file, UNIMPLEMENTED on platforms
  // without files. |allocator| is borrowed for the mapping's lifetime.
  static StatusOr<ref_ptr<FileMapping>> Open(const char* path, Allocator* allocator);

  std::span<const uint8_t> contents() const { return {data_, size_}; }
  bool is_mapped() const { return mapped_; }

  // Use Open(); public for MakeRef.
  explicit FileMapping(Allocator* allocator) : allocator_(allocator) {}
  ~FileMapping() override;

 private:
  Allocator* allocator_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace osprey::embed

#endif  // OSPREY_RUNTIME_EMBED_FILE_MAPPING_H_
