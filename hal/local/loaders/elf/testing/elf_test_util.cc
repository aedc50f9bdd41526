// Test helpers for the ELF loader tests.
#include "hal/local/loaders/elf/testing/elf_test_util.h"

#include <cstring>

#include "tests/executables/test_executables.h"

namespace osprey::hal::local::loaders::elf::testing {

std::vector<uint8_t> LibraryBytes(const char* name, const char* arch) {
  auto span = osprey::testing::TestExecutable(name, arch);
  return std::vector<uint8_t>(span.begin(), span.end());
}

std::string StatusText(const Status& status) {
  char buffer[1024];
  status.ToString(buffer, sizeof(buffer));
  return buffer;
}

ElfEditor::ElfEditor(std::vector<uint8_t> bytes)
    : bytes_(std::move(bytes)), is64_(bytes_.size() > 4 && bytes_[4] == 2) {}

uint64_t ElfEditor::Get(size_t offset, size_t size) const {
  uint64_t v = 0;
  if (offset + size > bytes_.size()) return 0;
  for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(bytes_[offset + i]) << (8 * i);
  return v;
}

void ElfEditor::Set(size_t offset, size_t size, uint64_t value) {
  if (offset + size > bytes_.size()) return;
  for (size_t i = 0; i < size; ++i) bytes_[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

size_t ElfEditor::PhdrFieldOffset(uint32_t i, PhdrField field, size_t* out_size) const {
  const size_t base = phoff() + i * (is64_ ? 56 : 32);
  size_t off = 0, size = is64_ ? 8 : 4;
  switch (field) {
    case PhdrField::kType:
      off = 0;
      size = 4;
      break;
    case PhdrField::kFlags:
      off = is64_ ? 4 : 24;
      size = 4;
      break;
    case PhdrField::kOffset:
      off = is64_ ? 8 : 4;
      break;
    case PhdrField::kVaddr:
      off = is64_ ? 16 : 8;
      break;
    case PhdrField::kFilesz:
      off = is64_ ? 32 : 16;
      break;
    case PhdrField::kMemsz:
      off = is64_ ? 40 : 20;
      break;
  }
  *out_size = size;
  return base + off;
}

uint64_t ElfEditor::GetPhdr(uint32_t i, PhdrField field) const {
  size_t size;
  size_t off = PhdrFieldOffset(i, field, &size);
  return Get(off, size);
}

void ElfEditor::SetPhdr(uint32_t i, PhdrField field, uint64_t value) {
  size_t size;
  size_t off = PhdrFieldOffset(i, field, &size);
  Set(off, size, value);
}

int ElfEditor::FindPhdr(uint32_t type, uint32_t flags) const {
  for (uint32_t i = 0; i < phnum(); ++i) {
    if (GetPhdr(i, PhdrField::kType) == type && (GetPhdr(i, PhdrField::kFlags) & flags) == flags) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

size_t ElfEditor::VaddrToOffset(uint64_t vaddr) const {
  for (uint32_t i = 0; i < phnum(); ++i) {
    if (GetPhdr(i, PhdrField::kType) != 1) continue;
    const uint64_t v = GetPhdr(i, PhdrField::kVaddr);
    const uint64_t filesz = GetPhdr(i, PhdrField::kFilesz);
    if (vaddr >= v && vaddr < v + filesz) return GetPhdr(i, PhdrField::kOffset) + (vaddr - v);
  }
  return 0;
}

size_t ElfEditor::DynamicEntry(int64_t tag) const {
  const int dyn = FindPhdr(2);
  if (dyn < 0) return 0;
  const size_t begin = GetPhdr(dyn, PhdrField::kOffset);
  const size_t size = GetPhdr(dyn, PhdrField::kFilesz);
  for (size_t off = begin; off + dyn_size() <= begin + size; off += dyn_size()) {
    const uint64_t raw = Get(off, is64_ ? 8 : 4);
    const int64_t t = is64_ ? static_cast<int64_t>(raw) : static_cast<int32_t>(raw);
    if (t == 0) break;
    if (t == tag) return off;
  }
  return 0;
}

size_t ElfEditor::DynamicValueField(int64_t tag) const {
  const size_t e = DynamicEntry(tag);
  return e ? e + (is64_ ? 8 : 4) : 0;
}

uint64_t ElfEditor::DynamicValue(int64_t tag) const {
  const size_t f = DynamicValueField(tag);
  return f ? Get(f, is64_ ? 8 : 4) : 0;
}

size_t ElfEditor::StringOffset(uint32_t name_offset) const {
  return VaddrToOffset(DynamicValue(5) + name_offset);
}

size_t ElfEditor::FindSymbol(const char* name) const {
  const size_t symtab = VaddrToOffset(DynamicValue(6));
  const uint64_t strsz = DynamicValue(10);
  if (!symtab) return 0;
  const size_t sym_size = is64_ ? 24 : 16;
  for (size_t i = 1; i < 64; ++i) {
    const size_t sym = symtab + i * sym_size;
    const uint32_t name_off = static_cast<uint32_t>(Get(sym, 4));
    if (name_off >= strsz) continue;
    const size_t s = StringOffset(name_off);
    if (s &&
        strncmp(reinterpret_cast<const char*>(bytes_.data() + s), name, bytes_.size() - s) == 0) {
      return sym;
    }
  }
  return 0;
}

size_t ElfEditor::FirstRelocation() const {
  uint64_t addr = DynamicValue(7);     // DT_RELA
  if (!addr) addr = DynamicValue(17);  // DT_REL
  return addr ? VaddrToOffset(addr) : 0;
}

}  // namespace osprey::hal::local::loaders::elf::testing
