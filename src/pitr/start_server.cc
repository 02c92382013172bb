#include "xbak/pitr/start_server.h"

#include <unistd.h>

#include <thread>

#include "server_defaults.h"
#include "xbak/mysql/connection.h"
#include "xbak/mysql/private_server.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/process.h"

namespace xbak::pitr {
Status StartRestoredServer(const std::string& program, const std::string& defaults_file,
                           const std::string& datadir, std::chrono::seconds timeout) {
  XBAK_ASSIGN_OR_RETURN(std::string printed, PrintDefaults(program, defaults_file));
  std::vector<std::string> argv = {program, "--defaults-file=" + defaults_file, "--datadir=" + datadir};
  if (::geteuid() == 0) {
    std::string user = DefaultsOption(printed, "user", true);
    if (user.empty()) user = "mysql";
    XBAK_RETURN_IF_ERROR(util::GiveTree(datadir, user));
    argv.push_back("--user=" + user);
  }
  XBAK_ASSIGN_OR_RETURN(std::string run, mysql::MakePrivateRunDir("", "xbak-start"));
  const std::string output = util::JoinPath(run, "stderr");
  std::string socket = DefaultsOption(printed, "socket");
  if (socket.empty()) socket = "/run/mysqld/mysqld.sock";
  const std::string log = DefaultsOption(printed, "log-error");
  util::LogInfo("starting " + program + " on " + datadir + " with " + defaults_file);
  XBAK_ASSIGN_OR_RETURN(pid_t pid, util::StartDetached(argv, output));
  mysql::ConnectOptions co;
  co.user = "root";
  co.socket = socket;
  co.connect_timeout_s = 5;
  const auto t0 = std::chrono::steady_clock::now();
  auto shown = t0;
  for (;;) {
    if (auto st = util::ExitedYet(pid)) {
      return Error(ErrorCode::kServer,
                   "the server started on " + datadir + " exited with status " + std::to_string(*st) +
                       "; its log: " + (log.empty() ? output : log) + "\n" + mysql::FileTail(output, 5) +
                       (log.empty() ? "" : mysql::FileTail(log, 10)));
    }
    if (util::PathExists(socket)) {
      auto c = mysql::Connection::Open(co);
      // Refused for the password: it answers, which is all we ask.
      if (c.ok() || c.status().message().find("access denied") != std::string::npos) {
        util::LogInfo("the server is running on " + datadir + " (pid " + std::to_string(pid) + ", socket " +
                      socket + ")");
        (void)util::RemoveTree(run);
        return Status::Ok();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - t0 > timeout) {
      return Error(ErrorCode::kTimeout, "the server started on " + datadir + " (pid " + std::to_string(pid) +
                                            ") does not answer on " + socket + " after " +
                                            std::to_string(timeout.count()) + " s; it is left running");
    }
    if (now - shown > std::chrono::seconds(10)) {
      util::LogInfo("waiting for the server on " + datadir + " to answer on " + socket);
      shown = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace xbak::pitr
