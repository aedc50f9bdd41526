// Tests of EscapeUnprintable and of status messages quoting untrusted text.
#include "runtime/base/printable.h"

#include <string>

#include "gtest/gtest.h"
#include "runtime/base/status.h"

namespace osprey {
namespace {

std::string Escape(const std::string& text) {
  const size_t length = EscapeUnprintable(text.data(), text.size(), nullptr, 0);
  std::string out(length, '#');
  EXPECT_EQ(EscapeUnprintable(text.data(), text.size(), out.data(), out.size()), length);
  return out;
}

TEST(PrintableTest, KeepsPrintableTextAndUtf8) {
  EXPECT_EQ(Escape("conv_1.weight"), "conv_1.weight");
  EXPECT_EQ(Escape("line one\n\tline two"), "line one\n\tline two");
  EXPECT_EQ(Escape("caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b \xf0\x9f\x90\xa6"),
            "caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b \xf0\x9f\x90\xa6");
  EXPECT_EQ(Escape(""), "");
}

TEST(PrintableTest, EscapesControlsAndInvalidUtf8) {
  EXPECT_EQ(Escape("\x1b[2Jname"), "\\x1b[2Jname");
  EXPECT_EQ(Escape(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(Escape("\r\x7f"), "\\x0d\\x7f");
  EXPECT_EQ(Escape("\xff\xfe"), "\\xff\\xfe");
  // Truncated, overlong, surrogate and out-of-range sequences, C1 controls.
  EXPECT_EQ(Escape("x\xe6\xa8"), "x\\xe6\\xa8");
  EXPECT_EQ(Escape("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(Escape("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(Escape("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(Escape("\xc2\x9b"), "\\xc2\\x9b");
  EXPECT_EQ(Escape("\x80"), "\\x80");
}

TEST(PrintableTest, TruncatesToCapacity) {
  char out[6];
  EXPECT_EQ(EscapeUnprintable("ab\x01", 3, out, sizeof(out)), 6u);
  EXPECT_EQ(std::string(out, 6), "ab\\x01");
  EXPECT_EQ(EscapeUnprintable("ab\x01", 3, out, 3), 6u);
  EXPECT_EQ(std::string(out, 3), "ab\\");
}

#if OSPREY_STATUS_MESSAGES
TEST(PrintableTest, StatusMessagesEscapeWhatTheyQuote) {
  Status status = InvalidArgumentError("module name '%s' is not valid", "ev\x1b[31mil\xff");
  EXPECT_STREQ(status.message(), "module name 'ev\\x1b[31mil\\xff' is not valid");
  status.Annotate("loading '%s'", "caf\xc3\xa9\x07");
  EXPECT_STREQ(status.message(),
               "module name 'ev\\x1b[31mil\\xff' is not valid;\n  loading 'caf\xc3\xa9\\x07'");
}
#endif

}  // namespace
}  // namespace osprey
