#include "xbak/util/options_file.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::util {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string NormaliseKey(std::string k) {
  std::replace(k.begin(), k.end(), '_', '-');
  return k;
}

// Removes quotes and a trailing comment from a value, as my_load_defaults does.
std::string CleanValue(const std::string& raw) {
  std::string v = Trim(raw);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) {
    char q = v.front();
    size_t end = v.find(q, 1);
    if (end != std::string::npos) return v.substr(1, end - 1);
  }
  size_t hash = v.find(" #");
  if (hash != std::string::npos) v = Trim(v.substr(0, hash));
  return v;
}

constexpr int kMaxIncludeDepth = 10;

Status ParseInto(const std::string& text, const std::string& origin, const std::vector<std::string>& groups,
                 OrderedOptions* out, int depth);

Status ReadInto(const std::string& path, const std::vector<std::string>& groups, OrderedOptions* out,
                int depth, bool must_exist) {
  if (depth > kMaxIncludeDepth) {
    return Error(ErrorCode::kInvalidArgument, "option file " + path + ": !include nested too deeply");
  }
  if (!must_exist && ::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), R_OK) != 0 &&
      errno == EACCES) {
    // As the mysql programs do: a file of the default chain (or of an
    // !includedir) this user may not read is skipped, not fatal.
    LogWarning("option file " + path + " is not readable by this user; skipped");
    return Status::Ok();
  }
  auto text = ReadSmallFile(path, 4 << 20);
  if (!text.ok()) {
    if (!must_exist && text.status().code() == ErrorCode::kNotFound) return Status::Ok();
    return text.status().With("reading option file");
  }
  return ParseInto(text.value(), path, groups, out, depth);
}

// !includedir DIR: its *.cnf files in name order; a missing directory is
// ignored, as the mysql programs do.
Status IncludeDir(const std::string& dir, const std::vector<std::string>& groups, OrderedOptions* out,
                  int depth) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return Status::Ok();
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n.size() > 4 && (n.ends_with(".cnf"))) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) XBAK_RETURN_IF_ERROR(ReadInto(dir + "/" + n, groups, out, depth + 1, false));
  return Status::Ok();
}

Status ParseInto(const std::string& text, const std::string& origin, const std::vector<std::string>& groups,
                 OrderedOptions* out, int depth) {
  std::string current;  // the group being read, empty if not one of `groups`
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    line_no++;
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    std::string where = origin + ":" + std::to_string(line_no);
    if (t.rfind("!includedir", 0) == 0) {
      XBAK_RETURN_IF_ERROR(IncludeDir(Trim(t.substr(11)), groups, out, depth));
      continue;
    }
    if (t.rfind("!include", 0) == 0) {
      XBAK_RETURN_IF_ERROR(ReadInto(Trim(t.substr(8)), groups, out, depth + 1, true));
      continue;
    }
    if (t[0] == '[') {
      size_t close = t.find(']');
      if (close == std::string::npos) {
        return Error(ErrorCode::kInvalidArgument, where + ": group header without ']'");
      }
      std::string g = Trim(t.substr(1, close - 1));
      current = std::find(groups.begin(), groups.end(), g) == groups.end() ? "" : g;
      continue;
    }
    if (current.empty()) continue;
    size_t eq = t.find('=');
    std::string key = NormaliseKey(Trim(eq == std::string::npos ? t : t.substr(0, eq)));
    std::string value = eq == std::string::npos ? "" : CleanValue(t.substr(eq + 1));
    if (key.empty()) return Error(ErrorCode::kInvalidArgument, where + ": option without a name");
    out->push_back(OrderedOption{key, value, eq != std::string::npos, where, current});
  }
  return Status::Ok();
}

// The options as one map: later groups of `groups` win, then later lines.
OptionMap ByGroupOrder(const OrderedOptions& in, const std::vector<std::string>& groups) {
  OptionMap out;
  for (const std::string& g : groups) {
    for (const OrderedOption& o : in) {
      if (o.group == g) out[o.key] = OptionValue{o.value, o.origin};
    }
  }
  return out;
}

}  // namespace

Result<OrderedOptions> ReadOptionsInOrder(const std::string& path, const std::vector<std::string>& groups,
                                          bool must_exist) {
  OrderedOptions out;
  XBAK_RETURN_IF_ERROR(ReadInto(path, groups, &out, 0, must_exist));
  return out;
}

Result<OptionMap> ReadOptionFile(const std::string& path, const std::vector<std::string>& groups,
                                 bool must_exist) {
  auto in = ReadOptionsInOrder(path, groups, must_exist);
  if (!in.ok()) return in.status();
  return ByGroupOrder(in.value(), groups);
}

Result<OptionMap> ParseOptionText(const std::string& text, const std::string& origin,
                                  const std::vector<std::string>& groups) {
  OrderedOptions in;
  XBAK_RETURN_IF_ERROR(ParseInto(text, origin, groups, &in, 0));
  return ByGroupOrder(in, groups);
}

OptionFileChoice ChooseOptionFile(int argc, const char* const* argv) {
  std::string file;
  bool no_defaults = false;
  for (int i = 1; i < argc; i++) {
    std::string_view a = argv[i];
    if (a.starts_with("--defaults-file=")) file = std::string(a.substr(16));
    if (a == "--no-defaults") no_defaults = true;
  }
  if (no_defaults) return {};
  if (!file.empty()) return {file, true};
  const char* home = std::getenv("HOME");
  if (home == nullptr) return {};
  return {std::string(home) + "/.my.cnf", false};
}

}  // namespace xbak::util
