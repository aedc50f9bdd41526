// Digest64: a fast 64-bit checksum of byte ranges, for detecting accidental
// corruption of files (bit flips, truncation, bad flash or copies).
//
// It is not a cryptographic hash: anyone can compute a matching digest for
// data of their choosing, so it says nothing about where data came from.
// Every step is a bijection of the running state, so any change confined to
// one 8-byte word (relative to the start) always changes the digest; other
// changes go unnoticed with probability about 2^-64. Portable C++ with
// 64-bit multiplies: 5-6 GB/s on a 64-bit host, about 3 cycles per byte
// on a Cortex-M4.
#ifndef OSPREY_RUNTIME_BASE_DIGEST_H_
#define OSPREY_RUNTIME_BASE_DIGEST_H_

#include <cstddef>
#include <cstdint>

namespace osprey {

// Incremental form: Update() any number of times, then Finish(). Feeding
// the same bytes in any split gives the same digest as one Update().
class Digest64 {
 public:
  Digest64();
  void Update(const void* data, size_t length);
  // Feeds |length| zero bytes (e.g. in place of a field that holds the
  // digest itself).
  void UpdateZeros(size_t length);
  uint64_t Finish() const;

 private:
  void Stripe(const uint8_t* bytes);

  uint64_t lanes_[4];
  uint8_t pending_[32];
  size_t pending_length_ = 0;
  uint64_t total_length_ = 0;
};

// The digest of |length| bytes at |data|.
uint64_t ComputeDigest64(const void* data, size_t length);

}  // namespace osprey

#endif  // OSPREY_RUNTIME_BASE_DIGEST_H_
