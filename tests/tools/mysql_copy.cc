// Test tool: xbak's MySQL pieces (innodb/mysql_log_copier.h, MySQL's page
// dialect) driven by hand, for tests/integration/t_mysql.sh until
// `xbak --backup` runs them on MySQL.
//
//   xbak_test_mysql_copy redo REDO_DIR OUT
//     Copies the live redo log of REDO_DIR into OUT (xtrabackup_logfile's
//     layout) from the checkpoint on, and takes commands on stdin:
//       hold          blocks from now on are held (before reading log_status)
//       finish LSN    the log up to LSN, cut there; then exits 0
//     Prints "checkpoint N" when started, "held", and "done" at the end.
//   xbak_test_mysql_copy recovery-log PATH
//     Turns the backup log PATH into the redo file recovery reads (then to be
//     renamed #innodb_redo/#ib_redo0); prints "checkpoint N".
//   xbak_test_mysql_copy file SRC DEST
//     Copies a live InnoDB file page by page, each page checked in MySQL's
//     format (from its page 0) and read again while it fails (a page caught
//     while the server writes it), up to 50 times.
// Errors: stderr, exit 1.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "xbak/innodb/mysql_log_copier.h"
#include "xbak/innodb/page.h"
#include "xbak/util/file.h"

using namespace xbak;

namespace {

int Fail(const Status& st) {
  std::fprintf(stderr, "mysql_copy: %s\n", st.message().c_str());
  return 1;
}

int Redo(const std::string& dir, const std::string& out_path) {
  innodb::MysqlLogCopier::Options o;
  o.redo_dir = dir;
  auto c = innodb::MysqlLogCopier::Open(o);
  if (!c.ok()) return Fail(c.status());
  auto out = util::File::CreateNew(out_path);
  if (!out.ok()) return Fail(out.status());
  const auto header =
      innodb::MakeMysqlBackupLogHeader((*c)->checkpoint_file_header(), (*c)->checkpoint_lsn(), "xbak test");
  if (Status st = out->Write(header.data(), header.size()); !st.ok()) return Fail(st);
  util::File& f = *out;
  if (Status st = (*c)->Start([&f](const uint8_t* d, size_t n) { return f.Write(d, n); }); !st.ok())
    return Fail(st);
  std::printf("checkpoint %llu\n", static_cast<unsigned long long>((*c)->checkpoint_lsn()));
  std::fflush(stdout);
  std::string cmd;
  while (std::cin >> cmd) {
    if (cmd == "hold") {
      (*c)->Hold();
      std::printf("held\n");
      std::fflush(stdout);
    } else if (cmd == "finish") {
      unsigned long long lsn = 0;
      std::cin >> lsn;
      if (Status st = (*c)->Finish(lsn, std::chrono::seconds(30)); !st.ok()) return Fail(st);
      if (Status st = f.Sync(); !st.ok()) return Fail(st);
      if (Status st = f.Close(); !st.ok()) return Fail(st);
      std::printf("done\n");
      return 0;
    }
  }
  return Fail(Error(ErrorCode::kInvalidArgument, "stdin ended before \"finish LSN\""));
}

int CopyFile(const std::string& src, const std::string& dest) {
  auto in = util::File::OpenRead(src);
  if (!in.ok()) return Fail(in.status());
  std::vector<uint8_t> page(16384);
  auto n = in->PRead(page.data(), page.size(), 0);
  if (!n.ok()) return Fail(n.status());
  auto h = innodb::ParseSpaceHeader(page.data(), *n, innodb::Dialect::kMySQL);
  if (!h.ok()) return Fail(h.status().With(src + " page 0"));
  const size_t ps = h->flags.physical_size;
  page.resize(ps);
  auto out = util::File::CreateNew(dest);
  if (!out.ok()) return Fail(out.status());
  for (uint64_t no = 0;; no++) {
    auto got = in->PRead(page.data(), ps, no * ps);
    if (!got.ok()) return Fail(got.status());
    if (*got < ps) break;  // the end (a page being appended is rebuilt from the redo log)
    for (int attempt = 0;; attempt++) {
      const innodb::PageCheck c = innodb::CheckPage(page.data(), h->flags, static_cast<uint32_t>(no));
      if (c.verdict != innodb::PageVerdict::kCorrupt) break;
      if (attempt == 50)
        return Fail(Error(ErrorCode::kCorrupt, src + " page " + std::to_string(no) + ": " + c.detail));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (Status st = in->PRead(page.data(), ps, no * ps).status(); !st.ok()) return Fail(st);
    }
    if (Status st = out->Write(page.data(), ps); !st.ok()) return Fail(st);
  }
  if (Status st = out->Close(); !st.ok()) return Fail(st);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc == 4 && mode == "redo") return Redo(argv[2], argv[3]);
  if (argc == 4 && mode == "file") return CopyFile(argv[2], argv[3]);
  if (argc == 3 && mode == "recovery-log") {
    auto cp = innodb::MakeMysqlRecoveryLog(argv[2]);
    if (!cp.ok()) return Fail(cp.status());
    std::printf("checkpoint %llu\n", static_cast<unsigned long long>(*cp));
    return 0;
  }
  std::fprintf(stderr, "usage: %s redo REDO_DIR OUT | recovery-log PATH | file SRC DEST\n", argv[0]);
  return 2;
}
