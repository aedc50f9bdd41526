// The textual assembly: parse errors carry line numbers and say what is
// wrong; the printer emits the documented syntax.
#include <string>

#include "gtest/gtest.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using testing::StatusText;

void ExpectAsmError(const std::string& text, const std::string& fragment) {
  auto file = AssembleModule(text);
  ASSERT_FALSE(file.ok()) << "assembled:\n" << text;
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(file.status().message()).find(fragment), std::string::npos)
      << "missing '" << fragment << "' in: " << file.status().message();
}

TEST(AsmTest, ReportsErrorsWithLineNumbers) {
  ExpectAsmError("module @m\nfunc @f() {\n  ad.i32 %i0, %i0, %i0\n  return\n}\n",
                 "line 3: unknown mnemonic 'ad.i32'");
  ExpectAsmError("module @m\nfunc @f() {\n  add.i32 %l0, %i0, %i0\n  return\n}\n",
                 "line 3: operand 0 of add.i32: expected a i32 register, got %l0");
  ExpectAsmError("module @m\nfunc @f() {\n  br ^nowhere\n}\n",
                 "line 2: label ^nowhere is used but never defined");
  ExpectAsmError("module @m\nfunc @f() {\n^a:\n^a:\n  return\n}\n",
                 "line 4: label ^a defined twice");
  ExpectAsmError("module @m\nfunc @f() {\n  call @g()\n  return\n}\n",
                 "line 3: unknown function @g");
  ExpectAsmError("module @m\nfunc @g(i32) {\n  return\n}\nfunc @f() {\n  call @g()\n  return\n}\n",
                 "line 6: argument list has 0 registers, signature has 1");
  ExpectAsmError("module @m\nfunc @f() -> (i64) {\n  return %i0\n}\n",
                 "line 3: return 0: expected a i64 register, got %i0");
  ExpectAsmError("func @f() {\n  return\n}\n", "missing 'module @name' declaration");
  ExpectAsmError("module @m\nfunc @f() {\n  mov.i32 %x1, %i0\n  return\n}\n",
                 "line 3: bad register '%x1'");
  ExpectAsmError("module @m\nrodata @r text \"abc\n", "line 2: unterminated string");
  ExpectAsmError("module @m\nfunc @f() {\n  const.i32 %i0, 4294967296\n  return\n}\n",
                 "line 3: bad or out-of-range integer '4294967296'");
  ExpectAsmError("module @m\nfunc @f() {\n  fail WHATEVER, \"x\"\n}\n",
                 "line 3: expected a status code name");
  ExpectAsmError("module @m\nfunc @f() {\n  return\n", "function body has no closing '}'");
  ExpectAsmError("module @m\nimport @a.b(i32)\nimport @a.b(i32)\n", "line 3: import @a.b declared twice");
  ExpectAsmError("module @m\nfunc @f() {\n  const.ref.rodata %r0, @nope\n  return\n}\n",
                 "line 3: unknown rodata segment @nope");
}

TEST(AsmTest, PrintsDocumentedSyntax) {
  auto file = AssembleModule(R"asm(
module @demo version 4
import @host.log(ref, i32)
globals i32=2 ref=1
rodata @msg align 8 text "ok"
executable "elf-riscv32" @k align 32 hex "00ff"
func @f(i32, i64) -> (i32) {
  add.imm.i32 %i1, %i0, -5
^top:
  .loc "node add"
  br_if %i1, ^top
  const.ref.rodata %r0, @msg
  call @host.log(%r0, %i1)
  check.eq.i64 %l0, %l0, INVALID_ARGUMENT, "dim {}: \"{}\"", %l0, %i1
  return %i1
}
export @main = @f
)asm");
  ASSERT_TRUE(file.ok()) << StatusText(file.status());
  AlignedBytes aligned(*file);
  auto text = Disassemble(aligned.span());
  ASSERT_TRUE(text.ok()) << StatusText(text.status());
  for (const char* line : {
           "module @demo version 4\n",
           "import @host.log(ref, i32)\n",
           "globals i32=2 ref=1\n",
           "rodata @msg align 8 hex \"6f6b\"\n",
           "executable \"elf-riscv32\" @k align 32 hex \"00ff\"\n",
           "func @f(i32, i64) -> (i32) regs(i=2, l=1, f=0, d=0, r=1) {\n",
           "  add.imm.i32 %i1, %i0, -5\n^L9:\n  .loc \"node add\"\n  br_if %i1, ^L9\n",
           "  call.import @host.log(%r0, %i1)\n",
           "  check.eq.i64 %l0, %l0, INVALID_ARGUMENT, \"dim {}: \\\"{}\\\"\", %l0, %i1\n",
           "  return %i1\n}\n",
           "export @main = @f\n",
       }) {
    EXPECT_NE(text->find(line), std::string::npos) << "missing:\n" << line << "\nin:\n" << *text;
  }
}

TEST(AsmTest, AttributesRoundTrip) {
  const char* text =
      "module @m version 0\nfunc @f() -> () regs(i=0, l=0, f=0, d=0, r=0) {\n  return\n}\n"
      "attribute \"arena_size\" \"4096\"\nattribute \"note\" \"a \\\"b\\\"\"\n";
  auto file = AssembleModule(text);
  ASSERT_TRUE(file.ok()) << StatusText(file.status());
  AlignedBytes aligned(*file);
  auto printed = Disassemble(aligned.span());
  ASSERT_TRUE(printed.ok()) << StatusText(printed.status());
  EXPECT_NE(printed->find("attribute \"arena_size\" \"4096\"\n"), std::string::npos) << *printed;
  auto again = AssembleModule(*printed);
  ASSERT_TRUE(again.ok()) << StatusText(again.status());
  EXPECT_EQ(*again, *file);
  auto twice = AssembleModule("module @m\nattribute \"k\" \"1\"\nattribute \"k\" \"2\"\n");
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
}

TEST(AsmTest, ExternalSegmentsRoundTrip) {
  std::string hex(2 * 3000, 'a');
  std::string text = "module @m\nrodata @big align 16 hex \"" + hex +
                     "\"\nfunc @f() {\n  return\n}\n";
  BuildOptions options;
  options.external_threshold = 1024;
  auto external = AssembleModule(text, options);
  auto inline_file = AssembleModule(text);
  ASSERT_TRUE(external.ok() && inline_file.ok());
  EXPECT_NE(*external, *inline_file);
  AlignedBytes a(*external), b(*inline_file);
  auto printed_external = Disassemble(a.span());
  auto printed_inline = Disassemble(b.span());
  ASSERT_TRUE(printed_external.ok()) << StatusText(printed_external.status());
  ASSERT_TRUE(printed_inline.ok());
  EXPECT_EQ(*printed_external, *printed_inline);
}

}  // namespace
}  // namespace osprey::vm
