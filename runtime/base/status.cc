// Status: message payloads, annotation and formatting.
#include "runtime/base/status.h"

#include <stdio.h>
#include <stdlib.h>

#include <cstring>

#include "runtime/base/printable.h"

namespace osprey {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

// Heap payload of an error with a message. Allocated with malloc: errors are
// rare and must not depend on an allocator that may itself be failing.
struct Status::Payload {
  StatusCode code;
  size_t length;  // Of text, excluding the terminator.
  char text[1];
};

#if OSPREY_STATUS_MESSAGES
Status::Status(StatusCode code, const char* format, ...) : Status(code) {
  if (rep_ == 0 || !format || !*format) return;
  va_list args;
  va_start(args, format);
  AppendV("", format, args);
  va_end(args);
}

void Status::Reset() {
  if (rep_ != 0 && (rep_ & 1) == 0) free(reinterpret_cast<Payload*>(rep_));
  rep_ = 0;
}

StatusCode Status::code() const {
  if (rep_ == 0) return StatusCode::kOk;
  if (rep_ & 1) return StatusCode(rep_ >> 1);
  return reinterpret_cast<const Payload*>(rep_)->code;
}

const char* Status::message() const {
  if (rep_ == 0 || (rep_ & 1)) return "";
  return reinterpret_cast<const Payload*>(rep_)->text;
}

void Status::AppendV(const char* separator, const char* format, va_list args) {
  va_list measure;
  va_copy(measure, args);
  int added = vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  if (added < 0) return;
  const Payload* old = (rep_ & 1) ? nullptr : reinterpret_cast<Payload*>(rep_);
  size_t old_length = old ? old->length : 0;
  size_t separator_length = old_length ? strlen(separator) : 0;
  size_t new_length = old_length + separator_length + size_t(added);
  auto* payload = static_cast<Payload*>(malloc(sizeof(Payload) + new_length));
  if (!payload) return;  // Keep what we have; the code survives.
  payload->code = code();
  payload->length = new_length;
  if (old_length) {
    memcpy(payload->text, old->text, old_length);
    memcpy(payload->text + old_length, separator, separator_length);
  }
  char* segment = payload->text + old_length + separator_length;
  vsnprintf(segment, size_t(added) + 1, format, args);
  // Messages quote names read from files: print anything unprintable in
  // them as \xNN escapes (the old text was escaped when it was added).
  const size_t escaped_length = EscapeUnprintable(segment, size_t(added), nullptr, 0);
  if (escaped_length != size_t(added)) {
    const size_t prefix = old_length + separator_length;
    auto* escaped = static_cast<Payload*>(malloc(sizeof(Payload) + prefix + escaped_length));
    if (escaped) {
      escaped->code = payload->code;
      escaped->length = prefix + escaped_length;
      memcpy(escaped->text, payload->text, prefix);
      EscapeUnprintable(segment, size_t(added), escaped->text + prefix, escaped_length);
      escaped->text[prefix + escaped_length] = '\0';
      free(payload);
      payload = escaped;
    } else {
      // No memory for the longer text: blank every byte that is not plain
      // printable ASCII instead.
      for (size_t i = 0; i < size_t(added); ++i) {
        const uint8_t c = uint8_t(segment[i]);
        if ((c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f) segment[i] = '?';
      }
    }
  }
  Reset();
  rep_ = reinterpret_cast<uintptr_t>(payload);
}

Status& Status::Annotate(const char* format, ...) & {
  if (rep_ == 0) return *this;
  va_list args;
  va_start(args, format);
  AppendV(";\n  ", format, args);
  va_end(args);
  return *this;
}

Status&& Status::Annotate(const char* format, ...) && {
  if (rep_ != 0) {
    va_list args;
    va_start(args, format);
    AppendV(";\n  ", format, args);
    va_end(args);
  }
  return std::move(*this);
}
#endif  // OSPREY_STATUS_MESSAGES

#if OSPREY_STATUS_MESSAGES
Status Status::Clone() const {
  if (rep_ == 0 || (rep_ & 1)) {
    Status copy;
    copy.rep_ = rep_;
    return copy;
  }
  return Status(code(), "%s", message());
}
#endif

size_t Status::ToString(char* buffer, size_t capacity) const {
  const char* name = StatusCodeName(code());
  const char* text = message();
  int n = *text ? snprintf(buffer, capacity, "%s: %s", name, text)
                : snprintf(buffer, capacity, "%s", name);
  return n < 0 ? 0 : size_t(n);
}

namespace internal {
void CheckFailed(const char* file, int line, const char* expr) {
  fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
  __builtin_trap();
}
}  // namespace internal

}  // namespace osprey
