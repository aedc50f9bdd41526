// Little-endian operand readers shared by the verifier, interpreter and
// printer. Reads are unaligned-safe (memcpy compiles to single loads).
#ifndef OSPREY_VM_BYTECODE_H_
#define OSPREY_VM_BYTECODE_H_

#include <cstdint>
#include <cstring>

namespace osprey::vm {

inline uint16_t ReadU16(const uint8_t* p) {
  uint16_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}
inline uint32_t ReadU32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t ReadU64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}
inline float ReadF32(const uint8_t* p) {
  float v;
  memcpy(&v, p, sizeof(v));
  return v;
}
inline double ReadF64(const uint8_t* p) {
  double v;
  memcpy(&v, p, sizeof(v));
  return v;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the VM bytecode readers assume a little-endian host"
#endif

}  // namespace osprey::vm

#endif  // OSPREY_VM_BYTECODE_H_
