#include "runtime/base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace osprey {
namespace {

std::string Str(const Status& s) {
  char buffer[512];
  s.ToString(buffer, sizeof(buffer));
  return buffer;
}

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_STREQ(s.message(), "");
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = OutOfRangeError("offset %d past %d", 10, 4);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_STREQ(s.message(), "offset 10 past 4");
  EXPECT_EQ(Str(s), "OUT_OF_RANGE: offset 10 past 4");
}

TEST(StatusTest, AnnotationsAppendContext) {
  Status s = InvalidArgumentError("bad shape");
  s.Annotate("loading '%s'", "m.osp");
  EXPECT_EQ(Str(s), "INVALID_ARGUMENT: bad shape;\n  loading 'm.osp'");
  Status ok;
  ok.Annotate("ignored");
  EXPECT_TRUE(ok.ok());
}

TEST(StatusTest, CodeOnlyErrorGainsMessageFromAnnotation) {
  Status s(StatusCode::kDataLoss);
  EXPECT_EQ(Str(s), "DATA_LOSS");
  s.Annotate("reading header");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(Str(s), "DATA_LOSS: reading header");
}

TEST(StatusTest, MoveAndClone) {
  Status a = AbortedError("x");
  Status b = a.Clone();
  Status c = std::move(a);
  EXPECT_TRUE(a.ok());  // NOLINT: moved-from is OK by contract.
  EXPECT_EQ(c.code(), StatusCode::kAborted);
  EXPECT_STREQ(b.message(), "x");
}

Status Inner() { return PermissionDeniedError("not mappable"); }
Status Outer() {
  OSPREY_RETURN_IF_ERROR(Inner(), "mapping buffer %d", 3);
  return OkStatus();
}
StatusOr<int> Value(bool ok) {
  if (!ok) return NotFoundError("no value");
  return 42;
}
Status UseValue(bool ok, int* out) {
  OSPREY_ASSIGN_OR_RETURN(*out, Value(ok), "using value");
  return OkStatus();
}

TEST(StatusTest, MacrosPropagateWithContext) {
  Status s = Outer();
  EXPECT_EQ(Str(s), "PERMISSION_DENIED: not mappable;\n  mapping buffer 3");
  int v = 0;
  EXPECT_TRUE(UseValue(true, &v).ok());
  EXPECT_EQ(v, 42);
  Status e = UseValue(false, &v);
  EXPECT_EQ(Str(e), "NOT_FOUND: no value;\n  using value");
}

TEST(StatusOrTest, HoldsMoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> v = std::make_unique<int>(7);
  ASSERT_TRUE(v.ok());
  std::unique_ptr<int> p = std::move(v).value();
  EXPECT_EQ(*p, 7);
}

TEST(StatusOrTest, OkStatusBecomesInternal) {
  StatusOr<int> v = OkStatus();
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace osprey
