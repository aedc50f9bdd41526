// Digest64: four 64-bit lanes over 32-byte stripes, then a tail and a final
// mix. Constants are odd (so multiplying by them is invertible) and taken
// from the hexadecimal digits of pi.
#include "runtime/base/digest.h"

#include <bit>
#include <cstring>

namespace osprey {

namespace {

constexpr uint64_t kMul1 = 0x243f6a8885a308d3ull;
constexpr uint64_t kMul2 = 0x13198a2e03707345ull;
constexpr uint64_t kMul3 = 0xa4093822299f31d1ull;
constexpr uint64_t kSeeds[4] = {0x082efa98ec4e6c89ull, 0x452821e638d01377ull,
                                0xbe5466cf34e90c6cull, 0xc0ac29b7c97c50ddull};

inline uint64_t RotateLeft(uint64_t v, int bits) { return (v << bits) | (v >> (64 - bits)); }

// Little-endian 64-bit load, whatever the host's byte order.
inline uint64_t Load64(const uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
  } else {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }
}

// One word into one lane: bijective in the word for a fixed lane value and
// in the lane value for a fixed word.
inline uint64_t Round(uint64_t lane, uint64_t word) {
  return RotateLeft(lane ^ (word * kMul1), 29) * kMul2;
}

// Bijective final mix.
inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 32;
  h *= kMul3;
  h ^= h >> 29;
  h *= kMul1;
  h ^= h >> 32;
  return h;
}

}  // namespace

Digest64::Digest64() { memcpy(lanes_, kSeeds, sizeof(lanes_)); }

void Digest64::Stripe(const uint8_t* bytes) {
  lanes_[0] = Round(lanes_[0], Load64(bytes));
  lanes_[1] = Round(lanes_[1], Load64(bytes + 8));
  lanes_[2] = Round(lanes_[2], Load64(bytes + 16));
  lanes_[3] = Round(lanes_[3], Load64(bytes + 24));
}

void Digest64::Update(const void* data, size_t length) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_length_ += length;
  if (pending_length_ > 0) {
    const size_t take = length < 32 - pending_length_ ? length : 32 - pending_length_;
    memcpy(pending_ + pending_length_, p, take);
    pending_length_ += take;
    p += take;
    length -= take;
    if (pending_length_ < 32) return;
    Stripe(pending_);
    pending_length_ = 0;
  }
  for (; length >= 32; p += 32, length -= 32) Stripe(p);
  memcpy(pending_, p, length);
  pending_length_ = length;
}

void Digest64::UpdateZeros(size_t length) {
  static const uint8_t kZeros[64] = {};
  while (length > 0) {
    const size_t n = length < sizeof(kZeros) ? length : sizeof(kZeros);
    Update(kZeros, n);
    length -= n;
  }
}

uint64_t Digest64::Finish() const {
  uint64_t h = total_length_ * kMul2;
  for (uint64_t lane : lanes_) h = (h ^ Avalanche(lane)) * kMul3 + kMul1;
  // The tail: whole words, then the last bytes (zero-padded).
  size_t i = 0;
  for (; i + 8 <= pending_length_; i += 8) h = Round(h, Load64(pending_ + i));
  if (i < pending_length_) {
    uint8_t last[8] = {};
    memcpy(last, pending_ + i, pending_length_ - i);
    h = Round(h, Load64(last));
  }
  return Avalanche(h);
}

uint64_t ComputeDigest64(const void* data, size_t length) {
  Digest64 digest;
  digest.Update(data, length);
  return digest.Finish();
}

}  // namespace osprey
