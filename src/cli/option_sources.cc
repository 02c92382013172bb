#include "option_sources.h"

#include <algorithm>
#include <cstdlib>

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

// The last value the command line gave `name` (nullopt if none).
std::optional<std::string> Last(const GivenOptions& cmd, const std::string& name) {
  std::optional<std::string> v;
  for (const GivenOption& g : cmd.options) {
    if (g.name == name)
      v = g.off ? std::optional<std::string>() : std::optional<std::string>(g.value.value_or(""));
  }
  return v;
}

// `k` (loose- or not) among `keys`.
bool Among(std::span<const std::string_view> keys, std::string_view k) {
  if (k.starts_with("loose-")) k.remove_prefix(6);
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

bool InGroups(const std::vector<std::string>& groups, const std::string& g, const std::string& suffix) {
  for (const std::string& x : groups) {
    if (g == x || (!suffix.empty() && g == x + suffix)) return true;
  }
  return false;
}

}  // namespace

OptionGroups XbakGroups() {
  return OptionGroups{
      {"xtrabackup", "mariabackup", "mariadb-backup", "xbak"},
      {"client", "client-server", "client-mariadb"},
      {"mysqld", "server", "mysqld-10.11", "mariadb", "mariadb-10.11", "mariadbd", "mariadbd-10.11",
       "mysqld-11.8", "mariadb-11.8", "mariadbd-11.8", "client-server", "galera"}};
}

std::vector<OptionFile> OptionFileChain(bool no_defaults, const std::string& defaults_file,
                                        const std::string& extra_file, const char* home) {
  if (no_defaults) return {};
  if (!defaults_file.empty()) {
    std::vector<OptionFile> files{{defaults_file, true}};
    if (!extra_file.empty()) files.push_back({extra_file, true});
    return files;
  }
  std::vector<OptionFile> files{{"/etc/my.cnf", false}, {"/etc/mysql/my.cnf", false}};
  if (!extra_file.empty()) files.push_back({extra_file, true});
  if (home != nullptr && *home != '\0') files.push_back({std::string(home) + "/.my.cnf", false});
  return files;
}

std::optional<GetoptError> GatherOptions(const po::options_description& desc,
                                         std::span<const std::string> args, const OptionGroups& groups,
                                         std::span<const std::string_view> client_keys,
                                         std::span<const std::string_view> server_keys, bool prefixes,
                                         GivenOptions* out) {
  GivenOptions cmd;
  if (auto err = ReadCommandLine(desc, args, &cmd, "mysqld-args", prefixes)) return err;
  std::string suffix = Last(cmd, "defaults-group-suffix").value_or("");
  if (suffix.empty() && std::getenv("MYSQL_GROUP_SUFFIX") != nullptr)
    suffix = std::getenv("MYSQL_GROUP_SUFFIX");
  std::vector<std::string> all_groups;
  for (const auto* list : {&groups.tool, &groups.client, &groups.server}) {
    for (const std::string& g : *list) {
      all_groups.push_back(g);
      if (!suffix.empty()) all_groups.push_back(g + suffix);
    }
  }
  const auto files =
      OptionFileChain(Last(cmd, "no-defaults").has_value(), Last(cmd, "defaults-file").value_or(""),
                      Last(cmd, "defaults-extra-file").value_or(""), std::getenv("HOME"));
  for (const OptionFile& f : files) {
    auto read = util::ReadOptionsInOrder(f.path, all_groups, f.must_exist);
    if (!read.ok()) return GetoptError{GetoptCode::kUnknownOption, read.status().message()};
    for (const util::OrderedOption& o : read.value()) {
      const bool tool = InGroups(groups.tool, o.group, suffix);
      if (!tool && InGroups(groups.client, o.group, suffix) && !Among(client_keys, o.key)) continue;
      if (!tool && InGroups(groups.server, o.group, suffix) && !Among(server_keys, o.key)) continue;
      if (auto err = ReadFileOptions(desc, util::OrderedOptions{o}, tool, prefixes, out)) return err;
    }
  }
  out->options.insert(out->options.end(), cmd.options.begin(), cmd.options.end());
  out->positional = std::move(cmd.positional);
  out->warnings.insert(out->warnings.end(), cmd.warnings.begin(), cmd.warnings.end());
  return std::nullopt;
}

}  // namespace xbak::cli
