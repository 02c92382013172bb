// The command line of xbak before boost reads it: option names spelled with
// '_' (as the server's and mariabackup's may be). Its secrets are blanked by
// common.h's WipeSecrets (kXbakSecrets).
#pragma once

#include <string>
#include <vector>

namespace xbak::cli {

// argv[1..] as boost is to read it: option names with '_' spelled '-'.
std::vector<std::string> NormalizedArgs(int argc, char** argv);

}  // namespace xbak::cli
