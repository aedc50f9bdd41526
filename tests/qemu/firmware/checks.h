// A tiny expectation harness for the firmware: no allocation, prints each
// failure through stdio (semihosting on the boards) and counts them.
#ifndef OSPREY_TESTS_QEMU_FIRMWARE_CHECKS_H_
#define OSPREY_TESTS_QEMU_FIRMWARE_CHECKS_H_

#include <stdio.h>

#include "runtime/base/status.h"

namespace osprey::tests::qemu::firmware {

// Collects the outcome of one group of checks. Not thread-safe.
class CheckGroup {
 public:
  explicit CheckGroup(const char* name) : name_(name) {}

  // Records |ok|; on failure prints |what| with its location.
  bool Expect(bool ok, const char* what, const char* file, int line) {
    ++checks_;
    if (!ok) {
      ++failures_;
      printf("  FAIL [%s] %s:%d: %s\n", name_, file, line, what);
    }
    return ok;
  }
  // Records that |status| is OK; on failure prints the status.
  bool ExpectOk(const Status& status, const char* what, const char* file, int line) {
    if (status.ok()) return Expect(true, what, file, line);
    char text[160];
    status.ToString(text, sizeof(text));
    Expect(false, what, file, line);
    printf("    status: %s\n", text);
    return false;
  }

  const char* name() const { return name_; }
  int checks() const { return checks_; }
  int failures() const { return failures_; }

 private:
  const char* name_;
  int checks_ = 0;
  int failures_ = 0;
};

}  // namespace osprey::tests::qemu::firmware

#define FW_EXPECT(group, cond) (group).Expect((cond), #cond, __FILE__, __LINE__)
#define FW_EXPECT_OK(group, expr) (group).ExpectOk((expr), #expr, __FILE__, __LINE__)
#define FW_EXPECT_CODE(group, expr, expected)                              \
  (group).Expect((expr).code() == (expected), #expr " has code " #expected, \
                 __FILE__, __LINE__)

#endif  // OSPREY_TESTS_QEMU_FIRMWARE_CHECKS_H_
