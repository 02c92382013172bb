// ASCII case folding, for names and keywords the server and its tools take in
// any case (option names, ON/OFF, protocol names, variable names).
#pragma once

#include <cctype>
#include <string>

namespace xbak::util {

inline std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace xbak::util
