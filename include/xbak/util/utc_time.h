// Unix time as UTC text, for every layer that writes it (object-store dates,
// SigV4 stamps, list's columns): one gmtime_r and strftime.
#pragma once

#include <cstdint>
#include <string>

namespace xbak::util {

// `format` as strftime takes it, e.g. "%Y-%m-%dT%H:%M:%SZ".
std::string FormatUtc(int64_t unix_time, const char* format);

}  // namespace xbak::util
