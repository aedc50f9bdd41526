// ElfImage: ELF parsing, validation, mapping and relocation.
//
// Every field read from the file is checked before it is used: offsets and
// sizes against the file, addresses against the loaded segments, counts
// against the tables that hold them, with all arithmetic done in 64 bits and
// checked for overflow. Reads of the mapped image go through SegmentPtr(),
// which only hands out ranges lying inside one loaded segment.
#include "hal/local/loaders/elf/elf_image.h"

#include <cstring>
#include <new>
#include <utility>

#include "hal/local/loaders/elf/elf_status.h"
#include "hal/local/loaders/elf/image_memory.h"

namespace osprey::hal::local::loaders::elf {

namespace {

//===----------------------------------------------------------------------===//
// ELF constants (from the System V gABI and the processor supplements)
//===----------------------------------------------------------------------===//

constexpr uint8_t kElfClass32 = 1;
constexpr uint8_t kElfClass64 = 2;
constexpr uint8_t kElfDataLsb = 1;
constexpr uint16_t kEtExec = 2;
constexpr uint16_t kEtDyn = 3;

constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPtDynamic = 2;
constexpr uint32_t kPtTls = 7;
constexpr uint32_t kPtGnuRelro = 0x6474e552;

constexpr uint32_t kShtDynsym = 11;
constexpr uint16_t kShnUndef = 0;
constexpr uint16_t kShnAbs = 0xfff1;
constexpr uint8_t kSttFunc = 2;

constexpr int64_t kDtNull = 0;
constexpr int64_t kDtNeeded = 1;
constexpr int64_t kDtPltRelSz = 2;
constexpr int64_t kDtHash = 4;
constexpr int64_t kDtStrTab = 5;
constexpr int64_t kDtSymTab = 6;
constexpr int64_t kDtRela = 7;
constexpr int64_t kDtRelaSz = 8;
constexpr int64_t kDtRelaEnt = 9;
constexpr int64_t kDtStrSz = 10;
constexpr int64_t kDtSymEnt = 11;
constexpr int64_t kDtInit = 12;
constexpr int64_t kDtRel = 17;
constexpr int64_t kDtRelSz = 18;
constexpr int64_t kDtRelEnt = 19;
constexpr int64_t kDtPltRel = 20;
constexpr int64_t kDtTextRel = 22;
constexpr int64_t kDtJmpRel = 23;
constexpr int64_t kDtInitArray = 25;
constexpr int64_t kDtInitArraySz = 27;
constexpr int64_t kDtFlags = 30;
constexpr int64_t kDtPreinitArray = 32;
constexpr int64_t kDtPreinitArraySz = 33;
constexpr int64_t kDtRelrSz = 35;
constexpr int64_t kDtRelr = 36;
constexpr int64_t kDtRelrEnt = 37;
constexpr int64_t kDtGnuHash = 0x6ffffef5;
constexpr uint64_t kDfTextRel = 0x4;

constexpr uint32_t kNoType = 0xffffffffu;

struct MachineInfo {
  const char* format;
  const char* name;
  uint16_t e_machine;
  bool is64;
  // Relocation types. Symbolic ones compute S + A for a defined symbol S.
  uint32_t none;
  uint32_t relative;
  uint32_t abs_word;
  uint32_t glob_dat;
  uint32_t jump_slot;
};

// Indexed by ElfMachine.
constexpr MachineInfo kMachines[kElfMachineCount] = {
    {"elf-x86_64", "x86_64", 62, true, 0, 8, 1, 6, 7},
    {"elf-aarch64", "aarch64", 183, true, 0, 1027, 257, 1025, 1026},
    {"elf-armv7em", "armv7em", 40, false, 0, 23, 2, 21, 22},
    {"elf-riscv32", "riscv32", 243, false, 0, 3, 1, kNoType, 5},
    {"elf-riscv64", "riscv64", 243, true, 0, 3, 2, kNoType, 5},
};

const MachineInfo& Info(ElfMachine machine) { return kMachines[static_cast<int>(machine)]; }

//===----------------------------------------------------------------------===//
// Little-endian field access
//===----------------------------------------------------------------------===//

uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t Le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t Le64(const uint8_t* p) {
  return static_cast<uint64_t>(Le32(p)) | (static_cast<uint64_t>(Le32(p + 4)) << 32);
}
void StoreLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void StoreLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// [offset, offset + size) lies inside [0, limit).
bool InBounds(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

uint64_t AlignDown(uint64_t v, uint64_t a) { return v & ~(a - 1); }

struct Ehdr {
  uint16_t type, machine;
  uint32_t version;
  uint64_t phoff, shoff;
  uint16_t ehsize, phentsize, phnum, shentsize, shnum;
};

struct Phdr {
  uint32_t type, flags;
  uint64_t offset, vaddr, filesz, memsz, align;
};

struct Sym {
  uint32_t name;
  uint8_t info;
  uint16_t shndx;
  uint64_t value;
};

Ehdr ReadEhdr(const uint8_t* p, bool is64) {
  Ehdr h;
  h.type = Le16(p + 16);
  h.machine = Le16(p + 18);
  h.version = Le32(p + 20);
  if (is64) {
    h.phoff = Le64(p + 32);
    h.shoff = Le64(p + 40);
    h.ehsize = Le16(p + 52);
    h.phentsize = Le16(p + 54);
    h.phnum = Le16(p + 56);
    h.shentsize = Le16(p + 58);
    h.shnum = Le16(p + 60);
  } else {
    h.phoff = Le32(p + 28);
    h.shoff = Le32(p + 32);
    h.ehsize = Le16(p + 40);
    h.phentsize = Le16(p + 42);
    h.phnum = Le16(p + 44);
    h.shentsize = Le16(p + 46);
    h.shnum = Le16(p + 48);
  }
  return h;
}

Phdr ReadPhdr(const uint8_t* p, bool is64) {
  Phdr h;
  h.type = Le32(p);
  if (is64) {
    h.flags = Le32(p + 4);
    h.offset = Le64(p + 8);
    h.vaddr = Le64(p + 16);
    h.filesz = Le64(p + 32);
    h.memsz = Le64(p + 40);
    h.align = Le64(p + 48);
  } else {
    h.offset = Le32(p + 4);
    h.vaddr = Le32(p + 8);
    h.filesz = Le32(p + 16);
    h.memsz = Le32(p + 20);
    h.flags = Le32(p + 24);
    h.align = Le32(p + 28);
  }
  return h;
}

Sym ReadSym(const uint8_t* p, bool is64) {
  Sym s;
  s.name = Le32(p);
  if (is64) {
    s.info = p[4];
    s.shndx = Le16(p + 6);
    s.value = Le64(p + 8);
  } else {
    s.value = Le32(p + 4);
    s.info = p[12];
    s.shndx = Le16(p + 14);
  }
  return s;
}

size_t EhdrSize(bool is64) { return is64 ? 64 : 52; }
size_t PhdrSize(bool is64) { return is64 ? 56 : 32; }
size_t ShdrSize(bool is64) { return is64 ? 64 : 40; }
size_t DynSize(bool is64) { return is64 ? 16 : 8; }
size_t SymSize(bool is64) { return is64 ? 24 : 16; }
size_t RelSize(bool is64) { return is64 ? 16 : 8; }
size_t RelaSize(bool is64) { return is64 ? 24 : 12; }
size_t WordSize(bool is64) { return is64 ? 8 : 4; }

Status CheckIdentification(std::span<const uint8_t> data) {
  if (data.size() < 16) {
    return OSPREY_ELF_ERROR(kDataLoss, "file is %zu bytes, too small for an ELF identification",
                            data.size());
  }
  if (data[0] != 0x7f || data[1] != 'E' || data[2] != 'L' || data[3] != 'F') {
    return OSPREY_ELF_ERROR(kInvalidArgument, "not an ELF file (bad magic)");
  }
  if (data[4] != kElfClass32 && data[4] != kElfClass64) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "unknown ELF class %u", data[4]);
  }
  if (data[5] != kElfDataLsb) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "ELF byte order %u is not little-endian", data[5]);
  }
  if (data[6] != 1) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "unknown ELF identification version %u", data[6]);
  }
  if (data.size() < EhdrSize(data[4] == kElfClass64)) {
    return OSPREY_ELF_ERROR(kDataLoss, "file is %zu bytes, too small for an ELF header",
                            data.size());
  }
  return OkStatus();
}

}  // namespace

//===----------------------------------------------------------------------===//
// Machines
//===----------------------------------------------------------------------===//

const char* ElfMachineFormat(ElfMachine machine) { return Info(machine).format; }
const char* ElfMachineName(ElfMachine machine) { return Info(machine).name; }

bool ElfMachineFromFormat(const char* format, ElfMachine* out_machine) {
  if (!format) return false;
  for (int i = 0; i < kElfMachineCount; ++i) {
    if (strcmp(format, kMachines[i].format) == 0) {
      *out_machine = static_cast<ElfMachine>(i);
      return true;
    }
  }
  return false;
}

bool ElfHostMachine(ElfMachine* out_machine) {
#if defined(__x86_64__)
  *out_machine = ElfMachine::kX86_64;
  return true;
#elif defined(__aarch64__)
  *out_machine = ElfMachine::kAArch64;
  return true;
#elif defined(__arm__) && defined(__thumb2__) && defined(__ARM_ARCH_7EM__)
  *out_machine = ElfMachine::kArmv7em;
  return true;
#elif defined(__riscv) && __riscv_xlen == 32
  *out_machine = ElfMachine::kRiscv32;
  return true;
#elif defined(__riscv) && __riscv_xlen == 64
  *out_machine = ElfMachine::kRiscv64;
  return true;
#else
  (void)out_machine;
  return false;
#endif
}

StatusOr<ElfMachine> IdentifyElfMachine(std::span<const uint8_t> data) {
  OSPREY_RETURN_IF_ERROR(CheckIdentification(data));
  const bool is64 = data[4] == kElfClass64;
  const uint16_t e_machine = Le16(data.data() + 18);
  for (int i = 0; i < kElfMachineCount; ++i) {
    if (kMachines[i].e_machine == e_machine && kMachines[i].is64 == is64) {
      return static_cast<ElfMachine>(i);
    }
  }
  return OSPREY_ELF_ERROR(kInvalidArgument, "ELF machine %u (%s-bit) is not supported", e_machine,
                          is64 ? "64" : "32");
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

// Builds an ElfImage step by step; owns nothing (the image does).
class ElfImageBuilder {
 public:
  ElfImageBuilder(ElfImage* image, std::span<const uint8_t> data, const ElfImageOptions& options)
      : image_(image),
        data_(data),
        options_(options),
        info_(Info(options.machine)),
        is64_(info_.is64) {}

  Status Build();

 private:
  struct RelocTable {
    uint64_t addr = 0;
    uint64_t size = 0;
    bool rela = false;
    const char* name = "";
  };

  Status ParseProgramHeaders();
  Status MapSegments();
  Status ParseDynamic();
  Status CountSymbols();
  Status CountSymbolsFromSectionHeaders();
  Status ApplyRelocations(const RelocTable& table);
  Status ApplyPackedRelocations();
  // Adds the load bias to the word at |vaddr| (a RELATIVE relocation with
  // the addend in place); INVALID_ARGUMENT outside writable segments.
  Status RelocateWordInPlace(uint64_t vaddr, uint64_t entry);
  Status FindQuerySymbol();
  Status Protect();

  // Host pointer to [vaddr, vaddr + size) if it lies inside one segment.
  uint8_t* SegmentPtr(uint64_t vaddr, uint64_t size, uint32_t* out_flags = nullptr) const;
  // Reads symbol |index| (< symbol_count); false if out of the image.
  bool GetSymbol(uint32_t index, Sym* out) const;
  // Borrowed name of |sym|, or null if its name is outside the string table
  // or unterminated.
  const char* SymbolName(uint32_t name_offset) const;

  ElfImage* image_;
  std::span<const uint8_t> data_;
  const ElfImageOptions& options_;
  const MachineInfo& info_;
  const bool is64_;

  Ehdr ehdr_ = {};
  Phdr dynamic_phdr_ = {};
  bool has_dynamic_ = false;
  Phdr relro_phdr_ = {};
  bool has_relro_ = false;
  uint64_t max_align_ = 1;
  uint64_t page_ = 4096;

  // Dynamic section values.
  bool has_symtab_ = false, has_strtab_ = false, has_strsz_ = false;
  uint64_t hash_ = 0, gnu_hash_ = 0;
  bool has_hash_ = false, has_gnu_hash_ = false;
  RelocTable tables_[3];
  uint32_t table_count_ = 0;
  uint64_t relr_ = 0, relrsz_ = 0;  // Packed relative relocations.
  bool has_relr_ = false, has_relrsz_ = false;
};

uint8_t* ElfImageBuilder::SegmentPtr(uint64_t vaddr, uint64_t size, uint32_t* out_flags) const {
  for (uint32_t i = 0; i < image_->segment_count_; ++i) {
    const ElfSegment& s = image_->segments_[i];
    if (vaddr >= s.vaddr && InBounds(vaddr - s.vaddr, size, s.memsz)) {
      if (out_flags) *out_flags = s.flags;
      return image_->host_base_ + (vaddr - image_->min_vaddr_);
    }
  }
  return nullptr;
}

bool ElfImageBuilder::GetSymbol(uint32_t index, Sym* out) const {
  const uint8_t* p =
      SegmentPtr(image_->symtab_ + static_cast<uint64_t>(index) * SymSize(is64_), SymSize(is64_));
  if (!p) return false;
  *out = ReadSym(p, is64_);
  return true;
}

const char* ElfImageBuilder::SymbolName(uint32_t name_offset) const {
  if (name_offset >= image_->strsz_) return nullptr;
  const char* s = reinterpret_cast<const char*>(
      SegmentPtr(image_->strtab_ + name_offset, image_->strsz_ - name_offset));
  if (!s) return nullptr;
  if (!memchr(s, '\0', image_->strsz_ - name_offset)) return nullptr;
  return s;
}

Status ElfImageBuilder::Build() {
  OSPREY_ASSIGN_OR_RETURN(ElfMachine machine, IdentifyElfMachine(data_));
  if (machine != options_.machine) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "ELF file is for %s, expected %s",
                            ElfMachineName(machine), ElfMachineName(options_.machine));
  }
  ehdr_ = ReadEhdr(data_.data(), is64_);
  if (ehdr_.type == kEtExec) {
    return OSPREY_ELF_ERROR(
        kInvalidArgument,
        "ELF file is an executable (ET_EXEC), not a position-independent shared object "
        "(ET_DYN); link it with -shared");
  }
  if (ehdr_.type != kEtDyn) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "ELF file type %u is not a shared object (ET_DYN)",
                            ehdr_.type);
  }
  if (ehdr_.version != 1) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "unknown ELF version %u", ehdr_.version);
  }
  if (options_.executable) {
    ElfMachine host;
    if (!ElfHostMachine(&host) || host != options_.machine) {
      return OSPREY_ELF_ERROR(kUnavailable, "%s code cannot run on this host",
                              ElfMachineName(machine));
    }
    page_ = ImageMemoryPageSize();
    if (page_ < 1 || (page_ & (page_ - 1)) != 0) page_ = 1;
  }
  // Section headers are optional, but a table that is declared and cut off
  // means the file is truncated (linkers put it at the very end).
  if (ehdr_.shoff != 0 && ehdr_.shnum != 0) {
    if (ehdr_.shentsize != ShdrSize(is64_)) {
      return OSPREY_ELF_ERROR(kDataLoss, "section header entry size is %u, expected %zu",
                              ehdr_.shentsize, ShdrSize(is64_));
    }
    if (!InBounds(ehdr_.shoff, static_cast<uint64_t>(ehdr_.shnum) * ShdrSize(is64_),
                  data_.size())) {
      return OSPREY_ELF_ERROR(
          kDataLoss,
          "section headers (offset %llu, %u entries) extend past the end of the "
          "%zu-byte file; is it truncated?",
          static_cast<unsigned long long>(ehdr_.shoff), ehdr_.shnum, data_.size());
    }
  }
  OSPREY_RETURN_IF_ERROR(ParseProgramHeaders());
  OSPREY_RETURN_IF_ERROR(MapSegments());
  OSPREY_RETURN_IF_ERROR(ParseDynamic());
  OSPREY_RETURN_IF_ERROR(CountSymbols());
  for (uint32_t i = 0; i < table_count_; ++i) {
    OSPREY_RETURN_IF_ERROR(ApplyRelocations(tables_[i]));
  }
  OSPREY_RETURN_IF_ERROR(ApplyPackedRelocations());
  OSPREY_RETURN_IF_ERROR(FindQuerySymbol());
  if (options_.executable) OSPREY_RETURN_IF_ERROR(Protect());
  return OkStatus();
}

Status ElfImageBuilder::ParseProgramHeaders() {
  const size_t phsize = PhdrSize(is64_);
  if (ehdr_.phnum == 0)
    return OSPREY_ELF_ERROR(kInvalidArgument, "ELF file has no program headers");
  if (ehdr_.phentsize != phsize) {
    return OSPREY_ELF_ERROR(kDataLoss, "program header entry size is %u, expected %zu",
                            ehdr_.phentsize, phsize);
  }
  if (!InBounds(ehdr_.phoff, static_cast<uint64_t>(ehdr_.phnum) * phsize, data_.size())) {
    return OSPREY_ELF_ERROR(kDataLoss,
                            "program headers (offset %llu, %u entries) extend past the end of the "
                            "%zu-byte file",
                            static_cast<unsigned long long>(ehdr_.phoff), ehdr_.phnum,
                            data_.size());
  }
  const uint64_t addr_limit = is64_ ? UINT64_MAX : 0xffffffffull;
  for (uint32_t i = 0; i < ehdr_.phnum; ++i) {
    const Phdr ph = ReadPhdr(data_.data() + ehdr_.phoff + i * phsize, is64_);
    if (ph.type == kPtLoad) {
      if (ph.memsz == 0) continue;
      if (ph.filesz > ph.memsz) {
        return OSPREY_ELF_ERROR(kDataLoss, "segment %u: file size %llu exceeds memory size %llu", i,
                                static_cast<unsigned long long>(ph.filesz),
                                static_cast<unsigned long long>(ph.memsz));
      }
      if (!InBounds(ph.offset, ph.filesz, data_.size())) {
        return OSPREY_ELF_ERROR(kDataLoss,
                                "segment %u: file range [%llu, +%llu) extends past the end of the "
                                "%zu-byte file",
                                i, static_cast<unsigned long long>(ph.offset),
                                static_cast<unsigned long long>(ph.filesz), data_.size());
      }
      if (!InBounds(ph.vaddr, ph.memsz, addr_limit)) {
        return OSPREY_ELF_ERROR(kDataLoss, "segment %u: address range [0x%llx, +0x%llx) overflows",
                                i, static_cast<unsigned long long>(ph.vaddr),
                                static_cast<unsigned long long>(ph.memsz));
      }
      if ((ph.flags & kElfSegmentWrite) && (ph.flags & kElfSegmentExecute)) {
        return OSPREY_ELF_ERROR(kInvalidArgument, "segment %u is both writable and executable", i);
      }
      if (ph.align > 1 && (ph.align & (ph.align - 1)) != 0) {
        return OSPREY_ELF_ERROR(kDataLoss, "segment %u: alignment %llu is not a power of two", i,
                                static_cast<unsigned long long>(ph.align));
      }
      if (image_->segment_count_ == ElfImage::kMaxSegments) {
        return OSPREY_ELF_ERROR(kInvalidArgument, "ELF file has more than %u loadable segments",
                                ElfImage::kMaxSegments);
      }
      for (uint32_t j = 0; j < image_->segment_count_; ++j) {
        const ElfSegment& o = image_->segments_[j];
        if (ph.vaddr < o.vaddr + o.memsz && o.vaddr < ph.vaddr + ph.memsz) {
          return OSPREY_ELF_ERROR(kDataLoss,
                                  "segment %u overlaps another loadable segment at 0x%llx", i,
                                  static_cast<unsigned long long>(o.vaddr));
        }
      }
      ElfSegment& s = image_->segments_[image_->segment_count_++];
      s.vaddr = ph.vaddr;
      s.memsz = ph.memsz;
      s.filesz = ph.filesz;
      s.flags = ph.flags & 7u;
      // Where the segment's bytes come from is kept in the file offset of the
      // matching header; MapSegments reads the headers again.
      if (ph.align > max_align_) max_align_ = ph.align;
    } else if (ph.type == kPtDynamic) {
      if (has_dynamic_)
        return OSPREY_ELF_ERROR(kDataLoss, "ELF file has more than one PT_DYNAMIC header");
      dynamic_phdr_ = ph;
      has_dynamic_ = true;
    } else if (ph.type == kPtGnuRelro) {
      relro_phdr_ = ph;
      has_relro_ = true;
    } else if (ph.type == kPtTls && ph.memsz != 0) {
      return OSPREY_ELF_ERROR(kUnimplemented,
                              "thread-local storage (PT_TLS) is not supported by the ELF loader");
    }
  }
  if (image_->segment_count_ == 0) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "ELF file has no loadable segments");
  }
  if (!has_dynamic_) {
    return OSPREY_ELF_ERROR(kInvalidArgument,
                            "ELF file has no PT_DYNAMIC segment (not a shared object)");
  }
  return OkStatus();
}

Status ElfImageBuilder::MapSegments() {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t i = 0; i < image_->segment_count_; ++i) {
    const ElfSegment& s = image_->segments_[i];
    if (s.vaddr < lo) lo = s.vaddr;
    if (s.vaddr + s.memsz > hi) hi = s.vaddr + s.memsz;
  }
  lo = AlignDown(lo, page_);
  uint64_t span = hi - lo;
  if (span > options_.max_image_size || span > SIZE_MAX - page_) {
    return OSPREY_ELF_ERROR(kResourceExhausted, "image spans %llu bytes; the limit is %zu",
                            static_cast<unsigned long long>(span), options_.max_image_size);
  }
  span = (span + page_ - 1) & ~(page_ - 1);
  image_->min_vaddr_ = lo;

  if (options_.executable) {
    ImageMemory memory;
    const size_t align = max_align_ > 4096 ? 4096 : static_cast<size_t>(max_align_);
    OSPREY_RETURN_IF_ERROR(
        AllocateExecutableMemory(static_cast<size_t>(span), align, image_->allocator_, &memory));
    image_->host_base_ = memory.base;
    image_->size_ = static_cast<size_t>(span);
    image_->mapped_ = memory.mapped;
    image_->load_bias_ = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(memory.base)) - lo;
  } else {
    if (!is64_ && !InBounds(options_.link_base, span, 0x100000000ull)) {
      return OSPREY_ELF_ERROR(kInvalidArgument,
                              "link base 0x%llx leaves the %llu-byte image outside the 32-bit "
                              "address space",
                              static_cast<unsigned long long>(options_.link_base),
                              static_cast<unsigned long long>(span));
    }
    if (!InBounds(options_.link_base, span, UINT64_MAX)) {
      return OSPREY_ELF_ERROR(kInvalidArgument, "link base 0x%llx overflows",
                              static_cast<unsigned long long>(options_.link_base));
    }
    void* p = nullptr;
    OSPREY_RETURN_IF_ERROR(image_->allocator_->AllocateZeroed(static_cast<size_t>(span), 16, &p),
                           "allocating a %llu-byte image", static_cast<unsigned long long>(span));
    image_->host_base_ = static_cast<uint8_t*>(p);
    image_->size_ = static_cast<size_t>(span);
    image_->mapped_ = false;
    image_->load_bias_ = options_.link_base - lo;
  }

  // Copy file bytes; the rest of each segment (.bss) is already zero.
  const size_t phsize = PhdrSize(is64_);
  for (uint32_t i = 0; i < ehdr_.phnum; ++i) {
    const Phdr ph = ReadPhdr(data_.data() + ehdr_.phoff + i * phsize, is64_);
    if (ph.type != kPtLoad || ph.memsz == 0 || ph.filesz == 0) continue;
    memcpy(image_->host_base_ + (ph.vaddr - lo), data_.data() + ph.offset,
           static_cast<size_t>(ph.filesz));
  }
  return OkStatus();
}

Status ElfImageBuilder::ParseDynamic() {
  const size_t dsize = DynSize(is64_);
  const uint64_t count = dynamic_phdr_.filesz / dsize;
  const uint8_t* dyn = SegmentPtr(dynamic_phdr_.vaddr, count * dsize);
  if (!dyn || count == 0) {
    return OSPREY_ELF_ERROR(kDataLoss,
                            "PT_DYNAMIC [0x%llx, +%llu) is not inside a loadable segment",
                            static_cast<unsigned long long>(dynamic_phdr_.vaddr),
                            static_cast<unsigned long long>(dynamic_phdr_.filesz));
  }
  uint64_t needed = 0;
  bool has_needed = false;
  uint64_t rel = 0, relsz = 0, rela = 0, relasz = 0, jmprel = 0, pltrelsz = 0, pltrel = 0;
  bool has_rel = false, has_relsz = false, has_rela = false, has_relasz = false;
  bool has_jmprel = false, has_pltrelsz = false, has_pltrel = false;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = dyn + i * dsize;
    const int64_t tag = is64_ ? static_cast<int64_t>(Le64(e)) : static_cast<int32_t>(Le32(e));
    const uint64_t val = is64_ ? Le64(e + 8) : Le32(e + 4);
    if (tag == kDtNull) break;
    switch (tag) {
      case kDtNeeded:
        if (!has_needed) needed = val;
        has_needed = true;
        break;
      case kDtHash:
        hash_ = val;
        has_hash_ = true;
        break;
      case kDtGnuHash:
        gnu_hash_ = val;
        has_gnu_hash_ = true;
        break;
      case kDtStrTab:
        image_->strtab_ = val;
        has_strtab_ = true;
        break;
      case kDtSymTab:
        image_->symtab_ = val;
        has_symtab_ = true;
        break;
      case kDtStrSz:
        image_->strsz_ = val;
        has_strsz_ = true;
        break;
      case kDtSymEnt:
        if (val != SymSize(is64_)) {
          return OSPREY_ELF_ERROR(kDataLoss, "DT_SYMENT is %llu, expected %zu",
                                  static_cast<unsigned long long>(val), SymSize(is64_));
        }
        break;
      case kDtRel:
        rel = val;
        has_rel = true;
        break;
      case kDtRelSz:
        relsz = val;
        has_relsz = true;
        break;
      case kDtRelEnt:
        if (val != RelSize(is64_)) {
          return OSPREY_ELF_ERROR(kDataLoss, "DT_RELENT is %llu, expected %zu",
                                  static_cast<unsigned long long>(val), RelSize(is64_));
        }
        break;
      case kDtRela:
        rela = val;
        has_rela = true;
        break;
      case kDtRelaSz:
        relasz = val;
        has_relasz = true;
        break;
      case kDtRelaEnt:
        if (val != RelaSize(is64_)) {
          return OSPREY_ELF_ERROR(kDataLoss, "DT_RELAENT is %llu, expected %zu",
                                  static_cast<unsigned long long>(val), RelaSize(is64_));
        }
        break;
      case kDtJmpRel:
        jmprel = val;
        has_jmprel = true;
        break;
      case kDtPltRelSz:
        pltrelsz = val;
        has_pltrelsz = true;
        break;
      case kDtPltRel:
        pltrel = val;
        has_pltrel = true;
        break;
      case kDtTextRel:
        return OSPREY_ELF_ERROR(
            kInvalidArgument,
            "ELF file has relocations in read-only segments (DT_TEXTREL); build with -fPIC");
      case kDtFlags:
        if (val & kDfTextRel) {
          return OSPREY_ELF_ERROR(
              kInvalidArgument,
              "ELF file has relocations in read-only segments (DF_TEXTREL); build with -fPIC");
        }
        break;
      case kDtInit:
      case kDtInitArray:
      case kDtPreinitArray:
        return OSPREY_ELF_ERROR(
            kUnimplemented,
            "ELF file has initializers (DT_INIT/DT_INIT_ARRAY/DT_PREINIT_ARRAY), which the ELF "
            "loader does not run");
      case kDtInitArraySz:
      case kDtPreinitArraySz:
        if (val != 0) {
          return OSPREY_ELF_ERROR(
              kUnimplemented, "ELF file has initializer arrays, which the ELF loader does not run");
        }
        break;
      case kDtRelr:
        relr_ = val;
        has_relr_ = true;
        break;
      case kDtRelrSz:
        relrsz_ = val;
        has_relrsz_ = true;
        break;
      case kDtRelrEnt:
        if (val != WordSize(is64_)) {
          return OSPREY_ELF_ERROR(kDataLoss, "DT_RELRENT is %llu, expected %zu",
                                  static_cast<unsigned long long>(val), WordSize(is64_));
        }
        break;
      default:
        break;  // Informational tags (SONAME, FLAGS_1, versions, ...).
    }
  }

  if (!has_symtab_ || !has_strtab_ || !has_strsz_) {
    return OSPREY_ELF_ERROR(kInvalidArgument,
                            "ELF file has no dynamic symbol table (DT_SYMTAB, DT_STRTAB and "
                            "DT_STRSZ are required)");
  }
  if (!SegmentPtr(image_->strtab_, image_->strsz_) || image_->strsz_ == 0) {
    return OSPREY_ELF_ERROR(kDataLoss,
                            "dynamic string table [0x%llx, +%llu) is not inside a loadable segment",
                            static_cast<unsigned long long>(image_->strtab_),
                            static_cast<unsigned long long>(image_->strsz_));
  }
  if (has_needed) {
    const char* name = needed > UINT32_MAX ? nullptr : SymbolName(static_cast<uint32_t>(needed));
    (void)name;  // Unused in codes-only builds.
    return OSPREY_ELF_ERROR(
        kInvalidArgument,
        "ELF file depends on shared library '%s' (DT_NEEDED); executable libraries must be "
        "self-contained (link with -nostdlib)",
        name ? name : "<invalid name>");
  }

  if (has_rel || has_relsz) {
    if (!has_rel || !has_relsz)
      return OSPREY_ELF_ERROR(kDataLoss, "DT_REL and DT_RELSZ must come together");
    tables_[table_count_++] = {rel, relsz, false, "DT_REL"};
  }
  if (has_rela || has_relasz) {
    if (!has_rela || !has_relasz)
      return OSPREY_ELF_ERROR(kDataLoss, "DT_RELA and DT_RELASZ must come together");
    tables_[table_count_++] = {rela, relasz, true, "DT_RELA"};
  }
  if (has_jmprel || has_pltrelsz) {
    if (!has_jmprel || !has_pltrelsz || !has_pltrel) {
      return OSPREY_ELF_ERROR(kDataLoss, "DT_JMPREL needs DT_PLTRELSZ and DT_PLTREL");
    }
    if (pltrel != static_cast<uint64_t>(kDtRel) && pltrel != static_cast<uint64_t>(kDtRela)) {
      return OSPREY_ELF_ERROR(kDataLoss, "DT_PLTREL is %llu, expected DT_REL or DT_RELA",
                              static_cast<unsigned long long>(pltrel));
    }
    tables_[table_count_++] = {jmprel, pltrelsz, pltrel == static_cast<uint64_t>(kDtRela),
                               "DT_JMPREL"};
  }
  for (uint32_t i = 0; i < table_count_; ++i) {
    const RelocTable& t = tables_[i];
    if (t.size == 0) continue;
    const size_t ent = t.rela ? RelaSize(is64_) : RelSize(is64_);
    if (t.size % ent != 0) {
      return OSPREY_ELF_ERROR(kDataLoss,
                              "%s table size %llu is not a multiple of its entry size %zu", t.name,
                              static_cast<unsigned long long>(t.size), ent);
    }
    if (!SegmentPtr(t.addr, t.size)) {
      return OSPREY_ELF_ERROR(
          kDataLoss, "%s table [0x%llx, +%llu) is not inside a loadable segment", t.name,
          static_cast<unsigned long long>(t.addr), static_cast<unsigned long long>(t.size));
    }
  }
  if (has_relr_ || has_relrsz_) {
    if (!has_relr_ || !has_relrsz_) {
      return OSPREY_ELF_ERROR(kDataLoss, "DT_RELR and DT_RELRSZ must come together");
    }
    if (relrsz_ % WordSize(is64_) != 0 || (relrsz_ != 0 && !SegmentPtr(relr_, relrsz_))) {
      return OSPREY_ELF_ERROR(kDataLoss,
                              "DT_RELR table [0x%llx, +%llu) is not a whole number of words "
                              "inside a loadable segment",
                              static_cast<unsigned long long>(relr_),
                              static_cast<unsigned long long>(relrsz_));
    }
  }
  return OkStatus();
}

Status ElfImageBuilder::CountSymbols() {
  const uint64_t sym_size = SymSize(is64_);
  uint64_t count = 0;
  if (has_hash_) {
    const uint8_t* h = SegmentPtr(hash_, 8);
    if (!h)
      return OSPREY_ELF_ERROR(kDataLoss, "DT_HASH table header is not inside a loadable segment");
    const uint64_t nbucket = Le32(h);
    const uint64_t nchain = Le32(h + 4);
    if (!SegmentPtr(hash_, (2 + nbucket + nchain) * 4)) {
      return OSPREY_ELF_ERROR(kDataLoss,
                              "DT_HASH table (%llu buckets, %llu chains) is not inside a loadable "
                              "segment",
                              static_cast<unsigned long long>(nbucket),
                              static_cast<unsigned long long>(nchain));
    }
    count = nchain;
  } else if (has_gnu_hash_) {
    const uint8_t* h = SegmentPtr(gnu_hash_, 16);
    if (!h)
      return OSPREY_ELF_ERROR(kDataLoss,
                              "DT_GNU_HASH table header is not inside a loadable segment");
    const uint64_t nbuckets = Le32(h);
    const uint64_t symoffset = Le32(h + 4);
    const uint64_t bloom_size = Le32(h + 8);
    const uint64_t buckets = gnu_hash_ + 16 + bloom_size * WordSize(is64_);
    const uint8_t* b = SegmentPtr(buckets, nbuckets * 4);
    if (!b)
      return OSPREY_ELF_ERROR(kDataLoss, "DT_GNU_HASH buckets are not inside a loadable segment");
    uint64_t max_index = 0;
    for (uint64_t i = 0; i < nbuckets; ++i) {
      const uint64_t v = Le32(b + i * 4);
      if (v > max_index) max_index = v;
    }
    if (max_index < symoffset) {
      count = symoffset;
    } else {
      const uint64_t chains = buckets + nbuckets * 4;
      // Every step reads one more chain word, so the walk ends at the end
      // of the segment at the latest.
      for (uint64_t index = max_index;; ++index) {
        const uint8_t* c = SegmentPtr(chains + (index - symoffset) * 4, 4);
        if (!c) return OSPREY_ELF_ERROR(kDataLoss, "DT_GNU_HASH chain runs out of its segment");
        if (Le32(c) & 1u) {
          count = index + 1;
          break;
        }
      }
    }
  } else {
    OSPREY_RETURN_IF_ERROR(CountSymbolsFromSectionHeaders());
    count = image_->symbol_count_;
  }
  if (count > image_->size_ / sym_size || !SegmentPtr(image_->symtab_, count * sym_size)) {
    return OSPREY_ELF_ERROR(kDataLoss,
                            "dynamic symbol table [0x%llx, %llu symbols) is not inside a loadable "
                            "segment",
                            static_cast<unsigned long long>(image_->symtab_),
                            static_cast<unsigned long long>(count));
  }
  image_->symbol_count_ = static_cast<uint32_t>(count);
  return OkStatus();
}

Status ElfImageBuilder::CountSymbolsFromSectionHeaders() {
  const size_t shsize = ShdrSize(is64_);
  if (ehdr_.shoff == 0 || ehdr_.shnum == 0) {
    return OSPREY_ELF_ERROR(kInvalidArgument,
                            "cannot tell the number of dynamic symbols: no DT_HASH, "
                            "DT_GNU_HASH or section headers");
  }
  if (ehdr_.shentsize != shsize) {
    return OSPREY_ELF_ERROR(kDataLoss, "section header entry size is %u, expected %zu",
                            ehdr_.shentsize, shsize);
  }
  if (!InBounds(ehdr_.shoff, static_cast<uint64_t>(ehdr_.shnum) * shsize, data_.size())) {
    return OSPREY_ELF_ERROR(kDataLoss, "section headers extend past the end of the file");
  }
  for (uint32_t i = 0; i < ehdr_.shnum; ++i) {
    const uint8_t* p = data_.data() + ehdr_.shoff + i * shsize;
    if (Le32(p + 4) != kShtDynsym) continue;
    const uint64_t size = is64_ ? Le64(p + 32) : Le32(p + 20);
    const uint64_t entsize = is64_ ? Le64(p + 56) : Le32(p + 36);
    if (entsize != SymSize(is64_)) {
      return OSPREY_ELF_ERROR(kDataLoss, "SHT_DYNSYM entry size is %llu, expected %zu",
                              static_cast<unsigned long long>(entsize), SymSize(is64_));
    }
    if (size / entsize > UINT32_MAX) return OSPREY_ELF_ERROR(kDataLoss, "SHT_DYNSYM is too large");
    image_->symbol_count_ = static_cast<uint32_t>(size / entsize);
    return OkStatus();
  }
  return OSPREY_ELF_ERROR(kInvalidArgument,
                          "cannot tell the number of dynamic symbols: no DT_HASH, "
                          "DT_GNU_HASH or SHT_DYNSYM section");
}

Status ElfImageBuilder::ApplyRelocations(const RelocTable& table) {
  const size_t ent = table.rela ? RelaSize(is64_) : RelSize(is64_);
  const uint64_t count = table.size / ent;
  const size_t word = WordSize(is64_);
  const uint8_t* entries = SegmentPtr(table.addr, table.size);
  if (count > 0 && !table.rela) image_->uses_rel_ = true;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = entries + i * ent;
    uint64_t offset, type, sym;
    int64_t addend = 0;
    if (is64_) {
      offset = Le64(e);
      const uint64_t r_info = Le64(e + 8);
      type = r_info & 0xffffffffu;
      sym = r_info >> 32;
      if (table.rela) addend = static_cast<int64_t>(Le64(e + 16));
    } else {
      offset = Le32(e);
      const uint32_t r_info = Le32(e + 4);
      type = r_info & 0xffu;
      sym = r_info >> 8;
      if (table.rela) addend = static_cast<int32_t>(Le32(e + 8));
    }
    if (type == info_.none) continue;

    uint64_t s = 0;
    if (sym != 0) {
      Sym symbol;
      if (sym >= image_->symbol_count_ || !GetSymbol(static_cast<uint32_t>(sym), &symbol)) {
        return OSPREY_ELF_ERROR(kDataLoss, "%s relocation %llu refers to symbol %llu; there are %u",
                                table.name, static_cast<unsigned long long>(i),
                                static_cast<unsigned long long>(sym), image_->symbol_count_);
      }
      if (symbol.shndx == kShnUndef) {
        const char* name = SymbolName(symbol.name);
        (void)name;  // Unused in codes-only builds.
        return OSPREY_ELF_ERROR(
            kInvalidArgument,
            "%s relocation %llu refers to undefined symbol '%s'; executable libraries must not "
            "reference symbols from outside (use imports)",
            table.name, static_cast<unsigned long long>(i), name ? name : "<invalid name>");
      }
      s = symbol.shndx == kShnAbs ? symbol.value : image_->load_bias_ + symbol.value;
    }
    const bool symbolic =
        type == info_.abs_word || type == info_.glob_dat || type == info_.jump_slot;
    if (type != info_.relative && !symbolic) {
      return OSPREY_ELF_ERROR(kInvalidArgument,
                              "%s relocation %llu has type %llu, which the ELF loader does not "
                              "support for %s",
                              table.name, static_cast<unsigned long long>(i),
                              static_cast<unsigned long long>(type), info_.name);
    }
    if (symbolic && type != info_.abs_word && sym == 0) {
      return OSPREY_ELF_ERROR(kInvalidArgument, "%s relocation %llu (type %llu) names no symbol",
                              table.name, static_cast<unsigned long long>(i),
                              static_cast<unsigned long long>(type));
    }
    uint32_t flags = 0;
    uint8_t* target = SegmentPtr(offset, word, &flags);
    if (!target || !(flags & kElfSegmentWrite)) {
      return OSPREY_ELF_ERROR(kInvalidArgument,
                              "%s relocation %llu writes to 0x%llx, outside every writable "
                              "segment",
                              table.name, static_cast<unsigned long long>(i),
                              static_cast<unsigned long long>(offset));
    }
    if (!table.rela) {
      // REL: the addend is the word being relocated. GLOB_DAT/JUMP_SLOT
      // words hold link-time placeholders, not addends.
      if (type == info_.relative || type == info_.abs_word) {
        addend = is64_ ? static_cast<int64_t>(Le64(target)) : static_cast<int32_t>(Le32(target));
      }
    }
    const uint64_t value =
        (type == info_.relative ? image_->load_bias_ : s) + static_cast<uint64_t>(addend);
    if (is64_) {
      StoreLe64(target, value);
    } else {
      StoreLe32(target, static_cast<uint32_t>(value));
    }
    ++image_->relocation_count_;
  }
  return OkStatus();
}

Status ElfImageBuilder::RelocateWordInPlace(uint64_t vaddr, uint64_t entry) {
  uint32_t flags = 0;
  uint8_t* target = SegmentPtr(vaddr, WordSize(is64_), &flags);
  if (!target || !(flags & kElfSegmentWrite)) {
    return OSPREY_ELF_ERROR(
        kInvalidArgument, "DT_RELR entry %llu relocates 0x%llx, outside every writable segment",
        static_cast<unsigned long long>(entry), static_cast<unsigned long long>(vaddr));
  }
  if (is64_) {
    StoreLe64(target, Le64(target) + image_->load_bias_);
  } else {
    StoreLe32(target, static_cast<uint32_t>(Le32(target) + image_->load_bias_));
  }
  ++image_->relocation_count_;
  return OkStatus();
}

// DT_RELR: an even entry is the address of a word to relocate; an odd entry
// is a bitmap whose bit i (i >= 1) relocates the (i - 1)th word after the
// last address, after which the address advances by (bits - 1) words.
Status ElfImageBuilder::ApplyPackedRelocations() {
  if (!has_relr_ || relrsz_ == 0) return OkStatus();
  const size_t word = WordSize(is64_);
  const uint32_t bits = static_cast<uint32_t>(word * 8);
  const uint8_t* entries = SegmentPtr(relr_, relrsz_);
  const uint64_t count = relrsz_ / word;
  uint64_t where = 0;
  bool have_address = false;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t entry = is64_ ? Le64(entries + i * word) : Le32(entries + i * word);
    if ((entry & 1) == 0) {
      OSPREY_RETURN_IF_ERROR(RelocateWordInPlace(entry, i));
      where = entry + word;
      have_address = true;
      continue;
    }
    if (!have_address) {
      return OSPREY_ELF_ERROR(kDataLoss, "DT_RELR entry %llu is a bitmap before any address",
                              static_cast<unsigned long long>(i));
    }
    uint64_t offset = where;
    for (uint64_t mask = entry >> 1; mask != 0; mask >>= 1, offset += word) {
      if (mask & 1) OSPREY_RETURN_IF_ERROR(RelocateWordInPlace(offset, i));
    }
    where += (bits - 1) * word;
  }
  image_->uses_relr_ = true;
  return OkStatus();
}

Status ElfImageBuilder::FindQuerySymbol() {
  const char* kName = OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME;
  for (uint32_t i = 1; i < image_->symbol_count_; ++i) {
    Sym sym;
    if (!GetSymbol(i, &sym))
      return OSPREY_ELF_ERROR(kDataLoss, "dynamic symbol %u is out of range", i);
    const char* name = SymbolName(sym.name);
    if (!name || strcmp(name, kName) != 0 || sym.shndx == kShnUndef) continue;
    if ((sym.info & 0xf) != kSttFunc) {
      return OSPREY_ELF_ERROR(kInvalidArgument, "symbol '%s' is not a function", kName);
    }
    uint64_t vaddr = sym.value;
    if (options_.machine == ElfMachine::kArmv7em) vaddr &= ~1ull;  // Thumb bit.
    uint32_t flags = 0;
    if (!SegmentPtr(vaddr, 1, &flags) || !(flags & kElfSegmentExecute)) {
      return OSPREY_ELF_ERROR(kInvalidArgument,
                              "symbol '%s' at 0x%llx is not inside an executable segment", kName,
                              static_cast<unsigned long long>(sym.value));
    }
    image_->query_address_ = image_->load_bias_ + sym.value;
    return OkStatus();
  }
  return OSPREY_ELF_ERROR(kInvalidArgument,
                          "ELF file defines no symbol '%s'; it is not an Osprey executable "
                          "library",
                          kName);
}

Status ElfImageBuilder::Protect() {
  if (page_ <= 1) {
    for (uint32_t i = 0; i < image_->segment_count_; ++i) {
      const ElfSegment& s = image_->segments_[i];
      if (s.flags & kElfSegmentExecute) {
        FlushInstructionCache(image_->host_base_ + (s.vaddr - image_->min_vaddr_),
                              static_cast<size_t>(s.memsz));
      }
    }
    return OkStatus();
  }
  ImageMemory memory;
  memory.base = image_->host_base_;
  memory.size = image_->size_;
  memory.mapped = image_->mapped_;
  // Pages no segment covers become inaccessible.
  OSPREY_RETURN_IF_ERROR(ProtectImageMemory(memory, 0, image_->size_, 0));
  uint64_t first[ElfImage::kMaxSegments], last[ElfImage::kMaxSegments];
  for (uint32_t i = 0; i < image_->segment_count_; ++i) {
    const ElfSegment& s = image_->segments_[i];
    first[i] = AlignDown(s.vaddr - image_->min_vaddr_, page_);
    last[i] = AlignDown(s.vaddr - image_->min_vaddr_ + s.memsz - 1, page_) + page_;
  }
  for (uint32_t i = 0; i < image_->segment_count_; ++i) {
    // A page shared by two segments gets both their permissions, unless
    // that would make it writable and executable.
    uint32_t flags = image_->segments_[i].flags;
    for (uint32_t j = 0; j < image_->segment_count_; ++j) {
      if (j != i && first[i] < last[j] && first[j] < last[i]) {
        flags |= image_->segments_[j].flags;
      }
    }
    if ((flags & kElfSegmentWrite) && (flags & kElfSegmentExecute)) {
      return OSPREY_ELF_ERROR(kInvalidArgument,
                              "segment at 0x%llx shares a %llu-byte page with a segment of "
                              "other permissions, which would make it writable and "
                              "executable",
                              static_cast<unsigned long long>(image_->segments_[i].vaddr),
                              static_cast<unsigned long long>(page_));
    }
    OSPREY_RETURN_IF_ERROR(ProtectImageMemory(memory, static_cast<size_t>(first[i]),
                                              static_cast<size_t>(last[i] - first[i]), flags));
    if (flags & kElfSegmentExecute) {
      FlushInstructionCache(image_->host_base_ + first[i], static_cast<size_t>(last[i] - first[i]));
    }
  }
  // Data the relocations finished with becomes read-only (PT_GNU_RELRO),
  // for whole pages that no other segment shares.
  if (has_relro_ && relro_phdr_.memsz > 0 && relro_phdr_.vaddr >= image_->min_vaddr_) {
    const uint64_t begin = AlignDown(relro_phdr_.vaddr - image_->min_vaddr_, page_);
    const uint64_t end_raw = relro_phdr_.vaddr - image_->min_vaddr_ + relro_phdr_.memsz;
    const uint64_t end = AlignDown(end_raw, page_);
    bool shared = end <= begin || end > image_->size_;
    uint32_t owners = 0;
    for (uint32_t j = 0; j < image_->segment_count_ && !shared; ++j) {
      if (begin < last[j] && first[j] < end) {
        ++owners;
        if (begin < first[j] || end > last[j]) shared = true;
      }
    }
    if (!shared && owners == 1) {
      OSPREY_RETURN_IF_ERROR(ProtectImageMemory(memory, static_cast<size_t>(begin),
                                                static_cast<size_t>(end - begin), kElfSegmentRead));
    }
  }
  return OkStatus();
}

//===----------------------------------------------------------------------===//
// ElfImage
//===----------------------------------------------------------------------===//

StatusOr<ref_ptr<ElfImage>> ElfImage::Load(std::span<const uint8_t> data,
                                           const ElfImageOptions& options,
                                           osprey::Allocator* allocator) {
  if (static_cast<int>(options.machine) >= kElfMachineCount) {
    return OSPREY_ELF_ERROR(kInvalidArgument, "unknown ELF machine %d",
                            static_cast<int>(options.machine));
  }
  OSPREY_ASSIGN_OR_RETURN(auto image, MakeRef<ElfImage>(allocator));
  image->allocator_ = allocator;
  image->machine_ = options.machine;
  image->executable_ = options.executable;
  image->is64_ = Info(options.machine).is64;
  ElfImageBuilder builder(image.get(), data, options);
  OSPREY_RETURN_IF_ERROR(builder.Build(), "loading %s ELF image", Info(options.machine).name);
  return image;
}

ElfImage::~ElfImage() {
  ImageMemory memory;
  memory.base = host_base_;
  memory.size = size_;
  memory.mapped = mapped_;
  if (mapped_) {
    FreeExecutableMemory(&memory, allocator_);
  } else if (host_base_) {
    allocator_->Free(host_base_);
  }
}

osprey_executable_library_query_fn_t ElfImage::query_function() const {
  if (!executable_) return nullptr;
  return reinterpret_cast<osprey_executable_library_query_fn_t>(
      static_cast<uintptr_t>(query_address_));
}

namespace {
// Finds the segment holding [vaddr, vaddr + size).
const ElfSegment* FindSegment(std::span<const ElfSegment> segments, uint64_t vaddr, uint64_t size) {
  for (const ElfSegment& s : segments) {
    if (vaddr >= s.vaddr && InBounds(vaddr - s.vaddr, size, s.memsz)) return &s;
  }
  return nullptr;
}
}  // namespace

StatusOr<uint64_t> ElfImage::LookupSymbol(const char* name) const {
  const size_t sym_size = SymSize(is64_);
  for (uint32_t i = 1; i < symbol_count_; ++i) {
    // Bounds were checked at load.
    const Sym sym = ReadSym(host_base_ + (symtab_ + i * sym_size - min_vaddr_), is64_);
    if (sym.shndx == kShnUndef || sym.name >= strsz_) continue;
    const char* s = reinterpret_cast<const char*>(host_base_ + (strtab_ + sym.name - min_vaddr_));
    const size_t avail = static_cast<size_t>(strsz_ - sym.name);
    const size_t len = strlen(name);
    if (len < avail && memcmp(s, name, len) == 0 && s[len] == '\0') {
      return sym.shndx == kShnAbs ? sym.value : load_bias_ + sym.value;
    }
  }
  return OSPREY_ELF_ERROR(kNotFound, "no defined symbol '%s'", name);
}

Status ElfImage::Read(uint64_t address, void* out, size_t size) const {
  const uint64_t vaddr = address - load_bias_;
  const ElfSegment* s = FindSegment(segments(), vaddr, size);
  if (!s) {
    return OSPREY_ELF_ERROR(kOutOfRange, "range [0x%llx, +%zu) is not inside the image",
                            static_cast<unsigned long long>(address), size);
  }
  memcpy(out, host_base_ + (vaddr - min_vaddr_), size);
  return OkStatus();
}

StatusOr<uint64_t> ElfImage::ReadWord(uint64_t address) const {
  uint8_t bytes[8] = {};
  OSPREY_RETURN_IF_ERROR(Read(address, bytes, WordSize(is64_)));
  return is64_ ? Le64(bytes) : Le32(bytes);
}

bool ElfImage::ContainsHostRange(const void* ptr, size_t size) const {
  const uint64_t vaddr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr)) - load_bias_;
  const ElfSegment* s = FindSegment(segments(), vaddr, size);
  return s && (s->flags & kElfSegmentRead);
}

bool ElfImage::ContainsHostCode(const void* fn) const {
  uint64_t vaddr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(fn)) - load_bias_;
  if (machine_ == ElfMachine::kArmv7em) vaddr &= ~1ull;
  const ElfSegment* s = FindSegment(segments(), vaddr, 1);
  return s && (s->flags & kElfSegmentExecute);
}

bool ElfImage::ContainsHostString(const char* str, size_t max_length) const {
  const uint64_t vaddr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(str)) - load_bias_;
  const ElfSegment* s = FindSegment(segments(), vaddr, 1);
  if (!s || !(s->flags & kElfSegmentRead)) return false;
  uint64_t avail = s->vaddr + s->memsz - vaddr;
  if (avail > max_length + 1) avail = max_length + 1;
  return memchr(host_base_ + (vaddr - min_vaddr_), '\0', static_cast<size_t>(avail)) != nullptr;
}

}  // namespace osprey::hal::local::loaders::elf
