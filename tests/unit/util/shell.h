// Runs a shell command for a test; shared by the tests of every layer (util is below them all).
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <string>

namespace xbak::testing {

// `cmd` through /bin/sh; its exit status, or -1 if it did not exit normally.
inline int Shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace xbak::testing
