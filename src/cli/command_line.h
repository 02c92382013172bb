// The command line of xbak before and after boost reads it: option names
// spelled with '_' (as the server's and mariabackup's may be), and secrets
// (a password, a key file's password) blanked in our own argv so that `ps`
// never shows them.
#pragma once

#include <string>
#include <vector>

namespace xbak::cli {

// "--loose-file_key_management_filekey=X" -> "file-key-management-filekey".
std::string OptionName(const std::string& arg);

// --file-key-management-filekey (any spelling), or an abbreviation boost
// would take for it.
bool IsFilekeyOption(const std::string& arg);

// argv[1..] as boost is to read it: option names with '_' spelled '-'.
std::vector<std::string> NormalizedArgs(int argc, char** argv);

// Overwrites a password or a literal filekey given on the command line in
// argv; returns the command line with them masked (for xtrabackup_info).
std::string MaskPassword(int argc, char** argv);

}  // namespace xbak::cli
