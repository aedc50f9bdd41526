// Build configuration and small portable macros shared by the runtime.
#ifndef OSPREY_RUNTIME_BASE_CONFIG_H_
#define OSPREY_RUNTIME_BASE_CONFIG_H_

#include <cstdarg>

// 1: statuses carry messages and context; 0: codes only (smallest builds).
#ifndef OSPREY_STATUS_MESSAGES
#define OSPREY_STATUS_MESSAGES 1
#endif

// The platform port (runtime/base/platform/platform.h): exactly one of
// OSPREY_PLATFORM_POSIX, OSPREY_PLATFORM_NONE, OSPREY_PLATFORM_FREERTOS is 1
// (the build defines it from -DOSPREY_PLATFORM). Without one, POSIX unless
// OSPREY_HAVE_THREADS=0 says bare metal.
#if !defined(OSPREY_PLATFORM_POSIX) && !defined(OSPREY_PLATFORM_NONE) && \
    !defined(OSPREY_PLATFORM_FREERTOS)
#if defined(OSPREY_HAVE_THREADS) && !OSPREY_HAVE_THREADS
#define OSPREY_PLATFORM_NONE 1
#else
#define OSPREY_PLATFORM_POSIX 1
#endif
#endif
#ifndef OSPREY_PLATFORM_POSIX
#define OSPREY_PLATFORM_POSIX 0
#endif
#ifndef OSPREY_PLATFORM_NONE
#define OSPREY_PLATFORM_NONE 0
#endif
#ifndef OSPREY_PLATFORM_FREERTOS
#define OSPREY_PLATFORM_FREERTOS 0
#endif
#if OSPREY_PLATFORM_POSIX + OSPREY_PLATFORM_NONE + OSPREY_PLATFORM_FREERTOS != 1
#error "exactly one OSPREY_PLATFORM_* must be 1"
#endif

// 1: the platform has threads (POSIX, FreeRTOS); 0: bare metal,
// single-threaded.
#ifndef OSPREY_HAVE_THREADS
#define OSPREY_HAVE_THREADS (!OSPREY_PLATFORM_NONE)
#endif

#if defined(__GNUC__) || defined(__clang__)
#define OSPREY_LIKELY(x) (__builtin_expect(!!(x), 1))
#define OSPREY_UNLIKELY(x) (__builtin_expect(!!(x), 0))
#define OSPREY_PRINTF_FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#define OSPREY_ATTRIBUTE_NOINLINE __attribute__((noinline))
#define OSPREY_ATTRIBUTE_COLD __attribute__((cold))
#else
#define OSPREY_LIKELY(x) (x)
#define OSPREY_UNLIKELY(x) (x)
#define OSPREY_PRINTF_FORMAT(fmt, args)
#define OSPREY_ATTRIBUTE_NOINLINE
#define OSPREY_ATTRIBUTE_COLD
#endif

namespace osprey::internal {
// Reports a failed check and traps. Only for programmer errors.
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);
}  // namespace osprey::internal

// Checks a programmer invariant; free in release (NDEBUG) builds.
#ifdef NDEBUG
#define OSPREY_DCHECK(cond) ((void)0)
#else
#define OSPREY_DCHECK(cond)                                                   \
  (OSPREY_LIKELY(cond) ? (void)0                                              \
                       : ::osprey::internal::CheckFailed(__FILE__, __LINE__, #cond))
#endif

#endif  // OSPREY_RUNTIME_BASE_CONFIG_H_
