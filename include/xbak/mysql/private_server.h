// A MariaDB server of our own for one step (--export's .cfg files, a point-in-
// time restore's replay): started on files we are working on, reachable only
// through a socket in a private run directory, stopped by us, and killed if
// it is still running when its owner goes away (no failure path leaves one
// behind).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "xbak/mysql/connection.h"
#include "xbak/util/process.h"
#include "xbak/util/status.h"

namespace xbak::mysql {

struct PrivateServerOptions {
  std::string what;     // how messages name it: "the export server"
  std::string program;  // mariadbd
  std::string run_dir;  // private (0700): its socket "s", pid file, log, stderr
  // Its options after the program name; --socket, --pid-file, --log-error,
  // --skip-networking (and --user=root when we are root: mariadbd refuses to
  // run as root unless told to) are added.
  std::vector<std::string> args;
  // As root, the user it runs as (its files must be that user's): "" root.
  // (mariadbd obeys the first user= it is given, a defaults file's first.)
  std::string run_as;
  // Who we connect as (over the socket): root by default, which needs
  // --skip-grant-tables unless we are root; a server that must keep its grant
  // tables on (a replay that runs CREATE USER) is given an account of ours.
  std::string user = "root";
  std::string password;                     // never logged
  std::chrono::seconds start_timeout{600};  // crash recovery of a large buffer pool takes time
  unsigned read_timeout_s = 3600;
  bool progress = true;  // "still waiting" lines while it starts and stops
};

class PrivateServer {
 public:
  explicit PrivateServer(PrivateServerOptions o) : o_(std::move(o)) {}
  PrivateServer(const PrivateServer&) = delete;
  PrivateServer& operator=(const PrivateServer&) = delete;

  // Starts it and waits until it accepts a connection (as root, over the
  // socket); one that exits meanwhile is reported with the end of its log.
  Status Start();
  Connection& conn() { return *conn_; }
  // SHUTDOWN, then waits for it to exit (however long: a slow shutdown
  // flushes everything); a non-zero exit status is an error.
  Status Stop();
  bool running() const { return child_ != nullptr; }

  std::string log() const;
  // The end of what it wrote (stderr, then its log), for error messages.
  std::string Tail() const;

 private:
  Status WaitUntilAccepting();

  PrivateServerOptions o_;
  std::unique_ptr<util::Child> child_;
  std::unique_ptr<Connection> conn_;
};

// The last `lines` lines of a text file ("" if it cannot be read).
std::string FileTail(const std::string& path, size_t lines = 15);
// "10.11" from "10.11.19-MariaDB-0+deb12u1-log" or from `mariadbd --version`
// ("mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu ...").
std::string MajorMinor(const std::string& version);
// MajorMinor of a server program, from its --version (a private server must
// be of the series of the files it starts on: another would upgrade them).
Result<std::string> ProgramSeries(const std::string& program);
// A fresh private directory (mkdtemp, 0700) for a server's socket and files,
// under `parent` ("" for $TMPDIR or /tmp), or under /tmp when that path is too
// long for a unix socket (at most 107 bytes). `stem`: "xbak-export".
Result<std::string> MakePrivateRunDir(const std::string& parent, const std::string& stem);

}  // namespace xbak::mysql
