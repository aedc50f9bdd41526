// Signature parsing.
#include "vm/signature.h"

namespace osprey::vm {

Status ParseSignature(const char* text, size_t length, Signature* out_signature) {
  Signature sig;
  size_t colon = length;
  for (size_t i = 0; i < length; ++i) {
    if (text[i] == ':') {
      if (colon != length) {
        return InvalidArgumentError("signature '%.*s' has more than one ':'", int(length), text);
      }
      colon = i;
    }
  }
  if (colon == length) {
    return InvalidArgumentError("signature '%.*s' has no ':' between arguments and results",
                                int(length), text);
  }
  if (colon > kMaxSignatureValues || length - colon - 1 > kMaxSignatureValues) {
    return InvalidArgumentError("signature '%.*s' has more than %zu values on one side",
                                int(length), text, kMaxSignatureValues);
  }
  for (size_t i = 0; i < length; ++i) {
    if (i == colon) continue;
    Bank bank;
    if (!BankFromChar(text[i], &bank)) {
      return InvalidArgumentError(
          "signature '%.*s' has invalid type character 0x%02x at %zu (expected one of iIfFr)",
          int(length), text, unsigned(uint8_t(text[i])), i);
    }
    if (i < colon) {
      ++sig.arg_bank_counts[int(bank)];
    } else {
      ++sig.result_bank_counts[int(bank)];
    }
  }
  sig.args = text;
  sig.arg_count = uint8_t(colon);
  sig.results = text + colon + 1;
  sig.result_count = uint8_t(length - colon - 1);
  *out_signature = sig;
  return OkStatus();
}

}  // namespace osprey::vm
