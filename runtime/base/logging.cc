// Logging: the sink indirection and the default stderr sink.
#include "runtime/base/logging.h"

#include <stdio.h>

namespace osprey {

namespace {

void DefaultSink(void*, LogLevel level, const char* message) {
#if OSPREY_HAVE_THREADS
  static const char* const kNames[] = {"E", "W", "I", "D"};
  fprintf(stderr, "[osprey %s] %s\n", kNames[int(level)], message);
#else
  (void)level;
  (void)message;
#endif
}

LogSink g_sink = &DefaultSink;
void* g_sink_user_data = nullptr;
LogLevel g_max_level = LogLevel::kWarning;

}  // namespace

void SetLogSink(LogSink sink, void* user_data) {
  g_sink = sink ? sink : &DefaultSink;
  g_sink_user_data = sink ? user_data : nullptr;
}

void SetLogLevel(LogLevel max_level) { g_max_level = max_level; }

void Log(LogLevel level, const char* format, ...) {
  if (int(level) > int(g_max_level)) return;
  char buffer[256];
  va_list args;
  va_start(args, format);
  vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  g_sink(g_sink_user_data, level, buffer);
}

}  // namespace osprey
