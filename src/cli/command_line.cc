#include "command_line.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace xbak::cli {

// The name boost matches, without mariabackup's "loose-" prefix.
std::string OptionName(const std::string& a) {
  std::string name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
  std::replace(name.begin(), name.end(), '_', '-');
  if (name.rfind("loose-", 0) == 0) name.erase(0, 6);
  return name;
}

// --file-key-management-filekey, or an abbreviation boost would take for it.
bool IsFilekeyOption(const std::string& a) {
  if (a.rfind("--", 0) != 0) return false;
  const std::string name = OptionName(a);
  return name.size() >= std::strlen("file-key-management-filek") &&
         std::string("file-key-management-filekey").rfind(name, 0) == 0;
}

// The command line as boost is to read it: option names with '_' spelled '-'
// (mariabackup's --loose-file_key_management_filename, say).
std::vector<std::string> NormalizedArgs(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
    }
    out.push_back(std::move(a));
  }
  return out;
}

// Overwrites a password given on the command line in our own argv, as the
// mysql clients do, so it does not show in `ps`. Returns the command line
// with the password masked, for xtrabackup_info.
std::string MaskPassword(int argc, char** argv) {
  std::string cmd;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    char* secret = nullptr;
    if (a.rfind("--password=", 0) == 0)
      secret = argv[i] + 11;
    else if (a.rfind("-p", 0) == 0 && a.size() > 2 && a[1] == 'p')
      secret = argv[i] + 2;
    // A key file's password given literally (FILE:path names a file: shown).
    const bool filekey = IsFilekeyOption(a);
    if (filekey && a.find('=') != std::string::npos && a.compare(a.find('=') + 1, 5, "FILE:") != 0) {
      secret = argv[i] + a.find('=') + 1;
    }
    if (((a == "--password" || a == "-p") ||
         (filekey && a.find('=') == std::string::npos &&
          std::string(argv[i + 1 < argc ? i + 1 : i]).rfind("FILE:", 0) != 0)) &&
        i + 1 < argc) {
      // "--password SECRET": the value is the next argument.
      for (char* c = argv[++i]; *c; c++) *c = 'x';
      cmd += (cmd.empty() ? "" : " ") + a + " ...";
      continue;
    }
    std::string shown = a;
    if (secret != nullptr) {
      shown = a.substr(0, static_cast<size_t>(secret - argv[i])) + "...";
      for (char* c = secret; *c; c++) *c = 'x';
    }
    cmd += (cmd.empty() ? "" : " ") + shown;
  }
  return cmd;
}

}  // namespace xbak::cli
