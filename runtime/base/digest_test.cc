// Tests of Digest64: split invariance, sensitivity to every single-bit and
// single-word change, and zero-filled ranges.
#include "runtime/base/digest.h"

#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace osprey {
namespace {

std::vector<uint8_t> Pattern(size_t length) {
  std::vector<uint8_t> bytes(length);
  uint32_t x = 12345;
  for (auto& b : bytes) {
    x = x * 1103515245u + 12345u;
    b = uint8_t(x >> 16);
  }
  return bytes;
}

TEST(DigestTest, DoesNotDependOnHowTheInputIsSplit) {
  const std::vector<uint8_t> data = Pattern(1000);
  const uint64_t whole = ComputeDigest64(data.data(), data.size());
  for (size_t first : {0, 1, 7, 31, 32, 33, 500, 999, 1000}) {
    for (size_t second : {0, 3, 64}) {
      if (first + second > data.size()) continue;
      Digest64 digest;
      digest.Update(data.data(), first);
      digest.Update(data.data() + first, second);
      digest.Update(data.data() + first + second, data.size() - first - second);
      EXPECT_EQ(digest.Finish(), whole) << first << "+" << second;
    }
  }
}

TEST(DigestTest, EveryLengthGivesADifferentDigest) {
  const std::vector<uint8_t> data = Pattern(200);
  std::set<uint64_t> seen;
  for (size_t n = 0; n <= data.size(); ++n) seen.insert(ComputeDigest64(data.data(), n));
  EXPECT_EQ(seen.size(), data.size() + 1);
  // Zeros of different lengths differ too.
  std::vector<uint8_t> zeros(64, 0);
  EXPECT_NE(ComputeDigest64(zeros.data(), 8), ComputeDigest64(zeros.data(), 16));
}

TEST(DigestTest, EverySingleBitFlipChangesTheDigest) {
  for (size_t length : {1, 5, 8, 31, 32, 100, 257}) {
    std::vector<uint8_t> data = Pattern(length);
    const uint64_t good = ComputeDigest64(data.data(), data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        data[i] ^= uint8_t(1 << bit);
        EXPECT_NE(ComputeDigest64(data.data(), data.size()), good) << length << ":" << i;
        data[i] ^= uint8_t(1 << bit);
      }
    }
  }
}

TEST(DigestTest, ChangesWithinOneWordAreAlwaysDetected) {
  std::vector<uint8_t> data = Pattern(96);
  const uint64_t good = ComputeDigest64(data.data(), data.size());
  uint32_t x = 99;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> copy = data;
    x = x * 1664525u + 1013904223u;
    const size_t word = (x >> 8) % 12;
    for (int k = 0; k < 8; ++k) {
      x = x * 1664525u + 1013904223u;
      copy[word * 8 + k] ^= uint8_t(x >> 24);
    }
    if (copy == data) continue;
    EXPECT_NE(ComputeDigest64(copy.data(), copy.size()), good) << trial;
  }
}

TEST(DigestTest, UpdateZerosEqualsZeroBytes) {
  std::vector<uint8_t> data = Pattern(300);
  for (size_t i = 100; i < 208; ++i) data[i] = 0;
  Digest64 digest;
  digest.Update(data.data(), 100);
  digest.UpdateZeros(108);
  digest.Update(data.data() + 208, 92);
  EXPECT_EQ(digest.Finish(), ComputeDigest64(data.data(), data.size()));
}

}  // namespace
}  // namespace osprey
