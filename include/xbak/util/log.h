// Messages for the operator, on stderr, one line each, prefixed with the time
// and the program name. No global mutable state: the program name is fixed at
// compile time per binary through the caller, and writes are single write(2)
// calls so lines from threads never interleave.
#pragma once

#include <string_view>

namespace xbak::util {

enum class LogLevel { kInfo, kWarning, kError };

void Log(LogLevel level, std::string_view message);
inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }

}  // namespace xbak::util
