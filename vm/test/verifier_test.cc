// One test per verifier rule: hand-encoded bytecode that breaks exactly that
// rule must be rejected at load with INVALID_ARGUMENT naming the function,
// the offset and the rule.
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using testing::StatusText;

constexpr std::array<uint16_t, kBankCount> kFourEach = {4, 4, 4, 4, 4};

// Builds a module whose function "f" (signature |sig|) has |code|, lets
// |extra| add more tables, and loads it.
Status LoadCode(const std::vector<uint8_t>& code, const std::string& sig = ":",
                std::function<void(ModuleBuilder&)> extra = nullptr,
                std::array<uint16_t, kBankCount> registers = kFourEach) {
  ModuleBuilder builder("m");
  uint32_t f = builder.DeclareFunction("f", sig);
  builder.DefineFunction(f, code, registers);
  if (extra) extra(builder);
  auto file = builder.Build();
  if (!file.ok()) return std::move(file).status();
  return testing::LoadBytes(*file).status();
}

std::vector<uint8_t> Encode(std::function<void(BytecodeWriter&)> emit) {
  BytecodeWriter w;
  emit(w);
  return std::move(w.Finish()).value();
}

void Return0(BytecodeWriter& w) {
  w.Op(Opcode::kReturn);
  w.U8(0);
}

void ExpectRejected(const Status& status, const std::string& fragment) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << StatusText(status);
  EXPECT_NE(std::string(status.message()).find(fragment), std::string::npos)
      << "missing '" << fragment << "' in: " << status.message();
}

TEST(VerifierTest, AcceptsValidFunction) {
  Status status = LoadCode(Encode([](BytecodeWriter& w) {
    w.Op(Opcode::kAddI32);
    w.Reg(3);
    w.Reg(0);
    w.Reg(1);
    Return0(w);
  }));
  EXPECT_TRUE(status.ok()) << StatusText(status);
}

TEST(VerifierTest, RejectsUnknownOpcode) {
  ExpectRejected(LoadCode({0xff}), "function 'f' at offset 0x0: unknown opcode 0xff");
}

TEST(VerifierTest, RejectsTruncatedInstruction) {
  ExpectRejected(LoadCode({uint8_t(Opcode::kConstI32), 0, 0, 1}),
                 "instruction is truncated by the end of the function");
}

TEST(VerifierTest, RejectsOutOfRangeRegisterInEveryBank) {
  const std::pair<Opcode, const char*> cases[] = {
      {Opcode::kMovI32, "i32 register 4 out of range (function has 4)"},
      {Opcode::kMovI64, "i64 register 4 out of range"},
      {Opcode::kMovF32, "f32 register 4 out of range"},
      {Opcode::kMovF64, "f64 register 4 out of range"},
      {Opcode::kMovRef, "ref register 4 out of range"},
  };
  for (const auto& [op, message] : cases) {
    SCOPED_TRACE(message);
    ExpectRejected(LoadCode(Encode([op = op](BytecodeWriter& w) {
                     w.Op(op);
                     w.Reg(0);
                     w.Reg(4);
                     Return0(w);
                   })),
                   message);
  }
  // Mixed-bank operands are checked against their own bank.
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kCmpLtI64S);
                   w.Reg(0);
                   w.Reg(0);
                   w.Reg(1);
                   Return0(w);
                 }),
                          ":", nullptr, {4, 1, 0, 0, 0}),
                 "i64 register 1 out of range (function has 1)");
}

TEST(VerifierTest, RejectsBranchOutsideFunction) {
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kBr);
                   w.U32(100);
                 })),
                 "branch target 0x64 is outside the function");
}

TEST(VerifierTest, RejectsBranchIntoInstruction) {
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kConstI32);
                   w.Reg(0);
                   w.I32(0);
                   w.Op(Opcode::kBr);
                   w.U32(2);
                 })),
                 "branch target 0x2 is not the start of an instruction");
}

TEST(VerifierTest, RejectsFallingOffTheEnd) {
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kConstI32);
                   w.Reg(0);
                   w.I32(0);
                 })),
                 "control falls off the end of the function");
  // A conditional branch falls through when not taken.
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kBrIf);
                   w.Reg(0);
                   w.U32(0);
                 })),
                 "control falls off the end");
  // So does a passing check.
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kCheckNz);
                   w.Reg(0);
                   w.FailurePayload(StatusCode::kInternal, "x", {});
                 })),
                 "control falls off the end");
}

TEST(VerifierTest, RejectsEmptyFunction) {
  Status status = LoadCode({});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("function 'f' has no code"), std::string::npos);
}

TEST(VerifierTest, RejectsCallToMissingFunction) {
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kCall);
                   w.U32(7);
                   w.U8(0);
                   w.U8(0);
                   Return0(w);
                 })),
                 "call to function 7 out of range (module has 1)");
}

TEST(VerifierTest, RejectsCallArgumentCountMismatch) {
  auto add_callee = [](ModuleBuilder& b) {
    uint32_t g = b.DeclareFunction("g", "iI:f");
    BytecodeWriter w;
    w.Op(Opcode::kReturn);
    w.U8(1);
    w.Reg(0);
    b.DefineFunction(g, std::move(w.Finish()).value(), {1, 1, 1, 0, 0});
  };
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kCall);
                            w.U32(1);
                            w.U8(1);
                            w.Reg(0);
                            w.U8(1);
                            w.Reg(0);
                            Return0(w);
                          }),
                          ":", add_callee),
                 "argument list has 1 registers but the signature has 2");
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kCall);
                            w.U32(1);
                            w.U8(2);
                            w.Reg(0);
                            w.Reg(0);
                            w.U8(0);
                            Return0(w);
                          }),
                          ":", add_callee),
                 "result list has 0 registers but the signature has 1");
  // The second argument is an i64: register 9 is out of that bank's range.
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kCall);
                            w.U32(1);
                            w.U8(2);
                            w.Reg(0);
                            w.Reg(9);
                            w.U8(1);
                            w.Reg(0);
                            Return0(w);
                          }),
                          ":", add_callee),
                 "i64 register 9 out of range");
}

TEST(VerifierTest, RejectsImportCallMismatch) {
  auto add_import = [](ModuleBuilder& b) { b.AddImport("other.fn", "r:"); };
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kCallImport);
                            w.U32(1);
                            w.U8(0);
                            w.U8(0);
                            Return0(w);
                          }),
                          ":", add_import),
                 "call to import 1 out of range (module has 1)");
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kCallImport);
                            w.U32(0);
                            w.U8(0);
                            w.U8(0);
                            Return0(w);
                          }),
                          ":", add_import),
                 "argument list has 0 registers but the signature has 1");
}

TEST(VerifierTest, RejectsReturnMismatch) {
  ExpectRejected(LoadCode(Encode(Return0), "i:I"),
                 "return list has 0 registers but the signature has 1");
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kReturn);
                            w.U8(1);
                            w.Reg(4);
                          }),
                          ":I"),
                 "i64 register 4 out of range");
}

TEST(VerifierTest, RejectsMissingRodataSegment) {
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                   w.Op(Opcode::kConstRefRodata);
                   w.Reg(0);
                   w.U32(0);
                   Return0(w);
                 })),
                 "rodata segment 0 out of range (module has 0)");
}

TEST(VerifierTest, RejectsMissingGlobal) {
  ExpectRejected(LoadCode(Encode([](BytecodeWriter& w) {
                            w.Op(Opcode::kGlobalLoadI64);
                            w.Reg(0);
                            w.U32(0);
                            Return0(w);
                          }),
                          ":", [](ModuleBuilder& b) { b.SetGlobalCount(Bank::kI32, 3); }),
                 "i64 global 0 out of range (module has 0)");
}

TEST(VerifierTest, RejectsBadFailurePayloads) {
  auto fail = [](uint8_t code, const std::string& message, uint8_t argc,
                 std::vector<uint8_t> args) {
    BytecodeWriter w;
    w.Op(Opcode::kFail);
    w.U8(code);
    w.U16(uint16_t(message.size()));
    w.Bytes(message.data(), message.size());
    w.U8(argc);
    w.Bytes(args.data(), args.size());
    return std::move(w.Finish()).value();
  };
  ExpectRejected(LoadCode(fail(0, "ok?", 0, {})), "failure status code 0 is not a valid error code");
  ExpectRejected(LoadCode(fail(16, "x", 0, {})), "failure status code 16");
  ExpectRejected(LoadCode(fail(3, "a {} b", 0, {})), "1 '{}' placeholders but 0 arguments");
  ExpectRejected(LoadCode(fail(3, "a", 1, {0, 0, 0})), "0 '{}' placeholders but 1 arguments");
  ExpectRejected(LoadCode(fail(3, "{}", 1, {7, 0, 0})), "failure argument 0 has invalid bank 7");
  ExpectRejected(LoadCode(fail(3, "{}", 1, {1, 9, 0})), "i64 register 9 out of range");
  ExpectRejected(LoadCode(fail(3, "{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}", 17, {})),
                 "failure message has 17 arguments (limit 16)");
  // A message length past the end of the code.
  ExpectRejected(LoadCode({uint8_t(Opcode::kFail), 3, 200, 0, 'a'}),
                 "instruction is truncated");
}

}  // namespace
}  // namespace osprey::vm
