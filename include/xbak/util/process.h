// Child processes: run a program and read its output, or keep one running
// (a server started for a step) and stop it. A Child still running when its
// owner goes away is killed, so no failure path leaves one behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::util {

// Runs argv[0] (looked up in PATH if it has no '/') with stdin from
// /dev/null; returns what it wrote on stdout and stderr once it exits 0.
Result<std::string> RunAndCapture(const std::vector<std::string>& argv);
// The same with only stdout captured: its stderr is ours (a program whose
// output is data, e.g. a credential_process, and whose messages are for the
// user). A failure's message does not quote the output.
Result<std::string> RunAndCaptureStdout(const std::vector<std::string>& argv);

// The first of `names` that is an executable file: as given if it has a '/',
// else in a directory of $PATH, then in /usr/sbin and /usr/bin. "" if none.
std::string FindExecutable(const std::vector<std::string>& names);

// Starts argv in a session of its own (setsid), stdin from /dev/null, stdout
// and stderr appended to `output`: a program meant to outlive us (a server
// left running for the operator), unlike a Child. Its pid; ExitedYet reaps it.
Result<pid_t> StartDetached(const std::vector<std::string>& argv, const std::string& output);
// The exit status (-signal) of a process we started, if it has exited.
std::optional<int> ExitedYet(pid_t pid);

class Child {
 public:
  // Starts argv with stdin from /dev/null and stdout and stderr appended to
  // `output` ("" for /dev/null).
  static Result<Child> Start(const std::vector<std::string>& argv, const std::string& output);
  Child(Child&& o) noexcept : pid_(o.pid_), name_(std::move(o.name_)) { o.pid_ = -1; }
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  ~Child();

  // The exit status if it has exited (-signal if killed by one); nullopt while it runs.
  std::optional<int> Poll();
  // Waits up to `timeout` for it to exit; nullopt if it is still running.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGKILL and reap.
  void Kill();
  pid_t pid() const { return pid_; }

 private:
  Child(pid_t pid, std::string name) : pid_(pid), name_(std::move(name)) {}
  pid_t pid_ = -1;
  std::string name_;
};

}  // namespace xbak::util
