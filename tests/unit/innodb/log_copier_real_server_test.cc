// LogCopier against a real server: mariadbd on a private datadir with an
// 8 MiB log, written to until the log has wrapped several times while the
// copier follows it. Skipped where no mariadbd is installed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "log_copier_test_util.h"
#include "redo_synth.h"
#include "testing/private_server.h"
#include "xbak/innodb/log_copier.h"
#include "xbak/util/file.h"

namespace xbak::innodb {
namespace {

using namespace std::chrono_literals;
using namespace synth;
using namespace xbak::innodb::copier_test;

using xbak::testing::PrivateServer;
using xbak::testing::Shell;
using xbak::testing::ShellOutput;

TEST(LogCopierRealServer, CopiesAWrappingLogOfARunningMariadbd) {
#if defined(__SANITIZE_THREAD__)
  // Under TSan the copier runs several times slower while the (uninstrumented) server writes at
  // full speed into an 8 MiB log: it falls a whole log behind and, correctly, reports the
  // overwrite. The copier's threading is covered under TSan by the synthetic tests above.
  GTEST_SKIP() << "timing-dependent against a real server; not meaningful under ThreadSanitizer";
#endif
  std::string skip, error;
  auto server = PrivateServer::Start({"--innodb-log-file-size=8M", "--skip-grant-tables"}, &skip, &error);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(server, nullptr) << error;
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string data = server->datadir();
  const std::string cli =
      xbak::testing::FindServerTool("mariadb") + " --no-defaults --socket=" + server->socket() + " -N -B";

  auto server_lsn = [&]() -> uint64_t {
    // The status text is one field with literal "\n" escapes in -B mode;
    // the number follows "Log sequence number" and spaces either way.
    std::string s = ShellOutput(cli + " -e 'SHOW ENGINE INNODB STATUS' 2>&1");
    size_t at = s.find("Log sequence number");
    if (at == std::string::npos) return uint64_t{0};
    at = s.find_first_of("0123456789", at);
    return at == std::string::npos ? uint64_t{0} : std::strtoull(s.c_str() + at, nullptr, 10);
  };

  LogCopier::Options lo = OptsFor(data + "/ib_logfile0");
  lo.written_lsn = [&]() -> Result<uint64_t> {
    std::string v = ShellOutput(cli + " -e \"SHOW GLOBAL STATUS LIKE 'Innodb_lsn_flushed'\" 2>&1");
    size_t at = v.find_first_of("0123456789");
    if (at == std::string::npos) return Error(ErrorCode::kServer, "no Innodb_lsn_flushed: " + v);
    return static_cast<uint64_t>(std::strtoull(v.c_str() + at, nullptr, 10));
  };
  auto opened = LogCopier::Open(lo);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  LogCopier& copier = **opened;
  const uint64_t cap = copier.capacity();
  EXPECT_EQ(cap, (uint64_t{8} << 20) - kLogStartOffset);
  EXPECT_TRUE(Contains(copier.header().creator, "MariaDB")) << copier.header().creator;

  const std::string backup_log = dir / "backup_ib_logfile0";
  auto out = util::File::CreateNew(backup_log);
  ASSERT_TRUE(out.ok());
  Bytes hdr = MakeBackupLogHeader(copier.format(), copier.checkpoint_lsn(), copier.checkpoint_end_lsn(),
                                  "Backup 10.11.19");
  ASSERT_TRUE(out->Write(hdr.data(), hdr.size()).ok());
  util::File* outp = &*out;
  Collected ops;
  ASSERT_TRUE(
      copier.Start([outp](const uint8_t* d, size_t n) { return outp->Write(d, n); }, OpsTo(&ops)).ok());

  // Workload: DDL that the copy must track, then bulk rows until the server
  // has written at least four capacities of redo past our start. Batches of
  // about 1.6 MiB of redo: this test asks for Innodb_lsn_flushed by starting
  // a mariadb client each time (tens of ms, more on a loaded machine), and
  // batches of 7 MiB (3000 rows) let the server wrap the 8 MiB log before the
  // copier's first answer came back, on a machine busy with other tests.
  const uint64_t start = copier.checkpoint_lsn();
  const std::string setup = dir / "setup.sql", batch = dir / "batch.sql";
  ASSERT_TRUE(util::WriteFileAtomic(
                  setup,
                  "CREATE DATABASE w; CREATE TABLE w.x1(id INT PRIMARY KEY) ENGINE=InnoDB;"
                  "RENAME TABLE w.x1 TO w.x2; DROP TABLE w.x2;"
                  "CREATE TABLE w.t(id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(3000)) ENGINE=InnoDB;")
                  .ok());
  ASSERT_TRUE(util::WriteFileAtomic(
                  batch,
                  "USE w; INSERT INTO w.t(v) SELECT REPEAT(CHAR(97 + seq % 26), 2500) FROM seq_1_to_500;"
                  "UPDATE w.t SET v = REPEAT('z', 2400) WHERE id % 7 = 0 ORDER BY id DESC LIMIT 70;")
                  .ok());
  ASSERT_EQ(Shell(cli + " < " + setup), 0);
  auto t0 = std::chrono::steady_clock::now();
  int batches = 0;
  uint64_t lsn_now = server_lsn();
  while (lsn_now < start + 4 * cap && std::chrono::steady_clock::now() - t0 < 240s) {
    ASSERT_EQ(Shell(cli + " < " + batch), 0) << ShellOutput("tail -20 " + data + "/error.log");
    batches++;
    lsn_now = server_lsn();
    ASSERT_GT(lsn_now, 0u);
    // Surfaces a failed copier early: a healthy one just "times out" at once.
    Status probe = copier.WaitUntil(UINT64_MAX, 0ms);
    ASSERT_EQ(probe.code(), ErrorCode::kTimeout) << probe.message();
  }
  ASSERT_GE(lsn_now, start + 4 * cap) << "workload too slow";
  const uint64_t reported = server_lsn();
  ASSERT_EQ(Shell(cli + " -e 'FLUSH NO_WRITE_TO_BINLOG ENGINE LOGS'"), 0);
  Status w = copier.WaitUntil(reported, 30s);
  ASSERT_TRUE(w.ok()) << w.message();
  auto live = copier.ReadLiveCheckpoint();
  ASSERT_TRUE(live.ok()) << live.status().message();
  ASSERT_TRUE(copier.Stop().ok());
  ASSERT_TRUE(out->Close().ok());
  const uint64_t copied = copier.copied_lsn();
  EXPECT_GE(copied, reported);
  EXPECT_GE(copied, live->checkpoint_lsn);

  auto bytes = ReadAll(backup_log);
  ASSERT_TRUE(bytes.ok());
  LinearScan scan;
  ASSERT_TRUE(ScanLinear(*bytes, &scan));
  EXPECT_EQ(scan.end_lsn, copied);
  EXPECT_EQ(bytes->size() - kLogStartOffset, copied - start);
  // --prepare needs the FILE_CHECKPOINT of the starting checkpoint at end_lsn.
  bool found_start_cp = false;
  for (size_t i = 0; i < scan.checkpoints.size(); i++) {
    if (scan.checkpoint_mtr_lsns[i] >= copier.checkpoint_end_lsn() && scan.checkpoints[i] == start) {
      found_start_cp = true;
      break;
    }
  }
  EXPECT_TRUE(found_start_cp) << "no FILE_CHECKPOINT(" << start << ") at or after end_lsn "
                              << copier.checkpoint_end_lsn();
  bool create = false, rename = false, del = false;
  for (auto& [op, lsn] : scan.ops) {
    create |= op.type == FileOp::Type::kCreate && Contains(op.name, "w/x1.ibd");
    rename |= op.type == FileOp::Type::kRename && Contains(op.name, "w/x1.ibd") &&
              Contains(op.new_name, "w/x2.ibd");
    del |= op.type == FileOp::Type::kDelete && Contains(op.name, "w/x2.ibd");
  }
  EXPECT_TRUE(create && rename && del) << create << rename << del;
  EXPECT_EQ(ops.ops.size(), scan.ops.size());
  const uint64_t wraps = (copied - copier.first_lsn()) / cap - (start - copier.first_lsn()) / cap;
  EXPECT_GE(wraps, 3u);
  // How many of the copied mtrs straddled the end of the live circular file.
  size_t straddled = 0;
  for (size_t pos = kLogStartOffset; pos < bytes->size();) {
    MtrInfo info;
    std::string why;
    ASSERT_EQ(ParseMtr(bytes->data() + pos, bytes->size() - pos, true, &info, &why), MtrStatus::kComplete);
    uint64_t lsn = start + pos - kLogStartOffset;
    straddled += (lsn - copier.first_lsn()) / cap != (lsn + info.length - 1 - copier.first_lsn()) / cap;
    pos += info.length;
  }
  std::printf(
      "[ real server ] log capacity %llu; copied LSN %llu..%llu (%llu bytes, %zu mtrs, %zu FILE_CHECKPOINTs, "
      "%zu file ops) across %llu wraps of the circular file, %zu mtrs straddling its end; server reported "
      "LSN %llu, live checkpoint %llu; "
      "%d batches\n",
      (unsigned long long)cap, (unsigned long long)start, (unsigned long long)copied,
      (unsigned long long)(copied - start), scan.mtrs, scan.checkpoints.size(), scan.ops.size(),
      (unsigned long long)wraps, straddled, (unsigned long long)reported,
      (unsigned long long)live->checkpoint_lsn, batches);
}

}  // namespace
}  // namespace xbak::innodb
