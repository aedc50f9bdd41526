// Logging through a replaceable sink. The default sink writes to stderr on
// hosted builds and drops messages on bare metal; applications install
// their own (UART, RTT, semihosting) with SetLogSink().
#ifndef OSPREY_RUNTIME_BASE_LOGGING_H_
#define OSPREY_RUNTIME_BASE_LOGGING_H_

#include "runtime/base/config.h"

namespace osprey {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// |message| is borrowed for the duration of the call.
using LogSink = void (*)(void* user_data, LogLevel level, const char* message);

// Installs |sink| (null restores the default). Not thread-safe with
// concurrent Log() calls: install once at start-up.
void SetLogSink(LogSink sink, void* user_data);
void SetLogLevel(LogLevel max_level);

void Log(LogLevel level, const char* format, ...) OSPREY_PRINTF_FORMAT(2, 3);

}  // namespace osprey

#define OSPREY_LOG_ERROR(...) ::osprey::Log(::osprey::LogLevel::kError, __VA_ARGS__)
#define OSPREY_LOG_WARNING(...) ::osprey::Log(::osprey::LogLevel::kWarning, __VA_ARGS__)
#define OSPREY_LOG_INFO(...) ::osprey::Log(::osprey::LogLevel::kInfo, __VA_ARGS__)

#endif  // OSPREY_RUNTIME_BASE_LOGGING_H_
