#include "common.h"

#include <algorithm>
#include <cctype>

#include "xbak/util/ascii.h"
#include "xbak/util/log.h"

namespace xbak::cli {
namespace {

bool Contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void Blank(char* s) {
  for (char* c = s; *c; c++) *c = 'x';
}

}  // namespace

int Fail(const Status& st) {
  util::LogError(st.message());
  return 1;
}

// The name boost matches, without mariabackup's "loose-" prefix.
std::string OptionName(const std::string& a) {
  std::string name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
  std::replace(name.begin(), name.end(), '_', '-');
  if (name.rfind("loose-", 0) == 0) name.erase(0, 6);
  return name;
}

bool NamesSecret(const std::string& a, const SecretOption& secret) {
  if (a.rfind("--", 0) != 0) return false;
  // Case folded: the parser takes --Password as --password (getopt.h).
  const std::string name = util::AsciiLower(OptionName(a));
  return name.size() >= secret.shortest && secret.name.starts_with(name);
}

std::string WipeSecrets(int argc, char** argv, std::span<const SecretOption> secrets) {
  std::string cmd;
  auto add = [&cmd](const std::string& shown) { cmd += (cmd.empty() ? "" : " ") + shown; };
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const SecretOption* secret = nullptr;
    bool short_form = false;
    for (const SecretOption& s : secrets) {
      if (NamesSecret(a, s)) {
        secret = &s;
      } else if (s.letter != 0 && a.size() >= 2 && a[0] == '-' && a[1] == s.letter) {
        secret = &s;
        short_form = true;
      }
      if (secret != nullptr) break;
    }
    if (secret == nullptr) {
      add(a);
      continue;
    }
    // Where the value starts in argv[i] (--name=V, -pV), or npos: the next
    // argument is the value (--name V, -p V).
    const size_t at = short_form ? (a.size() > 2 ? 2 : std::string::npos)
                                 : (a.find('=') == std::string::npos ? std::string::npos : a.find('=') + 1);
    if (at == std::string::npos) {
      if (i + 1 < argc && !(secret->file_is_shown && std::string_view(argv[i + 1]).starts_with("FILE:"))) {
        Blank(argv[++i]);
        add(a + " ...");
      } else {
        add(a);
      }
      continue;
    }
    if (secret->file_is_shown && a.compare(at, 5, "FILE:") == 0) {
      add(a);
      continue;
    }
    Blank(argv[i] + at);
    add(a.substr(0, at) + "...");
  }
  return cmd;
}

std::vector<std::string> OptionFileArgs(const util::OptionMap& options,
                                        std::span<const std::string_view> keys,
                                        std::span<const std::string_view> flags) {
  std::vector<std::string> args;
  for (std::string_view k : keys) {
    auto it = options.find(std::string(k));
    if (it == options.end()) continue;
    args.push_back("--" + std::string(k) + (Contains(flags, k) ? "" : "=" + it->second.value));
  }
  return args;
}

const util::OptionMap::value_type* UnknownOption(const util::OptionMap& options,
                                                 std::span<const std::string_view> keys) {
  for (const auto& entry : options) {
    if (!Contains(keys, entry.first)) return &entry;
  }
  return nullptr;
}

}  // namespace xbak::cli
