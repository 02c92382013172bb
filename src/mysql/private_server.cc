#include "xbak/mysql/private_server.h"

#include <stdlib.h>
#include <unistd.h>

#include <thread>

#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::mysql {

std::string FileTail(const std::string& path, size_t lines) {
  auto text = util::ReadSmallFile(path, size_t{16} << 20);
  if (!text.ok()) return "";
  const std::string& t = *text;
  size_t pos = t.size();
  for (size_t n = 0; n <= lines && pos > 0; n++) {
    size_t p = t.rfind('\n', pos - 1);
    if (p == std::string::npos) {
      pos = 0;
      break;
    }
    pos = p;
  }
  return t.substr(pos == 0 ? 0 : pos + 1);
}

std::string MajorMinor(const std::string& s) {
  size_t p = s.find_first_of("0123456789");
  if (p == std::string::npos) return "";
  size_t dot1 = s.find('.', p);
  if (dot1 == std::string::npos) return "";
  size_t end = s.find_first_not_of("0123456789", dot1 + 1);
  return s.substr(p, (end == std::string::npos ? s.size() : end) - p);
}

Result<std::string> ProgramSeries(const std::string& program) {
  XBAK_ASSIGN_OR_RETURN(std::string text, util::RunAndCapture({program, "--version"}));
  const size_t ver = text.find("Ver ");
  return MajorMinor(text.substr(ver == std::string::npos ? 0 : ver));
}

Result<std::string> MakePrivateRunDir(const std::string& parent, const std::string& stem) {
  std::string tmp = parent.empty() ? (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") : parent;
  std::string templ = util::JoinPath(tmp, stem + "-XXXXXX");
  if (templ.size() > 80) templ = "/tmp/" + stem + "-XXXXXX";  // "/s" must fit a unix socket path
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return ErrnoError("create a directory like", templ, errno);
  std::string run(buf.data());
  if (char* rp = ::realpath(run.c_str(), nullptr)) {
    run = rp;
    ::free(rp);
  }
  return run;
}

std::string PrivateServer::log() const { return util::JoinPath(o_.run_dir, "server.log"); }

std::string PrivateServer::Tail() const {
  return FileTail(util::JoinPath(o_.run_dir, "stderr"), 5) + FileTail(log());
}

Status PrivateServer::Start() {
  std::vector<std::string> argv = {o_.program};
  argv.insert(argv.end(), o_.args.begin(), o_.args.end());
  for (std::string a : {std::string("--skip-networking"), "--socket=" + util::JoinPath(o_.run_dir, "s"),
                        "--pid-file=" + util::JoinPath(o_.run_dir, "pid"), "--log-error=" + log()})
    argv.push_back(std::move(a));
  if (::geteuid() == 0) argv.push_back("--user=" + (o_.run_as.empty() ? std::string("root") : o_.run_as));
  util::LogInfo("starting " + o_.what + " (" + o_.program + ", no network; its log: " + log() + ")");
  // What it says before its error log opens (a bad option) goes to stderr.
  XBAK_ASSIGN_OR_RETURN(util::Child c, util::Child::Start(argv, util::JoinPath(o_.run_dir, "stderr")));
  child_ = std::make_unique<util::Child>(std::move(c));
  return WaitUntilAccepting();
}

Status PrivateServer::WaitUntilAccepting() {
  ConnectOptions co;
  co.user = o_.user;
  co.password = o_.password;
  co.socket = util::JoinPath(o_.run_dir, "s");
  co.connect_timeout_s = 5;
  co.read_timeout_s = o_.read_timeout_s;
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  for (;;) {
    if (auto st = child_->Poll()) {
      child_.reset();
      return Error(ErrorCode::kServer, o_.what + " exited with status " + std::to_string(*st) +
                                           " while starting; the end of its log (" + log() + "):\n" + Tail());
    }
    if (util::PathExists(co.socket)) {
      auto c = Connection::Open(co);
      if (c.ok()) {
        conn_ = std::move(c.value());
        return Status::Ok();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - t0 > o_.start_timeout) {
      return Error(ErrorCode::kTimeout, o_.what + " did not accept connections within " +
                                            std::to_string(o_.start_timeout.count()) +
                                            " s; its log: " + log());
    }
    if (o_.progress && now - last > std::chrono::seconds(10)) {
      util::LogInfo("still waiting for " + o_.what + " to start (crash recovery, rollback); " + log());
      last = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status PrivateServer::Stop() {
  if (!child_) return Status::Ok();
  Status st = conn_->Execute("SHUTDOWN");
  conn_.reset();
  if (!st.ok()) return st.With("stopping " + o_.what);
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (auto code = child_->Wait(std::chrono::seconds(10))) {
      child_.reset();
      if (*code != 0) {
        return Error(ErrorCode::kServer, o_.what + " exited with status " + std::to_string(*code) +
                                             " at shutdown; the end of its log (" + log() + "):\n" + Tail());
      }
      return Status::Ok();
    }
    if (o_.progress) {
      util::LogInfo("waiting for " + o_.what + " to shut down (" +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                       std::chrono::steady_clock::now() - t0)
                                       .count()) +
                    " s so far)");
    }
  }
}

}  // namespace xbak::mysql
