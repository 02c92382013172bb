// `xbak --restore --from-stream=FULL --from-stream=INC1 ... --datadir=D`:
// each xbstream is read once, two at a time in order, and unpacked into
// D/xbak-restore-staging/K, on the datadir's filesystem, so that the full
// backup's files are renamed into place rather than written a second time.
// Then the staged chain is restored as from directories (restore.cc): step K
// is applied while the next streams are being read, on other threads. Most
// of an incremental's deltas are not staged but written into the datadir as
// they arrive (direct_delta.h); what an incremental stages (its log, markers,
// the other deltas) is kept only until it is applied.
//
// An xbstream carries xtrabackup_checkpoints at its end, so an incremental's
// link to the chain is checked once its stream is whole: a stream out of
// order or of another chain may have written pages by then, into a datadir
// still marked unfinished, and the restore stops (the next run starts over).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "xbak/backupdir/metadata.h"
#include "xbak/crypt/format.h"
#include "xbak/restore/direct_delta.h"
#include "xbak/restore/restore.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/decompress.h"
#include "xbak/sink/decrypt.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::restore {
namespace {

// A restore from streams that did not finish: its journal proves the
// directories were empty before it, so what is in them is its own, and goes.
Status StartOver(const RestoreDirs& dirs) {
  util::LogWarning("an earlier restore from streams into " + dirs.datadir +
                   " did not finish; removing what it wrote and starting over (streams cannot be resumed)");
  XBAK_ASSIGN_OR_RETURN(auto names, util::ListDir(dirs.datadir));
  for (const auto& n : names) {
    if (n != kRestoreMarkerFile) XBAK_RETURN_IF_ERROR(util::RemoveTree(util::JoinPath(dirs.datadir, n)));
  }
  // The files it may have put in directories of their own.
  for (const std::string& d : {dirs.log_dir, dirs.data_home_dir, dirs.undo_dir, dirs.aria_log_dir}) {
    if (d == dirs.datadir || !util::IsDirectory(d)) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(d));
    for (const auto& f : files) {
      if (f.rfind("ib_logfile0", 0) == 0 || f.rfind("ibdata", 0) == 0 || f.rfind("undo", 0) == 0 ||
          f.rfind("aria_log", 0) == 0)
        XBAK_RETURN_IF_ERROR(util::RemoveTree(util::JoinPath(d, f)));
    }
  }
  return Status::Ok();
}

// `direct`: how the deltas of an incremental's stream that is not encrypted
// may go straight into the datadir (direct_delta.h).
Status Unpack(const std::string& source, const std::string& dir, int parallel, const crypt::KeyRing* keys,
              stream::ExtractFilterFactory direct) {
  stream::ExtractOptions eo;
  eo.target_dir = dir;
  eo.fsync = false;  // one syncfs later; a crash starts the restore over anyway
  if (keys != nullptr) {
    eo.filter = sink::DecryptingExtractFilter(*keys);
  } else {
    // Refused at its first encrypted file, before the rest is unpacked.
    eo.filter = [source, direct](
                    const std::string& rel, std::string* out_rel,
                    stream::ExtractWriter write) -> Result<std::unique_ptr<stream::ExtractFilter>> {
      if (!rel.ends_with(crypt::kEncryptedSuffix)) return direct(rel, out_rel, std::move(write));
      return Error(ErrorCode::kInvalidArgument,
                   "the stream " + source + " is of an encrypted backup: give its key (--encrypt-key-file)");
    };
  }
  XBAK_RETURN_IF_ERROR(util::MakeDirs(dir));
  util::LogInfo("reading " + (source == "-" ? std::string("stdin") : source) + " into " + dir);
  Status st;
  if (source == "-") {
    st = stream::ExtractStream(STDIN_FILENO, eo);
  } else {
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(source));
    st = stream::ExtractStream(f.fd(), eo);
  }
  XBAK_RETURN_IF_ERROR(st.With("the stream " + source));
  if (!util::PathExists(backupdir::MetaPath(dir, backupdir::Meta::kCheckpoints))) {
    return Error(ErrorCode::kCorrupt,
                 "the stream " + source + " holds no checkpoints file (" +
                     backupdir::MetaName(backupdir::Meta::kCheckpoints, backupdir::MetaScheme::kXtrabackup) +
                     "): it is not a whole backup (was its upload or download cut?)");
  }
  sink::DecompressOptions d;
  d.target_dir = dir;
  d.parallel = parallel;
  d.remove_original = true;
  return sink::DecompressBackup(d);
}

// Reads the streams on threads of its own, each into its staging directory,
// two at a time and in order (the store sends them at once: one reader alone,
// competing with the apply for the CPU, was the slowest part of a restore).
// Stream K+2 is read only once incremental K is applied and its staging
// removed (Released): at most two incrementals are staged, the one being
// applied and the next, whose pages its redo step leaves out. Wait(K) returns
// once stream K is whole (or failed). Stop() lets the streams being read
// finish (a read from a pipe cannot be interrupted) and opens no other.
class Unpacker {
 public:
  static constexpr size_t kReaders = 2;
  Unpacker(const RestoreOptions& o, std::string staging, DirectDeltas& direct)
      : o_(o),
        staging_(std::move(staging)),
        direct_(direct),
        done_(o.streams.size()),
        released_(o.streams.size(), false) {
    for (size_t i = 0; i < std::min(kReaders, o.streams.size()); i++)
      threads_.emplace_back([this] { Run(); });
  }
  ~Unpacker() { Stop(); }
  std::string dir(size_t k) const { return util::JoinPath(staging_, std::to_string(k)); }
  Status Wait(size_t k) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return done_[k].has_value(); });
    return *done_[k];
  }
  // A stream is still being read (or waited for).
  bool busy() {
    std::lock_guard<std::mutex> l(mu_);
    return !done_.empty() && !done_.back().has_value() && !stop_;
  }
  // Incremental K's staged copy is gone: stream K+2 may be read.
  void Released(size_t k) {
    {
      std::lock_guard<std::mutex> l(mu_);
      released_[k] = true;
    }
    cv_.notify_all();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    direct_.CloseAll();  // a reader may wait at a delta for a step that will not come
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Run() {
    for (size_t k = next_++; k < o_.streams.size(); k = next_++) {
      if (k >= 3) {
        // At most two incrementals staged at once: the one being applied
        // and the next, whose pages its redo step leaves out.
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return released_[k - 2] || stop_; });
      }
      Status st = stop_
                      ? Error(ErrorCode::kCancelled, "the restore stopped before the stream " + o_.streams[k])
                      : Unpack(o_.streams[k], dir(k), o_.parallel, o_.stream_keys, direct_.Filter(k, dir(k)));
      if (st.ok() && k > 0 && o_.stream_keys == nullptr)
        util::LogInfo(o_.streams[k] + ": " + direct_.Summary(k));
      {
        std::lock_guard<std::mutex> l(mu_);
        done_[k] = st;
      }
      cv_.notify_all();
      if (!st.ok()) stop_ = true;
    }
  }
  const RestoreOptions& o_;
  const std::string staging_;
  DirectDeltas& direct_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<Status>> done_;  // guarded by mu_
  std::vector<bool> released_;               // guarded by mu_
  std::atomic<bool> stop_{false};
  std::atomic<size_t> next_{0};
  std::vector<std::thread> threads_;
};

// The directories an interrupted restore from streams wrote into, as its
// journal lists them: only those it found empty are its own (StartOver
// cleans them), so a re-run that would write into other ones is refused.
Status CheckJournalDirs(const std::string& text, const RestoreDirs& dirs, const std::string& journal) {
  std::string dirs_line = "dirs:";
  for (const std::string& t : dirs.All()) dirs_line += " " + t;
  if (text.find("\n" + dirs_line + "\n") != std::string::npos || text.find("\ndirs:") == std::string::npos)
    return Status::Ok();
  return Error(ErrorCode::kInvalidArgument,
               "an interrupted restore from streams into " + dirs.datadir +
                   " wrote into other directories (" + journal +
                   " lists them); re-run it with the same --datadir and --innodb-*/--aria-* directories, or "
                   "empty them");
}

}  // namespace

Status RunRestoreFromStreams(const RestoreOptions& o) {
  if (!o.full_dir.empty() || !o.incremental_dirs.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "--from-stream gives the whole chain (the full backup's stream first): --target-dir and "
                 "--incremental-dir do not go with it");
  }
  if (o.dirs.datadir.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "--restore needs --datadir (or datadir= in the [mysqld] group of --defaults-file)");
  }
  std::set<std::string> seen;
  for (const auto& s : o.streams) {
    if (!seen.insert(s).second)
      return Error(ErrorCode::kInvalidArgument, "the stream " + s + " is given twice");
  }
  const RestoreDirs dirs = o.dirs.Resolved();
  const std::string journal = util::JoinPath(dirs.datadir, kRestoreMarkerFile);
  bool again = false;
  if (util::PathExists(journal)) {
    XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(journal));
    if (text.rfind(kStreamRestoreJournalHead, 0) != 0) {
      return Error(ErrorCode::kAlreadyExists,
                   "an interrupted restore from backup directories is in " + dirs.datadir + " (" + journal +
                       "): finish it with the command that started it, or empty it");
    }
    XBAK_RETURN_IF_ERROR(CheckJournalDirs(text, dirs, journal));
    again = true;
  } else {
    XBAK_RETURN_IF_ERROR(DropLoneMarkerTemp(dirs.datadir, kRestoreMarkerFile));
    for (const std::string& t : dirs.All()) {
      XBAK_ASSIGN_OR_RETURN(bool empty, util::IsEmptyOrMissingDir(t));
      if (!empty) {
        return Error(ErrorCode::kAlreadyExists,
                     t + " is not empty; --restore writes only into empty directories (nothing was written)");
      }
    }
  }
  for (const std::string& t : dirs.All()) XBAK_RETURN_IF_ERROR(util::MakeDirs(t));
  if (again) {
    XBAK_RETURN_IF_ERROR(StartOver(dirs));
  } else {
    std::string text = kStreamRestoreJournalHead;
    for (const auto& s : o.streams) text += "stream: " + s + "\n";
    text += "dirs:";
    for (const std::string& t : dirs.All()) text += " " + t;
    text += "\n";
    XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(journal, text));
    XBAK_RETURN_IF_ERROR(util::SyncDir(dirs.datadir));
  }
  // Before the first byte of data: the server refuses the datadir from now on.
  XBAK_RETURN_IF_ERROR(WritePlaceholderLog(dirs));
  // Two threads read the streams in order while the steps before are applied.
  DirectDeltas direct(dirs.datadir, o.streams.size());
  Unpacker unpacker(o, util::JoinPath(dirs.datadir, kStagingDir), direct);
  RestoreOptions chain = o;
  chain.full_dir = unpacker.dir(0);
  for (size_t k = 1; k < o.streams.size(); k++) chain.incremental_dirs.push_back(unpacker.dir(k));
  chain.await_incremental = [&unpacker](size_t k) { return unpacker.Wait(k); };
  chain.released_incremental = [&unpacker](size_t k) { unpacker.Released(k); };
  chain.open_deltas = [&direct](size_t k, uint32_t page_size, const prepare::LogDdl& ddl) {
    direct.Open(k, page_size, ddl);
  };
  Status st = unpacker.Wait(0);
  if (st.ok()) st = RestoreChain(chain, /*streamed=*/true);
  if (!st.ok() && unpacker.busy()) {
    util::LogWarning("the restore failed; the stream being read is read to its end before xbak exits");
  }
  unpacker.Stop();
  return st;
}

}  // namespace xbak::restore
