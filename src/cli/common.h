// What the command lines of xbak and xbcloud share: secrets blanked in our
// own argv (what `ps` shows), options from an options file turned into
// arguments, and the exit of a failed run. src/cli is no library: this file is
// compiled into both programs and into unit_cli.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/util/options_file.h"
#include "xbak/util/status.h"

namespace xbak::cli {

// Logs the error and returns 1, the exit status of a run that failed.
int Fail(const Status& st);

// "--loose-file_key_management_filekey=X" -> "file-key-management-filekey".
std::string OptionName(const std::string& arg);

// An option whose value must not stay visible in argv.
struct SecretOption {
  std::string_view name;  // long name: "password"
  // The shortest abbreviation of `name` boost takes for it (it takes any
  // prefix that names one option only): 3 for "pas[sword]".
  size_t shortest;
  char letter = 0;             // short form ('p': -pX, -p X), or 0
  bool file_is_shown = false;  // a value FILE:path names a file, no secret: left as it is
};

// xbak's: the server password, a key file's password (a FILE: path shown), a backup key.
inline constexpr SecretOption kXbakSecrets[] = {
    {"password", 3, 'p', false},
    {"file-key-management-filekey", 25, 0, true},  // file-key-management-filek[ey]
    {"encrypt-key", 11},  // refused, but never shown (encrypt-key-file is not secret)
};
// xbcloud's: the S3 credentials.
inline constexpr SecretOption kXbcloudSecrets[] = {
    {"s3-access-key", 5},      // s3-ac[cess-key] (s3-a is also s3-api-version)
    {"s3-secret-key", 6},      // s3-sec[ret-key] (s3-se is also s3-session-token)
    {"s3-session-token", 6},   // s3-ses[sion-token]
    {"azure-access-key", 7},   // azure-a[ccess-key]
    {"azure-sas-token", 8},    // azure-sa[s-token] (azure-s is also azure-storage-account)
    {"google-access-key", 8},  // google-a[ccess-key]
    {"google-secret-key", 9},  // google-se[cret-key] (google-s is also google-storage-class)
};

// True if `arg` ("--name", "--name=V", '_' for '-', a loose- prefix) names
// `secret` or an abbreviation of it that boost would take.
bool NamesSecret(const std::string& arg, const SecretOption& secret);

// Overwrites with 'x' in argv the value of every secret option, in every form
// boost reads it: --name=V, --name V, an abbreviation of the name, -pV, -p V.
// Call it once the parser holds its own copies (wiping first would parse the
// x's). Returns argv[1..] joined by spaces with those values shown as "...".
std::string WipeSecrets(int argc, char** argv, std::span<const SecretOption> secrets);

// The options of an options file among `keys`, as arguments for boost to
// store after the command line (whose values, stored first, win):
// "--key=value", or "--key" alone for the `flags` (options without a value).
std::vector<std::string> OptionFileArgs(const util::OptionMap& options,
                                        std::span<const std::string_view> keys,
                                        std::span<const std::string_view> flags = {});

// The first option of `options` not among `keys` (to refuse it, naming where
// it was set), or nullptr.
const util::OptionMap::value_type* UnknownOption(const util::OptionMap& options,
                                                 std::span<const std::string_view> keys);

}  // namespace xbak::cli
