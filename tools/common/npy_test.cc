// Tests of .npy parsing and writing, including malformed files.
#include "tools/common/npy.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace osprey::tools {
namespace {

using ::testing::HasSubstr;

// Builds a .npy file with |header| (padded like NumPy does) and |data|.
std::vector<uint8_t> MakeNpy(std::string header, const std::vector<uint8_t>& data,
                             int major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  size_t unpadded = preamble + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  bytes.push_back(uint8_t(header.size()));
  bytes.push_back(uint8_t(header.size() >> 8));
  if (major != 1) {
    bytes.push_back(0);
    bytes.push_back(0);
  }
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

template <typename T>
std::vector<uint8_t> Bytes(std::initializer_list<T> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.begin(), bytes.size());
  return bytes;
}

// np.save(f, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16)) from NumPy 1.24.
std::vector<uint8_t> NumpyInt16File() {
  std::string header =
      "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }" + std::string(58, ' ') + "\n";
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76, 0x00};
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (uint8_t v : {1, 2, 3, 4, 5, 6}) {
    bytes.push_back(v);
    bytes.push_back(0);
  }
  return bytes;
}

TEST(NpyTest, ParsesNumpyOutput) {
  auto tensor = ParseNpy(NumpyInt16File());
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(tensor->element_type, hal::ElementType::kInt16);
  EXPECT_EQ(tensor->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor->data, (Bytes<int16_t>({1, 2, 3, 4, 5, 6})));
}

TEST(NpyTest, SerializesLikeNumpy) {
  HostTensor tensor{hal::ElementType::kInt16, {2, 3}, Bytes<int16_t>({1, 2, 3, 4, 5, 6})};
  auto bytes = SerializeNpy(tensor);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, NumpyInt16File());
}

TEST(NpyTest, RoundTripsEveryType) {
  struct Case {
    const char* spec;
  } cases[] = {{"2x2xf32=1.5,-2,3,4"}, {"3xf16=1,0.5,-65504"}, {"2xi8=-128,127"},
               {"2xu8=0,255"},         {"2xi32=-5,7"},          {"2xi64=-1,1"},
               {"3xi1=1,0,1"},         {"f64=3.25"},            {"0x3xf32"},
               {"1xu16=65535"}};
  for (const Case& c : cases) {
    auto tensor = ParseTensorSpec(c.spec);
    ASSERT_TRUE(tensor.ok()) << c.spec;
    auto bytes = SerializeNpy(*tensor);
    ASSERT_TRUE(bytes.ok()) << c.spec;
    EXPECT_EQ(bytes->size() % 64, tensor->data.size() % 64) << "data not 64-byte aligned";
    auto parsed = ParseNpy(*bytes);
    ASSERT_TRUE(parsed.ok()) << c.spec << ": " << parsed.status().message();
    EXPECT_EQ(parsed->element_type, tensor->element_type) << c.spec;
    EXPECT_EQ(parsed->shape, tensor->shape) << c.spec;
    EXPECT_EQ(parsed->data, tensor->data) << c.spec;
  }
}

TEST(NpyTest, ReadsVersion2And3Headers) {
  for (int major : {2, 3}) {
    auto bytes = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                         Bytes<float>({1.f, 2.f}), major);
    auto tensor = ParseNpy(bytes);
    ASSERT_TRUE(tensor.ok()) << tensor.status().message();
    EXPECT_EQ(tensor->shape, std::vector<int64_t>{2});
  }
}

TEST(NpyTest, TransposesFortranOrder) {
  // Column-major storage of [[0, 1, 2], [3, 4, 5]].
  auto bytes = MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                       Bytes<float>({0, 3, 1, 4, 2, 5}));
  auto tensor = ParseNpy(bytes);
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(tensor->data, (Bytes<float>({0, 1, 2, 3, 4, 5})));

  // 3-D: shape (2, 2, 2); F-order element (i,j,k) at i + 2j + 4k.
  std::vector<float> column_major(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) column_major[i + 2 * j + 4 * k] = float(i * 4 + j * 2 + k);
  std::vector<uint8_t> data(32);
  std::memcpy(data.data(), column_major.data(), 32);
  auto cube = ParseNpy(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }",
                               data));
  ASSERT_TRUE(cube.ok());
  EXPECT_EQ(cube->data, (Bytes<float>({0, 1, 2, 3, 4, 5, 6, 7})));
}

TEST(NpyTest, SwapsBigEndian) {
  auto bytes = MakeNpy("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }",
                       {0x01, 0x02, 0x03, 0x04});
  auto tensor = ParseNpy(bytes);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->data, (Bytes<int32_t>({0x01020304})));
}

TEST(NpyTest, RejectsMalformedFiles) {
  const std::vector<uint8_t> f32x2 = Bytes<float>({1.f, 2.f});
  struct Case {
    std::vector<uint8_t> bytes;
    StatusCode code;
    const char* message;
  } cases[] = {
      {{}, StatusCode::kInvalidArgument, "missing the \\x93NUMPY magic"},
      {{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}, StatusCode::kInvalidArgument, "magic"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 9, 0, 0, 0}, StatusCode::kInvalidArgument,
       "unsupported .npy format version 9.0"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x40, 0, '{'}, StatusCode::kDataLoss,
       "header needs 74 bytes"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f32x2),
       StatusCode::kDataLoss, "shape 3xf32 needs 12 bytes, file has 8"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32x2),
       StatusCode::kInvalidArgument, "4 bytes after"},
      {MakeNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", f32x2),
       StatusCode::kInvalidArgument, "unsupported .npy dtype '<c8'"},
      {MakeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", f32x2),
       StatusCode::kInvalidArgument, "structured dtypes are not supported"},
      {MakeNpy("{'descr': '<f4', 'shape': (2,), }", f32x2), StatusCode::kInvalidArgument,
       "no 'fortran_order'"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, }", f32x2),
       StatusCode::kInvalidArgument, "no 'shape'"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", f32x2),
       StatusCode::kInvalidArgument, "must be True or False"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f32x2),
       StatusCode::kInvalidArgument, "non-negative integers"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f32x2),
       StatusCode::kInvalidArgument, "unexpected key 'x'"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", f32x2),
       StatusCode::kInvalidArgument, "expected ',' or '}'"},
      {MakeNpy("{'descr: '<f4'}", f32x2), StatusCode::kInvalidArgument, "expected ':'"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }",
               f32x2),
       StatusCode::kInvalidArgument, "too large"},
      {MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536), }",
               f32x2),
       StatusCode::kInvalidArgument, "too many elements"},
      {MakeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", {1, 7}),
       StatusCode::kInvalidArgument, "bool element 1 has value 7"},
  };
  for (const Case& c : cases) {
    auto tensor = ParseNpy(c.bytes);
    ASSERT_FALSE(tensor.ok()) << c.message;
    EXPECT_EQ(tensor.status().code(), c.code) << tensor.status().message();
    EXPECT_THAT(tensor.status().message(), HasSubstr(c.message));
  }
}

TEST(NpyTest, EveryTruncationFailsCleanly) {
  auto bytes = SerializeNpy(*ParseTensorSpec("2x3xf32=1,2,3,4,5,6"));
  ASSERT_TRUE(bytes.ok());
  for (size_t length = 0; length < bytes->size(); ++length) {
    auto tensor = ParseNpy(std::span<const uint8_t>(bytes->data(), length));
    EXPECT_FALSE(tensor.ok()) << length;
  }
}

TEST(NpyTest, FilesAndInputArguments) {
  const std::string path = ::testing::TempDir() + "/npy_test_input.npy";
  auto tensor = ParseTensorSpec("2xf32=3,4");
  ASSERT_TRUE(tensor.ok());
  ASSERT_TRUE(WriteNpyFile(path, *tensor).ok());
  auto read = ParseInputArgument("@" + path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->data, tensor->data);
  auto inline_value = ParseInputArgument("2xf32=3,4");
  ASSERT_TRUE(inline_value.ok());
  EXPECT_EQ(inline_value->data, tensor->data);
  std::remove(path.c_str());

  auto missing = ParseInputArgument("@/nonexistent/dir/x.npy");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/dir/x.npy"));

  HostTensor bf16{hal::ElementType::kBFloat16, {1}, {0, 0}};
  EXPECT_EQ(SerializeNpy(bf16).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace osprey::tools
