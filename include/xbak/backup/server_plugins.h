// The server's plugins that a backup's prepare must load too, named in
// backup-my.cnf as mariabackup names them: page compression providers
// (Debian's mariadb-plugin-provider-*) and the file_key_management
// encryption plugin with its settings.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "xbak/backup/tablespace_copy.h"
#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/mysql/connection.h"
#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::backup {

// Fills s->plugin_dir, s->plugin_load and s->plugin_options from the server's
// active plugins and `vars` (SHOW GLOBAL VARIABLES). A key file's path and a
// FILE:path filekey are recorded; a filekey given literally (the password
// itself) is not: prepare then needs it from the user, and a warning says so.
Status ReadServerPlugins(mysql::Connection& c, const std::map<std::string, std::string>& vars,
                         backupdir::ServerSettings* s);

// backup-my.cnf: the server's InnoDB layout (`layout`) and plugins, which
// --prepare and --copy-back read back.
Status WriteBackupCnf(mysql::Connection& c, const std::map<std::string, std::string>& vars,
                      const backupdir::ServerLayout& layout, sink::Sink& meta);

// --extended-validation: the keys of the server's file_key_management (its
// key file and FILE: filekey, read here on the server's host) and its
// encryption algorithm. nullopt, after a warning, when the server encrypts
// with no such plugin or its key file cannot be read: encrypted pages are
// then checked as stored only.
Result<std::optional<PageKeys>> ReadServerKeys(mysql::Connection& c,
                                               const std::map<std::string, std::string>& vars);

}  // namespace xbak::backup
