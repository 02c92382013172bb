#include "xbak/backup/server_plugins.h"

#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::backup {

Status ReadServerPlugins(mysql::Connection& c, const std::map<std::string, std::string>& vars,
                         backupdir::ServerSettings* s) {
  XBAK_ASSIGN_OR_RETURN(auto rows,
                        c.Query("SELECT PLUGIN_NAME, PLUGIN_LIBRARY, @@plugin_dir, PLUGIN_TYPE FROM "
                                "information_schema.PLUGINS WHERE PLUGIN_STATUS = 'ACTIVE' AND "
                                "(PLUGIN_TYPE = 'ENCRYPTION' OR (PLUGIN_TYPE = 'DAEMON' AND "
                                "PLUGIN_NAME LIKE 'provider\\_%'))"));
  bool file_key_management = false;
  for (const auto& r : rows) {
    if (r.size() < 4 || !r[0]) continue;
    std::string lib = r[1].value_or("");
    if (lib.ends_with(".so")) lib.resize(lib.size() - 3);
    s->plugin_load += (s->plugin_load.empty() ? "" : ";") + *r[0] + (lib.empty() ? "" : "=" + lib);
    s->plugin_dir = r[2].value_or("");
    if (*r[0] == "file_key_management") file_key_management = true;
  }
  auto var = [&](const char* k) {
    auto it = vars.find(k);
    return it == vars.end() ? std::string() : it->second;
  };
  if (file_key_management) {
    for (const char* k : {"file_key_management_encryption_algorithm", "file_key_management_filename"}) {
      s->plugin_options.emplace_back(k, var(k));
    }
    const std::string filekey = var("file_key_management_filekey");
    if (filekey.rfind("FILE:", 0) == 0) {
      s->plugin_options.emplace_back("file_key_management_filekey", filekey);
    } else if (!filekey.empty()) {
      // The password of the key file itself: never written into a backup
      // (which may go to object storage).
      util::LogWarning(
          "file_key_management_filekey is set to a password, which this backup does not record: give it to "
          "the prepare (e.g. in a FILE: file)");
    }
  }
  for (const char* k : {"innodb_encrypt_log", "innodb_encrypt_tables"}) {
    if (vars.count(k)) s->plugin_options.emplace_back(k, var(k));
  }
  return Status::Ok();
}

Result<std::optional<PageKeys>> ReadServerKeys(mysql::Connection& c,
                                               const std::map<std::string, std::string>& vars) {
  XBAK_ASSIGN_OR_RETURN(auto rows,
                        c.Query("SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_STATUS "
                                "= 'ACTIVE' AND PLUGIN_TYPE = 'ENCRYPTION'"));
  auto var = [&](const char* k) {
    auto it = vars.find(k);
    return it == vars.end() ? std::string() : it->second;
  };
  if (rows.empty()) return std::optional<PageKeys>();
  if (rows[0].empty() || rows[0][0].value_or("") != "file_key_management") {
    util::LogWarning("--extended-validation: the server's keys come from " + rows[0][0].value_or("?") +
                     ", which xbak does not read; encrypted pages are checked as stored");
    return std::optional<PageKeys>();
  }
  // The plugin opens them from the server's working directory, its datadir.
  auto on_server = [&](std::string path) {
    return path.empty() || path[0] == '/' ? path : util::JoinPath(var("datadir"), path);
  };
  std::string filekey = var("file_key_management_filekey");
  if (filekey.rfind("FILE:", 0) == 0) filekey = "FILE:" + on_server(filekey.substr(5));
  auto keys = innodb::LoadKeyFile({on_server(var("file_key_management_filename")), filekey});
  if (!keys.ok()) {
    util::LogWarning("--extended-validation: " + keys.status().message() +
                     "; encrypted pages are checked as stored");
    return std::optional<PageKeys>();
  }
  std::string algorithm = var("file_key_management_encryption_algorithm");
  XBAK_ASSIGN_OR_RETURN(innodb::CryptMode mode,
                        innodb::ParseCryptMode(algorithm.empty() ? "aes_cbc" : algorithm));
  return std::optional<PageKeys>(PageKeys{std::move(keys.value()), mode});
}

Status WriteBackupCnf(mysql::Connection& c, const std::map<std::string, std::string>& vars,
                      const backupdir::ServerLayout& layout, sink::Sink& meta) {
  backupdir::ServerSettings s;
  s.checksum_algorithm = layout.checksum_algorithm;
  s.data_file_path = layout.data_file_path;
  s.log_file_size = layout.log_file_size;
  s.page_size = layout.page_size;
  s.undo_tablespaces = layout.undo_tablespaces;
  s.compression_level = layout.compression_level;
  XBAK_RETURN_IF_ERROR(ReadServerPlugins(c, vars, &s));
  return sink::WriteSmallFile(meta, backupdir::kBackupCnfFile, backupdir::FormatBackupCnf(s));
}

}  // namespace xbak::backup
