// ElfImage: parses, validates, maps and relocates a position-independent ELF
// shared object (ET_DYN) for one of the machines the ELF loader knows, and
// finds its osprey_executable_library_query symbol. It never runs code, so
// images of any supported machine can be validated on any host; images of
// the host's own machine can be mapped for execution (W^X protections).
#ifndef OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_IMAGE_H_
#define OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "hal/local/executable_library.h"
#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"

namespace osprey::hal::local::loaders::elf {

// Machines (and executable formats) the ELF loader accepts.
enum class ElfMachine : uint8_t {
  kX86_64 = 0,   // "elf-x86_64":  ELFCLASS64, EM_X86_64, RELA.
  kAArch64 = 1,  // "elf-aarch64": ELFCLASS64, EM_AARCH64, RELA.
  kArmv7em = 2,  // "elf-armv7em": ELFCLASS32, EM_ARM (Thumb-2), REL.
  kRiscv32 = 3,  // "elf-riscv32": ELFCLASS32, EM_RISCV, RELA.
  kRiscv64 = 4,  // "elf-riscv64": ELFCLASS64, EM_RISCV, RELA.
};
inline constexpr int kElfMachineCount = 5;

// Executable format name of |machine| ("elf-x86_64", ...). Never null.
const char* ElfMachineFormat(ElfMachine machine);
// Short architecture name ("x86_64", "aarch64", "armv7em", ...). Never null.
const char* ElfMachineName(ElfMachine machine);
// Maps an executable format name to its machine; false if |format| is not
// one of the ELF formats (null is not).
bool ElfMachineFromFormat(const char* format, ElfMachine* out_machine);
// The machine this program runs on; false if it is none of the above.
bool ElfHostMachine(ElfMachine* out_machine);

// The machine an ELF file is built for, read from its identification and
// header only (class, byte order, e_machine). INVALID_ARGUMENT if |data| is
// not a little-endian ELF file of a supported machine.
StatusOr<ElfMachine> IdentifyElfMachine(std::span<const uint8_t> data);

// Segment permission bits (the ELF PF_* values).
enum ElfSegmentFlags : uint32_t {
  kElfSegmentExecute = 1u,
  kElfSegmentWrite = 2u,
  kElfSegmentRead = 4u,
};

// One PT_LOAD segment as mapped.
struct ElfSegment {
  uint64_t vaddr = 0;   // Link-time virtual address.
  uint64_t memsz = 0;   // Bytes in memory (>= filesz; the rest is zeroed).
  uint64_t filesz = 0;  // Bytes copied from the file.
  uint32_t flags = 0;   // ElfSegmentFlags.
};

struct ElfImageOptions {
  ElfMachine machine = ElfMachine::kX86_64;
  // true: map so the code can run on this host (the machine must be the
  // host's; relocations use the host address of the mapping; segments get
  // their W^X protections and the instruction cache is flushed).
  // false: place the image in plain memory from the allocator and relocate
  // it as if it were loaded at |link_base| (never executed).
  bool executable = false;
  // Address the lowest page of the image is relocated against when
  // |executable| is false. Must leave the whole image addressable by the
  // machine (below 4 GiB for 32-bit machines).
  uint64_t link_base = 0x10000;
  // Largest image span (lowest to highest segment byte) accepted.
  size_t max_image_size = 64u << 20;
};

class ElfImage final : public RefObject {
 public:
  // Most PT_LOAD segments an image may have.
  static constexpr uint32_t kMaxSegments = 16;

  // Parses |data| (borrowed for the call only; the image copies what it
  // needs), maps its segments, applies its dynamic relocations and finds the
  // query symbol. Errors, each naming the offending field or entry:
  //   INVALID_ARGUMENT: not ELF, wrong class/byte order/machine, not ET_DYN,
  //     W+X segment, DT_NEEDED, DT_TEXTREL, undefined symbol, unsupported
  //     relocation type, relocation outside writable memory, missing query
  //     symbol, link_base not addressable.
  //   DATA_LOSS: truncated file or a table, offset or size out of range or
  //     overflowing, overlapping segments, filesz > memsz.
  //   UNIMPLEMENTED: valid ELF features the loader does not support (TLS,
  //     initializers).
  //   UNAVAILABLE: |executable| for a machine that is not the host's, or on
  //     a platform that cannot make executable memory.
  //   RESOURCE_EXHAUSTED: the image is larger than max_image_size or memory
  //     could not be had.
  // |allocator| is borrowed for the image's lifetime.
  static StatusOr<ref_ptr<ElfImage>> Load(std::span<const uint8_t> data,
                                          const ElfImageOptions& options,
                                          osprey::Allocator* allocator);

  // Use Load(); public only so MakeRef can construct it.
  ElfImage() = default;
  ~ElfImage() override;

  ElfMachine machine() const { return machine_; }
  bool executable() const { return executable_; }
  // The mapped image in host memory (read-only view; borrowed).
  std::span<const uint8_t> memory() const { return {host_base_, size_}; }
  // Difference between an address the image's code sees and its link-time
  // virtual address (what RELATIVE relocations add).
  uint64_t load_bias() const { return load_bias_; }

  std::span<const ElfSegment> segments() const { return {segments_, segment_count_}; }
  // Dynamic relocations applied (R_*_NONE not counted).
  uint32_t relocation_count() const { return relocation_count_; }
  // Whether the relocations came in REL (addend in place) or RELA form.
  bool uses_rel() const { return uses_rel_; }
  // Whether the image also has packed relative relocations (DT_RELR).
  bool uses_relr() const { return uses_relr_; }
  // Number of dynamic symbols (from DT_HASH, DT_GNU_HASH or section headers).
  uint32_t symbol_count() const { return symbol_count_; }

  // Address of osprey_executable_library_query as the image's code sees it
  // (load_bias + st_value, including the Thumb bit on Arm).
  uint64_t query_address() const { return query_address_; }
  // The query function; null unless executable().
  osprey_executable_library_query_fn_t query_function() const;

  // Finds a defined dynamic symbol; returns its address as the image's code
  // sees it. NOT_FOUND if there is none.
  StatusOr<uint64_t> LookupSymbol(const char* name) const;

  // Reads |size| bytes at image address |address| (as the image's code
  // sees it). OUT_OF_RANGE unless the range lies inside the image.
  Status Read(uint64_t address, void* out, size_t size) const;
  // Reads a pointer-sized (4 or 8 bytes for the machine) little-endian word.
  StatusOr<uint64_t> ReadWord(uint64_t address) const;

  // For executable images: whether [|ptr|, |ptr| + |size|) lies inside the
  // mapped image, and whether |fn| points into an executable segment.
  bool ContainsHostRange(const void* ptr, size_t size) const;
  bool ContainsHostCode(const void* fn) const;
  // Whether |str| is a NUL-terminated string lying inside the image, with at
  // most |max_length| characters.
  bool ContainsHostString(const char* str, size_t max_length) const;

 private:
  friend class ElfImageBuilder;

  ElfMachine machine_ = ElfMachine::kX86_64;
  bool executable_ = false;
  bool mapped_ = false;  // Memory came from the platform mapper.
  bool is64_ = true;
  bool uses_rel_ = false;
  bool uses_relr_ = false;
  osprey::Allocator* allocator_ = nullptr;
  uint8_t* host_base_ = nullptr;
  size_t size_ = 0;
  uint64_t min_vaddr_ = 0;  // Link vaddr of host_base_[0].
  uint64_t load_bias_ = 0;
  ElfSegment segments_[kMaxSegments];
  uint32_t segment_count_ = 0;
  uint32_t relocation_count_ = 0;
  uint64_t symtab_ = 0;  // Link vaddrs of the dynamic symbol and string tables.
  uint64_t strtab_ = 0;
  uint64_t strsz_ = 0;
  uint32_t symbol_count_ = 0;
  uint64_t query_address_ = 0;
};

}  // namespace osprey::hal::local::loaders::elf

#endif  // OSPREY_HAL_LOCAL_LOADERS_ELF_ELF_IMAGE_H_
