// Making untrusted text safe to print: names read from files (modules,
// executables, .npy headers) may hold control characters, terminal escape
// sequences or invalid UTF-8, and must not reach a terminal or log raw.
#ifndef OSPREY_RUNTIME_BASE_PRINTABLE_H_
#define OSPREY_RUNTIME_BASE_PRINTABLE_H_

#include <cstddef>

namespace osprey {

// Copies the |length| bytes at |text| to |out| with every byte that would
// not print as itself written as "\xNN": control characters other than
// newline and tab, DEL, C1 controls (U+0080..U+009F) and bytes that are not
// part of a well-formed UTF-8 sequence. Well-formed UTF-8 is kept. Writes at
// most |capacity| bytes (no terminator; |out| may be null with capacity 0)
// and returns the length of the whole result, so a first call with capacity
// 0 measures it. The result equals |length| exactly when nothing needed
// escaping.
size_t EscapeUnprintable(const char* text, size_t length, char* out, size_t capacity);

}  // namespace osprey

#endif  // OSPREY_RUNTIME_BASE_PRINTABLE_H_
