// A private mariadbd for the unit tests of code that talks to a server
// (mysql/connection, backup's checks, history and the backup itself): a fresh
// datadir in a scratch directory, no networking (a unix socket only), killed
// and reaped on every way out of the test. The real server, as the
// integration tests use, never a mock; a test is skipped where mariadbd is
// not installed.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "util/shell.h"
#include "util/temp_dir.h"
#include "xbak/util/process.h"

extern char** environ;

namespace xbak::testing {

// PATH, /usr/sbin and /usr/bin (FindExecutable), then where source builds install.
inline std::string FindServerTool(const std::string& name) {
  return util::FindExecutable({name, "/usr/local/sbin/" + name, "/usr/local/mysql/bin/" + name});
}

// Runs `cmd`, its stdout into *out; its exit status (-1 if it could not run).
inline int ShellCapture(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int rc = ::pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline std::string ShellOutput(const std::string& cmd) {
  std::string out;
  (void)ShellCapture(cmd, &out);
  return out;
}

// Owns a child process: killed (and reaped) on every exit path.
class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { Kill(); }
  bool Spawn(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = ::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }
  bool Alive() {
    if (pid_ <= 0) return false;
    int st;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
};

class PrivateServer {
 public:
  // Installs a datadir and starts mariadbd on it with `extra_args`, waiting
  // until it answers. nullptr with *skip set when the server is not
  // installed; nullptr with *error set when it would not start.
  static std::unique_ptr<PrivateServer> Start(const std::vector<std::string>& extra_args, std::string* skip,
                                              std::string* error) {
    const std::string mariadbd = FindServerTool("mariadbd"), install = FindServerTool("mariadb-install-db"),
                      client = FindServerTool("mariadb");
    if (mariadbd.empty() || install.empty() || client.empty()) {
      *skip = "mariadbd/mariadb-install-db/mariadb not installed";
      return nullptr;
    }
    std::unique_ptr<PrivateServer> s(new PrivateServer(client));
    // A tmpdir of its own (sticky and open to all, as /tmp): servers that
    // start at once in a shared /tmp trip over each other's temporary
    // tables (mariadb-install-db fails with "Unknown table 'mysql.tmp_user_sys'").
    if (s->dir_.path().empty() || ::chmod(s->dir_.path().c_str(), 0755) != 0 ||
        ::mkdir(s->datadir_.c_str(), 0750) != 0 || ::mkdir(s->tmpdir_.c_str(), 0777) != 0 ||
        ::chmod(s->tmpdir_.c_str(), 01777) != 0) {
      *error = "cannot make a scratch datadir";
      return nullptr;
    }
    const bool root = ::geteuid() == 0;
    if (root && Shell("chown mysql:mysql " + s->datadir_) != 0) {
      *error = "chown mysql " + s->datadir_ + " failed";
      return nullptr;
    }
    const std::string log = s->dir_ / "install.log";
    if (Shell(install + " --no-defaults --datadir=" + s->datadir_ + " --tmpdir=" + s->tmpdir_ +
              (root ? " --user=mysql" : "") + " --skip-test-db > " + log + " 2>&1") != 0) {
      *error = "mariadb-install-db failed:\n" + ShellOutput("tail -20 " + log);
      return nullptr;
    }
    std::vector<std::string> args = {mariadbd,
                                     "--no-defaults",
                                     "--datadir=" + s->datadir_,
                                     "--socket=" + s->socket_,
                                     "--skip-networking",
                                     "--innodb-buffer-pool-size=64M",
                                     "--log-error=" + s->datadir_ + "/error.log",
                                     "--pid-file=" + s->datadir_ + "/mariadbd.pid"};
    if (root) args.push_back("--user=mysql");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    if (!s->process_.Spawn(args)) {
      *error = "cannot start " + mariadbd;
      return nullptr;
    }
    for (int i = 0; i < 600; i++) {
      if (!s->process_.Alive()) break;
      if (s->Sql("SELECT 1") == 0) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    *error = "mariadbd did not come up:\n" + ShellOutput("tail -30 " + s->datadir_ + "/error.log");
    return nullptr;
  }

  const std::string& datadir() const { return datadir_; }
  const std::string& socket() const { return socket_; }
  // The account the socket authenticates without a password (unix_socket):
  // root when the tests run as root, else the OS user who installed the datadir.
  std::string user() const {
    if (::geteuid() == 0) return "root";
    const passwd* pw = ::getpwuid(::geteuid());
    return pw != nullptr ? pw->pw_name : "root";
  }
  // Runs `sql` through the mariadb client as user(); its exit status, and its
  // output (-N -B: values only, tab-separated) in *out.
  int Sql(const std::string& sql, std::string* out = nullptr) const {
    const std::string file = dir_ / "stmt.sql";
    std::ofstream(file) << sql << ";\n";
    const std::string cmd =
        client_ + " --no-defaults --socket=" + socket_ + " --user=" + user() + " -N -B < " + file;
    if (out == nullptr) return Shell(cmd + " > /dev/null 2>&1");
    return ShellCapture(cmd + " 2>&1", out);
  }
  // A scratch path beside the datadir, removed with it.
  std::string Scratch(const std::string& rel) const { return dir_ / rel; }
  bool Alive() { return process_.Alive(); }

 private:
  explicit PrivateServer(std::string client)
      : client_(std::move(client)),
        datadir_(dir_ / "data"),
        tmpdir_(dir_ / "tmp"),
        socket_(datadir_ + "/mysqld.sock") {}

  TempDir dir_;  // first: the paths below are inside it
  std::string client_;
  std::string datadir_;
  std::string tmpdir_;
  std::string socket_;
  ServerProcess process_;  // last: killed before the directory goes
};

}  // namespace xbak::testing
