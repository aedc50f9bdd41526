// Module digests: the builder writes them, the loader checks the whole
// file or only the executables, or nothing, as LoadOptions say.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vm/test/test_util.h"

namespace osprey::vm {
namespace {

using ::testing::HasSubstr;
using testing::LoadBytes;
using testing::StatusText;

constexpr char kModule[] = R"asm(
module @sealed version 1
rodata @weights align 16 hex "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
executable "elf-x86_64" @kernels align 64 hex "7f454c4602010100000000000000000011223344556677889900aabbccddeeff"
func @main() -> (i32) regs(i=1) export {
  const.i32 %i0, 7
  return %i0
}
)asm";

std::vector<uint8_t> Build(bool digests, size_t external_threshold = SIZE_MAX) {
  BuildOptions options;
  options.digests = digests;
  options.external_threshold = external_threshold;
  auto file = AssembleModule(kModule, options);
  EXPECT_TRUE(file.ok()) << StatusText(file.status());
  return file.ok() ? *file : std::vector<uint8_t>();
}

// Offset of |needle| in |haystack|.
size_t Find(const std::vector<uint8_t>& haystack, const std::vector<uint8_t>& needle) {
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    if (std::equal(needle.begin(), needle.end(), haystack.begin() + long(i))) return i;
  }
  ADD_FAILURE() << "pattern not found";
  return 0;
}

const std::vector<uint8_t> kCode = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
const std::vector<uint8_t> kWeights = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17};

Status Load(const std::vector<uint8_t>& file, IntegrityCheck check) {
  return LoadBytes(file, LoadOptions{check}).status();
}

TEST(IntegrityTest, EveryByteOfTheFileIsCovered) {
  for (size_t threshold : {size_t(SIZE_MAX), size_t(16)}) {  // Inline and external segments.
    std::vector<uint8_t> file = Build(true, threshold);
    ASSERT_TRUE(Load(file, IntegrityCheck::kModule).ok());
    int digest_mismatches = 0;
    for (size_t i = 0; i < file.size(); ++i) {
      file[i] ^= 0x04;
      Status status = Load(file, IntegrityCheck::kModule);
      // Flips in the FlatBuffer's structure may be caught before the digest.
      EXPECT_FALSE(status.ok()) << "flip at byte " << i << " of " << file.size() << " loaded";
      if (std::string(status.message()).find("module digest mismatch") != std::string::npos) {
        EXPECT_EQ(status.code(), StatusCode::kDataLoss);
        ++digest_mismatches;
      }
      file[i] ^= 0x04;
    }
    EXPECT_GT(digest_mismatches, int(file.size()) / 2);
  }
}

TEST(IntegrityTest, ExecutableChecksCoverTheCodeOnly) {
  std::vector<uint8_t> file = Build(true);
  std::vector<uint8_t> bad_code = file;
  bad_code[Find(file, kCode) + 3] ^= 0x40;
  Status status = Load(bad_code, IntegrityCheck::kModule);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("module digest mismatch"));
  EXPECT_THAT(status.message(), HasSubstr("the file is corrupt"));
  status = Load(bad_code, IntegrityCheck::kExecutables);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("executable 0 ('kernels') digest mismatch"));
  EXPECT_TRUE(Load(bad_code, IntegrityCheck::kNone).ok());

  // Weights are covered by the module digest only.
  std::vector<uint8_t> bad_weights = file;
  bad_weights[Find(file, kWeights) + 5] ^= 0x01;
  EXPECT_EQ(Load(bad_weights, IntegrityCheck::kModule).code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Load(bad_weights, IntegrityCheck::kExecutables).ok());
}

TEST(IntegrityTest, ModulesWithoutDigestsLoadOnlyUnchecked) {
  std::vector<uint8_t> file = Build(false);
  Status status = Load(file, IntegrityCheck::kModule);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("module has no digest"));
  status = Load(file, IntegrityCheck::kExecutables);
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("executable 0 ('kernels') has no digest"));
  EXPECT_TRUE(Load(file, IntegrityCheck::kNone).ok());
}

TEST(IntegrityTest, BuildsAreReproducible) {
  EXPECT_EQ(Build(true), Build(true));
  EXPECT_EQ(Build(true, 16), Build(true, 16));
  EXPECT_NE(Build(true), Build(false));
}

}  // namespace
}  // namespace osprey::vm
