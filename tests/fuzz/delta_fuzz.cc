// libFuzzer target: arbitrary bytes as a .delta (read by DeltaReader, as
// xbak --prepare --incremental-dir does), as a whole backup file checked by
// xbak --verify (a tablespace, a .delta with a fixed .meta, the redo log,
// in a scratch backup directory), and as an xbcloud object (CheckObjectChunks).
// Everything must be accepted or rejected cleanly: no crash, no sanitizer report.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "xbak/cloud/verify.h"
#include "xbak/innodb/delta.h"
#include "xbak/util/file.h"
#include "xbak/verify/verify.h"

namespace {

std::string ScratchDir() {
  static std::string dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "xbak_delta_fuzz_XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) abort();
    return t;
  }();
  return dir;
}

void Put(const std::string& path, const uint8_t* d, size_t n) {
  std::filesystem::remove(path);
  auto f = xbak::util::File::CreateNew(path);
  if (!f.ok()) abort();
  if (n > 0 && !f->Write(d, n).ok()) abort();
  (void)f->Close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // DeltaReader over the bytes (4 KiB pages so that small inputs reach the pages).
  const std::string dir = ScratchDir();
  const std::string delta = dir + "/db/t.ibd.delta";
  std::filesystem::create_directories(dir + "/db");
  Put(delta, data, size);
  {
    auto f = xbak::util::File::OpenRead(delta);
    if (!f.ok()) abort();
    xbak::innodb::DeltaReader r(*f, 4096);
    for (int i = 0; i < 64; i++) {
      auto more = r.Next();
      if (!more.ok() || !*more) break;
    }
  }
  // The verifier: the same bytes as a .delta, a tablespace and the redo log of
  // one backup (its metadata fixed).
  static const std::string meta = "page_size = 4096\nzip_size = 0\nspace_id = 5\n";
  Put(dir + "/db/t.ibd.meta", reinterpret_cast<const uint8_t*>(meta.data()), meta.size());
  Put(dir + "/db/u.ibd", data, size);
  Put(dir + "/ib_logfile0", data, size);
  static const std::string cnf = "[mysqld]\ninnodb_page_size=4096\n";
  Put(dir + "/backup-my.cnf", reinterpret_cast<const uint8_t*>(cnf.data()), cnf.size());
  xbak::verify::VerifyOptions o;
  o.target_dir = dir;
  o.parallel = 1;
  (void)xbak::verify::VerifyBackup(o);
  (void)xbak::cloud::CheckObjectChunks(std::string(reinterpret_cast<const char*>(data), size), "db/t.ibd");
  return 0;
}
