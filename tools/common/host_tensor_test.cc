// Tests of tensor specs, half conversion, printing and comparison.
#include "tools/common/host_tensor.h"

#include <cmath>
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace osprey::tools {
namespace {

using ::testing::HasSubstr;

template <typename T>
std::vector<T> Values(const HostTensor& tensor) {
  std::vector<T> values(tensor.data.size() / sizeof(T));
  std::memcpy(values.data(), tensor.data.data(), tensor.data.size());
  return values;
}

TEST(HostTensorTest, ParsesInlineF32) {
  auto tensor = ParseTensorSpec("2x3xf32=1,2,3,4,5,6.5");
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(tensor->element_type, hal::ElementType::kFloat32);
  EXPECT_EQ(tensor->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(*tensor), (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
  EXPECT_EQ(tensor->FormatShape(), "2x3xf32");
}

TEST(HostTensorTest, ParsesScalarSplatAndZeros) {
  auto scalar = ParseTensorSpec("i32=-7");
  ASSERT_TRUE(scalar.ok());
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(Values<int32_t>(*scalar), std::vector<int32_t>{-7});

  auto splat = ParseTensorSpec("4xi8=3");
  ASSERT_TRUE(splat.ok());
  EXPECT_EQ(Values<int8_t>(*splat), (std::vector<int8_t>{3, 3, 3, 3}));

  auto zeros = ParseTensorSpec("2x2xu8");
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(zeros->data, (std::vector<uint8_t>{0, 0, 0, 0}));

  auto bools = ParseTensorSpec("3xi1=1,false,true");
  ASSERT_TRUE(bools.ok());
  EXPECT_EQ(bools->data, (std::vector<uint8_t>{1, 0, 1}));

  auto i64 = ParseTensorSpec("2xi64=-9223372036854775808,9223372036854775807");
  ASSERT_TRUE(i64.ok());
  EXPECT_EQ(Values<int64_t>(*i64)[1], INT64_MAX);
  EXPECT_EQ(Values<int64_t>(*i64)[0], INT64_MIN);
}

TEST(HostTensorTest, RejectsMalformedSpecs) {
  struct Case {
    const char* spec;
    const char* message;
  } cases[] = {
      {"2x3xf32=1,2,3", "has 3 values but shape 2x3xf32 needs 6"},
      {"2x3xq7=1", "unknown element type 'q7'"},
      {"2xyxf32=1,2", "bad dimension 'y'"},
      {"-2xf32=1", "bad dimension '-2'"},
      {"2xi8=1,300", "out of range for i8"},
      {"2xu8=1,-1", "negative"},
      {"2xf32=1,abc", "'abc' at element 1 is not a number"},
      {"2xi32=1,2.5", "not an integer"},
      {"2xi1=1,2", "not a bool"},
      {"=1,2", "no shape/type"},
      {"2xf32=1,", "empty value"},
      {"1x1x1x1x1x1x1x1x1xf32=1", "rank 9"},
  };
  for (const Case& c : cases) {
    auto tensor = ParseTensorSpec(c.spec);
    ASSERT_FALSE(tensor.ok()) << c.spec;
    EXPECT_EQ(tensor.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_THAT(tensor.status().message(), HasSubstr(c.message)) << c.spec;
  }
}

TEST(HostTensorTest, HalfConversionRoundTripsAndRounds) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);               // Overflow to infinity.
  EXPECT_EQ(FloatToHalf(5.9604645e-8f), 0x0001);       // Smallest subnormal.
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3C00);  // Tie rounds to even.
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3C02);  // Tie rounds to even (up).
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  for (uint32_t bits = 0; bits < 0x7C00; ++bits) {
    ASSERT_EQ(FloatToHalf(HalfToFloat(uint16_t(bits))), bits) << bits;
    ASSERT_EQ(FloatToHalf(HalfToFloat(uint16_t(bits | 0x8000))), bits | 0x8000) << bits;
  }
  EXPECT_FLOAT_EQ(HalfToFloat(0x0001), 5.9604645e-8f);
  EXPECT_FLOAT_EQ(BFloat16ToFloat(FloatToBFloat16(1.5f)), 1.5f);
}

TEST(HostTensorTest, FormatsNestedBrackets) {
  auto tensor = ParseTensorSpec("2x3xi32=1,2,3,4,5,6");
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(FormatTensor(*tensor), "2x3xi32=[[1 2 3][4 5 6]]");
  EXPECT_EQ(FormatTensor(*tensor, 4), "2x3xi32=[[1 2 3][4...");
  auto scalar = ParseTensorSpec("f32=2.5");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(FormatTensor(*scalar), "f32=2.5");
}

TEST(HostTensorTest, ComparesWithTolerance) {
  auto expected = ParseTensorSpec("3xf32=1,2,100");
  auto close = ParseTensorSpec("3xf32=1.000005,2,100.0005");
  auto far = ParseTensorSpec("3xf32=1,2.5,100");
  ASSERT_TRUE(expected.ok() && close.ok() && far.ok());
  EXPECT_TRUE(CompareTensors(*expected, *close, 1e-5).ok());
  Status mismatch = CompareTensors(*expected, *far, 1e-5);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.message(), HasSubstr("1 of 3 elements"));
  EXPECT_THAT(mismatch.message(), HasSubstr("element 1: expected 2, got 2.5"));

  auto ints = ParseTensorSpec("2xi8=1,2");
  auto ints_off = ParseTensorSpec("2xi8=1,3");
  ASSERT_TRUE(ints.ok() && ints_off.ok());
  EXPECT_FALSE(CompareTensors(*ints, *ints_off, 0.5).ok());
  EXPECT_TRUE(CompareTensors(*ints, *ints_off, 1).ok());

  auto other_shape = ParseTensorSpec("1x3xf32=1,2,100");
  ASSERT_TRUE(other_shape.ok());
  Status shape_mismatch = CompareTensors(*expected, *other_shape, 1.0);
  EXPECT_THAT(shape_mismatch.message(), HasSubstr("expected 3xf32, got 1x3xf32"));

  auto big = ParseTensorSpec("1xi64=9007199254740993");
  auto big_off = ParseTensorSpec("1xi64=9007199254740992");
  ASSERT_TRUE(big.ok() && big_off.ok());
  EXPECT_FALSE(CompareTensors(*big, *big_off, 0).ok());
}

}  // namespace
}  // namespace osprey::tools
