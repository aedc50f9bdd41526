// A hostile-module corpus: truncations, byte flips with fixed seeds, random
// garbage and hand-made out-of-range modules must all be rejected with a
// clear status (or, for harmless flips, load and print) without crashing.
// Meant to run under AddressSanitizer too (-DOSPREY_ENABLE_ASAN=ON).
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using testing::LoadBytes;
using testing::StatusText;

// Flipped bytes must reach the checks behind the digest.
constexpr LoadOptions kNoDigests{IntegrityCheck::kNone};

constexpr char kVictim[] = R"asm(
module @victim version 2
import @host.read_dim(ref, i32) -> (i64)
globals i32=1 ref=1
rodata @shape align 16 hex "0100000000000000030000000000000020000000000000002000000000000000"
executable "elf-x86_64" @kernels align 64 hex "7f454c46020101000000000000000000"

func @numel(ref) -> (i64) regs(i=1, l=5, r=1) export {
  buffer.length %l0, %r0
  const.i64 %l1, 1
  const.i64 %l2, 0
^loop:
  .loc "shape loop"
  buffer.load.i64 %l3, %r0, %l2
  mul.i64 %l1, %l1, %l3
  add.imm.i64 %l2, %l2, 8
  cmp.lt.i64.s %i0, %l2, %l0
  br_if %i0, ^loop
  return %l1
}

func @main(ref) -> (i64) regs(i=2, l=3, r=2) export {
  const.i32 %i0, 1
  call @host.read_dim(%r0, %i0) -> (%l0)
  const.ref.rodata %r1, @shape
  call @numel(%r1) -> (%l1)
  .loc "node conv1"
  check.eq.i64 %l0, %l1, INVALID_ARGUMENT, "input 0 dim 1: expected {}, got {}", %l1, %l0
  global.store.ref %r1, 0
  global.load.i32 %i1, 0
  list.alloc %r0, %i1
  return %l1
}
)asm";

std::vector<uint8_t> VictimFile() {
  auto file = AssembleModule(kVictim);
  EXPECT_TRUE(file.ok()) << StatusText(file.status());
  return file.ok() ? *file : std::vector<uint8_t>();
}

// Loads |bytes|; if that succeeds the module must also print.
bool LoadAndPrint(const std::vector<uint8_t>& bytes, std::string* error) {
  AlignedBytes aligned(bytes);
  auto module = BytecodeModule::Load(aligned.span(), nullptr, Allocator::Default(), kNoDigests);
  if (!module.ok()) {
    *error = StatusText(module.status());
    return false;
  }
  auto printed = Disassemble(aligned.span());
  EXPECT_TRUE(printed.ok()) << StatusText(printed.status());
  return true;
}

TEST(HostileModuleTest, VictimLoads) {
  std::vector<uint8_t> file = VictimFile();
  std::string error;
  EXPECT_TRUE(LoadAndPrint(file, &error)) << error;
}

TEST(HostileModuleTest, EveryTruncationIsRejected) {
  std::vector<uint8_t> file = VictimFile();
  ASSERT_FALSE(file.empty());
  for (size_t length = 0; length < file.size(); ++length) {
    std::vector<uint8_t> truncated(file.begin(), file.begin() + length);
    std::string error;
    EXPECT_FALSE(LoadAndPrint(truncated, &error)) << "truncated to " << length << " bytes loaded";
    EXPECT_FALSE(error.empty());
  }
}

// Rounds per flip campaign: OSPREY_VM_FUZZ_ROUNDS overrides the default
// (the "fuzz"-labelled ctest entry runs many more).
int Rounds(int default_rounds) {
  const char* env = getenv("OSPREY_VM_FUZZ_ROUNDS");
  return env ? atoi(env) : default_rounds;
}

// Flips 1-4 random bytes in [begin, end) of the file, for fixed seeds.
void FlipCampaign(size_t begin, size_t end, uint32_t first_seed, int rounds, int* rejected,
                  int* accepted) {
  std::vector<uint8_t> file = VictimFile();
  ASSERT_LT(begin, end);
  ASSERT_LE(end, file.size());
  for (int round = 0; round < rounds; ++round) {
    std::mt19937 rng(first_seed + uint32_t(round));
    std::vector<uint8_t> mutated = file;
    int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = begin + rng() % (end - begin);
      mutated[at] ^= uint8_t(1 + rng() % 255);
    }
    std::string error;
    if (LoadAndPrint(mutated, &error)) {
      ++*accepted;
    } else {
      ++*rejected;
      // Errors are statuses with a message, never empty.
      EXPECT_NE(error.find(':'), std::string::npos) << error;
    }
  }
}

TEST(HostileModuleTest, RandomByteFlipsAnywhere) {
  std::vector<uint8_t> file = VictimFile();
  int rejected = 0, accepted = 0;
  int rounds = Rounds(3000);
  FlipCampaign(0, file.size(), /*first_seed=*/1000, rounds, &rejected, &accepted);
  // Most flips hit structure and must be caught; some land in data bytes.
  EXPECT_GT(rejected, rounds / 3);
  RecordProperty("rejected", rejected);
  RecordProperty("accepted", accepted);
}

TEST(HostileModuleTest, RandomByteFlipsInBytecode) {
  std::vector<uint8_t> file = VictimFile();
  AlignedBytes aligned(file);
  auto module = BytecodeModule::Load(aligned.span(), nullptr, Allocator::Default(), kNoDigests);
  ASSERT_TRUE(module.ok());
  const FunctionInfo& first = (*module)->function(0);
  const FunctionInfo& last = (*module)->function((*module)->function_count() - 1);
  size_t begin = size_t(first.code - aligned.span().data());
  size_t end = size_t(last.code + last.code_length - aligned.span().data());
  int rejected = 0, accepted = 0;
  int rounds = Rounds(3000);
  FlipCampaign(begin, end, /*first_seed=*/7, rounds, &rejected, &accepted);
  EXPECT_GT(rejected, rounds / 2);
  RecordProperty("rejected", rejected);
  RecordProperty("accepted", accepted);
}

TEST(HostileModuleTest, RandomGarbageWithIdentifier) {
  std::mt19937 rng(42);
  for (int round = 0; round < 500; ++round) {
    std::vector<uint8_t> junk(12 + rng() % 512);
    for (uint8_t& b : junk) b = uint8_t(rng());
    memcpy(junk.data() + 8, "OSPM", 4);
    if (round % 2 == 0) {
      // A consistent size prefix gets the garbage past the length check.
      uint32_t prefix = uint32_t(junk.size() - 4);
      memcpy(junk.data(), &prefix, 4);
    }
    std::string error;
    EXPECT_FALSE(LoadAndPrint(junk, &error));
  }
}

// Hand-made modules with one out-of-range field each.
Status LoadWithCode(std::vector<uint8_t> code, const char* sig = ":") {
  ModuleBuilder b("m");
  b.AddRodata("r", {1, 2, 3, 4});
  b.AddImport("host.f", "i:i");
  b.SetGlobalCount(Bank::kRef, 1);
  b.DefineFunction(b.DeclareFunction("f", sig), std::move(code), {2, 2, 2, 2, 2});
  auto file = b.Build();
  if (!file.ok()) return std::move(file).status();
  return LoadBytes(*file).status();
}

std::vector<uint8_t> Bytes(std::initializer_list<int> values) {
  std::vector<uint8_t> out;
  for (int v : values) out.push_back(uint8_t(v));
  return out;
}

TEST(HostileModuleTest, OutOfRangeOperandsAreRejected) {
  const uint8_t ret = uint8_t(Opcode::kReturn);
  struct Case {
    const char* what;
    std::vector<uint8_t> code;
  };
  const Case cases[] = {
      {"register 65535", Bytes({int(Opcode::kMovI32), 0, 0, 0xff, 0xff, ret, 0})},
      {"branch to 0xffffffff", Bytes({int(Opcode::kBr), 0xff, 0xff, 0xff, 0xff})},
      {"rodata 0xffffffff",
       Bytes({int(Opcode::kConstRefRodata), 0, 0, 0xff, 0xff, 0xff, 0xff, ret, 0})},
      {"rodata 1", Bytes({int(Opcode::kConstRefRodata), 0, 0, 1, 0, 0, 0, ret, 0})},
      {"ref global 1", Bytes({int(Opcode::kGlobalLoadRef), 0, 0, 1, 0, 0, 0, ret, 0})},
      {"function 0xffffffff",
       Bytes({int(Opcode::kCall), 0xff, 0xff, 0xff, 0xff, 0, 0, ret, 0})},
      {"import with wrong arity", Bytes({int(Opcode::kCallImport), 0, 0, 0, 0, 0, 0, ret, 0})},
      {"import 1", Bytes({int(Opcode::kCallImport), 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, ret, 0})},
      {"register list count 255",
       Bytes({int(Opcode::kCallImport), 0, 0, 0, 0, 255, 0, 0, ret, 0})},
      {"opcode past the table", Bytes({int(Opcode::kCount), ret, 0})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Status status = LoadWithCode(c.code);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << StatusText(status);
    EXPECT_NE(std::string(status.message()).find("function 'f' at offset"), std::string::npos)
        << status.message();
  }
}

TEST(HostileModuleTest, HugeFramesAreResourceExhaustedNotACrash) {
  ModuleBuilder b("m");
  b.DefineFunction(b.DeclareFunction("f", ":"), {uint8_t(Opcode::kReturn), 0},
                   {65535, 65535, 65535, 65535, 65535});
  b.AddExport("f", 0);
  auto file = b.Build();
  ASSERT_TRUE(file.ok());
  auto loaded = LoadBytes(*file);
  ASSERT_TRUE(loaded.ok()) << StatusText(loaded.status());
  auto instance = Instance::Create(Allocator::Default());
  ASSERT_TRUE(instance.ok());
  std::vector<Module*> modules = {loaded->module.get()};
  auto context = Context::Create(instance->get(), modules, {}, Allocator::Default());
  ASSERT_TRUE(context.ok());
  auto f = (*context)->LookupFunction("m.f");
  ASSERT_TRUE(f.ok());
  Status status = (*context)->Invoke(*f, {}, {});
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << StatusText(status);
  EXPECT_EQ((*context)->stack_bytes_in_use(), 0u);
}

TEST(HostileModuleTest, BadImportsFailAtContextCreation) {
  auto instance = Instance::Create(Allocator::Default());
  ASSERT_TRUE(instance.ok());
  auto file = AssembleModule(kVictim);
  ASSERT_TRUE(file.ok());
  auto loaded = LoadBytes(*file);
  ASSERT_TRUE(loaded.ok());
  // No "host" module.
  std::vector<Module*> modules = {loaded->module.get()};
  auto context = Context::Create(instance->get(), modules, {}, Allocator::Default());
  EXPECT_EQ(context.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(context.status().message()).find("'host.read_dim'"), std::string::npos);
  // A "host" module whose read_dim has another signature.
  static constexpr NativeFunction kWrong[] = {
      {"read_dim", "ri:i", [](NativeCall&) { return OkStatus(); }}};
  auto host = NativeModule::Create("host", kWrong, Allocator::Default());
  ASSERT_TRUE(host.ok());
  modules = {host->get(), loaded->module.get()};
  context = Context::Create(instance->get(), modules, {}, Allocator::Default());
  EXPECT_EQ(context.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(context.status().message()).find("signature 'ri:I'"), std::string::npos)
      << context.status().message();
}

}  // namespace
}  // namespace osprey::vm
