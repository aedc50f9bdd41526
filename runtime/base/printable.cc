// EscapeUnprintable: a UTF-8 validator that escapes what it rejects.
#include "runtime/base/printable.h"

#include <cstdint>
#include <cstring>

namespace osprey {

namespace {

// Length of the well-formed UTF-8 sequence at |p| (at most |available|
// bytes), or 0 if there is none (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF).
size_t Utf8SequenceLength(const uint8_t* p, size_t available) {
  const uint8_t c = p[0];
  size_t length;
  uint8_t low = 0x80, high = 0xbf;  // Range of the second byte.
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3;
    if (c == 0xe0) low = 0xa0;
    if (c == 0xed) high = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4;
    if (c == 0xf0) low = 0x90;
    if (c == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (available < length || p[1] < low || p[1] > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  }
  // C1 controls (U+0080..U+009F) act like control characters on terminals.
  if (c == 0xc2 && p[1] < 0xa0) return 0;
  return length;
}

}  // namespace

size_t EscapeUnprintable(const char* text, size_t length, char* out, size_t capacity) {
  static const char kHex[] = "0123456789abcdef";
  const uint8_t* p = reinterpret_cast<const uint8_t*>(text);
  size_t written = 0;
  auto put = [&](const void* bytes, size_t n) {
    if (written < capacity) {
      const size_t room = capacity - written;
      memcpy(out + written, bytes, n < room ? n : room);
    }
    written += n;
  };
  for (size_t i = 0; i < length;) {
    const uint8_t c = p[i];
    size_t keep = 0;
    if (c < 0x80) {
      keep = (c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t' ? 1 : 0;
    } else {
      keep = Utf8SequenceLength(p + i, length - i);
    }
    if (keep) {
      put(p + i, keep);
      i += keep;
    } else {
      const char escaped[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      put(escaped, 4);
      ++i;
    }
  }
  return written;
}

}  // namespace osprey
