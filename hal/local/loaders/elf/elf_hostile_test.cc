// Hostile inputs for the ELF loader: truncations, random byte flips and
// crafted headers must all end in an error status, never a crash.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/loaders/elf/elf_image.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "hal/local/loaders/elf/testing/elf_test_util.h"
#include "tests/executables/test_executables.h"

#ifndef OSPREY_ELF_FUZZ_SCALE
#define OSPREY_ELF_FUZZ_SCALE 1
#endif

namespace osprey::hal::local::loaders::elf {
namespace {

using testing::ElfEditor;
using testing::kArches;
using testing::LibraryBytes;
using testing::StatusText;
using PhdrField = ElfEditor::PhdrField;

constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPfX = 1, kPfW = 2;

class ElfHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!osprey::testing::TestExecutablesAvailable()) {
      GTEST_SKIP() << "test libraries were not built (clang-19/ld.lld-19 not found)";
    }
    ASSERT_TRUE(ElfHostMachine(&host_));
    host_arch_ = kArches[static_cast<int>(host_)];
  }

  // Parses and relocates without executing.
  Status LoadForeign(const std::vector<uint8_t>& bytes, ElfMachine machine) {
    ElfImageOptions options;
    options.machine = machine;
    options.link_base = 0x10000;
    options.max_image_size = 1u << 20;
    return ElfImage::Load(bytes, options, &allocator_).status();
  }

  // The full loader: maps for execution and queries the library.
  Status LoadAndQuery(const std::vector<uint8_t>& bytes) {
    ElfLoader loader(1u << 20);
    ExecutableParams params;
    params.format = ElfMachineFormat(host_);
    params.data = bytes;
    return loader.Load(params, {}, &allocator_).status();
  }

  ElfEditor HostEditor(const char* name = "vector_add") {
    return ElfEditor(LibraryBytes(name, host_arch_));
  }

  // Expects |bytes| to be rejected by both paths with |code| and a message
  // containing |text|.
  void ExpectRejected(const std::vector<uint8_t>& bytes, StatusCode code, const char* text) {
    Status foreign = LoadForeign(bytes, host_);
    EXPECT_EQ(foreign.code(), code) << StatusText(foreign);
    EXPECT_NE(StatusText(foreign).find(text), std::string::npos) << StatusText(foreign);
    Status full = LoadAndQuery(bytes);
    EXPECT_EQ(full.code(), code) << StatusText(full);
    EXPECT_NE(StatusText(full).find(text), std::string::npos) << StatusText(full);
  }

  void TearDown() override { EXPECT_EQ(allocator_.live(), 0u) << "leak on an error path"; }

  ElfMachine host_ = ElfMachine::kX86_64;
  const char* host_arch_ = "";
  CountingAllocator allocator_{Allocator::Default()};
};

TEST_F(ElfHostileTest, UnmodifiedLibrariesLoad) {
  EXPECT_TRUE(LoadAndQuery(LibraryBytes("vector_add", host_arch_)).ok());
  EXPECT_TRUE(LoadForeign(LibraryBytes("vector_add", "armv7em"), ElfMachine::kArmv7em).ok());
}

TEST_F(ElfHostileTest, EmptyAndTinyInputs) {
  std::vector<uint8_t> empty;
  EXPECT_EQ(LoadForeign(empty, host_).code(), StatusCode::kDataLoss);
  EXPECT_EQ(LoadAndQuery(empty).code(), StatusCode::kDataLoss);
  std::vector<uint8_t> not_elf(200, 0x41);
  EXPECT_EQ(LoadAndQuery(not_elf).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> magic_only = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  EXPECT_EQ(LoadAndQuery(magic_only).code(), StatusCode::kDataLoss);
}

// Every proper prefix of a library is rejected as truncated: cuts into the
// headers or segments fail their bounds checks, later cuts the section
// header table (which linkers put at the end).
TEST_F(ElfHostileTest, TruncationAtEveryByte) {
  for (const char* arch : {host_arch_, "armv7em", "riscv32"}) {
    SCOPED_TRACE(arch);
    const auto full = LibraryBytes("tables", arch);
    ElfMachine machine;
    ASSERT_TRUE(ElfMachineFromFormat((std::string("elf-") + arch).c_str(), &machine));
    for (size_t n = 0; n < full.size(); ++n) {
      std::vector<uint8_t> prefix(full.begin(), full.begin() + n);
      Status status = machine == host_ ? LoadAndQuery(prefix) : LoadForeign(prefix, machine);
      EXPECT_EQ(status.code(), StatusCode::kDataLoss) << n << ": " << StatusText(status);
    }
    EXPECT_TRUE((machine == host_ ? LoadAndQuery(full) : LoadForeign(full, machine)).ok());
  }
}

// Without section headers (a stripped file), cuts that leave every loaded
// byte in place still load.
TEST_F(ElfHostileTest, TruncationWithoutSectionHeaders) {
  ElfEditor editor(LibraryBytes("tables", "armv7em"));
  editor.Set(editor.shoff_field(), 4, 0);
  size_t load_end = 0;
  for (uint32_t i = 0; i < editor.phnum(); ++i) {
    if (editor.GetPhdr(i, PhdrField::kType) != kPtLoad) continue;
    load_end = std::max<size_t>(
        load_end, editor.GetPhdr(i, PhdrField::kOffset) + editor.GetPhdr(i, PhdrField::kFilesz));
  }
  const auto& full = editor.bytes();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + n);
    Status status = LoadForeign(prefix, ElfMachine::kArmv7em);
    if (n < load_end) {
      EXPECT_EQ(status.code(), StatusCode::kDataLoss) << n << ": " << StatusText(status);
    } else {
      EXPECT_TRUE(status.ok()) << n << ": " << StatusText(status);
    }
  }
}

// Deterministic random byte flips anywhere in the file, parsed and
// relocated for every machine (never executed: flipped code cannot be
// detected by any loader).
TEST_F(ElfHostileTest, RandomByteFlipsEveryMachine) {
  const int kIterations = 2000 * OSPREY_ELF_FUZZ_SCALE;
  for (int m = 0; m < kElfMachineCount; ++m) {
    SCOPED_TRACE(kArches[m]);
    const auto original = LibraryBytes("tables", kArches[m]);
    ASSERT_FALSE(original.empty());
    std::mt19937 rng(1234 + m);
    int rejected = 0;
    for (int it = 0; it < kIterations; ++it) {
      auto bytes = original;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        // Half the flips hit the first 1 KiB, where the headers, dynamic
        // symbols and relocations live.
        const size_t limit = (rng() & 1) ? std::min<size_t>(1024, bytes.size()) : bytes.size();
        bytes[rng() % limit] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      if (!LoadForeign(bytes, static_cast<ElfMachine>(m)).ok()) ++rejected;
    }
    EXPECT_GT(rejected, 0);
  }
}

// Random words written into header fields and dynamic entries.
TEST_F(ElfHostileTest, RandomHeaderFieldValues) {
  const int kIterations = 2000 * OSPREY_ELF_FUZZ_SCALE;
  for (const char* arch : {host_arch_, "armv7em"}) {
    SCOPED_TRACE(arch);
    ElfEditor base(LibraryBytes("vector_add", arch));
    ElfMachine machine;
    ASSERT_TRUE(ElfMachineFromFormat((std::string("elf-") + arch).c_str(), &machine));
    const size_t dyn = base.GetPhdr(base.FindPhdr(2), PhdrField::kOffset);
    const size_t dyn_end = dyn + base.GetPhdr(base.FindPhdr(2), PhdrField::kFilesz);
    const size_t ph_end = base.phoff() + base.phnum() * (base.is64() ? 56 : 32);
    std::mt19937 rng(99);
    const uint64_t kInteresting[] = {
        0,      1,          0x7f,       0x80,       0xff,
        0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffffffffff0ull,
        ~0ull,  4096};
    for (int it = 0; it < kIterations; ++it) {
      ElfEditor e = base;
      size_t off;
      switch (rng() % 3) {
        case 0:
          off = rng() % 64;
          break;
        case 1:
          off = base.phoff() + rng() % (ph_end - base.phoff());
          break;
        default:
          off = dyn + rng() % (dyn_end - dyn);
          break;
      }
      const size_t size = (rng() & 1) ? 4 : (base.is64() ? 8 : 2);
      const uint64_t value = (rng() & 1) ? kInteresting[rng() % std::size(kInteresting)]
                                         : (uint64_t{rng()} << 32 | rng());
      e.Set(off, size, value);
      (void)LoadForeign(e.bytes(), machine);
    }
  }
}

// Flips limited to the writable data segment (relocated pointers, the
// dynamic section, the library description), loaded and queried for real:
// the query's answer is checked against the image before it is read.
TEST_F(ElfHostileTest, DataSegmentFlipsWithQuery) {
  const int kIterations = 1000 * OSPREY_ELF_FUZZ_SCALE;
  ElfEditor base = HostEditor("tables");
  const int rw = base.FindPhdr(kPtLoad, kPfW);
  ASSERT_GE(rw, 0);
  const size_t begin = base.GetPhdr(rw, PhdrField::kOffset);
  const size_t size = base.GetPhdr(rw, PhdrField::kFilesz);
  std::mt19937 rng(7);
  int ok = 0;
  for (int it = 0; it < kIterations; ++it) {
    auto bytes = base.bytes();
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      bytes[begin + rng() % size] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    ok += LoadAndQuery(bytes).ok();
  }
  EXPECT_LT(ok, kIterations);
}

TEST_F(ElfHostileTest, WrongClassByteOrderMachineAndType) {
  ElfEditor e = HostEditor();
  auto bytes = e.bytes();
  bytes[4] = e.is64() ? 1 : 2;  // Class.
  EXPECT_FALSE(LoadAndQuery(bytes).ok());
  bytes = e.bytes();
  bytes[5] = 2;  // Big-endian.
  ExpectRejected(bytes, StatusCode::kInvalidArgument, "little-endian");
  e.Set(18, 2, 3);  // EM_386.
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "machine 3");
  ElfEditor exec = HostEditor();
  exec.Set(16, 2, 2);  // ET_EXEC.
  ExpectRejected(exec.bytes(), StatusCode::kInvalidArgument, "ET_EXEC");
  exec.Set(16, 2, 1);  // ET_REL.
  ExpectRejected(exec.bytes(), StatusCode::kInvalidArgument, "not a shared object");
}

TEST_F(ElfHostileTest, BadProgramHeaderTable) {
  ElfEditor e = HostEditor();
  e.Set(e.phoff_field(), e.is64() ? 8 : 4, e.bytes().size() - 10);
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "program headers");
  ElfEditor n = HostEditor();
  n.Set(n.phnum_field(), 2, 0xffff);
  ExpectRejected(n.bytes(), StatusCode::kDataLoss, "program headers");
  ElfEditor huge = HostEditor();
  huge.Set(huge.phoff_field(), 8, ~0ull - 8);
  ExpectRejected(huge.bytes(), StatusCode::kDataLoss, "program headers");
  ElfEditor zero = HostEditor();
  zero.Set(zero.phnum_field(), 2, 0);
  ExpectRejected(zero.bytes(), StatusCode::kInvalidArgument, "no program headers");
  ElfEditor entsize = HostEditor();
  entsize.Set(entsize.phnum_field() - 2, 2, 12);
  ExpectRejected(entsize.bytes(), StatusCode::kDataLoss, "entry size");
}

TEST_F(ElfHostileTest, SegmentBeyondFile) {
  ElfEditor e = HostEditor();
  const int seg = e.FindPhdr(kPtLoad, kPfX);
  e.SetPhdr(seg, PhdrField::kOffset, e.bytes().size());
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "past the end");
  ElfEditor f = HostEditor();
  f.SetPhdr(seg, PhdrField::kFilesz, ~0ull);
  f.SetPhdr(seg, PhdrField::kMemsz, ~0ull);
  ExpectRejected(f.bytes(), StatusCode::kDataLoss, "segment");
}

TEST_F(ElfHostileTest, FileSizeAboveMemorySize) {
  ElfEditor e = HostEditor();
  const int seg = e.FindPhdr(kPtLoad, kPfX);
  e.SetPhdr(seg, PhdrField::kMemsz, e.GetPhdr(seg, PhdrField::kFilesz) - 1);
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "exceeds memory size");
}

TEST_F(ElfHostileTest, WritableAndExecutableSegment) {
  ElfEditor e = HostEditor();
  e.SetPhdr(e.FindPhdr(kPtLoad, kPfW), PhdrField::kFlags, 7);
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "writable and executable");
}

TEST_F(ElfHostileTest, OverlappingSegments) {
  ElfEditor e = HostEditor();
  const int code = e.FindPhdr(kPtLoad, kPfX);
  const int data = e.FindPhdr(kPtLoad, kPfW);
  e.SetPhdr(data, PhdrField::kVaddr, e.GetPhdr(code, PhdrField::kVaddr));
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "overlaps");
}

TEST_F(ElfHostileTest, HugeMemorySize) {
  ElfEditor e = HostEditor();
  e.SetPhdr(e.FindPhdr(kPtLoad, kPfW), PhdrField::kMemsz, 1ull << 40);
  ExpectRejected(e.bytes(), StatusCode::kResourceExhausted, "limit");
  ElfEditor wrap = HostEditor();
  wrap.SetPhdr(wrap.FindPhdr(kPtLoad, kPfW), PhdrField::kVaddr, ~0ull - 16);
  ExpectRejected(wrap.bytes(), StatusCode::kDataLoss, "overflows");
}

TEST_F(ElfHostileTest, DependsOnSharedLibrary) {
  ElfEditor e = HostEditor();
  // Replace the GNU hash tag (DT_HASH stays) by DT_NEEDED naming string 1.
  const size_t entry = e.DynamicEntry(0x6ffffef5);
  ASSERT_NE(entry, 0u);
  e.Set(entry, e.is64() ? 8 : 4, 1);
  e.Set(entry + (e.is64() ? 8 : 4), e.is64() ? 8 : 4, 1);
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "DT_NEEDED");
}

TEST_F(ElfHostileTest, TextRelocationsAndInitializers) {
  const struct {
    int64_t tag;
    StatusCode code;
    const char* text;
  } kCases[] = {{22, StatusCode::kInvalidArgument, "DT_TEXTREL"},
                {12, StatusCode::kUnimplemented, "initializers"},
                {25, StatusCode::kUnimplemented, "initializers"},
                {36, StatusCode::kDataLoss, "DT_RELR and DT_RELRSZ"}};
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.text);
    ElfEditor e = HostEditor();
    const size_t entry = e.DynamicEntry(0x6ffffef5);
    e.Set(entry, e.is64() ? 8 : 4, static_cast<uint64_t>(c.tag));
    ExpectRejected(e.bytes(), c.code, c.text);
  }
}

TEST_F(ElfHostileTest, UndefinedSymbolInRelocation) {
  ElfEditor e = HostEditor();
  const size_t sym = e.FindSymbol(OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME);
  ASSERT_NE(sym, 0u);
  e.Set(e.sym_shndx_field(sym), 2, 0);  // SHN_UNDEF.
  const size_t rel = e.FirstRelocation();
  ASSERT_NE(rel, 0u);
  const size_t symtab_index = (sym - e.VaddrToOffset(e.DynamicValue(6))) / (e.is64() ? 24 : 16);
  const uint64_t abs_type = host_ == ElfMachine::kX86_64 ? 1 : 257;
  e.Set(e.reloc_info_field(rel), e.word_size(), e.RelInfo(symtab_index, abs_type));
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument,
                 "undefined symbol 'osprey_executable_library_query'");
}

TEST_F(ElfHostileTest, UnknownRelocationType) {
  ElfEditor e = HostEditor();
  const size_t rel = e.FirstRelocation();
  e.Set(e.reloc_info_field(rel), e.word_size(), e.RelInfo(0, 37));
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "type 37");
}

TEST_F(ElfHostileTest, RelocationSymbolIndexOutOfRange) {
  ElfEditor e = HostEditor();
  const size_t rel = e.FirstRelocation();
  e.Set(e.reloc_info_field(rel), e.word_size(), e.RelInfo(100000, 1));
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "symbol 100000");
}

TEST_F(ElfHostileTest, RelocationOutsideWritableMemory) {
  ElfEditor e = HostEditor();
  const size_t rel = e.FirstRelocation();
  e.Set(rel, e.word_size(), 0x100000);
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "outside every writable segment");
  // Into the code segment.
  ElfEditor code = HostEditor();
  code.Set(code.FirstRelocation(), code.word_size(),
           code.GetPhdr(code.FindPhdr(kPtLoad, kPfX), PhdrField::kVaddr));
  ExpectRejected(code.bytes(), StatusCode::kInvalidArgument, "outside every writable segment");
  // Straddling the end of the writable segment.
  ElfEditor edge = HostEditor();
  const int rw = edge.FindPhdr(kPtLoad, kPfW);
  edge.Set(edge.FirstRelocation(), edge.word_size(),
           edge.GetPhdr(rw, PhdrField::kVaddr) + edge.GetPhdr(rw, PhdrField::kMemsz) - 2);
  ExpectRejected(edge.bytes(), StatusCode::kInvalidArgument, "outside every writable segment");
}

TEST_F(ElfHostileTest, RelocationTableOutOfRange) {
  ElfEditor e = HostEditor();
  e.Set(e.DynamicValueField(8), 8, 1ull << 40);  // DT_RELASZ.
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "DT_RELA table");
  ElfEditor ent = HostEditor();
  ent.Set(ent.DynamicValueField(9), 8, 16);  // DT_RELAENT.
  ExpectRejected(ent.bytes(), StatusCode::kDataLoss, "DT_RELAENT");
  ElfEditor odd = HostEditor();
  odd.Set(odd.DynamicValueField(8), 8, odd.DynamicValue(8) - 1);
  ExpectRejected(odd.bytes(), StatusCode::kDataLoss, "multiple");
}

TEST_F(ElfHostileTest, MissingQuerySymbol) {
  ElfEditor e = HostEditor();
  const size_t sym = e.FindSymbol(OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME);
  const size_t name = e.StringOffset(static_cast<uint32_t>(e.Get(sym, 4)));
  e.bytes()[name] = 'X';
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "defines no symbol");
  // Query symbol pointing at data.
  ElfEditor data = HostEditor();
  const size_t s2 = data.FindSymbol(OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME);
  data.Set(data.sym_value_field(s2), data.word_size(),
           data.GetPhdr(data.FindPhdr(kPtLoad, kPfW), PhdrField::kVaddr));
  ExpectRejected(data.bytes(), StatusCode::kInvalidArgument, "not inside an executable segment");
}

TEST_F(ElfHostileTest, StringTableOutOfRange) {
  ElfEditor e = HostEditor();
  e.Set(e.DynamicValueField(10), e.word_size(), 1ull << 32);  // DT_STRSZ.
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "string table");
  ElfEditor addr = HostEditor();
  addr.Set(addr.DynamicValueField(5), addr.word_size(), 0x7fff0000);  // DT_STRTAB.
  ExpectRejected(addr.bytes(), StatusCode::kDataLoss, "string table");
  // A symbol name offset past the table: the symbol is not found.
  ElfEditor name = HostEditor();
  const size_t sym = name.FindSymbol(OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME);
  name.Set(sym, 4, 0xfffffff0u);
  ExpectRejected(name.bytes(), StatusCode::kInvalidArgument, "defines no symbol");
}

TEST_F(ElfHostileTest, SymbolTableAndHashOutOfRange) {
  ElfEditor e = HostEditor();
  e.Set(e.DynamicValueField(6), e.word_size(), 0x7fff0000);  // DT_SYMTAB.
  ExpectRejected(e.bytes(), StatusCode::kDataLoss, "symbol table");
  ElfEditor hash = HostEditor();
  const size_t h = hash.VaddrToOffset(hash.DynamicValue(4));
  hash.Set(h + 4, 4, 0x7fffffff);  // nchain.
  ExpectRejected(hash.bytes(), StatusCode::kDataLoss, "DT_HASH");
  ElfEditor syment = HostEditor();
  syment.Set(syment.DynamicValueField(11), syment.word_size(), 7);
  ExpectRejected(syment.bytes(), StatusCode::kDataLoss, "DT_SYMENT");
}

TEST_F(ElfHostileTest, NoDynamicSegment) {
  ElfEditor e = HostEditor();
  e.SetPhdr(e.FindPhdr(2), PhdrField::kType, 0x6474e551);  // PT_GNU_STACK.
  ExpectRejected(e.bytes(), StatusCode::kInvalidArgument, "PT_DYNAMIC");
  ElfEditor out = HostEditor();
  out.SetPhdr(out.FindPhdr(2), PhdrField::kVaddr, 0x7fff0000);
  ExpectRejected(out.bytes(), StatusCode::kDataLoss, "PT_DYNAMIC");
}

TEST_F(ElfHostileTest, ThreadLocalStorage) {
  ElfEditor e = HostEditor();
  e.SetPhdr(e.FindPhdr(0x6474e551), PhdrField::kType, 7);  // GNU_STACK -> PT_TLS.
  e.SetPhdr(e.FindPhdr(7), PhdrField::kMemsz, 16);
  ExpectRejected(e.bytes(), StatusCode::kUnimplemented, "PT_TLS");
}

// A writable segment moved onto the last page of the code segment (without
// overlapping it) would need that page writable and executable: mapping for
// execution refuses, parsing alone (no protections) accepts.
TEST_F(ElfHostileTest, SegmentsSharingAPageAcrossWriteAndExecute) {
  ElfEditor e = HostEditor();
  const int code = e.FindPhdr(kPtLoad, kPfX);
  const int data = e.FindPhdr(kPtLoad, kPfW);
  const uint64_t code_end = e.GetPhdr(code, PhdrField::kVaddr) + e.GetPhdr(code, PhdrField::kMemsz);
  const uint64_t old_vaddr = e.GetPhdr(data, PhdrField::kVaddr);
  const uint64_t new_vaddr = (code_end + 15) & ~15ull;
  ASSERT_EQ(new_vaddr & ~4095ull, (code_end - 1) & ~4095ull) << "code must not end on a page";
  const uint64_t delta = old_vaddr - new_vaddr;
  e.SetPhdr(data, PhdrField::kVaddr, new_vaddr);
  for (uint32_t type : {2u, 0x6474e552u}) {  // PT_DYNAMIC, PT_GNU_RELRO.
    const int i = e.FindPhdr(type);
    if (i >= 0) e.SetPhdr(i, PhdrField::kVaddr, e.GetPhdr(i, PhdrField::kVaddr) - delta);
  }
  e.Set(e.DynamicValueField(8), 8, 0);  // No relocations: their targets moved.
  EXPECT_TRUE(LoadForeign(e.bytes(), host_).ok());
  Status status = LoadAndQuery(e.bytes());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << StatusText(status);
  EXPECT_NE(StatusText(status).find("writable and executable"), std::string::npos)
      << StatusText(status);
}

TEST_F(ElfHostileTest, BadPackedRelocations) {
  for (const char* arch : {host_arch_, "armv7em"}) {
    SCOPED_TRACE(arch);
    ElfMachine machine;
    ASSERT_TRUE(ElfMachineFromFormat((std::string("elf-") + arch).c_str(), &machine));
    ElfEditor base(LibraryBytes("tables_relr", arch));
    ASSERT_FALSE(base.bytes().empty());
    const size_t word = base.word_size();
    const size_t table = base.VaddrToOffset(base.DynamicValue(36));
    const uint64_t size = base.DynamicValue(35);
    ASSERT_NE(table, 0u);
    auto load = [&](ElfEditor& e) { return LoadForeign(e.bytes(), machine); };
    ASSERT_TRUE(load(base).ok());

    ElfEditor code = base;  // First address inside the code segment.
    code.Set(table, word, code.GetPhdr(code.FindPhdr(kPtLoad, kPfX), PhdrField::kVaddr) & ~1ull);
    EXPECT_EQ(load(code).code(), StatusCode::kInvalidArgument);
    EXPECT_NE(StatusText(load(code)).find("outside every writable segment"), std::string::npos);

    ElfEditor bitmap_first = base;
    bitmap_first.Set(table, word, ~0ull);
    EXPECT_EQ(load(bitmap_first).code(), StatusCode::kDataLoss);

    if (size >= 2 * word) {
      // The last word of the writable segment, then a bitmap running past it.
      ElfEditor long_bitmap = base;
      const int rw = long_bitmap.FindPhdr(kPtLoad, kPfW);
      const uint64_t end =
          long_bitmap.GetPhdr(rw, PhdrField::kVaddr) + long_bitmap.GetPhdr(rw, PhdrField::kMemsz);
      long_bitmap.Set(table, word, (end - word) & ~uint64_t{word - 1});
      long_bitmap.Set(table + word, word, ~0ull);
      EXPECT_EQ(load(long_bitmap).code(), StatusCode::kInvalidArgument);
    }

    ElfEditor huge = base;
    huge.Set(huge.DynamicValueField(35), word, 1ull << 30);
    EXPECT_EQ(load(huge).code(), StatusCode::kDataLoss);

    ElfEditor odd = base;
    odd.Set(odd.DynamicValueField(35), word, size - 1);
    EXPECT_EQ(load(odd).code(), StatusCode::kDataLoss);

    ElfEditor ent = base;
    ent.Set(ent.DynamicValueField(37), word, 3);
    EXPECT_EQ(load(ent).code(), StatusCode::kDataLoss);

    // Random values in the packed table: errors or valid relocations only.
    std::mt19937 rng(42);
    for (int it = 0; it < 500 * OSPREY_ELF_FUZZ_SCALE; ++it) {
      ElfEditor e = base;
      e.Set(table + (rng() % (size / word)) * word, word, uint64_t{rng()} << 32 | rng());
      (void)load(e);
    }
  }
}

}  // namespace
}  // namespace osprey::hal::local::loaders::elf
