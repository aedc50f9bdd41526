// Tests of whole-file reads and writes on paths that are not regular files.
#include "tools/common/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/common/npy.h"

namespace osprey::tools {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const char* name) { return ::testing::TempDir() + "/" + name; }

TEST(FileIoTest, RoundTripsARegularFile) {
  const std::string path = TempPath("file_io_round_trip.bin");
  const uint8_t data[] = {0, 1, 2, 255, 10, 13};
  ASSERT_TRUE(WriteFileBytes(path, data).ok());
  auto bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, std::vector<uint8_t>(std::begin(data), std::end(data)));
  std::remove(path.c_str());
}

TEST(FileIoTest, RejectsDirectoriesAndDevices) {
  const std::string dir = ::testing::TempDir();
  auto bytes = ReadFileBytes(dir);
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("is a directory, not a file"));
  // /dev/zero would never end.
  bytes = ReadFileBytes("/dev/zero");
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("'/dev/zero' is a character device"));
  Status written = WriteFileBytes(dir, std::span<const uint8_t>());
  EXPECT_EQ(written.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(written.message(), HasSubstr("it is a directory"));
}

TEST(FileIoTest, NamesMissingAndUnwritablePaths) {
  auto bytes = ReadFileBytes("/nonexistent/input.npy");
  EXPECT_EQ(bytes.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(bytes.status().message(),
              HasSubstr("cannot open '/nonexistent/input.npy': No such file or directory"));
  Status written = WriteFileBytes("/nonexistent/out.npy", std::span<const uint8_t>());
  EXPECT_EQ(written.code(), StatusCode::kNotFound);
  EXPECT_THAT(written.message(), HasSubstr("cannot create '/nonexistent/out.npy'"));
}

TEST(FileIoTest, ReadsPipes) {
  const std::string path = TempPath("file_io_fifo");
  std::remove(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] {
    FILE* fifo = std::fopen(path.c_str(), "wb");
    if (!fifo) return;
    std::fputs("streamed", fifo);
    std::fclose(fifo);
  });
  auto bytes = ReadFileBytes(path);
  writer.join();
  std::remove(path.c_str());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(std::string(bytes->begin(), bytes->end()), "streamed");
}

// The .npy reader goes through ReadFileBytes: a directory is an error with
// the path, not an exception.
TEST(FileIoTest, NpyReaderRejectsADirectory) {
  auto tensor = ParseInputArgument("@" + ::testing::TempDir());
  EXPECT_EQ(tensor.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tensor.status().message(), HasSubstr("is a directory"));
}

}  // namespace
}  // namespace osprey::tools
