#include "getopt.h"

#include <algorithm>
#include <map>
#include <set>

#include "xbak/util/ascii.h"

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

std::string Dashed(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// What my_getopt takes as a switch's value: ON/OFF, TRUE/FALSE, YES/NO, 1/0.
std::optional<bool> SwitchValue(const std::string& v) {
  const std::string l = util::AsciiLower(v);
  if (l == "1" || l == "on" || l == "true" || l == "yes" || l == "enable") return true;
  if (l == "0" || l == "off" || l == "false" || l == "no" || l == "disable") return false;
  return std::nullopt;
}

bool IsSwitch(const po::option_description& d) { return d.semantic()->max_tokens() == 0; }
bool ValueOptional(const po::option_description& d) { return d.semantic()->min_tokens() == 0; }
// An option that may be given again and again, each value kept (boost appends
// them to a vector): --incremental-dir, --encrypt-key-file, --from-stream.
bool Repeatable(const po::option_description& d) {
  return dynamic_cast<const po::typed_value<std::vector<std::string>>*>(d.semantic().get()) != nullptr;
}

// The option a (dashed) name is, as my_getopt finds it: the exact name, else
// the one option it is a prefix of.
struct Lookup {
  const po::option_description* found = nullptr;
  bool ambiguous = false;
};
Lookup Find(const po::options_description& desc, const std::string& name, bool prefixes) {
  Lookup r;
  std::vector<const po::option_description*> prefixed;
  for (const auto& d : desc.options()) {
    const std::string& long_name = d->long_name();
    if (long_name == name) return {d.get(), false};
    if (prefixes && !name.empty() && long_name.rfind(name, 0) == 0) prefixed.push_back(d.get());
  }
  if (prefixed.size() == 1) r.found = prefixed[0];
  r.ambiguous = prefixed.size() > 1;
  return r;
}

const po::option_description* FindShort(const po::options_description& desc, char c) {
  const std::string want = std::string("-") + c;
  for (const auto& d : desc.options()) {
    if (d->canonical_display_name(po::command_line_style::allow_dash_for_short) == want) return d.get();
  }
  return nullptr;
}

// One "--name[=value]" (name without the dashes), resolved against `desc`.
// `next` is the argument after it, taken as the value of an option that
// needs one (*used_next set); nullptr in option files.
std::optional<GetoptError> TakeLong(const po::options_description& desc, std::string name,
                                    std::optional<std::string> value, const std::string* next,
                                    bool* used_next, const std::string& origin, bool strict, bool prefixes,
                                    GivenOptions* out) {
  name = Dashed(name);
  bool loose = false;
  if (name.rfind("loose-", 0) == 0) {
    loose = true;
    name = name.substr(6);
  }
  if (name.rfind("maximum-", 0) == 0) return std::nullopt;  // the server's upper bounds: nothing to xbak
  Lookup l = Find(desc, name, prefixes);
  // innobackupex's command lines spell some names capitalised (--Apply_log);
  // mariabackup takes them. No xbak option differs from another by case.
  if (!l.found && !l.ambiguous && util::AsciiLower(name) != name) {
    name = util::AsciiLower(name);
    l = Find(desc, name, prefixes);
  }
  bool off = false;
  if (!l.found && !l.ambiguous) {
    // --skip-X, --disable-X, --enable-X of a switch X.
    for (const char* p : {"skip-", "disable-", "enable-"}) {
      const std::string prefix = p;
      if (name.rfind(prefix, 0) != 0) continue;
      Lookup s = Find(desc, name.substr(prefix.size()), prefixes);
      if (s.found && IsSwitch(*s.found)) {
        l = s;
        off = prefix != "enable-";
      }
    }
  }
  // Messages name the option, never its value: a mistyped --pasword=X must
  // not print the password.
  if (l.ambiguous) {
    return GetoptError{GetoptCode::kAmbiguous, origin + ": ambiguous option '--" + name + "'"};
  }
  if (!l.found) {
    if (loose || !strict) {
      if (loose) out->warnings.push_back(origin + ": option '" + name + "' unknown, ignored (loose)");
      return std::nullopt;
    }
    if (value)
      return GetoptError{GetoptCode::kUnknownVariable,
                         origin + ": unknown variable '" + name + "=...' (the value is not shown)"};
    return GetoptError{GetoptCode::kUnknownOption, origin + ": unknown option '--" + name + "'"};
  }
  const po::option_description& d = *l.found;
  GivenOption g{d.long_name(), std::nullopt, origin, off};
  if (IsSwitch(d)) {
    if (value) {
      std::optional<bool> on = SwitchValue(*value);
      if (!on) {
        return GetoptError{GetoptCode::kArgumentInvalid,
                           origin + ": option '--" + d.long_name() + "' takes ON or OFF (1 or 0)"};
      }
      g.off = off ? *on : !*on;
    }
  } else if (value) {
    g.value = std::move(value);
  } else if (!ValueOptional(d)) {
    if (next == nullptr && origin != kCommandLineOrigin) {
      // A bare "password" line, on which the mysql clients prompt: xbak
      // asks nothing, and the option stays unset.
      out->warnings.push_back(origin + ": '" + d.long_name() + "' without a value, ignored");
      return std::nullopt;
    }
    if (next == nullptr) {
      return GetoptError{GetoptCode::kArgumentRequired,
                         origin + ": option '--" + d.long_name() + "' requires an argument"};
    }
    g.value = *next;
    *used_next = true;
  }
  out->options.push_back(std::move(g));
  return std::nullopt;
}

// A cluster of short options "-xvC DIR", "-uroot", "-p" (as my_getopt: one
// that takes a value takes the rest of the cluster, or the next argument).
std::optional<GetoptError> TakeShort(const po::options_description& desc, const std::string& arg,
                                     const std::string* next, bool* used_next, GivenOptions* out) {
  for (size_t i = 1; i < arg.size(); i++) {
    const char c = arg[i];
    if (c == '?') {  // my_getopt's help
      out->options.push_back(GivenOption{"help", std::nullopt, kCommandLineOrigin});
      continue;
    }
    const po::option_description* d = FindShort(desc, c);
    if (d == nullptr) {
      return GetoptError{GetoptCode::kUnknownOption,
                         "command line: unknown option '-" + std::string(1, c) + "'"};
    }
    GivenOption g{d->long_name(), std::nullopt, kCommandLineOrigin};
    if (!IsSwitch(*d)) {
      if (i + 1 < arg.size()) {
        g.value = arg.substr(i + 1);
      } else if (!ValueOptional(*d)) {
        if (next == nullptr) {
          return GetoptError{GetoptCode::kArgumentRequired,
                             "command line: option '-" + std::string(1, c) + "' requires an argument"};
        }
        g.value = *next;
        *used_next = true;
      }
      out->options.push_back(std::move(g));
      return std::nullopt;
    }
    out->options.push_back(std::move(g));
  }
  return std::nullopt;
}

}  // namespace

std::optional<GetoptError> ReadCommandLine(const po::options_description& desc,
                                           std::span<const std::string> args, GivenOptions* out,
                                           const std::string& stop_at, bool prefixes) {
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    const std::string* next = i + 1 < args.size() ? &args[i + 1] : nullptr;
    bool used_next = false;
    if (a == "--") {
      for (size_t j = i + 1; j < args.size(); j++) out->positional.push_back(args[j]);
      return std::nullopt;
    }
    if (!stop_at.empty() && Dashed(a) == "--" + stop_at) return std::nullopt;
    std::optional<GetoptError> err;
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      std::optional<std::string> value;
      if (eq != std::string::npos) value = a.substr(eq + 1);
      err = TakeLong(desc, a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2), value, next,
                     &used_next, kCommandLineOrigin, true, prefixes, out);
    } else if (a.size() > 1 && a[0] == '-') {
      err = TakeShort(desc, a, next, &used_next, out);
    } else {
      out->positional.push_back(a);
    }
    if (err) return err;
    if (used_next) i++;
  }
  return std::nullopt;
}

std::optional<GetoptError> ReadFileOptions(const po::options_description& desc,
                                           const util::OrderedOptions& options, bool strict, bool prefixes,
                                           GivenOptions* out) {
  for (const util::OrderedOption& o : options) {
    std::optional<std::string> value;
    // A bare "key" is a switch turned on; "key=" is an empty value (an empty
    // password, say), which my_getopt takes too.
    if (o.has_value) value = o.value;
    bool unused = false;
    if (auto err = TakeLong(desc, o.key, value, nullptr, &unused, o.origin, strict, prefixes, out))
      return err;
  }
  return std::nullopt;
}

std::optional<GetoptError> StoreGiven(const po::options_description& desc, const GivenOptions& given,
                                      po::variables_map* vm) {
  // Which occurrences boost is to store: every one of a repeatable option
  // (its value a vector: boost appends), else the last.
  std::map<std::string, size_t> last;
  std::set<std::string> on_command_line;  // a repeatable option given there drops the files' values
  for (size_t i = 0; i < given.options.size(); i++) {
    last[given.options[i].name] = i;
    if (given.options[i].origin == kCommandLineOrigin) on_command_line.insert(given.options[i].name);
  }
  po::parsed_options parsed(&desc);
  for (size_t i = 0; i < given.options.size(); i++) {
    const GivenOption& g = given.options[i];
    const po::option_description& d = desc.find(g.name, false);
    if (!Repeatable(d) && last[g.name] != i) continue;
    if (Repeatable(d) && g.origin != kCommandLineOrigin && on_command_line.count(g.name)) continue;
    if (g.off) continue;
    po::option o;
    o.string_key = g.name;
    if (g.value) o.value.push_back(*g.value);
    o.original_tokens.push_back("--" + g.name);
    parsed.options.push_back(std::move(o));
  }
  try {
    po::store(parsed, *vm);
  } catch (const po::error& e) {
    // A value boost could not convert or check, e.g. --parallel=many.
    return GetoptError{GetoptCode::kArgumentInvalid, e.what()};
  }
  return std::nullopt;
}

}  // namespace xbak::cli
