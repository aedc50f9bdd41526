// Test helpers: copies of the test dispatch libraries and an editor that
// patches ELF fields in them to craft hostile inputs.
#ifndef OSPREY_HAL_LOCAL_LOADERS_ELF_TESTING_ELF_TEST_UTIL_H_
#define OSPREY_HAL_LOCAL_LOADERS_ELF_TESTING_ELF_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hal/local/loaders/elf/elf_image.h"
#include "runtime/base/status.h"

namespace osprey::hal::local::loaders::elf::testing {

// Architectures the test libraries are built for, in ElfMachine order.
inline constexpr const char* kArches[] = {"x86_64", "aarch64", "armv7em", "riscv32", "riscv64"};

// A copy of test library |name| for |arch| (empty if it was not built).
std::vector<uint8_t> LibraryBytes(const char* name, const char* arch);

// "CODE: message" of |status|.
std::string StatusText(const Status& status);

// Reads and patches ELF structures in place. Offsets are file offsets.
// Every accessor asserts (via the returned bool/size_t) rather than
// trusting the file, so editing a valid library is reliable.
class ElfEditor {
 public:
  explicit ElfEditor(std::vector<uint8_t> bytes);

  std::vector<uint8_t>& bytes() { return bytes_; }
  bool is64() const { return is64_; }

  uint64_t Get(size_t offset, size_t size) const;
  void Set(size_t offset, size_t size, uint64_t value);

  // ELF header fields.
  size_t phoff_field() const { return is64_ ? 32 : 28; }
  size_t shoff_field() const { return is64_ ? 40 : 32; }
  size_t phnum_field() const { return is64_ ? 56 : 44; }
  uint64_t phoff() const { return Get(phoff_field(), is64_ ? 8 : 4); }
  uint32_t phnum() const { return static_cast<uint32_t>(Get(phnum_field(), 2)); }

  // Program header |i| fields: type, flags, offset, vaddr, filesz, memsz.
  enum class PhdrField { kType, kFlags, kOffset, kVaddr, kFilesz, kMemsz };
  size_t PhdrFieldOffset(uint32_t i, PhdrField field, size_t* out_size) const;
  uint64_t GetPhdr(uint32_t i, PhdrField field) const;
  void SetPhdr(uint32_t i, PhdrField field, uint64_t value);
  // Index of the first program header of |type| whose flags include
  // |flags|; -1 if none.
  int FindPhdr(uint32_t type, uint32_t flags = 0) const;

  // File offset of a link-time address inside a PT_LOAD's file bytes; 0 if
  // it is not in one.
  size_t VaddrToOffset(uint64_t vaddr) const;

  // File offset of the dynamic entry with |tag| (0 if absent) and of its
  // value field.
  size_t DynamicEntry(int64_t tag) const;
  size_t DynamicValueField(int64_t tag) const;
  uint64_t DynamicValue(int64_t tag) const;
  size_t dyn_size() const { return is64_ ? 16 : 8; }

  // File offset of dynamic symbol |name| (0 if not found) and its fields.
  size_t FindSymbol(const char* name) const;
  size_t sym_name_field(size_t sym) const { return sym; }
  size_t sym_shndx_field(size_t sym) const { return sym + (is64_ ? 6 : 14); }
  size_t sym_value_field(size_t sym) const { return sym + (is64_ ? 8 : 4); }
  // File offset of the string table entry of |name_offset|.
  size_t StringOffset(uint32_t name_offset) const;

  // File offset of the first entry of the dynamic relocation table (RELA or
  // REL, whichever the library has) and its layout.
  size_t FirstRelocation() const;
  size_t reloc_info_field(size_t rel) const { return rel + (is64_ ? 8 : 4); }
  size_t word_size() const { return is64_ ? 8 : 4; }
  // r_info for |sym| and |type|.
  uint64_t RelInfo(uint64_t sym, uint64_t type) const {
    return is64_ ? ((sym << 32) | type) : ((sym << 8) | (type & 0xff));
  }

 private:
  std::vector<uint8_t> bytes_;
  bool is64_;
};

}  // namespace osprey::hal::local::loaders::elf::testing

#endif  // OSPREY_HAL_LOCAL_LOADERS_ELF_TESTING_ELF_TEST_UTIL_H_
