// Status and StatusOr<T>: the runtime's error type.
//
// A Status is one word. OK is zero and costs nothing to create, move or test.
// An error holds a canonical code and, unless the build is configured for
// codes only (OSPREY_STATUS_MESSAGES=0), a heap-allocated message to which
// each layer appends one line of context on the way up:
//
//   INVALID_ARGUMENT: export 'main' declares 3 results, found 2;
//     registering module from 'model.osp'
//
// Status is move-only; Clone() makes an independent copy (used when one
// failure is reported to several waiters). Dropping an error is a bug: use
// IgnoreError() to say it on purpose.
#ifndef OSPREY_RUNTIME_BASE_STATUS_H_
#define OSPREY_RUNTIME_BASE_STATUS_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "runtime/base/config.h"

namespace osprey {

// Canonical codes, with the meanings abseil and IREE give them. Pick the code
// by what the caller can do next.
enum class StatusCode : uint8_t {
  kOk = 0,
  kCancelled = 1,           // The caller cancelled the operation.
  kUnknown = 2,             // An error with no better code.
  kInvalidArgument = 3,     // Bad call: the arguments can never work.
  kDeadlineExceeded = 4,    // A wait timed out.
  kNotFound = 5,            // A named entity (driver, export) does not exist.
  kAlreadyExists = 6,       // Registering a name twice.
  kPermissionDenied = 7,    // Access the object's flags do not allow.
  kResourceExhausted = 8,   // Out of memory, arena space or handles.
  kFailedPrecondition = 9,  // The object is in the wrong state for the call.
  kAborted = 10,            // Work was abandoned because earlier work failed.
  kOutOfRange = 11,         // An offset, length or index past the end.
  kUnimplemented = 12,      // Not written yet, or not supported by a driver.
  kInternal = 13,           // An invariant broke: a bug in Osprey.
  kUnavailable = 14,        // A driver or device cannot be used here.
  kDataLoss = 15,           // Corrupt or truncated data (files, modules).
};

// Returns "INVALID_ARGUMENT" etc.; never null.
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // OK.
  constexpr Status() = default;
  // An error with |code| and no message (OK if |code| is kOk).
  explicit constexpr Status(StatusCode code)
      : rep_(code == StatusCode::kOk ? 0 : ((uintptr_t(code) << 1) | 1)) {}
  // An error with |code| and a printf-formatted message. In codes-only
  // builds the message and its arguments are dropped at compile time, so
  // no format strings end up in the binary.
#if OSPREY_STATUS_MESSAGES
  Status(StatusCode code, const char* format, ...) OSPREY_PRINTF_FORMAT(3, 4);
#else
  template <typename... Args>
  Status(StatusCode code, const char*, Args&&...) : Status(code) {}
#endif

  Status(Status&& other) noexcept : rep_(other.rep_) { other.rep_ = 0; }
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      Reset();
      rep_ = other.rep_;
      other.rep_ = 0;
    }
    return *this;
  }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;
  ~Status() { Reset(); }

  bool ok() const { return rep_ == 0; }
#if OSPREY_STATUS_MESSAGES
  StatusCode code() const;
  // The message with its context lines; "" for OK or codes-only builds.
  // Borrowed: valid until this status is changed or destroyed.
  const char* message() const;
#else
  // Codes-only statuses are never more than a code: everything is inline
  // and destroying one is free.
  StatusCode code() const { return StatusCode(rep_ >> 1); }
  const char* message() const { return ""; }
#endif

  // Appends one line of context (printf-formatted). No effect on OK.
#if OSPREY_STATUS_MESSAGES
  Status& Annotate(const char* format, ...) & OSPREY_PRINTF_FORMAT(2, 3);
  Status&& Annotate(const char* format, ...) && OSPREY_PRINTF_FORMAT(2, 3);
#else
  template <typename... Args>
  Status& Annotate(const char*, Args&&...) & {
    return *this;
  }
  template <typename... Args>
  Status&& Annotate(const char*, Args&&...) && {
    return std::move(*this);
  }
#endif

  // Returns an independent copy.
#if OSPREY_STATUS_MESSAGES
  Status Clone() const;
#else
  Status Clone() const {
    Status copy;
    copy.rep_ = rep_;
    return copy;
  }
#endif

  // Writes "CODE: message" into |buffer| (always NUL-terminated when
  // |capacity| > 0); returns the length the full text needs.
  size_t ToString(char* buffer, size_t capacity) const;

  // Drops the error on purpose.
  void IgnoreError() { Reset(); }

 private:
  struct Payload;  // Low bit of its address is 0: it tags code-only reps.
#if OSPREY_STATUS_MESSAGES
  void Reset();
  void AppendV(const char* separator, const char* format, va_list args);
#else
  void Reset() { rep_ = 0; }
#endif

  // 0: OK. Odd: (code << 1) | 1, no message. Even: Payload*.
  uintptr_t rep_ = 0;
};

inline Status OkStatus() { return Status(); }

#define OSPREY_STATUS_FACTORY_(Name, code)                                     \
  template <typename... Args>                                                  \
  inline Status Name(const char* format, Args... args) {                       \
    if constexpr (sizeof...(Args) == 0) {                                      \
      return Status(StatusCode::code, "%s", format);                           \
    } else {                                                                   \
      return Status(StatusCode::code, format, args...);                        \
    }                                                                          \
  }
OSPREY_STATUS_FACTORY_(CancelledError, kCancelled)
OSPREY_STATUS_FACTORY_(UnknownError, kUnknown)
OSPREY_STATUS_FACTORY_(InvalidArgumentError, kInvalidArgument)
OSPREY_STATUS_FACTORY_(DeadlineExceededError, kDeadlineExceeded)
OSPREY_STATUS_FACTORY_(NotFoundError, kNotFound)
OSPREY_STATUS_FACTORY_(AlreadyExistsError, kAlreadyExists)
OSPREY_STATUS_FACTORY_(PermissionDeniedError, kPermissionDenied)
OSPREY_STATUS_FACTORY_(ResourceExhaustedError, kResourceExhausted)
OSPREY_STATUS_FACTORY_(FailedPreconditionError, kFailedPrecondition)
OSPREY_STATUS_FACTORY_(AbortedError, kAborted)
OSPREY_STATUS_FACTORY_(OutOfRangeError, kOutOfRange)
OSPREY_STATUS_FACTORY_(UnimplementedError, kUnimplemented)
OSPREY_STATUS_FACTORY_(InternalError, kInternal)
OSPREY_STATUS_FACTORY_(UnavailableError, kUnavailable)
OSPREY_STATUS_FACTORY_(DataLossError, kDataLoss)
#undef OSPREY_STATUS_FACTORY_

//===----------------------------------------------------------------------===//
// StatusOr<T>
//===----------------------------------------------------------------------===//

// Either a value of type T or an error Status. Accessing the value of an
// error is a programmer error (checked in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // Implicit from an error status. Passing OK is a programmer error and
  // becomes INTERNAL.
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(StatusCode::kInternal);
  }
  // Implicit from a value.
  template <typename U = T,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, StatusOr>>>
  StatusOr(U&& value) {  // NOLINT
    new (&storage_) T(std::forward<U>(value));
  }
  StatusOr(StatusOr&& other) noexcept : status_(std::move(other.status_)) {
    if (status_.ok()) new (&storage_) T(std::move(*other.ptr()));
    else other.status_ = Status(status_.code());  // Keep |other| an error.
  }
  StatusOr& operator=(StatusOr&& other) noexcept {
    if (this != &other) {
      Destroy();
      status_ = std::move(other.status_);
      if (status_.ok()) new (&storage_) T(std::move(*other.ptr()));
      else other.status_ = Status(status_.code());  // Keep |other| an error.
    }
    return *this;
  }
  StatusOr(const StatusOr&) = delete;
  StatusOr& operator=(const StatusOr&) = delete;
  ~StatusOr() { Destroy(); }

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  // Moves the error out; the StatusOr stays an error (code only) so that its
  // destructor never destroys a value that was not constructed.
  Status status() && {
    if (ok()) return Status();
    Status moved = std::move(status_);
    status_ = Status(moved.code());
    return moved;
  }

  T& value() & { OSPREY_DCHECK(ok()); return *ptr(); }
  const T& value() const& { OSPREY_DCHECK(ok()); return *ptr(); }
  T&& value() && { OSPREY_DCHECK(ok()); return std::move(*ptr()); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  T* ptr() { return std::launder(reinterpret_cast<T*>(&storage_)); }
  const T* ptr() const { return std::launder(reinterpret_cast<const T*>(&storage_)); }
  void Destroy() {
    if (status_.ok()) ptr()->~T();
  }

  Status status_;
  alignas(T) unsigned char storage_[sizeof(T)];
};

namespace internal {
inline Status AsStatus(Status&& s) { return std::move(s); }
template <typename T>
inline Status AsStatus(StatusOr<T>&& s) { return std::move(s).status(); }
}  // namespace internal

}  // namespace osprey

#define OSPREY_CONCAT_INNER_(a, b) a##b
#define OSPREY_CONCAT_(a, b) OSPREY_CONCAT_INNER_(a, b)

// Returns the error of |expr| (a Status), annotated with the optional
// printf-style context that follows.
#define OSPREY_RETURN_IF_ERROR(expr, ...)                                      \
  do {                                                                         \
    ::osprey::Status osprey_status_ = (expr);                                  \
    if (OSPREY_UNLIKELY(!osprey_status_.ok())) {                               \
      return __VA_OPT__(std::move)(osprey_status_)                           \
          __VA_OPT__(.Annotate(__VA_ARGS__));                                  \
    }                                                                          \
  } while (false)

// Evaluates |expr| (a StatusOr<T>); on error returns it (annotated with the
// optional context), otherwise moves the value into |lhs|, which may be a
// declaration (`auto x`) or an existing variable.
#define OSPREY_ASSIGN_OR_RETURN(lhs, expr, ...)                                \
  OSPREY_ASSIGN_OR_RETURN_IMPL_(OSPREY_CONCAT_(osprey_statusor_, __LINE__),    \
                                lhs, expr __VA_OPT__(, ) __VA_ARGS__)
#define OSPREY_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr, ...)                     \
  auto tmp = (expr);                                                           \
  if (OSPREY_UNLIKELY(!tmp.ok())) {                                            \
    return std::move(tmp).status() __VA_OPT__(.Annotate(__VA_ARGS__));        \
  }                                                                            \
  lhs = std::move(tmp).value()

#endif  // OSPREY_RUNTIME_BASE_STATUS_H_
