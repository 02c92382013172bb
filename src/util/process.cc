#include "xbak/util/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "xbak/util/file.h"

extern char** environ;

namespace xbak::util {
namespace {

int DecodeStatus(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st); }

// posix_spawnp with stdin from /dev/null and stdout/stderr to `out_fd` (or
// /dev/null when negative); stderr left as ours unless `with_stderr`.
Result<pid_t> Spawn(const std::vector<std::string>& argv, int out_fd, bool with_stderr = true,
                    bool new_session = false) {
  if (argv.empty()) return Error(ErrorCode::kInternal, "empty command");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    if (with_stderr) posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (new_session) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return ErrnoError("start", argv[0], rc);
  return pid;
}

}  // namespace

Result<pid_t> StartDetached(const std::vector<std::string>& argv, const std::string& output) {
  UniqueFd out(::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (!out.valid()) return ErrnoError("open", output, errno);
  return Spawn(argv, out.get(), true, true);
}

std::optional<int> ExitedYet(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) == pid) return DecodeStatus(st);
  return std::nullopt;
}

namespace {

Result<std::string> Capture(const std::vector<std::string>& argv, bool with_stderr) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoError("pipe for", argv.empty() ? "" : argv[0], errno);
  UniqueFd rd(p[0]), wr(p[1]);
  XBAK_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, wr.get(), with_stderr));
  wr.Reset();
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  const int code = DecodeStatus(st);
  if (code != 0) {
    return Error(ErrorCode::kIo, argv[0] + " exited with status " + std::to_string(code) +
                                     (with_stderr ? ": " + out.substr(0, 500) : std::string()));
  }
  return out;
}

}  // namespace

Result<std::string> RunAndCapture(const std::vector<std::string>& argv) { return Capture(argv, true); }
Result<std::string> RunAndCaptureStdout(const std::vector<std::string>& argv) { return Capture(argv, false); }

std::string FindExecutable(const std::vector<std::string>& names) {
  auto ok = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  for (const auto& n : names) {
    if (n.find('/') != std::string::npos) {
      if (ok(n)) return n;
      continue;
    }
    std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
    path += ":/usr/sbin:/usr/bin";
    size_t pos = 0;
    while (pos <= path.size()) {
      size_t end = path.find(':', pos);
      if (end == std::string::npos) end = path.size();
      std::string dir = path.substr(pos, end - pos);
      pos = end + 1;
      if (dir.empty()) continue;
      std::string p = JoinPath(dir, n);
      if (ok(p)) return p;
    }
  }
  return "";
}

Result<Child> Child::Start(const std::vector<std::string>& argv, const std::string& output) {
  if (argv.empty()) return Error(ErrorCode::kInternal, "empty command");
  const std::string program = FindExecutable({argv[0]});
  if (program.empty()) return Error(ErrorCode::kNotFound, "start " + argv[0] + ": no such program");
  UniqueFd out(
      ::open(output.empty() ? "/dev/null" : output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (!out.valid()) return ErrnoError("open", output, errno);
  UniqueFd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return ErrnoError("open", "/dev/null", errno);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  // fork + exec rather than posix_spawn: the child must die with us
  // (PR_SET_PDEATHSIG), so that a killed xbak never leaves a server running
  // on a backup. The signal comes when the forking *thread* ends: Children
  // are started and owned by one thread for their whole life. Between fork
  // and exec only async-signal-safe calls.
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork for", argv[0], errno);
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    if (::dup2(in.get(), 0) < 0 || ::dup2(out.get(), 1) < 0 || ::dup2(out.get(), 2) < 0) ::_exit(127);
    ::execv(program.c_str(), args.data());
    ::_exit(127);
  }
  return Child(pid, argv[0]);
}

Child::~Child() { Kill(); }

std::optional<int> Child::Poll() {
  if (pid_ < 0) return 0;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return DecodeStatus(st);
  }
  return std::nullopt;
}

std::optional<int> Child::Wait(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto s = Poll()) return s;
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Child::Kill() {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace xbak::util
