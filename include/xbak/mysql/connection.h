// A connection to the MariaDB server being backed up (libmariadb). Errors are
// translated into words an operator can act on: unreachable server, wrong
// credentials, missing privilege.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xbak/util/status.h"

struct st_mysql;

namespace xbak::mysql {

struct ConnectOptions {
  std::string user;
  std::string password;  // never logged
  std::string host;      // empty: local socket
  unsigned port = 0;
  std::string socket;
  // TCP even to localhost (--protocol=tcp; by default localhost means the
  // socket, as for every mysql client).
  bool tcp = false;
  // TLS (--ssl, or any --ssl-* option): the connection fails rather than go
  // in clear. The server's certificate is verified when a CA is given or
  // ssl_verify_server_cert is set; a local server (socket, loopback) is
  // otherwise trusted as the mysql clients do.
  bool ssl = false;
  std::string ssl_ca, ssl_capath, ssl_cert, ssl_key, ssl_cipher;
  bool ssl_verify_server_cert = false;
  unsigned connect_timeout_s = 10;
  // Applied to every statement so a hung server cannot hang the backup.
  unsigned read_timeout_s = 600;

  // "socket /run/mysqld/mysqld.sock" or "127.0.0.1:3306", for messages.
  std::string Describe() const;
};

using Row = std::vector<std::optional<std::string>>;

class Connection {
 public:
  static Result<std::unique_ptr<Connection>> Open(const ConnectOptions& opts);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Status Execute(const std::string& sql);
  Result<std::vector<Row>> Query(const std::string& sql);
  // First column of the first row; nullopt for no row or NULL.
  Result<std::optional<std::string>> QueryValue(const std::string& sql);
  // Result rows as maps column name -> value (for SHOW MASTER/SLAVE STATUS).
  Result<std::vector<std::map<std::string, std::string>>> QueryNamed(const std::string& sql);
  // SHOW GLOBAL VARIABLES as a map (names lower case).
  Result<std::map<std::string, std::string>> GlobalVariables();
  // One global status variable ("INNODB_LSN_CURRENT"; any case); nullopt when
  // the server has none of that name.
  Result<std::optional<std::string>> GlobalStatus(const std::string& name);

  unsigned long ServerVersion() const;  // e.g. 101119 for 10.11.19
  // `s` as an SQL string literal, quotes included, escaped by libmariadb for
  // this connection's character set.
  std::string Quote(const std::string& s) const;
  // `name` as an SQL identifier: in backticks, backticks doubled.
  static std::string QuoteIdentifier(const std::string& name);

 private:
  explicit Connection(st_mysql* m, std::string where) : mysql_(m), where_(std::move(where)) {}
  Status LastError(const std::string& sql) const;
  st_mysql* mysql_;
  std::string where_;
};

}  // namespace xbak::mysql
