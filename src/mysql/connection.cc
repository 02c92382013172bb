#include "xbak/mysql/connection.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "xbak/util/ascii.h"

namespace xbak::mysql {

std::string ConnectOptions::Describe() const {
  if (tcp && (host.empty() || host == "localhost")) return "127.0.0.1:" + std::to_string(port ? port : 3306);
  if (!host.empty() && host != "localhost") return host + ":" + std::to_string(port ? port : 3306);
  return "socket " + (socket.empty() ? std::string("(default)") : socket);
}

Result<std::unique_ptr<Connection>> Connection::Open(const ConnectOptions& o) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Error(ErrorCode::kInternal, "mysql_init failed (out of memory)");
  unsigned ct = o.connect_timeout_s, rt = o.read_timeout_s;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &rt);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &rt);
  // Do not let libmariadb read my.cnf files on its own: xbak has already merged
  // the option files the user asked for, and surprises here would be confusing.
  if (o.tcp) {
    unsigned proto = MYSQL_PROTOCOL_TCP;
    mysql_options(m, MYSQL_OPT_PROTOCOL, &proto);
  }
  if (o.ssl) {
    auto opt = [](const std::string& v) { return v.empty() ? nullptr : v.c_str(); };
    mysql_ssl_set(m, opt(o.ssl_key), opt(o.ssl_cert), opt(o.ssl_ca), opt(o.ssl_capath), opt(o.ssl_cipher));
    my_bool enforce = 1;
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &enforce);
    // Verified when asked for (or a CA given); otherwise the library's own
    // default stands (libmariadb 3.4 verifies all but local connections).
    if (o.ssl_verify_server_cert || !o.ssl_ca.empty() || !o.ssl_capath.empty()) {
      my_bool verify = 1;
      mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    }
  }
  const char* host = o.host.empty() ? nullptr : o.host.c_str();
  if (o.tcp && host == nullptr) host = "127.0.0.1";
  const char* sock = o.socket.empty() ? nullptr : o.socket.c_str();
  if (mysql_real_connect(m, host, o.user.empty() ? nullptr : o.user.c_str(),
                         o.password.empty() ? nullptr : o.password.c_str(), nullptr, o.port, sock,
                         0) == nullptr) {
    unsigned err = mysql_errno(m);
    std::string msg = mysql_error(m);
    mysql_close(m);
    std::string where = o.Describe();
    if (err == ER_ACCESS_DENIED_ERROR || err == ER_ACCESS_DENIED_NO_PASSWORD_ERROR) {
      return Error(ErrorCode::kServer, "access denied for user '" + o.user + "' at " + where +
                                           ": wrong user or password (" + msg + ")");
    }
    if (err == CR_CONNECTION_ERROR || err == CR_CONN_HOST_ERROR || err == CR_UNKNOWN_HOST ||
        err == CR_SERVER_LOST || err == CR_SERVER_GONE_ERROR) {
      return Error(ErrorCode::kServer, "cannot reach the MariaDB server at " + where + ": " + msg);
    }
    return Error(ErrorCode::kServer, "cannot connect to the MariaDB server at " + where + ": " + msg);
  }
  return std::unique_ptr<Connection>(new Connection(m, o.Describe()));
}

Connection::~Connection() { mysql_close(mysql_); }

Status Connection::LastError(const std::string& sql) const {
  unsigned err = mysql_errno(mysql_);
  std::string msg = mysql_error(mysql_);
  if (err == ER_SPECIFIC_ACCESS_DENIED_ERROR || err == ER_DBACCESS_DENIED_ERROR ||
      err == ER_TABLEACCESS_DENIED_ERROR || err == ER_ACCESS_DENIED_ERROR) {
    return Error(ErrorCode::kServer, "missing privilege for `" + sql + "`: " + msg);
  }
  if (err == CR_SERVER_GONE_ERROR || err == CR_SERVER_LOST) {
    return Error(ErrorCode::kServer, "the server at " + where_ + " went away during `" + sql + "`: " + msg);
  }
  return Error(ErrorCode::kServer, "`" + sql + "` failed: " + msg + " (error " + std::to_string(err) + ")");
}

std::string Connection::Quote(const std::string& s) const {
  std::string out(s.size() * 2 + 1, '\0');
  unsigned long n = mysql_real_escape_string(mysql_, out.data(), s.data(), s.size());
  out.resize(n);
  return "'" + out + "'";
}

std::string Connection::QuoteIdentifier(const std::string& name) {
  std::string out = "`";
  for (char c : name) {
    out += c;
    if (c == '`') out += '`';
  }
  return out + "`";
}

Status Connection::Execute(const std::string& sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return LastError(sql);
  // Drain any result so the connection stays usable.
  do {
    MYSQL_RES* r = mysql_store_result(mysql_);
    if (r) mysql_free_result(r);
  } while (mysql_next_result(mysql_) == 0);
  return Status::Ok();
}

Result<std::vector<Row>> Connection::Query(const std::string& sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return LastError(sql);
  MYSQL_RES* res = mysql_store_result(mysql_);
  std::vector<Row> rows;
  if (res == nullptr) {
    if (mysql_field_count(mysql_) != 0) return LastError(sql);
    return rows;
  }
  std::unique_ptr<MYSQL_RES, void (*)(MYSQL_RES*)> guard(res, mysql_free_result);
  unsigned n = mysql_num_fields(res);
  while (MYSQL_ROW r = mysql_fetch_row(res)) {
    unsigned long* lens = mysql_fetch_lengths(res);
    Row row(n);
    for (unsigned i = 0; i < n; i++) {
      if (r[i] != nullptr) row[i] = std::string(r[i], lens[i]);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::optional<std::string>> Connection::QueryValue(const std::string& sql) {
  XBAK_ASSIGN_OR_RETURN(auto rows, Query(sql));
  if (rows.empty() || rows[0].empty()) return std::optional<std::string>();
  return rows[0][0];
}

Result<std::vector<std::map<std::string, std::string>>> Connection::QueryNamed(const std::string& sql) {
  if (mysql_real_query(mysql_, sql.data(), sql.size()) != 0) return LastError(sql);
  MYSQL_RES* res = mysql_store_result(mysql_);
  std::vector<std::map<std::string, std::string>> rows;
  if (res == nullptr) return rows;
  std::unique_ptr<MYSQL_RES, void (*)(MYSQL_RES*)> guard(res, mysql_free_result);
  unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  while (MYSQL_ROW r = mysql_fetch_row(res)) {
    unsigned long* lens = mysql_fetch_lengths(res);
    std::map<std::string, std::string> row;
    for (unsigned i = 0; i < n; i++) row[fields[i].name] = r[i] ? std::string(r[i], lens[i]) : std::string();
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::optional<std::string>> Connection::GlobalStatus(const std::string& name) {
  return QueryValue("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = " +
                    Quote(name));
}

Result<std::map<std::string, std::string>> Connection::GlobalVariables() {
  XBAK_ASSIGN_OR_RETURN(auto rows, Query("SHOW GLOBAL VARIABLES"));
  std::map<std::string, std::string> vars;
  for (auto& r : rows) {
    if (r.size() >= 2 && r[0]) {
      vars[util::AsciiLower(*r[0])] = r[1].value_or("");
    }
  }
  return vars;
}

unsigned long Connection::ServerVersion() const { return mysql_get_server_version(mysql_); }

}  // namespace xbak::mysql
