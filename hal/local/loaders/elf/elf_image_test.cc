// Tests of ElfImage: parsing and relocating the test libraries of every
// machine (without running them), and mapping host libraries for execution.
#include "hal/local/loaders/elf/elf_image.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/loaders/elf/testing/elf_test_util.h"
#include "tests/executables/test_executables.h"

namespace osprey::hal::local::loaders::elf {
namespace {

using testing::kArches;
using testing::LibraryBytes;
using testing::StatusText;

constexpr const char* kLibraries[] = {"vector_add", "workgroups", "failing", "imports", "tables"};

#define REQUIRE_TEST_EXECUTABLES()                                                  \
  if (!osprey::testing::TestExecutablesAvailable()) {                               \
    GTEST_SKIP() << "test libraries were not built (clang-19/ld.lld-19 not found)"; \
  }

ElfImageOptions ForeignOptions(ElfMachine machine, uint64_t link_base = 0x20000000) {
  ElfImageOptions options;
  options.machine = machine;
  options.executable = false;
  options.link_base = link_base;
  return options;
}

TEST(ElfMachineTest, FormatsRoundTrip) {
  for (int i = 0; i < kElfMachineCount; ++i) {
    ElfMachine m = static_cast<ElfMachine>(i);
    ElfMachine back;
    ASSERT_TRUE(ElfMachineFromFormat(ElfMachineFormat(m), &back));
    EXPECT_EQ(back, m);
    EXPECT_EQ(std::string("elf-") + ElfMachineName(m), ElfMachineFormat(m));
  }
  ElfMachine m;
  EXPECT_FALSE(ElfMachineFromFormat("elf-mips", &m));
  EXPECT_FALSE(ElfMachineFromFormat("static", &m));
  EXPECT_FALSE(ElfMachineFromFormat(nullptr, &m));
}

TEST(ElfImageTest, IdentifiesEveryMachine) {
  REQUIRE_TEST_EXECUTABLES();
  for (int i = 0; i < kElfMachineCount; ++i) {
    auto bytes = LibraryBytes("vector_add", kArches[i]);
    ASSERT_FALSE(bytes.empty()) << kArches[i];
    auto machine = IdentifyElfMachine(bytes);
    ASSERT_TRUE(machine.ok()) << StatusText(machine.status());
    EXPECT_EQ(*machine, static_cast<ElfMachine>(i)) << kArches[i];
  }
}

// Every library of every machine parses and relocates; Arm uses REL and the
// others RELA, as the toolchains produce them.
TEST(ElfImageTest, RelocatesEveryLibraryOnEveryMachine) {
  REQUIRE_TEST_EXECUTABLES();
  for (int i = 0; i < kElfMachineCount; ++i) {
    const ElfMachine machine = static_cast<ElfMachine>(i);
    for (const char* lib : kLibraries) {
      SCOPED_TRACE(std::string(lib) + "_" + kArches[i]);
      auto bytes = LibraryBytes(lib, kArches[i]);
      ASSERT_FALSE(bytes.empty());
      auto image = ElfImage::Load(bytes, ForeignOptions(machine), Allocator::Default());
      ASSERT_TRUE(image.ok()) << StatusText(image.status());
      EXPECT_EQ((*image)->machine(), machine);
      EXPECT_GT((*image)->relocation_count(), 0u);
      EXPECT_EQ((*image)->uses_rel(), machine == ElfMachine::kArmv7em);
      EXPECT_GT((*image)->symbol_count(), 1u);
      EXPECT_EQ((*image)->query_function(), nullptr);
      // The query symbol is in an executable segment; Thumb code has bit 0.
      const uint64_t query = (*image)->query_address();
      EXPECT_EQ(query & 1, machine == ElfMachine::kArmv7em ? 1u : 0u);
      bool in_code = false;
      for (const ElfSegment& s : (*image)->segments()) {
        const uint64_t v = (query & ~1ull) - (*image)->load_bias();
        if (v >= s.vaddr && v < s.vaddr + s.memsz && (s.flags & kElfSegmentExecute)) {
          in_code = true;
        }
        EXPECT_FALSE((s.flags & kElfSegmentWrite) && (s.flags & kElfSegmentExecute));
      }
      EXPECT_TRUE(in_code);
      auto looked_up = (*image)->LookupSymbol(OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME);
      ASSERT_TRUE(looked_up.ok());
      EXPECT_EQ(*looked_up, query);
    }
  }
}

std::string ReadString(const ElfImage& image, uint64_t address) {
  std::string s;
  for (int i = 0; i < 64; ++i) {
    char c;
    if (!image.Read(address + i, &c, 1).ok() || c == '\0') break;
    s.push_back(c);
  }
  return s;
}

// The relocated pointer tables hold the addresses the strings and functions
// have when the image sits at its link base: checks the arithmetic of the
// REL (in-place addend) and RELA forms, 32- and 64-bit.
void CheckTables(const ElfImage& image) {
  const char* kWords[] = {"alpha", "beta", "gamma", "delta"};
  auto words = image.LookupSymbol("osprey_test_words");
  ASSERT_TRUE(words.ok()) << StatusText(words.status());
  const size_t word =
      image.machine() == ElfMachine::kArmv7em || image.machine() == ElfMachine::kRiscv32 ? 4 : 8;
  for (int i = 0; i < 4; ++i) {
    auto ptr = image.ReadWord(*words + i * word);
    ASSERT_TRUE(ptr.ok());
    EXPECT_EQ(ReadString(image, *ptr), kWords[i]);
  }
  auto mutable_words = image.LookupSymbol("osprey_test_mutable_words");
  ASSERT_TRUE(mutable_words.ok());
  auto ptr = image.ReadWord(*mutable_words + word);
  ASSERT_TRUE(ptr.ok());
  EXPECT_EQ(ReadString(image, *ptr), "zeta");
  auto ops = image.LookupSymbol("osprey_test_ops");
  ASSERT_TRUE(ops.ok());
  for (int i = 0; i < 3; ++i) {
    auto fn = image.ReadWord(*ops + i * word);
    ASSERT_TRUE(fn.ok());
    const uint64_t v = (*fn & ~1ull) - image.load_bias();
    bool in_code = false;
    for (const ElfSegment& s : image.segments()) {
      if (v >= s.vaddr && v < s.vaddr + s.memsz && (s.flags & kElfSegmentExecute)) {
        in_code = true;
      }
    }
    EXPECT_TRUE(in_code) << "op " << i;
    if (image.machine() == ElfMachine::kArmv7em) EXPECT_EQ(*fn & 1, 1u) << "Thumb bit";
  }
  // A table entry naming an exported function holds that function's address.
  auto exported = image.LookupSymbol("osprey_test_exported_ops");
  auto negate = image.LookupSymbol("osprey_test_negate");
  ASSERT_TRUE(exported.ok() && negate.ok());
  auto entry = image.ReadWord(*exported);
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(*entry, *negate);
}

TEST(ElfImageTest, RelocatedPointerTablesOnEveryMachine) {
  REQUIRE_TEST_EXECUTABLES();
  for (int i = 0; i < kElfMachineCount; ++i) {
    SCOPED_TRACE(kArches[i]);
    auto bytes = LibraryBytes("tables", kArches[i]);
    auto image =
        ElfImage::Load(bytes, ForeignOptions(static_cast<ElfMachine>(i)), Allocator::Default());
    ASSERT_TRUE(image.ok()) << StatusText(image.status());
    CheckTables(**image);
  }
}

TEST(ElfImageTest, SymbolicRelocationsWithoutBsymbolic) {
  REQUIRE_TEST_EXECUTABLES();
  const struct {
    const char* arch;
    ElfMachine machine;
  } kCases[] = {{"x86_64", ElfMachine::kX86_64}, {"armv7em", ElfMachine::kArmv7em}};
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.arch);
    auto bytes = LibraryBytes("tables_preemptible", c.arch);
    ASSERT_FALSE(bytes.empty());
    auto image = ElfImage::Load(bytes, ForeignOptions(c.machine), Allocator::Default());
    ASSERT_TRUE(image.ok()) << StatusText(image.status());
    CheckTables(**image);
  }
}

TEST(ElfImageTest, PackedRelativeRelocations) {
  REQUIRE_TEST_EXECUTABLES();
  const struct {
    const char* arch;
    ElfMachine machine;
  } kCases[] = {{"x86_64", ElfMachine::kX86_64}, {"armv7em", ElfMachine::kArmv7em}};
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.arch);
    auto bytes = LibraryBytes("tables_relr", c.arch);
    ASSERT_FALSE(bytes.empty());
    testing::ElfEditor editor(bytes);
    ASSERT_NE(editor.DynamicEntry(36), 0u) << "linked with DT_RELR";
    auto image = ElfImage::Load(bytes, ForeignOptions(c.machine), Allocator::Default());
    ASSERT_TRUE(image.ok()) << StatusText(image.status());
    EXPECT_TRUE((*image)->uses_relr());
    CheckTables(**image);
    // Same relocated words as the unpacked library.
    auto plain = ElfImage::Load(LibraryBytes("tables", c.arch), ForeignOptions(c.machine),
                                Allocator::Default());
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE((*plain)->uses_relr());
    EXPECT_EQ((*image)->relocation_count(), (*plain)->relocation_count());
  }
}

// GNU ld lays images out differently from lld (a separate read-only data
// segment, .got.plt, only DT_GNU_HASH by default).
TEST(ElfImageTest, GnuLdLayout) {
  REQUIRE_TEST_EXECUTABLES();
  auto bytes = LibraryBytes("tables_gnuld", "x86_64");
  if (bytes.empty()) GTEST_SKIP() << "GNU ld (ld.bfd) variant not built on this host";
  auto image = ElfImage::Load(bytes, ForeignOptions(ElfMachine::kX86_64), Allocator::Default());
  ASSERT_TRUE(image.ok()) << StatusText(image.status());
  EXPECT_GE((*image)->segments().size(), 3u);
  CheckTables(**image);
}

TEST(ElfImageTest, RelocationsFollowTheLinkBase) {
  REQUIRE_TEST_EXECUTABLES();
  auto bytes = LibraryBytes("tables", "riscv32");
  auto a =
      ElfImage::Load(bytes, ForeignOptions(ElfMachine::kRiscv32, 0x1000), Allocator::Default());
  auto b =
      ElfImage::Load(bytes, ForeignOptions(ElfMachine::kRiscv32, 0x80001000), Allocator::Default());
  ASSERT_TRUE(a.ok() && b.ok());
  auto wa = (*a)->LookupSymbol("osprey_test_words");
  auto wb = (*b)->LookupSymbol("osprey_test_words");
  ASSERT_TRUE(wa.ok() && wb.ok());
  EXPECT_EQ(*wb - *wa, 0x80000000u);
  auto pa = (*a)->ReadWord(*wa);
  auto pb = (*b)->ReadWord(*wb);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(*pb - *pa, 0x80000000u);
}

TEST(ElfImageTest, HashTableStyles) {
  REQUIRE_TEST_EXECUTABLES();
  const struct {
    const char* name;
    const char* arch;
    ElfMachine machine;
  } kCases[] = {{"vector_add_gnuhash", "x86_64", ElfMachine::kX86_64},
                {"vector_add_sysvhash", "x86_64", ElfMachine::kX86_64},
                {"vector_add_gnuhash", "riscv32", ElfMachine::kRiscv32}};
  for (const auto& c : kCases) {
    SCOPED_TRACE(std::string(c.name) + "_" + c.arch);
    testing::ElfEditor editor(LibraryBytes(c.name, c.arch));
    ASSERT_FALSE(editor.bytes().empty());
    const bool gnu = std::string(c.name).find("gnu") != std::string::npos;
    EXPECT_EQ(editor.DynamicEntry(0x6ffffef5) != 0, gnu);
    EXPECT_EQ(editor.DynamicEntry(4) != 0, !gnu);
    auto image = ElfImage::Load(editor.bytes(), ForeignOptions(c.machine), Allocator::Default());
    ASSERT_TRUE(image.ok()) << StatusText(image.status());
    EXPECT_TRUE((*image)->LookupSymbol(OSPREY_EXECUTABLE_LIBRARY_QUERY_NAME).ok());
  }
}

// Without hash tables the symbol count comes from the section headers.
TEST(ElfImageTest, SymbolCountFromSectionHeaders) {
  REQUIRE_TEST_EXECUTABLES();
  testing::ElfEditor editor(LibraryBytes("vector_add", "armv7em"));
  auto reference =
      ElfImage::Load(editor.bytes(), ForeignOptions(ElfMachine::kArmv7em), Allocator::Default());
  ASSERT_TRUE(reference.ok());
  for (int64_t tag : {int64_t{4}, int64_t{0x6ffffef5}}) {
    const size_t e = editor.DynamicEntry(tag);
    ASSERT_NE(e, 0u);
    editor.Set(e, 4, 21);  // DT_DEBUG: ignored.
  }
  auto image =
      ElfImage::Load(editor.bytes(), ForeignOptions(ElfMachine::kArmv7em), Allocator::Default());
  ASSERT_TRUE(image.ok()) << StatusText(image.status());
  EXPECT_EQ((*image)->symbol_count(), (*reference)->symbol_count());
  EXPECT_EQ((*image)->query_address(), (*reference)->query_address());

  editor.Set(editor.shoff_field(), 4, 0);
  auto none =
      ElfImage::Load(editor.bytes(), ForeignOptions(ElfMachine::kArmv7em), Allocator::Default());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(StatusText(none.status()).find("number of dynamic symbols"), std::string::npos);
}

TEST(ElfImageTest, RejectsLinkBaseOutside32BitSpace) {
  REQUIRE_TEST_EXECUTABLES();
  auto bytes = LibraryBytes("vector_add", "armv7em");
  auto image = ElfImage::Load(bytes, ForeignOptions(ElfMachine::kArmv7em, 0xfffff000ull),
                              Allocator::Default());
  EXPECT_EQ(image.status().code(), StatusCode::kInvalidArgument);
}

TEST(ElfImageTest, ForeignCodeIsNotExecutable) {
  REQUIRE_TEST_EXECUTABLES();
  ElfMachine host;
  ASSERT_TRUE(ElfHostMachine(&host)) << "tests run on a supported host machine";
  for (int i = 0; i < kElfMachineCount; ++i) {
    if (static_cast<ElfMachine>(i) == host) continue;
    ElfImageOptions options;
    options.machine = static_cast<ElfMachine>(i);
    options.executable = true;
    auto image =
        ElfImage::Load(LibraryBytes("vector_add", kArches[i]), options, Allocator::Default());
    EXPECT_EQ(image.status().code(), StatusCode::kUnavailable) << kArches[i];
  }
}

TEST(ElfImageTest, RejectsMachineOtherThanRequested) {
  REQUIRE_TEST_EXECUTABLES();
  auto image = ElfImage::Load(LibraryBytes("vector_add", "armv7em"),
                              ForeignOptions(ElfMachine::kRiscv32), Allocator::Default());
  EXPECT_EQ(image.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(StatusText(image.status()).find("armv7em"), std::string::npos);
}

TEST(ElfImageTest, MapsHostLibraryForExecution) {
  REQUIRE_TEST_EXECUTABLES();
  ElfMachine host;
  ASSERT_TRUE(ElfHostMachine(&host));
  ElfImageOptions options;
  options.machine = host;
  options.executable = true;
  CountingAllocator counting(Allocator::Default());
  {
    auto image =
        ElfImage::Load(LibraryBytes("tables", kArches[static_cast<int>(host)]), options, &counting);
    ASSERT_TRUE(image.ok()) << StatusText(image.status());
    auto query = (*image)->query_function();
    ASSERT_NE(query, nullptr);
    EXPECT_TRUE((*image)->ContainsHostCode(reinterpret_cast<const void*>(query)));
    osprey_executable_environment_v1_t env = {};
    auto library = query(OSPREY_EXECUTABLE_LIBRARY_VERSION_LATEST, &env);
    ASSERT_NE(library, nullptr);
    EXPECT_TRUE((*image)->ContainsHostRange(library, sizeof(void*)));
    EXPECT_STREQ((*library)->name, "tables");
    EXPECT_EQ(query(0, &env), nullptr);
    CheckTables(**image);
  }
  EXPECT_EQ(counting.live(), 0u);
}

}  // namespace
}  // namespace osprey::hal::local::loaders::elf
