// Module loading: structural (FlatBuffer) and semantic checks of every
// table, external segments, zero-copy rodata and file ownership.
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vm/schema/module_generated.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

namespace fb = ::osprey::vm::schema;
using testing::LoadBytes;
using testing::StatusText;

void ExpectError(const Status& status, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(status.code(), code) << StatusText(status);
  EXPECT_NE(std::string(status.message()).find(fragment), std::string::npos)
      << "missing '" << fragment << "' in: " << status.message();
}

std::vector<uint8_t> ReturnCode() { return {uint8_t(Opcode::kReturn), 0}; }

// A builder with one valid function "f" (signature ":").
ModuleBuilder ValidBuilder() {
  ModuleBuilder b("m", 7);
  uint32_t f = b.DeclareFunction("f", ":");
  b.DefineFunction(f, ReturnCode(), {});
  return b;
}

Status LoadBuilder(const ModuleBuilder& b, const BuildOptions& options = {}) {
  auto file = b.Build(options);
  if (!file.ok()) return std::move(file).status();
  return LoadBytes(*file).status();
}

// Hand-built FlatBuffers for layouts the ModuleBuilder never produces.
struct RawModule {
  uint32_t bytecode_offset = 0;
  uint32_t bytecode_length = 2;
  bool rodata_inline = false;
  bool rodata_external = false;
  uint64_t external_offset = 0;
  uint64_t external_length = 0;
  uint32_t debug_function = 0;
  bool debug = false;
  std::vector<std::pair<std::string, std::string>> attributes;
};

std::vector<uint8_t> BuildRaw(const RawModule& raw) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint8_t> code = ReturnCode();
  std::vector<flatbuffers::Offset<fb::FunctionDef>> functions = {
      fb::CreateFunctionDefDirect(b, "f", ":", raw.bytecode_offset, raw.bytecode_length)};
  std::vector<flatbuffers::Offset<fb::RodataSegmentDef>> rodata;
  if (raw.rodata_inline || raw.rodata_external) {
    std::vector<uint8_t> bytes(16, 1);
    auto data = raw.rodata_inline ? b.CreateVector(bytes) : 0;
    fb::ExternalRange range(raw.external_offset, raw.external_length);
    fb::RodataSegmentDefBuilder sb(b);
    sb.add_alignment(4);
    if (raw.rodata_inline) sb.add_data(data);
    if (raw.rodata_external) sb.add_external(&range);
    rodata.push_back(sb.Finish());
  }
  flatbuffers::Offset<fb::DebugInfoDef> debug;
  if (raw.debug) {
    std::vector<flatbuffers::Offset<fb::SourceLocationDef>> locations = {
        fb::CreateSourceLocationDefDirect(b, 0, "x")};
    std::vector<flatbuffers::Offset<fb::FunctionDebugDef>> fns = {
        fb::CreateFunctionDebugDefDirect(b, raw.debug_function, &locations)};
    debug = fb::CreateDebugInfoDefDirect(b, &fns);
  }
  std::vector<flatbuffers::Offset<fb::AttributeDef>> attributes;
  for (const auto& [key, value] : raw.attributes) {
    attributes.push_back(fb::CreateAttributeDefDirect(b, key.c_str(), value.c_str()));
  }
  auto module = fb::CreateModuleDefDirect(b, 1, "raw", 0, nullptr, nullptr, &functions, &code,
                                          rodata.empty() ? nullptr : &rodata, nullptr, 0, -1,
                                          debug, attributes.empty() ? nullptr : &attributes);
  fb::FinishSizePrefixedModuleDefBuffer(b, module);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

TEST(LoaderTest, LoadsValidModule) {
  ModuleBuilder b = ValidBuilder();
  b.AddExport("main", 0);
  auto file = b.Build();
  ASSERT_TRUE(file.ok());
  auto loaded = LoadBytes(*file);
  ASSERT_TRUE(loaded.ok()) << StatusText(loaded.status());
  EXPECT_STREQ(loaded->module->name(), "m");
  EXPECT_EQ(loaded->module->version(), 7u);
  EXPECT_EQ(loaded->module->export_count(), 1u);
  EXPECT_STREQ(loaded->module->export_info(0).name, "main");
  EXPECT_TRUE(LoadBytes(BuildRaw({})).ok());
}

TEST(LoaderTest, ReadsAttributes) {
  ModuleBuilder b = ValidBuilder();
  b.SetAttribute("arena_size", "1024");
  b.SetAttribute("arena_alignment", "64");
  b.SetAttribute("arena_size", "4096");  // Replaces the first value.
  auto file = b.Build();
  ASSERT_TRUE(file.ok());
  auto loaded = LoadBytes(*file);
  ASSERT_TRUE(loaded.ok()) << StatusText(loaded.status());
  ASSERT_EQ(loaded->module->attribute_count(), 2u);
  EXPECT_STREQ(loaded->module->attribute(1).key, "arena_alignment");
  EXPECT_STREQ(loaded->module->LookupAttribute("arena_size"), "4096");
  EXPECT_EQ(loaded->module->LookupAttribute("missing"), nullptr);
}

TEST(LoaderTest, RejectsDuplicateOrEmptyAttributeKeys) {
  RawModule twice;
  twice.attributes = {{"k", "1"}, {"k", "2"}};
  ExpectError(LoadBytes(BuildRaw(twice)).status(), StatusCode::kInvalidArgument,
              "attribute 'k' appears twice");
  RawModule empty;
  empty.attributes = {{"", "1"}};
  ExpectError(LoadBytes(BuildRaw(empty)).status(), StatusCode::kInvalidArgument,
              "attribute 0 has an empty key");
}

TEST(LoaderTest, RejectsNonModules) {
  std::vector<uint8_t> tiny = {1, 2, 3};
  ExpectError(LoadBytes(tiny).status(), StatusCode::kDataLoss, "too small");
  std::vector<uint8_t> junk(256, 0x5a);
  ExpectError(LoadBytes(junk).status(), StatusCode::kDataLoss, "file identifier is not 'OSPM'");
  // Right identifier, garbage root offset.
  std::vector<uint8_t> fake(64, 0xff);
  uint32_t prefix = 60;
  memcpy(fake.data(), &prefix, 4);
  memcpy(fake.data() + 8, "OSPM", 4);
  ExpectError(LoadBytes(fake).status(), StatusCode::kDataLoss, "structural verification");
}

TEST(LoaderTest, RejectsTruncatedFile) {
  auto file = ValidBuilder().Build();
  ASSERT_TRUE(file.ok());
  file->pop_back();
  ExpectError(LoadBytes(*file).status(), StatusCode::kDataLoss, "module file is truncated");
}

TEST(LoaderTest, RejectsOtherFormatVersion) {
  ModuleBuilder b = ValidBuilder();
  b.set_format_version(2);
  ExpectError(LoadBuilder(b), StatusCode::kUnimplemented, "format version 2 is not supported");
}

TEST(LoaderTest, RejectsBadNames) {
  ModuleBuilder b = ValidBuilder();
  b.set_name("has.dot");
  ExpectError(LoadBuilder(b), StatusCode::kInvalidArgument, "module name 'has.dot'");
  b.set_name("");
  ExpectError(LoadBuilder(b), StatusCode::kInvalidArgument, "module name ''");

  ModuleBuilder f("m");
  f.DefineFunction(f.DeclareFunction("bad name", ":"), ReturnCode(), {});
  ExpectError(LoadBuilder(f), StatusCode::kInvalidArgument, "function 0 has invalid name");

  for (const char* name : {"nodot", ".x", "a.", "a b.c", "m.f g"}) {
    SCOPED_TRACE(name);
    ModuleBuilder i = ValidBuilder();
    i.AddImport(name, ":");
    ExpectError(LoadBuilder(i), StatusCode::kInvalidArgument, "is not of the form 'module.function'");
  }
}

TEST(LoaderTest, RejectsBadSignatures) {
  for (const char* sig : {"", "i", "x:", "i::i", "i:q", "iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii:"}) {
    SCOPED_TRACE(sig);
    ModuleBuilder b("m");
    b.DefineFunction(b.DeclareFunction("f", sig), ReturnCode(), {32, 0, 0, 0, 0});
    Status status = LoadBuilder(b);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << StatusText(status);
    EXPECT_NE(std::string(status.message()).find("signature"), std::string::npos);
  }
  ModuleBuilder i = ValidBuilder();
  i.AddImport("x.y", "r");
  ExpectError(LoadBuilder(i), StatusCode::kInvalidArgument, "import 'x.y'");
}

TEST(LoaderTest, RejectsArgumentsBeyondRegisters) {
  ModuleBuilder b("m");
  b.DefineFunction(b.DeclareFunction("f", "iI:"), ReturnCode(), {1, 0, 0, 0, 0});
  ExpectError(LoadBuilder(b), StatusCode::kInvalidArgument,
              "takes 1 i64 arguments but has only 0 i64 registers");
}

TEST(LoaderTest, RejectsBytecodeRangeOutsideBytecode) {
  RawModule raw;
  raw.bytecode_offset = 1;
  raw.bytecode_length = 2;
  ExpectError(LoadBytes(BuildRaw(raw)).status(), StatusCode::kInvalidArgument,
              "bytecode range [1, +2) is outside the 2-byte bytecode");
  raw.bytecode_offset = 0xffffffff;
  ExpectError(LoadBytes(BuildRaw(raw)).status(), StatusCode::kInvalidArgument, "outside");
}

TEST(LoaderTest, RejectsBadExports) {
  ModuleBuilder b = ValidBuilder();
  b.AddExport("main", 3);
  ExpectError(LoadBuilder(b), StatusCode::kInvalidArgument,
              "export 'main' refers to function 3 (module has 1)");
  ModuleBuilder d = ValidBuilder();
  d.AddExport("main", 0);
  d.AddExport("main", 0);
  ExpectError(LoadBuilder(d), StatusCode::kInvalidArgument, "export name 'main' appears twice");
}

TEST(LoaderTest, RejectsBadInitializer) {
  ModuleBuilder b = ValidBuilder();
  b.SetInitializer(5);
  ExpectError(LoadBuilder(b), StatusCode::kInvalidArgument, "initializer refers to function 5");
  ModuleBuilder s("m");
  s.DefineFunction(s.DeclareFunction("init", "i:"), ReturnCode(), {1, 0, 0, 0, 0});
  s.SetInitializer(0);
  ExpectError(LoadBuilder(s), StatusCode::kInvalidArgument, "must have signature ':'");
}

TEST(LoaderTest, RejectsBadSegments) {
  ModuleBuilder a = ValidBuilder();
  a.AddRodata("w", {1, 2, 3}, 3);
  ExpectError(LoadBuilder(a), StatusCode::kInvalidArgument,
              "rodata segment 0 has alignment 3; must be a power of two");
  ModuleBuilder big = ValidBuilder();
  big.AddRodata("w", {1}, 8192);
  ExpectError(LoadBuilder(big), StatusCode::kInvalidArgument, "alignment 8192");
  ModuleBuilder e = ValidBuilder();
  e.AddExecutable("", "k", {1, 2}, 16);
  ExpectError(LoadBuilder(e), StatusCode::kInvalidArgument, "executable 0 has invalid format");
  ModuleBuilder n = ValidBuilder();
  n.AddRodata("bad name", {1});
  ExpectError(LoadBuilder(n), StatusCode::kInvalidArgument, "rodata segment 0 has invalid name");

  RawModule both;
  both.rodata_inline = true;
  both.rodata_external = true;
  ExpectError(LoadBytes(BuildRaw(both)).status(), StatusCode::kInvalidArgument,
              "both inline and external data");
  RawModule outside;
  outside.rodata_external = true;
  outside.external_offset = 1u << 20;
  outside.external_length = 16;
  ExpectError(LoadBytes(BuildRaw(outside)).status(), StatusCode::kInvalidArgument,
              "external range [1048576, +16) is outside the");
  RawModule overflow;
  overflow.rodata_external = true;
  overflow.external_offset = 8;
  overflow.external_length = ~uint64_t(0);
  ExpectError(LoadBytes(BuildRaw(overflow)).status(), StatusCode::kInvalidArgument, "outside");
  RawModule misaligned;
  misaligned.rodata_external = true;
  misaligned.external_offset = 2;
  misaligned.external_length = 4;
  ExpectError(LoadBytes(BuildRaw(misaligned)).status(), StatusCode::kInvalidArgument,
              "file offset 2, not a multiple of its alignment 4");
}

TEST(LoaderTest, RejectsBadDebugInfo) {
  RawModule raw;
  raw.debug = true;
  raw.debug_function = 4;
  ExpectError(LoadBytes(BuildRaw(raw)).status(), StatusCode::kInvalidArgument,
              "debug info 0 refers to function 4");
  ModuleBuilder b("m");
  b.DefineFunction(b.DeclareFunction("f", ":"), ReturnCode(), {}, {{1, "b"}, {0, "a"}});
  ExpectError(LoadBuilder(b), StatusCode::kInvalidArgument, "must be increasing");
  ModuleBuilder past("m");
  past.DefineFunction(past.DeclareFunction("f", ":"), ReturnCode(), {}, {{2, "a"}});
  ExpectError(LoadBuilder(past), StatusCode::kInvalidArgument, "inside the function");
}

TEST(LoaderTest, RodataIsZeroCopyInlineAndExternal) {
  std::vector<uint8_t> small(100), large(5000);
  for (size_t i = 0; i < small.size(); ++i) small[i] = uint8_t(i);
  for (size_t i = 0; i < large.size(); ++i) large[i] = uint8_t(i * 7);
  for (size_t threshold : {SIZE_MAX, size_t(1000)}) {
    SCOPED_TRACE(threshold);
    ModuleBuilder b = ValidBuilder();
    b.AddRodata("small", small, 64);
    b.AddRodata("large", large, 256);
    b.AddExecutable("elf-x86_64", "kernels", large, 4096);
    BuildOptions options;
    options.external_threshold = threshold;
    auto file = b.Build(options);
    ASSERT_TRUE(file.ok());
    auto loaded = LoadBytes(*file);
    ASSERT_TRUE(loaded.ok()) << StatusText(loaded.status());
    const BytecodeModule& m = *loaded->module;
    const uint8_t* begin = loaded->bytes.span().data();
    const uint8_t* end = begin + loaded->bytes.size();
    ASSERT_EQ(m.rodata_count(), 2u);
    for (uint32_t i = 0; i < 2; ++i) {
      const SegmentInfo& s = m.rodata(i);
      EXPECT_GE(s.data, begin);
      EXPECT_LE(s.data + s.length, end);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data) % s.alignment, 0u);
    }
    EXPECT_EQ(std::vector<uint8_t>(m.rodata(0).data, m.rodata(0).data + m.rodata(0).length), small);
    EXPECT_EQ(std::vector<uint8_t>(m.rodata(1).data, m.rodata(1).data + m.rodata(1).length), large);
    ASSERT_EQ(m.executable_count(), 1u);
    EXPECT_STREQ(m.executable(0).format, "elf-x86_64");
    EXPECT_STREQ(m.executable(0).name, "kernels");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.executable(0).data) % 4096, 0u);
    EXPECT_EQ(std::vector<uint8_t>(m.executable(0).data, m.executable(0).data + large.size()),
              large);
    Buffer* view = m.rodata_ref(1).As<Buffer>(Buffer::type());
    ASSERT_NE(view, nullptr);
    EXPECT_TRUE(view->read_only());
    EXPECT_EQ(view->data(), m.rodata(1).data);
    if (threshold != SIZE_MAX) {
      // External segments sit after the FlatBuffer, whose size is at least
      // the file size minus the segments.
      EXPECT_GE(size_t(m.rodata(1).data - begin) + large.size() + large.size(),
                loaded->bytes.size() - 4096);
    }
  }
}

TEST(LoaderTest, RejectsMisalignedLoadAddress) {
  ModuleBuilder b = ValidBuilder();
  b.AddRodata("w", std::vector<uint8_t>(64, 1), 64);
  auto file = b.Build();
  ASSERT_TRUE(file.ok());
  std::vector<uint8_t> shifted(file->size() + 64);
  AlignedBytes storage(shifted);
  memcpy(storage.data() + 8, file->data(), file->size());
  auto module = BytecodeModule::Load({storage.data() + 8, file->size()}, nullptr,
                                     Allocator::Default());
  ExpectError(module.status(), StatusCode::kInvalidArgument,
              "not loaded at a 64-byte aligned address");
}

class FileOwner final : public RefObject {};

TEST(LoaderTest, RodataRefsRetainTheFileOwner) {
  ModuleBuilder b = ValidBuilder();
  b.AddRodata("w", {1, 2, 3, 4});
  auto file = b.Build();
  ASSERT_TRUE(file.ok());
  AlignedBytes bytes(*file);
  auto owner = MakeRef<FileOwner>(Allocator::Default());
  ASSERT_TRUE(owner.ok());
  FileOwner* raw_owner = owner->get();
  Ref segment;
  {
    auto module = BytecodeModule::Load(bytes.span(), ref_ptr<RefObject>(raw_owner),
                                       Allocator::Default());
    ASSERT_TRUE(module.ok());
    EXPECT_GE(raw_owner->ref_count(), 3u);  // Ours, the module's, the buffer's.
    segment = (*module)->rodata_ref(0);
  }
  // The module is gone; the segment keeps the file alive.
  EXPECT_EQ(raw_owner->ref_count(), 2u);
  Buffer* buffer = segment.As<Buffer>(Buffer::type());
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->data()[3], 4);
  segment.reset();
  EXPECT_EQ(raw_owner->ref_count(), 1u);
}

}  // namespace
}  // namespace osprey::vm
