// Messages for the operator, on stderr, one line each, prefixed as mariabackup's are
// ("[00] YYYY-MM-DD HH:MM:SS ", then "WARNING: " or "ERROR: " where it is one). Writes are
// single write(2) calls so lines from threads never interleave. No global mutable state.
#pragma once

#include <string_view>

namespace xbak::util {

enum class LogLevel { kInfo, kWarning, kError };

void Log(LogLevel level, std::string_view message);
inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }

}  // namespace xbak::util
