// Function signatures: the calling-convention string "args:results" with one
// character per value (i=i32, I=i64, f=f32, F=f64, r=ref), e.g. "rI:i".
#ifndef OSPREY_VM_SIGNATURE_H_
#define OSPREY_VM_SIGNATURE_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/status.h"
#include "vm/opcodes.h"

namespace osprey::vm {

// Borrowed views into the signature text.
struct Signature {
  const char* args = "";
  const char* results = "";
  uint8_t arg_count = 0;
  uint8_t result_count = 0;
  // Values per bank among the arguments (they occupy registers 0..n-1).
  uint8_t arg_bank_counts[kBankCount] = {};
  uint8_t result_bank_counts[kBankCount] = {};
};

// Parses |length| bytes of |text| (no terminator needed). INVALID_ARGUMENT if
// the text is not exactly "<types>:<types>" with valid type characters and
// at most kMaxSignatureValues per side.
Status ParseSignature(const char* text, size_t length, Signature* out_signature);

}  // namespace osprey::vm

#endif  // OSPREY_VM_SIGNATURE_H_
